/*
 * failon.c - parsing and evaluating `vmtrace diff --fail-on` conditions.
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "failon.h"
#include "vmtrace.h"
#include "vmtutil.h"

/* Parse "METRIC>+N%" etc.  Returns 0 or -1 with *why set. */
static int parse_cond(const char *s, size_t len, struct vtc_cond *c, const char **why)
{
	memset(c, 0, sizeof(*c));
	if (len >= sizeof(c->text)) {
		*why = "expression too long";
		return -1;
	}
	memcpy(c->text, s, len);
	char *t = c->text;
	char *op = strpbrk(t, "<>");
	if (!op) {
		*why = "expected METRIC>+N[%] or METRIC<-N[%]";
		return -1;
	}
	size_t ml = (size_t)(op - t);
	while (ml && t[ml - 1] == ' ')
		ml--;
	size_t skip = strspn(t, " ");
	if (ml <= skip || ml - skip >= sizeof(c->metric)) {
		*why = ml <= skip ? "no metric name" : "metric name too long";
		return -1;
	}
	memcpy(c->metric, t + skip, ml - skip);
	c->greater = *op == '>';
	const char *v = op + 1;
	while (*v == ' ')
		v++;
	if (*v != '+' && *v != '-') {
		*why = "the amount needs a sign: +N for an increase, -N for a decrease";
		return -1;
	}
	char *end;
	c->limit = strtod(v, &end);
	if (end == v + 1 || !isfinite(c->limit)) {
		*why = "bad number";
		return -1;
	}
	if (*end == '%') {
		c->percent = 1;
		end++;
	}
	while (*end == ' ')
		end++;
	if (*end) {
		*why = "unexpected text after the amount";
		return -1;
	}
	return 0;
}

int vtc_conds_add(struct vtc_conds *cs, const char *arg)
{
	const char *p = arg;
	for (;;) {
		size_t len = strcspn(p, ",");
		const char *why = NULL;
		struct vtc_cond c;
		if (parse_cond(p, len, &c, &why)) {
			fprintf(stderr, "vmtrace diff: bad --fail-on expression '%.*s': %s\n", (int)len, p, why);
			return -1;
		}
		struct vtc_cond *n = realloc(cs->c, (cs->n + 1) * sizeof(*n));
		if (!n) {
			fprintf(stderr, "vmtrace diff: out of memory\n");
			return -1;
		}
		cs->c = n;
		cs->c[cs->n++] = c;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

void vtc_conds_free(struct vtc_conds *cs)
{
	free(cs->c);
	cs->c = NULL;
	cs->n = 0;
}

double vtc_change_pct(double base, double nw)
{
	if (base == nw)
		return 0;
	if (base == 0)
		return nw > 0 ? INFINITY : -INFINITY;
	return (nw - base) / fabs(base) * 100.0;
}

int vtc_cond_holds(const struct vtc_cond *c, double base, double nw)
{
	double d = c->percent ? vtc_change_pct(base, nw) : nw - base;
	return c->greater ? d > c->limit : d < c->limit;
}

int vtc_cond_matches(const struct vtc_cond *c, const char *name, int in_any)
{
	if (strcmp(c->metric, "any") == 0)
		return in_any;
	return fnmatch(c->metric, name, 0) == 0;
}

int vtc_conds_known(const struct vtc_conds *cs, const char *(*name)(const void *rows, size_t i),
		    const void *rows, size_t n)
{
	for (size_t i = 0; i < cs->n; i++) {
		int found = !strcmp(cs->c[i].metric, "any");
		for (size_t j = 0; j < n && !found; j++)
			found = vtc_cond_matches(&cs->c[i], name(rows, j), 1);
		if (!found) {
			fprintf(stderr, "vmtrace diff: bad --fail-on expression '%s': no metric '%s'\n",
				cs->c[i].text, cs->c[i].metric);
			return -1;
		}
	}
	return 0;
}

void vtc_diff_json_head(struct vmt_buf *out, const char *base, const char *nw)
{
	vmt_buf_puts(out, "{\"base\":");
	vmt_buf_json_str(out, base);
	vmt_buf_puts(out, ",\"new\":");
	vmt_buf_json_str(out, nw);
}

void vtc_diff_json_fail(struct vmt_buf *out, int nfail, const struct vtc_cond *c,
			const char *metric)
{
	vmt_buf_puts(out, nfail ? ",{\"expr\":" : "{\"expr\":");
	vmt_buf_json_str(out, c->text);
	vmt_buf_puts(out, ",\"metric\":");
	vmt_buf_json_str(out, metric);
}

int vtc_diff_verdict(struct vmt_buf *out, int json, size_t nconds, int nfail)
{
	if (json)
		vmt_buf_printf(out, "],\"verdict\":\"%s\"}\n", nfail ? "regression" : "ok");
	else if (nconds)
		vmt_buf_printf(out, "%sverdict: %s\n", nfail ? "" : "\n",
			       nfail ? "regression (exit 1)" : "ok, no --fail-on condition holds");
	if (vmt_buf_write(out, stdout) == -ENOMEM) {
		fprintf(stderr, "vmtrace diff: out of memory\n");
		return 2;
	}
	return nfail ? 1 : 0;
}
