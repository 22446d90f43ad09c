/* py_embed LIBPYTHON [PYTHON ARGS...]: a program that embeds CPython from
 * its shared library, as an application with a Python interpreter inside
 * does: it loads LIBPYTHON (libpython3.X.so.1.0) and runs Py_BytesMain with
 * the remaining arguments (argv[0] becomes this program's own name).  Its
 * Python frames then run in the library's eval loop, not in an executable's
 * (Debian's /usr/bin/python3.X holds its own copy of the interpreter). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: py_embed LIBPYTHON [PYTHON ARGS...]\n");
		return 2;
	}
	/* RTLD_GLOBAL: extension modules find the C API in it. */
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "py_embed: %s\n", dlerror());
		return 127;
	}
	int (*py_main)(int, char **) = (int (*)(int, char **))dlsym(lib, "Py_BytesMain");
	if (!py_main) {
		fprintf(stderr, "py_embed: %s has no Py_BytesMain\n", argv[1]);
		return 127;
	}
	argv[1] = argv[0];
	int rc = py_main(argc - 1, argv + 1);
	/* (not a tail call: main stays on the stack under the interpreter) */
	fflush(stdout);
	return rc;
}
