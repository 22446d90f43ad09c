/* The input of fuzz.py_remote, shared by the harness and the tool that
 * captures seeds from live interpreters (py_seed.c): what ember learns of
 * a CPython runtime when it opens one, then the target's memory as
 * regions.  Little-endian throughout.
 *
 *   header (PY_FUZZ_HEADER bytes):
 *     u8  version: index into py_offsets_table (modulo its length)
 *     u8  flags: PY_FUZZ_*
 *     u16 offset of the TID in glibc's struct pthread (<= 3.10)
 *     u32 0
 *     u64 &_PyRuntime (3.13: its _Py_DebugOffsets are read there)
 *     u64 where the first interpreter pointer lives
 *     u64 where the GIL holder's thread state pointer lives (0: none)
 *     u64 the type objects: code, frame, str, bytes, Py2 unicode
 *   regions, to the end: u64 address, u32 length, the bytes
 *
 * A read succeeds when regions (the later one where they overlap) cover
 * every byte of it. */
#ifndef EMBER_FUZZ_PY_REMOTE_H
#define EMBER_FUZZ_PY_REMOTE_H

#define PY_FUZZ_HEADER 72
#define PY_FUZZ_REGION_HEAD 12

enum {
	PY_FUZZ_NO_GIL_CHECK = 1u << 0,
	PY_FUZZ_VERIFY = 1u << 1,
	PY_FUZZ_THREAD_NAMES = 1u << 2,
};

#endif
