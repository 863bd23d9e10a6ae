/*
 * resultdiff.c - vmreplay results compared: the Mann-Whitney U test, the
 * reading of result files and the per-metric rows (resultdiff.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonread.h"
#include "resultdiff.h"

/* ---- the test ------------------------------------------------------------ */

/* Up to this many values in all, the exact permutation distribution. */
#define EXACT_MAX 60

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

double van_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	if (n % 2)
		return v[n / 2];
	return v[n / 2 - 1] + floor((v[n / 2] - v[n / 2 - 1]) / 2);
}

double van_mwu_min_p(size_t na, size_t nb)
{
	/* 2 / C(na + nb, na), computed without overflow. */
	double c = 1;
	size_t k = na < nb ? na : nb, n = na + nb;
	for (size_t i = 1; i <= k; i++) {
		c = c * (double)(n - k + i) / (double)i;
		if (c > 1e300)
			break;
	}
	double p = 2 / c;
	return p > 1 ? 1 : p;
}

struct ranked {
	double v;
	int side; /* 0: a, 1: b */
};

static int cmp_ranked(const void *x, const void *y)
{
	return cmp_double(&((const struct ranked *)x)->v, &((const struct ranked *)y)->v);
}

int van_mann_whitney(const double *a, size_t na, const double *b, size_t nb, struct van_mwu *r)
{
	memset(r, 0, sizeof(*r));
	if (!na || !nb)
		return -EINVAL;
	size_t n = na + nb;
	struct ranked *x = malloc(n * sizeof(*x));
	/* Doubled mid-ranks: integers even where ties share a rank. */
	long *w = malloc(n * sizeof(*w));
	if (!x || !w) {
		free(x), free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < na; i++)
		x[i] = (struct ranked){ a[i], 0 };
	for (size_t i = 0; i < nb; i++)
		x[na + i] = (struct ranked){ b[i], 1 };
	qsort(x, n, sizeof(*x), cmp_ranked);
	double ties = 0; /* sum of t^3 - t over groups of ties */
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && x[j + 1].v == x[i].v)
			j++;
		long twice_rank = (long)(i + 1 + j + 1); /* 2 * mean of ranks i+1..j+1 */
		for (size_t k = i; k <= j; k++)
			w[k] = twice_rank;
		double t = (double)(j - i + 1);
		ties += t * t * t - t;
		i = j + 1;
	}
	/* The statistic of the smaller side (the test is symmetric). */
	int small = na <= nb ? 0 : 1;
	size_t k = small ? nb : na, other = n - k;
	long wobs = 0;
	for (size_t i = 0; i < n; i++)
		if (x[i].side == small)
			wobs += w[i];
	long wa = small ? (long)(n * (n + 1)) - wobs : wobs; /* a's doubled rank sum */
	r->u = (double)wa / 2 - (double)na * (double)(na + 1) / 2;
	r->p_min = van_mwu_min_p(na, nb);
	long mean2 = (long)(k * (n + 1)); /* expected doubled rank sum of k values */
	long dev = labs(wobs - mean2);

	if (n <= EXACT_MAX) {
		/* cnt[j][s]: subsets of j of the values seen so far whose
		 * doubled ranks sum to s. */
		size_t smax = 2 * k * n + 1;
		double *cnt = calloc((k + 1) * smax, sizeof(double));
		if (!cnt) {
			free(x), free(w);
			return -ENOMEM;
		}
		cnt[0] = 1;
		for (size_t i = 0; i < n; i++)
			for (size_t j = (i + 1 < k ? i + 1 : k); j >= 1; j--)
				for (size_t s = smax - 1; s >= (size_t)w[i]; s--)
					cnt[j * smax + s] += cnt[(j - 1) * smax + s - (size_t)w[i]];
		double total = 0, extreme = 0;
		for (size_t s = 0; s < smax; s++) {
			double c = cnt[k * smax + s];
			total += c;
			if (labs((long)s - mean2) >= dev)
				extreme += c;
		}
		free(cnt);
		r->p = total > 0 ? extreme / total : 1;
		r->exact = 1;
	} else {
		double mu = (double)k * (double)other / 2;
		double u = (double)wobs / 2 - (double)k * (double)(k + 1) / 2;
		double var = (double)k * (double)other / 12 *
			     ((double)(n + 1) - ties / ((double)n * (double)(n - 1)));
		if (var <= 0) {
			r->p = 1;
		} else {
			double z = (fabs(u - mu) - 0.5) / sqrt(var);
			r->p = z <= 0 ? 1 : erfc(z / sqrt(2));
		}
	}
	if (r->p > 1)
		r->p = 1;
	free(x), free(w);
	return 0;
}

/* ---- result files ---------------------------------------------------------- */

int van_result_sniff(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
			continue;
		return text[i] == '{';
	}
	return 0;
}

