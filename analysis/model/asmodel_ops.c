/*
 * asmodel_ops.c - what each memory-management syscall and each MAPS
 * snapshot does to the VMAs of the model (see asmodel.c for merging).
 *
 * Flag values are the recording ABI's (linux_abi.h), not the build
 * machine's, so the model reads a trace the same on every machine.
 *
 * A syscall that failed changes nothing, with the kernel's own exceptions:
 * madvise, mprotect and mlock return ENOMEM for a range with holes after
 * changing the mapped part (madvise: every mapped part; mprotect and
 * mlock: the mapped prefix of the range), and the model does the same.
 */
#include <string.h>
#include "asmodel_int.h"
#include "linux_abi.h"

#define LOCK_MASK (VAN_VMA_LOCKED | VAN_VMA_LOCKONFAULT)

static void inexact(struct van_asmodel *m)
{
	m->last.inexact = 1;
}

/* Does faulting in this private VMA give it anonymous pages?  A write
 * fault does (the copy-on-write); a read fault only on anonymous memory
 * of a kernel without the zero page (a file's pages are the page
 * cache's). */
static int faults_in_anon(const struct van_asmodel *m, const struct van_vma *v, int write)
{
	if (v->anon || (v->flags & VAN_VMA_SHARED))
		return 0;
	if (write)
		return 1;
	return m->no_zero_page && !(v->flags & VAN_VMA_FILE) && (v->prot & LX_PROT_RWX);
}

/* Populating private memory (mlock, MAP_POPULATE) faults it in: with a
 * write fault where it is writable, else with a read fault. */
static void populate(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b)
{
	for (struct node *n = van_am_first(sp, a); n && n->v.start < b; n = van_am_next(sp, n)) {
		if (faults_in_anon(m, &n->v, (n->v.prot & VMT_PROT_W) != 0))
			van_am_give_anon_node(m, n);
	}
}

/* Populate the locked VMAs of [a, b).  mlock() stops at the first VMA it
 * cannot fault in (PROT_NONE: the EFAULT that mlock reports as ENOMEM);
 * the other callers (mmap, mremap, mlockall) skip such VMAs. */
static void populate_locked_how(struct van_asmodel *m, struct space *sp, uint64_t a,
				uint64_t b, int stop_at_none)
{
	for (struct node *n = van_am_first(sp, a); n && n->v.start < b; n = van_am_next(sp, n)) {
		if ((n->v.flags & LOCK_MASK) != VAN_VMA_LOCKED)
			continue;
		if (!(n->v.prot & LX_PROT_RWX)) {
			if (stop_at_none)
				return;
			continue;
		}
		populate(m, sp, n->v.start, n->v.end);
	}
}

static void populate_locked(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b)
{
	populate_locked_how(m, sp, a, b, 0);
}

/* ---- mmap --------------------------------------------------------------- */

static int accountable(uint32_t prot, uint32_t flags)
{
	return (prot & VMT_PROT_W) &&
	       !(flags & (VAN_VMA_SHARED | VAN_VMA_NORESERVE | VAN_VMA_HUGETLB));
}

