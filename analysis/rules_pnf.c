/*
 * rules_pnf.c - rewrite rule prot-none-free: glibc's old way of giving a
 * heap range back (seed 000),
 *
 *     mprotect(R, len, PROT_READ|PROT_WRITE)          enable
 *     ... use ...
 *     mmap(R, len, PROT_NONE, MAP_FIXED|MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)   free
 *     mprotect(R, len, PROT_READ|PROT_WRITE)          enable again
 *
 * becomes
 *
 *     mprotect(R, len, PROT_READ|PROT_WRITE)          (the first one stays)
 *     ... use ...
 *     madvise(R, len, MADV_DONTNEED)                  the range stays RW
 *                                                     (enable dropped)
 *
 * Both discard the pages (the next touch faults in a zero page), but the
 * old way takes mmap_lock for writing twice per cycle.
 *
 * The rule tracks, per process, ranges made read-write by an
 * mprotect(PROT_READ|PROT_WRITE) of exactly that range ("enabled").  A
 * free of exactly an enabled range is held back until what comes next to
 * that range shows whether it may become a madvise:
 *   - the same thread enables exactly that range again: yes, and that
 *     mprotect is dropped (it would change nothing);
 *   - a successful munmap covers the whole range: yes (neither version
 *     can access the range again, so its protection until then is not
 *     observable by a program that does not rely on catching SIGSEGV);
 *   - anything else: no, the free is passed on as recorded: another
 *     syscall on the range or part of it (a protection change, a partial
 *     munmap, another mmap over it, mlockall, ...), an enable by another
 *     thread (dropping it would lose the ordering between the threads), a
 *     touch or fault showing pages in the PROT_NONE range, the process
 *     exiting or exec'ing, or the end of the trace.  A PROT_NONE range
 *     that is never enabled again nor unmapped may be a guard meant to
 *     trap, so it stays PROT_NONE.
 * The free itself must be exactly mmap(R, len, PROT_NONE, MAP_PRIVATE|
 * MAP_ANONYMOUS|MAP_FIXED[|MAP_NORESERVE], -1, 0) = R over an enabled range
 * (not more, not less: the rest would change protection), and the model
 * must show that range read-write, private, anonymous, not locked and
 * without VMA attributes that mmap would reset but madvise keeps
 * (MADV_DONTFORK, MADV_HUGEPAGE, protection keys, ...).  Any other syscall
 * on an enabled range (mincore aside) forgets it, so "protection changed
 * in between" never matches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rewrite_int.h"

#define PNF_MAX_RANGES 1024u /* tracked per process; the oldest goes */

#define PNF_BAD (VMT_VMA_LOCKED | VMT_VMA_LOCKONFAULT | VMT_VMA_GROWSDOWN | VMT_VMA_DONTFORK | \
		 VMT_VMA_WIPEONFORK | VMT_VMA_DONTDUMP | VMT_VMA_HUGEPAGE | VMT_VMA_NOHUGEPAGE | \
		 VMT_VMA_MERGEABLE | VMT_VMA_SEQ_READ | VMT_VMA_RAND_READ | VMT_VMA_SEALED |   \
		 VMT_VMA_HUGETLB | VMT_VMA_SPECIAL | VMT_VMA_HEAP | VMT_VMA_SYSV |             \
		 VMT_VMA_SNAPSHOT)

struct pnf_range {
	uint64_t start, end;
	uint64_t seq;	 /* the held free, when pending */
	uint32_t thread; /* the thread that freed it, when pending */
	uint8_t pending; /* 0: enabled; 1: freed, free held back */
};

struct pnf_proc {
	struct pnf_range *r;
	uint32_t n, cap;
};

struct pnf {
	struct pnf_proc *p;
	uint32_t np;
};

static void *pnf_create(struct rw_stage *s)
{
	return calloc(1, sizeof(struct pnf));
}

static void pnf_destroy(void *st)
{
	struct pnf *x = st;
	for (uint32_t i = 0; i < x->np; i++)
		free(x->p[i].r);
	free(x->p);
	free(x);
}

static struct pnf_proc *proc_of(struct pnf *x, uint32_t proc, int create)
{
	if (proc >= x->np) {
		if (!create || proc >= VMT_MAX_THREADS)
			return NULL;
		uint32_t n = proc + 1 > 2 * x->np ? proc + 1 : 2 * x->np;
		struct pnf_proc *p = realloc(x->p, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + x->np, 0, (n - x->np) * sizeof(*p));
		x->p = p;
		x->np = n;
	}
	return &x->p[proc];
}

