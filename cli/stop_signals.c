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