static void do_mmap(struct van_asmodel *m, struct space *sp, const struct vmt_event *ev,
		    const struct pending_file *pf)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	uint64_t len = pg_up(m, sc->args[1]);
	uint32_t mf = (uint32_t)sc->args[3];
	uint64_t a = (uint64_t)sc->result;
	if (!len)
		return;
	struct van_vma v = { .start = a, .end = a + len, .prot = (uint32_t)sc->args[2] & LX_PROT_RWX };
	uint32_t type = mf & LX_MAP_TYPE;
	if (type == LX_MAP_SHARED || type == LX_MAP_SHARED_VALIDATE)
		v.flags |= VAN_VMA_SHARED;
	if (mf & LX_MAP_GROWSDOWN)
		v.flags |= VAN_VMA_GROWSDOWN;
	if (mf & LX_MAP_LOCKED)
		v.flags |= VAN_VMA_LOCKED;
	if (mf & LX_MAP_NORESERVE)
		v.flags |= VAN_VMA_NORESERVE;
	if (mf & LX_MAP_HUGETLB)
		v.flags |= VAN_VMA_HUGETLB;
	if (mf & LX_MAP_STACK)
		v.flags |= VAN_VMA_NOHUGEPAGE; /* since Linux 6.7 */
	v.flags |= sp->def_lock;
	v.path = "";
	if (!(mf & LX_MAP_ANONYMOUS)) {
		v.flags |= VAN_VMA_FILE;
		v.offset = sc->args[5];
		if (pf) {
			v.dev = pf->dev, v.ino = pf->ino, v.path = pf->path;
		} else {
			/* Unknown file: an identity of its own, so it merges
			 * only with its own pieces. */
			v.ino = m->next_ino++;
			inexact(m);
		}
	} else if ((v.flags & VAN_VMA_SHARED) || (v.flags & VAN_VMA_HUGETLB)) {
		/* Shared anonymous memory is a shmem file of its own. */
		v.flags |= VAN_VMA_FILE;
		v.ino = m->next_ino++;
		v.path = van_am_intern(m, (v.flags & VAN_VMA_HUGETLB) ? "/anon_hugepage (deleted)"
								   : "/dev/zero (deleted)");
	} else {
		v.offset = a; /* anonymous: pgoff is the address */
	}
	if (accountable(v.prot, v.flags))
		v.flags |= VAN_VMA_ACCOUNT;
	uint64_t was;
	struct node *n = van_am_map(m, sp, &v, &was);
	if (was && (!(mf & LX_MAP_FIXED) && !(mf & LX_MAP_FIXED_NOREPLACE)))
		inexact(m); /* not MAP_FIXED(_NOREPLACE), yet something was there */
	if (!n)
		return;
	/* n is exactly [v.start, v.end): merging it needs no lookup, and
	 * after the merge it holds the whole range (populating gives VMAs
	 * anon_vmas but splits and merges none). */
	n = van_am_merge_around(m, sp, n);
	if (mf & LX_MAP_POPULATE)
		populate(m, sp, v.start, v.end);
	if (n->v.flags & VAN_VMA_LOCKED)
		populate_locked(m, sp, v.start, v.end);
}

/* ---- range changes ------------------------------------------------------ */

/* A change to the attributes of one VMA; returns 0 to leave it alone.
 * Applied to a VMA it already changed, it returns 0 (change_range_post
 * relies on that). */
typedef int (*change_fn)(struct van_vma *v, uint64_t arg);

/* Apply fn to [a, b) (only the mapped prefix of it when prefix is set),
 * splitting and merging around each VMA it changes.  Returns the bytes
 * changed. */
typedef void (*post_fn)(struct van_asmodel *m, struct space *sp, uint64_t s, uint64_t e,
			const struct van_vma *before, uint64_t arg);

static uint64_t change_range_post(struct van_asmodel *m, struct space *sp, uint64_t a,
				  uint64_t b, change_fn fn, uint64_t arg, int prefix, post_fn post)
{
	uint64_t done = 0;
	if (a >= b)
		return 0;
	if (prefix) {
		uint64_t e = a;
		for (struct node *n = van_am_first(sp, a); n && n->v.start <= e && e < b;
		     n = van_am_next(sp, n))
			e = n->v.end;
		b = e < b ? e : b;
		if (b <= a)
			return 0;
	}
	/* Split only VMAs that change, as the kernel does.  The walk keeps
	 * its node through the splits and merges: one lookup per call. */
	for (struct node *n = van_am_first(sp, a); n && n->v.start < b;) {
		struct van_vma t = n->v, before;
		if (!fn(&t, arg)) {
			n = van_am_next(sp, n);
			continue;
		}
		if (post)
			before = n->v;
		uint64_t s = n->v.start < a ? a : n->v.start;
		uint64_t e = n->v.end > b ? b : n->v.end;
		if (n->v.start < s && !(n = van_am_split_node(m, sp, n, s)))
			return done; /* out of memory */
		if (n->v.end > e && !van_am_split_node(m, sp, n, e))
			return done;
		van_am_account(m, sp, &n->v, -1);
		fn(&n->v, arg);
		van_am_account(m, sp, &n->v, +1);
		done += e - s;
		/* Like the kernel, try to merge each changed piece with its
		 * neighbours at once; unchanged VMAs are not merged. */
		n = van_am_merge_around(m, sp, n);
		/* (post populates: it gives VMAs anon_vmas, it does not split
		 * or merge them, so n stays.) */
		if (post)
			post(m, sp, s, e, &before, arg);
		/* On to the first VMA ending above e: n's successor, or n if it
		 * merged with the VMA after it; but fn leaves such an n alone
		 * (it merged with the changed piece, so it has the piece's
		 * attributes, and every fn gives nothing new when applied
		 * twice), so the walk goes to n's successor either way. */
		n = van_am_next(sp, n);
	}
	return done;
}

