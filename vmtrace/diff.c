/*
 * diff.c - `vmtrace diff`: compare the metrics of two traces (a base and a
 * new recording) for regression checks in CI.
 *
 * Counts (ops, errors, bytes, peaks, anonymous touches) are deterministic
 * for a deterministic program; times are not, and neither are the file
 * pages found present (they depend on the page cache and fault-around).
 * So `any` in --fail-on covers the deterministic metrics only; the others
 * are shown apart and checked only when named.
 *
 * Two vmreplay --json results instead of two traces are compared by
 * diffres.c: medians, ratios and significance over the runs.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"
#include "diffmat.h"
#include "diffres.h"
#include "failon.h"
#include "stats.h"

static const char diff_usage[] =
	"usage: vmtrace diff [--json] [--fail-on=EXPR] [--site-threshold=PCT] [--all]\n"
	"                    BASE NEW\n"
	"       vmtrace diff [--json] [--fail-on=EXPR] [--all] [--table]\n"
	"                    BASE.json NEW1.json [NEW2.json...]\n"
	"\n"
	"Compare the metrics of `vmtrace stat` between two traces: a table of\n"
	"base, change and new value per metric (ops.mmap.count, peak_vmas, ...),\n"
	"then the call sites that appeared, vanished or changed by more than the\n"
	"site threshold (sites are matched by function and module names, not by\n"
	"addresses).  Metrics that differ between any two runs are listed apart:\n"
	"timing (duration_ns, *_at_ns, ops.*.time_ns, ops_per_sec) and page-cache\n"
	"dependent ones (touched_pages, touched_file_pages; touched_anon_pages is\n"
	"deterministic).\n"
	"\n"
	"BASE and NEW may instead be two `vmreplay --json` results (of one trace\n"
	"on two kernels, say; told apart from traces by their content): one row\n"
	"per metric (wall_ns, minor_faults, voluntary_cs, wait_ns, ...,\n"
	"ops.OP.count|errors|p50_ns|p99_ns) with the two medians over the runs,\n"
	"their ratio, the p-value of a two-sided Mann-Whitney U test and whether\n"
	"the difference is significant (p < 0.05), or \"too few runs\" to tell.\n"
	"There, 'any' is every metric, and a condition holds only where the\n"
	"difference is significant or there are too few runs to tell.\n"
	"\n"
	"A trace and a `vmreplay --json` result of it: the replay held against\n"
	"the recorded run, whose own counters (in the trace since format 1.2) are\n"
	"the base, whichever is named first: per measure (minor_faults,\n"
	"major_faults, voluntary_cs, involuntary_cs, off_cpu_in_calls_ns,\n"
	"wall_ns) the recorded value, the replay's median and range, the ratio\n"
	"and whether it is within vmreplay(1)'s tolerance (FIDELITY).  There,\n"
	"'any' is every measure judged (switches, waits and wall time only at\n"
	"--speed=1).\n"
	"\n"
	"Three or more results (or two, with --table) give the table of several\n"
	"kernels that `vmreplay --kernel=A --kernel=B --host` prints: one column\n"
	"group per file (median or mean, coefficient of variation, ratio to the\n"
	"first file's, a mark where the difference is significant, \"too few\n"
	"runs\" where it cannot tell), each column's kernel, CPUs, memory and mm\n"
	"settings in the header, the counts before the times (marked where TCG\n"
	"emulated them).  A file of a kernel that gave no results (vmreplay's\n"
	"{\"error\": ...}) is a column saying why.  --fail-on holds when its\n"
	"condition holds in any column against the first; a column without\n"
	"results fails any --fail-on.\n"
	"\n"
	"  --json              one JSON object instead\n"
	"  --fail-on=EXPR      exit 1 when a condition holds; EXPR is a comma-\n"
	"                      separated list (the option may repeat) of\n"
	"                        METRIC>+N%   increased by more than N percent\n"
	"                        METRIC>+N    increased by more than N\n"
	"                        METRIC<-N%   decreased by more than N percent\n"
	"                        METRIC<-N    decreased by more than N\n"
	"                      METRIC is a metric name, a glob (ops.*.errors) or\n"
	"                      'any' (every deterministic metric); a rise\n"
	"                      from 0 is an infinite percentage\n"
	"  --site-threshold=PCT  report call sites whose call count changed by\n"
	"                      more than PCT percent (default 10)\n"
	"  --all               also list metrics that are zero in both traces\n"
	"  --table             the table of several kernels for two results too\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit status: 0 no condition holds, 1 a condition holds (each is printed),\n"
	"2 usage error, bad expression or unreadable trace or result.\n";

/* ---- the comparison ----------------------------------------------------- */

struct row {
	const char *name;
	double base, new_;
	uint32_t flags;
};

