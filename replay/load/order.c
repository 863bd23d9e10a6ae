/*
 * order.c - which earlier elements of other threads each element waits for.
 *
 * Ordering (--order=resource): each element waits for the latest earlier
 * element of every other thread of its process whose recorded ranges
 * overlap its own (a per-process map of "last user" per range), and ops on
 * the whole address space (exec, fork, mlockall) wait for all threads and
 * are waited for by all.  Waits already implied by earlier ones are dropped.
 * --order=strict waits for the previous element of the whole trace;
 * --order=free only orders ops that create or destroy mappings (see
 * structural()) against everything else in their process.  In both, the
 * thread that made a vfork waits for the child's exec or exit, as it was
 * suspended until then.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "load_int.h"

static int note_dep(struct loader *L, uint32_t self, uint32_t u, uint32_t seq)
{
	rp_trace *t = L->t;
	struct lthread *lt = &L->lt[self];
	if (u == self || seq == 0)
		return 0;
	if (t->threads[u].proc == t->threads[self].proc) {
		uint32_t k = L->lt[u].in_proc;
		if (vmt_grow(&lt->known, &lt->capknown, (size_t)k + 1, sizeof(*lt->known)))
			return ld_fail(L, -ENOMEM, "out of memory");
		if (lt->known[k] >= seq)
			return 0;
		lt->known[k] = seq;
	} else {
		if (lt->last_dep_thread == u && lt->last_dep_seq >= seq)
			return 0;
		lt->last_dep_thread = u;
		lt->last_dep_seq = seq;
	}
	int rc = ld_grow(L, &t->deps, &t->capdeps, (size_t)t->ndeps + 1, sizeof(*t->deps));
	if (rc < 0)
		return rc;
	struct rp_elem *target = ld_elem(L, u, seq - 1);
	t->deps[t->ndeps].thread = u | (target ? 0 : RP_DEP_LATE);
	t->deps[t->ndeps].seq = seq;
	t->ndeps++;
	if (target)
		target->flags |= RF_POST;
	return 0;
}

struct depctx {
	struct loader *L;
	uint32_t self;
	int err;
};

static int dep_cb(void *ctx, const struct rpam_piece *p)
{
	struct depctx *c = ctx;
	if (p->region == RPAM_GAP)
		return 0;
	c->err = note_dep(c->L, c->self, p->region, p->attr);
	return c->err < 0;
}

static int resource_deps(struct loader *L, uint32_t tid, uint32_t seq, const struct lrange *rng,
			 int nrng, int global)
{
	struct lproc *P = &L->lp[L->t->threads[tid].proc];
	struct lthread *lt = &L->lt[tid];
	struct depctx c = {L, tid, 0};
	int rc;
	if (global) {
		for (uint32_t i = 0; i < P->nthreads; i++) {
			uint32_t u = P->threads[i];
			if ((rc = note_dep(L, tid, u, L->t->threads[u].nelem)) < 0)
				return rc;
		}
		P->global_thread = tid;
		P->global_seq = seq;
		return 0;
	}
	if (P->global_thread != RP_VOID && (rc = note_dep(L, tid, P->global_thread, P->global_seq)) < 0)
		return rc;
	for (int pass = 0; pass < 2; pass++) {
		const struct lrange *r = pass ? lt->tr : rng;
		uint32_t n = pass ? lt->ntr : (uint32_t)nrng;
		for (uint32_t i = 0; i < n; i++) {
			if (r[i].a >= r[i].b)
				continue;
			rpam_pieces(&P->last, r[i].a, r[i].b, 0, dep_cb, &c);
			if (c.err < 0)
				return c.err;
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		const struct lrange *r = pass ? lt->tr : rng;
		uint32_t n = pass ? lt->ntr : (uint32_t)nrng;
		for (uint32_t i = 0; i < n; i++) {
			struct rpam_val v = {tid, seq, 0};
			if (r[i].a < r[i].b && rpam_set(&P->last, r[i].a, r[i].b, v))
				return ld_fail(L, -ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* Elements that change which mappings exist, or act on all of them. */
static int structural(const struct rp_elem *e)
{
	if (e->kind == RK_EXEC || e->kind == RK_FORK)
		return 1;
	if (e->kind != RK_SYSCALL)
		return 0;
	const struct vmt_op_info *oi = vmt_op_info(e->op);
	return oi && ((oi->effects & VMT_OPE_LAYOUT) || oi->range == VMT_RANGE_ALL);
}

int ld_order(struct loader *L, uint32_t tid, const struct rp_elem *e, uint32_t seq,
	     const struct lrange *rng, int nrng, int global)
{
	struct lproc *P = &L->lp[L->t->threads[tid].proc];
	struct lthread *lt = &L->lt[tid];
	int rc = 0;
	/* A vfork's parent was suspended until the child's exec or exit (in
	 * strict order the previous element implies it). */
	if (lt->vf_seq && L->t->opt.order != RP_ORDER_STRICT &&
	    (rc = note_dep(L, tid, lt->vf_thread, lt->vf_seq)) < 0)
		return rc;
	lt->vf_seq = 0;
	switch (L->t->opt.order) {
	case RP_ORDER_RESOURCE:
		if ((rc = resource_deps(L, tid, seq, rng, nrng, global)) < 0)
			return rc;
		break;
	case RP_ORDER_STRICT:
		if (L->prev_thread != RP_VOID && (rc = note_dep(L, tid, L->prev_thread, L->prev_seq)) < 0)
			return rc;
		break;
	default:
		/* Per-thread order only, except around ops that create or
		 * destroy mappings: they wait for every thread of the process
		 * and every later op waits for them, so no replay op can land
		 * on memory that is unmapped, or reused, under it. */
		if (structural(e))
			rc = resource_deps(L, tid, seq, NULL, 0, 1);
		else if (P->global_thread != RP_VOID)
			rc = note_dep(L, tid, P->global_thread, P->global_seq);
		else
			rc = 0;
		if (rc < 0)
			return rc;
		break;
	}
	return 0;
}
