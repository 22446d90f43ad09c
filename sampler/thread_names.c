/* Every thread the sampler has seen (process_model.h): its name, from COMM
 * records and /proc/PID/task/TID/comm, and, for a thread that has not
 * named itself yet, its creator's; its samples, and the CPU time the kernel
 * reported when it ended.  A plain array, indexed by tid through an id
 * table (tids are unique system-wide). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "proc.h"
#include "process_model.h"

/* Creators followed to find a name: more than any real chain of threads
 * that never named themselves (a cycle cannot happen, but costs no more
 * to stop). */
#define MAX_CREATOR_HOPS 64

static uint64_t tid_hash(uint32_t tid)
{
	return ember_hash_mix(tid);
}

static bool thread_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct process_model *)ctx)->threads[id].tid == *(const uint32_t *)key;
}

static struct thread_name *thread_find(const struct process_model *pm, uint32_t tid)
{
	uint32_t id = ember_idtab_find(&pm->thread_index, tid_hash(tid), thread_eq, pm, &tid);
	return id == UINT32_MAX ? NULL : &pm->threads[id];
}

/* Thread tid of pid, made (nameless) on first use; NULL on OOM. */
static struct thread_name *thread_add(struct process_model *pm, uint32_t pid, uint32_t tid)
{
	struct thread_name *t = thread_find(pm, tid);
	if (!t) {
		if (EMBER_GROW(pm->threads, pm->threads_cap, pm->nthreads + 1) != 0 ||
		    ember_idtab_insert(&pm->thread_index, tid_hash(tid), (uint32_t)pm->nthreads) != 0)
			return NULL;
		t = &pm->threads[pm->nthreads++];
		*t = (struct thread_name){ .tid = tid, .pid = pid };
	}
	if (t->pid != pid)   /* the tid was reused by another process */
		*t = (struct thread_name){ .tid = tid, .pid = pid };
	return t;
}

void thread_set_parent(struct process_model *pm, uint32_t pid, uint32_t tid, uint32_t parent_tid)
{
	struct thread_name *t = tid && tid != parent_tid ? thread_add(pm, pid, tid) : NULL;
	if (t && !t->comm[0])
		t->parent_tid = parent_tid;
}

void thread_set_name(struct process_model *pm, uint32_t pid, uint32_t tid, const char *comm, size_t len)
{
	struct thread_name *t = tid ? thread_add(pm, pid, tid) : NULL;
	if (!t)
		return;
	t->parent_tid = 0;
	if (len >= sizeof t->comm)
		len = sizeof t->comm - 1;
	memcpy(t->comm, comm, len);
	t->comm[len] = 0;
}

const char *thread_get_name(const struct process_model *pm, uint32_t pid, uint32_t tid)
{
	for (int hops = 0; hops < MAX_CREATOR_HOPS && tid; hops++) {
		const struct thread_name *t = thread_find(pm, tid);
		if (!t)
			break;
		if (t->comm[0])
			return t->comm;
		tid = t->parent_tid;
	}
	/* Never seen: a thread of pid starts out with the name of its process's
	 * thread that made it; the main thread's is the best guess left. */
	const struct thread_name *main = pid ? thread_find(pm, pid) : NULL;
	return main && main->comm[0] ? main->comm : "";
}

struct named_from_proc {
	struct process_model *pm;
	pid_t pid;
};

static bool name_from_proc(void *arg, uint32_t tid)
{
	const struct named_from_proc *c = arg;
	char name[64], comm[32];
	snprintf(name, sizeof name, "task/%u/comm", tid);
	ssize_t n = ember_proc_read(c->pid, name, comm, sizeof comm);
	if (n > 0 && comm[n - 1] == '\n')
		n--;
	if (n > 0)
		thread_set_name(c->pm, (uint32_t)c->pid, tid, comm, (size_t)n);
	return true;
}

void threads_load_proc(struct process_model *pm, pid_t pid)
{
	struct named_from_proc c = { pm, pid };
	ember_proc_tasks(pid, name_from_proc, &c);
}

void thread_sampled(struct process_model *pm, uint32_t pid, uint32_t tid)
{
	struct thread_name *t = tid ? thread_add(pm, pid, tid) : NULL;
	if (t)
		t->samples++;
}

void thread_ended_time(struct process_model *pm, uint32_t pid, uint32_t tid, uint64_t ns)
{
	struct thread_name *t = tid ? thread_add(pm, pid, tid) : NULL;
	if (t) {
		t->ended = true;
		t->ended_ns += ns;
	}
}

void thread_unsampled(const struct process_model *pm, uint64_t period_ns, uint64_t *tasks, uint64_t *ns)
{
	*tasks = *ns = 0;
	for (size_t i = 0; i < pm->nthreads; i++) {
		const struct thread_name *t = &pm->threads[i];
		if (!t->ended)
			continue;
		uint64_t sampled = (uint64_t)t->samples * period_ns;
		(*tasks)++;
		*ns += t->ended_ns > sampled ? t->ended_ns - sampled : 0;
	}
}
