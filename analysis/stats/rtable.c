/*
 * rtable.c - the table of one trace replayed on several kernels
 * (rtable.h): its columns read from result files, its cells, and its
 * text and JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonread.h"
#include "rtable.h"
#include "vmtrace.h"
#include "vmtutil.h"

/* ---- columns ---------------------------------------------------------------- */

/* A copy of s fit for a table cell: at most max bytes, control bytes
 * (a file may hold anything) as '?'. */
static char *clean_dup(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n > max)
		n = max;
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++)
		d[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	d[n] = 0;
	return d;
}

/* The first word of s (an image's version string: "6.1.0-57-cloud-amd64
 * (debian-kernel@...) #1 SMP ..."). */
static char *first_word(const char *s)
{
	char w[80];
	snprintf(w, sizeof(w), "%.*s", (int)strcspn(s, " "), s);
	return clean_dup(w, sizeof(w) - 1);
}

/* Split "key=value ..." words into the settings of vmt_mm_key, each a
 * copy or NULL when the words do not say. */
static int mm_words(const char *words, char **out)
{
	for (size_t i = 0; i < VAN_RCOL_MM; i++) {
		const char *key = vmt_mm_key(i);
		char v[64];
		out[i] = NULL;
		if (!words || !key || !vmt_options_get(words, key, v, sizeof(v)))
			continue;
		if (!(out[i] = clean_dup(v, 40)))
			return -ENOMEM;
	}
	return 0;
}

/* A metric of its own, added to c->r, one value per run. */
static double *add_metric(struct van_rcol *c, const char *name, int timing)
{
	struct van_result *r = &c->r;
	struct van_rmetric *m = realloc(r->m, (r->nmetrics + 1) * sizeof(*m));
	if (!m)
		return NULL;
	r->m = m;
	m = &r->m[r->nmetrics];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->timing = timing;
	if (!(m->v = calloc(r->nruns, sizeof(double))))
		return NULL;
	r->nmetrics++;
	return m->v;
}

/* What the replay threads saw of their own calls (where perf let them
 * watch themselves): summed over the threads of each run.  The time off
 * CPU inside calls and the sleeps there are where mmap_lock contention
 * shows; a run none of whose threads could watch gives no such rows. */
static int call_metrics(struct van_rcol *c, const struct van_json *runs)
{
	static const struct {
		const char *key, *name;
		int timing;
	} keys[] = {
		{ "call_vcsw", "calls.sleeps", 0 },
		{ "call_ivcsw", "calls.preempted", 0 },
		{ "call_off_cpu_ns", "calls.off_cpu_ns", 1 },
	};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		double *v = NULL;
		unsigned i = 0;
		for (const struct van_json *run = runs->child; run && i < c->r.nruns;
		     run = run->next, i++) {
			const struct van_json *th = van_json_get(run, "threads");
			if (!th || th->type != VAN_JSON_ARRAY)
				continue;
			for (const struct van_json *t = th->child; t; t = t->next) {
				const struct van_json *x = van_json_get(t, keys[k].key);
				if (!x || x->type != VAN_JSON_NUMBER)
					continue;
				if (!v && !(v = add_metric(c, keys[k].name, keys[k].timing)))
					return -ENOMEM;
				v[i] += x->num;
			}
		}
	}
	return 0;
}

/* The facts of the column besides its runs: where it ran, its settings,
 * the noise around it. */
static int col_facts(struct van_rcol *c, const struct van_json *root)
{
	const struct van_json *vm = van_json_get(root, "vm"), *mx = van_json_get(root, "matrix");
	const char *accel = van_json_str(vm, "accel");
	const char *label = van_json_str(mx, "label");
	const char *kernel = van_json_str(root, "kernel");
	const char *ver = van_json_str(vm, "image_version");
	const char *path = strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path;
	if (label && *label)
		c->label = clean_dup(label, 60);
	else if (kernel && *kernel)
		c->label = clean_dup(kernel, 60);
	else if (ver && *ver)
		c->label = first_word(ver);
	else
		c->label = clean_dup(*path ? path : "?", 60);
	c->where = strdup(!vm ? "host" : accel && !strcmp(accel, "kvm") ? "kvm" : "tcg");
	if (!c->label || !c->where)
		return -ENOMEM;
	c->cpus = (int)van_json_num(vm ? vm : root, "cpus", 0);
	if (c->cpus < 0 || c->cpus > 100000)
		c->cpus = 0;
	c->memory = van_json_num(vm ? vm : mx, "memory_bytes", 0);
	if (!(c->memory >= 0))
		c->memory = 0;
	if (mm_words(van_json_str(root, "mm"), c->mm) < 0 ||
	    mm_words(van_json_str(root, "recorded_mm"), c->mm_rec) < 0)
		return -ENOMEM;
	const char *unset = van_json_str(vm, "mm_unset");
	if (unset && *unset && !(c->unset = clean_dup(unset, 400)))
		return -ENOMEM;
	c->host_noise = van_json_num(mx, "host_noise_pct", -1);
	c->guest_noise = van_json_num(van_json_get(vm, "noise"), "others_pct", -1);
	if (!(c->host_noise >= 0 && c->host_noise <= 100))
		c->host_noise = -1;
	if (!(c->guest_noise >= 0 && c->guest_noise <= 100))
		c->guest_noise = -1;
	return 0;
}

