/*
 * compare.c - vmreplay --rewrite and --compare: load a trace rewritten by
 * rules, replay it against the original (A B A B ...), and report the two
 * sides in one table and in the JSON (vmreplay(1), COMPARE OUTPUT and
 * JSON OUTPUT).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "compare.h"
#include "fidelity.h"
#include "vmtutil.h"

/* ---- rewriting into a temporary file ----------------------------------- */

/* An unlinked read-write file: nothing to clean up if we are killed. */
static int tmp_fd(void)
{
	int fd = memfd_create("vmreplay-rewritten", MFD_CLOEXEC);
	if (fd >= 0)
		return fd;
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

int rp_load_rewritten(const char *path, const char *rules, const struct rp_options *o,
		      rp_trace **out, struct rp_rewrite_info *info, int *is_input_error,
		      char *msg, size_t msglen)
{
	int dummy, rc, in = -1, tmp = -1;
	char dmsg[8];

	*out = NULL;
	memset(info, 0, sizeof(*info));
	if (!is_input_error)
		is_input_error = &dummy;
	if (!msg || !msglen) {
		msg = dmsg;
		msglen = sizeof(dmsg);
	}
	msg[0] = 0;
	*is_input_error = 1;
	van_rewrite *rw = van_rewrite_new(rules, msg, msglen);
	if (!rw)
		return -EINVAL;
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		rc = -errno;
		snprintf(msg, msglen, "%s", strerror(errno));
		goto out;
	}
	tmp = tmp_fd();
	if (tmp < 0) {
		rc = -errno;
		*is_input_error = 0;
		snprintf(msg, msglen, "cannot create a temporary file for the rewritten trace: %s",
			 strerror(errno));
		goto out;
	}
	rc = van_rewrite_trace(rw, in, tmp, msg, msglen);
	if (rc < 0) {
		/* "reading: ..." is the trace's fault; anything else (a rule
		 * that made an invalid event, no space) is ours. */
		*is_input_error = !strncmp(msg, "reading", 7);
		goto out;
	}
	snprintf(info->rules, sizeof(info->rules), "%s", van_rewrite_list(rw));
	const struct van_rewrite_counts *cnt = van_rewrite_counts(rw);
	info->nrules = cnt->nrules < RP_MAX_RULES ? cnt->nrules : RP_MAX_RULES;
	for (uint32_t i = 0; i < info->nrules; i++) {
		snprintf(info->rule[i].name, sizeof(info->rule[i].name), "%s", cnt->rules[i].name);
		info->rule[i].applied = cnt->rules[i].applied;
	}
	info->events_in = cnt->events_in;
	info->events_out = cnt->events_out;
	info->overflows = cnt->overflows;
	info->calls_in = cnt->in;
	info->calls_out = cnt->out;
	if (lseek(tmp, 0, SEEK_SET) < 0) {
		rc = -errno;
		*is_input_error = 0;
		snprintf(msg, msglen, "rewinding the rewritten trace: %s", strerror(errno));
		goto out;
	}
	char lmsg[400];
	rc = rp_trace_load_fd(tmp, path, o, out, lmsg, sizeof(lmsg));
	if (rc < 0)
		snprintf(msg, msglen, "rewritten by %s: %s", info->rules, lmsg);
out:
	if (tmp >= 0)
		close(tmp);
	if (in >= 0)
		close(in);
	van_rewrite_free(rw);
	return rc;
}

/* ---- running both sides ------------------------------------------------- */

void rp_compare_free(struct rp_compare *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n; i++) {
		if (c->base)
			rp_run_result_free(&c->base[i]);
		if (c->rew)
			rp_run_result_free(&c->rew[i]);
	}
	free(c->base);
	free(c->rew);
	rp_run_result_free(&c->base_med);
	rp_run_result_free(&c->rew_med);
	memset(c, 0, sizeof(*c));
}

