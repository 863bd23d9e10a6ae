/*
 * lint.c - `vmtrace lint`: the patterns of the seed posts, found in a trace,
 * with evidence and the change that addresses each (detectors: lintcheck.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"
#include "lint.h"

static const char lint_usage[] =
	"usage: vmtrace lint [--json] TRACE\n"
	"\n"
	"Look for the memory-management patterns that the seed posts of vmrec\n"
	"show to be slow, and print each one found with its evidence (counts, one\n"
	"example event and its call site when the trace has stacks), what it costs\n"
	"and the change, or vmreplay rewrite rule, that addresses it:\n"
	"\n"
	"  prot-none-free     memory uncommitted by mmap(PROT_NONE, MAP_FIXED) and\n"
	"                     committed again, again and again (rule prot-none-free)\n"
	"  madv-free-volume   much memory given back with MADV_FREE, the same\n"
	"                     ranges again and again (rule free-to-dontneed)\n"
	"  vma-fragmentation  many small adjacent mappings that did not merge, and\n"
	"                     the peak VMA count\n"
	"  locked-untouched   large ranges locked (and so populated) at once whose\n"
	"                     pages are mostly never used (rule mlock-onfault)\n"
	"  mlock-per-page     mlock called page by page (rule mlock-onfault)\n"
	"  read-then-write    fresh anonymous pages read, then written: two faults\n"
	"                     per page (rule populate); needs a trace recorded with\n"
	"                     vmrec --touch=faults\n"
	"  discard-before-unmap  madvise or mprotect(PROT_NONE) of a range right\n"
	"                     before its munmap (rule discard-before-unmap)\n"
	"  free-before-dontneed  MADV_FREE of pages a later MADV_DONTNEED gives back\n"
	"                     before reclaim took any (rule free-before-dontneed)\n"
	"  discard-locked     madvise(MADV_DONTNEED/FREE) failing on locked memory\n"
	"  file-map-churn     small files mapped and unmapped again, one by one\n"
	"\n"
	"  --json      one JSON object: trace, findings (id, title, summary,\n"
	"              evidence, parts, example, call_sites, note, why, fix,\n"
	"              rule), notes\n"
	"  -h, --help  this help\n"
	"\n"
	"TRACE may be '-' for standard input.\n"
	"Exit status: 1 when there are findings, 0 when there are none, 2 when the\n"
	"trace is unreadable, truncated or corrupt.\n";

/* Print text wrapped at 78 columns, continuation lines indented by `ind`. */
static void wrap(const char *label, const char *text, int ind)
{
	int col = printf("  %-*s ", ind - 3, label);
	const char *p = text;
	while (*p) {
		const char *sp = strchr(p, ' ');
		int w = sp ? (int)(sp - p) : (int)strlen(p);
		if (col > ind && col + 1 + w > 78) {
			printf("\n%*s", ind, "");
			col = ind;
		} else if (col > ind) {
			putchar(' ');
			col++;
		}
		col += printf("%.*s", w, p);
		p += w;
		while (*p == ' ')
			p++;
	}
	putchar('\n');
}

/* A number for people: bytes in KiB/MiB/GiB, times in ms. */
static void human(char *out, size_t n, uint64_t v, const char *unit)
{
	if (!strcmp(unit, "bytes") && v >= 1024) {
		vmt_format_bytes(out, n, v);
	} else if (!strcmp(unit, "ns")) {
		snprintf(out, n, "%.3f ms", (double)v / 1e6);
	} else {
		snprintf(out, n, "%" PRIu64, v);
	}
}

static void who(struct vmt_buf *b, uint32_t proc, uint32_t thread)
{
	if (thread == VMT_NONE)
		vmt_buf_printf(b, "p%u", proc);
	else
		vmt_buf_printf(b, "p%u t%u", proc, thread);
}

