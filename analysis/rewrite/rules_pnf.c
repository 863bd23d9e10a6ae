/*
 * rules_pnf.c - rewrite rule prot-none-free: memory uncommitted by
 * remapping it PROT_NONE, and committed again later (seed 000, and the
 * same cost in every allocator that gives memory back this way):
 *
 *     mmap(A, L, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS[|MAP_NORESERVE], -1, 0)
 *         over committed pages: the uncommit
 *     mprotect(C, M, P)  or  mmap(C, M, P, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0)
 *         over some of [A, A+L): the re-commit
 *
 * becomes
 *
 *     madvise(A, L, MADV_DONTNEED)   the range keeps its protection P
 *     the re-commit over the parts of [C, C+M) that are not kept: the
 *     part over [A, A+L) would change nothing and goes
 *
 * Both give the pages back (the next touch faults in a zero page), but a
 * remap replaces VMAs under mmap_lock held for writing, twice per cycle,
 * where madvise(MADV_DONTNEED) takes it for reading.  glibc's old free
 * (seed 000) commits with mprotect(PROT_READ|PROT_WRITE), today's glibc
 * grows its arenas with mprotect and shrinks them this way under strict
 * overcommit, and HotSpot commits its heaps with mmap(MAP_FIXED, RW) and
 * uncommits them with mmap(PROT_NONE, MAP_NORESERVE), the re-commit often
 * in another thread (G1: the service thread uncommits, the VM thread
 * expands).
 *
 * The uncommit must be exactly that mmap, succeeded at A, and the model
 * (of the recording, before it) must show all of [A, A+L) mapped by
 * private anonymous VMAs with one protection P other than PROT_NONE,
 * protection key 0, unlocked and
 * without attributes a madvise keeps but a new mapping resets
 * (MADV_DONTFORK, MADV_HUGEPAGE, ...): uncommit_int.h.  It does not matter how
 * the pages were committed nor how the range lines up with the calls
 * that committed it.  The uncommit is held back until what happens next
 * to its range shows whether it may become a madvise:
 *   - a re-commit of any part of it with protection P (and for an mmap,
 *     MAP_NORESERVE as before), by any thread of the process: yes.  The
 *     whole range is then "kept": read-write in the rewritten trace
 *     where the recording has it PROT_NONE, and every later re-commit
 *     with protection P loses its part over kept ranges (a re-commit that
 *     also covers reservation shrinks to that part, or splits);
 *   - a successful munmap of all of it: yes (neither side can reach the
 *     range again);
 *   - anything else: no, the uncommit stays as recorded: a re-commit
 *     with another protection or other flags, another call on any part
 *     of it (mlock, madvise, a file mapping over it, a partial munmap),
 *     a touch or fault showing pages present while it is PROT_NONE (by
 *     any thread), a fork, exec or exit of the process, a new snapshot,
 *     lost events, the end of the trace (a range kept PROT_NONE to the
 *     end may be a guard or a use-after-free trap), or too many events
 *     held.
 * A call on a kept range that would act differently on a read-write
 * range than on the recorded PROT_NONE one (mlock, mlockall, madvise
 * that populates or sets attributes, mremap, pkey_mprotect, mseal) first
 * gets mprotect(range, PROT_NONE) inserted before it, which restores the
 * recorded state; calls that end in the same state either way (munmap,
 * mprotect, an mmap over it, discarding madvise, queries) pass as they
 * are.
 *
 * Ordering across threads: the madvise stays where the uncommit was and
 * acts on the same range, so in a --order=resource replay every later
 * call or touch on the range, by any thread, still waits for it; a
 * dropped re-commit carried no other edge of the recording.
 *
 * Commit charge: an uncommit of private writable memory drops its charge
 * against the commit limit, a madvise keeps it.  Under
 * vm.overcommit_memory=2 (glibc shrinks its arenas with mmap(PROT_NONE)
 * only then, to drop the charge) the rewritten program could fail
 * allocations the recording made, so a trace whose header options say
 * overcommit=2 gets no such uncommit rewritten; for other traces the
 * rule counts the charge it keeps, and says so in a note (a header
 * without the option does not say which mode the recording ran under).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "vmtutil.h"
#include "rewrite_int.h"
#include "uncommit_int.h"

/* Most pieces a re-commit is cut into (more: it stays whole). */
#define PNF_MAX_PIECES 64