int rp_compare_run(rp_trace *base, rp_trace *rew, const struct rp_options *o,
		   unsigned n, struct rp_compare *c, char *msg, size_t msglen)
{
	char lmsg[400];
	int rc;

	memset(c, 0, sizeof(*c));
	if (!n)
		return -EINVAL;
	c->base = calloc(n, sizeof(*c->base));
	c->rew = calloc(n, sizeof(*c->rew));
	if (!c->base || !c->rew) {
		rp_compare_free(c);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	c->n = n;
	for (unsigned i = 0; i < n; i++) {
		if ((rc = rp_run(base, o, &c->base[i], lmsg, sizeof(lmsg))) < 0) {
			snprintf(msg, msglen, "baseline run %u: %s", i + 1, lmsg);
			goto fail;
		}
		if ((rc = rp_run(rew, o, &c->rew[i], lmsg, sizeof(lmsg))) < 0) {
			snprintf(msg, msglen, "rewritten run %u: %s", i + 1, lmsg);
			goto fail;
		}
	}
	if ((rc = rp_run_median(c->base, n, &c->base_med)) < 0 ||
	    (rc = rp_run_median(c->rew, n, &c->rew_med)) < 0) {
		snprintf(msg, msglen, "out of memory");
		goto fail;
	}
	return 0;
fail:
	rp_compare_free(c);
	return rc;
}

double rp_ratio(uint64_t base, uint64_t rew)
{
	return (double)base / (double)(rew ? rew : 1);
}

/* ---- the table ---------------------------------------------------------- */

/* One row: a run-object number, or one of an op's (op >= 0). */
struct metric {
	const char *label;
	int op;
	size_t off;
	double unit; /* shown value = raw / unit */
	int prec;
};

#define RUNF(f) offsetof(struct rp_run_result, f)
#define OPF(f) offsetof(struct rp_op_result, f)

static const struct metric run_metrics[] = {
	{ "wall_ms", -1, RUNF(wall_ns), 1e6, 3 },
	{ "minor faults", -1, RUNF(minor_faults), 1, 0 },
	{ "major faults", -1, RUNF(major_faults), 1, 0 },
	{ "voluntary cs", -1, RUNF(voluntary_cs), 1, 0 },
	{ "involuntary cs", -1, RUNF(involuntary_cs), 1, 0 },
	{ "divergences", -1, RUNF(divergences), 1, 0 },
	{ "wait_ms", -1, RUNF(wait_ns), 1e6, 3 },
	{ "peak vmas", -1, RUNF(peak_vmas), 1, 0 },
	{ "ops replayed", -1, RUNF(events), 1, 0 },
};

static const struct metric op_metrics[] = {
	{ "calls", 0, OPF(count), 1, 0 },
	{ "p50_us", 0, OPF(p50_ns), 1e3, 3 },
	{ "p99_us", 0, OPF(p99_ns), 1e3, 3 },
};

static uint64_t mget(const struct rp_run_result *r, const struct metric *m)
{
	const char *p = m->op < 0 ? (const char *)r : (const char *)&r->ops[m->op];
	return *(const uint64_t *)(p + m->off);
}

static void fmt_val(char *buf, size_t n, uint64_t v, const struct metric *m)
{
	if (m->prec)
		snprintf(buf, n, "%.*f", m->prec, (double)v / m->unit);
	else
		snprintf(buf, n, "%" PRIu64, v);
}

static void fmt_range(char *buf, size_t n, const struct rp_run_result *runs, unsigned nr,
		      const struct metric *m, uint64_t *lo, uint64_t *hi)
{
	char a[32], b[32];
	*lo = UINT64_MAX;
	*hi = 0;
	for (unsigned i = 0; i < nr; i++) {
		uint64_t v = mget(&runs[i], m);
		if (v < *lo)
			*lo = v;
		if (v > *hi)
			*hi = v;
	}
	fmt_val(a, sizeof(a), *lo, m);
	fmt_val(b, sizeof(b), *hi, m);
	snprintf(buf, n, "%s-%s", a, b);
}

static void row(FILE *f, const char *label, const struct rp_compare *c, const struct metric *m)
{
	char bv[32], rv[32], rt[32], br[64], rr[64];
	uint64_t blo, bhi, rlo, rhi;
	uint64_t b = mget(&c->base_med, m), r = mget(&c->rew_med, m);
	fmt_val(bv, sizeof(bv), b, m);
	fmt_val(rv, sizeof(rv), r, m);
	double q = rp_ratio(b, r);
	if (!b && !r)
		snprintf(rt, sizeof(rt), "-");
	else
		snprintf(rt, sizeof(rt), q < 100 ? "%.2f" : "%.0f", q);
	fmt_range(br, sizeof(br), c->base, c->n, m, &blo, &bhi);
	fmt_range(rr, sizeof(rr), c->rew, c->n, m, &rlo, &rhi);
	int clear = bhi < rlo || rhi < blo;
	fprintf(f, "%-20s %12s %12s %8s  %-23s %-23s %s\n", label, bv, rv, rt, br, rr,
		clear ? "yes" : "no");
}

/* Numbers of a run that no single field holds: calls that always take
 * mmap_lock for writing and the time in them (madvise left out: its
 * discarding advice takes the lock for reading), and one recorded
 * thread's context switches (all copies of it). */
static uint64_t wl_calls(const struct rp_run_result *r, uint32_t unused)
{
	uint64_t n = 0;
	(void)unused;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++)
		n += van_op_write_locked(op) == 1 ? r->ops[op].count : 0;
	return n;
}

