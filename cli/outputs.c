/* Writing a profile to every requested output, by format.  Files are opened
 * before a run starts so that a bad path fails in a second, not after an
 * hour of profiling; they are written once, at the end, on every way out. */
#include <errno.h>
#include <string.h>

#include "cli.h"

typedef int (*writer_fn)(FILE *out, const struct ember_profile *p, const struct ember_export_opts *o);

static const writer_fn writers[FORMAT_COUNT] = {
	[FORMAT_FOLDED] = ember_write_folded,
	[FORMAT_SVG] = ember_write_svg,
	[FORMAT_PSTATS] = ember_write_pstats,
	[FORMAT_SPEEDSCOPE] = ember_write_speedscope,
	[FORMAT_PPROF] = ember_write_pprof,
	[FORMAT_CHROME] = ember_write_chrome_trace,
	/* FORMAT_EMBER: ember_profile_save, by path (gzip) */
};

int outputs_open(struct output_set *set)
{
	for (int i = 0; i < set->noutputs; i++) {
		struct output_spec *o = &set->outputs[i];
		if (o->file)
			continue;
		o->file = fopen(o->path, "we");
		if (!o->file) {
			fprintf(stderr, "ember: cannot write '%s': %s\n", o->path, strerror(errno));
			return EMBER_EXIT_CANTCREAT;
		}
	}
	return 0;
}

void outputs_close(struct output_set *set)
{
	for (int i = 0; i < set->noutputs; i++)
		if (set->outputs[i].file) {
			fclose(set->outputs[i].file);
			set->outputs[i].file = NULL;
		}
}

int outputs_write(struct output_set *set, const struct ember_profile *p, bool quiet)
{
	int rc = 0;
	for (int i = 0; i < set->noutputs; i++) {
		struct output_spec *o = &set->outputs[i];
		int w;
		char err[512] = "";
		if (o->format == FORMAT_EMBER) {
			/* gzip writes by path: the FILE only proved it was writable. */
			fclose(o->file);
			o->file = NULL;
			w = ember_profile_save(p, o->path, err, sizeof err);
		} else {
			errno = 0;
			w = writers[o->format](o->file, p, &set->export);
			int e = errno;
			if (fclose(o->file) != 0 && w == 0) {
				w = -1;
				e = errno;
			}
			o->file = NULL;
			if (w != 0)
				snprintf(err, sizeof err, "writing '%s' failed: %s", o->path, strerror(e ? e : EIO));
		}
		if (w != 0) {
			fprintf(stderr, "ember: %s\n", err);
			rc = EMBER_EXIT_CANTCREAT;
		} else if (!quiet) {
			fprintf(stderr, "ember: wrote %s (%s)\n", o->path, format_name(o->format));
		}
	}
	return rc;
}
