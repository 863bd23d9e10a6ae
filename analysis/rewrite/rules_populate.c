/*
 * rules_populate.c - rewrite rule populate: an anonymous private mapping
 * whose pages all get touched before anything else happens to it is
 * mapped with MAP_POPULATE instead, so its pages come in one call rather
 * than one fault each (what seed 004's fault costs suggest).
 *
 * A candidate is a successful mmap, MAP_PRIVATE|MAP_ANONYMOUS, readable or
 * writable, without MAP_POPULATE, MAP_LOCKED (populates already),
 * MAP_GROWSDOWN, MAP_HUGETLB or MAP_NORESERVE (sparse by intent).  It is
 * held back while the rule collects which of its pages TOUCH events
 * (present, read or written) and FAULT events of its process show.  The
 * observation ends at the first syscall of the process on any part of the
 * range (munmap, madvise, mprotect, mremap, an mmap over it, mlockall ..:
 * the recorder takes its TOUCH right before such discarding calls), at
 * exit, exec or a new snapshot, at the end of the trace, or after
 * POP_WINDOW further events ("right after it is made"; this also bounds
 * how much is held).  If every page was seen by then, the mmap gets
 * MAP_POPULATE.  Populating early changes when pages are allocated, not
 * what the program sees: fresh anonymous pages read as zeros either way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rewrite_int.h"

#define POP_WINDOW 65536u	  /* input events a candidate is watched for */
#define POP_MAX_CAND 256u	  /* candidates watched at once */
#define POP_MAX_PAGES (1u << 20) /* pages of one candidate */

struct pop_cand {
	uint32_t proc;
	uint64_t start, end, seq, born;
	uint64_t npages, seen;
	uint64_t *bits;
};

struct pop {
	struct pop_cand c[POP_MAX_CAND];
	uint32_t n;
};

static void *pop_create(struct rw_stage *s)
{
	return calloc(1, sizeof(struct pop));
}

static void pop_destroy(void *st)
{
	struct pop *x = st;
	for (uint32_t i = 0; i < x->n; i++)
		free(x->c[i].bits);
	free(x);
}

static int candidate(const struct rw_stage *s, const struct vmt_syscall *sc)
{
	uint64_t fl = sc->args[3];
	uint64_t no = LX_MAP_POPULATE | LX_MAP_LOCKED | LX_MAP_GROWSDOWN | LX_MAP_HUGETLB |
		      LX_MAP_NORESERVE;
	return sc->op == VMT_OP_MMAP && rw_sc_ok(sc) &&
	       (fl & LX_MAP_TYPE) == LX_MAP_PRIVATE && (fl & LX_MAP_ANONYMOUS) && !(fl & no) &&
	       (sc->args[2] & (LX_PROT_READ | LX_PROT_WRITE)) && sc->args[1] &&
	       !((uint64_t)sc->result & s->page_mask);
}

/* Decide on candidate i and forget it. */
static int decide(struct rw_stage *s, struct pop *x, uint32_t i)
{
	struct pop_cand c = x->c[i];
	memmove(&x->c[i], &x->c[i + 1], (x->n - i - 1) * sizeof(c));
	x->n--;
	free(c.bits);
	if (c.seen == c.npages) {
		struct vmt_event *h = rw_held(s, c.seq);
		if (!h)
			return VMT_E_STATE;
		int rc = rw_applied(s, h);
		if (rc)
			return rc;
		h->u.sc.args[3] |= LX_MAP_POPULATE;
		h->u.sc.flags |= VMT_SC_REWRITTEN;
	}
	return rw_release(s, c.seq, 0);
}

/* Decide on every candidate of proc (all when proc is VMT_NONE) that
 * overlaps [a, b). */
static int end_range(struct rw_stage *s, struct pop *x, uint32_t proc, uint64_t a, uint64_t b)
{
	for (uint32_t i = 0; i < x->n;) {
		if ((proc == VMT_NONE || x->c[i].proc == proc) && x->c[i].start < b && a < x->c[i].end) {
			int rc = decide(s, x, i);
			if (rc)
				return rc;
		} else {
			i++;
		}
	}
	return 0;
}

static void mark(struct pop_cand *c, uint64_t page, uint64_t a, uint64_t b)
{
	if (a < c->start)
		a = c->start;
	if (b > c->end)
		b = c->end;
	for (uint64_t p = a; p < b; p += page) {
		uint64_t k = (p - c->start) / page;
		if (!(c->bits[k / 64] & (1ull << (k % 64)))) {
			c->bits[k / 64] |= 1ull << (k % 64);
			c->seen++;
		}
	}
}

