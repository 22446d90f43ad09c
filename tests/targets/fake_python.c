/* fake_python SECONDS (default 1.0): a native program that looks like
 * CPython 3.11 to a profiler -- the symbols a reader finds the runtime by
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
const uint32_t Py_Version = 0x030b04f0;   /* 3.11.4 final */
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

int main(int argc, char **argv)
{
	fill_garbage();
	sink = _PyEval_EvalFrameDefault(tgt_seconds(argc, argv, 1, 1.0));
	return 0;
}
