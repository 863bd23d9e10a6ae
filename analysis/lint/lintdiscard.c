/*
 * lintdiscard.c - the detectors of `vmtrace lint` for calls that give
 * pages back and buy nothing by it:
 *
 *   discard-before-unmap  madvise(MADV_DONTNEED/MADV_FREE) or
 *                         mprotect(PROT_NONE) of private anonymous memory
 *                         that the same thread unmaps next, with no other
 *                         call on the range in between and (after
 *                         MADV_DONTNEED) no page of it used again (V8
 *                         tearing down an isolate)
 *   free-before-dontneed  MADV_FREE of private anonymous memory that a
 *                         later MADV_DONTNEED of the process gives back
 *                         while at least as many of its pages are present
 *                         as the MADV_FREE found (jemalloc's decay with
 *                         muzzy_decay_ms): reclaim took none of them
 *   discard-locked        madvise(MADV_DONTNEED/MADV_FREE) that fails with
 *                         EINVAL on locked memory (malloc_trim under
 *                         mlockall)
 *   file-map-churn        a file mapping of at most 64 KiB unmapped again
 *                         before more than a few other small files were
 *                         mapped (git reading loose objects)
 * The rules discard-before-unmap and free-before-dontneed (rewrite/rules_discard.c) rewrite
 * what the first two find; they also keep a discard whose touches they
 * cannot carry along, so they may apply a little less often than the
 * findings count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lint_int.h"

static uint64_t pg_end(const van_lint *l, uint64_t a, uint64_t len)
{
	uint64_t e = a + ((len + l->page - 1) & ~(l->page - 1));
	return e < a ? ~(l->page - 1) : e;
}

static int ok(const struct vmt_syscall *sc)
{
	return !(sc->flags & VMT_SC_NO_RESULT) && !vmt_is_errno(sc->result);
}

/* [a, b) of proc is mapped, all private anonymous and not locked (as the
 * rules require). */
static int private_anon(const van_lint *l, uint32_t proc, uint64_t a, uint64_t b)
{
	uint64_t at = a;
	for (const struct van_vma *v = van_asmodel_first(l->model, proc, a); v && v->start < b;
	     v = van_asmodel_next(l->model, proc, v)) {
		if (v->start > at || (v->flags & (VAN_VMA_SHARED | VAN_VMA_FILE | VAN_VMA_SPECIAL |
						  VAN_VMA_HUGETLB | VAN_VMA_SYSV | VAN_VMA_LOCKED)))
			return 0;
		at = v->end;
		if (at >= b)
			return 1;
	}
	return 0;
}

static int locked(const van_lint *l, uint32_t proc, uint64_t a, uint64_t b)
{
	for (const struct van_vma *v = van_asmodel_first(l->model, proc, a); v && v->start < b;
	     v = van_asmodel_next(l->model, proc, v))
		if (v->flags & VAN_VMA_LOCKED)
			return 1;
	return 0;
}

/* ---- pending lists ------------------------------------------------------ */

/* A discard the list already holds (the same thread, range, call site,
 * advice and pages present, still pending) adds to that entry's count
 * instead of becoming another: a loop of discards without touches (a
 * trace without a touch source) would otherwise make the list, and every
 * search of it, as long as the loop.  Every count is the same either
 * way. */
static int pl_add(struct pend_list *p, const struct pend_discard *d)
{
	for (size_t i = 0; i < p->n; i++) {
		struct pend_discard *e = &p->d[i];
		if (e->start == d->start && e->end == d->end && e->thread == d->thread &&
		    e->stack == d->stack && e->op == d->op && e->present == d->present) {
			e->calls += d->calls;
			return 0;
		}
	}
	if (vmt_grow(&p->d, &p->cap, p->n + 1, sizeof(*p->d)))
		return -ENOMEM;
	p->d[p->n++] = *d;
	return 0;
}

static void pl_del(struct pend_list *p, size_t i)
{
	p->d[i] = p->d[--p->n];
}

/* Forget the entries overlapping [a, b), except those of thread `keep`
 * (VMT_NONE: none kept). */
static void pl_forget(struct pend_list *p, uint64_t a, uint64_t b, uint32_t keep)
{
	for (size_t i = 0; i < p->n;)
		if (p->d[i].start < b && a < p->d[i].end && p->d[i].thread != keep)
			pl_del(p, i);
		else
			i++;
}

/* The call d stands for, as an event to show. */
static struct vmt_event pend_event(const struct pend_discard *d, uint32_t proc)
{
	struct vmt_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.kind = VMT_EV_SYSCALL;
	ev.proc = proc;
	ev.thread = d->thread;
	ev.u.sc.op = d->op == VMT_OP_MPROTECT ? VMT_OP_MPROTECT : VMT_OP_MADVISE;
	ev.u.sc.nargs = 3;
	ev.u.sc.args[0] = d->start;
	ev.u.sc.args[1] = d->end - d->start;
	ev.u.sc.args[2] = d->op == VMT_OP_MPROTECT ? LX_PROT_NONE : d->op;
	ev.u.sc.stack_id = d->stack;
	return ev;
}

