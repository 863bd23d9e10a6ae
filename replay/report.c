/*
 * report.c - vmreplay's readable table and its JSON (DESIGN.md section 7).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
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

static void totals_line(FILE *f, const struct rp_run_result *r)
{
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

int rp_report_text(FILE *f, const rp_trace *t, const struct rp_options *o,
		   const struct rp_run_result *runs, unsigned n, const struct rp_run_result *med,
		   int quiet)
{
	if (quiet) {
		totals_line(f, med);
		return ferror(f) ? -EIO : 0;
	}
	fprintf(f, "replayed %" PRIu64 " ops of %" PRIu64 " events: %u thread%s, %u process%s;"
		   " order=%s placement=%s scale=%u%s\n",
		t->nops, t->events, t->nthreads, t->nthreads == 1 ? "" : "s", t->nprocs,
		t->nprocs == 1 ? "" : "es", order_name(t->opt.order),
		o->placement == RP_PLACE_EXACT ? "exact" : "kernel", o->scale ? o->scale : 1,
		o->speed > 0 ? "" : " speed=max");
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
		for (uint32_t i = 0; i < med->ndiv_shown; i++) {
			const struct rp_divergence *d = &med->div[i];
			fprintf(f, "  event %" PRIu64 " thread %u: %s; replayed: ", d->event, d->thread,
				d->text);
			if (d->replayed < 0 && d->replayed >= -4095)
				fprintf(f, "%s\n", vmt_errno_name((int)-d->replayed)
							   ? vmt_errno_name((int)-d->replayed) : "error");
			else
				fprintf(f, "%#" PRIx64 "\n", (uint64_t)d->replayed);
		}
		if (med->divergences > med->ndiv_shown) {
			fprintf(f, "  by op:");
			for (unsigned op = 1; op < VMT_OP__COUNT; op++)
				if (med->div_by_op[op])
					fprintf(f, " %s %" PRIu64, vmt_op_name(op), med->div_by_op[op]);
			fputc('\n', f);
		}
	}
	fputc('\n', f);
	totals_line(f, med);
	return ferror(f) ? -EIO : 0;
}

#define KV(key, val) vmt_buf_printf(b, "\"%s\":%" PRIu64 ",", key, (uint64_t)(val))

void rp_json_run(struct vmt_buf *b, const struct rp_run_result *r)
{
	vmt_buf_puts(b, "{");
	KV("wall_ns", r->wall_ns);
	KV("minor_faults", r->minor_faults);
	KV("major_faults", r->major_faults);
	KV("voluntary_cs", r->voluntary_cs);
	KV("involuntary_cs", r->involuntary_cs);
	KV("divergences", r->divergences);
	KV("events", r->events);
	KV("peak_vmas", r->peak_vmas);
	KV("wait_ns", r->wait_ns);
	KV("touched_pages", r->touched_pages);
	KV("touch_faults", r->touch_faults);
	KV("fallbacks", r->fallbacks);
	KV("skipped", r->skipped);
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
		vmt_buf_printf(b, "%s\"%s\":{\"count\":%" PRIu64 ",\"errors\":%" PRIu64
				  ",\"mean_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p90_ns\":%" PRIu64
				  ",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}",
			       first ? "" : ",", vmt_op_name(op), o->count, o->errors, o->mean_ns,
			       o->p50_ns, o->p90_ns, o->p99_ns, o->max_ns);
		first = 0;
	}
	vmt_buf_puts(b, "},\"threads\":[");
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct rp_thread_result *t = &r->threads[i];
		vmt_buf_printf(b, "%s{\"thread\":%u,\"proc\":%u,\"copy\":%u,\"elements\":%" PRIu64
				  ",\"minor_faults\":%" PRIu64 ",\"major_faults\":%" PRIu64
				  ",\"voluntary_cs\":%" PRIu64 ",\"involuntary_cs\":%" PRIu64
				  ",\"user_ns\":%" PRIu64 ",\"sys_ns\":%" PRIu64
				  ",\"wait_ns\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"busy_ns\":%" PRIu64 "}",
			       i ? "," : "", t->thread, t->proc, t->copy, t->elems, t->minor_faults,
			       t->major_faults, t->voluntary_cs, t->involuntary_cs, t->user_ns, t->sys_ns,
			       t->wait_ns, t->waits, t->busy_ns);
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
		       order_name(t->opt.order), o->placement == RP_PLACE_EXACT ? "exact" : "kernel",
		       o->scale ? o->scale : 1, o->speed, t->nthreads, t->nprocs, t->events);
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

int rp_report_json(FILE *f, const rp_trace *t, const struct rp_options *o,
		   const struct rp_run_result *runs, unsigned n, const struct rp_run_result *med)
{
	struct vmt_buf b = {0};
	vmt_buf_puts(&b, "{");
	rp_json_trace_keys(&b, t, o);
	vmt_buf_puts(&b, ",");
	rp_json_runs(&b, runs, n, med);
	vmt_buf_puts(&b, "}\n");
	int rc = 0;
	if (b.oom)
		rc = -ENOMEM;
	else if (fwrite(b.data, 1, b.len, f) != b.len)
		rc = -EIO;
	vmt_buf_free(&b);
	return rc;
}