/* `any` covers the deterministic metrics of traces. */
static int row_matches(const struct vtc_cond *c, const struct row *r)
{
	return vtc_cond_matches(c, r->name, !(r->flags & VAN_METRIC_NOISY));
}

static const char *row_name(const void *rows, size_t i)
{
	return ((const struct row *)rows)[i].name;
}

/* Rows: every metric of base, then those only new has (unknown advice). */
static struct row *join(const struct van_metric *a, size_t na, const struct van_metric *b,
			size_t nb, size_t *n)
{
	struct row *rows = calloc(na + nb + 1, sizeof(*rows));
	size_t k = 0;
	if (!rows)
		return NULL;
	for (size_t i = 0; i < na; i++) {
		rows[k] = (struct row){ a[i].name, a[i].value, 0, a[i].flags };
		for (size_t j = 0; j < nb; j++)
			if (strcmp(a[i].name, b[j].name) == 0) {
				rows[k].new_ = b[j].value;
				break;
			}
		k++;
	}
	for (size_t j = 0; j < nb; j++) {
		size_t i;
		for (i = 0; i < na && strcmp(a[i].name, b[j].name) != 0; i++)
			;
		if (i == na)
			rows[k++] = (struct row){ b[j].name, 0, b[j].value, b[j].flags };
	}
	*n = k;
	return rows;
}

static void fmt_num(struct vmt_buf *b, double v)
{
	if (v == floor(v) && fabs(v) < 1e18)
		vmt_buf_printf(b, "%.0f", v);
	else
		vmt_buf_printf(b, "%.1f", v);
}

static void fmt_pct(struct vmt_buf *b, double pct)
{
	if (isinf(pct))
		vmt_buf_puts(b, pct > 0 ? "+inf%" : "-inf%");
	else
		vmt_buf_printf(b, "%+.1f%%", pct);
}

static void json_pct(struct vmt_buf *b, double pct)
{
	if (isinf(pct))
		vmt_buf_puts(b, "null");
	else
		vmt_buf_printf(b, "%.3f", pct);
}

static void text_row(struct vmt_buf *out, const struct row *r)
{
	struct vmt_buf x = { 0 }, y = { 0 }, p = { 0 };
	fmt_num(&x, r->base);
	fmt_num(&y, r->new_);
	fmt_pct(&p, vtc_change_pct(r->base, r->new_));
	vmt_buf_printf(out, "%16s %10s %16s  %s\n", x.data, p.data, y.data, r->name);
	vmt_buf_free(&x);
	vmt_buf_free(&y);
	vmt_buf_free(&p);
}

static const struct van_site *find_site(const struct van_stats *s, const char *name)
{
	for (uint32_t i = 0; i < s->nsites; i++)
		if (strcmp(s->sites[i].name, name) == 0)
			return &s->sites[i];
	return NULL;
}

/* Call sites: kind 'a'ppeared, 'v'anished, 'c'hanged.  Calls fn for each
 * in base order, then the new ones. */
static void each_site(const struct van_stats *a, const struct van_stats *b, double thr,
		      void (*fn)(void *, char, const char *, uint64_t, uint64_t), void *arg)
{
	for (uint32_t i = 0; i < a->nsites; i++) {
		const struct van_site *o = &a->sites[i], *n = find_site(b, o->name);
		if (!n)
			fn(arg, 'v', o->name, o->count, 0);
		else if (fabs(vtc_change_pct((double)o->count, (double)n->count)) > thr)
			fn(arg, 'c', o->name, o->count, n->count);
	}
	for (uint32_t i = 0; i < b->nsites; i++)
		if (!find_site(a, b->sites[i].name))
			fn(arg, 'a', b->sites[i].name, 0, b->sites[i].count);
}

struct site_out {
	struct vmt_buf *b;
	int json, n;
};

static void site_line(void *arg, char kind, const char *name, uint64_t base, uint64_t nw)
{
	struct site_out *o = arg;
	static const char *const what[] = { "appeared", "vanished", "changed" };
	const char *w = what[kind == 'a' ? 0 : kind == 'v' ? 1 : 2];
	if (o->json) {
		vmt_buf_printf(o->b, "%s{\"site\":", o->n ? "," : "");
		vmt_buf_json_str(o->b, name);
		vmt_buf_printf(o->b, ",\"status\":\"%s\",\"base\":%" PRIu64 ",\"new\":%" PRIu64
				     ",\"change_pct\":",
			       w, base, nw);
		json_pct(o->b, vtc_change_pct((double)base, (double)nw));
		vmt_buf_puts(o->b, "}");
	} else {
		struct vmt_buf p = { 0 };
		fmt_pct(&p, vtc_change_pct((double)base, (double)nw));
		vmt_buf_printf(o->b, "%16" PRIu64 " %10s %16" PRIu64 "  %-8s %s\n", base, p.data, nw, w,
			       name);
		vmt_buf_free(&p);
	}
	o->n++;
}

