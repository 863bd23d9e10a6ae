/*
 * simtouch.c - the load-time side of touches: each TOUCH or FAULT event of
 * a thread becomes touch runs (replay region, offset, pages, read or
 * write) waiting for the thread's next op, over the mapped and accessible
 * parts of the recorded range only, and the pages count as present in the
 * simulated address space (sim.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "sim_int.h"

struct tctx {
	struct loader *L;
	uint32_t tid;
	struct lproc *P;
	int write;   /* recorded as written (or unknown) */
	int present; /* recorded as present (written or not: unknown) */
	int major;   /* a fault the kernel counted as major */
	int err;
};

static int set_bit(struct loader *L, uint64_t **map, size_t *cap, uint64_t w)
{
	int rc = ld_grow(L, map, cap, (size_t)(w / 64 + 1), sizeof(**map));
	if (rc < 0)
		return rc;
	(*map)[w / 64] |= 1ull << (w % 64);
	return 0;
}

/* Touched pages of a file mapping: their scratch file's page cache is to
 * hold the fault-around windows around them, as the recorded file's did
 * (a replayed read fault then maps what the program's mapped), but not a
 * window where the program took a major fault: that page, and likely its
 * neighbours, it did not find in the page cache (model.h, rp_file). */
static int mark_file(struct loader *L, const struct rpam_piece *p, int major)
{
	uint64_t off = 0, len = p->len;
	uint32_t fi = sim_file_at(L, p->region, p->off, &off, &len);
	if (fi == RP_VOID || !len)
		return 0;
	struct rp_file *f = &L->t->files[fi];
	uint64_t last = off + len - 1;
	if (f->zero || f->shm || last < off || last / RP_WARM_WINDOW >= RP_WARM_MAX_WINDOWS)
		return 0;
	int rc = 0;
	for (uint64_t w = off / RP_WARM_WINDOW; w <= last / RP_WARM_WINDOW && !rc; w++)
		rc = set_bit(L, &f->warm, &f->capwarm, w);
	if (major && !rc)
		rc = set_bit(L, &f->cold, &f->capcold, off / RP_WARM_WINDOW);
	return rc;
}

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
	if ((p->attr & AT_FILE) && (c->err = mark_file(L, p, c->major)) < 0)
		return 1;
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
static int touch_range(struct loader *L, uint32_t tid, uint64_t a, uint64_t b, uint32_t state,
		       int major)
{
	struct lproc *P = &L->lp[L->t->threads[tid].proc];
	struct tctx c = {L, tid, P, state != VMT_PAGE_READ, state == VMT_PAGE_PRESENT, major, 0};
	if (a >= RP_ADDR_LIMIT)
		return 0;
	if (b > RP_ADDR_LIMIT || b < a)
		b = RP_ADDR_LIMIT;
	rpam_pieces(&P->map, a, b, 0, touch_cb, &c);
	if (c.err < 0)
		return c.err;
	return add_tr(L, &L->lt[tid], a, b);
}

/*
 * An exec's own faults.  Once an exec has replaced the address space, the
 * kernel still writes into the new one before the program runs: it clears
 * the partial page at the end of each ELF image's data (the program's and
 * the interpreter's bss), and writes the auxiliary vector and argv/envp
 * pointers on the new stack.  Each such page is a fault of the new image,
 * taken in the kernel (its ip a kernel address), and the recorder sees it
 * before the EXEC event and its snapshot, when the simulated space is
 * still the old one: there, it lies outside every mapping.  So a fault
 * taken in the kernel outside every mapping is kept aside, counted as
 * outside (as it stays if no exec follows), and if the thread's next
 * element is an exec, it is done again in the new image once its
 * snapshot is in (sim_exec_faults), as a touch of the thread's first
 * element there.  (The pages the kernel fills through the new stack's
 * page tables for argv and the environment are faults too, but no event
 * shows them: sim_exec_faults tells them from the kernel's own count.)
 */
static int in_kernel(const struct vmt_event *ev)
{
	return ev->u.fault.ip >= RP_ADDR_LIMIT;
}

static int exec_fault_keep(struct loader *L, uint32_t tid, uint64_t a, uint32_t state)
{
	struct lthread *lt = &L->lt[tid];
	uint32_t seq = L->t->threads[tid].nelem;
	if (lt->nxf && lt->xf_seq != seq)
		lt->nxf = 0;
	if (lt->nxf >= 64) /* (an exec writes a few pages: not an exec's) */
		return 0;
	if (vmt_grow(&lt->xf, &lt->capxf, (size_t)lt->nxf + 1, sizeof(*lt->xf)))
		return ld_fail(L, -ENOMEM, "out of memory");
	lt->xf[lt->nxf++] = (struct lxfault){a, state};
	lt->xf_seq = seq;
	return 0;
}

/* The top n pages of the new stack, written (see sim_exec_faults). */
static int exec_arg_pages(struct loader *L, uint32_t tid, struct lproc *P, uint64_t n)
{
	uint64_t top = 0, bottom = 0;
	for (size_t i = 0; i < P->map.n; i++)
		if ((P->map.s[i].v.attr & AT_STACK) && P->map.s[i].end > top) {
			top = P->map.s[i].end;
			bottom = P->map.s[i].start;
		}
	if (!top)
		return 0;
	if (n > (top - bottom) / L->page)
		n = (top - bottom) / L->page;
	/* (counted with the recorded faults, as a FAULT event would be) */
	return touch_range(L, tid, top - n * L->page, top, VMT_PAGE_WRITTEN, 0);
}