int van_rcol_parse(const char *text, size_t len, const char *path, struct van_rcol *c,
		   char *msg, size_t msglen)
{
	char err[160];
	memset(c, 0, sizeof(*c));
	c->host_noise = c->guest_noise = -1;
	struct van_json *root = van_json_parse(text, len, err, sizeof(err));
	if (!root) {
		if (!strcmp(err, "out of memory"))
			return -ENOMEM;
		snprintf(msg, msglen, "not valid JSON: %s", err);
		return -EINVAL;
	}
	int rc = -ENOMEM;
	if (!(c->path = strdup(path ? path : "")))
		goto out;
	const char *error = van_json_str(root, "error");
	if (root->type == VAN_JSON_OBJECT && error && !van_json_get(root, "runs")) {
		/* vmreplay's file for a kernel that gave no results */
		if (!(c->error = clean_dup(*error ? error : "no results", 600)))
			goto out;
	} else if ((rc = van_result_parse(text, len, &c->r, msg, msglen)) < 0) {
		goto out;
	} else if ((rc = call_metrics(c, van_json_get(root, "runs"))) < 0) {
		goto out;
	}
	rc = col_facts(c, root);
out:
	van_json_free(root);
	if (rc < 0)
		van_rcol_free(c);
	return rc;
}

void van_rcol_free(struct van_rcol *c)
{
	free(c->label);
	free(c->path);
	free(c->error);
	free(c->where);
	free(c->unset);
	for (size_t i = 0; i < VAN_RCOL_MM; i++)
		free(c->mm[i]), free(c->mm_rec[i]);
	if (c->r.m || c->r.trace)
		van_result_free(&c->r);
	memset(c, 0, sizeof(*c));
}

/* ---- cells ------------------------------------------------------------------- */

unsigned van_runs_needed(double alpha)
{
	unsigned n = 1;
	while (n < 1000 && van_mwu_min_p(n, n) >= alpha)
		n++;
	return n;
}

static const struct van_rmetric *find(const struct van_result *r, const char *name)
{
	for (size_t i = 0; i < r->nmetrics; i++)
		if (!strcmp(r->m[i].name, name))
			return &r->m[i];
	return NULL;
}

/* The runs of column c for metric name (0 in each where it lacks it),
 * into v (room for its runs). */
static void values(const struct van_rcol *c, const char *name, double *v)
{
	const struct van_rmetric *m = find(&c->r, name);
	for (unsigned i = 0; i < c->r.nruns; i++)
		v[i] = m ? m->v[i] : 0;
}

static void describe(struct van_rcell *x, double *v, unsigned n)
{
	double sum = 0, ss = 0;
	for (unsigned i = 0; i < n; i++)
		sum += v[i];
	x->mean = sum / n;
	for (unsigned i = 0; i < n; i++)
		ss += (v[i] - x->mean) * (v[i] - x->mean);
	x->sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
	x->cv = x->mean != 0 ? x->sd / fabs(x->mean) * 100 : 0;
	x->median = van_median(v, n); /* sorts v */
	x->min = v[0];
	x->max = v[n - 1];
	x->have = 1;
}

/* Which section a metric goes in: the counts, and what the replay
 * threads saw of their own calls (the sleeps inside calls, and their
 * time off CPU: emulated under TCG, but the mmap_lock story), first. */
static int section_of(const char *name, int timing)
{
	return timing && strncmp(name, "calls.", 6) ? VAN_RS_TIMES : VAN_RS_COUNTS;
}

