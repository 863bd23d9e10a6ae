/*
 * stat.c - `vmtrace stat`: the summary of one trace (metrics of stats.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"
#include "stats.h"

static const char stat_usage[] =
	"usage: vmtrace stat [--json] TRACE\n"
	"\n"
	"Summarize TRACE: events, processes and threads, duration and rate;\n"
	"per operation the calls, errors and bytes (the length argument of\n"
	"successful calls); madvise by advice; the peak VMA count, mapped and\n"
	"locked bytes of any one process and when they were reached (from a\n"
	"model of each address space that splits and merges VMAs as Linux does);\n"
	"pages touched and page faults when recorded; lost events; per process\n"
	"and per thread counts; and the top 10 call sites when stacks were\n"
	"recorded (the first frame outside the C library, as function and\n"
	"module).\n"
	"\n"
	"  --json      one JSON object instead; its keys events, processes,\n"
	"              threads, duration_ns, ops.<op>.count|errors|bytes,\n"
	"              peak_vmas, peak_mapped_bytes and touched_pages keep their\n"
	"              meaning across versions\n"
	"  -h, --help  this help\n"
	"\n"
	"TRACE may be '-' for standard input.\n"
	"Exit status: 0, or 2 when the trace is unreadable, truncated or corrupt\n"
	"(the summary of the events before the damage is printed first).\n";

static void human_bytes(struct vmt_buf *b, uint64_t v)
{
	char h[32];
	vmt_buf_puts(b, vmt_format_bytes(h, sizeof(h), v));
}

static void secs(struct vmt_buf *b, uint64_t ns)
{
	vmt_buf_printf(b, "%" PRIu64 ".%06" PRIu64 " s", ns / 1000000000u, ns % 1000000000u / 1000u);
}

static double rate(const struct van_stats *s)
{
	return s->duration_ns ? (double)s->syscalls * 1e9 / (double)s->duration_ns : 0;
}

static void print_text(struct vmt_buf *b, const struct van_stats *s, const char *path,
		       const struct vmt_header *h)
{
	vmt_buf_printf(b, "trace        %s (%s, page size %u, kernel %s)\n", path, h->arch,
		       h->page_size, h->kernel);
	vmt_buf_puts(b, "command      ");
	vmt_buf_shell_words(b, h->argv, h->argc);
	vmt_buf_printf(b, "%s\n", h->argc ? "" : "?");
	vmt_buf_printf(b, "events       %" PRIu64 " (%" PRIu64 " syscalls, %" PRIu64 " failed)\n",
		       s->events, s->syscalls, s->errors);
	vmt_buf_printf(b, "processes    %u\nthreads      %u\nduration     ", s->processes, s->threads);
	secs(b, s->duration_ns);
	vmt_buf_printf(b, " (%.0f syscalls/s)\n", rate(s));
	vmt_buf_printf(b, "peak VMAs    %" PRIu64 " at ", s->peak_vmas);
	secs(b, s->peak_vmas_ns);
	vmt_buf_puts(b, "\npeak mapped  ");
	human_bytes(b, s->peak_mapped_bytes);
	vmt_buf_puts(b, " at ");
	secs(b, s->peak_mapped_ns);
	vmt_buf_puts(b, "\npeak locked  ");
	human_bytes(b, s->peak_locked_bytes);
	if (s->peak_locked_bytes) {
		vmt_buf_puts(b, " at ");
		secs(b, s->peak_locked_ns);
	}
	vmt_buf_printf(b, "\ntouched      %" PRIu64 " pages (%" PRIu64 " anonymous or written, %" PRIu64
			  " file; %" PRIu64 " known written)%s\n",
		       s->touched_pages, s->touched_pages - s->touched_file_pages,
		       s->touched_file_pages, s->touched_written_pages,
		       s->by_kind[VMT_EV_TOUCH] ? "" : ", none recorded");
	if (s->by_kind[VMT_EV_FAULT] || s->lost_faults)
		vmt_buf_printf(b, "faults       %" PRIu64 " (read %" PRIu64 ", write %" PRIu64
				  ", exec %" PRIu64 ", other %" PRIu64 ")\n",
			       s->faults, s->faults_read, s->faults_write, s->faults_exec,
			       s->faults_other);
	else
		vmt_buf_puts(b, "faults       not recorded\n");
	vmt_buf_printf(b, "lost         %" PRIu64 " faults, %" PRIu64 " other events\n",
		       s->lost_faults, s->lost_events);
	if (s->model_inexact)
		vmt_buf_printf(b, "model        %" PRIu64 " events only approximated (see vmtrace(1))\n",
			       s->model_inexact);

	vmt_buf_printf(b, "\n%-18s %10s %8s %16s %12s\n", "op", "calls", "errors", "bytes", "time");
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		const struct van_op_stats *o = &s->ops[op];
		if (!o->count)
			continue;
		vmt_buf_printf(b, "%-18s %10" PRIu64 " %8" PRIu64 " %16" PRIu64 " %9.3f ms\n",
			       vmt_op_name(op), o->count, o->errors, o->bytes, (double)o->time_ns / 1e6);
	}
	if (s->nadvice) {
		vmt_buf_printf(b, "\n%-22s %6s %8s %16s\n", "madvise advice", "calls", "errors", "bytes");
		for (uint32_t i = 0; i < s->nadvice; i++) {
			char nb[32];
			const struct van_advice_stats *a = &s->advice[i];
			vmt_buf_printf(b, "%-22s %6" PRIu64 " %8" PRIu64 " %16" PRIu64 "\n",
				       van_advice_name(a->advice, nb, sizeof(nb)), a->s.count,
				       a->s.errors, a->s.bytes);
		}
	}
	vmt_buf_printf(b, "\n%-5s %8s %10s %8s %6s %12s  %s\n", "proc", "pid", "syscalls", "errors",
		       "VMAs", "peak mapped", "program");
	for (uint32_t p = 0; p < s->nprocs; p++) {
		const struct van_proc_stats *ps = &s->procs[p];
		if (!ps->seen)
			continue;
		struct vmt_buf hb = { 0 };
		human_bytes(&hb, ps->peak_mapped_bytes);
		vmt_buf_printf(b, "p%-4u %8d %10" PRIu64 " %8" PRIu64 " %6" PRIu64 " %12s  %s\n", p,
			       ps->pid, ps->ops, ps->errors, ps->peak_vmas, hb.len ? hb.data : "",
			       ps->path);
		vmt_buf_free(&hb);
	}
	vmt_buf_printf(b, "\n%-7s %8s %5s %10s %8s\n", "thread", "tid", "proc", "syscalls", "errors");
	for (uint32_t t = 0; t < s->nthreads; t++) {
		const struct van_thread_stats *ts = &s->thread[t];
		if (ts->seen)
			vmt_buf_printf(b, "t%-6u %8d %5s%-1u %9" PRIu64 " %8" PRIu64 "\n", t, ts->tid,
				       "p", ts->proc, ts->ops, ts->errors);
	}
	if (s->has_stacks) {
		/* The site last: C++ names are long, and the columns before
		 * it stay aligned whatever their length. */
		struct vmt_buf ops[10] = {{0}};
		int w = 3, n = s->nsites < 10 ? (int)s->nsites : 10;
		for (int i = 0; i < n; i++) {
			const struct van_site *si = &s->sites[i];
			for (uint32_t op = 1; op < VMT_OP__COUNT; op++)
				if (si->op_count[op])
					vmt_buf_printf(&ops[i], "%s%s:%" PRIu64, ops[i].len ? " " : "",
						       vmt_op_name(op), si->op_count[op]);
			if (ops[i].len > (size_t)w)
				w = (int)ops[i].len;
		}
		vmt_buf_printf(b, "\ntop call sites\n%10s %8s  %-*s  %s\n", "calls", "errors", w, "ops",
			       "site");
		for (int i = 0; i < n; i++) {
			const struct van_site *si = &s->sites[i];
			vmt_buf_printf(b, "%10" PRIu64 " %8" PRIu64 "  %-*s  %s\n", si->count, si->errors, w,
				       ops[i].len ? ops[i].data : "", si->name);
			vmt_buf_free(&ops[i]);
		}
	}
}

