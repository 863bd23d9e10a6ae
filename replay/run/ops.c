/*
 * ops.c - the replayed calls other than the common one-piece range op
 * (which worker.c's loop makes itself): range ops over several pieces or
 * the void, mmap of new regions (kernel or exact placement, files, shmat),
 * mremap, the brk emulation, and what a divergent unmap does to the
 * regions.  Each times its call with the op clock between *t0 and *t1
 * where the caller does not.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "exec_int.h"


const long rp_sysnr[VMT_OP__COUNT] = {
	[VMT_OP_MMAP] = SYS_mmap,
	[VMT_OP_MUNMAP] = SYS_munmap,
	[VMT_OP_MPROTECT] = SYS_mprotect,
	[VMT_OP_PKEY_MPROTECT] = SYS_pkey_mprotect,
	[VMT_OP_MADVISE] = SYS_madvise,
	[VMT_OP_MLOCK] = SYS_mlock,
	[VMT_OP_MLOCK2] = SYS_mlock2,
	[VMT_OP_MUNLOCK] = SYS_munlock,
	[VMT_OP_MLOCKALL] = SYS_mlockall,
	[VMT_OP_MUNLOCKALL] = SYS_munlockall,
	[VMT_OP_MREMAP] = SYS_mremap,
	[VMT_OP_BRK] = SYS_brk,
	[VMT_OP_MSYNC] = SYS_msync,
	[VMT_OP_MINCORE] = SYS_mincore,
	[VMT_OP_REMAP_FILE_PAGES] = SYS_remap_file_pages,
	[VMT_OP_MSEAL] = SYS_mseal,
	/* shmat is replayed by mmap_op(); shmdt as the munmap of the
	 * segment's stand-in (sim.c). */
	[VMT_OP_SHMDT] = SYS_munmap,
};

/* ---- ops --------------------------------------------------------------- */

/* Replay address of a piece; the void (bottom of the address space,
 * never mapped) for a piece without a live replay region, with the
 * length clamped so the call can only ever cover the void. */
static inline uint64_t piece_addr(const struct rp_wctx *w, const struct rp_piece *p, uint64_t *len,
				  int *is_void)
{
	if (p->region != RP_VOID) {
		uint64_t b = w->base[p->region];
		if (b) {
			*is_void = 0;
			return b + p->off;
		}
	}
	uint64_t a = p->off & (w->rt->page - 1);
	uint64_t room = w->rt->void_len > a ? w->rt->void_len - a : 0;
	if (*len > room)
		*len = room;
	*is_void = 1;
	return a;
}

RP_RUN_CODE long rp_range_op(struct rp_wctx *w, const struct rp_elem *e)
{
	const struct rp_piece *pc = rp_elem_pieces(w, e);
	long nr = rp_sysnr[e->op], r = 0;
	uint64_t a2 = e->op == VMT_OP_MINCORE ? (uint64_t)w->mincore : e->args[2];
	for (uint32_t i = 0; i < e->npieces; i++) {
		uint64_t len = (e->flags & RF_RAW_LEN) ? e->args[1] : pc[i].len;
		int is_void;
		uint64_t addr = piece_addr(w, &pc[i], &len, &is_void);
		long x;
		if (is_void && !w->rt->void_len) /* no void on this machine */
			x = (e->flags & RF_UNMAP) ? 0 : -ENOMEM;
		else
			x = sc6(nr, addr, len, a2, e->args[3], e->args[4], e->args[5]);
		if (x < 0 && !r) {
			r = x;
			if (e->flags & RF_STOP_ERR)
				break;
		}
	}
	return r;
}

/* Unmap the mapped pieces of e (what a new region or an exec replaces). */
RP_RUN_CODE void rp_unmap_pieces(struct rp_wctx *w, const struct rp_elem *e)
{
	const struct rp_piece *pc = rp_elem_pieces(w, e);
	for (uint32_t i = 0; i < e->npieces; i++) {
		uint64_t b = pc[i].region != RP_VOID ? w->base[pc[i].region] : 0;
		if (b)
			sc6(SYS_munmap, b + pc[i].off, pc[i].len, 0, 0, 0, 0);
	}
}

/* Forget the regions of e's pieces (a divergent munmap/mremap left them
 * in an unknown state: later ops on them go to the void). */
