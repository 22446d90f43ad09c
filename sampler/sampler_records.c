/* What each record does (sampler_records.h: sampler_handle_record): a
 * sample is unwound and delivered with the caller's hooks around it;
 * mappings, names, forks, execs and exits go into the process model. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "offcpu.h"
#include "sampler_deliver.h"
#include "sampler_records.h"
#include "sampler_state.h"

#define MAX_PATH_LEN 4096            /* a mapped file's name, NUL included (PATH_MAX) */

static void handle_sample(struct ember_sampler *s, const struct perf_event_header *h)
{
	struct perf_sample ps;
	if (!perf_parse_sample(h, s->attr.sample_type, &ps, s->kernel_ips, MAX_KERNEL_FRAMES))
		return;
	struct ember_sample smp = { .pid = ps.pid, .tid = ps.tid, .time_ns = ps.time_ns, .nkernel = ps.nkernel };
	if (h->misc & PERF_RECORD_MISC_KERNEL)
		smp.flags |= EMBER_SAMPLE_IN_KERNEL;
	if (s->attr.sample_type & PERF_SAMPLE_CALLCHAIN)
		smp.kernel_ips = s->kernel_ips;
	s->stats.samples++;
	thread_sampled(&s->pm, smp.pid, smp.tid);   /* a period of its clock went by */
	if (!ps.abi) {
		/* No user registers: a kernel thread, or a task exiting. */
		s->stats.unwind_errors++;
		return;
	}
	struct unwind_input in = { .regs = ps.regs, .stack = ps.stack, .stack_len = ps.stack_len,
				   .stack_reserved = ps.stack_size };
	sampler_deliver(s, &smp, &in);
}

/* An executable mapping: into the process model. */
static void handle_mmap2(struct ember_sampler *s, const struct perf_event_header *h)
{
	struct perf_mmap2 m;
	char name[MAX_PATH_LEN];
	if (!perf_parse_mmap2(h, &m) || m.name_len >= sizeof name)
		return;
	memcpy(name, m.name, m.name_len);
	name[m.name_len] = 0;
	if (!(m.prot & PROT_EXEC))
		return;
	struct process *proc = process_get(&s->pm, (pid_t)m.pid, true);
	if (proc)
		process_add_mapping(&s->pm, proc, m.addr, m.len, m.pgoff, name, m.build_id, m.build_id_len);
}

/* A task that inherited an event ended, and says how much CPU time it ran
 * on that event's CPU (one record per CPU): the sampler's stats compare
 * it with the samples the task got. */
static void handle_read(struct ember_sampler *s, const struct perf_event_header *h)
{
	struct perf_read rd;
	if (perf_parse_read(h, &rd))
		thread_ended_time(&s->pm, rd.pid, rd.tid, rd.value);
}

void sampler_handle_record(void *arg, const struct perf_event_header *h)
{
	struct ember_sampler *s = arg;
	struct perf_comm c;
	struct perf_task t;
	uint64_t lost;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		handle_sample(s, h);
		break;
	case PERF_RECORD_MMAP2:
		handle_mmap2(s, h);
		break;
	case PERF_RECORD_COMM:
		if (!perf_parse_comm(h, &c))
			break;
		if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
			struct process *proc = process_get(&s->pm, (pid_t)c.pid, false);
			if (proc)
				process_exec(&s->pm, proc);
		}
		thread_set_name(&s->pm, c.pid, c.tid, c.comm, c.comm_len);
		break;
	case PERF_RECORD_FORK:
		if (!perf_parse_task(h, &t))
			break;
		if (t.pid != t.ppid) {
			process_fork(&s->pm, (pid_t)t.ppid, (pid_t)t.pid);
			offcpu_add_process(s->offcpu, (pid_t)t.pid);
		}
		thread_set_parent(&s->pm, t.pid, t.tid, t.ptid);
		break;
	case PERF_RECORD_EXIT:
		if (perf_parse_task(h, &t) && t.pid == t.tid)
			process_exit(&s->pm, (pid_t)t.pid);
		break;
	case PERF_RECORD_READ:
		handle_read(s, h);
		break;
	case PERF_RECORD_LOST:
		if (perf_parse_lost(h, &lost))
			s->stats.lost += lost;
		break;
	default:
		break;
	}
}