struct pnf_proc {
	struct vmt_rset pend; /* held uncommits: seq, thread, prot and flags before */
	struct vmt_rset kept; /* converted uncommits not yet re-committed */
};

struct pnf {
	struct pnf_proc *p;
	size_t np; /* (p's capacity, for vmt_grow) */
	int strict; /* the header says overcommit=2 */
	uint64_t strict_kept, charged, charged_bytes, restores, cut;
};

static void *pnf_create(struct rw_stage *s)
{
	return calloc(1, sizeof(struct pnf));
}

static void pnf_destroy(void *st)
{
	struct pnf *x = st;
	for (uint32_t i = 0; i < x->np; i++) {
		vmt_rset_free(&x->p[i].pend);
		vmt_rset_free(&x->p[i].kept);
	}
	free(x->p);
	free(x);
}

static int pnf_start(struct rw_stage *s, const struct vmt_header *h)
{
	struct pnf *x = s->st;
	x->strict = uc_strict_overcommit(h);
	return 0;
}

static struct pnf_proc *proc_of(struct pnf *x, uint32_t proc, int create)
{
	if (proc >= x->np && (!create || proc >= VMT_MAX_THREADS ||
			      vmt_grow(&x->p, &x->np, (size_t)proc + 1, sizeof(*x->p))))
		return NULL;
	return &x->p[proc];
}

/* ---- decisions -------------------------------------------------------- */

/* Pending uncommit i of P goes: as madvise(MADV_DONTNEED) (convert; then
 * kept unless `unmapped`), or as recorded. */
static int decide(struct rw_stage *s, struct pnf_proc *P, size_t i, int convert, int unmapped)
{
	struct pnf *x = s->st;
	struct vmt_rset_ent e = P->pend.e[i];
	vmt_rset_del(&P->pend, i);
	if (!convert)
		return rw_release(s, e.seq, 0);
	struct vmt_event *h = rw_held(s, e.seq), m;
	if (!h)
		return VMT_E_STATE;
	uint64_t args[3] = { h->u.sc.args[0], h->u.sc.args[1], LX_MADV_DONTNEED };
	int rc = rw_applied(s, h);
	if (rc)
		return rc;
	rw_make_sc(&m, h, VMT_OP_MADVISE, args, 0);
	*h = m; /* a syscall event owns no pointers */
	if (e.flags & UC_CHARGED) {
		x->charged++;
		x->charged_bytes += e.end - e.start;
	}
	if (!unmapped && (rc = vmt_rset_add(&P->kept, &e)))
		return rc;
	return rw_release(s, e.seq, 0);
}

/* Pending uncommits overlapping [a, b) stay as recorded. */
static int keep_pending(struct rw_stage *s, struct pnf_proc *P, uint64_t a, uint64_t b)
{
	int rc;
	for (size_t i = vmt_rset_first(&P->pend, a); i < P->pend.n && P->pend.e[i].start < b;)
		if ((rc = decide(s, P, i, 0, 0)))
			return rc;
	return 0;
}

/* Insert mprotect(piece, PROT_NONE) before ev for every kept piece in
 * [a, b), and forget them: the range is as recorded again. */
static int restore(struct rw_stage *s, struct pnf_proc *P, const struct vmt_event *ev, uint64_t a,
		   uint64_t b)
{
	struct pnf *x = s->st;
	int rc;
	for (size_t i = vmt_rset_first(&P->kept, a); i < P->kept.n && P->kept.e[i].start < b; i++) {
		uint64_t lo = P->kept.e[i].start > a ? P->kept.e[i].start : a;
		uint64_t hi = P->kept.e[i].end < b ? P->kept.e[i].end : b;
		uint64_t args[3] = { lo, hi - lo, LX_PROT_NONE };
		struct vmt_event m;
		rw_make_sc(&m, ev, VMT_OP_MPROTECT, args, 0);
		m.u.sc.stack_id = VMT_NONE;
		if ((rc = rw_emit(s, &m)))
			return rc;
		x->restores++;
	}
	return vmt_rset_cut(&P->kept, a, b);
}