static int read_stats(const char *path, struct van_stats *s)
{
	struct vtc_input in;
	if (vtc_input_open(&in, path))
		return -1;
	int rc = van_stats_read(s, in.r);
	if (rc == -ENOMEM)
		fprintf(stderr, "vmtrace: '%s': out of memory\n", path);
	else if (rc < 0)
		vtc_input_report(&in);
	vtc_input_close(&in);
	if (rc < 0) {
		van_stats_free(s);
		return -1;
	}
	return 0;
}

/* The new trace's statistics are gathered on a thread of their own while
 * the base's are on the main thread: the two are independent, and a
 * diff took as long as two stats.  Its messages wait for the base's, so
 * that standard error says what it said when the two were read in turn
 * (nothing of the new trace when the base failed). */
struct side {
	const char *path;
	struct vtc_input in;
	struct van_stats s;
	int open_rc, rc;
	char why[PATH_MAX + 400];
};

static void *read_side(void *arg)
{
	struct side *d = arg;
	d->open_rc = vtc_input_open_msg(&d->in, d->path, d->why, sizeof(d->why));
	if (d->open_rc == 0)
		d->rc = van_stats_read(&d->s, d->in.r);
	return NULL;
}

/* read_stats's messages and result for a side read by read_side. */
static int side_done(struct side *d)
{
	if (d->open_rc) {
		fputs(d->why, stderr);
		return -1;
	}
	if (d->rc == -ENOMEM)
		fprintf(stderr, "vmtrace: '%s': out of memory\n", d->path);
	else if (d->rc < 0)
		vtc_input_report(&d->in);
	vtc_input_close(&d->in);
	if (d->rc < 0) {
		van_stats_free(&d->s);
		return -1;
	}
	return 0;
}

static int report(const char *pa, const char *pb, const struct van_stats *a,
		  const struct van_stats *b, const struct vtc_conds *cs, double thr, int json, int all)
{
	size_t na, nb, n;
	struct van_metric *ma = van_stats_metrics(a, &na), *mb = van_stats_metrics(b, &nb);
	struct row *rows = ma && mb ? join(ma, na, mb, nb, &n) : NULL;
	int status = 0;
	if (!rows) {
		fprintf(stderr, "vmtrace diff: out of memory\n");
		free(ma), free(mb);
		return 2;
	}
	if (vtc_conds_known(cs, row_name, rows, n) < 0) {
		free(rows), free(ma), free(mb);
		return 2;
	}
	struct vmt_buf out = { 0 };
	if (json) {
		vtc_diff_json_head(&out, pa, pb);
		vmt_buf_puts(&out, ",\"metrics\":[");
		int f = 1;
		for (size_t i = 0; i < n; i++) {
			if (!all && rows[i].base == 0 && rows[i].new_ == 0)
				continue;
			vmt_buf_printf(&out, "%s{\"name\":\"%s\",\"base\":", f ? "" : ",", rows[i].name);
			fmt_num(&out, rows[i].base);
			vmt_buf_puts(&out, ",\"new\":");
			fmt_num(&out, rows[i].new_);
			vmt_buf_puts(&out, ",\"change_pct\":");
			json_pct(&out, vtc_change_pct(rows[i].base, rows[i].new_));
			vmt_buf_printf(&out, ",\"deterministic\":%s}",
				       rows[i].flags & VAN_METRIC_NOISY ? "false" : "true");
			f = 0;
		}
		vmt_buf_printf(&out, "],\"stacks_recorded\":%s,\"sites\":[",
			       a->has_stacks && b->has_stacks ? "true" : "false");
		struct site_out so = { &out, 1, 0 };
		each_site(a, b, thr, site_line, &so);
		vmt_buf_puts(&out, "],\"failed\":[");
	} else {
		vmt_buf_printf(&out, "%16s %10s %16s  %s\n", "base", "%change", "new", "metric");
		for (int timing = 0; timing < 2; timing++) {
			if (timing)
				vmt_buf_puts(&out, "\nnot deterministic (timing, page cache; not part of 'any'):\n");
			for (size_t i = 0; i < n; i++)
				if (!!(rows[i].flags & VAN_METRIC_NOISY) == timing &&
				    (all || rows[i].base != 0 || rows[i].new_ != 0))
					text_row(&out, &rows[i]);
		}
		if (a->has_stacks || b->has_stacks) {
			vmt_buf_printf(&out, "\ncall sites (appeared, vanished, or calls changed by more than %g%%):\n", thr);
			struct site_out so = { &out, 0, 0 };
			each_site(a, b, thr, site_line, &so);
			if (!so.n)
				vmt_buf_puts(&out, "  none\n");
		}
	}
	int nfail = 0;
	for (size_t i = 0; i < cs->n; i++) {
		for (size_t j = 0; j < n; j++) {
			if (!row_matches(&cs->c[i], &rows[j]) || !vtc_cond_holds(&cs->c[i], rows[j].base, rows[j].new_))
				continue;
			struct vmt_buf x = { 0 }, y = { 0 }, p = { 0 };
			fmt_num(&x, rows[j].base);
			fmt_num(&y, rows[j].new_);
			double pct = vtc_change_pct(rows[j].base, rows[j].new_);
			fmt_pct(&p, pct);
			if (json) {
				vtc_diff_json_fail(&out, nfail, &cs->c[i], rows[j].name);
				vmt_buf_printf(&out, ",\"base\":%s,\"new\":%s,\"change_pct\":", x.data,
					       y.data);
				json_pct(&out, pct);
				vmt_buf_puts(&out, "}");
			} else {
				vmt_buf_printf(&out, "%sFAIL %s: %s -> %s (%s), condition '%s'\n",
					       nfail ? "" : "\n", rows[j].name, x.data, y.data, p.data,
					       cs->c[i].text);
			}
			vmt_buf_free(&x), vmt_buf_free(&y), vmt_buf_free(&p);
			nfail++;
		}
	}
	status = vtc_diff_verdict(&out, json, cs->n, nfail);
	vmt_buf_free(&out);
	free(rows), free(ma), free(mb);
	return status;
}

