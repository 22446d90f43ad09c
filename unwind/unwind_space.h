/* libunwind's remote address space over one sample (unwind_space.c), for
 * the unwinder's walk (unwind.c) and the stack scan (unwind_scan.c): the
 * per-sample state every accessor is handed, the space itself, and reads
 * of the sample's stack copy.  It calls only the process model and the ELF
 * view. */
#ifndef EMBER_UNWIND_SPACE_H
#define EMBER_UNWIND_SPACE_H

#include <libunwind.h>

#include "unwind_arch.h"
#include "unwinder.h"

/* Per-sample state handed to every accessor through libunwind's `arg`. */
struct unwind_ctx {
	const struct process *proc;
	const struct unwind_input *in;   /* the copy; its regs are the sample's */
	const uint64_t *regs;            /* what a cursor starts from: the sample's, or a scan's */
	bool read_past_copy;             /* a stack read fell above a full copy */
	bool noinfo;                     /* find_proc_info found no CFI during this step */
	uint64_t proc_scans, proc_scan_ns;   /* scans this sample, and their time */
	const struct module_load *last_load; /* where access_mem read last (loads do not move
	                                      * during a sample) */
};

/* A libunwind remote address space answered from struct unwind_ctx, with
 * the global cache on, so caller frames hit the cache.  NULL on failure. */
unw_addr_space_t unwind_space_new(void);


/* The word at addr from the stack copy; false when it is not in it. */
bool unwind_copy_word(const struct unwind_input *in, uint64_t addr, uint64_t *val);

/* How far above a full copy a read still counts as the stack going on past
 * what was copied (rather than a stray address). */
#define PAST_COPY_SLACK (1u << 20)

#endif