/* Whether a call on a kept range acts on it as on the recorded PROT_NONE
 * range (so the kept range may stay). */
static int same_on_none(const struct vmt_syscall *sc)
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	if (oi && (oi->effects & VMT_OPE_QUERY))
		return 1;
	return sc->op == VMT_OP_MADVISE && vmt_madv_discards(sc->args[2]) &&
	       sc->args[2] != LX_MADV_REMOVE;
}

/* ---- events ----------------------------------------------------------- */

static int on_uncommit(struct rw_stage *s, struct pnf_proc *P, const struct vmt_event *ev,
		       uint64_t a, uint64_t b)
{
	struct pnf *x = s->st;
	uint32_t prot = 0, flags;
	if (!uc_committed(s->model, ev->proc, a, b, &prot, &flags))
		return 1;
	if (x->strict && (flags & UC_CHARGED)) {
		x->strict_kept++;
		return 1;
	}
	struct vmt_rset_ent e = { .start = a, .end = b, .thread = ev->thread, .prot = prot,
			    .flags = flags };
	int rc = rw_hold(s, ev, &e.seq);
	return rc ? rc : vmt_rset_add(&P->pend, &e);
}

/* A commit of [a, b) with protection prot. */
static int on_commit(struct rw_stage *s, struct pnf_proc *P, const struct vmt_event *ev,
		     uint64_t a, uint64_t b, uint32_t prot, int noreserve)
{
	struct pnf *x = s->st;
	int rc;
	for (size_t i = vmt_rset_first(&P->pend, a); i < P->pend.n && P->pend.e[i].start < b;)
		if ((rc = decide(s, P, i, uc_restores(&P->pend.e[i], prot, noreserve), 0)))
			return rc;
	/* The kept parts it restores go from the call; the others stay in
	 * it (the call then ends in the same state on both sides). */
	uint64_t pieces[2 * PNF_MAX_PIECES], at = a;
	unsigned np = 0;
	int dropped = 0, too_many = 0;
	for (size_t i = vmt_rset_first(&P->kept, a); i < P->kept.n && P->kept.e[i].start < b; i++) {
		const struct vmt_rset_ent *k = &P->kept.e[i];
		if (!uc_restores(k, prot, noreserve))
			continue;
		uint64_t lo = k->start > a ? k->start : a, hi = k->end < b ? k->end : b;
		if (lo > at && !(too_many = np == PNF_MAX_PIECES)) {
			pieces[2 * np] = at;
			pieces[2 * np++ + 1] = lo;
		}
		at = hi;
		dropped = 1;
	}
	if (at < b && !too_many && !(too_many = np == PNF_MAX_PIECES)) {
		pieces[2 * np] = at;
		pieces[2 * np++ + 1] = b;
	}
	if (!dropped || too_many)
		return vmt_rset_cut(&P->kept, a, b) ? -ENOMEM : rw_emit(s, ev);
	if (!np)
		rw_removed(s, 1);
	else
		x->cut++;
	for (unsigned k = 0; k < np; k++) {
		const struct vmt_syscall *sc = &ev->u.sc;
		uint64_t args[VMT_MAX_ARGS];
		struct vmt_event m;
		memcpy(args, sc->args, sizeof(args));
		args[0] = pieces[2 * k];
		args[1] = pieces[2 * k + 1] - pieces[2 * k];
		rw_make_sc(&m, ev, sc->op, args, sc->op == VMT_OP_MMAP ? (int64_t)args[0] : 0);
		if ((rc = rw_emit(s, &m)))
			return rc;
	}
	return vmt_rset_cut(&P->kept, a, b);
}