static void print_text(const char *path, const van_lint *l, int n, const char **notes, int nnotes)
{
	struct vmt_buf b = { 0 };
	printf("%s: %d finding%s\n", path, n, n == 1 ? "" : "s");
	for (int i = 0; i < n; i++) {
		const struct van_lint_finding *f = van_lint_get(l, (uint32_t)i);
		printf("\n[%s] %s\n", f->id, f->title);
		wrap("evidence:", f->summary, 14);
		for (uint32_t k = 0; k < f->nnums; k++) {
			char v[32];
			human(v, sizeof(v), f->nums[k].value, f->nums[k].unit);
			printf("%14s%-12s %s\n", "", v, f->nums[k].what);
		}
		if (f->nparts) {
			vmt_buf_reset(&b);
			for (uint32_t k = 0; k < f->nparts; k++) {
				if (k)
					vmt_buf_puts(&b, ", ");
				char v[32];
				human(v, sizeof(v), f->parts[k].value, f->part_unit);
				who(&b, f->parts[k].proc, f->parts[k].thread);
				vmt_buf_printf(&b, ": %s", v);
			}
			if (f->parts_more) {
				char v[32];
				human(v, sizeof(v), f->parts_more_value, f->part_unit);
				vmt_buf_printf(&b, ", %u more: %s", f->parts_more, v);
			}
			if (strcmp(f->part_unit, "bytes"))
				vmt_buf_printf(&b, " (%s)", f->part_unit);
			wrap(f->parts[0].thread == VMT_NONE ? "by process:" : "by thread:",
			     b.data, 14);
		}
		if (f->example[0]) {
			printf("  %-11s event %" PRIu64 " [p%u t%u] %s\n", "example:",
			       f->example_index, f->example_proc, f->example_thread, f->example);
			for (uint32_t k = 0; k < f->nframes; k++)
				printf("  %-11s #%u %s\n", k ? "" : "stack:", k, f->frames[k]);
		}
		for (uint32_t k = 0; k < f->nsites; k++)
			printf("  %-11s %s: %" PRIu64 " %s\n", k ? "" : "call sites:", f->sites[k].site,
			       f->sites[k].calls, f->sites[k].role);
		if (f->note[0])
			wrap("note:", f->note, 14);
		wrap("cost:", f->why, 14);
		wrap("fix:", f->fix, 14);
		if (f->rule)
			printf("  %-11s %s\n", "rule:", f->rule);
	}
	for (int i = 0; i < nnotes; i++)
		printf("%snote: %s\n", i ? "" : "\n", notes[i]);
	vmt_buf_free(&b);
}

static int print_json(const char *path, const van_lint *l, int n, const char **notes, int nnotes)
{
	struct vmt_buf b = { 0 };
	vmt_buf_puts(&b, "{\"trace\":");
	vmt_buf_json_str(&b, path);
	vmt_buf_printf(&b, ",\"count\":%d,\"findings\":[", n);
	for (int i = 0; i < n; i++) {
		const struct van_lint_finding *f = van_lint_get(l, (uint32_t)i);
		vmt_buf_puts(&b, i ? ",{\"id\":" : "{\"id\":");
		vmt_buf_json_str(&b, f->id);
		vmt_buf_puts(&b, ",\"title\":");
		vmt_buf_json_str(&b, f->title);
		vmt_buf_puts(&b, ",\"summary\":");
		vmt_buf_json_str(&b, f->summary);
		vmt_buf_puts(&b, ",\"evidence\":{");
		for (uint32_t k = 0; k < f->nnums; k++) {
			if (k)
				vmt_buf_puts(&b, ",");
			vmt_buf_json_str(&b, f->nums[k].key);
			vmt_buf_printf(&b, ":%" PRIu64, f->nums[k].value);
		}
		vmt_buf_puts(&b, "},\"parts\":[");
		for (uint32_t k = 0; k < f->nparts; k++) {
			vmt_buf_printf(&b, "%s{\"proc\":%u", k ? "," : "", f->parts[k].proc);
			if (f->parts[k].thread != VMT_NONE)
				vmt_buf_printf(&b, ",\"thread\":%u", f->parts[k].thread);
			vmt_buf_puts(&b, ",");
			vmt_buf_json_str(&b, f->part_unit);
			vmt_buf_printf(&b, ":%" PRIu64 "}", f->parts[k].value);
		}
		vmt_buf_printf(&b, "],\"parts_more\":%u", f->parts_more);
		if (f->example[0]) {
			vmt_buf_printf(&b, ",\"example\":{\"index\":%" PRIu64 ",\"proc\":%u,\"thread\":%u,\"text\":",
				       f->example_index, f->example_proc, f->example_thread);
			vmt_buf_json_str(&b, f->example);
			vmt_buf_puts(&b, ",\"stack\":[");
			for (uint32_t k = 0; k < f->nframes; k++) {
				if (k)
					vmt_buf_puts(&b, ",");
				vmt_buf_json_str(&b, f->frames[k]);
			}
			vmt_buf_puts(&b, "]}");
		}
		vmt_buf_puts(&b, ",\"call_sites\":[");
		for (uint32_t k = 0; k < f->nsites; k++) {
			vmt_buf_puts(&b, k ? ",{\"site\":" : "{\"site\":");
			vmt_buf_json_str(&b, f->sites[k].site);
			vmt_buf_puts(&b, ",\"role\":");
			vmt_buf_json_str(&b, f->sites[k].role);
			vmt_buf_printf(&b, ",\"calls\":%" PRIu64 "}", f->sites[k].calls);
		}
		vmt_buf_puts(&b, "],\"note\":");
		if (f->note[0])
			vmt_buf_json_str(&b, f->note);
		else
			vmt_buf_puts(&b, "null");
		vmt_buf_puts(&b, ",\"why\":");
		vmt_buf_json_str(&b, f->why);
		vmt_buf_puts(&b, ",\"fix\":");
		vmt_buf_json_str(&b, f->fix);
		vmt_buf_puts(&b, ",\"rule\":");
		if (f->rule)
			vmt_buf_json_str(&b, f->rule);
		else
			vmt_buf_puts(&b, "null");
		vmt_buf_puts(&b, "}");
	}
	vmt_buf_printf(&b, "],\"checked_read_then_write\":%s,\"checked_free_before_dontneed\":%s,"
			   "\"notes\":[",
		       van_lint_unchecked(l, VAN_LINT_READ_THEN_WRITE) ? "false" : "true",
		       van_lint_unchecked(l, VAN_LINT_FREE_DONTNEED) ? "false" : "true");
	for (int i = 0; i < nnotes; i++) {
		if (i)
			vmt_buf_puts(&b, ",");
		vmt_buf_json_str(&b, notes[i]);
	}
	vmt_buf_puts(&b, "]}\n");
	int e = vtc_put_output("lint", &b, stdout);
	vmt_buf_free(&b);
	return e;
}

