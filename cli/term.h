/* The terminal of `ember top` (term.c): full screen with plain ANSI escapes
 * (the alternate screen, a hidden cursor) and keys read one at a time
 * without echo, and everything put back as it was. */
#ifndef EMBER_CLI_TERM_H
#define EMBER_CLI_TERM_H

#include <stdbool.h>
#include <termios.h>

struct term {
	bool active;             /* the alternate screen is shown */
	bool keys;               /* standard input is a terminal in raw mode */
	struct termios saved;    /* its settings before */
	int rows, cols;
};

/* Switch standard output (a terminal) to the alternate screen, hide the
 * cursor and, when standard input is a terminal, read it key by key
 * without echo (Ctrl-C still signals). 0, or -1 when standard output is
 * not a terminal. */
int term_enter(struct term *t);
/* Undo term_enter: termios, cursor, main screen. Safe to call again, and
 * from a signal handler (tcsetattr, sigprocmask and write only). */
void term_leave(struct term *t);
/* Read the window size into rows and cols (80 x 24 when unknown). */
void term_size(struct term *t);
/* The next key typed, or -1 when none is waiting. */
int term_key(struct term *t);

#endif
