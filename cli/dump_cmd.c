/* `ember dump -p PID`: every thread's current stack, once (dump/dump.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dump.h"
#include "json_out.h"
#include "symbolizer.h"

static void dump_usage(FILE *out)
{
	fputs(ember_help_dump, out);
}

static void print_frame(const struct ember_dump_frame *f)
{
	if (f->kind == EMBER_DUMP_PYTHON)
		printf("    %s (%s:%u)\n", f->name, f->file, f->line);
	else if (f->kind == EMBER_DUMP_SPECIAL)
		printf("    %s\n", f->name);
	else if (f->line)
		printf("    %s [%s] (%s:%u)%s\n", f->name, f->module, f->file, f->line, f->inlined ? " inlined" : "");
	else
		printf("    %s [%s]%s\n", f->name, f->module, f->inlined ? " inlined" : "");
	for (uint32_t k = 0; k < f->nlocals; k++)
		printf("        %s = %s\n", f->locals[k].name, f->locals[k].value);
}

static void print_text(const struct ember_dump *d)
{
	printf("Process %d: %s\n", (int)d->pid, d->cmdline[0] ? d->cmdline : d->exe);
	if (d->python[0])
		printf("Python: %s\n", d->python);
	else if (d->python_note[0])
		printf("Python: %s\n", d->python_note);
	if (d->locals_note[0])
		printf("Locals: %s\n", d->locals_note);
	for (uint32_t i = 0; i < d->nthreads; i++) {
		const struct ember_dump_thread *t = &d->threads[i];
		printf("\nThread %u \"%s\"%s: %s", t->tid, t->name,
		       t->gil_known && t->holds_gil ? " (holds the GIL)" : "", t->state_text);
		if (t->syscall >= 0)
			printf(", in %s (syscall %ld)", t->syscall_name[0] ? t->syscall_name : "?", t->syscall);
		if (t->wchan[0])
			printf(", wchan %s", t->wchan);
		printf("\n");
		if (t->error)
			printf("    [no stack: %s]\n", t->error);
		for (uint32_t k = 0; k < t->nframes; k++)
			print_frame(&t->frames[k]);
	}
	printf("\nKept each thread stopped for at most %.3f ms (%.3f ms in all, %u threads); "
	       "the longest wait for a thread to stop was %.3f ms\n",
	       d->pause_max_ns / 1e6, d->pause_total_ns / 1e6, d->nthreads, d->stop_wait_max_ns / 1e6);
}

static void json_kv(const char *key, const char *val, bool comma)
{
	printf("\"%s\":", key);
	ember_json_str(stdout, val);
	if (comma)
		putchar(',');
}

static void json_frame(const struct ember_dump_frame *f)
{
	static const char *const kinds[] = { "native", "python", "special" };
	putchar('{');
	json_kv("kind", kinds[f->kind], true);
	json_kv("name", f->name, true);
	json_kv("file", f->file, true);
	printf("\"line\":%u,", f->line);
	json_kv("module", f->module, true);
	printf("\"inlined\":%s,\"locals\":{", f->inlined ? "true" : "false");
	for (uint32_t k = 0; k < f->nlocals; k++)
		json_kv(f->locals[k].name, f->locals[k].value, k + 1 < f->nlocals);
	printf("}}");
}

static void json_thread(const struct ember_dump_thread *t)
{
	char state[2] = { t->state, 0 };
	printf("{\"tid\":%u,", t->tid);
	json_kv("name", t->name, true);
	json_kv("comm", t->comm, true);
	json_kv("state", state, true);
	json_kv("state_text", t->state_text, true);
	printf("\"syscall\":%ld,", t->syscall);
	json_kv("syscall_name", t->syscall_name, true);
	json_kv("wchan", t->wchan, true);
	printf("\"python\":%s,\"holds_gil\":%s,", t->python ? "true" : "false",
	       !t->gil_known ? "null" : t->holds_gil ? "true" : "false");
	printf("\"pause_us\":%.1f,\"stop_wait_us\":%.1f,\"error\":", t->pause_ns / 1e3, t->stop_wait_ns / 1e3);
	if (t->error)
		ember_json_str(stdout, t->error);
	else
		printf("null");
	printf(",\"frames\":[");
	for (uint32_t k = 0; k < t->nframes; k++) {
		json_frame(&t->frames[k]);
		if (k + 1 < t->nframes)
			putchar(',');
	}
	printf("]}");
}

static void print_json(const struct ember_dump *d)
{
	printf("{\"process\":{\"pid\":%d,", (int)d->pid);
	json_kv("exe", d->exe, true);
	json_kv("cmdline", d->cmdline, true);
	json_kv("python", d->python, true);
	json_kv("python_note", d->python_note, true);
	json_kv("locals_note", d->locals_note, true);
	printf("\"pause_max_us\":%.1f,\"pause_total_us\":%.1f,\"stop_wait_max_us\":%.1f},\"threads\":[",
	       d->pause_max_ns / 1e3, d->pause_total_ns / 1e3, d->stop_wait_max_ns / 1e3);
	for (uint32_t i = 0; i < d->nthreads; i++) {
		json_thread(&d->threads[i]);
		if (i + 1 < d->nthreads)
			putchar(',');
	}
	printf("]}\n");
}

/* Options into *pid and o; 0 to go on, else the exit code (-1: --help shown). */
static int parse(int argc, char **argv, pid_t *pid, struct ember_dump_opts *o, bool *json)
{
	enum { OPT_LOCALS = 400, OPT_JSON, OPT_UNFILTERED, OPT_NO_SYMBOL_CACHE };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },       { "locals", no_argument, NULL, OPT_LOCALS },
		{ "json", no_argument, NULL, OPT_JSON },       { "native-unfiltered", no_argument, NULL, OPT_UNFILTERED },
		{ "no-symbol-cache", no_argument, NULL, OPT_NO_SYMBOL_CACHE },
		{ "help", no_argument, NULL, 'h' },            { NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:h", longopts, NULL)) != -1) {
		char *end;
		long v;
		switch (c) {
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*optarg == 0 || *end || v <= 0 || v > 0x3fffffff)
				return options_bad("dump", "invalid pid '%s'", optarg);
			*pid = (pid_t)v;
			break;
		case OPT_LOCALS: o->locals = true; break;
		case OPT_JSON: *json = true; break;
		case OPT_UNFILTERED: o->native_unfiltered = true; break;
		case OPT_NO_SYMBOL_CACHE: ember_symbolizer_set_disk_cache(false); break;
		case 'h': dump_usage(stdout); return -1;
		default: return options_bad("dump", "%s", "invalid option");
		}
	}
	if (optind < argc)
		return options_bad("dump", "unexpected argument '%s'", argv[optind]);
	if (!*pid)
		return options_bad("dump", "%s", "-p PID is required");
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	pid_t pid = 0;
	bool json = false;
	struct ember_dump_opts o = { 0 };
	int rc = parse(argc, argv, &pid, &o, &json);
	if (rc)
		return rc < 0 ? EMBER_EXIT_OK : rc;
	const char *knob = getenv("EMBER_TEST_DUMP_STOPPED_MS");   /* tests: a long pause */
	if (knob)
		o.stopped_sleep_ms = (uint32_t)strtoul(knob, NULL, 10);
	struct ember_dump *d;
	char msg[512];
	rc = ember_dump_take(pid, &o, &d, msg, sizeof msg);
	if (rc != EMBER_DUMP_OK) {
		fprintf(stderr, "ember dump: %s\n", msg);
		return rc == EMBER_DUMP_GONE ? EMBER_EXIT_UNAVAILABLE : rc == EMBER_DUMP_NO_ACCESS ? EMBER_EXIT_NOPERM :
		       EMBER_EXIT_OSERR;
	}
	if (json)
		print_json(d);
	else
		print_text(d);
	ember_dump_free(d);
	return fflush(stdout) == 0 ? EMBER_EXIT_OK : EMBER_EXIT_CANTCREAT;
}
