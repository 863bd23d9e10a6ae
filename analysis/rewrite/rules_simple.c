/*
 * rules_simple.c - rewrite rules that change one call at a time, without
 * looking ahead: dontneed-to-free and free-to-dontneed (seed 001), and
 * mlock-onfault (seed 003).
 *
 * Only calls that succeeded in the recording are rewritten: their effect
 * is known, so the result the rewritten call should have is known too.
 */
#include <string.h>
#include "rewrite_int.h"

static void *no_state(struct rw_stage *s)
{
	return s; /* anything but NULL */
}

/* ---- dontneed-to-free, free-to-dontneed --------------------------------- */

/*
 * MADV_FREE works on private anonymous memory only (EINVAL elsewhere), and
 * neither advice works on locked, huge-TLB or PFN-mapped VMAs.  The model
 * must show the whole range private and anonymous; the recorded call must
 * have succeeded on all of it (a range with holes fails with ENOMEM).
 * Semantics differ on purpose: after MADV_FREE a read may still see the
 * old data until reclaim takes the page; that is the trade the rule lets
 * one measure.
 */
#define MADV_BAD (VAN_VMA_LOCKED | VAN_VMA_HUGETLB | VAN_VMA_SPECIAL | VAN_VMA_SYSV)

static int madv_swap(struct rw_stage *s, const struct vmt_event *ev, uint64_t from, uint64_t to)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	if (ev->kind != VMT_EV_SYSCALL || sc->op != VMT_OP_MADVISE || sc->args[2] != from ||
	    !rw_sc_ok(sc) || sc->result != 0 || !sc->args[1] || (sc->args[0] & s->page_mask) ||
	    !rw_model_range(s, ev->proc, sc->args[0], rw_end(s, sc->args[0], sc->args[1]),
			    UINT32_MAX, MADV_BAD))
		return rw_emit(s, ev);
	struct vmt_event m = *ev;
	m.u.sc.args[2] = to;
	m.u.sc.flags |= VMT_SC_REWRITTEN;
	int rc = rw_applied(s, ev);
	return rc ? rc : rw_emit(s, &m);
}

static int d2f_event(struct rw_stage *s, const struct vmt_event *ev)
{
	return madv_swap(s, ev, LX_MADV_DONTNEED, LX_MADV_FREE);
}

static int f2d_event(struct rw_stage *s, const struct vmt_event *ev)
{
	return madv_swap(s, ev, LX_MADV_FREE, LX_MADV_DONTNEED);
}

const struct rw_rule rw_rule_dontneed_to_free = {
	.name = "dontneed-to-free",
	.summary = "madvise(MADV_DONTNEED) -> madvise(MADV_FREE) on private anonymous ranges",
	.needs_model = 1,
	.create = no_state,
	.event = d2f_event,
};

const struct rw_rule rw_rule_free_to_dontneed = {
	.name = "free-to-dontneed",
	.summary = "madvise(MADV_FREE) -> madvise(MADV_DONTNEED)",
	.needs_model = 1,
	.create = no_state,
	.event = f2d_event,
};

/* ---- mlock-onfault ------------------------------------------------------ */

/*
 * Locking on fault keeps the locking but not the populating: pages are
 * locked as they are first touched instead of all at once (seed 003).
 *   mlock(a, len)                  -> mlock2(a, len, MLOCK_ONFAULT)
 *   mlock2(a, len, 0)              -> mlock2(a, len, MLOCK_ONFAULT)
 *   mlockall(MCL_CURRENT|..)       -> mlockall(MCL_CURRENT|..|MCL_ONFAULT)
 *   mmap(.., MAP_LOCKED, ..) = A   -> mmap(.., 0, ..) = A, then
 *                                     mlock2(A, len, MLOCK_ONFAULT) = 0
 * The mlock2 after the mmap takes the mmap's thread, exit time and stack,
 * and has no waits (it takes no time).
 * An explicit MAP_POPULATE stays.
 */
static int onfault_event(struct rw_stage *s, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	if (ev->kind != VMT_EV_SYSCALL || !rw_sc_ok(sc))
		return rw_emit(s, ev);
	struct vmt_event m;
	uint64_t args[3];
	switch (sc->op) {
	case VMT_OP_MLOCK:
		args[0] = sc->args[0];
		args[1] = sc->args[1];
		args[2] = LX_MLOCK_ONFAULT;
		rw_make_sc(&m, ev, VMT_OP_MLOCK2, args, sc->result);
		break;
	case VMT_OP_MLOCK2:
		if (sc->args[2] & LX_MLOCK_ONFAULT)
			return rw_emit(s, ev);
		m = *ev;
		m.u.sc.args[2] |= LX_MLOCK_ONFAULT;
		m.u.sc.flags |= VMT_SC_REWRITTEN;
		break;
	case VMT_OP_MLOCKALL:
		if (!(sc->args[0] & (LX_MCL_CURRENT | LX_MCL_FUTURE)) || (sc->args[0] & LX_MCL_ONFAULT))
			return rw_emit(s, ev);
		m = *ev;
		m.u.sc.args[0] |= LX_MCL_ONFAULT;
		m.u.sc.flags |= VMT_SC_REWRITTEN;
		break;
	case VMT_OP_MMAP: {
		if (!(sc->args[3] & LX_MAP_LOCKED))
			return rw_emit(s, ev);
		m = *ev;
		m.u.sc.args[3] &= ~(uint64_t)LX_MAP_LOCKED;
		m.u.sc.flags |= VMT_SC_REWRITTEN;
		int rc = rw_emit(s, &m);
		if (rc)
			return rc;
		args[0] = (uint64_t)sc->result;
		args[1] = sc->args[1];
		args[2] = LX_MLOCK_ONFAULT;
		rw_make_sc(&m, ev, VMT_OP_MLOCK2, args, 0);
		m.ts_ns = sc->exit_ns;
		/* (a call of no time: the mmap's waits are not its own) */
		m.u.sc.waits = m.u.sc.vcsw = m.u.sc.ivcsw = 0;
		m.u.sc.off_cpu_ns = 0;
		break;
	}
	default:
		return rw_emit(s, ev);
	}
	int rc = rw_applied(s, ev);
	return rc ? rc : rw_emit(s, &m);
}

const struct rw_rule rw_rule_mlock_onfault = {
	.name = "mlock-onfault",
	.summary = "mlock -> mlock2(MLOCK_ONFAULT), mlockall -> with MCL_ONFAULT, "
		   "mmap(MAP_LOCKED) -> mmap + mlock2(MLOCK_ONFAULT)",
	.create = no_state,
	.event = onfault_event,
};
