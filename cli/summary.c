/* The run summary on stderr: what the target cost, what ember captured, and
 * the top functions. */
#include <string.h>

#include "cli.h"

/* CPU time of ended tasks after their last sample: said when it is more
 * than 5% of what the samples stand for (a few threads ending after a long
 * run are not worth a line; a run of short-lived children is). */
static void unsampled_print(FILE *out, const struct ember_sampler_stats *st, uint32_t freq_hz)
{
	double period_s = 1.0 / (freq_hz ? freq_hz : 1);
	double missed_s = (double)st->unsampled_ns / 1e9, sampled_s = (double)st->samples * period_s;
	if (missed_s <= 0.05 * (sampled_s + missed_s))
		return;
	fprintf(out, "ember: %.3f s of CPU time (%.0f%%) is not in the profile: the %llu threads and processes "
		"that ended during the run were sampled once per %.1f ms of their own CPU time on each CPU "
		"(-F %u), so what each ran after its last sample is missing (a higher -F misses less)\n",
		missed_s, 100.0 * missed_s / (sampled_s + missed_s), (unsigned long long)st->ended_tasks,
		period_s * 1e3, freq_hz);
}

/* The pool whose wait mark frame f is, or EMBER_POOL_NONE. */
static enum ember_pool_kind wait_mark(const struct ember_frame *f)
{
	for (int k = EMBER_POOL_NONE + 1; f->kind == EMBER_FRAME_SPECIAL && k < EMBER_POOL_KIND_COUNT; k++) {
		const char *m = ember_pool_wait_marker((enum ember_pool_kind)k);
		if (m && strcmp(f->name, m) == 0)
			return (enum ember_pool_kind)k;
	}
	return EMBER_POOL_NONE;
}

void summary_pools(FILE *out, const struct ember_profile *p, const struct ember_record_pools *why)
{
	/* (waiting is CPU time: off-CPU rows, --idle's sleeps, are not counted) */
	uint64_t attributed = ember_profile_attributed_total(p), unknown = 0, wait[EMBER_POOL_KIND_COUNT] = { 0 };
	uint64_t total = ember_profile_total(p) - ember_profile_off_cpu_total(p);
	for (uint32_t r = 0; r < ember_profile_nrows(p); r++) {
		const struct ember_sample_row *row = ember_profile_row_at(p, r);
		uint32_t n;
		const uint32_t *ids = ember_profile_stack_frames(p, row->stack, &n);
		for (uint32_t i = 0; i < n; i++) {
			const struct ember_frame *f = ember_profile_frame_at(p, ids[i]);
			if (f->kind != EMBER_FRAME_SPECIAL)
				continue;
			unknown += strcmp(f->name, EMBER_MARK_NO_DISPATCHER) == 0 ? row->count : 0;
			if (!(row->flags & EMBER_ROW_OFF_CPU))
				wait[wait_mark(f)] += row->count;
		}
	}
	const char *unit = ember_profile_meta(p)->wall_clock ? "us" : "samples";
	const char *cpu_unit = ember_profile_meta(p)->wall_clock ? "time on CPU" : "samples";
	if (attributed || unknown) {
		fprintf(out, "ember: pool threads: %llu %s put under the stack that dispatched their work",
			(unsigned long long)attributed, unit);
		if (why && attributed)
			fprintf(out, " (%llu by the dispatcher's Python frames copied at the sample, %llu by its samples "
				"around them, %llu by the only path to their region)", (unsigned long long)why->by_peer,
				(unsigned long long)why->by_bracket, (unsigned long long)why->by_one_path);
		fprintf(out, "; %llu not, under [dispatcher unknown]", (unsigned long long)unknown);
		if (why && unknown)
			fprintf(out, " (%llu: no thread seen dispatching to their pool, %llu: several threads dispatch "
				"to it, %llu: the dispatcher's samples around them disagree)",
				(unsigned long long)why->no_dispatcher, (unsigned long long)why->several,
				(unsigned long long)why->unsure);
		fputc('\n', out);
	}
	for (int k = EMBER_POOL_NONE + 1; total && k < EMBER_POOL_KIND_COUNT; k++)
		if (wait[k] * 200 >= total)   /* 0.5% and more */
			fprintf(out, "ember: %s's threads waited for work (spinning, yielding) in %.1f%% of the %s "
				"(%.2f s of CPU), marked %s; fewer threads or %s change it\n",
				ember_pool_name((enum ember_pool_kind)k), 100.0 * (double)wait[k] / (double)total, cpu_unit,
				(double)wait[k] * ember_profile_interval_s(p), ember_pool_wait_marker((enum ember_pool_kind)k),
				ember_pool_wait_knob((enum ember_pool_kind)k));
}

