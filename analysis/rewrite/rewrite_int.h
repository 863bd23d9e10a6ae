/*
 * rewrite_int.h - what the rewrite engine (rewrite.c) and its rules
 * (rules_*.c) share.
 *
 * The engine runs one stage per rule of the list.  A stage sees its input
 * stream one event at a time (rule->event) and must, for every event,
 * either pass it on (rw_emit, possibly changed: rules pass a modified copy
 * on the stack), drop it (do nothing), or hold it back (rw_hold) until it
 * knows what to do with it (rw_release).  Events behind a held one queue up
 * in the stage, so the output order always equals the input order.  The
 * engine keeps, per stage that asks for it, an address-space model of the
 * stage's input; it is applied after rule->event returns, so a rule sees
 * the state from before the event.
 */
#ifndef VAN_REWRITE_INT_H
#define VAN_REWRITE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "asmodel.h"
#include "callsite_int.h"
#include "linux_abi.h"
#include "rewrite.h"
#include "vmtutil.h"


struct rw_stage;

struct rw_rule {
	const char *name;
	const char *alias; /* a former name, still taken in a rule list */
	const char *summary;
	int needs_model;
	/* Per-stage state: NULL on allocation failure (for rules without
	 * state, return any non-NULL pointer). */
	void *(*create)(struct rw_stage *s);
	void (*destroy)(void *st);
	/* The trace's header, before the first event (van_rewrite_start).
	 * May be NULL.  0 or -err. */
	int (*start)(struct rw_stage *s, const struct vmt_header *h);
	/* Handle one input event: emit, drop or hold it.  0 or -err. */
	int (*event)(struct rw_stage *s, const struct vmt_event *ev);
	/* Too much is held: release the held event `seq` (the oldest) now,
	 * deciding with what is known.  NULL for rules that never hold. */
	int (*overflow)(struct rw_stage *s, uint64_t seq);
	/* End of input: release everything still held.  May be NULL. */
	int (*finish)(struct rw_stage *s);
};

extern const struct rw_rule rw_rule_prot_none_free;
extern const struct rw_rule rw_rule_dontneed_to_free;
extern const struct rw_rule rw_rule_free_to_dontneed;
extern const struct rw_rule rw_rule_mlock_onfault;
extern const struct rw_rule rw_rule_populate;
extern const struct rw_rule rw_rule_discard_before_unmap;
extern const struct rw_rule rw_rule_free_before_dontneed;

/* The most rules one chain can run. */
#define RW_MAX_RULES 8

/* A rewriter running rules r[0..n) in that order (rules.c parses a list
 * into it).  NULL with a message on failure. */
struct van_rewrite *rw_engine_new(const struct rw_rule *const *r, unsigned n, char *err,
				  size_t errlen);

struct rw_qent {
	struct vmt_event *ev; /* deep copy (one allocation) */
	size_t bytes;
	uint8_t held, drop;
};

struct rw_stage {
	van_rewrite *rw;
	unsigned index;
	const struct rw_rule *rule;
	void *st;
	van_asmodel *model; /* of this stage's input; NULL unless needed */
	uint64_t page_mask; /* page size - 1 */
	struct van_rewrite_count *count; /* this rule's counts */
	struct cs_tally sites;	/* the applications by stack */
	char note[400];		/* rw_note's */
	uint64_t in;	    /* events this stage has seen */
	/* the queue: a ring of qcap entries; q[qhead] has sequence number
	 * qseq (every entry ever queued gets the next number) */
	struct rw_qent *q;
	size_t qcap, qhead, qlen, qbytes, nheld;
	uint64_t qseq;
};

/* Pass ev on (a copy is queued when events are held, so ev may be the
 * caller's stack variable).  0 or -err. */
int rw_emit(struct rw_stage *s, const struct vmt_event *ev);

/* Hold a copy of ev back; *seq identifies it.  0 or -ENOMEM. */
int rw_hold(struct rw_stage *s, const struct vmt_event *ev, uint64_t *seq);

/* The held copy of `seq`, which the rule may change (syscall fields only:
 * its pointers belong to the copy).  NULL if seq is not held. */
struct vmt_event *rw_held(struct rw_stage *s, uint64_t seq);

/* Let the held event `seq` go (drop: remove it from the stream), and
 * pass on every event that no longer waits behind a held one.  0 or -err. */
int rw_release(struct rw_stage *s, uint64_t seq, int drop);

/* Page-aligned range [a, a + len rounded up to pages), clamped at the top
 * of the address space. */
