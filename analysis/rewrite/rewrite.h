/*
 * rewrite.h - the rule engine behind `vmtrace rewrite` and `vmreplay
 * --rewrite/--compare`: a pass over a trace's event stream that replaces
 * outdated memory-management patterns by equivalent modern ones, so that
 * the same recording can be replayed both ways and compared.
 *
 * Rules are named and composable: "prot-none-free,populate" runs the
 * stream through prot-none-free, then its output through populate.  Each
 * rule counts how often it applied.  The output is a valid trace: events
 * keep their recorded order (a rule may hold events back while it looks
 * ahead, but never reorders them), and every syscall a rule produced or
 * changed carries VMT_SC_REWRITTEN, with the result the rewritten call is
 * expected to return, so a replayer does not count it as a divergence.
 *
 * Rules (see rewrite.c and the rules_*.c files for when each must not
 * apply):
 *   prot-none-free    an uncommit by mmap(PROT_NONE, MAP_FIXED) of
 *                     committed memory -> madvise(MADV_DONTNEED), the range
 *                     keeps its protection, later commits of it (mprotect,
 *                     mmap(MAP_FIXED)) lose their part over it
 *   dontneed-to-free  madvise(MADV_DONTNEED) -> madvise(MADV_FREE) on
 *                     private anonymous ranges
 *   free-to-dontneed  madvise(MADV_FREE) -> madvise(MADV_DONTNEED)
 *   mlock-onfault     mlock -> mlock2(MLOCK_ONFAULT), mlockall -> with
 *                     MCL_ONFAULT, mmap(MAP_LOCKED) -> mmap + mlock2(ONFAULT)
 *   populate          anonymous private mmap whose pages are all touched
 *                     before it is unmapped or discarded -> MAP_POPULATE
 *   discard-before-unmap
 *                     madvise(MADV_DONTNEED/FREE) or mprotect(PROT_NONE)
 *                     of a range the same thread unmaps next -> dropped
 *   free-before-dontneed
 *                     madvise(MADV_FREE) of pages a later MADV_DONTNEED
 *                     gives back while all are still present -> dropped
 * (the last two named after the lint findings they rewrite; their former
 * names, unmap-only and dontneed-only, are still taken)
 *
 * Flag and advice values are the generic Linux ABI ones (x86-64, arm64,
 * riscv64), which is what the trace format's name tables use too.
 *
 * Conventions as in vmtrace.h: 0 or a negative errno / VMT_E_* code, no
 * printing, opaque handles, *_free() accepts NULL.
 */
#ifndef VAN_REWRITE_H
#define VAN_REWRITE_H

#include <stddef.h>
#include <stdint.h>
#include "vmtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The rule list of a bare --rewrite. */
#define VAN_REWRITE_DEFAULT "prot-none-free"

/* Longest rule list van_rewrite_new() accepts (bytes). */
#define VAN_REWRITE_MAX_LIST 256

struct van_rewrite_rule_info {
	const char *name;    /* e.g. "prot-none-free" */
	const char *summary; /* one line for --help, without newline */
};

/* Every rule this library knows, in a fixed order (for --help and man
 * pages); *n is set to their number. */
const struct van_rewrite_rule_info *van_rewrite_rules(size_t *n);

typedef struct van_rewrite van_rewrite;

/* A rewriter for the comma-separated rule list `rules` (NULL or "" means
 * VAN_REWRITE_DEFAULT), applied in the order given.  On failure returns
 * NULL and writes one lowercase line to err[0..errlen) (if err is not
 * NULL): an unknown rule ("unknown rewrite rule 'x' (rules: a, b, ...)"),
 * a rule named twice, an empty name, two rules that undo each other
 * (dontneed-to-free with free-to-dontneed), or out of memory. */
van_rewrite *van_rewrite_new(const char *rules, char *err, size_t errlen);

/* 0 if `rules` is a list van_rewrite_new() accepts, else -EINVAL with the
 * same message (for option parsing before a trace is opened). */
int van_rewrite_check(const char *rules, char *err, size_t errlen);

/* The rule list in canonical form ("prot-none-free,populate"), valid for
 * the rewriter's lifetime. */
const char *van_rewrite_list(const van_rewrite *rw);

/* Give the rewriter the header of the trace it will see (page size).
 * Optional (page size 4096 without it); must come before the first push.
 * Returns 0, -EINVAL for a page size that is not a power of two, or
 * VMT_E_STATE after a push. */
int van_rewrite_start(van_rewrite *rw, const struct vmt_header *h);

