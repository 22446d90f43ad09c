/* Folded stacks' text of a frame and of a thread root, shared by the folded
 * writers (folded.c) and the SVG labels (svg_labels.c), which must print
 * frames alike.  Private to exporters/. */
#ifndef EMBER_FOLDED_TEXT_H
#define EMBER_FOLDED_TEXT_H

#include <stddef.h>

#include "profile.h"
#include "text.h"

/* Append the sanitised text of frame f to b, as folded output prints it:
 * ';' as ':', controls as spaces, no blank at either end, "[unknown]" for
 * an empty name, "_[k]" after a kernel frame, "name (file:line)" for a
 * Python frame, and a '_' after a text that would end in " DIGITS".
 * 0, or -1 on OOM. */
int folded_frame_text(struct text_buf *b, const struct ember_frame *f);
/* Append "name (tid)", or py-spy's "thread (tid)" when the thread was
 * never named.  0, or -1 on OOM. */
int folded_thread_text(struct text_buf *b, const struct ember_thread *t);

/* The text of frame f into buf (always NUL-terminated), cut at a character
 * boundary to fit size and still keeping the rules above.  Returns the
 * length. */
size_t ember_folded_frame_text(const struct ember_frame *f, char *buf, size_t size);

#endif