static uint64_t change_range(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b,
			     change_fn fn, uint64_t arg, int prefix)
{
	return change_range_post(m, sp, a, b, fn, arg, prefix, NULL);
}

#define PROT_KEEP_PKEY 0xffffffffu
static int ch_prot(struct van_vma *v, uint64_t arg)
{
	uint32_t prot = (uint32_t)arg & LX_PROT_RWX;
	int32_t pkey = (int32_t)(arg >> 32);
	uint32_t fl = v->flags;
	if (pkey == -1)
		pkey = v->pkey;
	if (prot == v->prot && pkey == v->pkey)
		return 0; /* the kernel leaves the VMA alone, VM_ACCOUNT too */
	if (prot & VMT_PROT_W) {
		if (!(fl & (VAN_VMA_ACCOUNT | VAN_VMA_SHARED | VAN_VMA_NORESERVE | VAN_VMA_HUGETLB)) &&
		    !(v->prot & VMT_PROT_W))
			fl |= VAN_VMA_ACCOUNT;
	} else if ((fl & VAN_VMA_ACCOUNT) && !(fl & VAN_VMA_FILE) && !v->anon) {
		/* Linux 6.5+: an unfaulted anonymous VMA made read-only gives
		 * its commit charge back. */
		fl &= ~VAN_VMA_ACCOUNT;
	}
	v->prot = prot, v->flags = fl, v->pkey = pkey;
	return 1;
}

struct flagchg {
	uint32_t set, clear, skip; /* skip: VMAs with these flags stay */
	uint32_t stop; /* the kernel stops (EINVAL) at a VMA with these */
};
static int ch_flags(struct van_vma *v, uint64_t arg)
{
	const struct flagchg *f = (const struct flagchg *)(uintptr_t)arg;
	if (v->flags & (f->skip | f->stop))
		return 0;
	uint32_t fl = (v->flags & ~f->clear) | f->set;
	if (fl == v->flags)
		return 0;
	v->flags = fl;
	return 1;
}

static int fully_mapped(const struct space *sp, uint64_t a, uint64_t b)
{
	return van_am_mapped_in(sp, a, b) == b - a;
}

/* A locked private mapping made writable is populated (COW broken). */
static void post_mprotect(struct van_asmodel *m, struct space *sp, uint64_t s, uint64_t e,
			  const struct van_vma *before, uint64_t arg)
{
	if ((before->flags & (VAN_VMA_LOCKED | VAN_VMA_SHARED | VAN_VMA_LOCKONFAULT)) ==
		    VAN_VMA_LOCKED &&
	    !(before->prot & VMT_PROT_W) && (arg & VMT_PROT_W))
		populate(m, sp, s, e);
}

static void do_mprotect(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	uint64_t a = sc->args[0], b = a + pg_up(m, sc->args[1]);
	uint32_t prot = (uint32_t)sc->args[2];
	int32_t pkey = sc->op == VMT_OP_PKEY_MPROTECT ? (int32_t)sc->args[3] : -1;
	int prefix = 0;
	if (sc->result == -12 /* ENOMEM */) {
		if (fully_mapped(sp, a, b))
			return; /* failed for another reason before any change */
		prefix = 1;
	} else if (sc->result < 0) {
		return;
	} else if (!fully_mapped(sp, a, b)) {
		inexact(m);
	}
	if (prot & LX_PROT_GROWSDOWN) {
		struct node *n = van_am_first(sp, a);
		if (n && n->v.start <= a && (n->v.flags & VAN_VMA_GROWSDOWN))
			a = n->v.start;
	}
	change_range_post(m, sp, a, b, ch_prot,
			  (uint64_t)(prot & LX_PROT_RWX) | ((uint64_t)(uint32_t)pkey << 32), prefix,
			  post_mprotect);
}

