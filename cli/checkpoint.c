/* Checkpoints of `ember record`: every --checkpoint seconds the profile so
 * far replaces the outputs, so that a run ended without a chance to write
 * (SIGKILL, the OOM killer, a CI timeout) still leaves the profile of all
 * but its last seconds.
 *
 * A forked copy of ember writes each one: it shares the capture
 * copy-on-write, resolves it into a profile (ember_record_profile leaves
 * the capture as it was) and writes every output that is a regular file
 * through a temporary file and a rename, as the final write does. The
 * sampling loop pauses only for the fork, so no sample is lost to a
 * checkpoint however large the profile; the copy runs at a lower priority
 * than the loop and the target. One checkpoint at a time: one that falls
 * due while the previous one is still being written is skipped. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "cli.h"

#define CHILD_NICE 10   /* below the sampling loop and the target */

void checkpoint_init(struct checkpoint *c, double period_s)
{
	memset(c, 0, sizeof *c);
	c->period_s = period_s;
	c->next_s = period_s;
}

/* The forked copy: write the profile so far to the temporary files, rename
 * them into place, exit. It never returns. */
static void checkpoint_child(struct checkpoint *c, struct ember_record *r, pid_t parent)
{
	/* A terminal's Ctrl-C ends this copy (ember removes what it left);
	 * ember's handlers are ember's, not the copy's. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* It never outlives ember. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(1);
	if (setpriority(PRIO_PROCESS, 0, CHILD_NICE) != 0) {
		/* not fatal: it runs at ember's priority */
	}
	if (c->failed) {   /* said once already */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
	}
	struct ember_profile p;
	int rc = 1;
	if (ember_profile_init(&p) == 0 && ember_record_profile(r, &p) == 0)
		rc = outputs_write(&c->files, &p, true) != 0;
	_exit(rc);
}

/* Reap the copy (waiting for it when wait is set): count it, and remove
 * what it left unfinished. */
static void reap(struct checkpoint *c, bool wait)
{
	int status;
	struct rusage ru;
	pid_t got;
	while ((got = wait4(c->child, &status, wait ? 0 : WNOHANG, &ru)) < 0 && errno == EINTR)
		;
	if (got == 0)
		return;   /* still writing */
	if (got == c->child && WIFEXITED(status)) {
		double cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
				(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
		if (WEXITSTATUS(status) == 0) {
			c->written++;
			c->cpu_ms_last = cpu_ms;
			c->cpu_ms_max = cpu_ms > c->cpu_ms_max ? cpu_ms : c->cpu_ms_max;
		} else {
			c->failed++;
		}
	}
	c->child = 0;
	outputs_close(&c->files);
}

void checkpoint_tick(struct checkpoint *c, struct ember_record *r, const struct output_set *out, double elapsed_s)
{
	if (c->child)
		reap(c, false);
	if (c->period_s <= 0 || elapsed_s < c->next_s)
		return;
	c->next_s = elapsed_s + c->period_s;
	if (c->child) {   /* the previous one is still being written */
		c->skipped++;
		return;
	}
	uint64_t t0 = ember_now_ns();
	int n = outputs_checkpoint_open(out, &c->files);
	if (n <= 0) {
		if (n < 0 && !c->failed++)
			fprintf(stderr, "\nember: checkpoint at %.0f s not written: cannot create a temporary file "
				"beside the outputs: %s\n", elapsed_s, strerror(errno));
		return;
	}
	pid_t parent = getpid(), pid = fork();
	if (pid == 0)
		checkpoint_child(c, r, parent);
	double pause_ms = (double)(ember_now_ns() - t0) / 1e6;
	c->pause_ms_max = pause_ms > c->pause_ms_max ? pause_ms : c->pause_ms_max;
	outputs_release(&c->files);   /* the copy writes them */
	if (pid < 0) {
		if (!c->failed++)
			fprintf(stderr, "\nember: checkpoint at %.0f s not written: fork: %s\n", elapsed_s,
				strerror(errno));
		outputs_close(&c->files);
		return;
	}
	c->child = pid;
}

void checkpoint_end(struct checkpoint *c)
{
	if (!c->child)
		return;
	/* The final profile replaces whatever it would have written. */
	kill(c->child, SIGKILL);
	reap(c, true);
}

void checkpoint_report(const struct checkpoint *c, FILE *out)
{
	if (!c->written && !c->failed && !c->skipped)
		return;
	fprintf(out, "ember: %u checkpoint%s written, every %.0f s (the last took %.0f ms of CPU in a copy of "
		"ember, the most %.0f ms; sampling paused %.1f ms at most to start one)",
		c->written, c->written == 1 ? "" : "s", c->period_s, c->cpu_ms_last, c->cpu_ms_max, c->pause_ms_max);
	if (c->skipped)
		fprintf(out, "; %u skipped, the previous one still being written", c->skipped);
	if (c->failed)
		fprintf(out, "; %u could not be written", c->failed);
	fputc('\n', out);
}
