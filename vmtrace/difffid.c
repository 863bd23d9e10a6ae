/*
 * difffid.c - `vmtrace diff TRACE RESULT`: a vmreplay --json result held
 * against the recorded run of the trace it replayed, whose own counters
 * (recrun.h) are the base: per measure the recorded value, the replay's
 * median over its runs and their range, the ratio, and whether it is
 * within the tolerance vmreplay(1), FIDELITY documents.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"
#include "diffres.h"
#include "recrun.h"
#include "resultdiff.h"

/* The tolerances of vmreplay(1), FIDELITY (replay/report/fidelity.h has
 * the same): relative, and a floor below which a difference is too small
 * to tell; speed1: judged at --speed=1 only. */
static const struct {
	const char *name;
	double tol, floor;
	int speed1;
} measures[] = {
	{ "minor_faults", 0.02, 2, 0 },
	{ "major_faults", 0.02, 2, 0 },
	{ "voluntary_cs", 0.25, 10, 1 },
	{ "involuntary_cs", 0.25, 10, 1 },
	{ "off_cpu_in_calls_ns", 0.25, 1e6, 1 },
	{ "wall_ns", 0.05, 5e6, 1 },
};
#define NMEAS (sizeof(measures) / sizeof(measures[0]))

struct frow {
	const char *name;
	int have, judged, ok;
	double rec, med, lo, hi, ratio;
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void summarize(const double *v, unsigned n, double *med, double *lo, double *hi)
{
	double *s = malloc((n ? n : 1) * sizeof(*s));
	if (!s) { /* (tiny; the first run stands in) */
		*med = *lo = *hi = n ? v[0] : 0;
		return;
	}
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_d);
	*lo = s[0];
	*hi = s[n - 1];
	*med = van_median(s, n);
	free(s);
}

static int read_recorded(const char *path, struct van_recrun *rec)
{
	struct vtc_input in;
	if (vtc_input_open(&in, path))
		return -1;
	int rc = van_recrun_read(in.r, rec);
	if (rc == -ENOMEM)
		fprintf(stderr, "vmtrace: '%s': out of memory\n", path);
	else if (rc < 0)
		vtc_input_report(&in);
	vtc_input_close(&in);
	return rc < 0 ? -1 : 0;
}

static void rows_of(const struct van_recrun *rec, const struct van_result *res, struct frow *rows)
{
	const struct van_rmetric *wall = NULL;
	for (size_t i = 0; i < res->nmetrics; i++)
		if (!strcmp(res->m[i].name, "wall_ns"))
			wall = &res->m[i];
	const double recv[NMEAS] = { (double)rec->minflt, (double)rec->majflt, (double)rec->vcs,
				     (double)rec->ivcs, (double)rec->off_cpu_ns, (double)rec->span_ns };
	for (size_t k = 0; k < NMEAS; k++) {
		struct frow *r = &rows[k];
		memset(r, 0, sizeof(*r));
		r->name = measures[k].name;
		r->rec = recv[k];
		const double *v = k < VAN_OWN__N ? res->own[k] : wall ? wall->v : NULL;
		r->have = v && (k != VAN_OWN_OFFCPU || (rec->have_off_cpu && res->own_waits));
		if (!r->have)
			continue;
		summarize(v, res->nruns, &r->med, &r->lo, &r->hi);
		r->ratio = r->rec ? r->med / r->rec : (r->med ? INFINITY : 1);
		r->judged = !measures[k].speed1 || res->speed == 1;
		double d = fabs(r->med - r->rec);
		r->ok = d <= measures[k].floor || d <= measures[k].tol * r->rec;
	}
}

static const char *row_name(const void *rows, size_t i)
{
	return ((const struct frow *)rows)[i].name;
}

/* 1 if every judged row is within tolerance; else 0, and the names of
 * those that are not into bad. */
static int within(const struct frow *rows, char *bad, size_t len)
{
	int ok = 1;
	size_t nb = 0;
	bad[0] = 0;
	for (size_t k = 0; k < NMEAS; k++)
		if (rows[k].have && rows[k].judged && !rows[k].ok) {
			ok = 0;
			nb += (size_t)snprintf(bad + nb, nb < len ? len - nb : 0, "%s%s", nb ? ", " : "",
					       rows[k].name);
		}
	return ok;
}

/* The JSON object up to its "failed" list, which put_failures fills. */
static void put_json(struct vmt_buf *o, const char *trace, const char *result,
		     const struct van_recrun *rec, const struct van_result *res,
		     const struct frow *rows, int ok, int all)
{
	vtc_diff_json_head(o, trace, result);
	vmt_buf_printf(o, ",\"kind\":\"trace_result\",\"runs\":%u,\"speed\":", res->nruns);
	vmt_buf_json_num(o, res->speed);
	vmt_buf_printf(o, ",\"processes\":%u,\"missing_processes\":%u,\"ok\":%s,\"metrics\":[",
		       rec->procs, rec->procs_missing, ok ? "true" : "false");
	int first = 1;
	for (size_t k = 0; k < NMEAS; k++) {
		const struct frow *r = &rows[k];
		if (!r->have && !all)
			continue;
		vmt_buf_printf(o, "%s{\"name\":\"%s\",\"recorded\":", first ? "" : ",", r->name);
		vmt_buf_json_num(o, r->rec);
		if (r->have) {
			vmt_buf_puts(o, ",\"replay\":");
			vmt_buf_json_num(o, r->med);
			vmt_buf_puts(o, ",\"replay_min\":");
			vmt_buf_json_num(o, r->lo);
			vmt_buf_puts(o, ",\"replay_max\":");
			vmt_buf_json_num(o, r->hi);
			vmt_buf_puts(o, ",\"ratio\":");
			vmt_buf_json_num(o, r->ratio);
			vmt_buf_printf(o, ",\"judged\":%s,\"ok\":%s}", r->judged ? "true" : "false",
				       r->judged ? (r->ok ? "true" : "false") : "null");
		} else {
			vmt_buf_puts(o, ",\"replay\":null}");
		}
		first = 0;
	}
	vmt_buf_puts(o, "],\"failed\":[");
}

