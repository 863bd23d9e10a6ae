/*
 * lintuncommit.c - the prot-none-free detector of `vmtrace lint`: memory
 * uncommitted by mmap(PROT_NONE, MAP_FIXED) and committed again, as
 * uncommit_int.h defines both (the rewrite rule prot-none-free sees the
 * same calls).
 *
 * Per process, the ranges uncommitted now.  A commit that restores the
 * protection of some of them is a re-commit: the uncommits it touches
 * count as cycles, once each, however many commits it takes (glibc and
 * HotSpot commit in other pieces than they uncommit), and by whichever
 * thread (G1 uncommits in its service thread and commits again in the VM
 * thread).  A munmap of all of an uncommitted range is a cycle too (the
 * memory went back for good).  Any other call on an uncommitted range
 * ends its story without a count; what is still uncommitted when the
 * process ends was "left uncommitted".
 */
#include <errno.h>
#include <string.h>

#include "lint_int.h"
#include "uncommit_int.h"

/* rs_ent.flags bit beyond uncommit_int.h's UC_*: counted as a cycle. */
#define LU_COUNTED 0x100u

int lu_before(van_lint *l, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	l->unc_candidate = uc_is_uncommit(sc, l->page - 1) &&
			   uc_committed(l->model, ev->proc, sc->args[0],
					sc->args[0] + ((sc->args[1] + l->page - 1) & ~(l->page - 1)),
					&l->unc_prot, &l->unc_flags);
	return 0;
}

static int uncommit(van_lint *l, struct lproc *P, uint64_t index, const struct vmt_event *ev,
		    uint64_t a, uint64_t b)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct vmt_rset_ent e = { .start = a, .end = b, .index = index, .thread = ev->thread,
			    .prot = l->unc_prot, .stack = sc->stack_id, .flags = l->unc_flags };
	if (vmt_rset_cut(&P->unc, a, b) || vmt_rset_add(&P->unc, &e) ||
	    cs_tally_add(&l->sites_unc, sc->stack_id, sc->op, 1))
		return -ENOMEM;
	if (!l->ex_pnf.set)
		lint_take_example(l, &l->ex_unc[index % LU_EXAMPLES], index, ev);
	P->unc_calls++;
	P->unc_bytes += b - a;
	if (l->unc_flags & UC_CHARGED) {
		P->unc_charged++;
		P->unc_charged_bytes += b - a;
	}
	return 0;
}

/* Uncommitted range e made a cycle (first time only). */
static int cycle(van_lint *l, struct lproc *P, struct vmt_rset_ent *e)
{
	if (e->flags & LU_COUNTED)
		return 0;
	e->flags |= LU_COUNTED;
	struct lthread *t = lint_thread(l, e->thread);
	if (!t)
		return -ENOMEM;
	t->proc = (uint32_t)(P - l->prc);
	t->pnf_cycles++;
	t->pnf_bytes += e->end - e->start;
	P->unc_cycles++;
	P->unc_cycle_bytes += e->end - e->start;
	const struct example *x = &l->ex_unc[e->index % LU_EXAMPLES];
	if (!l->ex_pnf.set && x->set && x->index == e->index)
		l->ex_pnf = *x;
	return 0;
}

static int recommit(van_lint *l, struct lproc *P, const struct vmt_event *ev, uint64_t a,
		    uint64_t b, uint32_t prot, int noreserve)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	uint64_t restored = 0;
	int rc;
	for (size_t i = vmt_rset_first(&P->unc, a); i < P->unc.n && P->unc.e[i].start < b; i++) {
		struct vmt_rset_ent *e = &P->unc.e[i];
		if (!uc_restores(e, prot, noreserve))
			continue;
		uint64_t lo = e->start > a ? e->start : a, hi = e->end < b ? e->end : b;
		restored += hi - lo;
		if (!(e->flags & LU_COUNTED)) {
			P->unc_recommitted++;
			P->unc_cross += e->thread != ev->thread;
		}
		if ((rc = cycle(l, P, e)))
			return rc;
	}
	if (restored) {
		if (cs_tally_add(&l->sites_recommit, sc->stack_id, sc->op, 1))
			return -ENOMEM;
		P->unc_cut += restored < b - a;
	}
	return vmt_rset_cut(&P->unc, a, b);
}

static int unmap(van_lint *l, struct lproc *P, uint64_t a, uint64_t b)
{
	int rc;
	for (size_t i = vmt_rset_first(&P->unc, a); i < P->unc.n && P->unc.e[i].start < b; i++) {
		struct vmt_rset_ent *e = &P->unc.e[i];
		if (a <= e->start && e->end <= b && !(e->flags & LU_COUNTED)) {
			P->unc_unmapped++;
			if ((rc = cycle(l, P, e)))
				return rc;
		}
	}
	return vmt_rset_cut(&P->unc, a, b);
}

int lu_after(van_lint *l, uint64_t index, const struct vmt_event *ev)
{
	if (ev->kind != VMT_EV_SYSCALL || ev->proc >= VMT_MAX_THREADS)
		return 0;
	const struct vmt_syscall *sc = &ev->u.sc;
	struct lproc *P = ev->proc < l->nprc ? &l->prc[ev->proc] : NULL;
	int candidate = l->unc_candidate, noreserve;
	uint32_t prot;
	l->unc_candidate = 0;
	if (!candidate && (!P || !P->unc.n))
		return 0;
	if (!P && !(P = lint_proc(l, ev->proc)))
		return -ENOMEM;
	uint64_t a = sc->args[0], b = a + ((sc->args[1] + l->page - 1) & ~(l->page - 1));
	if (candidate)
		return uncommit(l, P, index, ev, a, b);
	if (uc_is_commit(sc, l->page - 1, &prot, &noreserve))
		return recommit(l, P, ev, a, b, prot, noreserve);
	if (sc->op == VMT_OP_MUNMAP && !(sc->flags & VMT_SC_NO_RESULT) && sc->result == 0)
		return unmap(l, P, a, b);
	const struct vmt_range *r = l->rg;
	int n = l->nrg;
	if (n < 0)
		P->unc.n = 0;
	for (int k = 0; k < n; k++)
		if (vmt_rset_cut(&P->unc, r[k].start, r[k].end))
			return -ENOMEM;
	return 0;
}

void lu_end_proc(van_lint *l, uint32_t proc)
{
	if (proc >= l->nprc)
		return;
	struct lproc *P = &l->prc[proc];
	uint64_t last = UINT64_MAX;
	for (size_t i = 0; i < P->unc.n; i++) {
		const struct vmt_rset_ent *e = &P->unc.e[i];
		if (!(e->flags & LU_COUNTED) && e->index != last)
			P->unc_never++;
		last = e->index;
	}
	P->unc.n = 0;
}

void lu_free(van_lint *l)
{
	for (size_t p = 0; p < l->nprc; p++)
		vmt_rset_free(&l->prc[p].unc);
}
