/* Rename rules for `ember diff --rename REGEX=REPLACEMENT`: frame names are
 * rewritten before matching, so that kernels that differ only in precision
 * or vendor (sgemm_kernel / fbgemm::... / qlinear) become one key.  POSIX
 * extended regexes (<regex.h>), sed's replacement syntax (\0..\9). */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "grow.h"

struct rename_rule {
	regex_t re;
	char *repl;            /* replacement with "\=" and "\\" already resolved: see expand() */
};

struct ember_diff_renames {
	struct rename_rule *rules;
	size_t n, cap;
};

struct ember_diff_renames *ember_diff_renames_new(void)
{
	return calloc(1, sizeof(struct ember_diff_renames));
}

void ember_diff_renames_free(struct ember_diff_renames *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		regfree(&r->rules[i].re);
		free(r->rules[i].repl);
	}
	free(r->rules);
	free(r);
}

size_t ember_diff_renames_count(const struct ember_diff_renames *r)
{
	return r ? r->n : 0;
}

int ember_diff_renames_add(struct ember_diff_renames *r, const char *spec, char *err, size_t errlen)
{
	size_t n = strlen(spec), eq = n;
	char *pattern = malloc(n + 1);
	size_t plen = 0;

	if (!pattern) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* The split: the first '=' that is not "\=".  "\=" means '=' in the
	 * regex (POSIX leaves "\=" undefined, so it cannot mean anything else). */
	for (size_t i = 0; i < n; i++) {
		if (spec[i] == '\\' && spec[i + 1] == '=') {
			pattern[plen++] = '=';
			i++;
		} else if (spec[i] == '\\' && spec[i + 1]) {
			pattern[plen++] = spec[i++];
			pattern[plen++] = spec[i];
		} else if (spec[i] == '=') {
			eq = i;
			break;
		} else {
			pattern[plen++] = spec[i];
		}
	}
	pattern[plen] = '\0';
	if (eq == n || plen == 0) {
		snprintf(err, errlen, "--rename needs REGEX=REPLACEMENT with a non-empty REGEX, not '%s'", spec);
		free(pattern);
		return -1;
	}
	if (EMBER_GROW(r->rules, r->cap, r->n + 1) < 0) {
		free(pattern);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct rename_rule *rule = &r->rules[r->n];
	int rc = regcomp(&rule->re, pattern, REG_EXTENDED);
	if (rc != 0) {
		char msg[256];
		regerror(rc, &rule->re, msg, sizeof(msg));
		snprintf(err, errlen, "--rename '%s': bad regular expression '%s': %s", spec, pattern, msg);
		free(pattern);
		return -1;
	}
	free(pattern);
	/* Backreferences beyond the groups would read unset matches: refuse
	 * them now rather than silently insert nothing. */
	const char *repl = spec + eq + 1;
	for (const char *s = repl; *s; s++) {
		if (*s != '\\' || !s[1])
			continue;
		s++;
		if (*s >= '1' && *s <= '9' && (size_t)(*s - '0') > rule->re.re_nsub) {
			snprintf(err, errlen, "--rename '%s': \\%c but the regex has %zu group(s)", spec, *s,
				 rule->re.re_nsub);
			regfree(&rule->re);
			return -1;
		}
	}
	if (!(rule->repl = strdup(repl))) {
		regfree(&rule->re);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->n++;
	return 0;
}

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom || (b->oom = ember_grow((void **)&b->s, &b->cap, 1, b->len + n + 1) < 0))
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* in with its first match m[0] replaced by repl (\0..\9 expanded). */
static void expand(struct sbuf *out, const char *in, const regmatch_t *m, size_t nsub, const char *repl)
{
	sb_put(out, in, (size_t)m[0].rm_so);
	for (const char *s = repl; *s; s++) {
		if (*s == '\\' && s[1] >= '0' && s[1] <= '9') {
			size_t g = (size_t)(s[1] - '0');
			if (g <= nsub && m[g].rm_so >= 0)
				sb_put(out, in + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so));
			s++;
		} else if (*s == '\\' && s[1]) {
			sb_put(out, s + 1, 1);   /* "\\" is '\', "\x" is x */
			s++;
		} else {
			sb_put(out, s, 1);
		}
	}
	sb_put(out, in + m[0].rm_eo, strlen(in + m[0].rm_eo));
}

const char *ember_diff_renames_apply(const struct ember_diff_renames *r, const char *name, char **buf,
				     size_t *cap)
{
	/* Two buffers in turn: rule i reads what rule i-1 wrote. */
	struct sbuf a = { .s = *buf, .cap = *cap }, b = { 0 };
	const char *cur = name;
	bool in_a = false;

	for (size_t i = 0; r && i < r->n; i++) {
		regmatch_t m[10];
		const struct rename_rule *rule = &r->rules[i];
		if (regexec(&rule->re, cur, 10, m, 0) != 0)
			continue;
		struct sbuf *dst = in_a ? &b : &a;
		dst->len = 0;
		expand(dst, cur, m, rule->re.re_nsub < 9 ? rule->re.re_nsub : 9, rule->repl);
		if (dst->oom)
			break;
		cur = dst->s;
		in_a = dst == &a;
	}
	if (a.oom || b.oom) {
		*buf = a.s;
		*cap = a.cap;
		free(b.s);
		return NULL;
	}
	if (cur != name && !in_a) {
		/* the result is in b: move it to the caller's buffer */
		a.len = 0;
		sb_put(&a, b.s, b.len);
		cur = a.oom ? NULL : a.s;
	}
	*buf = a.s;
	*cap = a.cap;
	free(b.s);
	return cur;
}