static void json_ops(struct vmt_buf *b, const struct van_op_stats *o, int time)
{
	vmt_buf_printf(b, "{\"count\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"bytes\":%" PRIu64, o->count,
		       o->errors, o->bytes);
	if (time)
		vmt_buf_printf(b, ",\"time_ns\":%" PRIu64, o->time_ns);
	vmt_buf_puts(b, "}");
}

static void print_json(struct vmt_buf *b, const struct van_stats *s, const char *path, int damaged)
{
	vmt_buf_puts(b, "{\"trace\":");
	vmt_buf_json_str(b, path);
	vmt_buf_printf(b, ",\"complete\":%s,\"events\":%" PRIu64 ",\"processes\":%u,\"threads\":%u"
			  ",\"duration_ns\":%" PRIu64 ",\"syscalls\":%" PRIu64 ",\"errors\":%" PRIu64
			  ",\"syscalls_per_sec\":%.1f",
		       damaged ? "false" : "true", s->events, s->processes, s->threads, s->duration_ns,
		       s->syscalls, s->errors, rate(s));
	vmt_buf_puts(b, ",\"ops\":{");
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		vmt_buf_printf(b, "%s\"%s\":", op > 1 ? "," : "", vmt_op_name(op));
		json_ops(b, &s->ops[op], 1);
	}
	vmt_buf_puts(b, "},\"madvise\":{");
	for (uint32_t i = 0; i < s->nadvice; i++) {
		char nb[32];
		vmt_buf_printf(b, "%s\"%s\":", i ? "," : "",
			       van_advice_name(s->advice[i].advice, nb, sizeof(nb)));
		json_ops(b, &s->advice[i].s, 0);
	}
	vmt_buf_printf(b, "},\"peak_vmas\":%" PRIu64 ",\"peak_vmas_at_ns\":%" PRIu64
			  ",\"peak_mapped_bytes\":%" PRIu64 ",\"peak_mapped_at_ns\":%" PRIu64
			  ",\"peak_locked_bytes\":%" PRIu64 ",\"peak_locked_at_ns\":%" PRIu64
			  ",\"touched_pages\":%" PRIu64 ",\"touched_anon_pages\":%" PRIu64
			  ",\"touched_file_pages\":%" PRIu64 ",\"touched_written_pages\":%" PRIu64,
		       s->peak_vmas, s->peak_vmas_ns, s->peak_mapped_bytes, s->peak_mapped_ns,
		       s->peak_locked_bytes, s->peak_locked_ns, s->touched_pages,
		       s->touched_pages - s->touched_file_pages, s->touched_file_pages,
		       s->touched_written_pages);
	vmt_buf_printf(b, ",\"faults_recorded\":%s,\"faults\":{\"total\":%" PRIu64 ",\"read\":%" PRIu64
			  ",\"write\":%" PRIu64 ",\"exec\":%" PRIu64 ",\"other\":%" PRIu64 "}"
			  ",\"lost\":{\"faults\":%" PRIu64 ",\"events\":%" PRIu64 "}"
			  ",\"model_inexact\":%" PRIu64,
		       s->by_kind[VMT_EV_FAULT] || s->lost_faults ? "true" : "false", s->faults,
		       s->faults_read, s->faults_write, s->faults_exec, s->faults_other, s->lost_faults,
		       s->lost_events, s->model_inexact);
	vmt_buf_puts(b, ",\"kinds\":{");
	for (uint32_t k = 1; k < VMT_EV__COUNT; k++)
		vmt_buf_printf(b, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", vmt_kind_name(k), s->by_kind[k]);
	vmt_buf_puts(b, "},\"per_process\":[");
	int first = 1;
	for (uint32_t p = 0; p < s->nprocs; p++) {
		const struct van_proc_stats *ps = &s->procs[p];
		if (!ps->seen)
			continue;
		vmt_buf_printf(b, "%s{\"proc\":%u,\"pid\":%d,\"parent\":", first ? "" : ",", p, ps->pid);
		if (ps->parent == VMT_NONE)
			vmt_buf_puts(b, "null");
		else
			vmt_buf_printf(b, "%u", ps->parent);
		vmt_buf_puts(b, ",\"program\":");
		vmt_buf_json_str(b, ps->path);
		vmt_buf_printf(b, ",\"syscalls\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"peak_vmas\":%" PRIu64
				  ",\"peak_mapped_bytes\":%" PRIu64 ",\"peak_locked_bytes\":%" PRIu64
				  ",\"exit_status\":",
			       ps->ops, ps->errors, ps->peak_vmas, ps->peak_mapped_bytes,
			       ps->peak_locked_bytes);
		if (ps->exited)
			vmt_buf_printf(b, "%d}", ps->exit_status);
		else
			vmt_buf_puts(b, "null}");
		first = 0;
	}
	vmt_buf_puts(b, "],\"per_thread\":[");
	first = 1;
	for (uint32_t t = 0; t < s->nthreads; t++) {
		const struct van_thread_stats *ts = &s->thread[t];
		if (!ts->seen)
			continue;
		vmt_buf_printf(b, "%s{\"thread\":%u,\"tid\":%d,\"proc\":%u,\"syscalls\":%" PRIu64
				  ",\"errors\":%" PRIu64 "}",
			       first ? "" : ",", t, ts->tid, ts->proc, ts->ops, ts->errors);
		first = 0;
	}
	vmt_buf_printf(b, "],\"stacks_recorded\":%s,\"call_sites\":[", s->has_stacks ? "true" : "false");
	for (uint32_t i = 0; i < s->nsites && i < 10; i++) {
		const struct van_site *si = &s->sites[i];
		vmt_buf_puts(b, i ? ",{\"site\":" : "{\"site\":");
		vmt_buf_json_str(b, si->name);
		vmt_buf_printf(b, ",\"count\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"ops\":{", si->count,
			       si->errors);
		int f = 1;
		for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
			if (!si->op_count[op])
				continue;
			vmt_buf_printf(b, "%s\"%s\":%" PRIu64, f ? "" : ",", vmt_op_name(op), si->op_count[op]);
			f = 0;
		}
		vmt_buf_puts(b, "}}");
	}
	vmt_buf_puts(b, "]}\n");
}

static int run_stat(int argc, char **argv)
{
	int json, usage_rc;
	const char *path = vtc_args_json_trace("stat", stat_usage, argc, argv, &json, &usage_rc);
	if (!path)
		return usage_rc;

	struct vtc_input in;
	if (vtc_input_open(&in, path))
		return 2;
	struct van_stats s;
	int rc = van_stats_read(&s, in.r);
	if (rc == -ENOMEM) {
		fprintf(stderr, "vmtrace: '%s': out of memory\n", in.path);
		van_stats_free(&s);
		vtc_input_close(&in);
		return 2;
	}
	struct vmt_buf b = { 0 };
	if (json)
		print_json(&b, &s, in.path, rc < 0);
	else
		print_text(&b, &s, in.path, vmt_reader_header(in.r));
	int status = vtc_put_output("stat", &b, stdout) == -ENOMEM ? 2 : 0;
	vmt_buf_free(&b);
	if (rc < 0) {
		fflush(stdout);
		vtc_input_report(&in);
		status = 2;
	}
	van_stats_free(&s);
	vtc_input_close(&in);
	return status;
}

const struct vtc_cmd vtc_cmd_stat = {
	"stat", run_stat, "summarize a trace: op counts, peaks, touches, call sites", stat_usage,
};