static void do_mlock(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	uint64_t a = pg_down(m, sc->args[0]);
	uint64_t b = pg_up(m, sc->args[0] + sc->args[1]);
	int prefix = 0;
	int onfault = sc->op == VMT_OP_MLOCK2 && (sc->args[2] & LX_MLOCK_ONFAULT);
	if (sc->result == -12) {
		/* ENOMEM: a hole (the mapped prefix was changed), or a
		 * populate that failed after the change (mlock of PROT_NONE
		 * memory does that, and of file pages beyond the end of the
		 * file), or RLIMIT_MEMLOCK (nothing changed).  The last two
		 * cannot be told apart; guess by what is in the range. */
		if (fully_mapped(sp, a, b)) {
			int none = 0;
			for (struct node *n = van_am_first(sp, a); n && n->v.start < b; n = van_am_next(sp, n))
				none |= !(n->v.prot & LX_PROT_RWX) || (n->v.flags & VAN_VMA_FILE);
			if (sc->op == VMT_OP_MUNLOCK || onfault || !none)
				return;
		} else {
			prefix = 1;
		}
	} else if (sc->result < 0) {
		return;
	}
	struct flagchg f = { 0, LOCK_MASK, VAN_VMA_SPECIAL | VAN_VMA_HUGETLB, 0 };
	if (sc->op != VMT_OP_MUNLOCK) {
		f.set = VAN_VMA_LOCKED;
		if (onfault)
			f.set |= VAN_VMA_LOCKONFAULT;
	}
	change_range(m, sp, a, b, ch_flags, (uint64_t)(uintptr_t)&f, prefix);
	if (f.set == VAN_VMA_LOCKED && !prefix)
		populate_locked_how(m, sp, a, b, 1);
}

static void do_mlockall(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	if (sc->result < 0)
		return;
	uint32_t add = 0;
	uint64_t how = sc->op == VMT_OP_MLOCKALL ? sc->args[0] : 0;
	sp->def_lock = 0;
	if (how & LX_MCL_FUTURE)
		sp->def_lock = VAN_VMA_LOCKED | ((how & LX_MCL_ONFAULT) ? VAN_VMA_LOCKONFAULT : 0);
	if (sc->op == VMT_OP_MLOCKALL && !(how & LX_MCL_CURRENT))
		return;
	if (how & LX_MCL_CURRENT)
		add = VAN_VMA_LOCKED | ((how & LX_MCL_ONFAULT) ? VAN_VMA_LOCKONFAULT : 0);
	struct flagchg f = { add, LOCK_MASK, VAN_VMA_SPECIAL | VAN_VMA_HUGETLB, 0 };
	change_range(m, sp, 0, UINT64_MAX, ch_flags, (uint64_t)(uintptr_t)&f, 0);
	if (add == VAN_VMA_LOCKED)
		populate_locked(m, sp, 0, UINT64_MAX);
}

static void do_madvise(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	uint64_t a = sc->args[0], b = a + pg_up(m, sc->args[1]);
	struct flagchg f = { 0, 0, 0, 0 };
	switch (sc->args[2]) {
	case LX_MADV_NORMAL: f.clear = VAN_VMA_SEQ_READ | VAN_VMA_RAND_READ; break;
	case LX_MADV_RANDOM: f.clear = VAN_VMA_SEQ_READ; f.set = VAN_VMA_RAND_READ; break;
	case LX_MADV_SEQUENTIAL: f.clear = VAN_VMA_RAND_READ; f.set = VAN_VMA_SEQ_READ; break;
	case LX_MADV_DONTFORK: f.set = VAN_VMA_DONTFORK; break;
	case LX_MADV_DOFORK: f.clear = VAN_VMA_DONTFORK; break;
	case LX_MADV_WIPEONFORK: f.set = VAN_VMA_WIPEONFORK; f.stop = VAN_VMA_FILE | VAN_VMA_SHARED; break;
	case LX_MADV_KEEPONFORK: f.clear = VAN_VMA_WIPEONFORK; break;
	case LX_MADV_DONTDUMP: f.set = VAN_VMA_DONTDUMP; break;
	case LX_MADV_DODUMP: f.clear = VAN_VMA_DONTDUMP; f.stop = VAN_VMA_SPECIAL; break;
	case LX_MADV_HUGEPAGE: f.set = VAN_VMA_HUGEPAGE; f.clear = VAN_VMA_NOHUGEPAGE; break;
	case LX_MADV_NOHUGEPAGE: f.set = VAN_VMA_NOHUGEPAGE; f.clear = VAN_VMA_HUGEPAGE; break;
	case LX_MADV_MERGEABLE:
		f.set = VAN_VMA_MERGEABLE;
		f.skip = VAN_VMA_SHARED | VAN_VMA_SPECIAL | VAN_VMA_HUGETLB;
		break;
	case LX_MADV_UNMERGEABLE: f.clear = VAN_VMA_MERGEABLE; break;
	case LX_MADV_POPULATE_WRITE:
	case LX_MADV_POPULATE_READ: {
		/* Faults VMA after VMA until one is not writable (readable) or
		 * a hole: even a failed call populated what came before. */
		int write = sc->args[2] == LX_MADV_POPULATE_WRITE;
		uint64_t e = a;
		for (struct node *n = van_am_first(sp, a); n && n->v.start <= e && e < b;
		     n = van_am_next(sp, n)) {
			if (!(n->v.prot & (write ? VMT_PROT_W : VMT_PROT_R)))
				break;
			e = n->v.end;
		}
		for (struct node *n = van_am_first(sp, a); n && n->v.start < (e < b ? e : b);
		     n = van_am_next(sp, n))
			if (faults_in_anon(m, &n->v, write))
				van_am_give_anon_node(m, n);
		return;
	}
	default:
		return; /* DONTNEED, FREE, WILLNEED, COLD, ...: no VMA change */
	}
	/* The kernel changes VMA after VMA and stops at the first one the
	 * advice is invalid for (EINVAL, the earlier ones stay changed);
	 * EINVAL without such a VMA came before any change. */
	struct node *stop = NULL;
	if (f.stop)
		for (struct node *n = van_am_first(sp, a); n && n->v.start < b && !stop; n = van_am_next(sp, n))
			if (n->v.flags & f.stop)
				stop = n;
	if (sc->result == -22) {
		if (!stop)
			return;
	} else if (sc->result < 0 && sc->result != -12) {
		return;
	}
	if (stop)
		b = stop->v.start > a ? stop->v.start : a;
	if (sc->result == 0 && !fully_mapped(sp, a, b))
		inexact(m);
	change_range(m, sp, a, b, ch_flags, (uint64_t)(uintptr_t)&f, 0);
}

