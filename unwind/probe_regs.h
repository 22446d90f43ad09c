/* The registers a frame probe (struct ember_frame_probe, native_stack.h)
 * records, per architecture: the general-purpose registers an interpreter's
 * eval loop can keep a variable in, without SP and PC.  Each candidate has
 * its DWARF register number (which is also libunwind's, on both
 * architectures: the unwinder reads callee-saved ones of caller frames by
 * it, and the Python reader maps the interpreter's DWARF locations onto
 * candidates by it) and whether calls preserve it (only those are known in
 * a caller frame). */
#ifndef EMBER_PROBE_REGS_H
#define EMBER_PROBE_REGS_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__)
/* ax bx cx dx si di bp r8..r15 */
#define EMBER_PROBE_REGS 15
#define EMBER_PROBE_DWARF_REGS { 0, 3, 2, 1, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15 }
#define EMBER_PROBE_KEPT { 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1 }
#elif defined(__aarch64__)
/* x0..x29: DWARF numbers them 0..29; x19..x29 are callee-saved */
#define EMBER_PROBE_REGS 30
#define EMBER_PROBE_DWARF_REGS                                                                     \
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, \
	  26, 27, 28, 29 }
#define EMBER_PROBE_KEPT                                                                       \
	{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }
#else
#error "ember: no frame-probe registers for this architecture"
#endif

/* The candidate index of DWARF register reg, -1 when no candidate is it
 * (SP, PC, vector registers). */
static inline int ember_probe_cand_of_dwarf(unsigned reg)
{
	static const uint8_t dwarf[EMBER_PROBE_REGS] = EMBER_PROBE_DWARF_REGS;
	for (int i = 0; i < EMBER_PROBE_REGS; i++)
		if (dwarf[i] == reg)
			return i;
	return -1;
}

#endif
