/*
 * report.c - vmreplay's readable table and its JSON (DESIGN.md section 7).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "model.h"
#include "replay.h"

static const char *order_name(int o)
{
	return o == RP_ORDER_STRICT ? "strict" : o == RP_ORDER_FREE ? "free" : "resource";
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static double us(uint64_t ns)
{
	return (double)ns / 1e3;
}

static const char *placement_name(int p)
{
	return p == RP_PLACE_EXACT ? "exact" : "kernel";
}

void rp_report_options(FILE *f, int order, const struct rp_options *o)
{
	fprintf(f, " order=%s placement=%s scale=%u%s\n", order_name(order),
		placement_name(o->placement), o->scale ? o->scale : 1,
		o->speed > 0 ? "" : " speed=max");
}

void rp_report_totals(FILE *f, const char *side, const struct rp_run_result *r)
{
	if (side)
		fprintf(f, "%-9s ", side);
	fprintf(f, "wall %.3f ms, minor faults %" PRIu64 ", major faults %" PRIu64
		   ", voluntary cs %" PRIu64 ", involuntary cs %" PRIu64 ", divergences %" PRIu64 "\n",
		ms(r->wall_ns), r->minor_faults, r->major_faults, r->voluntary_cs, r->involuntary_cs,
		r->divergences);
}

static void run_row(FILE *f, const char *label, const struct rp_run_result *r)
{
	fprintf(f, "%-7s %10.3f %9" PRIu64 " %6" PRIu64 " %7" PRIu64 " %7" PRIu64 " %9.3f %5" PRIu64
		   " %5" PRIu64 "\n",
		label, ms(r->wall_ns), r->minor_faults, r->major_faults, r->voluntary_cs,
		r->involuntary_cs, ms(r->wait_ns), r->divergences, r->peak_vmas);
}

void rp_report_div_list(FILE *f, const struct rp_run_result *r)
{
	for (uint32_t i = 0; i < r->ndiv_shown; i++) {
		const struct rp_divergence *d = &r->div[i];
		const char *name = vmt_is_errno(d->replayed)
					   ? vmt_errno_name((int)-d->replayed) : NULL;
		fprintf(f, "  event %" PRIu64 " thread %u: %s; replayed: ", d->event, d->thread, d->text);
		if (name)
			fprintf(f, "%s\n", name);
		else
			fprintf(f, "%#" PRIx64 "\n", (uint64_t)d->replayed);
	}
}

int rp_report_text(FILE *f, const rp_trace *t, const struct rp_options *o,
		   const struct rp_run_result *runs, unsigned n, const struct rp_run_result *med,
		   int quiet)
{
	if (quiet) {
		rp_report_totals(f, NULL, med);
		return ferror(f) ? -EIO : 0;
	}
	fprintf(f, "replayed %" PRIu64 " ops of %" PRIu64 " events: %u thread%s, %u process%s;",
		t->nops, t->events, t->nthreads, t->nthreads == 1 ? "" : "s", t->nprocs,
		t->nprocs == 1 ? "" : "es");
	rp_report_options(f, t->opt.order, o);
	if (t->cut)
		fprintf(f, "cut short: replayed up to the last complete chunk (%" PRIu64
			   " events), threads alive there ended there; %s\n", t->events, t->cut);
	fprintf(f, "\n%-7s %10s %9s %6s %7s %7s %9s %5s %5s\n", "run", "wall_ms", "minflt", "majflt",
		"vcs", "ivcs", "wait_ms", "div", "vmas");
	if (n > 1) {
		for (unsigned i = 0; i < n; i++) {
			char label[16];
			snprintf(label, sizeof(label), "%u", i + 1);
			run_row(f, label, &runs[i]);
		}
	}
	run_row(f, n > 1 ? "median" : "1", med);
	if (med->perf_ok && (med->perf_minor != med->rusage_minor ||
			     med->perf_cs != med->voluntary_cs + med->involuntary_cs))
		fprintf(f, "(perf counted %" PRIu64 " minor, %" PRIu64 " major faults and %" PRIu64
			   " context switches; the threads' getrusage %" PRIu64 ", %" PRIu64 " and %" PRIu64 ")\n",
			med->perf_minor, med->perf_major, med->perf_cs, med->rusage_minor,
			med->rusage_major, med->voluntary_cs + med->involuntary_cs);
	if (med->skipped || med->fallbacks || med->touch_faults || t->touch_unmapped_pages ||
	    t->lost_events)
		fprintf(f, "(skipped ops %" PRIu64 ", exact-placement fallbacks %" PRIu64
			   ", touches that trapped %" PRIu64 ", recorded touches outside mappings %" PRIu64
			   " pages, lost events %" PRIu64 ")\n",
			med->skipped, med->fallbacks, med->touch_faults, t->touch_unmapped_pages,
			t->lost_events);

	if (med->load_wait_ns)
		fprintf(f, "(the replay threads waited %.3f ms in all for the trace to load)\n",
			(double)med->load_wait_ns / 1e6);
	fprintf(f, "\n%-16s %9s %7s %10s %10s %10s %10s %10s\n", "op", "count", "errors", "mean_us",
		"p50_us", "p90_us", "p99_us", "max_us");
	for (unsigned op = 1; op < VMT_OP__COUNT; op++) {
		const struct rp_op_result *r = &med->ops[op];
		if (!r->count)
			continue;
		fprintf(f, "%-16s %9" PRIu64 " %7" PRIu64 " %10.3f %10.3f %10.3f %10.3f %10.3f\n",
			vmt_op_name(op), r->count, r->errors, us(r->mean_ns), us(r->p50_ns),
			us(r->p90_ns), us(r->p99_ns), us(r->max_ns));
	}
	if (med->nthreads > 1) {
		fprintf(f, "\n%-6s %6s %5s %9s %9s %6s %7s %7s %9s %9s\n", "thread", "proc", "copy",
			"elements", "minflt", "majflt", "vcs", "ivcs", "wait_ms", "busy_ms");
		for (uint32_t i = 0; i < med->nthreads; i++) {
			const struct rp_thread_result *r = &med->threads[i];
			fprintf(f, "%-6u %6u %5u %9" PRIu64 " %9" PRIu64 " %6" PRIu64 " %7" PRIu64
				   " %7" PRIu64 " %9.3f %9.3f\n",
				r->thread, r->proc, r->copy, r->elems, r->minor_faults, r->major_faults,
				r->voluntary_cs, r->involuntary_cs, ms(r->wait_ns), ms(r->busy_ns));
		}
	}
	if (med->divergences) {
		fprintf(f, "\ndivergences: %" PRIu64 "\n", med->divergences);
		rp_report_div_list(f, med);
		if (med->divergences > med->ndiv_shown) {
			fprintf(f, "  by op:");
			for (unsigned op = 1; op < VMT_OP__COUNT; op++)
				if (med->div_by_op[op])
					fprintf(f, " %s %" PRIu64, vmt_op_name(op), med->div_by_op[op]);
			fputc('\n', f);
		}
	}
	fputc('\n', f);
	rp_report_totals(f, NULL, med);
	return ferror(f) ? -EIO : 0;
}

void rp_json_run(struct vmt_buf *b, const struct rp_run_result *r)
{
	vmt_buf_puts(b, "{");
#define KV(f) vmt_buf_printf(b, "\"" #f "\":%" PRIu64 ",", r->f);
	RP_RUN_NUMBERS(KV)
#undef KV
	vmt_buf_printf(b, "\"perf\":{\"ok\":%s,\"minor_faults\":%" PRIu64 ",\"major_faults\":%" PRIu64
			  ",\"context_switches\":%" PRIu64 "},",
		       r->perf_ok ? "true" : "false", r->perf_minor, r->perf_major, r->perf_cs);
	vmt_buf_printf(b, "\"rusage\":{\"minor_faults\":%" PRIu64 ",\"major_faults\":%" PRIu64 "},",
		       r->rusage_minor, r->rusage_major);
	vmt_buf_puts(b, "\"ops\":{");
	int first = 1;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++) {
		const struct rp_op_result *o = &r->ops[op];
		if (!o->count)
			continue;
		const char *sep = "";
		vmt_buf_printf(b, "%s\"%s\":{", first ? "" : ",", vmt_op_name(op));
#define KV(f) vmt_buf_printf(b, "%s\"" #f "\":%" PRIu64, sep, o->f), sep = ",";
		RP_OP_NUMBERS(KV)
#undef KV
		vmt_buf_puts(b, "}");
		first = 0;
	}
	vmt_buf_puts(b, "},\"threads\":[");
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct rp_thread_result *t = &r->threads[i];
		vmt_buf_printf(b, "%s{\"thread\":%u,\"proc\":%u,\"copy\":%u,\"elements\":%" PRIu64
				  ",\"minor_faults\":%" PRIu64 ",\"major_faults\":%" PRIu64
				  ",\"voluntary_cs\":%" PRIu64 ",\"involuntary_cs\":%" PRIu64
				  ",\"user_ns\":%" PRIu64 ",\"sys_ns\":%" PRIu64
				  ",\"wait_ns\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"wakes\":%" PRIu64
				  ",\"busy_ns\":%" PRIu64 "}",
			       i ? "," : "", t->thread, t->proc, t->copy, t->elems, t->minor_faults,
			       t->major_faults, t->voluntary_cs, t->involuntary_cs, t->user_ns, t->sys_ns,
			       t->wait_ns, t->waits, t->wakes, t->busy_ns);
	}
	vmt_buf_puts(b, "],\"divergence_list\":[");
	for (uint32_t i = 0; i < r->ndiv_shown; i++) {
		const struct rp_divergence *d = &r->div[i];
		vmt_buf_printf(b, "%s{\"event\":%" PRIu64 ",\"thread\":%u,\"recorded\":%" PRId64
				  ",\"replayed\":%" PRId64 ",\"text\":",
			       i ? "," : "", d->event, d->thread, d->recorded, d->replayed);
		vmt_buf_json_str(b, d->text);
		vmt_buf_puts(b, "}");
	}
	vmt_buf_puts(b, "]}");
}

void rp_json_trace_keys(struct vmt_buf *b, const rp_trace *t, const struct rp_options *o)
{
	vmt_buf_puts(b, "\"trace\":");
	vmt_buf_json_str(b, t->path ? t->path : "");
	vmt_buf_printf(b, ",\"order\":\"%s\",\"placement\":\"%s\",\"scale\":%u,\"speed\":%g,"
			  "\"threads\":%u,\"processes\":%u,\"trace_events\":%" PRIu64,
		       order_name(t->opt.order), placement_name(o->placement),
		       o->scale ? o->scale : 1, o->speed, t->nthreads, t->nprocs, t->events);
	/* Where it ran: results of one trace on two kernels are compared. */
	struct utsname u;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	vmt_buf_puts(b, ",\"kernel\":");
	vmt_buf_json_str(b, uname(&u) == 0 ? u.release : "");
	vmt_buf_printf(b, ",\"cpus\":%ld", cpus > 0 ? cpus : 0);
	/* --truncated=replay: the events loaded end at the cut */
	vmt_buf_puts(b, ",\"truncated\":");
	if (t->cut)
		vmt_buf_json_str(b, t->cut);
	else
		vmt_buf_puts(b, "false");
}

