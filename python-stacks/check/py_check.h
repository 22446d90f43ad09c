/* python-stacks/check/: the check of each read against the sample
 * (README.md, "The sample check"), above read/: where the eval loop keeps
 * its state (eval_cold.c, eval_dwarf.c), learning it and resolving an
 * activation (calib.c), and the evidence's verdict (evidence.c). */
#ifndef EMBER_PY_CHECK_H
#define EMBER_PY_CHECK_H

#include "idtab.h"
#include "py_read.h"

/* ---- the sample check: where the eval loop keeps its state (eval_cold.c, eval_dwarf.c) ---- */

enum py_eval_var {
	PY_EVAL_NEXT_INSTR,            /* the instruction pointer */
	PY_EVAL_FRAME,                 /* the frame: `f` (PyFrameObject *, <= 3.10), `frame` (3.11+) */
	PY_EVAL_NVARS
};
struct py_eval_loc {
	uint64_t lo, hi;               /* absolute pcs [lo, hi) */
	int16_t cand;                  /* evidence candidate index (python_stacks.h layout) */
	uint8_t var;                   /* enum py_eval_var */
};
struct py_eval {
	struct py_dwarf_job *job;      /* the loader thread's, until adopted */
	struct py_eval_loc *locs;      /* where the variables live per pc range, sorted by
	                                * variable then pc */
	size_t nlocs;
	uint64_t cold_lo, cold_hi;     /* the .cold part the symbols lacked, from DWARF or its
	                                * jumps (absolute; 0: none) */
	bool deferred;                 /* opts.defer_debug_info: the DWARF not read yet */
	uint32_t reads_without_copy;   /* ... and reads since that had no frames copied */
	char note[192];                /* what it found, for ember_python_describe */
};
/* eval_cold.c: libdwfl opened on one file, offline, with its debug file
 * found by build-id or .gnu_debuglink (under root/usr/lib/debug first when
 * root is not NULL: the target's own root, "/proc/PID/root"); module
 * addresses are the file's own vaddrs.  NULL (and d->mod NULL) on failure;
 * py_dwfl_close() it either way.  The .cold part
 * of the function at [hot_lo, hot_hi) (module addresses) from the targets
 * of its jumps and the CFI rows there (with elf, not NULL: the whole frame
 * description those jumps enter), without symbols or DWARF; x86-64 only.
 * py_cold_part_of opens path itself (tests). */
struct Dwfl_Module;
struct Dwfl;
struct py_dwfl {
	struct Dwfl *dwfl;
	struct Dwfl_Module *mod;
	void *cb;                      /* its callbacks and debug path, which it keeps pointers to */
};
struct Dwfl *py_dwfl_open(struct py_dwfl *d, const char *path, const char *root);
void py_dwfl_close(struct py_dwfl *d);
struct ember_elf;
bool py_find_cold_part(struct Dwfl_Module *mod, const struct ember_elf *elf, uint64_t hot_lo, uint64_t hot_hi,
		       uint64_t *lo, uint64_t *hi);
bool py_cold_part_of(const char *path, const char *root, uint64_t hot_lo, uint64_t hot_hi, uint64_t *lo,
		     uint64_t *hi);
/* eval_dwarf.c: at open, start loading the runtime object's DWARF in a
 * thread of its own, as opts ask (opts.defer_debug_info: only the .cold
 * part, by its jumps, until _count has seen enough reads without a copy;
 * nothing with opts.no_debug_info or without DWARF).  _adopt (reader
 * thread) takes the result over once the loader is done (true then): the
 * table, and the .cold part.  _count: a read that found n frames without a
 * copy.  _stop waits for the loader and frees (at close). */
void py_eval_dwarf_open(struct ember_python *py);
bool py_eval_dwarf_adopt(struct ember_python *py);
void py_eval_dwarf_count(struct ember_python *py, int n);
void py_eval_dwarf_stop(struct ember_python *py);
/* Candidate holding variable var at pc, -1 if unknown. */
int py_eval_dwarf_cand(const struct ember_python *py, uint64_t pc, enum py_eval_var var);

/* ---- the sample check: learning and resolving (calib.c) ---- */

/* Learning which evidence candidate holds an activation's instruction
 * pointer and frame, per site (pc). */
struct py_calib {
	uint64_t pc;
	uint16_t trials;
	uint16_t code_hits[EMBER_PY_EVIDENCE_MAX];
	uint16_t line_hits[EMBER_PY_EVIDENCE_MAX];
	int16_t cand;                  /* -1: not learnt */
	bool lines;                    /* its line agrees often enough to replace the read's */
	uint16_t ftrials;              /* which candidate holds the activation's (innermost) frame */
	uint16_t frame_hits[EMBER_PY_EVIDENCE_MAX];
	int16_t fcand;                 /* -1: not learnt */
};
struct py_check {
	struct py_calib *sites;        /* NULL until needed */
	size_t nsites, sites_cap;
	struct ember_idtab by_pc;      /* pc -> index in sites */
	uint64_t learnt;               /* sites with a candidate */
	/* <= 3.10: which candidate holds the frame object at sampled pcs, pooled
	 * over all of them (each pc is seen too rarely to learn its own; the
	 * frame object is checked by its f_back before it is used) */
	uint16_t leaf_ftrials;
	uint16_t leaf_fhits[EMBER_PY_EVIDENCE_MAX];
	uint64_t checked, corrected;   /* ember_python_reconcile's results */
};
/* What an activation's sample says: code and line, or code 0. */
struct py_resolved {
	uint32_t code;    /* 0: unknown */
	uint32_t line;
	bool lines;       /* the line is trusted over the read's */
	bool guess;       /* a site not learnt yet: may confirm a read, never change it */
};
void py_check_free(struct ember_python *py);
/* One trial of site ev->pc: f the read's frame for the activation, frame
 * its address (0 unknown). */
void py_calib_update(struct ember_python *py, const struct ember_py_evidence *ev, const struct ember_py_frame *f,
		     uint64_t frame);
/* The code and line activation ev ran, by DWARF or the site's learning;
 * fr, n: the read (its code objects win an address range several held). */
struct py_resolved py_resolve(struct ember_python *py, const struct ember_py_evidence *ev,
			      const struct ember_py_frame *fr, int n);
/* The frame activation ev ran, per DWARF or learnt; 0 if unknown. */
uint64_t py_frame_of(struct ember_python *py, const struct ember_py_evidence *ev);

#endif
