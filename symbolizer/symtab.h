/* The sorted function-symbol table of one module (symtab.c), for
 * symbolizer.c.  Private to symbolizer/. */
#ifndef EMBER_SYMTAB_H
#define EMBER_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdwfl.h>

struct sym_entry {
	uint64_t addr, end;   /* [addr, end) in the module's ELF address space */
	const char *raw;      /* points into the module's libelf data */
	const char *readable; /* interned demangled name, filled on first hit */
};

struct symtab {
	struct sym_entry *v;
	size_t n;
};

/* Build the table from dwfl_module_getsymtab (.symtab of the file or its
 * debug file, else .dynsym).  A module without symbols gives n == 0.
 * Returns 0, or -1 on OOM. */
int symtab_build(struct symtab *t, Dwfl_Module *mod);
struct sym_entry *symtab_find(const struct symtab *t, uint64_t addr);
void symtab_free(struct symtab *t);

#endif