static void do_mseal(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	uint64_t a = sc->args[0], b = a + pg_up(m, sc->args[1]);
	struct flagchg f = { VAN_VMA_SEALED, 0, 0, 0 };
	if (sc->result < 0)
		return;
	change_range(m, sp, a, b, ch_flags, (uint64_t)(uintptr_t)&f, 0);
}

/* ---- mremap ------------------------------------------------------------- */

static void do_mremap(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	uint64_t old = sc->args[0];
	uint64_t olen = pg_up(m, sc->args[1]), nlen = pg_up(m, sc->args[2]);
	uint32_t flags = (uint32_t)sc->args[3];
	uint64_t r = (uint64_t)sc->result;
	if (sc->result < 0 || !nlen)
		return;
	if (olen == 0) {
		/* A second mapping of the same shared pages. */
		struct node *n = van_am_first(sp, old);
		if (!n || n->v.start > old) {
			inexact(m);
			return;
		}
		struct van_vma v = n->v;
		v.offset += old - n->v.start;
		v.start = r, v.end = r + nlen;
		v.anon = 0;
		van_am_unmap(m, sp, v.start, v.end);
		if (van_am_insert(m, sp, &v))
			van_am_merge_window(m, sp, v.start, v.end);
		return;
	}
	if (r == old) {
		if (nlen < olen) {
			van_am_unmap(m, sp, old + nlen, old + olen);
		} else if (nlen > olen) {
			struct node *n = van_am_first(sp, old + olen - 1);
			if (!n || n->v.start > old + olen - 1 || n->v.end != old + olen) {
				inexact(m);
				return;
			}
			van_am_unmap(m, sp, old + olen, old + nlen); /* should be free */
			n = van_am_first(sp, old + olen - 1);
			van_am_account(m, sp, &n->v, -1);
			n->v.end = old + nlen;
			van_am_account(m, sp, &n->v, +1);
			van_am_merge_window(m, sp, old + olen, old + nlen);
			populate_locked(m, sp, old + olen, old + nlen);
		}
		return;
	}
	/* A move: MREMAP_FIXED clears the destination, a shrink drops the
	 * tail first; then every VMA of the source moves (the last one
	 * grown), keeping its anon_vma and, when it has one, its page
	 * offset. */
	uint64_t mlen = olen < nlen ? olen : nlen;
	if (olen > nlen)
		van_am_unmap(m, sp, old + nlen, old + olen);
	if (!fully_mapped(sp, old, old + mlen))
		inexact(m);
	/* With MREMAP_DONTUNMAP the source is not unmapped, so not split
	 * either: its VMAs lose their lock (all of them, also beyond the
	 * range) and, when moved whole, their anon_vma. */
	int keep = (flags & LX_MREMAP_DONTUNMAP) != 0;
	if (!keep) {
		van_am_split(m, sp, old);
		van_am_split(m, sp, old + mlen);
	}
	struct van_vma moved[64];
	unsigned nm = 0;
	for (struct node *n = van_am_first(sp, old); n && n->v.start < old + mlen; n = van_am_next(sp, n)) {
		if (nm == sizeof(moved) / sizeof(moved[0])) {
			inexact(m);
			break;
		}
		struct van_vma *v = &moved[nm++];
		*v = n->v;
		if (v->start < old) {
			v->offset += old - v->start;
			v->start = old;
		}
		if (v->end > old + mlen)
			v->end = old + mlen;
	}
	/* Each VMA moves on its own (Linux 6.17+ moves several when the
	 * size stays), in the kernel's order: its destination is cleared
	 * (only its own: destination pages facing holes of the source keep
	 * their mappings), the copy is placed and merged, then the source
	 * is unmapped (or, with MREMAP_DONTUNMAP, the VMA holding it loses
	 * its lock and, if moved whole, its anon_vma). */
	for (unsigned i = 0; i < nm; i++) {
		struct van_vma v = moved[i];
		v.start = r + (moved[i].start - old);
		v.end = r + (moved[i].end - old);
		if (i == nm - 1 && nlen > olen)
			v.end += nlen - olen;
		van_am_unmap(m, sp, v.start, v.end);
		if (!(v.flags & VAN_VMA_FILE) && !v.anon)
			v.offset = v.start;
		if (van_am_insert(m, sp, &v))
			van_am_merge_window(m, sp, v.start, v.end);
		if (!keep) {
			van_am_unmap(m, sp, moved[i].start, moved[i].end);
			continue;
		}
		/* The copy may have merged with the VMA holding the source. */
		struct node *n = van_am_first(sp, moved[i].start);
		if (!n || n->v.start > moved[i].start) {
			inexact(m);
			continue;
		}
		van_am_account(m, sp, &n->v, -1);
		n->v.flags &= ~LOCK_MASK;
		if (n->v.start == moved[i].start && n->v.end == moved[i].end)
			n->v.anon = 0;
		van_am_account(m, sp, &n->v, +1);
	}
	if (nlen > olen)
		populate_locked(m, sp, r + olen, r + nlen);
}

