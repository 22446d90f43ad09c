/* A sample with user registers and stack, from a perf event's record or
 * from the off-CPU tracer: unwound and delivered (sampler_deliver.h). */
#include "clock.h"
#include "sampler_deliver.h"
#include "sampler_state.h"

void sampler_deliver(struct ember_sampler *s, struct ember_sample *sp, const struct unwind_input *in)
{
	struct ember_sample smp = *sp;
	struct process *proc = process_get(&s->pm, (pid_t)smp.pid, true);
	if (!proc)
		return;
	if (proc->nloads == 0 && !proc->exited)
		process_load_proc_maps(&s->pm, proc, true);
	smp.sp = in->regs[EMBER_REG_SP];
	smp.ip = in->regs[EMBER_REG_PC];
	smp.code_gen = proc->code_gen;
	if (s->hooks.early)
		s->hooks.early(s->hooks.early_arg, &smp);
	uint64_t t0 = ember_now_ns();
	/* A PC in no known module: its MMAP2 may still sit in another CPU's
	 * ring (dlopen), so look at /proc/PID/maps once before giving up. */
	if (!process_find(proc, smp.ip) && !proc->exited)
		process_load_proc_maps(&s->pm, proc, false);
	struct unwind_probes pr = { .fn = s->hooks.probe, .arg = s->hooks.probe_arg, .out = s->probes };
	smp.nframes = unwind_sample(&s->unw, proc, in, s->frames, EMBER_MAX_FRAMES, &smp.flags,
				    s->hooks.probe ? &pr : NULL);
	smp.nprobes = s->hooks.probe ? pr.n : 0;
	smp.probes = s->probes;
	s->stats.unwind_ns += ember_now_ns() - t0;
	smp.frames = s->frames;
	s->stats.no_cfi += (smp.flags & EMBER_SAMPLE_NO_CFI) != 0;
	s->stats.scanned += (smp.flags & EMBER_SAMPLE_SCANNED) != 0;
	if (smp.flags & EMBER_SAMPLE_TRUNCATED) {
		s->stats.truncated++;
		s->stats.frame_capped += (smp.flags & EMBER_SAMPLE_FRAME_CAP) != 0;
	}
	else if (smp.flags & EMBER_SAMPLE_UNWIND_ERROR)
		s->stats.unwind_errors++;
	s->stats.off_cpu += (smp.flags & EMBER_SAMPLE_OFF_CPU) != 0;
	s->fn(s->fn_arg, &smp);
	s->delivered++;
}