static int on_munmap(struct rw_stage *s, struct pnf_proc *P, const struct vmt_event *ev,
		     uint64_t a, uint64_t b)
{
	int rc;
	for (size_t i = vmt_rset_first(&P->pend, a); i < P->pend.n && P->pend.e[i].start < b;) {
		int whole = a <= P->pend.e[i].start && P->pend.e[i].end <= b;
		if ((rc = decide(s, P, i, whole, 1)))
			return rc;
	}
	if ((rc = vmt_rset_cut(&P->kept, a, b)))
		return rc;
	return rw_emit(s, ev);
}

static int pnf_syscall(struct rw_stage *s, struct pnf *x, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct pnf_proc *P = proc_of(x, ev->proc, 1);
	uint32_t prot;
	int noreserve, rc;
	if (!P)
		return -ENOMEM;
	uint64_t a = sc->args[0], b = rw_end(s, a, sc->args[1]);
	if (uc_is_uncommit(sc, s->page_mask) && (rc = on_uncommit(s, P, ev, a, b)) <= 0)
		return rc;
	if (uc_is_commit(sc, s->page_mask, &prot, &noreserve))
		return on_commit(s, P, ev, a, b, prot, noreserve);
	if (sc->op == VMT_OP_MUNMAP && rw_sc_ok(sc))
		return on_munmap(s, P, ev, a, b);
	struct vmt_range rg[2];
	int n = vmt_sc_ranges(sc, s->page_mask + 1, rg);
	if (n < 0) {
		rg[0] = (struct vmt_range){ 0, UINT64_MAX };
		n = 1;
	}
	for (int k = 0; k < n; k++) {
		if ((rc = keep_pending(s, P, rg[k].start, rg[k].end)))
			return rc;
		if (!vmt_rset_overlaps(&P->kept, rg[k].start, rg[k].end))
			continue;
		if (same_on_none(sc))
			continue;
		/* A layout change or mprotect ends in the same state on both
		 * sides; anything else sees the recorded range first. */
		const struct vmt_op_info *oi = vmt_op_info(sc->op);
		int same_end = sc->op == VMT_OP_MPROTECT || sc->op == VMT_OP_MMAP ||
			       sc->op == VMT_OP_SHMAT || sc->op == VMT_OP_BRK ||
			       (oi && oi->range == VMT_RANGE_SEGMENT);
		if (same_end && rw_sc_ok(sc))
			rc = vmt_rset_cut(&P->kept, rg[k].start, rg[k].end);
		else
			rc = restore(s, P, ev, rg[k].start, rg[k].end);
		if (rc)
			return rc;
	}
	return rw_emit(s, ev);
}

/* Pages present in a range the recording has PROT_NONE: a pending
 * uncommit stays as recorded, a kept range is no longer followed. */
static int pnf_present(struct rw_stage *s, struct pnf_proc *P, uint64_t a, uint64_t b)
{
	int rc = keep_pending(s, P, a, b);
	return rc ? rc : vmt_rset_cut(&P->kept, a, b);
}

static int pnf_touch(struct rw_stage *s, struct pnf_proc *P, const struct vmt_touch *t)
{
	uint64_t at = t->start;
	int rc = 0;
	for (uint32_t k = 0; !rc && k < t->nruns; k++) {
		uint64_t end = rw_run_end(s, at, t->runs[k].pages);
		if (t->runs[k].state != VMT_PAGE_ABSENT)
			rc = pnf_present(s, P, at, end);
		at = end;
	}
	return rc;
}

/* Forget process P: its pending uncommits stay as recorded. */
static int pnf_forget(struct rw_stage *s, struct pnf_proc *P)
{
	if (!P)
		return 0;
	int rc = keep_pending(s, P, 0, UINT64_MAX);
	P->kept.n = 0;
	return rc;
}