/* ---- brk, SysV, remap_file_pages -------------------------------------- */

static void do_brk(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	uint64_t r = (uint64_t)sc->result;
	if (sc->result <= 0)
		return;
	if (!sp->brk_start) {
		sp->brk_start = sp->brk_cur = r;
		return;
	}
	uint64_t oe = pg_up(m, sp->brk_cur), ne = pg_up(m, r);
	if (r < sp->brk_start)
		return;
	if (ne < oe) {
		van_am_unmap(m, sp, ne, oe);
	} else if (ne > oe) {
		struct van_vma v = { .start = oe, .end = ne, .prot = VMT_PROT_R | VMT_PROT_W,
				     .flags = VAN_VMA_HEAP | VAN_VMA_ACCOUNT | sp->def_lock,
				     .offset = oe, .path = van_am_intern(m, "[heap]") };
		if (van_am_unmap(m, sp, oe, ne))
			inexact(m);
		if (van_am_insert(m, sp, &v)) {
			van_am_merge_window(m, sp, oe, ne);
			populate_locked(m, sp, oe, ne);
		}
	}
	sp->brk_cur = r;
}

static void do_shmat(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc,
		     const struct pending_file *pf)
{
	uint64_t a = (uint64_t)sc->result;
	uint32_t shmflg = (uint32_t)sc->args[2];
	if (sc->result < 0)
		return;
	struct van_vma v = { .start = a, .prot = VMT_PROT_R,
			     .flags = VAN_VMA_SHARED | VAN_VMA_FILE | VAN_VMA_SYSV };
	if (!(shmflg & LX_SHM_RDONLY))
		v.prot |= VMT_PROT_W;
	if (shmflg & LX_SHM_EXEC)
		v.prot |= VMT_PROT_X;
	if (pf && pf->size) {
		v.end = a + pg_up(m, pf->size);
		v.dev = pf->dev, v.ino = pf->ino, v.path = pf->path;
	} else {
		v.end = a + m->page; /* the segment's size is not in the trace */
		v.ino = m->next_ino++;
		v.path = van_am_intern(m, "SYSV");
		inexact(m);
	}
	v.flags |= sp->def_lock;
	van_am_unmap(m, sp, v.start, v.end);
	van_am_insert(m, sp, &v);
}

