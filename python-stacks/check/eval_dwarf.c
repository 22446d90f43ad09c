/* Where the eval loop keeps its instruction pointer and its frame, from the
 * interpreter's own DWARF.
 *
 * The sample check (evidence.c) maps the eval loop's `next_instr` variable,
 * as the native sample held it, back to a code object and line, and its
 * frame variable (`f`, a PyFrameObject, up to 3.10; `frame` from 3.11) to
 * the frame it ran.  Without debug information it has to learn, per call
 * site, which register or stack slot holds them -- which never works for
 * the sampled frame itself (every pc in the loop is its own site, seen once
 * or twice).  When the interpreter has DWARF (pyenv builds are compiled
 * with -g; Debian's python3 has it in python3.X-dbg, found by build-id or
 * .gnu_debuglink as the symbolizer finds it), their location lists say
 * exactly where they live at each pc: a register, or a slot at a fixed
 * offset from the CFA.  Those map directly onto the sampler's candidates
 * (by DWARF register number, probe_regs.h).
 *
 * Loaded once per process, in a thread of its own started at open; lookups
 * are a binary search.  The subprogram's address ranges also give the eval
 * function's `.cold` part when the mapped ELF has no symbol for it
 * (Debian's stripped python3); without DWARF, eval_cold.c looks for it.
 * Which native frames are eval-loop activations (ember_python_is_eval) is
 * answered here too: the symbols' ranges and that .cold part. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "elf_view.h"
#include "py_check.h"

#define DWARF_AFTER_READS 200           /* opts.defer_debug_info: reads without a copy
                                        * before the eval loop's DWARF is loaded */

/* Candidate holding the variable for one location expression, or -1:
 * a register, or a word at CFA - 8 * (k + 1) (DW_OP_fbreg with the
 * frame base being the CFA). */
static int expr_to_cand(const Dwarf_Op *e, size_t n, bool fb_is_cfa)
{
	if (n != 1)
		return -1;   /* pieces, computed values, entry values: not a plain holder */
	if (e[0].atom >= DW_OP_reg0 && e[0].atom <= DW_OP_reg31)
		return ember_probe_cand_of_dwarf(e[0].atom - DW_OP_reg0);
	if (e[0].atom == DW_OP_regx)
		return ember_probe_cand_of_dwarf((unsigned)e[0].number);
	if (e[0].atom == DW_OP_fbreg && fb_is_cfa) {
		int64_t off = (int64_t)e[0].number;
		if (off >= 0 || off % 8)
			return -1;
		int64_t k = -off / 8 - 1;
		return k < EMBER_PY_EVIDENCE_MAX - EMBER_PY_EVIDENCE_REGS ? EMBER_PY_EVIDENCE_REGS + (int)k : -1;
	}
	return -1;
}

/* A DIE's name, also through DW_AT_abstract_origin / DW_AT_specification
 * (an out-of-line instance of a function GCC also inlined, or cloned, names
 * itself and its variables only there). */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
}

struct collect {
	struct py_eval_loc *v;
	size_t n, cap;
	int var;                     /* enum py_eval_var being collected */
	const char *names[PY_EVAL_NVARS];
	bool fb_is_cfa;              /* DW_AT_frame_base is DW_OP_call_frame_cfa */
	Dwarf_Die *sub;              /* the subprogram: its ranges for single-expression locations */
};

static int push(struct collect *c, uint64_t lo, uint64_t hi, int cand)
{
	if (EMBER_GROW(c->v, c->cap, c->n + 1) != 0)
		return -1;
	c->v[c->n++] = (struct py_eval_loc){ .lo = lo, .hi = hi, .cand = (int16_t)cand, .var = (uint8_t)c->var };
	return 0;
}

/* One variable: every range of its location list where it is in a register
 * or a CFA-relative slot. */
static void add_variable(struct collect *c, Dwarf_Die *var)
{
	Dwarf_Attribute attr;
	if (!dwarf_attr(var, DW_AT_location, &attr))
		return;
	Dwarf_Addr base, start, end;
	Dwarf_Op *expr;
	size_t len;
	ptrdiff_t off = 0;
	while ((off = dwarf_getlocations(&attr, off, &base, &start, &end, &expr, &len)) > 0) {
		int cand = expr_to_cand(expr, len, c->fb_is_cfa);
		if (cand < 0)
			continue;
		if (start == 0 && end == (Dwarf_Addr)-1) {
			/* one expression for the whole scope: the subprogram's ranges */
			Dwarf_Addr b, s, e;
			ptrdiff_t r = 0;
			while ((r = dwarf_ranges(c->sub, r, &b, &s, &e)) > 0)
				push(c, s, e, cand);
		} else {
			push(c, start, end, cand);
		}
	}
}

/* The variables in the subprogram's own scopes (its parameters, lexical
 * blocks; not the functions inlined into it). */