static uint64_t wl_ns(const struct rp_run_result *r, uint32_t unused)
{
	uint64_t ns = 0;
	(void)unused;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++)
		ns += van_op_write_locked(op) == 1 ? r->ops[op].count * r->ops[op].mean_ns : 0;
	return ns;
}

static uint64_t thread_cs(const struct rp_run_result *r, uint32_t thread)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].thread == thread)
			n += r->threads[i].voluntary_cs + r->threads[i].involuntary_cs;
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* get() of each run of one side: its median (the lower middle), min, max. */
static uint64_t side_of(const struct rp_run_result *runs, unsigned n,
			uint64_t (*get)(const struct rp_run_result *, uint32_t), uint32_t arg,
			uint64_t *lo, uint64_t *hi)
{
	uint64_t v[64];
	unsigned k = n < 64 ? n : 64;
	for (unsigned i = 0; i < k; i++)
		v[i] = get(&runs[i], arg);
	qsort(v, k, sizeof(v[0]), cmp_u64);
	*lo = v[0];
	*hi = v[k - 1];
	return v[(k - 1) / 2];
}

/* A row like row()'s, of get() (shown divided by unit with prec decimals). */
static void row_of(FILE *f, const char *label, const struct rp_compare *c,
		   uint64_t (*get)(const struct rp_run_result *, uint32_t), uint32_t arg,
		   double unit, int prec)
{
	struct metric m = { label, -1, 0, unit, prec };
	char bv[32], rv[32], rt[32], br[64], rr[64], a[32], b2[32];
	uint64_t blo, bhi, rlo, rhi;
	uint64_t b = side_of(c->base, c->n, get, arg, &blo, &bhi);
	uint64_t r = side_of(c->rew, c->n, get, arg, &rlo, &rhi);
	fmt_val(bv, sizeof(bv), b, &m);
	fmt_val(rv, sizeof(rv), r, &m);
	double q = rp_ratio(b, r);
	if (!b && !r)
		snprintf(rt, sizeof(rt), "-");
	else
		snprintf(rt, sizeof(rt), q < 100 ? "%.2f" : "%.0f", q);
	fmt_val(a, sizeof(a), blo, &m);
	fmt_val(b2, sizeof(b2), bhi, &m);
	snprintf(br, sizeof(br), "%s-%s", a, b2);
	fmt_val(a, sizeof(a), rlo, &m);
	fmt_val(b2, sizeof(b2), rhi, &m);
	snprintf(rr, sizeof(rr), "%s-%s", a, b2);
	fprintf(f, "%-20s %12s %12s %8s  %-23s %-23s %s\n", label, bv, rv, rt, br, rr,
		bhi < rlo || rhi < blo ? "yes" : "no");
}

struct tcs {
	uint32_t thread;
	uint64_t cs;
};

static int by_cs(const void *a, const void *b)
{
	const struct tcs *x = a, *y = b;
	return x->cs != y->cs ? (x->cs < y->cs ? 1 : -1) : (x->thread > y->thread) - (x->thread < y->thread);
}