static void do_shmdt(struct van_asmodel *m, struct space *sp, const struct vmt_syscall *sc)
{
	if (sc->result < 0)
		return;
	struct node *n = van_am_first(sp, sc->args[0]);
	if (!n || n->v.start != sc->args[0] || !(n->v.flags & VAN_VMA_SYSV)) {
		inexact(m);
		return;
	}
	uint64_t dev = n->v.dev, ino = n->v.ino, base = n->v.start - n->v.offset;
	while (n && (n->v.flags & VAN_VMA_SYSV) && n->v.dev == dev && n->v.ino == ino &&
	       n->v.start - n->v.offset == base) {
		struct node *next = van_am_next(sp, n);
		van_am_remove(m, sp, n);
		n = next;
	}
}

static void do_remap_file_pages(struct van_asmodel *m, struct space *sp,
				const struct vmt_syscall *sc)
{
	uint64_t a = pg_down(m, sc->args[0]), b = a + pg_up(m, sc->args[1]);
	if (sc->result < 0 || a >= b)
		return;
	struct node *n = van_am_first(sp, a);
	if (!n || n->v.start > a) {
		inexact(m);
		return;
	}
	/* Emulated since Linux 4.0 as a fresh MAP_FIXED|MAP_SHARED mapping
	 * of the same file at the new offset. */
	struct van_vma v = n->v;
	v.start = a, v.end = b;
	v.offset = sc->args[3] * m->page;
	v.flags = (v.flags & (VAN_VMA_SHARED | VAN_VMA_FILE | VAN_VMA_LOCKED)) | sp->def_lock;
	v.anon = 0;
	van_am_unmap(m, sp, a, b);
	if (van_am_insert(m, sp, &v))
		van_am_merge_window(m, sp, a, b);
}


/* [a, a + len) rounded to pages lies inside the user address space. */
static int range_ok(const struct van_asmodel *m, uint64_t a, uint64_t len)
{
	return a < VMT_ADDR_LIMIT && len < VMT_ADDR_LIMIT && a + pg_up(m, len) <= VMT_ADDR_LIMIT;
}

/* [a, a + len), or its end rounded up to a page, wraps around. */
static int range_wraps(const struct van_asmodel *m, uint64_t a, uint64_t len)
{
	return a + len < a || pg_up(m, a + len) < a + len;
}

/* Whether the model may apply sc.  The kernel refuses a range that wraps
 * around before looking at any mapping (ENOMEM, EINVAL), so such a call
 * did nothing, whatever the trace says.  A range that reaches past the
 * user address space without wrapping is walked, though: mprotect,
 * madvise and mlock change its mapped part and then fail at the first
 * hole (the model does the same), but cannot succeed.  A success the
 * kernel could not have returned is not applied: it would make VMAs that
 * wrap or overlap. */
static int ranges_ok(const struct van_asmodel *m, const struct vmt_syscall *sc,
		     const struct vmt_op_info *oi, const struct pending_file *pf)
{
	int ok = !vmt_is_errno(sc->result);
	uint64_t r = (uint64_t)sc->result, a = sc->args[0], len = sc->args[1];
	switch (oi ? oi->range : VMT_RANGE_NONE) {
	case VMT_RANGE_MAP:
		return !ok || range_ok(m, r, len);
	case VMT_RANGE_REMAP:
		return !ok || (range_ok(m, a, len) && range_ok(m, r, sc->args[2]));
	case VMT_RANGE_BREAK:
		return r < VMT_ADDR_LIMIT;
	case VMT_RANGE_SEGMENT:
		return sc->op != VMT_OP_SHMAT || !ok || range_ok(m, r, pf ? pf->size : 0);
	case VMT_RANGE_ARGS:
		if (range_wraps(m, a, len))
			return 0;
		if (oi->effects & VMT_OPE_ROUNDS) /* the start down, the end up */
			return !ok || range_ok(m, pg_down(m, a), len + (a - pg_down(m, a)));
		return !ok || range_ok(m, a, len);
	default:
		return 1;
	}
}

