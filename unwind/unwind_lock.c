/* libunwind 1.6–1.8 guards its global unwind cache with a lock that blocks
 * every signal while held: two rt_sigprocmask system calls per unw_step, which
 * measured as most of the unwinder's time here (40 000 calls for 800 samples of
 * a 49-frame stack).  The blocking exists so that a signal handler that itself
 * unwinds cannot deadlock on the lock.  ember never unwinds inside a signal
 * handler, so while ember's own unwinder runs on this thread those calls can
 * be answered without entering the kernel.  Every other caller gets the real
 * sigprocmask.
 *
 * This works because the executable's definition of sigprocmask comes first
 * in symbol lookup for libunwind's reference to it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "unwind_lock.h"

static __thread bool in_unwinder;

void unwind_lock_enter(void)
{
	in_unwinder = true;
}

void unwind_lock_leave(void)
{
	in_unwinder = false;
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (in_unwinder) {
		/* libunwind saves the mask here and restores it on release, a
		 * call we skip as well: any consistent value will do. */
		if (old)
			sigemptyset(old);
		return 0;
	}
	static int (*real)(int, const sigset_t *, sigset_t *);
	if (!real)
		real = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "sigprocmask");
	if (!real)
		return pthread_sigmask(how, set, old);
	return real(how, set, old);
}
