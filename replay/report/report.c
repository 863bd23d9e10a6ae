/*
 * report.c - vmreplay's readable table and its JSON (vmreplay(1), OUTPUT
 * and JSON OUTPUT).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "fidelity.h"
#include "model.h"
#include "replay.h"
#include "vmtutil.h"

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

/* Why --files=original took a scratch file, as a phrase. */
static const char *not_original_why(int why)
{
	switch (why) {
	case RP_ORIG_WRITABLE: return "a recorded mapping could write it";
	case RP_ORIG_RELATIVE: return "not an absolute path";
	case RP_ORIG_MISSING: return "cannot be opened";
	case RP_ORIG_TYPE: return "not a regular file";
	case RP_ORIG_PSEUDO: return "on a kernel file system";
	case RP_ORIG_NO_INODE: return "the trace gives no inode";
	case RP_ORIG_INODE: return "another file now (another inode)";
	case RP_ORIG_SIZE: return "another size now";
	}
	return "";
}

/* --files=original: the files that came from scratch files after all,
 * and why (a path from a trace is opened only if it is still the file). */
static void report_originals(FILE *f, const rp_trace *t)
{
	uint32_t orig = 0, scratch = 0, shown = 0;
	for (uint32_t i = 0; i < t->nfiles; i++) {
		orig += t->files[i].original;
		scratch += t->files[i].not_original != RP_ORIG_OK;
	}
	if (!orig && !scratch)
		return;
	fprintf(f, "--files=original: %u file%s mapped from the recorded path, %u from a scratch "
		   "file%s\n", orig, orig == 1 ? "" : "s", scratch, scratch ? ":" : "");
	for (uint32_t i = 0; i < t->nfiles && shown < 8; i++) {
		const struct rp_file *rf = &t->files[i];
		if (rf->not_original == RP_ORIG_OK)
			continue;
		fprintf(f, "  '%s': %s\n", rf->path ? rf->path : "", not_original_why(rf->not_original));
		shown++;
	}
	if (scratch > shown)
		fprintf(f, "  and %u more\n", scratch - shown);
}

int rp_report_text(FILE *f, const rp_trace *t, const struct rp_options *o,
		   const struct rp_run_result *runs, unsigned n, const struct rp_run_result *med,
		   int quiet)
{
	if (quiet) {
		rp_report_totals(f, NULL, med);
		if (rp_fidelity_report(f, t, o, med, 1) < 0)
			return -ENOMEM;
		return ferror(f) ? -EIO : 0;
	}
	fprintf(f, "replayed %" PRIu64 " ops of %" PRIu64 " events: %u thread%s, %u process%s;",
		t->nops, t->events, t->nthreads, t->nthreads == 1 ? "" : "s", t->nprocs,
		t->nprocs == 1 ? "" : "es");
	rp_report_options(f, t->opt.order, o);
	if (t->cut)
		fprintf(f, "cut short: replayed up to the last complete chunk (%" PRIu64
			   " events), threads alive there ended there; %s\n", t->events, t->cut);
	if (t->opt.files == RP_FILES_ORIGINAL)
		report_originals(f, t);
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
	if (med->setup_minor || med->setup_major || med->setup_vcsw || med->setup_ivcsw)
		fprintf(f, "(not in these figures: vmreplay's own set-up around the replay threads, forking"
			   " the replay processes, starting and waiting for threads, waiting for the"
			   " load, took %" PRIu64
			   " minor and %" PRIu64 " major faults, %" PRIu64 " voluntary and %" PRIu64
			   " involuntary context switches)\n",
			med->setup_minor, med->setup_major, med->setup_vcsw, med->setup_ivcsw);
	if (med->skipped || med->fallbacks || med->touch_faults || t->touch_unmapped_pages ||
	    t->lost_events)
		fprintf(f, "(skipped ops %" PRIu64 ", exact-placement fallbacks %" PRIu64
			   ", touches that trapped %" PRIu64 ", recorded touches outside mappings %" PRIu64
			   " pages, lost events %" PRIu64 ")\n",
			med->skipped, med->fallbacks, med->touch_faults, t->touch_unmapped_pages,
			t->lost_events);

	if (med->load_wait_ns)
		fprintf(f, "(the replay threads waited %.3f ms in all for the trace to load: the replay "
			   "ran late for its load)\n",
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
	if (rp_fidelity_report(f, t, o, med, 0) < 0)
		return -ENOMEM;
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
	vmt_buf_printf(b, "\"setup\":{\"minor_faults\":%" PRIu64 ",\"major_faults\":%" PRIu64
			  ",\"voluntary_cs\":%" PRIu64 ",\"involuntary_cs\":%" PRIu64 "},",
		       r->setup_minor, r->setup_major, r->setup_vcsw, r->setup_ivcsw);
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
				  ",\"busy_ns\":%" PRIu64,
			       i ? "," : "", t->thread, t->proc, t->copy, t->elems, t->minor_faults,
			       t->major_faults, t->voluntary_cs, t->involuntary_cs, t->user_ns, t->sys_ns,
			       t->wait_ns, t->waits, t->wakes, t->busy_ns);
		/* what it saw of itself (null: perf did not let it) */
		if (t->watched)
			vmt_buf_printf(b, ",\"call_off_cpu_ns\":%" PRIu64 ",\"call_vcsw\":%" PRIu64
					  ",\"call_ivcsw\":%" PRIu64 ",\"fault_samples\":%" PRIu64
					  ",\"fault_samples_lost\":%" PRIu64 "}",
				       t->call_off_cpu_ns, t->call_vcsw, t->call_ivcsw, t->fault_samples,
				       t->fault_samples_lost);
		else
			vmt_buf_puts(b, ",\"call_off_cpu_ns\":null,\"call_vcsw\":null,\"call_ivcsw\":null,"
					"\"fault_samples\":null,\"fault_samples_lost\":null}");
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
	/* and its mm settings, against the recording's (vmtrace diff's
	 * table names both) */
	char mm[512] = "";
	vmt_host_mm_words(mm, sizeof(mm));
	vmt_buf_puts(b, ",\"mm\":");
	vmt_buf_json_str(b, mm);
	vmt_buf_puts(b, ",\"recorded_mm\":");
	vmt_buf_json_str(b, t->rec_mm ? t->rec_mm : "");
	/* --files=original: the files mapped from scratch after all */
	if (t->opt.files == RP_FILES_ORIGINAL) {
		vmt_buf_puts(b, ",\"files_scratch\":[");
		for (uint32_t i = 0, k = 0; i < t->nfiles; i++) {
			const struct rp_file *rf = &t->files[i];
			if (rf->not_original == RP_ORIG_OK)
				continue;
			vmt_buf_puts(b, k++ ? ",{\"path\":" : "{\"path\":");
			vmt_buf_json_str(b, rf->path ? rf->path : "");
			vmt_buf_puts(b, ",\"why\":");
			vmt_buf_json_str(b, not_original_why(rf->not_original));
			vmt_buf_puts(b, "}");
		}
		vmt_buf_puts(b, "]");
	}
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
	int rc = vmt_buf_write(b, f);
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
	/* How faithful the median run was (vmreplay(1), FIDELITY). */
	vmt_buf_puts(&b, ",\"fidelity\":");
	if (rp_fidelity_append(&b, t, o, med) < 0) {
		vmt_buf_free(&b);
		return -ENOMEM;
	}
	vmt_buf_puts(&b, "}\n");
	return rp_json_emit(f, &b);
}
