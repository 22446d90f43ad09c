/* libunwind's signal-blocking lock, made free (unwind_lock.c says why and
 * how), for the unwinder's walk (unwind.c).  It calls nothing of ember. */
#ifndef EMBER_UNWIND_LOCK_H
#define EMBER_UNWIND_LOCK_H

/* Around every use of libunwind on this thread. */
void unwind_lock_enter(void);
void unwind_lock_leave(void);

#endif
