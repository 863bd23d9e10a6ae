/*
 * diffres.c - `vmtrace diff BASE.json NEW.json`: two vmreplay results (of
 * one trace on two kernels, two machines, two builds of a kernel)
 * compared metric by metric: the two medians, their ratio and whether the
 * difference stands out of the run-to-run noise (resultdiff.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diffres.h"
#include "resultdiff.h"
#include "vmtrace.h"
#include "vmtutil.h"

/* The significance level of the test. */
#define ALPHA 0.05
/* Results larger than this are not vmreplay's. */
#define MAX_RESULT (256u << 20)

int vtc_diff_is_result(const char *path)
{
	char buf[512];
	if (strcmp(path, "-") == 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 && van_result_sniff(buf, (size_t)n);
}

static char *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 16, n = 0;
	char *b = NULL;
	if (fd < 0)
		goto fail;
	for (;;) {
		if (!b || n == cap) {
			if (b)
				cap *= 2;
			char *nb = cap <= MAX_RESULT ? realloc(b, cap) : NULL;
			if (!nb) {
				errno = cap > MAX_RESULT ? EFBIG : ENOMEM;
				goto fail;
			}
			b = nb;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return b;
fail:;
	int e = errno;
	fprintf(stderr, "vmtrace: cannot read '%s': %s\n", path, strerror(e));
	if (fd >= 0)
		close(fd);
	free(b);
	return NULL;
}

int vtc_diff_load_result(const char *path, struct van_result *r)
{
	size_t len;
	char msg[256];
	char *text = read_all(path, &len);
	if (!text)
		return -1;
	int rc = van_result_parse(text, len, r, msg, sizeof(msg));
	free(text);
	if (rc == -ENOMEM)
		fprintf(stderr, "vmtrace: '%s': out of memory\n", path);
	else if (rc < 0)
		fprintf(stderr, "vmtrace: '%s': %s\n", path, msg);
	return rc < 0 ? -1 : 0;
}

/* ---- formatting ------------------------------------------------------------ */

/* A time metric is shown in the unit of its base median (or new, if the
 * base is 0): ns, us, ms or s. */
static double unit_of(const struct van_rrow *r, const char **name)
{
	double v = r->base ? r->base : r->new_;
	if (!r->timing) {
		*name = "";
		return 1;
	}
	if (v >= 1e9) {
		*name = " s";
		return 1e9;
	}
	if (v >= 1e6) {
		*name = " ms";
		return 1e6;
	}
	if (v >= 1e3) {
		*name = " us";
		return 1e3;
	}
	*name = " ns";
	return 1;
}

static void fmt(char *buf, size_t n, double v, double div, const char *unit)
{
	if (div == 1 && v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, n, "%.0f%s", v, unit);
	else
		snprintf(buf, n, "%.3f%s", v / div, unit);
}

static const char *sig_name(int sig)
{
	return sig == VAN_SIG_YES ? "yes" : sig == VAN_SIG_FEW ? "too few runs" : "no";
}

/* The smallest equal number of runs per side with which a difference can
 * be significant at ALPHA. */
static unsigned runs_needed(void)
{
	unsigned n = 1;
	while (van_mwu_min_p(n, n) >= ALPHA)
		n++;
	return n;
}

static void describe(struct vmt_buf *o, const char *label, const char *path,
		     const struct van_result *r)
{
	vmt_buf_printf(o, "%-5s %s: %u run%s", label, path, r->nruns, r->nruns == 1 ? "" : "s");
	if (r->kernel)
		vmt_buf_printf(o, " on Linux %s", r->kernel);
	if (r->cpus)
		vmt_buf_printf(o, ", %d CPU%s", r->cpus, r->cpus == 1 ? "" : "s");
	if (r->accel)
		vmt_buf_printf(o, ", in a qemu guest (%s)", r->accel);
	vmt_buf_puts(o, "\n");
}

static void json_side(struct vmt_buf *o, const struct van_result *r)
{
	vmt_buf_puts(o, "{\"trace\":");
	vmt_buf_json_str(o, r->trace);
	vmt_buf_puts(o, ",\"kernel\":");
	vmt_buf_json_str(o, r->kernel);
	vmt_buf_printf(o, ",\"cpus\":%d,\"accel\":", r->cpus);
	vmt_buf_json_str(o, r->accel);
	vmt_buf_printf(o, ",\"runs\":%u}", r->nruns);
}

static void json_row(struct vmt_buf *o, const struct van_rrow *r)
{
	vmt_buf_printf(o, "{\"name\":\"%s\",\"base\":", r->name);
	vmt_buf_json_num(o, r->base);
	vmt_buf_puts(o, ",\"new\":");
	vmt_buf_json_num(o, r->new_);
	vmt_buf_puts(o, ",\"ratio\":");
	vmt_buf_json_num(o, r->ratio);
	vmt_buf_puts(o, ",\"change_pct\":");
	vmt_buf_json_num(o, r->change_pct);
	vmt_buf_puts(o, ",\"base_min\":");
	vmt_buf_json_num(o, r->base_min);
	vmt_buf_puts(o, ",\"base_max\":");
	vmt_buf_json_num(o, r->base_max);
	vmt_buf_puts(o, ",\"new_min\":");
	vmt_buf_json_num(o, r->new_min);
	vmt_buf_puts(o, ",\"new_max\":");
	vmt_buf_json_num(o, r->new_max);
	vmt_buf_printf(o, ",\"p\":%.4g,\"significant\":\"%s\",\"timing\":%s}", r->p, sig_name(r->sig),
		       r->timing ? "true" : "false");
}

static void text_row(struct vmt_buf *o, const struct van_rrow *r)
{
	char b[32], n[32], rt[32], p[16], bl[32], bh[32], nl[32], nh[32], br[64], nr[64];
	const char *unit;
	double div = unit_of(r, &unit);
	fmt(b, sizeof(b), r->base, div, unit);
	fmt(n, sizeof(n), r->new_, div, unit);
	if (!r->base && !r->new_)
		snprintf(rt, sizeof(rt), "-");
	else
		snprintf(rt, sizeof(rt), r->ratio < 0.01 ? "%.2g" : r->ratio < 100 ? "%.2f"
					 : r->ratio < 1e5 ? "%.0f" : "%.1e", r->ratio);
	if (r->sig == VAN_SIG_FEW)
		snprintf(p, sizeof(p), "-");
	else
		snprintf(p, sizeof(p), r->p < 0.001 ? "<0.001" : "%.3f", r->p);
	fmt(bl, sizeof(bl), r->base_min, div, "");
	fmt(bh, sizeof(bh), r->base_max, div, "");
	fmt(nl, sizeof(nl), r->new_min, div, "");
	fmt(nh, sizeof(nh), r->new_max, div, "");
	snprintf(br, sizeof(br), "%s-%s", bl, bh);
	snprintf(nr, sizeof(nr), "%s-%s", nl, nh);
	vmt_buf_printf(o, "%-22s %14s %14s %7s %7s  %-12s  %-21s %s\n", r->name, b, n, rt, p,
		       sig_name(r->sig), br, nr);
}

/* A condition holds where the medians moved past its limit and the runs
 * do not say it is noise: significant, or too few runs to tell (said in
 * the FAIL line). */
static int holds(const struct vtc_cond *c, const struct van_rrow *r)
{
	return vtc_cond_holds(c, r->base, r->new_) && r->sig != VAN_SIG_NO;
}

static const char *row_name(const void *rows, size_t i)
{
	return ((const struct van_rrow *)rows)[i].name;
}

static int shown(const struct van_rrow *r, int all)
{
	return all || r->base_max != 0 || r->new_max != 0 || r->base_min != 0 || r->new_min != 0;
}

/* The JSON object up to its "failed" list, which put_failures fills. */
static void put_json(struct vmt_buf *o, const char *pa, const char *pb,
		     const struct van_result *a, const struct van_result *b,
		     const struct van_rrow *rows, size_t n, int all)
{
	vtc_diff_json_head(o, pa, pb);
	vmt_buf_printf(o, ",\"kind\":\"results\",\"alpha\":%g,\"base_result\":", ALPHA);
	json_side(o, a);
	vmt_buf_puts(o, ",\"new_result\":");
	json_side(o, b);
	vmt_buf_puts(o, ",\"metrics\":[");
	int first = 1;
	for (size_t i = 0; i < n; i++) {
		if (!shown(&rows[i], all))
			continue;
		if (!first)
			vmt_buf_puts(o, ",");
		json_row(o, &rows[i]);
		first = 0;
	}
	vmt_buf_puts(o, "],\"failed\":[");
}

/* The text report: the two sides, a row per metric, the legend. */
static void put_text(struct vmt_buf *o, const char *pa, const char *pb,
		     const struct van_result *a, const struct van_result *b,
		     const struct van_rrow *rows, size_t n, int all)
{
	describe(o, "base", pa, a);
	describe(o, "new", pb, b);
	if (strcmp(a->trace, b->trace) != 0 || a->trace_events != b->trace_events)
		vmt_buf_printf(o, "(the two replayed different traces: '%s' and '%s')\n", a->trace,
			       b->trace);
	if ((a->accel && strcmp(a->accel, "tcg") == 0) || (b->accel && strcmp(b->accel, "tcg") == 0))
		vmt_buf_puts(o, "(TCG emulates the processor: its times are not comparable with"
				" other machines'; compare counts and ratios)\n");
	vmt_buf_printf(o, "\n%-22s %14s %14s %7s %7s  %-12s  %-21s %s\n", "metric",
		       "base median", "new median", "ratio", "p", "significant",
		       "base min-max", "new min-max");
	for (size_t i = 0; i < n; i++)
		if (shown(&rows[i], all))
			text_row(o, &rows[i]);
	vmt_buf_printf(o, "(ratio: new median / base median, the divisor at least 1;"
			  " p: two-sided Mann-Whitney U test over the runs, significant"
			  " below %g", ALPHA);
	if (van_mwu_min_p(a->nruns, b->nruns) >= ALPHA)
		vmt_buf_printf(o, "; with %u and %u runs no difference can be: give each"
				  " side at least %u (vmreplay --repeat)",
			       a->nruns, b->nruns, runs_needed());
	vmt_buf_puts(o, ")\n");
}

/* Each --fail-on condition that holds, for each metric it names; their
 * number. */
static int put_failures(struct vmt_buf *o, const struct vtc_conds *cs,
			const struct van_rrow *rows, size_t n, int json)
{
	int nfail = 0;
	for (size_t i = 0; i < cs->n; i++) {
		for (size_t j = 0; j < n; j++) {
			const struct van_rrow *r = &rows[j];
			if (!vtc_cond_matches(&cs->c[i], r->name, 1) || !holds(&cs->c[i], r))
				continue;
			if (json) {
				vtc_diff_json_fail(o, nfail, &cs->c[i], r->name);
				vmt_buf_puts(o, ",\"base\":");
				vmt_buf_json_num(o, r->base);
				vmt_buf_puts(o, ",\"new\":");
				vmt_buf_json_num(o, r->new_);
				vmt_buf_puts(o, ",\"change_pct\":");
				vmt_buf_json_num(o, r->change_pct);
				vmt_buf_printf(o, ",\"significant\":\"%s\"}", sig_name(r->sig));
			} else {
				char x[32], y[32], pct[32];
				const char *unit;
				double div = unit_of(r, &unit);
				fmt(x, sizeof(x), r->base, div, unit);
				fmt(y, sizeof(y), r->new_, div, unit);
				if (isinf(r->change_pct))
					snprintf(pct, sizeof(pct), "%s", r->change_pct > 0 ? "+inf%" : "-inf%");
				else
					snprintf(pct, sizeof(pct), "%+.1f%%", r->change_pct);
				vmt_buf_printf(o, "%sFAIL %s: %s -> %s (%s, %s), condition '%s'\n",
					       nfail ? "" : "\n", r->name, x, y, pct,
					       r->sig == VAN_SIG_FEW ? "too few runs to tell it from noise"
								     : "significant",
					       cs->c[i].text);
			}
			nfail++;
		}
	}
	return nfail;
}

int vtc_diff_results(const char *pa, const char *pb, const struct vtc_conds *cs, int json,
		     int all)
{
	struct van_result a, b;
	struct van_rrow *rows = NULL;
	size_t n = 0;
	int status = 2;
	if (vtc_diff_load_result(pa, &a) < 0)
		return 2;
	if (vtc_diff_load_result(pb, &b) < 0) {
		van_result_free(&a);
		return 2;
	}
	if (van_result_compare(&a, &b, ALPHA, &rows, &n) < 0) {
		fprintf(stderr, "vmtrace diff: out of memory\n");
		goto out;
	}
	if (vtc_conds_known(cs, row_name, rows, n) < 0)
		goto out;
	struct vmt_buf o = { 0 };
	if (json)
		put_json(&o, pa, pb, &a, &b, rows, n, all);
	else
		put_text(&o, pa, pb, &a, &b, rows, n, all);
	status = vtc_diff_verdict(&o, json, cs->n, put_failures(&o, cs, rows, n, json));
	vmt_buf_free(&o);
out:
	free(rows);
	van_result_free(&a);
	van_result_free(&b);
	return status;
}
