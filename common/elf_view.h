/* The one ELF view of ember, for what libdw does not serve on the hot path:
 * an ELF file mapped read-only, its PT_LOAD layout (and the load bias of a
 * mapping of it), .eh_frame_hdr's search table, the GNU build-id, bytes at
 * ELF virtual addresses (memcpy from the mapping, never the live process),
 * symbols and sections by name, and the start of the function symbol that
 * holds an address.  libelf parses; every offset is bounds-checked against
 * the file.  Symbolization with inline chains and lines is libdw's
 * (symbolizer/).  Not thread-safe. */
#ifndef EMBER_COMMON_ELF_VIEW_H
#define EMBER_COMMON_ELF_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_ELF_MAX_LOADS 16

/* .eh_frame_hdr's binary-search table starts this many bytes into the
 * section; each of its fde_count entries is this long: two int32 offsets
 * from the section's start, a function's first address and its FDE. */
#define EMBER_EH_FRAME_HDR_TABLE 12
#define EMBER_EH_FRAME_HDR_ENTRY 8

struct ember_elf_load {
	uint64_t vaddr, memsz, offset, filesz;
	bool exec;
};

struct ember_elf_func {
	uint64_t start, size;      /* size 0: unknown (hand-written code without .size) */
};

struct ember_elf {
	int fd;                    /* kept open: /proc/self/fd/N reaches the file later */
	const uint8_t *data;       /* the whole file, mapped read-only */
	size_t size;
	uint16_t machine;          /* e_machine: EM_X86_64, EM_AARCH64 */
	bool is_exec_type;         /* ET_EXEC: addresses are absolute, bias 0 */
	uint64_t entry;            /* e_entry: where the program (or the loader) starts */
	struct ember_elf_load loads[EMBER_ELF_MAX_LOADS];
	unsigned nloads;
	uint64_t min_vaddr, max_vaddr;      /* span of all PT_LOADs */
	uint64_t exec_lo, exec_hi;          /* span of executable PT_LOADs */
	uint64_t eh_frame_hdr;              /* vaddr of .eh_frame_hdr, 0 if none */
	uint64_t fde_count;                 /* entries in its binary-search table */
	const uint8_t *fde_table;           /* that table in data, NULL when the file lacks it */
	uint8_t build_id[20];
	size_t build_id_len;
	uint64_t build_id_vaddr;            /* where the build-id note's bytes are mapped, 0 if not */
	bool has_symtab;                    /* a .symtab with symbols (not stripped) */
	struct ember_elf_func *funcs;       /* function symbols by address, built on first use */
	size_t nfuncs;
	bool funcs_built;
};

/* Map path and read its headers.  0, or -errno (-ENOEXEC: not a 64-bit
 * little-endian ELF file with a PT_LOAD). */
int ember_elf_open(struct ember_elf *e, const char *path);
void ember_elf_close(struct ember_elf *e);

/* Load bias of a mapping of the file at [start, ...) with file offset pgoff. */
uint64_t ember_elf_bias(const struct ember_elf *e, uint64_t start, uint64_t pgoff);
/* The len bytes at ELF vaddr inside the file's PT_LOAD contents, or NULL. */
const uint8_t *ember_elf_at(const struct ember_elf *e, uint64_t vaddr, size_t len);
/* Copy them into buf; false when any byte is outside. */
bool ember_elf_read(const struct ember_elf *e, uint64_t vaddr, void *buf, size_t len);

/* Value of the defined symbol name (.symtab first, then .dynsym), and its
 * size when size is not NULL; 0 when there is none. */
uint64_t ember_elf_symbol(const struct ember_elf *e, const char *name, uint64_t *size);
/* The same for n names in one pass over each symbol table (as many
 * ember_elf_symbol calls would give): values[i] (and sizes[i] when sizes is
 * not NULL) for names[i], 0 when there is none.  Returns how many were
 * found. */
size_t ember_elf_symbols(const struct ember_elf *e, const char *const *names, size_t n, uint64_t *values,
			 uint64_t *sizes);
/* Address of section name (and its size), 0 when there is none. */
uint64_t ember_elf_section(const struct ember_elf *e, const char *name, uint64_t *size);
/* Where the function holding vaddr starts, by the file's function symbols
 * (.symtab, else .dynsym; sorted on first use).  false when none does. */
bool ember_elf_func_start(struct ember_elf *e, uint64_t vaddr, uint64_t *start);
/* Does an FDE start exactly at vaddr (a function with CFI begins there)?
 * Then *next is where the next FDE starts (UINT64_MAX: none), which bounds
 * the function.  From .eh_frame_hdr's table, without parsing any FDE. */
bool ember_elf_fde_start(const struct ember_elf *e, uint64_t vaddr, uint64_t *next);
/* The range [lo, hi) the FDE that covers vaddr describes, from its own
 * initial location and range (decoded as its CIE's 'R' augmentation says).
 * false when no FDE covers vaddr or its encodings are not ones GNU
 * toolchains emit. */
bool ember_elf_fde_range(const struct ember_elf *e, uint64_t vaddr, uint64_t *lo, uint64_t *hi);

#endif
