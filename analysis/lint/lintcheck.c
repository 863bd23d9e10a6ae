/*
 * lintcheck.c - the detectors of `vmtrace lint` (see lint.h): one pass over
 * the trace that counts, per thread or process, what the findings
 * (lintfind.c) are decided on.
 *
 * The address-space model (asmodel.h) answers "how many VMAs", "did this
 * mmap merge", "is this page anonymous", "how many bytes did this call
 * lock"; a table of faulted pages per process answers "was this page read
 * before it was written".  Each detector keeps counters and the example
 * events.
 *
 * Flag values are the Linux generic ABI's (the same on x86-64 and arm64),
 * spelled out because a trace is read on other machines than the one that
 * recorded it (as in format/names.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lint_int.h"
#include "uncommit_int.h"

/* ---- Small helpers ------------------------------------------------------ */

static int failed(const struct vmt_syscall *sc)
{
	return (sc->flags & VMT_SC_NO_RESULT) || vmt_is_errno(sc->result);
}

static uint64_t page_down(const van_lint *l, uint64_t a)
{
	return a & ~(l->page - 1);
}

static uint64_t page_up(const van_lint *l, uint64_t a)
{
	uint64_t r = (a + l->page - 1) & ~(l->page - 1);
	return r < a ? ~(l->page - 1) : r; /* saturate at the top */
}

/* ---- Lifecycle ---------------------------------------------------------- */

van_lint *van_lint_new(const struct vmt_header *h)
{
	van_lint *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->h = h;
	l->page = h && h->page_size && !(h->page_size & (h->page_size - 1)) ? h->page_size : 4096;
	l->strict = uc_strict_overcommit(h);
	l->zero_page = vmt_header_zero_page(h);
	tl_init(&l->touches, l->page);
	cs_tally_init(&l->sites_unc);
	cs_tally_init(&l->sites_recommit);
	cs_tally_init(&l->sites_dun);
	cs_tally_init(&l->sites_fbd);
	cs_tally_init(&l->sites_dlk);
	cs_tally_init(&l->sites_fmc);
	l->model = van_asmodel_for(h);
	l->syms = vmt_symtab_new();
	if (!l->model || !l->syms) {
		van_lint_free(l);
		return NULL;
	}
	vmt_htab_init(&l->freed);
	vmt_htab_init(&l->pages);
	return l;
}

void van_lint_free(van_lint *l)
{
	if (!l)
		return;
	van_asmodel_free(l->model);
	vmt_symtab_free(l->syms);
	vmt_buf_free(&l->scratch);
	lu_free(l);
	lnd_free(l);
	tl_free(&l->touches);
	cs_tally_free(&l->sites_unc);
	cs_tally_free(&l->sites_recommit);
	cs_tally_free(&l->sites_dun);
	cs_tally_free(&l->sites_fbd);
	cs_tally_free(&l->sites_dlk);
	cs_tally_free(&l->sites_fmc);
	free(l->thr);
	free(l->prc);
	vmt_htab_free(&l->freed);
	vmt_htab_free(&l->pages);
	free(l->found);
	free(l);
}

/* ---- Detectors ----------------------------------------------------------- */

/* Forget the fault state of pages whose contents the op discarded. */
static void discard_pages(van_lint *l, uint32_t proc, uint64_t start, uint64_t len)
{
	if (!len || !l->pages.n)
		return;
	uint64_t lo = page_down(l, start), hi = page_up(l, start + len);
	if (hi < lo)
		hi = ~(l->page - 1);
	vmt_htab_del_range(&l->pages, lo, hi, l->page, proc);
}

/* seed 001: bytes given back with MADV_FREE, and ranges freed again. */
static int check_free(van_lint *l, uint64_t index, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct lproc *p;
	if (sc->op == VMT_OP_PROCESS_MADVISE && (int32_t)sc->args[3] == LX_MADV_FREE) {
		/* The ranges are in the tracee's iovec: count the call only. */
		if (!(p = lint_proc(l, ev->proc)))
			return -ENOMEM;
		p->free_calls++;
		return 0;
	}
	if (sc->op != VMT_OP_MADVISE || (int32_t)sc->args[2] != LX_MADV_FREE)
		return 0;
	if (!(p = lint_proc(l, ev->proc)))
		return -ENOMEM;
	uint64_t len = sc->args[1];
	p->free_calls++;
	p->free_bytes += len;
	int created;
	uint64_t *v = vmt_htab_put(&l->freed, sc->args[0], ev->proc, &created);
	if (!v)
		return -ENOMEM;
	if (!created && *v >= len) {
		p->refree_calls++;
		p->refree_bytes += len;
		if (!l->ex_free.set)
			lint_take_example(l, &l->ex_free, index, ev);
	}
	if (created || *v < len)
		*v = len;
	return 0;
}