static inline uint64_t rw_end(const struct rw_stage *s, uint64_t a, uint64_t len)
{
	uint64_t l = len + s->page_mask < len ? UINT64_MAX : (len + s->page_mask) & ~s->page_mask;
	return a + l < a ? UINT64_MAX & ~s->page_mask : a + l;
}

/* 1 if every page of [a, b) of process proc is mapped in s's model by VMAs
 * with protection `prot` (or any protection when prot is UINT32_MAX),
 * private, anonymous, protection key 0 and none of the VAN_VMA_* bits in
 * `bad`.  The model must exist. */
int rw_model_range(const struct rw_stage *s, uint32_t proc, uint64_t a, uint64_t b,
		   uint32_t prot, uint32_t bad);

/* Set *out to a copy of syscall event ev as op `op` with args (the op's
 * own number of them) and result, marked VMT_SC_REWRITTEN. */
void rw_make_sc(struct vmt_event *out, const struct vmt_event *ev, uint32_t op,
		const uint64_t *args, int64_t result);

/* The call completed (a result was seen) and did not fail: its effect is
 * known.  Results in [-4095, -1] are -errno, as the kernel's IS_ERR_VALUE(). */
static inline int rw_sc_ok(const struct vmt_syscall *sc)
{
	return !(sc->flags & VMT_SC_NO_RESULT) && !vmt_is_errno(sc->result);
}

/* End of a TOUCH run of `pages` pages starting at `at`, clamped at the top
 * of the address space. */
static inline uint64_t rw_run_end(const struct rw_stage *s, uint64_t at, uint64_t pages)
{
	uint64_t page = s->page_mask + 1;
	return pages > (UINT64_MAX - at) / page ? UINT64_MAX : at + pages * page;
}

/* Count one application of the rule to ev (a syscall of the input: its
 * stack names the call site).  0 or -ENOMEM. */
int rw_applied(struct rw_stage *s, const struct vmt_event *ev);

/* Count n calls of the input the rule left out. */
static inline void rw_removed(struct rw_stage *s, uint64_t n)
{
	s->count->removed += n;
}

/* At finish: a further number of what the rule did (what: a static
 * string), and the rule's note. */
void rw_detail(struct rw_stage *s, const char *what, uint64_t n);
void rw_note(struct rw_stage *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Apply ev to m, a model of one side of the rewrite (pages of `page`
 * bytes), and count the call into c (rewrite_calls.c).  0 or -ENOMEM. */
int rw_calls_apply(van_asmodel *m, struct van_rewrite_calls *c, const struct vmt_event *ev,
		   uint64_t page);

/* ---- when a rule's view of a process goes stale ---------------------------
 * The one list of the events after which what a rule has learnt of a
 * process's address space (ranges it follows, calls it holds back) may no
 * longer hold.  Each rule says what it does for each kind, and the kinds
 * say what the event is, so that a rule cannot treat fork and vfork alike
 * by accident. */
enum rw_stale_kind {
	RW_STALE_NONE = 0, /* the event changes no view */
	/* proc's address space is gone or replaced (exit, exec) or shown
	 * anew (a MAPS snapshot); every process's (proc VMT_NONE) after lost
	 * events other than faults: what a rule followed may have changed
	 * unseen.  Held calls are decided as recorded, the view dropped. */
	RW_STALE_GONE,
	/* proc was forked (fork, or clone without CLONE_VM) into child: the
	 * child has a copy of the space as it is now.  What a rule holds
	 * back is decided now, since a decision made later, on what the
	 * parent does after the fork, would change what the child inherits;
	 * what the rule knows of the ranges holds for both. */
	RW_STALE_FORK,
	/* child shares proc's space (vfork) under its own process index
	 * until it execs or exits: its calls act on the parent's ranges in
	 * events a rule files under the child, so the parent's view cannot
	 * be followed.  Held calls are decided, the parent's view dropped. */
	RW_STALE_VFORK,
};

struct rw_stale {
	enum rw_stale_kind kind;
	uint32_t proc;	/* the process whose view is stale, or VMT_NONE: all */
	uint32_t child; /* RW_STALE_FORK and RW_STALE_VFORK: the new process */
};

/* What event ev does to the rules' views of processes. */
struct rw_stale rw_stale_of(const struct vmt_event *ev);

/* Index of the next input event of stage s (for look-ahead windows). */
static inline uint64_t rw_now(const struct rw_stage *s)
{
	return s->in;
}

#endif
