/* The terminal of `ember top` (term.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "term.h"

#define ALT_SCREEN_ON "\033[?1049h"
#define ALT_SCREEN_OFF "\033[?1049l"
#define CURSOR_HIDE "\033[?25l"
#define CURSOR_SHOW "\033[?25h"

static void put(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(STDOUT_FILENO, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

void term_size(struct term *t)
{
	struct winsize ws;
	t->rows = 24;
	t->cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		t->rows = ws.ws_row;
		t->cols = ws.ws_col;
	}
}

int term_enter(struct term *t)
{
	memset(t, 0, sizeof *t);
	if (!isatty(STDOUT_FILENO))
		return -1;
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
		struct termios raw = t->saved;
		/* No line editing and no echo; ISIG stays, so Ctrl-C and Ctrl-\
		 * still signal (ember and a launched command, as in `record`). */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		/* A read waits for a key (term_key polls first): a shell that
		 * reads the terminal before ember has put it back (Ctrl-Z under a
		 * wrapper script) must not take "no byte yet" for its end. */
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		t->keys = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	put(ALT_SCREEN_ON CURSOR_HIDE);
	t->active = true;
	term_size(t);
	return 0;
}

void term_leave(struct term *t)
{
	/* SIGTTOU blocked: a shell that took the terminal back first (Ctrl-Z)
	 * would otherwise have ember stopped here, its screen not restored. */
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	if (t->keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	sigprocmask(SIG_SETMASK, &old, NULL);
	t->keys = false;
	if (t->active)
		put(CURSOR_SHOW ALT_SCREEN_OFF);
	t->active = false;
}

int term_key(struct term *t)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	unsigned char c;
	if (!t->keys || poll(&pfd, 1, 0) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
		return -1;
	return c;
}