/* The held free becomes madvise(MADV_DONTNEED) of the same range. */
static int convert_free(struct rw_stage *s, uint64_t seq)
{
	struct vmt_event *h = rw_held(s, seq), m;
	if (!h)
		return VMT_E_STATE;
	uint64_t args[3] = { h->u.sc.args[0], h->u.sc.args[1], LX_MADV_DONTNEED };
	int rc = rw_applied(s, h);
	if (rc)
		return rc;
	rw_make_sc(&m, h, VMT_OP_MADVISE, args, 0);
	*h = m; /* a syscall event owns no pointers */
	return rw_release(s, seq, 0);
}

/* Forget range i; a pending free is converted or passed on as recorded. */
static int drop_range(struct rw_stage *s, struct pnf_proc *P, uint32_t i, int convert)
{
	struct pnf_range r = P->r[i];
	memmove(&P->r[i], &P->r[i + 1], (P->n - i - 1) * sizeof(*P->r));
	P->n--;
	if (!r.pending)
		return 0;
	return convert ? convert_free(s, r.seq) : rw_release(s, r.seq, 0);
}

static int invalidate(struct rw_stage *s, struct pnf_proc *P, uint64_t a, uint64_t b)
{
	for (uint32_t i = 0; P && i < P->n;) {
		if (P->r[i].start < b && a < P->r[i].end) {
			int rc = drop_range(s, P, i, 0);
			if (rc)
				return rc;
		} else {
			i++;
		}
	}
	return 0;
}

static int find(const struct pnf_proc *P, uint64_t a, uint64_t b)
{
	for (uint32_t i = 0; i < P->n; i++)
		if (P->r[i].start == a && P->r[i].end == b)
			return (int)i;
	return -1;
}

static int add_range(struct rw_stage *s, struct pnf_proc *P, uint64_t a, uint64_t b)
{
	if (P->n == PNF_MAX_RANGES) {
		int rc = drop_range(s, P, 0, 0);
		if (rc)
			return rc;
	}
	if (P->n == P->cap) {
		uint32_t n = P->cap ? 2 * P->cap : 8;
		struct pnf_range *r = realloc(P->r, n * sizeof(*r));
		if (!r)
			return -ENOMEM;
		P->r = r;
		P->cap = n;
	}
	P->r[P->n++] = (struct pnf_range){ .start = a, .end = b };
	return 0;
}

static int ok_result(const struct vmt_syscall *sc)
{
	return !(sc->flags & VMT_SC_NO_RESULT) && sc->result == 0;
}

/* mprotect(a, len, PROT_READ|PROT_WRITE) = 0 */
static int is_enable(const struct rw_stage *s, const struct vmt_syscall *sc)
{
	return sc->op == VMT_OP_MPROTECT && ok_result(sc) &&
	       sc->args[2] == (LX_PROT_READ | LX_PROT_WRITE) && !(sc->args[0] & s->page_mask) &&
	       sc->args[1] != 0;
}

/* mmap(a, len, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED[|MAP_NORESERVE],
 * -1, 0) = a */
static int is_free(const struct rw_stage *s, const struct vmt_syscall *sc)
{
	uint64_t fl = sc->args[3];
	return sc->op == VMT_OP_MMAP && !(sc->flags & VMT_SC_NO_RESULT) &&
	       (uint64_t)sc->result == sc->args[0] && sc->args[2] == 0 &&
	       (fl & LX_MAP_TYPE) == LX_MAP_PRIVATE && (fl & LX_MAP_FIXED) &&
	       (fl & LX_MAP_ANONYMOUS) &&
	       !(fl & ~(uint64_t)(LX_MAP_TYPE | LX_MAP_FIXED | LX_MAP_ANONYMOUS | LX_MAP_NORESERVE)) &&
	       (int32_t)(uint32_t)sc->args[4] == -1 && sc->args[5] == 0 &&
	       !(sc->args[0] & s->page_mask) && sc->args[1] != 0;
}

static int pnf_syscall(struct rw_stage *s, struct pnf *x, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct pnf_proc *P = proc_of(x, ev->proc, 1);
	int rc;
	if (!P)
		return -ENOMEM;
	if (is_enable(s, sc)) {
		uint64_t a = sc->args[0], b = rw_end(s, a, sc->args[1]);
		int i = find(P, a, b);
		if (i >= 0 && P->r[i].pending && P->r[i].thread == ev->thread) {
			/* Enabled again: the range already is RW after the
			 * madvise, so this mprotect is dropped. */
			P->r[i].pending = 0;
			rw_removed(s, 1);
			return convert_free(s, P->r[i].seq);
		}
		if ((rc = invalidate(s, P, a, b)) || (rc = add_range(s, P, a, b)))
			return rc;
		return rw_emit(s, ev);
	}
	if (is_free(s, sc)) {
		uint64_t a = sc->args[0], b = rw_end(s, a, sc->args[1]);
		int i = find(P, a, b);
		if (i >= 0 && !P->r[i].pending &&
		    rw_model_range(s, ev->proc, a, b, VMT_PROT_R | VMT_PROT_W, PNF_BAD)) {
			if ((rc = rw_hold(s, ev, &P->r[i].seq)))
				return rc;
			P->r[i].pending = 1;
			P->r[i].thread = ev->thread;
			return 0;
		}
	}
	if (sc->op == VMT_OP_MUNMAP && ok_result(sc)) {
		uint64_t a = sc->args[0], b = rw_end(s, a, sc->args[1]);
		for (uint32_t i = 0; i < P->n;) {
			const struct pnf_range *r = &P->r[i];
			if (r->start < b && a < r->end) {
				int whole = r->pending && a <= r->start && r->end <= b;
				if ((rc = drop_range(s, P, i, whole)))
					return rc;
			} else {
				i++;
			}
		}
		return rw_emit(s, ev);
	}
	struct vmt_range rg[2];
	int n = vmt_sc_ranges(sc, s->page_mask + 1, rg);
	if (n < 0 && (rc = invalidate(s, P, 0, UINT64_MAX)))
		return rc;
	for (int k = 0; k < n; k++)
		if ((rc = invalidate(s, P, rg[k].start, rg[k].end)))
			return rc;
	return rw_emit(s, ev);
}

