/* The .ember file's layout, shared by its writer (ember_file_write.c) and
 * its reader (ember_file_read.c); docs/ember-format.md specifies it.
 *
 * A gzip stream whose content is the magic "EMBRPROF", a format version, and
 * tagged sections of LEB128 varints and length-prefixed strings.  Strings are
 * written once and referred to by index. */
#ifndef EMBER_FILE_H
#define EMBER_FILE_H

#define EMBER_FILE_MAGIC "EMBRPROF"
/* Version 2 only differs from 1 in one case: two frames that differ in
 * their flags alone (version 1 readers, which skip the flags section, would
 * see the same frame twice).  Version 3 adds row flags (off-CPU time,
 * record --idle): a reader of 1 or 2 would skip them and take that time
 * for CPU time.  ember writes the lowest version that holds the profile. */
#define EMBER_FILE_VERSION 3

enum ember_file_section {
	SEC_META = 'M', SEC_STRINGS = 'S', SEC_FRAME_FLAGS = 'X', SEC_FRAMES = 'F', SEC_STACKS = 'K',
	SEC_THREADS = 'T', SEC_ROW_FLAGS = 'W', SEC_ATTRIBUTED = 'A', SEC_ROWS = 'R', SEC_TIMELINE = 'L', SEC_END = 'E',
};

#endif
