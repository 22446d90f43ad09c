/* fuzz.proc_maps: the /proc/PID/maps parser (common/proc.c) on any text,
 * through ember_proc_maps_parse (what ember_proc_maps runs on the opened
 * file).  Each mapping handed out must be a whole parsed line: permissions
 * of at most four characters, a path that is a string without its line's
 * newline. */
#include "fuzz_util.h"

#include <string.h>

#include "proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	size_t maps;
	size_t text;        /* bytes of input: no path is longer */
};

static bool check_map(void *arg, const struct ember_proc_map *m)
{
	struct seen *s = arg;
	FUZZ_ASSERT(m->path != NULL);
	FUZZ_ASSERT(memchr(m->perms, 0, sizeof m->perms) != NULL);
	size_t n = strlen(m->path);
	FUZZ_ASSERT(n <= s->text && !memchr(m->path, '\n', n));
	return ++s->maps < 100000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	struct seen s = { .text = size };
	ember_proc_maps_parse(f, check_map, &s);
	fclose(f);
	return 0;
}