static int run_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "fail-on", required_argument, NULL, 'f' },
		{ "site-threshold", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "table", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, all = 0, table = 0, c, status = 2;
	double thr = 10;
	struct vtc_conds cs = { NULL, 0 };
	char *end;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'a': all = 1; break;
		case 'T': table = 1; break;
		case 'f':
			if (vtc_conds_add(&cs, optarg))
				goto out;
			break;
		case 't':
			thr = strtod(optarg, &end);
			if (end == optarg || *end || !(thr >= 0) || !isfinite(thr)) {
				status = vtc_usage_error("diff", "bad --site-threshold '%s': expected a percentage", optarg);
				goto out;
			}
			break;
		case 'h':
			fputs(diff_usage, stdout);
			status = 0;
			goto out;
		default:
			if (optopt && strchr("ft", optopt))
				status = vtc_usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
			else
				status = vtc_usage_error("diff", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (argc - optind > 2 || (table && argc - optind >= 1)) {
		/* several results: the table of several kernels (diffmat.c) */
		for (int i = optind; i < argc; i++)
			if (!vtc_diff_is_result(argv[i])) {
				status = vtc_usage_error("diff", "'%s' is not a vmreplay result: more than"
							 " two files are compared as results only",
							 argv[i]);
				goto out;
			}
		status = vtc_diff_table(argv + optind, (size_t)(argc - optind), &cs, json, all);
		goto out;
	}
	if (argc - optind != 2) {
		status = vtc_usage_error("diff", argc - optind > 2 ? "too many arguments"
								   : "needs two traces, two results, or a trace and a result of it: BASE and NEW");
		goto out;
	}
	if (strcmp(argv[optind], "-") == 0 && strcmp(argv[optind + 1], "-") == 0) {
		status = vtc_usage_error("diff", "only one trace can be standard input");
		goto out;
	}
	/* Two results, or two traces, told apart by their content. */
	int ra = vtc_diff_is_result(argv[optind]), rb = vtc_diff_is_result(argv[optind + 1]);
	if (ra != rb) {
		/* A result beside the trace it replayed: the recorded run's
		 * own counters are the base, whichever comes first. */
		status = vtc_diff_trace_result(argv[ra ? optind + 1 : optind],
					       argv[ra ? optind : optind + 1], &cs, json, all);
		goto out;
	}
	if (ra) {
		status = vtc_diff_results(argv[optind], argv[optind + 1], &cs, json, all);
		goto out;
	}
	struct van_stats a;
	struct side nb = { .path = argv[optind + 1] };
	pthread_t th;
	int threaded = pthread_create(&th, NULL, read_side, &nb) == 0;
	int ok = read_stats(argv[optind], &a) == 0;
	if (threaded)
		pthread_join(th, NULL);
	else if (ok)
		read_side(&nb);
	if (ok) {
		if (side_done(&nb) == 0) {
			status = report(argv[optind], argv[optind + 1], &a, &nb.s, &cs, thr, json, all);
			van_stats_free(&nb.s);
		}
		van_stats_free(&a);
	} else if (threaded && nb.open_rc == 0) {
		/* (the base's error is the one to say, as when read alone) */
		van_stats_free(&nb.s);
		vtc_input_close(&nb.in);
	}
out:
	vtc_conds_free(&cs);
	return status;
}

const struct vtc_cmd vtc_cmd_diff = {
	"diff", run_diff,
	"compare two traces' or two vmreplay results' metrics; --fail-on for CI checks",
	diff_usage,
};