static void walk(struct collect *c, Dwarf_Die *die)
{
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_variable || tag == DW_TAG_formal_parameter) {
			const char *name = die_name(&child);
			for (int v = 0; name && v < PY_EVAL_NVARS; v++)
				if (strcmp(name, c->names[v]) == 0) {
					c->var = v;
					add_variable(c, &child);
				}
		} else if (tag == DW_TAG_lexical_block) {
			walk(c, &child);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int cmp_loc(const void *a, const void *b)
{
	const struct py_eval_loc *x = a, *y = b;
	if (x->var != y->var)
		return x->var < y->var ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The subprogram DIE named `name` whose ranges contain pc (DWARF addresses). */
static bool find_subprogram(Dwfl_Module *mod, Dwarf_Addr pc, const char *name, Dwarf_Die *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
	if (!cu)
		return false;
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, pc - bias, &scopes);
	bool found = false;
	for (int i = 0; i < n && !found; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		const char *nm = die_name(&scopes[i]);
		if (nm && strcmp(nm, name) == 0) {
			*out = scopes[i];
			found = true;
		}
	}
	free(scopes);
	return found;
}

/* What the loader thread hands over (owned by it until `done`). */
struct py_dwarf_job {
	char *path;
	char *root;                    /* the target's root ("/proc/PID/root"): its debug files */
	uint64_t bias;                 /* load bias of the runtime object */
	uint64_t hot_lo, hot_hi;       /* absolute */
	bool want_cold;
	bool cold_only;                /* the .cold part by its jumps, no DWARF */
	char name[32];
	bool frame_objects;            /* <= 3.10: the frame variable is `f` */
	pthread_t thread;
	atomic_bool done;
	/* results, absolute */
	struct py_eval_loc *locs;
	size_t nlocs;
	uint64_t cold_lo, cold_hi;     /* 0, 0: none */
	bool cold_scanned;             /* found by eval_cold.c, not DWARF */
};

static void load(struct py_dwarf_job *j)
{
	struct py_dwfl d;
	if (!py_dwfl_open(&d, j->path, j->root)) {
		py_dwfl_close(&d);
		return;
	}
	Dwfl_Module *mod = d.mod;
	Dwarf_Die sub;
	if (!mod || j->cold_only || !find_subprogram(mod, j->hot_lo - j->bias, j->name, &sub)) {
		/* No DWARF for it: the .cold part may still be found by its jumps. */
		uint64_t lo, hi;
		struct ember_elf elf;
		bool have_elf = mod && j->want_cold && ember_elf_open(&elf, j->path) == 0;
		if (mod && j->want_cold &&
		    py_find_cold_part(mod, have_elf ? &elf : NULL, j->hot_lo - j->bias, j->hot_hi - j->bias, &lo, &hi)) {
			j->cold_lo = lo + j->bias;
			j->cold_hi = hi + j->bias;
			j->cold_scanned = true;
		}
		if (have_elf)
			ember_elf_close(&elf);
		py_dwfl_close(&d);
		return;
	}
	Dwarf_Addr dwbias = 0;
	dwfl_module_getdwarf(mod, &dwbias);
	uint64_t to_abs = dwbias + j->bias;

	struct collect c = { .sub = &sub, .names = { "next_instr", j->frame_objects ? "f" : "frame" } };
	Dwarf_Attribute fb;
	Dwarf_Op *fbe;
	size_t fbn;
	c.fb_is_cfa = dwarf_attr(&sub, DW_AT_frame_base, &fb) && dwarf_getlocation(&fb, &fbe, &fbn) == 0 &&
		      fbn == 1 && fbe[0].atom == DW_OP_call_frame_cfa;
	walk(&c, &sub);

	/* The function's other part (.cold) when the symbols did not name it. */
	Dwarf_Addr b, s, e;
	ptrdiff_t r = 0;
	while (j->want_cold && !j->cold_hi && (r = dwarf_ranges(&sub, r, &b, &s, &e)) > 0)
		if (e + to_abs <= j->hot_lo || s + to_abs >= j->hot_hi) {
			j->cold_lo = s + to_abs;
			j->cold_hi = e + to_abs;
		}
	for (size_t i = 0; i < c.n; i++) {
		c.v[i].lo += to_abs;
		c.v[i].hi += to_abs;
	}
	if (c.n)
		qsort(c.v, c.n, sizeof *c.v, cmp_loc);
	j->locs = c.v;
	j->nlocs = c.n;
	py_dwfl_close(&d);
}

static void *loader(void *arg)
{
	struct py_dwarf_job *j = arg;
	load(j);
	atomic_store_explicit(&j->done, true, memory_order_release);
	return NULL;
}

/* Reading a separate debug file costs up to ~200 ms (Debian's python3:
 * 11 MB of compressed DWARF): a thread of its own, so that no sample's
 * read waits for it.  Until it is done, sites are learnt as without DWARF. */
static void start(struct ember_python *py, const char *elf_path, uint64_t bias, bool cold_only)
{
	const struct py_runtime *rt = &py->rt;
	if (rt->neval == 0 || (cold_only && rt->neval > 1))
		return;
	const char *eval_name = rt->major == 2 ? "PyEval_EvalFrameEx" : "_PyEval_EvalFrameDefault";
	struct py_dwarf_job *j = calloc(1, sizeof *j);
	if (!j || !(j->path = strdup(elf_path)) || !(j->root = strdup(rt->root))) {
		if (j)
			free(j->path);
		free(j);
		return;
	}
	j->bias = bias;
	j->hot_lo = rt->eval_lo[0];
	j->hot_hi = rt->eval_hi[0];
	j->want_cold = rt->neval == 1;
	j->frame_objects = rt->off.ts_frame >= 0;
	j->cold_only = cold_only;
	snprintf(j->name, sizeof j->name, "%s", eval_name);
	atomic_init(&j->done, false);
	if (pthread_create(&j->thread, NULL, loader, j) != 0) {
		free(j->path);
		free(j->root);
		free(j);
		return;
	}
	py->eval->job = j;
}

void py_eval_dwarf_open(struct ember_python *py)
{
	py->eval->deferred = py->opts.defer_debug_info && !py->opts.no_debug_info;
	if (!py->opts.no_debug_info)
		start(py, py->rt.opened, py->rt.bias, py->eval->deferred);
}

/* How much of the loop it covers: GCC's variable tracking gives up on
 * parts of a function this large (pyenv 3.13: next_instr nowhere). */
static void describe_coverage(struct ember_python *py, const struct py_dwarf_job *j)
{
	struct py_eval *ev = py->eval;
	uint64_t covered = 0, size = ev->cold_hi - ev->cold_lo;
	for (uint32_t i = 0; i < py->rt.neval; i++)
		size += py->rt.eval_hi[i] - py->rt.eval_lo[i];
	for (size_t i = 0; i < ev->nlocs; i++)
		if (ev->locs[i].var == PY_EVAL_NEXT_INSTR)
			covered += ev->locs[i].hi - ev->locs[i].lo;
	if (ev->nlocs)
		snprintf(ev->note, sizeof ev->note, "; eval loop from DWARF%s: instruction pointer known at %.0f%% of it",
			 j->cold_hi ? " (its .cold part too)" : "", size ? 100.0 * (double)covered / (double)size : 0.0);
	else if (j->cold_scanned)
		snprintf(ev->note, sizeof ev->note, "; eval loop's .cold part found by its jumps");
}

bool py_eval_dwarf_adopt(struct ember_python *py)
{
	struct py_dwarf_job *j = py->eval->job;
	if (!j || !atomic_load_explicit(&j->done, memory_order_acquire))
		return false;
	pthread_join(j->thread, NULL);
	py->eval->locs = j->locs;
	py->eval->nlocs = j->nlocs;
	if (j->cold_hi && py->rt.neval == 1) {
		py->eval->cold_lo = j->cold_lo;
		py->eval->cold_hi = j->cold_hi;
	}
	describe_coverage(py, j);
	free(j->path);
	free(j->root);
	free(j);
	py->eval->job = NULL;
	return true;
}

void py_eval_dwarf_count(struct ember_python *py, int n)
{
	struct py_eval *ev = py->eval;
	if (ev->deferred && n > 0 && ++ev->reads_without_copy >= DWARF_AFTER_READS && !ev->job) {
		/* Frames keep coming without a copy (BPF not attached, ember
		 * behind): the check against the sample needs the DWARF now. */
		ev->deferred = false;
		start(py, py->rt.opened, py->rt.bias, false);
	}
}

void py_eval_dwarf_stop(struct ember_python *py)
{
	struct py_dwarf_job *j = py->eval->job;
	if (j) {
		pthread_join(j->thread, NULL);
		free(j->locs);
		free(j->path);
		free(j->root);
		free(j);
		py->eval->job = NULL;
	}
	free(py->eval->locs);
	py->eval->locs = NULL;
	py->eval->nlocs = 0;
}

int py_eval_dwarf_cand(const struct ember_python *py, uint64_t pc, enum py_eval_var var)
{
	/* first entry of a later variable, or of this one starting after pc */
	const struct py_eval_loc *locs = py->eval->locs;
	size_t lo = 0, hi = py->eval->nlocs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct py_eval_loc *l = &locs[mid];
		if (l->var < var || (l->var == var && l->lo <= pc))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges of different lexical-block variables may nest: look back a few. */
	for (size_t i = lo, k = 0; i-- > 0 && k < 8 && locs[i].var == var; k++)
		if (pc < locs[i].hi)
			return locs[i].cand;
	return -1;
}

bool ember_python_is_eval(const struct ember_python *py, uint64_t pc)
{
	for (uint32_t i = 0; i < py->rt.neval; i++)
		if (pc >= py->rt.eval_lo[i] && pc < py->rt.eval_hi[i])
			return true;
	return py->eval->cold_hi && pc >= py->eval->cold_lo && pc < py->eval->cold_hi;
}

bool ember_python_is_eval_vaddr(const struct ember_python *py, const char *path, uint64_t vaddr)
{
	return py && path && strcmp(path, py->rt.path) == 0 && ember_python_is_eval(py, vaddr + py->rt.bias);
}