/* The text report: what is held against what, a row per measure, the
 * fidelity line. */
static void put_text(struct vmt_buf *o, const char *trace, const char *result,
		     const struct van_recrun *rec, const struct van_result *res,
		     const struct frow *rows, int ok, const char *bad, int all)
{
	vmt_buf_printf(o, "base  %s: the recorded run (%u process%s", trace, rec->procs,
		       rec->procs == 1 ? "" : "es");
	if (rec->procs_missing)
		vmt_buf_printf(o, ", %u without counters left out", rec->procs_missing);
	vmt_buf_printf(o, ")\nnew   %s: %u run%s at --speed=", result, res->nruns,
		       res->nruns == 1 ? "" : "s");
	if (res->speed > 0)
		vmt_buf_printf(o, "%g", res->speed);
	else
		vmt_buf_puts(o, "max");
	if (res->kernel)
		vmt_buf_printf(o, " on Linux %s", res->kernel);
	vmt_buf_printf(o, "\n\n%-20s %14s %14s %7s  %-21s %s\n", "metric", "recorded",
		       "replay median", "ratio", "within tolerance", "replay min-max");
	for (size_t k = 0; k < NMEAS; k++) {
		const struct frow *r = &rows[k];
		char ratio[24], mm[48], tol[32];
		if (!r->have) {
			if (all)
				vmt_buf_printf(o, "%-20s %14.0f %14s\n", r->name, r->rec, "-");
			continue;
		}
		snprintf(ratio, sizeof(ratio), isfinite(r->ratio) ? "%.3f" : "inf", r->ratio);
		snprintf(mm, sizeof(mm), "%.0f-%.0f", r->lo, r->hi);
		if (!r->judged)
			snprintf(tol, sizeof(tol), "not judged");
		else
			snprintf(tol, sizeof(tol), "%s (%g%%)", r->ok ? "yes" : "NO",
				 measures[k].tol * 100);
		vmt_buf_printf(o, "%-20s %14.0f %14.0f %7s  %-21s %s\n", r->name, r->rec, r->med,
			       ratio, tol, mm);
	}
	vmt_buf_printf(o, "(the replay's own: its first copy's threads; the recorded run's "
			  "own: the launch and the recorder's stops taken off; tolerances of "
			  "vmreplay(1), FIDELITY; switches, waits and wall judged at --speed=1 "
			  "only)\nfidelity: %s%s\n", ok ? "within tolerance" : "outside tolerance: ",
		       bad);
}

/* Each --fail-on condition that holds, for each metric it names; their
 * number. */
static int put_failures(struct vmt_buf *o, const struct vtc_conds *cs, const struct frow *rows,
			int json)
{
	int nfail = 0;
	for (size_t i = 0; i < cs->n; i++)
		for (size_t k = 0; k < NMEAS; k++) {
			const struct frow *r = &rows[k];
			if (!r->have || !vtc_cond_matches(&cs->c[i], r->name, r->judged) ||
			    !vtc_cond_holds(&cs->c[i], r->rec, r->med))
				continue;
			if (json) {
				vtc_diff_json_fail(o, nfail, &cs->c[i], r->name);
				vmt_buf_puts(o, ",\"recorded\":");
				vmt_buf_json_num(o, r->rec);
				vmt_buf_puts(o, ",\"replay\":");
				vmt_buf_json_num(o, r->med);
				vmt_buf_puts(o, "}");
			} else {
				vmt_buf_printf(o, "%sFAIL %s: recorded %.0f, replayed %.0f, condition '%s'\n",
					       nfail ? "" : "\n", r->name, r->rec, r->med, cs->c[i].text);
			}
			nfail++;
		}
	return nfail;
}

int vtc_diff_trace_result(const char *trace, const char *result, const struct vtc_conds *cs,
			  int json, int all)
{
	struct van_recrun rec;
	struct van_result res;
	if (read_recorded(trace, &rec) < 0)
		return 2;
	if (!rec.counters) {
		fprintf(stderr, "vmtrace: '%s': the trace holds no counters of its recorded run "
				"(format 1.%u%s): nothing to hold '%s' against\n", trace, rec.minor,
			rec.minor < 2 ? ": recorded before vmrec kept them" : "", result);
		return 2;
	}
	if (vtc_diff_load_result(result, &res) < 0)
		return 2;
	struct frow rows[NMEAS];
	rows_of(&rec, &res, rows);
	if (vtc_conds_known(cs, row_name, rows, NMEAS) < 0) {
		van_result_free(&res);
		return 2;
	}
	char bad[160];
	int ok = within(rows, bad, sizeof(bad));
	struct vmt_buf o = { 0 };
	if (json)
		put_json(&o, trace, result, &rec, &res, rows, ok, all);
	else
		put_text(&o, trace, result, &rec, &res, rows, ok, bad, all);
	int st = vtc_diff_verdict(&o, json, cs->n, put_failures(&o, cs, rows, json));
	vmt_buf_free(&o);
	van_result_free(&res);
	return st;
}