/* Pages present in a range that is PROT_NONE in the recording: something
 * the rule does not understand happened; keep the free as recorded. */
static int pnf_touch(struct rw_stage *s, struct pnf_proc *P, const struct vmt_touch *t)
{
	uint64_t at = t->start;
	for (uint32_t k = 0; k < t->nruns; k++) {
		uint64_t end = rw_run_end(s, at, t->runs[k].pages);
		if (t->runs[k].state != VMT_PAGE_ABSENT) {
			for (uint32_t i = 0; i < P->n;) {
				if (P->r[i].pending && P->r[i].start < end && at < P->r[i].end) {
					int rc = drop_range(s, P, i, 0);
					if (rc)
						return rc;
				} else {
					i++;
				}
			}
		}
		at = end;
	}
	return 0;
}

static int pnf_event(struct rw_stage *s, const struct vmt_event *ev)
{
	struct pnf *x = s->st;
	struct pnf_proc *P = proc_of(x, ev->proc, 0);
	int rc = 0;
	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		return pnf_syscall(s, x, ev);
	case VMT_EV_TOUCH:
		if (P)
			rc = pnf_touch(s, P, &ev->u.touch);
		break;
	case VMT_EV_FAULT:
		for (uint32_t i = 0; P && i < P->n; i++)
			if (P->r[i].pending && P->r[i].start <= ev->u.fault.addr &&
			    ev->u.fault.addr < P->r[i].end) {
				rc = drop_range(s, P, i, 0);
				break;
			}
		break;
	case VMT_EV_EXEC:
	case VMT_EV_PROCESS_EXIT:
	case VMT_EV_MAPS: /* a new snapshot: the rule's view is outdated */
		rc = invalidate(s, P, 0, UINT64_MAX);
		break;
	case VMT_EV_PROCESS_START:
		/* A vfork child shares the parent's space under another
		 * process index: the parent's ranges can no longer be
		 * followed. */
		if (ev->u.process_start.how == VMT_PROC_VFORK)
			rc = invalidate(s, proc_of(x, ev->u.process_start.parent_proc, 0), 0,
					UINT64_MAX);
		break;
	case VMT_EV_LOST:
		if (ev->u.lost.what != VMT_LOST_FAULTS)
			for (uint32_t p = 0; !rc && p < x->np; p++)
				rc = invalidate(s, &x->p[p], 0, UINT64_MAX);
		break;
	default:
		break;
	}
	return rc ? rc : rw_emit(s, ev);
}

static int pnf_overflow(struct rw_stage *s, uint64_t seq)
{
	struct pnf *x = s->st;
	for (uint32_t p = 0; p < x->np; p++)
		for (uint32_t i = 0; i < x->p[p].n; i++)
			if (x->p[p].r[i].pending && x->p[p].r[i].seq == seq)
				return drop_range(s, &x->p[p], i, 0);
	return VMT_E_STATE;
}

/* End of the trace: frees still pending were never enabled again nor
 * unmapped; they stay as recorded. */
static int pnf_finish(struct rw_stage *s)
{
	struct pnf *x = s->st;
	int rc = 0;
	for (uint32_t p = 0; !rc && p < x->np; p++)
		rc = invalidate(s, &x->p[p], 0, UINT64_MAX);
	return rc;
}

const struct rw_rule rw_rule_prot_none_free = {
	.name = "prot-none-free",
	.summary = "mprotect(RW) .. mmap(PROT_NONE, MAP_FIXED) of a range -> madvise(MADV_DONTNEED), "
		   "the range stays RW and the next mprotect(RW) of it is dropped",
	.needs_model = 1,
	.create = pnf_create,
	.destroy = pnf_destroy,
	.event = pnf_event,
	.overflow = pnf_overflow,
	.finish = pnf_finish,
};
