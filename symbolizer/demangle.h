/* The symbolizer's names (demangle.c), for symbolizer.c and the unit test:
 * the interner every returned string lives in, and each raw symbol name's
 * readable (demangled) form, made once.  Private to symbolizer/. */
#ifndef EMBER_DEMANGLE_H
#define EMBER_DEMANGLE_H

#include <stddef.h>

#include "idtab.h"
#include "strtab.h"

/* Every string handed out by the symbolizer is interned in strs, so it
 * outlives the Dwfl it came from (a module can be re-declared and its Dwfl
 * dropped) and equal names share one pointer.  Beside it, each raw symbol
 * name asked for remembers its readable (demangled) form, so a symbol is
 * demangled once however many addresses or modules name it. */
struct sym_readable {
	const char *raw;       /* interned in strs */
	const char *readable;  /* interned in strs */
};

struct sym_names {
	struct ember_strtab *strs;
	struct ember_idtab index;       /* interned raw name -> its entry in readable[] */
	struct sym_readable *readable;
	size_t nreadable, readable_cap;
};

/* 0, or -1 on OOM (n is then empty and may be freed). */
int sym_names_init(struct sym_names *n);
void sym_names_free(struct sym_names *n);
/* The demangled form of raw symbol name `raw`, interned; raw itself (interned)
 * when it is not a mangled name.  A symbol version ("@@GLIBC_2.34") is
 * dropped first.  NULL only on OOM. */
const char *ember_readable_name(struct sym_names *n, const char *raw);
/* Demangle one name: malloc'ed readable string, or NULL when `raw` is not a
 * mangled C++/Rust name (or demangling failed).  Exposed for the tests. */
char *ember_demangle(const char *raw);

#endif