static void touch(struct rw_stage *s, struct pop *x, const struct vmt_event *ev)
{
	const struct vmt_touch *t = &ev->u.touch;
	uint64_t page = s->page_mask + 1, at = t->start;
	for (uint32_t k = 0; k < t->nruns; k++) {
		uint64_t end = rw_run_end(s, at, t->runs[k].pages);
		if (t->runs[k].state != VMT_PAGE_ABSENT)
			for (uint32_t i = 0; i < x->n; i++)
				if (x->c[i].proc == ev->proc && x->c[i].start < end && at < x->c[i].end)
					mark(&x->c[i], page, at, end);
		at = end;
	}
}

static int pop_syscall(struct rw_stage *s, struct pop *x, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct vmt_range rg[2];
	int rc, n = vmt_sc_ranges(sc, s->page_mask + 1, rg);
	if (n < 0 && (rc = end_range(s, x, ev->proc, 0, UINT64_MAX)))
		return rc;
	for (int k = 0; k < n; k++)
		if ((rc = end_range(s, x, ev->proc, rg[k].start, rg[k].end)))
			return rc;
	if (!candidate(s, sc) || x->n == POP_MAX_CAND)
		return rw_emit(s, ev);
	uint64_t a = (uint64_t)sc->result, b = rw_end(s, a, sc->args[1]);
	uint64_t npages = (b - a) / (s->page_mask + 1);
	if (npages > POP_MAX_PAGES)
		return rw_emit(s, ev);
	struct pop_cand *c = &x->c[x->n];
	*c = (struct pop_cand){ .proc = ev->proc, .start = a, .end = b, .born = rw_now(s),
				.npages = npages };
	if (!(c->bits = calloc((npages + 63) / 64, sizeof(uint64_t))))
		return -ENOMEM;
	if ((rc = rw_hold(s, ev, &c->seq))) {
		free(c->bits);
		return rc;
	}
	x->n++;
	return 0;
}

static int pop_event(struct rw_stage *s, const struct vmt_event *ev)
{
	struct pop *x = s->st;
	int rc = 0;
	/* Candidates watched long enough are decided first. */
	while (!rc && x->n && rw_now(s) - x->c[0].born > POP_WINDOW)
		rc = decide(s, x, 0);
	if (rc)
		return rc;
	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		return pop_syscall(s, x, ev);
	case VMT_EV_TOUCH:
		touch(s, x, ev);
		break;
	case VMT_EV_FAULT:
		for (uint32_t i = 0; i < x->n && vmt_fault_touches(&ev->u.fault); i++)
			if (x->c[i].proc == ev->proc && x->c[i].start <= ev->u.fault.addr &&
			    ev->u.fault.addr < x->c[i].end) {
				uint64_t p = ev->u.fault.addr & ~s->page_mask;
				mark(&x->c[i], s->page_mask + 1, p, p + s->page_mask + 1);
			}
		break;
	default:
		break;
	}
	/* (a fork copies the populated ranges as they are: the rule's view
	 * holds for the parent, and the child's calls are its own) */
	struct rw_stale st = rw_stale_of(ev);
	if (st.kind == RW_STALE_GONE || st.kind == RW_STALE_VFORK)
		rc = end_range(s, x, st.proc, 0, UINT64_MAX);
	return rc ? rc : rw_emit(s, ev);
}

static int pop_overflow(struct rw_stage *s, uint64_t seq)
{
	struct pop *x = s->st;
	for (uint32_t i = 0; i < x->n; i++)
		if (x->c[i].seq == seq)
			return decide(s, x, i);
	return VMT_E_STATE;
}

static int pop_finish(struct rw_stage *s)
{
	struct pop *x = s->st;
	int rc = 0;
	while (!rc && x->n)
		rc = decide(s, x, 0);
	return rc;
}

const struct rw_rule rw_rule_populate = {
	.name = "populate",
	.summary = "anonymous private mmap whose pages are all touched before its next use -> "
		   "with MAP_POPULATE",
	.create = pop_create,
	.destroy = pop_destroy,
	.event = pop_event,
	.overflow = pop_overflow,
	.finish = pop_finish,
};