RP_RUN_CODE void rp_poison(struct rp_wctx *w, const struct rp_elem *e)
{
	const struct rp_piece *pc = rp_elem_pieces(w, e);
	for (uint32_t i = 0; i < e->npieces; i++)
		if (pc[i].region != RP_VOID)
			w->base[pc[i].region] = 0;
}

RP_RUN_CODE static int mmap_fd(struct rp_wctx *w, const struct rp_elem *e, uint64_t *flags)
{
	if (!(e->flags & RF_FILE)) {
		*flags |= MAP_ANONYMOUS;
		return -1;
	}
	/* Only scratch files have a writable handle: an original file (or one
	 * that fell back to scratch) is chosen by which handles exist. */
	int fd = (e->flags & RF_FILE_RW) ? rt_file_fd(w->rt, e->arg, 1) : -1;
	return fd >= 0 ? fd : rt_file_fd(w->rt, e->arg, 0);
}

/*
 * A hint for a new file or shared mapping placed by the kernel: where the
 * kernel would put it, moved to the recorded address's offset in a 2 MiB
 * block.  A read fault on a file mapping, or on shared anonymous memory
 * (shmem, a file too), maps the cached pages of its 64 KiB block of
 * addresses (fault-around, clipped to the VMA and the 2 MiB block), so
 * which pages share a fault depends on the mapping's address modulo
 * 64 KiB: placed elsewhere modulo 64 KiB, a library takes a few faults
 * more or fewer than it did (sqlite3's libraries: 4%), and so does a
 * process reading shared memory that others filled (a PostgreSQL
 * backend reading the buffer pool: 6% fewer).  The probe is outside the
 * call's timing; another thread taking the spot first only makes the
 * kernel choose as it would have.  0: no hint.
 */
RP_RUN_CODE static uint64_t file_hint(uint64_t rec, uint64_t len)
{
	const uint64_t block = 2ull << 20;
	if (!len || len > (1ull << 46))
		return 0;
	long p = sc6(SYS_mmap, 0, len + block, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, (uint64_t)-1, 0);
	if (failed(p))
		return 0;
	sc6(SYS_munmap, (uint64_t)p, len + block, 0, 0, 0, 0);
	return (uint64_t)p + ((rec - (uint64_t)p) & (block - 1));
}

RP_RUN_CODE long rp_mmap_op(struct rp_wctx *w, const struct rp_elem *e, uint64_t *t0, uint64_t *t1)
{
	const struct rp_rt *rt = w->rt;
	uint64_t len = e->args[1], prot = e->args[2], flags = e->args[3], off = e->args[5];
	uint64_t hint = e->args[0];
	int fd = mmap_fd(w, e, &flags);
	long r;

	if (e->flags & RF_NEWREG) {
		uint64_t rec_start = e->aux; /* the region's (publish.c) */
		flags &= ~(uint64_t)(MAP_FIXED | MAP_FIXED_NOREPLACE);
		if (rt->opt.placement != RP_PLACE_EXACT && !hint &&
		    ((e->flags & RF_FILE) || (flags & MAP_TYPE) != MAP_PRIVATE))
			hint = file_hint(rec_start, len);
		*t0 = rp_ticks(w->rt->tsc);
		rp_unmap_pieces(w, e);
		if (rt->opt.placement == RP_PLACE_EXACT) {
			r = -EEXIST;
			if (w->copy == 0 && rec_start >= rt->void_len)
				r = sc6(SYS_mmap, rec_start, len, prot, flags | MAP_FIXED_NOREPLACE,
					(uint64_t)fd, off);
			if (!failed(r) && (uint64_t)r != rec_start) {
				sc6(SYS_munmap, (uint64_t)r, len, 0, 0, 0, 0);
				r = -EEXIST;
			}
			if (failed(r)) {
				w->out->fallbacks++;
				r = sc6(SYS_mmap, hint, len, prot, flags, (uint64_t)fd, off);
			}
		} else {
			r = sc6(SYS_mmap, hint, len, prot, flags, (uint64_t)fd, off);
		}
		*t1 = rp_ticks(w->rt->tsc);
		if (!failed(r))
			w->base[e->region] = (uint64_t)r;
		return r;
	}
	if ((e->flags & RF_FIXED_IN) && w->base[e->region2]) {
		*t0 = rp_ticks(w->rt->tsc);
		r = sc6(SYS_mmap, w->base[e->region2] + e->off2, len, prot, flags, (uint64_t)fd, off);
		*t1 = rp_ticks(w->rt->tsc);
		return r;
	}
	/* Recorded failure: try it where the replay owns nothing. */
	flags &= ~(uint64_t)(MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_POPULATE | MAP_LOCKED);
	*t0 = rp_ticks(w->rt->tsc);
	r = sc6(SYS_mmap, hint, len, prot, flags, (uint64_t)fd, off);
	*t1 = rp_ticks(w->rt->tsc);
	if (!failed(r))
		sc6(SYS_munmap, (uint64_t)r, len, 0, 0, 0, 0);
	return r;
}