void summary_print(FILE *out, const struct ember_record_stats *sum, uint32_t stack_size, const struct ember_profile *p)
{
	fprintf(out, "ember: wall %.2f s; target CPU %.2f s user, %.2f s sys", sum->wall_s,
		sum->target_user_s, sum->target_sys_s);
	if (sum->max_rss_kib >= 0)
		fprintf(out, "; max RSS %.1f MiB", (double)sum->max_rss_kib / 1024.0);
	if (sum->vol_ctx >= 0)
		fprintf(out, "; context switches %ld voluntary, %ld involuntary", sum->vol_ctx, sum->invol_ctx);
	fputc('\n', out);

	const struct ember_sampler_stats *st = &sum->sampler;
	/* Capture cost per sample, and the one-off cold path apart: symbolizing
	 * opens every module's debug info once, whatever the run's length. */
	double per_sample_us = st->samples ? sum->profiler_cpu_s * 1e6 / (double)st->samples : 0;
	double unwind_us = st->samples ? (double)st->unwind_ns / 1e3 / (double)st->samples : 0;
	fprintf(out, "ember: %llu samples, %llu lost, %llu truncated, %llu unwind failures; "
		"profiler CPU %.1f us/sample while sampling (unwinding %.1f us elapsed), "
		"symbolization %.0f ms CPU\n",
		(unsigned long long)st->samples, (unsigned long long)st->lost,
		(unsigned long long)st->truncated, (unsigned long long)st->unwind_errors,
		per_sample_us, unwind_us, sum->symbolize_s * 1e3);
	unsampled_print(out, st, ember_profile_meta(p)->freq_hz);
	if (st->truncated > st->frame_capped + sum->py_cut)
		fprintf(out, "ember: %.1f%% of stacks were cut off by the stack copy: %s\n",
			100.0 * (double)(st->truncated - st->frame_capped - sum->py_cut) / (double)st->samples,
			stack_size < 65528 ? "raise --stack-size (max 65528)" :
						  "deeper than 64 KB of stack, the most the kernel copies");
	if (st->frame_capped)
		fprintf(out, "ember: %.1f%% of stacks were deeper than %d native frames: their outermost frames are "
			"left out (under [truncated])\n", 100.0 * (double)st->frame_capped / (double)st->samples,
			EMBER_MAX_FRAMES);
	if (sum->py_cut)
		fprintf(out, "ember: %.1f%% of stacks were deeper than %d Python frames: the outermost %d and the "
			"innermost %d are kept, the middle left out (under [truncated])\n",
			100.0 * (double)sum->py_cut / (double)st->samples, EMBER_RECORD_PY_FRAMES,
			EMBER_RECORD_PY_FRAMES / 2, EMBER_RECORD_PY_FRAMES / 2);
	if (st->no_cfi)
		fprintf(out, "ember: %llu samples passed a frame without unwind info (hand-written assembly, JIT "
			"code); %llu recovered by stack scan (%.1f us a scan), %llu marked as unwind failures or "
			"truncated\n", (unsigned long long)st->no_cfi, (unsigned long long)st->scanned,
			st->scans ? (double)st->scan_ns / 1e3 / (double)st->scans : 0.0,
			(unsigned long long)(st->no_cfi - st->scanned));
	if (sum->jit_files)
		fprintf(out, "ember: JIT code named from %u perf map or jitdump file%s (%llu functions)%s\n",
			sum->jit_files, sum->jit_files == 1 ? "" : "s", (unsigned long long)sum->jit_entries,
			sum->jit_removed ? "; the perf maps ember asked for were deleted after reading" : "");
	if (sum->jit_refused)
		fprintf(out, "ember: not read, as not a regular file of the target's user: %s%s\n",
			sum->jit_refused_path, sum->jit_refused > 1 ? " (and others)" : "");
	if (sum->jit_skipped || sum->jit_capped)
		fprintf(out, "ember: JIT files past ember's bounds (docs/jit.md): %llu function%s not named, %u file%s "
			"read only in part\n", (unsigned long long)sum->jit_skipped, sum->jit_skipped == 1 ? "" : "s",
			sum->jit_capped, sum->jit_capped == 1 ? "" : "s");
	/* Python frames are read for off-CPU intervals (--idle) as for samples. */
	uint64_t nread = st->samples + st->off_cpu;
	if (sum->python_samples && nread) {
		fprintf(out, "ember: Python frames: read %.1f us/sample (median %.1f us), starting %.0f us after the "
			"sample (%llu reads over 1 ms late); %llu samples (%.1f%%) checked against the eval loop's "
			"state in the sample, %llu corrected; finding the runtime took %.1f ms "
			"(not in the reads)\n",
			sum->py_read_us, sum->py_read_median_us, sum->py_lag_us, (unsigned long long)sum->py_late,
			(unsigned long long)sum->py_checked, 100.0 * (double)sum->py_checked / (double)nread,
			(unsigned long long)sum->py_corrected, sum->py_setup_ms);
		if (sum->copier_asked && sum->copier_note[0])
			fprintf(out, "ember: Python frames read after each sample: %s\n", sum->copier_note);
		else if (sum->copier_asked) {
			fprintf(out, "ember: Python frames copied by the kernel at the sample (BPF) for %llu of %llu "
				"reads (%.1f%%)%s%s", (unsigned long long)sum->py_at_sample,
				(unsigned long long)sum->py_reads,
				sum->py_reads ? 100.0 * (double)sum->py_at_sample / (double)sum->py_reads : 0.0,
				st->bpf_failed ? "; some events refused the BPF program" : "",
				sum->copier_unrolled ? "; its unrolled variant (kernels without bpf_loop)" : "");
			/* A thread's first sample or two come before ember has told
			 * the copier about it; many more mean ember was held back
			 * (a stolen CPU) when the thread started. */
			if (sum->py_before_copier * 20 > nread)
				fprintf(out, "; %llu samples came before ember had registered their thread with "
					"the copier (ember was late: read after the fact)",
					(unsigned long long)sum->py_before_copier);
			/* Loaded while the command ran (a kernel that checks it
			 * slowly): the reads before were made after the sample. */
			if (sum->copier_wait_ms > 0)
				fprintf(out, "; the copier was ready %.0f ms into the run, %llu reads before that were "
					"made after the sample", sum->copier_wait_ms,
					(unsigned long long)sum->py_before_load);
			else if (sum->copier_loading)
				fprintf(out, "; the run ended before the copier was loaded (the kernel checks it slowly "
					"here): every read was made after the sample");
			fputc('\n', out);
		}
		if (sum->switch_note)
			fprintf(out, "ember: --idle: %s: time off CPU keeps native frames only\n", sum->switch_note);
		if (sum->copier.timed && sum->copier.runs)
			fprintf(out, "ember: BPF frame copier: %llu runs in the target, %.2f us each; records: %llu woke "
				"ember (%llu code objects named on arrival), %llu read where they arrived, %llu kept for "
				"a later read (%llu read), %llu overwritten unread\n",
				(unsigned long long)sum->copier.runs, (double)sum->copier.run_ns / 1e3 / (double)sum->copier.runs,
				(unsigned long long)sum->copier.woke, (unsigned long long)sum->copier.learnt,
				(unsigned long long)sum->copier.read_in_place, (unsigned long long)sum->copier.kept,
				(unsigned long long)sum->copier.read_kept, (unsigned long long)sum->copier.replaced);
		fprintf(out, "ember: Python frames: %llu of %llu samples%s (%.2f%%) disagreed with their native stack "
			"and are marked [python frames uncertain]\n",
			(unsigned long long)sum->mismatched, (unsigned long long)nread, st->off_cpu ? " and off-CPU intervals" : "",
			100.0 * (double)sum->mismatched / (double)nread);
	}
	if (sum->gil_dropped)
		fprintf(out, "ember: --gil: %llu samples of threads not holding the GIL left out\n",
			(unsigned long long)sum->gil_dropped);
	if (st->lost)
		fprintf(out, "ember: the kernel dropped %llu samples: ember fell behind (lower -F)\n",
			(unsigned long long)st->lost);
	if (st->off_cpu || st->off_cpu_lost)
		fprintf(out, "ember: --idle: %llu intervals off CPU traced, %llu lost%s\n", (unsigned long long)st->off_cpu,
			(unsigned long long)st->off_cpu_lost,
			st->off_cpu_lost ? " (the tracer's ring was full: their time is missing)" : "");
	summary_pools(out, p, &sum->pools);
	if (ember_profile_total(p)) {
		ember_report_print(out, p, EMBER_REPORT_BY_FUNCTION, 10);
		ember_report_unsymbolized_print(out, p);
	}
}