static const char *const run_keys[] = {
	"wall_ns", "minor_faults", "major_faults", "voluntary_cs", "involuntary_cs",
	"wait_ns", "divergences", "peak_vmas", "events",
};
static const char *const op_keys[] = { "count", "errors", "p50_ns", "p99_ns" };

static struct van_rmetric *metric(struct van_result *r, const char *name, size_t *cap)
{
	for (size_t i = 0; i < r->nmetrics; i++)
		if (strcmp(r->m[i].name, name) == 0)
			return &r->m[i];
	if (r->nmetrics == *cap) {
		size_t nc = *cap ? 2 * *cap : 32;
		struct van_rmetric *m = realloc(r->m, nc * sizeof(*m));
		if (!m)
			return NULL;
		r->m = m;
		*cap = nc;
	}
	struct van_rmetric *m = &r->m[r->nmetrics];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	size_t l = strlen(m->name);
	m->timing = l > 3 && strcmp(m->name + l - 3, "_ns") == 0;
	m->v = calloc(r->nruns, sizeof(double));
	if (!m->v)
		return NULL;
	r->nmetrics++;
	return m;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int bad(char *msg, size_t msglen, const char *why)
{
	snprintf(msg, msglen, "%s", why);
	return -EINVAL;
}

/* Run i's first copy's threads: their own counts, summed. */
static void own_of(const struct van_json *run, struct van_result *r, unsigned i)
{
	static const char *const keys[VAN_OWN__N] = {
		"minor_faults", "major_faults", "voluntary_cs", "involuntary_cs", "call_off_cpu_ns",
	};
	const struct van_json *ths = van_json_get(run, "threads");
	int any = 0;
	for (const struct van_json *th = ths && ths->type == VAN_JSON_ARRAY ? ths->child : NULL; th;
	     th = th->next) {
		if (th->type != VAN_JSON_OBJECT || van_json_num(th, "copy", 0) != 0)
			continue;
		any = 1;
		for (int k = 0; k < VAN_OWN__N; k++)
			r->own[k][i] += van_json_num(th, keys[k], 0);
		const struct van_json *w = van_json_get(th, "call_off_cpu_ns");
		if (!w || w->type != VAN_JSON_NUMBER)
			r->own_waits = 0;
	}
	if (!any)
		r->own_waits = 0;
}

int van_result_parse(const char *text, size_t len, struct van_result *r, char *msg,
		     size_t msglen)
{
	char err[160];
	memset(r, 0, sizeof(*r));
	r->trace_events = -1;
	struct van_json *root = van_json_parse(text, len, err, sizeof(err));
	if (!root) {
		if (strcmp(err, "out of memory") == 0)
			return -ENOMEM;
		snprintf(msg, msglen, "not valid JSON: %s", err);
		return -EINVAL;
	}
	int rc = -EINVAL;
	const struct van_json *runs = van_json_get(root, "runs");
	if (root->type != VAN_JSON_OBJECT) {
		bad(msg, msglen, "not a vmreplay result: not a JSON object");
		goto out;
	}
	if (!runs && van_json_get(root, "baseline") && van_json_get(root, "rewritten")) {
		bad(msg, msglen, "a vmreplay --compare result (baseline and rewritten sides);"
				 " diff compares the results of two plain replays");
		goto out;
	}
	if (!runs && van_json_str(root, "error")) {
		/* vmreplay's file for a kernel of several that gave no results */
		snprintf(msg, msglen, "no results: %.200s", van_json_str(root, "error"));
		goto out;
	}
	if (!runs || runs->type != VAN_JSON_ARRAY || !van_json_get(root, "median")) {
		bad(msg, msglen, "not a vmreplay result: no \"runs\" and \"median\"");
		goto out;
	}
	if (!runs->n) {
		bad(msg, msglen, "a vmreplay result without runs");
		goto out;
	}
	const struct van_json *vm = van_json_get(root, "vm");
	r->trace = strdup(van_json_str(root, "trace") ? van_json_str(root, "trace") : "");
	r->kernel = dup_or_null(van_json_str(root, "kernel"));
	r->accel = dup_or_null(van_json_str(vm, "accel"));
	r->cpus = (int)van_json_num(root, "cpus", 0);
	r->trace_events = van_json_num(root, "trace_events", -1);
	r->nruns = (unsigned)runs->n;
	r->speed = van_json_num(root, "speed", 0);
	rc = -ENOMEM;
	for (int k = 0; k < VAN_OWN__N; k++)
		if (!(r->own[k] = calloc(r->nruns, sizeof(double))))
			goto out;
	r->own_waits = 1;
	if (!r->trace || (van_json_str(root, "kernel") && !r->kernel) ||
	    (van_json_str(vm, "accel") && !r->accel))
		goto out;
	size_t cap = 0;
	/* The run metrics first, in their order, whether or not present. */
	for (size_t i = 0; i < sizeof(run_keys) / sizeof(run_keys[0]); i++)
		if (!metric(r, run_keys[i], &cap))
			goto out;
	unsigned i = 0;
	for (const struct van_json *run = runs->child; run; run = run->next, i++) {
		if (run->type != VAN_JSON_OBJECT) {
			rc = bad(msg, msglen, "not a vmreplay result: a run is not an object");
			goto out;
		}
		for (size_t k = 0; k < sizeof(run_keys) / sizeof(run_keys[0]); k++)
			r->m[k].v[i] = van_json_num(run, run_keys[k], 0);
		own_of(run, r, i);
		const struct van_json *ops = van_json_get(run, "ops");
		for (const struct van_json *op = ops && ops->type == VAN_JSON_OBJECT ? ops->child : NULL;
		     op; op = op->next) {
			for (size_t k = 0; k < sizeof(op_keys) / sizeof(op_keys[0]); k++) {
				char name[64];
				snprintf(name, sizeof(name), "ops.%.40s.%s", op->key, op_keys[k]);
				struct van_rmetric *m = metric(r, name, &cap);
				if (!m)
					goto out;
				m->v[i] = van_json_num(op, op_keys[k], 0);
			}
		}
	}
	rc = 0;
out:
	van_json_free(root);
	if (rc < 0)
		van_result_free(r);
	return rc;
}

void van_result_free(struct van_result *r)
{
	for (int k = 0; k < VAN_OWN__N; k++)
		free(r->own[k]);
	for (size_t i = 0; i < r->nmetrics; i++)
		free(r->m[i].v);
	free(r->m);
	free(r->trace);
	free(r->kernel);
	free(r->accel);
	memset(r, 0, sizeof(*r));
}

/* ---- rows ---------------------------------------------------------------- */

static const struct van_rmetric *find(const struct van_result *r, const char *name)
{
	for (size_t i = 0; i < r->nmetrics; i++)
		if (strcmp(r->m[i].name, name) == 0)
			return &r->m[i];
	return NULL;
}

/* Summary of one side: median, min, max (values copied, then sorted). */
static int side(const struct van_result *r, const struct van_rmetric *m, double *v, double *med,
		double *lo, double *hi)
{
	for (unsigned i = 0; i < r->nruns; i++)
		v[i] = m ? m->v[i] : 0;
	*med = van_median(v, r->nruns);
	*lo = v[0];
	*hi = v[r->nruns - 1];
	return 0;
}

static int fill(struct van_rrow *row, const char *name, int timing, const struct van_result *a,
		const struct van_rmetric *ma, const struct van_result *b, const struct van_rmetric *mb,
		double alpha)
{
	double *va = malloc(a->nruns * sizeof(double)), *vb = malloc(b->nruns * sizeof(double));
	struct van_mwu t;
	int rc = -ENOMEM;
	if (!va || !vb)
		goto out;
	memset(row, 0, sizeof(*row));
	row->name = name;
	row->timing = timing;
	side(a, ma, va, &row->base, &row->base_min, &row->base_max);
	side(b, mb, vb, &row->new_, &row->new_min, &row->new_max);
	row->ratio = row->new_ / (row->base >= 1 ? row->base : 1);
	if (row->base == row->new_)
		row->change_pct = 0;
	else if (row->base == 0)
		row->change_pct = row->new_ > 0 ? INFINITY : -INFINITY;
	else
		row->change_pct = (row->new_ - row->base) / fabs(row->base) * 100;
	rc = van_mann_whitney(va, a->nruns, vb, b->nruns, &t);
	if (rc < 0)
		goto out;
	row->p = t.p;
	row->sig = t.p_min >= alpha ? VAN_SIG_FEW : t.p < alpha ? VAN_SIG_YES : VAN_SIG_NO;
out:
	free(va), free(vb);
	return rc;
}

int van_result_compare(const struct van_result *a, const struct van_result *b, double alpha,
		       struct van_rrow **rows, size_t *n)
{
	struct van_rrow *out = calloc(a->nmetrics + b->nmetrics + 1, sizeof(*out));
	size_t k = 0;
	*rows = NULL;
	*n = 0;
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < a->nmetrics; i++) {
		const struct van_rmetric *ma = &a->m[i];
		if (fill(&out[k++], ma->name, ma->timing, a, ma, b, find(b, ma->name), alpha) < 0)
			goto oom;
	}
	for (size_t i = 0; i < b->nmetrics; i++) {
		const struct van_rmetric *mb = &b->m[i];
		if (!find(a, mb->name) &&
		    fill(&out[k++], mb->name, mb->timing, a, NULL, b, mb, alpha) < 0)
			goto oom;
	}
	*rows = out;
	*n = k;
	return 0;
oom:
	free(out);
	return -ENOMEM;
}