int sim_exec_faults(struct loader *L, uint32_t p, uint32_t exec_tid)
{
	struct lproc *P = &L->lp[p];
	rp_trace *t = L->t;
	/* The faults the kernel counted up to this exec that no event shows
	 * (P->exec_minflt, its count at the exec, less the FAULT events),
	 * and of those, the ones since the exec before: the pages of the new
	 * stack that the exec filled with the arguments and the environment
	 * through its page tables (the top ones, down from the top: a page
	 * per 4 KiB of them), whose faults no tracepoint sees: in traces of
	 * the stream backend, as many as the arguments need, every time; in
	 * those of the inproc backend too, from format 1.4, whose counts
	 * leave its runtime's own faults out.  (The ptrace backend's count
	 * has the exec's faults in the kernel after the exec's snapshot,
	 * where they apply.)  A trace that has none of the exec's faults in
	 * the kernel (recorded by a normal user: no sample of a fault taken
	 * in the kernel) lacks them all: they are those pages too, here (the
	 * two partial pages of bss the exec clears among them). */
	uint64_t unseen = P->exec_counted && P->exec_minflt > P->faults_seen
		? P->exec_minflt - P->faults_seen : 0;
	int counted = !strcmp(t->rec_backend, "stream") ||
		      (!strcmp(t->rec_backend, "inproc") && t->rec_minor >= 4);
	uint64_t args = unseen > P->unseen && counted ? unseen - P->unseen : 0;
	if (P->exec_counted)
		P->unseen = unseen;
	P->exec_counted = 0;
	for (uint32_t i = 0; i < P->nthreads; i++) {
		uint32_t tid = P->threads[i];
		struct lthread *lt = &L->lt[tid];
		uint32_t n = lt->nxf, redone = 0;
		lt->nxf = 0;
		/* (only those of the element just before the exec's: the
		 * exec is the thread's last element) */
		if (!n || t->threads[tid].nelem != lt->xf_seq + 1)
			continue;
		for (uint32_t k = 0; k < n; k++) {
			uint64_t a = lt->xf[k].addr;
			if (!rpam_lookup(&P->map, a))
				continue;
			/* no longer outside (exec_fault_keep counted it so) */
			t->rec_procs[p].faults[RP_FK_OTHER]--;
			t->touch_unmapped_pages--;
			int rc = touch_range(L, tid, a, a + L->page, lt->xf[k].state, 0);
			if (rc < 0)
				return rc;
			redone++;
		}
		/* The recorder saw the faults this exec took in the kernel: the
		 * ones it did not see are those through page tables. */
		int rc;
		if (redone && args && (rc = exec_arg_pages(L, tid, P, args)) < 0)
			return rc;
		if (redone)
			args = 0;
	}
	/* (not at the root's first exec, the recorder's launch of it, whose
	 * counts are no part of the replay's yardstick) */
	int launch = t->procs[p].parent == RP_VOID && t->procs[p].plan == RP_VOID;
	if (args && !L->kernel_faults && !launch && exec_tid < t->nthreads &&
	    t->threads[exec_tid].proc == p)
		return exec_arg_pages(L, exec_tid, P, args);
	return 0;
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
		 * counted, not touched.  Nor is it one of the faults_seen that
		 * sim_exec_faults tells an exec's argument pages from: those
		 * are such faults, which older traces do not show at all. */
		if (!vmt_fault_touches(f)) {
			ld_count_faults(L, tid, RP_FK_OTHER, 1);
			return 0;
		}
		L->lp[L->t->threads[tid].proc].faults_seen++;
		uint32_t st = (f->access & VMT_FAULT_WRITE) ? VMT_PAGE_WRITTEN : VMT_PAGE_READ;
		L->kernel_faults |= in_kernel(ev);
		if (in_kernel(ev) && a < RP_ADDR_LIMIT) {
			struct lproc *P = &L->lp[L->t->threads[tid].proc];
			if (!rpam_lookup(&P->map, a)) {
				int rc = exec_fault_keep(L, tid, a, st);
				if (rc < 0)
					return rc;
			}
		}
		return touch_range(L, tid, a, a + L->page, st, (f->flags & VMT_FLT_MAJOR) != 0);
	}
	const struct vmt_touch *t = &ev->u.touch;
	uint64_t at = t->start;
	for (uint32_t i = 0; i < t->nruns; i++) {
		uint64_t n = t->runs[i].pages;
		if (at >= RP_ADDR_LIMIT || n > (RP_ADDR_LIMIT - at) / L->page)
			break;
		uint64_t end = at + n * L->page;
		if (t->runs[i].state != VMT_PAGE_ABSENT) {
			int rc = touch_range(L, tid, at, end, t->runs[i].state, 0);
			if (rc < 0)
				return rc;
		}
		at = end;
	}
	return 0;
}