void van_am_syscall(struct van_asmodel *m, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	if (sc->flags & VMT_SC_NO_RESULT)
		return;
	/* Calls that change no mapping, or whose ranges are unknown. */
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	if (oi && ((oi->effects & VMT_OPE_QUERY) || oi->range == VMT_RANGE_NONE))
		return;
	struct space *sp = ev->proc < m->nprocs ? m->procs[ev->proc] : NULL;
	if (!sp && !(sp = van_am_space(m, ev->proc, 1)))
		return;
	if (!sp->known)
		inexact(m);
	const struct pending_file *pf = NULL;
	if (ev->thread < m->cap_pend && m->pend[ev->thread].valid)
		pf = &m->pend[ev->thread];
	if (!ranges_ok(m, sc, oi, pf)) {
		if (!vmt_is_errno(sc->result))
			inexact(m);
		return;
	}
	switch (sc->op) {
	case VMT_OP_MMAP:
		if (!vmt_is_errno(sc->result))
			do_mmap(m, sp, ev, pf);
		break;
	case VMT_OP_MUNMAP:
		if (sc->result == 0) /* unmapping a hole is fine */
			van_am_unmap(m, sp, sc->args[0], sc->args[0] + pg_up(m, sc->args[1]));
		break;
	case VMT_OP_MPROTECT: case VMT_OP_PKEY_MPROTECT:
		do_mprotect(m, sp, sc);
		break;
	case VMT_OP_MADVISE:
		do_madvise(m, sp, sc);
		break;
	case VMT_OP_MLOCK: case VMT_OP_MLOCK2: case VMT_OP_MUNLOCK:
		do_mlock(m, sp, sc);
		break;
	case VMT_OP_MLOCKALL: case VMT_OP_MUNLOCKALL:
		do_mlockall(m, sp, sc);
		break;
	case VMT_OP_MREMAP:
		if (!vmt_is_errno(sc->result))
			do_mremap(m, sp, sc);
		break;
	case VMT_OP_BRK:
		do_brk(m, sp, sc);
		break;
	case VMT_OP_SHMAT:
		if (!vmt_is_errno(sc->result))
			do_shmat(m, sp, sc, pf);
		break;
	case VMT_OP_SHMDT:
		do_shmdt(m, sp, sc);
		break;
	case VMT_OP_MSEAL:
		do_mseal(m, sp, sc);
		break;
	case VMT_OP_REMAP_FILE_PAGES:
		do_remap_file_pages(m, sp, sc);
		break;
	default:
		break;
	}
}

/* ---- snapshots ---------------------------------------------------------- */

static int is_special(const char *p)
{
	return p[0] == '[' && strcmp(p, "[heap]") != 0 && strcmp(p, "[stack]") != 0 &&
	       strncmp(p, "[anon:", 6) != 0 && strncmp(p, "[anon_shmem:", 12) != 0;
}

/* A snapshot replaces what the model had.  Flags /proc/PID/maps does not
 * show are guessed: private writable memory is accounted, anonymous and
 * written file memory already has pages (a running program's data). */
void van_am_maps(struct van_asmodel *m, const struct vmt_event *ev)
{
	struct space *sp = van_am_space(m, ev->proc, 1);
	if (!sp)
		return;
	uint32_t def_lock = sp->def_lock;
	van_am_clear_space(m, sp);
	sp->def_lock = def_lock;
	sp->known = 1;
	for (uint32_t i = 0; i < ev->u.maps.count; i++) {
		const struct vmt_map_entry *e = &ev->u.maps.entries[i];
		struct van_vma v = { .start = e->start, .end = e->end, .prot = e->perms & LX_PROT_RWX,
				     .flags = VAN_VMA_SNAPSHOT, .dev = e->dev, .ino = e->ino };
		v.path = van_am_intern(m, e->path);
		if (e->perms & VMT_MAPS_SHARED)
			v.flags |= VAN_VMA_SHARED;
		if (is_special(v.path)) {
			v.flags |= VAN_VMA_SPECIAL;
		} else if (e->ino || v.path[0] == '/') {
			v.flags |= VAN_VMA_FILE;
			v.offset = e->offset;
			if (strncmp(v.path, "/SYSV", 5) == 0)
				v.flags |= VAN_VMA_SYSV;
		} else {
			v.offset = e->start;
		}
		if (strcmp(v.path, "[stack]") == 0)
			v.flags |= VAN_VMA_GROWSDOWN;
		if (strcmp(v.path, "[heap]") == 0) {
			v.flags |= VAN_VMA_HEAP;
			if (!sp->brk_start)
				sp->brk_start = e->start;
			sp->brk_cur = e->end;
		}
		if (!(v.flags & (VAN_VMA_SHARED | VAN_VMA_SPECIAL)) && (v.prot & VMT_PROT_W)) {
			v.flags |= VAN_VMA_ACCOUNT;
			v.anon = van_am_new_anon(m);
		}
		if (!van_am_insert(m, sp, &v))
			return;
	}
}