/* Rows for the (at most 4) recorded threads with the most context
 * switches on either side: where a rewrite moves waiting between threads
 * (a JVM's GC threads, an allocator's background thread). */
static void thread_rows(FILE *f, const struct rp_compare *c)
{
	struct tcs *t = calloc(c->base[0].nthreads + 1, sizeof(*t));
	uint32_t n = 0;
	if (!t)
		return;
	for (uint32_t i = 0; i < c->base[0].nthreads; i++) {
		uint32_t id = c->base[0].threads[i].thread;
		uint64_t lo, hi, v = side_of(c->base, c->n, thread_cs, id, &lo, &hi);
		uint64_t w = side_of(c->rew, c->n, thread_cs, id, &lo, &hi);
		int seen = 0;
		for (uint32_t k = 0; k < n; k++)
			seen |= t[k].thread == id;
		if (!seen && (v || w))
			t[n++] = (struct tcs){ id, v > w ? v : w };
	}
	qsort(t, n, sizeof(*t), by_cs);
	for (uint32_t k = 0; k < n && k < 4; k++) {
		char label[32];
		snprintf(label, sizeof(label), "cs of t%u", t[k].thread);
		row_of(f, label, c, thread_cs, t[k].thread, 1, 0);
	}
	free(t);
}

static void divergences(FILE *f, const char *side, const struct rp_run_result *r)
{
	if (!r->divergences)
		return;
	fprintf(f, "\n%s divergences (median run): %" PRIu64 "\n", side, r->divergences);
	rp_report_div_list(f, r);
}

