/* The pprof writer's tables (pprof_tables.c), for the writing itself
 * (pprof.c): the string table, functions, locations and mappings, and each
 * stack's leaf-first locations.  The wire format is pprof_wire.h's, and
 * only pprof.c's.  Private to exporters/. */
#ifndef EMBER_PPROF_TABLES_H
#define EMBER_PPROF_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idtab.h"
#include "profile.h"
#include "strtab.h"
#include "text.h"

struct pp_func {
	uint32_t name, system_name, filename;
	uint32_t start_line;
};

struct pp_loc {
	uint32_t mapping;      /* id, 0: none */
	uint32_t off, n;       /* lines: line_data[off .. off + 2n), (function id, line) pairs */
};

struct pp_mapping {
	uint32_t filename;
	bool has_filenames, has_lines, has_inline;
	uint64_t root_samples;  /* samples whose outermost machine frame is here */
	uint32_t id;            /* as written: the likely main binary is 1 */
};

struct pp_ctx {
	const struct ember_profile *p;
	struct text_buf scratch;   /* sanitised text */

	/* string table: strings[i] is string index i */
	struct ember_strtab *text;
	const char **strings;
	uint32_t *string_len;
	size_t nstrings, strings_cap, string_len_cap;
	struct ember_idtab string_tab;   /* by interned pointer */

	struct pp_func *funcs;           /* function id - 1 */
	size_t nfuncs, funcs_cap;
	struct ember_idtab func_tab;

	struct pp_loc *locs;             /* location id - 1 */
	size_t nlocs, locs_cap;
	uint32_t *line_data;
	size_t line_len, line_cap;
	struct ember_idtab loc_tab;

	struct pp_mapping *maps;         /* mapping id - 1 */
	size_t nmaps, maps_cap, main_map;
	uint32_t *map_of_string;         /* string index -> mapping id, 0 */
	size_t map_of_string_cap;

	uint32_t *frame_func;            /* ember frame id -> function id, 0 until known */
	uint32_t *frame_map;             /* ember frame id -> mapping id + 1, 0 until known */

	uint32_t *stack_off, *stack_n;   /* stack -> its leaf-first locations in stack_locs */
	uint32_t *stack_root;            /* stack -> mapping of its outermost machine frame, 0 */
	uint64_t *stack_locs;
	size_t stack_locs_len, stack_locs_cap;
	uint32_t unknown_loc;            /* location of an empty stack, 0 until needed */

	bool oom;
};

/* Allocate c's tables for profile p: 0, or -1 (c->oom) on OOM.  Free with
 * pp_ctx_free in either case. */
int pp_ctx_init(struct pp_ctx *c, const struct ember_profile *p);
void pp_ctx_free(struct pp_ctx *c);

/* String index of s (NULL reads as ""), made valid UTF-8 with controls as
 * spaces; the first call gets index 0 and must be "".  On OOM c->oom is set
 * and 0 returned. */
uint32_t pp_str(struct pp_ctx *c, const char *s);

/* The leaf-first location ids of stack, once per stack (c->stack_off,
 * stack_n), with the mapping of its outermost machine frame (stack_root). */
void pp_build_stack(struct pp_ctx *c, uint32_t stack);

/* Give every mapping its id as written: 1 for the likely main binary. */
void pp_number_mappings(struct pp_ctx *c);

#endif
