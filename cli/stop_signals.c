/* Stopping a run by signal (cli.h): the one place record and top keep
 * process-wide state, since a signal handler takes no context argument. */
#include <signal.h>

#include "cli.h"

volatile sig_atomic_t cli_stop_signal;
volatile pid_t cli_forward_to;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	cli_stop_signal = sig;
	/* Ctrl-C on a terminal reaches the command directly (same process
	 * group, si_code SI_KERNEL); forward only what was sent to ember alone. */
	if (cli_forward_to > 0 && si->si_code != SI_KERNEL)
		kill(cli_forward_to, sig);
}

void cli_install_stop_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_stop_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Forward stop signals to the launched command pid from now on, and pass it
 * the one that came while it was being started (ember had no one to give it
 * to then). The signals are blocked meanwhile, so that one arriving right
 * now is forwarded once, by the handler, after this. */
void cli_forward_target(pid_t pid)
{
	sigset_t stops, old;
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &old);
	cli_forward_to = pid;
	if (pid > 0 && cli_stop_signal > 0)
		kill(pid, cli_stop_signal);
	sigprocmask(SIG_SETMASK, &old, NULL);
}