static enum frag_reason why_apart(const struct van_vma *a, const struct van_vma *b)
{
	if (a->prot != b->prot)
		return FR_PROT;
	if ((a->flags ^ b->flags) & VAN_VMA_FILE)
		return FR_FILE_ANON;
	if (a->flags & VAN_VMA_FILE) {
		if (a->dev != b->dev || a->ino != b->ino)
			return FR_OTHER_FILE;
		const struct van_vma *lo = a->start < b->start ? a : b, *hi = lo == a ? b : a;
		if (lo->offset + (lo->end - lo->start) != hi->offset)
			return FR_OFFSET;
	}
	if ((a->flags ^ b->flags) & ~(uint32_t)VAN_VMA_SNAPSHOT)
		return FR_FLAGS;
	if (!(a->flags & VAN_VMA_FILE) && a->anon && b->anon && a->anon != b->anon)
		return FR_ANON_VMA;
	return FR_OTHER;
}

/* seed 002: after the model applied a successful mmap: did a small new
 * mapping next to a neighbour stay a VMA of its own? */
static int check_frag(van_lint *l, uint64_t index, const struct vmt_event *ev,
		      const struct van_as_effect *eff)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct lproc *p = lint_proc(l, ev->proc);
	if (!p)
		return -ENOMEM;
	if (eff->changed) {
		struct van_as_counts c;
		van_asmodel_counts(l->model, ev->proc, &c);
		if (c.vmas > p->peak_vmas) {
			p->peak_vmas = c.vmas;
			p->peak_ts = ev->ts_ns;
		}
	}
	if (sc->op != VMT_OP_MMAP || sc->args[1] > FRAG_SMALL_BYTES || !sc->args[1])
		return 0;
	p->small_maps++;
	if (eff->merges)
		return 0;
	uint64_t start = (uint64_t)sc->result, end = page_up(l, start + sc->args[1]);
	const struct van_vma *v = van_asmodel_lookup(l->model, ev->proc, start);
	if (!v || v->start != start || v->end != end)
		return 0; /* the model does not see a VMA of its own */
	struct van_vma self = *v;
	const struct van_vma *nb = start ? van_asmodel_lookup(l->model, ev->proc, start - 1) : NULL;
	if (!nb || nb->end != start)
		nb = van_asmodel_lookup(l->model, ev->proc, end);
	if (!nb || (nb->start != end && nb->end != start))
		return 0; /* no neighbour: nothing to merge with */
	enum frag_reason r = why_apart(&self, nb);
	p->unmerged++;
	p->reasons[r]++;
	/* The FRAG_EXAMPLE_AT-th case of a reason is part of a repeated
	 * pattern, where the first one may be a startup mapping of ld.so. */
	if (p->reasons[r] <= FRAG_EXAMPLE_AT)
		lint_take_example(l, &l->ex_frag[r], index, ev);
	return 0;
}

/* seed 003: calls that lock (and so populate) large ranges, and mlock
 * called page by page. */
static int check_lock(van_lint *l, uint64_t index, const struct vmt_event *ev,
		      const struct van_as_effect *eff)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	int onfault = 0;
	/* The range the call locked: what its arguments name. */
	uint64_t start = page_down(l, sc->args[0]), end = page_up(l, sc->args[0] + sc->args[1]);

	switch (sc->op) {
	case VMT_OP_MLOCK:
	case VMT_OP_MLOCK2:
		onfault = sc->op == VMT_OP_MLOCK2 && (sc->args[2] & LX_MLOCK_ONFAULT);
		if (!onfault && sc->args[1] <= MLOCK_SMALL_PAGES * l->page) {
			struct lproc *p = lint_proc(l, ev->proc);
			if (!p)
				return -ENOMEM;
			p->small_mlocks++;
			if (!l->ex_mlock.set)
				lint_take_example(l, &l->ex_mlock, index, ev);
		}
		break;
	case VMT_OP_MLOCKALL:
		onfault = (sc->args[0] & LX_MCL_ONFAULT) != 0;
		start = 0;
		end = ~0ull;
		break;
	case VMT_OP_MMAP: {
		start = (uint64_t)sc->result;
		end = page_up(l, start + sc->args[1]);
		const struct van_vma *v = van_asmodel_lookup(l->model, ev->proc, start);
		onfault = v && (v->flags & VAN_VMA_LOCKONFAULT);
		break;
	}
	default:
		break;
	}
	if (onfault || !eff->changed || eff->d_locked < (int64_t)LOCK_MIN_BYTES)
		return 0;
	if (l->nlocks == LOCK_MAX_RECORDS)
		return 0; /* later large locks go unchecked */
	struct lockrec *r = &l->locks[l->nlocks++];
	memset(r, 0, sizeof(*r));
	r->proc = ev->proc;
	r->start = start;
	r->end = end;
	/* Pages faulted before the lock were in use: count them. */
	r->used_pages = vmt_htab_count_range(&l->pages, page_down(l, start), end, l->page, ev->proc);
	r->ns = sc->exit_ns > ev->ts_ns ? sc->exit_ns - ev->ts_ns : 0;
	r->bytes = (uint64_t)eff->d_locked;
	lint_take_example(l, &r->ex, index, ev);
	return 0;
}