/* op of a pending discard: VMT_OP_MPROTECT for mprotect(PROT_NONE), else
 * the madvise advice. */
static uint32_t discard_kind(const struct vmt_syscall *sc)
{
	if (sc->op == VMT_OP_MPROTECT && sc->args[2] == LX_PROT_NONE)
		return VMT_OP_MPROTECT;
	if (sc->op == VMT_OP_MADVISE && (sc->args[2] == LX_MADV_DONTNEED || sc->args[2] == LX_MADV_FREE))
		return (uint32_t)sc->args[2];
	return 0;
}

/* ---- the detectors ------------------------------------------------------ */

/* A munmap of [a, b) by ev's thread: its pending discards inside count. */
static int dun_unmap(van_lint *l, struct lproc *P, const struct vmt_event *ev, uint64_t a,
		     uint64_t b)
{
	int counted = 0;
	const struct pend_discard *first = NULL; /* the example: the earliest call */
	for (size_t i = 0; i < P->dun.n; i++) {
		const struct pend_discard *d = &P->dun.d[i];
		if (d->thread != ev->thread || d->start < a || d->end > b)
			continue;
		P->dun_calls += d->calls;
		P->dun_bytes += (d->end - d->start) * d->calls;
		counted = 1;
		if (cs_tally_add(&l->sites_dun, d->stack,
				 d->op == VMT_OP_MPROTECT ? VMT_OP_MPROTECT : VMT_OP_MADVISE, d->calls))
			return -ENOMEM;
		if (!first || d->index < first->index)
			first = d;
	}
	if (first && !l->ex_dun.set) {
		struct vmt_event x = pend_event(first, ev->proc);
		lint_take_example(l, &l->ex_dun, first->index, &x);
	}
	P->dun_unmaps += counted;
	pl_forget(&P->dun, a, b, VMT_NONE);
	return 0;
}

/* A MADV_DONTNEED of [a, b) by ev's thread: the pending MADV_FREEs inside
 * whose pages are all still there count. */
static int fbd_dontneed(van_lint *l, struct lproc *P, const struct vmt_event *ev, uint64_t a,
			uint64_t b)
{
	for (size_t i = 0; i < P->fbd.n; i++) {
		const struct pend_discard *d = &P->fbd.d[i];
		if (d->start < a || d->end > b || d->present < 0)
			continue;
		int64_t now = tl_present(&l->touches, ev->thread, d->start, d->end);
		if (now < d->present)
			continue;
		P->fbd_pairs += d->calls;
		P->fbd_bytes += (d->end - d->start) * d->calls;
		P->fbd_cross += d->thread != ev->thread ? d->calls : 0;
		if (cs_tally_add(&l->sites_fbd, d->stack, VMT_OP_MADVISE, d->calls))
			return -ENOMEM;
		if (!l->ex_fbd.set) {
			struct vmt_event x = pend_event(d, ev->proc);
			lint_take_example(l, &l->ex_fbd, d->index, &x);
		}
	}
	pl_forget(&P->fbd, a, b, VMT_NONE);
	return 0;
}

static int fmc_map(van_lint *l, struct lproc *P, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	uint64_t a = (uint64_t)sc->result;
	if ((sc->args[3] & LX_MAP_ANONYMOUS) || !sc->args[1] || sc->args[1] > FMC_MAX_BYTES)
		return 0;
	uint64_t *v = vmt_htab_put(&P->fmc, a, 0, NULL), *n = vmt_htab_put(&P->fmc, a, 1, NULL);
	if (!v || !n)
		return -ENOMEM;
	*v = (uint64_t)sc->stack_id << 32 | (pg_end(l, a, sc->args[1]) - a);
	*n = ++P->fmc_serial;
	return 0;
}

static int fmc_unmap(van_lint *l, struct lproc *P, uint64_t index, const struct vmt_event *ev,
		     uint64_t a, uint64_t b)
{
	uint64_t *v = vmt_htab_get(&P->fmc, a, 0), *n = vmt_htab_get(&P->fmc, a, 1);
	if (!v || !n)
		return 0;
	uint64_t len = *v & 0xffffffffu, serial = *n;
	uint32_t stack = (uint32_t)(*v >> 32);
	vmt_htab_del(&P->fmc, a, 0);
	vmt_htab_del(&P->fmc, a, 1);
	/* Churn: unmapped before a few more small files were mapped (not
	 * mappings that pile up and go at the end, seed 002's shape). */
	if (b - a != len || P->fmc_serial - serial > FMC_MAX_LIVE)
		return 0;
	P->fmc_pairs++;
	P->fmc_bytes += len;
	if (cs_tally_add(&l->sites_fmc, stack, VMT_OP_MMAP, 1))
		return -ENOMEM;
	if (!l->ex_fmc.set)
		lint_take_example(l, &l->ex_fmc, index, ev);
	return 0;
}

