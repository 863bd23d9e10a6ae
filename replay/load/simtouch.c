/*
 * simtouch.c - the load-time side of touches: each TOUCH or FAULT event of
 * a thread becomes touch runs (replay region, offset, pages, read or
 * write) waiting for the thread's next op, over the mapped and accessible
 * parts of the recorded range only, and the pages count as present in the
 * simulated address space (sim.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "sim_int.h"

struct tctx {
	struct loader *L;
	uint32_t tid;
	struct lproc *P;
	int write;   /* recorded as written (or unknown) */
	int present; /* recorded as present (written or not: unknown) */
	int err;
};

static int push_touch(struct loader *L, struct lthread *lt, uint32_t region, uint64_t off,
		      uint64_t npages, int write)
{
	while (npages) {
		uint32_t n = npages > 0x40000000u ? 0x40000000u : (uint32_t)npages;
		if (lt->npt) {
			struct rp_touch *l = &lt->pt[lt->npt - 1];
			uint32_t ln = l->npages & ~RP_TOUCH_WRITE;
			int lw = (l->npages & RP_TOUCH_WRITE) != 0;
			if (l->region == region && lw == write && l->off + (uint64_t)ln * L->page == off &&
			    (uint64_t)ln + n < 0x40000000u) {
				l->npages += n;
				off += (uint64_t)n * L->page;
				npages -= n;
				continue;
			}
		}
		if (lt->npt >= (1u << 28))
			return ld_fail(L, VMT_E_LIMIT, "too many touches before one op");
		if (vmt_grow(&lt->pt, &lt->cappt, (size_t)lt->npt + 1, sizeof(*lt->pt)))
			return ld_fail(L, -ENOMEM, "out of memory");
		struct rp_touch *tt = &lt->pt[lt->npt++];
		tt->off = off;
		tt->region = region;
		tt->npages = n | (write ? RP_TOUCH_WRITE : 0);
		off += (uint64_t)n * L->page;
		npages -= n;
	}
	return 0;
}

static int touch_cb(void *ctx, const struct rpam_piece *p)
{
	struct tctx *c = ctx;
	struct loader *L = c->L;
	uint64_t np = p->len / L->page;
	/* (the recorded faults by kind: all of them, replayed or not) */
	ld_count_faults(L, c->tid, p->region == RPAM_GAP ? RP_FK_OTHER
			: ld_fkind(L, p->region, p->attr), np);
	if (p->region == RPAM_GAP) {
		L->t->touch_unmapped_pages += np;
		return 0;
	}
	uint32_t prot = p->attr & AT_PROT;
	int write = c->write && (prot & LX_PROT_WRITE);
	/* A present page of a private file mapping is one of the page cache
	 * (the recorder tells it from the process's own copies): it was read,
	 * and in the replay a read maps it, with its neighbours
	 * (fault-around), as the program's first read did.  A write would
	 * copy each page: one fault per page where there was one per 16. */
	if (c->present && (p->attr & AT_FILE) && !(p->attr & AT_SHARED))
		write = 0;
	if (!write && !(prot & LX_PROT_READ)) {
		L->t->touch_unmapped_pages += np;
		return 0;
	}
	sim_need(L, p->region);
	if ((c->err = push_touch(L, &L->lt[c->tid], p->region, p->off, np, write)) < 0)
		return 1;
	if ((c->err = sim_touched_add(L, c->P, p->start, p->start + p->len)) < 0)
		return 1;
	return 0;
}

static int add_tr(struct loader *L, struct lthread *lt, uint64_t a, uint64_t b)
{
	if (lt->ntr && lt->tr[lt->ntr - 1].b == a) {
		lt->tr[lt->ntr - 1].b = b;
		return 0;
	}
	if (vmt_grow(&lt->tr, &lt->captr, (size_t)lt->ntr + 1, sizeof(*lt->tr)))
		return ld_fail(L, -ENOMEM, "out of memory");
	lt->tr[lt->ntr++] = (struct lrange){a, b};
	return 0;
}

/* Present pages [a, b) of state `state`. */
static int touch_range(struct loader *L, uint32_t tid, uint64_t a, uint64_t b, uint32_t state)
{
	struct lproc *P = &L->lp[L->t->threads[tid].proc];
	struct tctx c = {L, tid, P, state != VMT_PAGE_READ, state == VMT_PAGE_PRESENT, 0};
	if (a >= RP_ADDR_LIMIT)
		return 0;
	if (b > RP_ADDR_LIMIT || b < a)
		b = RP_ADDR_LIMIT;
	rpam_pieces(&P->map, a, b, 0, touch_cb, &c);
	if (c.err < 0)
		return c.err;
	return add_tr(L, &L->lt[tid], a, b);
}

int sim_touch(struct loader *L, uint32_t tid, const struct vmt_event *ev)
{
	uint64_t mask = L->page - 1;
	if (ev->kind == VMT_EV_FAULT) {
		const struct vmt_fault *f = &ev->u.fault;
		uint64_t a = f->addr & ~mask;
		L->t->rec_fault_events++;
		/* One the kernel took through get_user_pages is of no known
		 * page (a recorded call's, the replayed call takes again):
		 * counted, not touched. */
		if (!vmt_fault_touches(f)) {
			ld_count_faults(L, tid, RP_FK_OTHER, 1);
			return 0;
		}
		uint32_t st = (f->access & VMT_FAULT_WRITE) ? VMT_PAGE_WRITTEN : VMT_PAGE_READ;
		return touch_range(L, tid, a, a + L->page, st);
	}
	const struct vmt_touch *t = &ev->u.touch;
	uint64_t at = t->start;
	for (uint32_t i = 0; i < t->nruns; i++) {
		uint64_t n = t->runs[i].pages;
		if (at >= RP_ADDR_LIMIT || n > (RP_ADDR_LIMIT - at) / L->page)
			break;
		uint64_t end = at + n * L->page;
		if (t->runs[i].state != VMT_PAGE_ABSENT) {
			int rc = touch_range(L, tid, at, end, t->runs[i].state);
			if (rc < 0)
				return rc;
		}
		at = end;
	}
	return 0;
}