RP_RUN_CODE long rp_mremap_op(struct rp_wctx *w, const struct rp_elem *e, uint64_t *t0, uint64_t *t1)
{
	const struct rp_rt *rt = w->rt;
	const struct rp_piece *pc = rp_elem_pieces(w, e);
	uint64_t olen = e->args[1], nlen = e->args[2], flags = e->args[3], naddr = 0;
	uint64_t l0 = olen, reserved = 0;
	int is_void;
	uint64_t old = piece_addr(w, pc, &l0, &is_void);
	long r;
	int fb = 0;

	if (flags & MREMAP_FIXED) {
		if ((e->flags & RF_FIXED_IN) && w->base[e->region2]) {
			naddr = w->base[e->region2] + e->off2;
		} else {
			reserved = rt_reserve(w->rt, e->args[4], nlen ? nlen : rt->page, w->copy, &fb);
			naddr = reserved;
		}
	} else if ((e->flags & RF_NEWREG) && rt->opt.placement == RP_PLACE_EXACT &&
		   (flags & MREMAP_MAYMOVE) && (uint64_t)e->result != e->args[0]) {
		/* Moved when recorded: ask for the recorded destination. */
		reserved = rt_reserve(w->rt, (uint64_t)e->result, nlen, w->copy, &fb);
		if (reserved == (uint64_t)e->result) {
			flags |= MREMAP_FIXED;
			naddr = reserved;
		} else if (reserved) {
			munmap((void *)reserved, nlen);
			reserved = 0;
		}
	}
	w->out->fallbacks += (uint64_t)fb;
	*t0 = rp_ticks(w->rt->tsc);
	r = sc6(SYS_mremap, old, olen, nlen, flags, naddr, 0);
	*t1 = rp_ticks(w->rt->tsc);
	if (failed(r) && reserved)
		munmap((void *)reserved, nlen ? nlen : rt->page);
	if (!failed(r) && (e->flags & RF_NEWREG))
		w->base[e->region] = (uint64_t)r;
	return r;
}

/* brk, emulated on the region reserved for the heap: growing maps
 * read-write pages, shrinking turns them back into reservation.  The
 * result is returned in recorded terms, as the kernel's would be. */
RP_RUN_CODE long rp_brk_op(struct rp_wctx *w, const struct rp_elem *e, uint64_t *t0, uint64_t *t1)
{
	const struct rp_rt *rt = w->rt;
	uint64_t mask = rt->page - 1, b = w->base[e->region];
	uint64_t rs = e->args[5]; /* the heap's recorded start (publish.c) */
	uint64_t pold = (e->aux + mask) & ~mask, pnew = (e->off2 + mask) & ~mask;
	long r = 0;

	if (!b && (e->flags & RF_BRK_LAZY)) {
		/* a heap that came after its plan was frozen (streamed) */
		int fb = 0;
		b = rt_reserve(w->rt, rs, RP_BRK_STREAMED, w->copy, &fb);
		w->base[e->region] = b;
		w->out->fallbacks += (uint64_t)fb;
	}
	*t0 = rp_ticks(w->rt->tsc);
	if (!b || (e->flags & RF_BRK_PAST))
		r = -ENOMEM; /* no heap, or past its reservation */
	else if (pnew > pold)
		r = sc6(SYS_mmap, b + pold, pnew - pold, PROT_READ | PROT_WRITE,
			MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0);
	else if (pnew < pold)
		r = sc6(SYS_mmap, b + pnew, pold - pnew, PROT_NONE,
			MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, (uint64_t)-1, 0);
	else
		sc6(SYS_brk, 0, 0, 0, 0, 0, 0); /* a query: the cost of asking */
	*t1 = rp_ticks(w->rt->tsc);
	return (long)(rs + (failed(r) ? e->aux : e->off2));
}