int lnd_before(van_lint *l, uint64_t index, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct lproc *P = lint_proc(l, ev->proc);
	if (!P)
		return -ENOMEM;
	uint64_t a = sc->args[0], b = pg_end(l, a, sc->args[1]);
	uint32_t kind = discard_kind(sc);
	int rc;
	if (kind && kind != VMT_OP_MPROTECT && sc->result == -22 && !(sc->flags & VMT_SC_NO_RESULT) &&
	    locked(l, ev->proc, a, b)) {
		P->dlk_calls++;
		P->dlk_bytes += b - a;
		if (cs_tally_add(&l->sites_dlk, sc->stack_id, sc->op, 1))
			return -ENOMEM;
		if (!l->ex_dlk.set)
			lint_take_example(l, &l->ex_dlk, index, ev);
		return 0;
	}
	if (!ok(sc))
		return 0;
	if (sc->op == VMT_OP_MUNMAP) {
		if ((rc = dun_unmap(l, P, ev, a, b)) || (rc = fmc_unmap(l, P, index, ev, a, b)))
			return rc;
		pl_forget(&P->fbd, a, b, VMT_NONE);
		return 0;
	}
	if (kind == LX_MADV_DONTNEED && (rc = fbd_dontneed(l, P, ev, a, b)))
		return rc;
	const struct vmt_range *r = l->rg;
	int n = l->nrg;
	if (n < 0) {
		P->dun.n = P->fbd.n = 0;
	} else {
		/* A call on the range ends what waits there; a discard by the
		 * same thread adds to a chain (V8: mprotect(PROT_NONE), then
		 * madvise, then munmap). */
		for (int k = 0; k < n; k++) {
			pl_forget(&P->dun, r[k].start, r[k].end, kind ? ev->thread : VMT_NONE);
			pl_forget(&P->fbd, r[k].start, r[k].end, VMT_NONE);
		}
	}
	if (kind && private_anon(l, ev->proc, a, b)) {
		struct pend_discard d = { a, b, index, ev->thread, sc->stack_id, kind, -1, 1 };
		if ((rc = pl_add(&P->dun, &d)))
			return rc;
		if (kind == LX_MADV_FREE) {
			d.present = tl_present(&l->touches, ev->thread, a, b);
			if (d.present < 0)
				l->fbd_unknown += b - a;
			if ((rc = pl_add(&P->fbd, &d)))
				return rc;
		}
	}
	if (sc->op == VMT_OP_MMAP)
		return fmc_map(l, P, ev);
	return 0;
}

/* Pages present again after a MADV_DONTNEED: the range was used, so the
 * discard was not just in front of the munmap. */
static void present(struct lproc *P, uint64_t a, uint64_t b)
{
	for (size_t i = 0; i < P->dun.n;)
		if (P->dun.d[i].op == LX_MADV_DONTNEED && P->dun.d[i].start < b && a < P->dun.d[i].end)
			pl_del(&P->dun, i);
		else
			i++;
}

int lnd_after(van_lint *l, uint64_t index, const struct vmt_event *ev)
{
	(void)index;
	if (ev->proc >= l->nprc)
		return 0;
	struct lproc *P = &l->prc[ev->proc];
	if (ev->kind == VMT_EV_FAULT) {
		if (!vmt_fault_touches(&ev->u.fault))
			return 0;
		uint64_t pg = ev->u.fault.addr & ~(l->page - 1);
		present(P, pg, pg + l->page);
	} else if (ev->kind == VMT_EV_TOUCH) {
		const struct vmt_touch *t = &ev->u.touch;
		uint64_t at = t->start;
		for (uint32_t k = 0; k < t->nruns; k++) {
			uint64_t end = at + t->runs[k].pages * l->page;
			if (t->runs[k].state != VMT_PAGE_ABSENT)
				present(P, at, end);
			at = end;
		}
	} else if (ev->kind == VMT_EV_PROCESS_START && ev->u.process_start.how == VMT_PROC_VFORK &&
		   ev->u.process_start.parent_proc < l->nprc) {
		lnd_end_proc(l, ev->u.process_start.parent_proc);
	}
	return 0;
}

void lnd_end_proc(van_lint *l, uint32_t proc)
{
	if (proc >= l->nprc)
		return;
	struct lproc *P = &l->prc[proc];
	P->dun.n = P->fbd.n = 0;
	vmt_htab_free(&P->fmc);
}

void lnd_free(van_lint *l)
{
	for (size_t p = 0; p < l->nprc; p++) {
		free(l->prc[p].dun.d);
		free(l->prc[p].fbd.d);
		vmt_htab_free(&l->prc[p].fmc);
	}
}
