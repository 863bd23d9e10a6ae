/*
 * lint.h - the anti-pattern detectors behind `vmtrace lint`.
 *
 * Feed every event of a trace, in order, to van_lint_event(), then call
 * van_lint_finish(); the findings are then available by index.  Each
 * finding names the pattern (one of those vmtrace(1) lists under lint), the
 * numbers that show it, one example event with its call site, and the
 * change or vmreplay rewrite rule that addresses it.
 *
 * Library code: returns 0 or -errno, never prints.
 */
#ifndef VAN_LINT_H
#define VAN_LINT_H

#include <stdint.h>
#include "vmtrace.h"

/* Finding ids (stable: scripts match them). */
#define VAN_LINT_PROT_NONE_FREE "prot-none-free"
#define VAN_LINT_MADV_FREE "madv-free-volume"
#define VAN_LINT_FRAGMENTATION "vma-fragmentation"
#define VAN_LINT_LOCKED_UNTOUCHED "locked-untouched"
#define VAN_LINT_MLOCK_PER_PAGE "mlock-per-page"
#define VAN_LINT_READ_THEN_WRITE "read-then-write"
#define VAN_LINT_DISCARD_UNMAP "discard-before-unmap"
#define VAN_LINT_FREE_DONTNEED "free-before-dontneed"
#define VAN_LINT_DISCARD_LOCKED "discard-locked"
#define VAN_LINT_FILE_MAP_CHURN "file-map-churn"

/* One number of a finding's evidence. */
struct van_lint_num {
	const char *key;  /* JSON key, e.g. "cycles" */
	uint64_t value;
	const char *unit; /* "bytes", "pages", "calls", "ns", "vmas", ... */
	const char *what; /* short description for text output */
};

/* A share of the evidence that belongs to one process or thread. */
struct van_lint_part {
	uint32_t proc;
	uint32_t thread; /* VMT_NONE when the part is a whole process */
	uint64_t value;
};

#define VAN_LINT_MAX_NUMS 10
#define VAN_LINT_MAX_PARTS 16 /* the largest parts; the rest are summed */
#define VAN_LINT_MAX_FRAMES 4 /* call-site frames shown */
#define VAN_LINT_MAX_SITES 4  /* call sites listed */

/* Where the calls of a finding were made: "function (module)" as the
 * innermost frame past the C library's wrapper of the call names it
 * (demangled), "module+0xOFFSET" without a function name, or an address. */
struct van_lint_site {
	char site[200];
	const char *role; /* what the calls there did: "uncommits", ... */
	uint64_t calls;
};

struct van_lint_finding {
	const char *id;	   /* VAN_LINT_* */
	const char *title; /* one line: what the pattern is */
	const char *why;   /* what it costs, from the seed post */
	const char *fix;   /* the change that addresses it */
	const char *rule;  /* the vmreplay rewrite rule, or NULL */
	char summary[320]; /* the numbers in one sentence */
	uint32_t nnums;
	struct van_lint_num nums[VAN_LINT_MAX_NUMS];
	const char *part_unit; /* what parts[].value counts */
	uint32_t nparts;
	struct van_lint_part parts[VAN_LINT_MAX_PARTS];
	uint32_t parts_more;	  /* further processes/threads, not listed */
	uint64_t parts_more_value; /* their sum */
	/* The example event: its ordinal in the trace, its rendering (as
	 * vmt_render_text), who issued it and its call site when the trace
	 * has stacks (innermost first, as vmt_symtab_render_ip). */
	uint64_t example_index;
	uint32_t example_proc, example_thread;
	char example[256];
	uint32_t nframes;
	char frames[VAN_LINT_MAX_FRAMES][160];
	/* The call sites of the pattern's calls, most calls first (traces
	 * with stacks only). */
	uint32_t nsites;
	struct van_lint_site sites[VAN_LINT_MAX_SITES];
	/* "", or what else to know about the finding or its rule. */
	char note[400];
};

typedef struct van_lint van_lint;

/* A new linter for a trace with header h (page size, recording options;
 * the header must stay valid until van_lint_finish).  NULL on allocation
 * failure. */
van_lint *van_lint_new(const struct vmt_header *h);

/* Take in the event with ordinal `index`.  Returns 0 or -ENOMEM. */
int van_lint_event(van_lint *l, uint64_t index, const struct vmt_event *ev);

/* Decide the findings (call once, after the last event).  Returns the
 * number of findings, or -ENOMEM. */
int van_lint_finish(van_lint *l);

/* Finding i (< the count van_lint_finish returned), in a fixed order. */
const struct van_lint_finding *van_lint_get(const van_lint *l, uint32_t i);

/* 1 if the trace had FAULT events (the read-then-write check needs them);
 * the number of events the address-space model could only approximate. */
int van_lint_had_faults(const van_lint *l);

/* Why the finding id (VAN_LINT_*) could not be looked for in this trace
 * (after van_lint_finish), as a phrase; NULL when it was.  Read-then-write
 * needs FAULT events, and a recording kernel that maps the zero page;
 * free-before-dontneed resident scans (TOUCH events) of the ranges that
 * MADV_FREE gave, where there were enough of them to be a finding. */
const char *van_lint_unchecked(const van_lint *l, const char *id);
uint64_t van_lint_model_inexact(const van_lint *l);

void van_lint_free(van_lint *l);


#endif