static int run_lint(int argc, char **argv)
{
	int json, usage_rc;
	const char *path = vtc_args_json_trace("lint", lint_usage, argc, argv, &json, &usage_rc);
	if (!path)
		return usage_rc;

	struct vtc_input in;
	if (vtc_input_open(&in, path))
		return 2;
	van_lint *l = van_lint_new(vmt_reader_header(in.r));
	if (!l) {
		fprintf(stderr, "vmtrace lint: out of memory\n");
		vtc_input_close(&in);
		return 2;
	}
	const struct vmt_event *ev;
	int rc, err = 0;
	uint64_t index = 0;
	while ((rc = vmt_reader_next_ref(in.r, &ev)) == 1) {
		if ((err = van_lint_event(l, index++, ev)))
			break;
	}
	int status = 2, n = 0;
	if (rc < 0) {
		vtc_input_report(&in);
	} else if (err || (n = van_lint_finish(l)) < 0) {
		fprintf(stderr, "vmtrace lint: '%s': %s\n", in.path, vmt_strerror(err ? err : n));
	} else {
		/* the findings a trace may lack the evidence for */
		static const char *const maybe[] = { VAN_LINT_READ_THEN_WRITE, VAN_LINT_FREE_DONTNEED };
		const char *notes[3];
		int nnotes = 0;
		char inexact[160], unchecked[2][320];
		for (int i = 0; i < 2; i++) {
			const char *why = van_lint_unchecked(l, maybe[i]);
			if (why) {
				snprintf(unchecked[i], sizeof(unchecked[i]), "%s not checked: %s", maybe[i], why);
				notes[nnotes++] = unchecked[i];
			}
		}
		if (van_lint_model_inexact(l)) {
			snprintf(inexact, sizeof(inexact),
				 "the address-space model could only approximate %" PRIu64
				 " events (VMA counts may be off)", van_lint_model_inexact(l));
			notes[nnotes++] = inexact;
		}
		status = n > 0;
		if (json && print_json(in.path, l, n, notes, nnotes) == -ENOMEM)
			status = 2;
		else if (!json)
			print_text(in.path, l, n, notes, nnotes);
	}
	van_lint_free(l);
	vtc_input_close(&in);
	return status;
}

const struct vtc_cmd vtc_cmd_lint = {
	"lint", run_lint, "find the slow memory-management patterns of the seed posts",
	lint_usage,
};
