/* One thread stopped, read and released: PTRACE_SEIZE, PTRACE_INTERRUPT,
 * its registers (NT_PRSTATUS) and stack, PTRACE_DETACH.  Seizing (not
 * PTRACE_ATTACH) sends no SIGSTOP the target could see, and a seized
 * thread is released by the kernel when its tracer dies. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dump_stop.h"

#define STOP_WAIT_NS 1000000000ull
#define PAGE 4096u

/* The thread's registers in perf_regs.h's order. */
static int take_regs(uint32_t tid, uint64_t *r)
{
#if defined(__x86_64__)
	struct user_regs_struct u;
	struct iovec io = { &u, sizeof u };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0)
		return -errno;
	uint64_t v[X86_REGS_COUNT] = { u.rax, u.rbx, u.rcx, u.rdx, u.rsi, u.rdi, u.rbp, u.rsp, u.rip, u.eflags,
				       u.cs, u.ss, u.r8, u.r9, u.r10, u.r11, u.r12, u.r13, u.r14, u.r15 };
	memcpy(r, v, sizeof v);
#elif defined(__aarch64__)
	struct user_regs_struct u;
	struct iovec io = { &u, sizeof u };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0)
		return -errno;
	for (int i = 0; i < 31; i++)
		r[i] = u.regs[i];
	r[A64_REG_SP] = u.sp;
	r[A64_REG_PC] = u.pc;
#endif
	return 0;
}

/* Up to DUMP_STACK_MAX bytes from sp, page by page so that a copy that
 * reaches the end of the stack's mapping keeps what came before it. */
static uint64_t copy_stack(pid_t pid, uint64_t sp, uint8_t *buf)
{
	struct iovec local = { buf, DUMP_STACK_MAX }, remote[DUMP_STACK_MAX / PAGE + 1];
	uint64_t at = sp, end = sp + DUMP_STACK_MAX;
	unsigned n = 0;
	while (at < end && n < sizeof remote / sizeof remote[0]) {
		uint64_t next = (at / PAGE + 1) * PAGE;
		if (next > end)
			next = end;
		remote[n++] = (struct iovec){ (void *)(uintptr_t)at, next - at };
		at = next;
	}
	ssize_t got = process_vm_readv(pid, &local, 1, remote, n, 0);
	return got > 0 ? (uint64_t)got : 0;
}

/* Wait for the thread's stop after the interrupt; the signal a
 * signal-delivery stop would have delivered goes into *sig. */
static int wait_stop(uint32_t tid, int *sig)
{
	uint64_t deadline = ember_now_ns() + STOP_WAIT_NS;
	for (;;) {
		int st;
		pid_t w = waitpid((pid_t)tid, &st, __WALL | WNOHANG);
		if (w < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (w == (pid_t)tid) {
			if (!WIFSTOPPED(st))
				return -ESRCH;   /* exited */
			bool event = (st >> 16) == PTRACE_EVENT_STOP;
			/* Not our interrupt's stop: a signal arrived first; it is
			 * passed on when the thread is let go. */
			*sig = event ? 0 : WSTOPSIG(st);
			return 0;
		}
		if (ember_now_ns() > deadline)
			return -ETIMEDOUT;
		struct timespec ts = { 0, 20000 };
		nanosleep(&ts, NULL);
	}
}

int dump_stop_thread(pid_t pid, uint32_t tid, struct dump_regs *out, dump_stopped_fn fn, void *arg,
		     uint32_t sleep_ms)
{
	out->stop_wait_ns = out->pause_ns = out->stack_len = 0;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0)
		return errno == EPERM || errno == EACCES ? -EPERM : -errno;
	uint64_t t0 = ember_now_ns();
	int sig = 0, rc = ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) == 0 ? wait_stop(tid, &sig) : -errno;
	uint64_t t1 = ember_now_ns();
	out->stop_wait_ns = t1 - t0;
	if (rc == -ETIMEDOUT)
		return rc;
	if (rc == 0)
		rc = take_regs(tid, out->regs);
	if (rc == 0) {
		out->stack_len = copy_stack(pid, out->regs[EMBER_REG_SP], out->stack);
		if (fn)
			fn(arg, tid);
		if (sleep_ms) {
			struct timespec ts = { sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	/* Detach on every path where the thread may be stopped; one that
	 * ended needs none (ESRCH). */
	if (ptrace(PTRACE_DETACH, tid, NULL, (void *)(intptr_t)sig) != 0 && rc == 0 && errno != ESRCH)
		rc = -errno;
	out->pause_ns = ember_now_ns() - t1;
	return rc;
}
