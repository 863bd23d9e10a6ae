/*
 * rewrite_calls.c - what the calls of a trace cost the address space, for
 * the before/after counts of a rewrite (van_rewrite_counts.in/.out):
 * which calls take mmap_lock for writing, and which change VMAs.
 */
#include "linux_abi.h"
#include "rewrite_int.h"

int van_op_write_locked(uint32_t op)
{
	switch (op) {
	case VMT_OP_MMAP:
	case VMT_OP_MUNMAP:
	case VMT_OP_MPROTECT:
	case VMT_OP_PKEY_MPROTECT:
	case VMT_OP_MLOCK:
	case VMT_OP_MLOCK2:
	case VMT_OP_MUNLOCK:
	case VMT_OP_MLOCKALL:
	case VMT_OP_MUNLOCKALL:
	case VMT_OP_MREMAP:
	case VMT_OP_BRK:
	case VMT_OP_REMAP_FILE_PAGES:
	case VMT_OP_SHMAT:
	case VMT_OP_SHMDT:
	case VMT_OP_MSEAL:
		return 1;
	case VMT_OP_MADVISE:
		return -1;
	default:
		return 0;
	}
}

int van_sc_write_locked(const struct vmt_syscall *sc)
{
	int w = van_op_write_locked(sc->op);
	if (w >= 0)
		return w;
	/* mm/madvise.c: the advice that only walks pages takes the lock for
	 * reading; the advice that changes VMA flags takes it for writing. */
	switch (sc->args[2]) {
	case LX_MADV_WILLNEED:
	case LX_MADV_DONTNEED:
	case LX_MADV_FREE:
	case LX_MADV_REMOVE:
	case LX_MADV_COLD:
	case LX_MADV_PAGEOUT:
	case LX_MADV_POPULATE_READ:
	case LX_MADV_POPULATE_WRITE:
	case LX_MADV_DONTNEED_LOCKED:
	case LX_MADV_COLLAPSE:
	case LX_MADV_HWPOISON:
	case LX_MADV_SOFT_OFFLINE:
	case LX_MADV_GUARD_INSTALL:
	case LX_MADV_GUARD_REMOVE:
		return 0;
	default:
		return 1;
	}
}

/* Before a successful call is applied to m: whether it will create,
 * remove or change a VMA.  (The model's own effect flags count changes
 * of the VMA count, size and merges; a prot change in place or a
 * MAP_FIXED that replaces a VMA by an equal one counts here too.) */
static int changes_vmas(const van_asmodel *m, uint32_t proc, const struct vmt_syscall *sc,
			uint64_t page)
{
	struct vmt_range r[2];
	switch (sc->op) {
	case VMT_OP_MMAP:
	case VMT_OP_MREMAP:
	case VMT_OP_SHMAT:
	case VMT_OP_SHMDT:
		return 1;
	case VMT_OP_MUNMAP:
	case VMT_OP_MPROTECT:
	case VMT_OP_PKEY_MPROTECT:
		if (vmt_sc_ranges(sc, page, r) != 1)
			return -1;
		for (const struct van_vma *v = van_asmodel_first(m, proc, r[0].start);
		     v && v->start < r[0].end; v = van_asmodel_next(m, proc, v))
			if (sc->op == VMT_OP_MUNMAP || v->prot != (sc->args[2] & LX_PROT_RWX) ||
			    (sc->op == VMT_OP_PKEY_MPROTECT && v->pkey != (int32_t)sc->args[3]))
				return 1;
		return 0;
	default:
		return -1; /* the model's effect says */
	}
}

int rw_calls_apply(van_asmodel *m, struct van_rewrite_calls *c, const struct vmt_event *ev,
		   uint64_t page)
{
	int ok = ev->kind == VMT_EV_SYSCALL && rw_sc_ok(&ev->u.sc), ch = -1;
	if (ok)
		ch = changes_vmas(m, ev->proc, &ev->u.sc, page);
	int rc = van_asmodel_apply(m, ev);
	if (rc || ev->kind != VMT_EV_SYSCALL)
		return rc;
	c->calls++;
	if (!ok)
		return 0;
	c->write_locked += van_sc_write_locked(&ev->u.sc) != 0;
	c->vma_changes += ch < 0 ? van_asmodel_last(m)->changed != 0 : ch;
	return 0;
}