/* seed 004, and use of locked ranges: one FAULT event. */
static int check_fault(van_lint *l, uint64_t index, const struct vmt_event *ev)
{
	const struct vmt_fault *f = &ev->u.fault;
	uint64_t pg = page_down(l, f->addr);
	int write = (f->access & VMT_FAULT_WRITE) != 0;
	int read = !write && (f->access & VMT_FAULT_READ);
	int created;

	l->had_faults = 1;
	if (!vmt_fault_touches(f))
		return 0;
	/* (Only a page's first fault counts, and only it needs the locks.) */
	int first = l->nlocks && !vmt_htab_get(&l->pages, pg, ev->proc);
	for (uint32_t i = 0; first && i < l->nlocks; i++) {
		struct lockrec *r = &l->locks[i];
		if (r->proc == ev->proc && pg >= r->start && pg < r->end)
			r->used_pages++;
	}
	uint64_t *st = vmt_htab_put(&l->pages, pg, ev->proc, &created);
	if (!st)
		return -ENOMEM;
	if (created && read) {
		/* A first read on a private anonymous page maps the zero page. */
		const struct van_vma *v = van_asmodel_lookup(l->model, ev->proc, pg);
		if (v && !(v->flags & (VAN_VMA_FILE | VAN_VMA_SHARED)) && (v->prot & VMT_PROT_W)) {
			*st = PG_READ_FIRST;
			struct lproc *p = lint_proc(l, ev->proc);
			if (!p)
				return -ENOMEM;
			p->read_first_pages++;
		}
	} else if (write && (*st & PG_READ_FIRST) && !(*st & PG_WRITTEN)) {
		struct lthread *t = lint_thread(l, ev->thread);
		struct lproc *p = lint_proc(l, ev->proc);
		if (!t || !p)
			return -ENOMEM;
		t->proc = ev->proc;
		t->rtw_pages++;
		p->rtw_pages++;
		if (!l->ex_rtw.set)
			lint_take_example(l, &l->ex_rtw, index, ev);
	}
	if (write)
		*st |= PG_WRITTEN;
	return 0;
}

/* The fault states a successful syscall discards: the pages of its first
 * range (an mremap's old one), unless it is an mremap that neither moved
 * nor shrank.  A System V detach is left alone: the call does not say how
 * large the segment was. */
static void syscall_discards(van_lint *l, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	if (!vmt_sc_discards(sc) || sc->op == VMT_OP_SHMDT)
		return;
	if (sc->op == VMT_OP_MREMAP && (uint64_t)sc->result == sc->args[0] && sc->args[2] >= sc->args[1])
		return;
	if (l->nrg > 0)
		discard_pages(l, ev->proc, l->rg[0].start, l->rg[0].end - l->rg[0].start);
}

int van_lint_event(van_lint *l, uint64_t index, const struct vmt_event *ev)
{
	int rc;
	switch (ev->kind) {
	case VMT_EV_STACK:
	case VMT_EV_SYMBOL:
	case VMT_EV_STRING:
		/* A bad table entry only costs the call-site names. */
		rc = vmt_symtab_add(l->syms, ev);
		return rc == -ENOMEM ? rc : 0;
	case VMT_EV_FAULT:
		if ((rc = check_fault(l, index, ev)))
			return rc;
		break;
	case VMT_EV_EXEC:
	case VMT_EV_PROCESS_EXIT:
	case VMT_EV_MAPS:
		if (ev->kind != VMT_EV_MAPS)
			discard_pages(l, ev->proc, 0, ~0ull - l->page);
		lu_end_proc(l, ev->proc);
		lnd_end_proc(l, ev->proc);
		break;
	case VMT_EV_TOUCH:
		if ((rc = tl_add(&l->touches, ev)))
			return rc;
		break;
	default:
		break;
	}
	if (ev->kind == VMT_EV_SYSCALL) {
		l->nrg = vmt_sc_ranges(&ev->u.sc, l->page, l->rg);
		if ((rc = lu_before(l, ev)) || (rc = lnd_before(l, index, ev)))
			return rc;
	}
	if ((rc = van_asmodel_apply(l->model, ev)))
		return rc;
	if ((rc = lu_after(l, index, ev)) || (rc = lnd_after(l, index, ev)))
		return rc;
	if (ev->kind != VMT_EV_SYSCALL)
		return 0;
	tl_clear(&l->touches, ev->thread);
	if (failed(&ev->u.sc))
		return 0;
	const struct van_as_effect *eff = van_asmodel_last(l->model);
	if ((rc = check_free(l, index, ev)) || (rc = check_frag(l, index, ev, eff)) ||
	    (rc = check_lock(l, index, ev, eff)))
		return rc;
	syscall_discards(l, ev);
	return 0;
}