static int pnf_fork(struct rw_stage *s, struct pnf *x, const struct vmt_process_start *ps,
		    uint32_t child)
{
	struct pnf_proc *P = proc_of(x, ps->parent_proc, 0);
	if (!P)
		return 0;
	int rc = keep_pending(s, P, 0, UINT64_MAX);
	if (rc || ps->how == VMT_PROC_VFORK) {
		/* A vfork child shares the parent's space under another
		 * process index: the parent's ranges cannot be followed. */
		P->kept.n = 0;
		return rc;
	}
	/* A copy of the address space: the child has the kept ranges too. */
	struct pnf_proc *C = proc_of(x, child, 1);
	if (!C)
		return -ENOMEM;
	P = &x->p[ps->parent_proc];
	C->kept.n = 0;
	for (size_t i = 0; i < P->kept.n; i++)
		if ((rc = vmt_rset_add(&C->kept, &P->kept.e[i])))
			return rc;
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
		if (P && vmt_fault_touches(&ev->u.fault)) {
			uint64_t pg = ev->u.fault.addr & ~s->page_mask;
			rc = pnf_present(s, P, pg, pg + s->page_mask + 1);
		}
		break;
	default:
		break;
	}
	struct rw_stale st = rw_stale_of(ev);
	switch (st.kind) {
	case RW_STALE_GONE:
		if (st.proc == VMT_NONE)
			for (uint32_t p = 0; !rc && p < x->np; p++)
				rc = pnf_forget(s, &x->p[p]);
		else
			rc = pnf_forget(s, P);
		break;
	case RW_STALE_FORK:
	case RW_STALE_VFORK: /* (pnf_fork tells them apart) */
		rc = pnf_fork(s, x, &ev->u.process_start, st.child);
		break;
	case RW_STALE_NONE:
		break;
	}
	return rc ? rc : rw_emit(s, ev);
}

static int pnf_overflow(struct rw_stage *s, uint64_t seq)
{
	struct pnf *x = s->st;
	for (uint32_t p = 0; p < x->np; p++)
		for (size_t i = 0; i < x->p[p].pend.n; i++)
			if (x->p[p].pend.e[i].seq == seq)
				return decide(s, &x->p[p], i, 0, 0);
	return VMT_E_STATE;
}

/* End of the trace: uncommits still pending were never committed again
 * nor unmapped; they stay as recorded. */
static int pnf_finish(struct rw_stage *s)
{
	struct pnf *x = s->st;
	int rc = 0;
	for (uint32_t p = 0; !rc && p < x->np; p++)
		rc = keep_pending(s, &x->p[p], 0, UINT64_MAX);
	if (x->strict_kept)
		rw_note(s, "%" PRIu64 " uncommit%s of charged memory left as recorded: the trace was "
			   "recorded with vm.overcommit_memory=2, where madvise would keep the "
			   "commit charge the remap drops",
			x->strict_kept, x->strict_kept == 1 ? "" : "s");
	else if (x->charged) {
		char h[32];
		rw_note(s, "%" PRIu64 " uncommit%s (%s) dropped a commit charge that madvise keeps: "
			   "under vm.overcommit_memory=2 the rewritten program stays charged for "
			   "that memory (the trace does not say which mode it was recorded under)",
			x->charged, x->charged == 1 ? "" : "s",
			vmt_format_bytes(h, sizeof(h), x->charged_bytes));
	}
	if (x->cut)
		rw_detail(s, "re-commits cut to the memory they commit", x->cut);
	if (x->restores)
		rw_detail(s, "kept ranges set PROT_NONE again before a call", x->restores);
	return rc;
}

const struct rw_rule rw_rule_prot_none_free = {
	.name = "prot-none-free",
	.summary = "uncommit by mmap(PROT_NONE, MAP_FIXED) of committed memory -> "
		   "madvise(MADV_DONTNEED), the range keeps its protection and re-commits "
		   "of it are dropped",
	.needs_model = 1,
	.create = pnf_create,
	.destroy = pnf_destroy,
	.start = pnf_start,
	.event = pnf_event,
	.overflow = pnf_overflow,
	.finish = pnf_finish,
};