void rp_json_runs(struct vmt_buf *b, const struct rp_run_result *runs, unsigned n,
		  const struct rp_run_result *med)
{
	vmt_buf_puts(b, "\"runs\":[");
	for (unsigned i = 0; i < n; i++) {
		if (i)
			vmt_buf_puts(b, ",");
		rp_json_run(b, &runs[i]);
	}
	vmt_buf_puts(b, "],\"median\":");
	rp_json_run(b, med);
}

int rp_json_emit(FILE *f, struct vmt_buf *b)
{
	int rc = 0;
	if (b->oom)
		rc = -ENOMEM;
	else if (fwrite(b->data, 1, b->len, f) != b->len)
		rc = -EIO;
	vmt_buf_free(b);
	return rc;
}

int rp_report_json(FILE *f, const rp_trace *t, const struct rp_options *o,
		   const struct rp_run_result *runs, unsigned n, const struct rp_run_result *med)
{
	struct vmt_buf b = {0};
	vmt_buf_puts(&b, "{");
	rp_json_trace_keys(&b, t, o);
	/* How long the user waited: the load, and from its start to the
	 * first run's first op. */
	vmt_buf_printf(&b, ",\"load_ns\":%" PRIu64 ",\"first_op_ns\":%" PRIu64 ",", t->load_ns,
		       n && runs[0].start_ns > t->load_start_ns ? runs[0].start_ns - t->load_start_ns : 0);
	rp_json_runs(&b, runs, n, med);
	vmt_buf_puts(&b, "}\n");
	return rp_json_emit(f, &b);
}