static int row_cells(const struct van_rtable *t, struct van_rtrow *row, double **v)
{
	for (size_t c = 0; c < t->ncols; c++) {
		const struct van_rcol *col = &t->cols[c];
		if (col->error || !col->r.nruns)
			continue;
		values(col, row->name, v[c]);
		describe(&row->cell[c], v[c], col->r.nruns);
	}
	/* Means where a median hides rare events: a count whose median is 0
	 * in some column although some of its runs had it. */
	for (size_t c = 0; c < t->ncols; c++)
		if (row->cell[c].have && !row->timing && row->cell[c].median == 0 &&
		    row->cell[c].mean > 0)
			row->mean = 1;
	if (t->base == t->ncols)
		return 0;
	const struct van_rcol *bc = &t->cols[t->base];
	const struct van_rcell *b = &row->cell[t->base];
	double bs = row->mean ? b->mean : b->median;
	for (size_t c = 0; c < t->ncols; c++) {
		struct van_rcell *x = &row->cell[c];
		if (!x->have)
			continue;
		if (c == t->base) {
			x->sig = -1;
			x->ratio = 1;
			x->p = 1;
			continue;
		}
		double s = row->mean ? x->mean : x->median;
		x->ratio = s / (bs >= 1 ? bs : 1);
		if (s == bs)
			x->change_pct = 0;
		else if (bs == 0)
			x->change_pct = s > 0 ? INFINITY : -INFINITY;
		else
			x->change_pct = (s - bs) / fabs(bs) * 100;
		/* (v holds each column's runs, sorted: the test needs no order) */
		struct van_mwu w;
		if (van_mann_whitney(v[t->base], bc->r.nruns, v[c], t->cols[c].r.nruns, &w) < 0)
			return -ENOMEM;
		x->p = w.p;
		x->sig = w.p_min >= t->alpha ? VAN_SIG_FEW : w.p < t->alpha ? VAN_SIG_YES : VAN_SIG_NO;
	}
	return 0;
}

/* Add a row for metric m unless the table has it. */
static int add_row(struct van_rtable *t, const struct van_rmetric *m, size_t *cap)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (!strcmp(t->rows[i].name, m->name))
			return 0;
	if (t->nrows == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		struct van_rtrow *r = realloc(t->rows, nc * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->rows = r;
		*cap = nc;
	}
	struct van_rtrow *row = &t->rows[t->nrows];
	memset(row, 0, sizeof(*row));
	row->name = m->name;
	row->timing = m->timing;
	row->section = section_of(m->name, m->timing);
	if (!(row->cell = calloc(t->ncols, sizeof(*row->cell))))
		return -ENOMEM;
	t->nrows++;
	return 0;
}

int van_rtable_build(const struct van_rcol *cols, size_t n, double alpha, struct van_rtable *t)
{
	memset(t, 0, sizeof(*t));
	t->cols = cols;
	t->ncols = n;
	t->alpha = alpha;
	t->base = n;
	size_t cap = 0;
	double **v = calloc(n ? n : 1, sizeof(*v));
	int rc = -ENOMEM;
	if (!v)
		return -ENOMEM;
	for (size_t c = 0; c < n; c++) {
		if (cols[c].error || !cols[c].r.nruns)
			continue;
		if (t->base == n)
			t->base = c;
		if (!(v[c] = malloc(cols[c].r.nruns * sizeof(double))))
			goto out;
	}
	/* The counts first, then the times; in each, the first column's
	 * order, then what the others add. */
	for (int sec = VAN_RS_COUNTS; sec <= VAN_RS_TIMES; sec++)
		for (size_t c = 0; c < n; c++)
			for (size_t i = 0; v[c] && i < cols[c].r.nmetrics; i++)
				if (section_of(cols[c].r.m[i].name, cols[c].r.m[i].timing) == sec &&
				    add_row(t, &cols[c].r.m[i], &cap) < 0)
					goto out;
	for (size_t i = 0; i < t->nrows; i++)
		if (row_cells(t, &t->rows[i], v) < 0)
			goto out;
	rc = 0;
out:
	for (size_t c = 0; c < n; c++)
		free(v[c]);
	free(v);
	if (rc < 0)
		van_rtable_free(t);
	return rc;
}

void van_rtable_free(struct van_rtable *t)
{
	for (size_t i = 0; i < t->nrows; i++)
		free(t->rows[i].cell);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

int van_rtable_shown(const struct van_rtable *t, const struct van_rtrow *row, int all)
{
	if (all)
		return 1;
	for (size_t c = 0; c < t->ncols; c++)
		if (row->cell[c].have && (row->cell[c].min != 0 || row->cell[c].max != 0))
			return 1;
	return 0;
}
