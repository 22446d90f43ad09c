/* What /proc says about a thread: run state, system call, wchan. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "dump_internal.h"
#include "proc.h"

static const char *state_text(char s)
{
	switch (s) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "tracing stop";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	default: return "unknown";
	}
}

#define SC(name) { SYS_##name, #name }
struct sc_name {
	long nr;
	const char *name;
};
/* The system calls a thread is commonly found blocked in. */
static const struct sc_name sc_names[] = {
	SC(read), SC(write), SC(readv), SC(writev), SC(pread64), SC(pwrite64), SC(openat), SC(close),
	SC(futex), SC(nanosleep), SC(clock_nanosleep), SC(ppoll), SC(pselect6), SC(epoll_pwait),
	SC(wait4), SC(waitid), SC(accept4), SC(recvfrom), SC(recvmsg), SC(sendto), SC(sendmsg),
	SC(connect), SC(rt_sigsuspend), SC(rt_sigtimedwait), SC(sched_yield), SC(flock), SC(fsync),
	SC(fdatasync), SC(ioctl), SC(io_getevents), SC(msgrcv), SC(semtimedop), SC(mmap), SC(munmap),
	SC(madvise), SC(getrandom), SC(epoll_pwait2),
#ifdef SYS_poll
	SC(poll),
#endif
#ifdef SYS_select
	SC(select),
#endif
#ifdef SYS_epoll_wait
	SC(epoll_wait),
#endif
#ifdef SYS_accept
	SC(accept),
#endif
#ifdef SYS_pause
	SC(pause),
#endif
#ifdef SYS_futex_waitv
	SC(futex_waitv),
#endif
};

static const char *syscall_name(long nr)
{
	for (size_t i = 0; i < sizeof sc_names / sizeof sc_names[0]; i++)
		if (sc_names[i].nr == nr)
			return sc_names[i].name;
	return "";
}

void dump_thread_proc(pid_t pid, uint32_t tid, struct thread_proc *out)
{
	char path[64], buf[512];
	*out = (struct thread_proc){ .state = '?', .syscall = -1, .syscall_name = "" };
	snprintf(path, sizeof path, "task/%u/stat", tid);
	const char *close_paren = ember_proc_read(pid, path, buf, sizeof buf) > 0 ? strrchr(buf, ')') : NULL;
	if (close_paren && close_paren[1] == ' ')
		out->state = close_paren[2];
	out->state_text = state_text(out->state);
	snprintf(path, sizeof path, "task/%u/syscall", tid);
	/* "running", "-1 SP PC" (blocked, not in a system call), or "NR args... SP PC" */
	if (ember_proc_read(pid, path, buf, sizeof buf) > 0 && buf[0] != 'r' && buf[0] != '-') {
		out->syscall = strtol(buf, NULL, 10);
		out->syscall_name = syscall_name(out->syscall);
	}
	snprintf(path, sizeof path, "task/%u/wchan", tid);
	if (ember_proc_read(pid, path, out->wchan, sizeof out->wchan) <= 0 || strcmp(out->wchan, "0") == 0)
		out->wchan[0] = 0;
	snprintf(path, sizeof path, "task/%u/comm", tid);
	if (ember_proc_read(pid, path, out->comm, sizeof out->comm) > 0)
		out->comm[strcspn(out->comm, "\n")] = 0;
}
