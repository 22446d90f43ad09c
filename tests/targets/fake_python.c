/* fake_python SECONDS [X.Y] (defaults 1.0, 3.11): a native program that
 * looks like CPython 3.11 (or X.Y: 3.13 and later with the
 * _Py_DebugOffsets cookie and version at the start of _PyRuntime, the
 * rest of that struct garbage too) to a profiler -- the symbols a reader finds the runtime by
 * (_PyRuntime, Py_Version, the type objects) and an eval loop by its name
 * (_PyEval_EvalFrameDefault) -- but whose "interpreter state" is garbage:
 * _PyRuntime holds random bytes and, every other word, pointers back into
 * itself or at the fake code type, so that a reader following it finds
 * objects that look real at first.  main -> _PyEval_EvalFrameDefault ->
 * burn_function spins for SECONDS.  Run it under a name starting with
 * "python" (a copy named python3.11) to be taken for the interpreter. */
#include <stdint.h>
#include <string.h>
#include "common.h"

unsigned char _PyRuntime[4096];
uint32_t Py_Version = 0x030b04f0;   /* 3.11.4 final; written over for X.Y */
unsigned char PyCode_Type[512], PyUnicode_Type[512], PyBytes_Type[512], PyType_Type[512];

static volatile uint64_t sink;

__attribute__((noipa)) uint64_t burn_function(double secs)
{
	double end = tgt_now() + secs;
	uint64_t x = 9;
	do {
		for (int i = 0; i < 4096; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x));
		}
	} while (tgt_now() < end);
	return x;
}

__attribute__((noipa)) uint64_t _PyEval_EvalFrameDefault(double secs)
{
	uint64_t r = burn_function(secs);
	sink = r;
	return r ^ 1;
}

static void fill_garbage(void)
{
	uint64_t seed = 0x243f6a8885a308d3ull;
	for (size_t i = 0; i + 8 <= sizeof _PyRuntime; i += 8) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t w = seed;
		if (i % 16 == 0)
			w = (uint64_t)(uintptr_t)(i % 32 ? PyCode_Type : _PyRuntime + (seed >> 40) % (sizeof _PyRuntime - 64));
		memcpy(_PyRuntime + i, &w, 8);
	}
}

/* Look like release X.Y.0 final: Py_Version, and from 3.13 the debug
 * offsets' cookie and version (a reader takes the version from there). */
static void claim_version(const char *xy)
{
	unsigned major = 0, minor = 0;
	if (sscanf(xy, "%u.%u", &major, &minor) != 2)
		return;
	Py_Version = major << 24 | minor << 16 | 0xf0;
	if (major == 3 && minor >= 13) {
		uint64_t v = Py_Version, free_threaded = 0;
		memcpy(_PyRuntime, "xdebugpy", 8);
		memcpy(_PyRuntime + 8, &v, 8);
		memcpy(_PyRuntime + 16, &free_threaded, 8);
	}
}

int main(int argc, char **argv)
{
	fill_garbage();
	if (argc > 2)
		claim_version(argv[2]);
	sink = _PyEval_EvalFrameDefault(tgt_seconds(argc, argv, 1, 1.0));
	return 0;
}