int rp_rewrite_report_rules(FILE *f, const struct rp_rewrite_info *info)
{
	fprintf(f, "rewritten by %s:", info->rules);
	for (uint32_t i = 0; i < info->nrules; i++)
		fprintf(f, "%s %s applied %" PRIu64 " time%s", i ? "," : "", info->rule[i].name,
			info->rule[i].applied, info->rule[i].applied == 1 ? "" : "s");
	fprintf(f, "; %" PRIu64 " events in, %" PRIu64 " out", info->events_in, info->events_out);
	if (info->overflows)
		fprintf(f, "; %" PRIu64 " decisions forced by the look-ahead limit", info->overflows);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

int rp_compare_report_text(FILE *f, const rp_trace *base, const rp_trace *rew,
			   const struct rp_options *o, const struct rp_rewrite_info *info,
			   const struct rp_compare *c, int quiet)
{
	struct rp_trace_info bi, ri;
	rp_trace_get_info(base, &bi);
	rp_trace_get_info(rew, &ri);
	if (quiet) {
		rp_rewrite_report_rules(f, info);
		rp_report_totals(f, "baseline", &c->base_med);
		rp_report_totals(f, "rewritten", &c->rew_med);
		if (rp_fidelity_report(f, base, o, &c->base_med, 1) < 0)
			return -ENOMEM;
		return ferror(f) ? -EIO : 0;
	}
	fprintf(f, "compare: the trace as recorded (baseline) and rewritten by %s, %u run%s each,"
		   " alternating\n",
		info->rules, c->n, c->n == 1 ? "" : "s");
	fprintf(f, "baseline %" PRIu64 " ops of %" PRIu64 " events, rewritten %" PRIu64
		   " ops of %" PRIu64 " events; %u thread%s, %u process%s;",
		bi.ops, bi.events, ri.ops, ri.events, bi.threads, bi.threads == 1 ? "" : "s",
		bi.procs, bi.procs == 1 ? "" : "es");
	rp_report_options(f, o->order, o);

	fprintf(f, "\n%-20s %12s\n", "rule", "applied");
	for (uint32_t i = 0; i < info->nrules; i++)
		fprintf(f, "%-20s %12" PRIu64 "\n", info->rule[i].name, info->rule[i].applied);
	if (info->overflows)
		fprintf(f, "(%" PRIu64 " decisions forced early by the rewrite look-ahead limit)\n",
			info->overflows);

	/* what the rewrite changed in the trace itself (counted, not measured) */
	const struct van_rewrite_calls *ci = &info->calls_in, *co = &info->calls_out;
	fprintf(f, "\n%-20s %12s %12s %8s\n", "calls in the trace", "baseline", "rewritten", "ratio");
	fprintf(f, "%-20s %12" PRIu64 " %12" PRIu64 " %8.2f\n", "all", ci->calls, co->calls,
		rp_ratio(ci->calls, co->calls));
	fprintf(f, "%-20s %12" PRIu64 " %12" PRIu64 " %8.2f\n", "changing VMAs", ci->vma_changes,
		co->vma_changes, rp_ratio(ci->vma_changes, co->vma_changes));
	fprintf(f, "%-20s %12" PRIu64 " %12" PRIu64 " %8.2f\n", "write-locked", ci->write_locked,
		co->write_locked, rp_ratio(ci->write_locked, co->write_locked));

	fprintf(f, "\n%-20s %12s %12s %8s  %-23s %-23s %s\n", "metric (median)", "baseline",
		"rewritten", "ratio", "baseline min-max", "rewritten min-max", "clear");
	for (size_t i = 0; i < sizeof(run_metrics) / sizeof(run_metrics[0]); i++)
		row(f, run_metrics[i].label, c, &run_metrics[i]);
	row_of(f, "write-lock calls", c, wl_calls, 0, 1, 0);
	row_of(f, "write-lock ms", c, wl_ns, 0, 1e6, 3);
	thread_rows(f, c);
	for (unsigned op = 1; op < VMT_OP__COUNT; op++) {
		if (!c->base_med.ops[op].count && !c->rew_med.ops[op].count)
			continue;
		for (size_t i = 0; i < sizeof(op_metrics) / sizeof(op_metrics[0]); i++) {
			struct metric m = op_metrics[i];
			char label[48];
			m.op = (int)op;
			snprintf(label, sizeof(label), "%s %s", vmt_op_name(op), m.label);
			row(f, label, c, &m);
		}
	}
	fprintf(f, "(ratio: baseline median / rewritten median, the divisor at least 1;"
		   " clear: the two sides' ranges do not overlap;\n"
		   " write-lock: the calls that take mmap_lock for writing, madvise not"
		   " counted; cs of tN: recorded thread N's context switches)\n");
	divergences(f, "baseline", &c->base_med);
	divergences(f, "rewritten", &c->rew_med);
	/* How faithful the baseline is; the rewritten side measures the
	 * rewrite, and says only its verdict. */
	if (rp_fidelity_report(f, base, o, &c->base_med, 0) < 0 ||
	    rp_fidelity_report(f, rew, o, &c->rew_med, 1) < 0)
		return -ENOMEM;
	fputc('\n', f);
	rp_report_totals(f, "baseline", &c->base_med);
	rp_report_totals(f, "rewritten", &c->rew_med);
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON --------------------------------------------------------------- */

static void json_rules(struct vmt_buf *b, const struct rp_rewrite_info *info)
{
	vmt_buf_puts(b, "\"rewrite\":");
	vmt_buf_json_str(b, info->rules);
	vmt_buf_puts(b, ",\"rules\":{");
	for (uint32_t i = 0; i < info->nrules; i++) {
		if (i)
			vmt_buf_puts(b, ",");
		vmt_buf_json_str(b, info->rule[i].name);
		vmt_buf_printf(b, ":%" PRIu64, info->rule[i].applied);
	}
	vmt_buf_printf(b, "},\"rewrite_events_in\":%" PRIu64 ",\"rewrite_events_out\":%" PRIu64
			  ",\"rewrite_overflows\":%" PRIu64,
		       info->events_in, info->events_out, info->overflows);
	const struct van_rewrite_calls *side[2] = { &info->calls_in, &info->calls_out };
	for (int i = 0; i < 2; i++)
		vmt_buf_printf(b, ",\"rewrite_calls_%s\":{\"calls\":%" PRIu64 ",\"write_locked\":%" PRIu64
				  ",\"vma_changes\":%" PRIu64 "}",
			       i ? "out" : "in", side[i]->calls, side[i]->write_locked,
			       side[i]->vma_changes);
}

static void json_ratio(struct vmt_buf *b, const char *key, uint64_t base, uint64_t rew, int comma)
{
	vmt_buf_printf(b, "%s\"%s\":%.6g", comma ? "," : "", key, rp_ratio(base, rew));
}

#define RATIO(key, field, comma) json_ratio(b, key, B->field, R->field, comma)

/* Every number of rp_json_run's object, nested the same way. */
static void json_ratios(struct vmt_buf *b, const struct rp_run_result *B,
			const struct rp_run_result *R)
{
	int comma = 0;
	vmt_buf_puts(b, "{");
#define RUN_RATIO(f) RATIO(#f, f, comma), comma = 1;
	RP_RUN_NUMBERS(RUN_RATIO)
#undef RUN_RATIO
	vmt_buf_puts(b, ",\"perf\":{");
	RATIO("minor_faults", perf_minor, 0);
	RATIO("major_faults", perf_major, 1);
	RATIO("context_switches", perf_cs, 1);
	vmt_buf_puts(b, "},\"rusage\":{");
	RATIO("minor_faults", rusage_minor, 0);
	RATIO("major_faults", rusage_major, 1);
	vmt_buf_puts(b, "},\"setup\":{");
	RATIO("minor_faults", setup_minor, 0);
	RATIO("major_faults", setup_major, 1);
	RATIO("voluntary_cs", setup_vcsw, 1);
	RATIO("involuntary_cs", setup_ivcsw, 1);
	vmt_buf_puts(b, "},\"ops\":{");
	int first = 1;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++) {
		const struct rp_op_result *x = &B->ops[op], *y = &R->ops[op];
		if (!x->count && !y->count)
			continue;
		vmt_buf_printf(b, "%s\"%s\":{", first ? "" : ",", vmt_op_name(op));
		comma = 0;
#define OP_RATIO(f) json_ratio(b, #f, x->f, y->f, comma), comma = 1;
		RP_OP_NUMBERS(OP_RATIO)
#undef OP_RATIO
		vmt_buf_puts(b, "}");
		first = 0;
	}
	vmt_buf_puts(b, "}}");
}

int rp_compare_report_json(FILE *f, const rp_trace *base, const rp_trace *rew,
			   const struct rp_options *o, const struct rp_rewrite_info *info,
			   const struct rp_compare *c)
{
	struct vmt_buf b = { 0 };
	vmt_buf_puts(&b, "{");
	rp_json_trace_keys(&b, base, o);
	vmt_buf_printf(&b, ",\"repeat\":%u,", c->n);
	json_rules(&b, info);
	vmt_buf_puts(&b, ",\"baseline\":{");
	rp_json_runs(&b, c->base, c->n, &c->base_med);
	vmt_buf_puts(&b, "},\"rewritten\":{");
	rp_json_runs(&b, c->rew, c->n, &c->rew_med);
	vmt_buf_puts(&b, "},\"ratio\":");
	json_ratios(&b, &c->base_med, &c->rew_med);
	vmt_buf_puts(&b, ",\"fidelity\":{\"baseline\":");
	int rc = rp_fidelity_append(&b, base, o, &c->base_med);
	vmt_buf_puts(&b, ",\"rewritten\":");
	if (rc < 0 || rp_fidelity_append(&b, rew, o, &c->rew_med) < 0) {
		vmt_buf_free(&b);
		return -ENOMEM;
	}
	vmt_buf_puts(&b, "}}\n");
	return rp_json_emit(f, &b);
}

int rp_rewrite_report_json(FILE *f, const rp_trace *t, const struct rp_options *o,
			   const struct rp_rewrite_info *info, const struct rp_run_result *runs,
			   unsigned n, const struct rp_run_result *med)
{
	struct vmt_buf b = { 0 };
	vmt_buf_puts(&b, "{");
	rp_json_trace_keys(&b, t, o);
	vmt_buf_puts(&b, ",");
	json_rules(&b, info);
	vmt_buf_puts(&b, ",");
	rp_json_runs(&b, runs, n, med);
	vmt_buf_puts(&b, ",\"fidelity\":");
	if (rp_fidelity_append(&b, t, o, med) < 0) {
		vmt_buf_free(&b);
		return -ENOMEM;
	}
	vmt_buf_puts(&b, "}\n");
	return rp_json_emit(f, &b);
}