/* Receives the rewritten events, in order.  The event and what it points
 * to are valid only during the call.  Returning a negative value stops the
 * rewrite: push/finish return that value, and every later call returns
 * it again. */
typedef int (*van_rewrite_emit_fn)(void *arg, const struct vmt_event *ev);

/* Feed the next event of the input trace.  Zero or more rewritten events
 * are passed to emit(arg, ...) before it returns; events a rule holds back
 * (deep copies: the caller's event may be reused after the call) come out
 * in a later push or in finish.  Returns 0, the emit callback's negative
 * value, -ENOMEM, or VMT_E_STATE after finish. */
int van_rewrite_push(van_rewrite *rw, const struct vmt_event *ev,
		     van_rewrite_emit_fn emit, void *arg);

/* End of input: every rule decides on what it holds (as it would at the
 * end of the trace) and the remaining events are emitted.  No push may
 * follow.  Returns 0 or a negative value as push does. */
int van_rewrite_finish(van_rewrite *rw, van_rewrite_emit_fn emit, void *arg);

#define VAN_REWRITE_MAX_SITES 4
#define VAN_REWRITE_MAX_DETAILS 4

/* A call site (see van_rewrite_count.sites): "function (module)", as
 * the innermost frame past the C library's wrapper of the call names it
 * (demangled), "module+0xOFFSET" without a function name, or an address. */
struct van_rewrite_site {
	char site[200];
	uint64_t calls;
};

struct van_rewrite_count {
	const char *name;
	uint64_t applied; /* rewrites done (one per rewritten call or
			     pattern, e.g. one per mmap(PROT_NONE) freed with
			     madvise instead) */
	uint64_t removed; /* calls of the input the rule left out */
	/* After finish: where the calls the rule rewrote were made (from
	 * the trace's stacks), most applications first, and how many
	 * applications were at other sites or had no stack. */
	uint32_t nsites;
	struct van_rewrite_site sites[VAN_REWRITE_MAX_SITES];
	uint64_t sites_rest;
	/* After finish: further numbers of what the rule did ("re-commits
	 * cut to the memory they commit": 6). */
	uint32_t ndetails;
	struct {
		const char *what;
		uint64_t n;
	} details[VAN_REWRITE_MAX_DETAILS];
	/* After finish: NULL, or one sentence the reader of the rewritten
	 * trace should know (where it may not behave like the recording). */
	const char *note;
};

/* The calls of one side of a rewrite (input or output). */
struct van_rewrite_calls {
	uint64_t calls;	       /* syscalls */
	uint64_t write_locked; /* of them: successful calls that take
				  mmap_lock for writing (van_sc_write_locked) */
	uint64_t vma_changes;  /* successful calls that created, removed,
				  split, merged or changed a VMA (as the
				  address-space model applies them) */
};

struct van_rewrite_counts {
	uint32_t nrules;
	const struct van_rewrite_count *rules; /* in list order */
	uint64_t events_in, events_out;
	uint64_t max_held;  /* most events held back at once */
	uint64_t overflows; /* decisions forced early because too many
			       events were held (each may have cost an
			       application) */
	struct van_rewrite_calls in, out;
};

/* The counts so far (valid until the next call on rw). */
const struct van_rewrite_counts *van_rewrite_counts(const van_rewrite *rw);

void van_rewrite_free(van_rewrite *rw);

/* Whether a call takes mmap_lock for writing on Linux 6.x: 1 for mmap,
 * munmap, mremap, mprotect, brk, the mlock and munlock calls, mseal,
 * shmat, shmdt, remap_file_pages and a madvise whose advice changes VMA
 * flags (MADV_DONTFORK, MADV_HUGEPAGE, MADV_NORMAL, ...); 0 for the
 * discarding and populating advice (MADV_DONTNEED, MADV_FREE,
 * MADV_WILLNEED, ...), process_madvise, msync and mincore.
 * van_op_write_locked() says it for an op: 1 always, 0 never, -1 it
 * depends on the arguments (madvise). */
int van_sc_write_locked(const struct vmt_syscall *sc);
int van_op_write_locked(uint32_t op);

/* Rewrite the whole trace read from infd into a new trace written to
 * outfd (neither is closed): the output header is the input's with
 * " rewrite=LIST" appended to its options.  rw must be fresh (no push yet)
 * and is finished afterwards, so its counts can be read.  When the input
 * is damaged, the events before the damage are rewritten and the output is
 * finished, and the reader's error is returned.  Returns 0 or a negative
 * code, with a message in err ("reading: truncated at byte ...", "writing:
 * No space left on device"). */
int van_rewrite_trace(van_rewrite *rw, int infd, int outfd, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* VAN_REWRITE_H */
