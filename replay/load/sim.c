/*
 * sim.c - the load-time simulation of each recorded address space.
 *
 * Every recorded op is translated here, once, into what the executor does:
 * the replay regions and offsets of the ranges it names, whether it creates
 * a region (mmap, mremap: the replay result becomes the region's base), and
 * which ranges it uses (for ordering).  The simulated map follows the
 * recorded results, so later ops see the recorded layout; the executor
 * only adds each region's run-time base.
 *
 * Safety rule: replay addresses are only ever produced from regions the
 * replay created itself, or from the "void" (the never-mappable bytes at
 * address 0, below vm.mmap_min_addr); a recorded address is never used
 * as a replay address except as a hint or with MAP_FIXED_NOREPLACE.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include "sim_int.h"



static uint64_t covered(const struct addrmap *m, uint64_t a, uint64_t b)
{
	uint64_t n = 0;
	for (size_t i = rpam_find(m, a); i < m->n && m->s[i].start < b; i++) {
		uint64_t x = m->s[i].start > a ? m->s[i].start : a;
		uint64_t y = m->s[i].end < b ? m->s[i].end : b;
		n += y - x;
	}
	return n;
}

/* Map changes with accounting (reserve.c). */
static int map_set(struct loader *L, struct lproc *P, uint64_t a, uint64_t b, struct rpam_val v)
{
	int rc = ld_reserve(L, P, a, b, -1);
	if (rc)
		return rc;
	if ((rc = rpam_set(&P->map, a, b, v)))
		return ld_fail(L, rc, "out of memory");
	if ((rc = ld_reserve(L, P, a, b, 1)))
		return rc;
	return ld_check_memory(L);
}

static int map_remove(struct loader *L, struct lproc *P, uint64_t a, uint64_t b)
{
	int rc = ld_reserve(L, P, a, b, -1);
	if (rc)
		return rc;
	if ((rc = rpam_remove(&P->map, a, b)))
		return ld_fail(L, rc, "out of memory");
	return 0;
}

static int touched_remove(struct loader *L, struct lproc *P, uint64_t a, uint64_t b)
{
	uint64_t n = covered(&P->touched, a, b);
	if (!n)
		return 0;
	if (rpam_remove(&P->touched, a, b))
		return ld_fail(L, -ENOMEM, "out of memory");
	P->touched_bytes -= n;
	L->cur_touched -= n;
	return 0;
}

/* The pages of [a, b) a process touched: those of its private writable
 * mappings are its own (reserve.c); the others are the page cache's, or
 * shared memory, which the mapped estimate holds once. */
int sim_touched_add(struct loader *L, struct lproc *P, uint64_t a, uint64_t b)
{
	const struct addrmap *m = &P->map;
	struct rpam_val v = {0, 0, 0};
	for (size_t i = rpam_find(m, a); i < m->n && m->s[i].start < b; i++) {
		if (!ld_private_writable(m->s[i].v.attr))
			continue;
		uint64_t x = m->s[i].start > a ? m->s[i].start : a;
		uint64_t y = m->s[i].end < b ? m->s[i].end : b;
		uint64_t n = covered(&P->touched, x, y);
		if (rpam_set(&P->touched, x, y, v))
			return ld_fail(L, -ENOMEM, "out of memory");
		P->touched_bytes += (y - x) - n;
		L->cur_touched += (y - x) - n;
	}
	return ld_check_memory(L);
}

/* Change the protection bits of the mapped parts of [a, b), keeping the
 * other attributes of each segment. */
static int map_protect(struct loader *L, struct lproc *P, uint64_t a, uint64_t b, uint32_t prot)
{
	int rc = ld_reserve(L, P, a, b, -1);
	if (rc)
		return rc;
	uint64_t at = a;
	while (at < b) {
		size_t i = rpam_find(&P->map, at);
		if (i >= P->map.n || P->map.s[i].start >= b)
			break;
		struct rpam_seg s = P->map.s[i];
		uint64_t x = s.start > at ? s.start : at, y = s.end < b ? s.end : b;
		if (rpam_set_attr(&P->map, x, y, (s.v.attr & ~AT_PROT) | (prot & AT_PROT)))
			return ld_fail(L, -ENOMEM, "out of memory");
		at = y;
	}
	if ((rc = ld_reserve(L, P, a, b, 1)))
		return rc;
	return ld_check_memory(L);
}

void sim_need(struct loader *L, uint32_t region)
{
	if (region != RP_VOID && region != RPAM_GAP)
		L->t->regions[region].needed = 1;
}

/* ---- pieces ---------------------------------------------------------- */

struct pctx {
	struct loader *L;
	int mark;      /* mark regions needed */
	int skip_gaps; /* only mapped pieces */
	uint32_t n, gaps;
	int err;
};

static int add_piece_cb(void *ctx, const struct rpam_piece *p)
{
	struct pctx *c = ctx;
	if (p->region == RPAM_GAP) {
		c->gaps++;
		if (c->skip_gaps)
			return 0;
		c->err = ld_add_piece(c->L, 0, p->len, RP_VOID);
	} else {
		if (c->mark)
			sim_need(c->L, p->region);
		c->err = ld_add_piece(c->L, p->off, p->len, p->region);
	}
	if (c->err < 0)
		return 1;
	c->n++;
	return 0;
}

/* Append the pieces of [a, b) of P's map; returns count or <0. */
static int add_pieces(struct loader *L, struct lproc *P, uint64_t a, uint64_t b, int mark,
		      int skip_gaps, uint32_t *gaps)
{
	struct pctx c = {L, mark, skip_gaps, 0, 0, 0};
	rpam_pieces(&P->map, a, b, 1, add_piece_cb, &c);
	if (c.err < 0)
		return c.err;
	if (gaps)
		*gaps = c.gaps;
	return (int)c.n;
}

struct one {
	int n;
	struct rpam_piece p;
};

static int one_cb(void *ctx, const struct rpam_piece *p)
{
	struct one *o = ctx;
	o->p = *p;
	return ++o->n > 1;
}

/* Is [a, b) inside one region, continuously?  Then its region and offset. */
static int in_one_region(const struct lproc *P, uint64_t a, uint64_t b, uint32_t *region, uint64_t *off)
{
	struct one o = {0, {0, 0, 0, 0, 0}};
	if (a >= b)
		return 0;
	rpam_pieces(&P->map, a, b, 1, one_cb, &o);
	if (o.n != 1 || o.p.region == RPAM_GAP)
		return 0;
	*region = o.p.region;
	*off = o.p.off;
	return 1;
}

/* The piece of one address (for ops whose length the kernel rejects or
 * ignores): its region and offset, or the void with its in-page offset. */
static int point_piece(struct loader *L, struct lproc *P, uint64_t addr, uint64_t len)
{
	const struct rpam_seg *s = rpam_lookup(&P->map, addr);
	if (s) {
		sim_need(L, s->v.region);
		return ld_add_piece(L, s->v.off + (addr - s->start), len, s->v.region);
	}
	return ld_add_piece(L, addr & (L->page - 1), len, RP_VOID);
}

static uint64_t page_up(struct loader *L, uint64_t len, int *ovf)
{
	uint64_t m = L->page - 1;
	if (len > UINT64_MAX - m) {
		*ovf = 1;
		return 0;
	}
	return (len + m) & ~m;
}

/* ---- range ops: munmap, mprotect, madvise, mlock, msync, ... ---------- */

static int sim_range(struct loader *L, struct lproc *P, struct rp_thread *th, const struct vmt_syscall *sc,
		     struct rp_elem *e, struct lrange *rng, int *nrng)
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op); /* a VMT_RANGE_ARGS op */
	uint64_t addr = sc->args[oi->addr_arg], len = sc->args[oi->len_arg], mask = L->page - 1;
	int op = (int)sc->op, ovf = 0;
	int aligned = !(oi->effects & VMT_OPE_ROUNDS);
	int happened = (sc->flags & VMT_SC_NO_RESULT) || sc->result == 0;
	int rc;

	e->how = RX_RANGE;
	if (op == VMT_OP_MUNMAP)
		e->flags |= RF_UNMAP;
	if (op == VMT_OP_MADVISE && (sc->args[2] == LX_MADV_HWPOISON || sc->args[2] == LX_MADV_SOFT_OFFLINE)) {
		/* MADV_HWPOISON / MADV_SOFT_OFFLINE would damage this machine. */
		e->kind = RK_SKIP;
		return 0;
	}
	e->piece0 = L->t->npieces;
	if (len == 0 || ((addr & mask) && aligned) || addr >= RP_ADDR_LIMIT) {
		/* The kernel rejects these before looking at mappings: one
		 * piece with the recorded length (harmless anywhere). */
		e->flags |= RF_RAW_LEN;
		if ((rc = point_piece(L, P, addr, len)) < 0)
			return rc;
		e->npieces = 1;
		return 0;
	}
	if (!aligned) {
		len += addr & mask;
		addr &= ~mask;
	}
	uint64_t plen = page_up(L, len, &ovf), end = addr + plen;
	if (ovf || end < addr || end > RP_ADDR_LIMIT)
		end = RP_ADDR_LIMIT;
	uint32_t gaps = 0;
	if (op == VMT_OP_MSEAL && !rpam_covered(&P->map, addr, end)) {
		/* mseal checks the whole range before sealing anything. */
		if ((rc = ld_add_piece(L, 0, end - addr, RP_VOID)) < 0)
			return rc;
		e->npieces = 1;
	} else {
		if ((rc = add_pieces(L, P, addr, end, 1, 0, &gaps)) < 0)
			return rc;
		e->npieces = (uint32_t)rc;
	}
	if (op == VMT_OP_MPROTECT || op == VMT_OP_PKEY_MPROTECT || op == VMT_OP_MLOCK ||
	    op == VMT_OP_MLOCK2 || op == VMT_OP_MUNLOCK || op == VMT_OP_MINCORE)
		e->flags |= RF_STOP_ERR;
	if (op == VMT_OP_MINCORE) {
		uint64_t maxp = 0;
		for (uint32_t i = 0; i < e->npieces; i++) {
			uint64_t n = L->t->pieces[e->piece0 + i].len / L->page;
			if (n > maxp)
				maxp = n;
		}
		if (maxp > (64u << 20)) { /* a 64 MiB vector: not a real app */
			e->kind = RK_SKIP;
			return 0;
		}
		if (maxp > th->mincore_max)
			th->mincore_max = maxp;
	}
	rng[(*nrng)++] = (struct lrange){addr, end};

	switch (op) {
	case VMT_OP_MUNMAP:
		if (!happened)
			return 0;
		if ((rc = touched_remove(L, P, addr, end)))
			return rc;
		return map_remove(L, P, addr, end);
	case VMT_OP_MPROTECT:
	case VMT_OP_PKEY_MPROTECT:
		if (happened)
			return map_protect(L, P, addr, end, (uint32_t)sc->args[2]);
		if (sc->result == -ENOMEM) {
			/* Applied up to the first hole. */
			uint64_t at = addr;
			size_t i = rpam_find(&P->map, addr);
			while (i < P->map.n && P->map.s[i].start <= at && at < end)
				at = P->map.s[i++].end;
			if (at > addr)
				return map_protect(L, P, addr, at < end ? at : end, (uint32_t)sc->args[2]);
		}
		return 0;
	case VMT_OP_MADVISE:
		if (vmt_madv_discards(sc->args[2]) && (happened || sc->result == -ENOMEM))
			return touched_remove(L, P, addr, end);
		return 0;
	default:
		return 0;
	}
}

/* ---- mmap -------------------------------------------------------------- */

static int sim_mmap(struct loader *L, uint32_t tid, struct lproc *P, const struct vmt_syscall *sc,
		    struct rp_elem *e, struct lrange *rng, int *nrng)
{
	struct lthread *lt = &L->lt[tid];
	uint64_t addr = sc->args[0], len = sc->args[1], prot = sc->args[2], flags = sc->args[3];
	uint64_t off = sc->args[5], mask = L->page - 1;
	int ok = !(sc->flags & VMT_SC_NO_RESULT) && !vmt_is_errno(sc->result);
	int ovf = 0, rc;
	uint64_t plen = page_up(L, len, &ovf);
	int valid_len = len && !ovf && plen <= RP_ADDR_LIMIT;
	uint32_t type = (uint32_t)flags & LX_MAP_TYPE;
	int shared = type == LX_MAP_SHARED || type == LX_MAP_SHARED_VALIDATE;

	e->how = RX_MMAP;
	if (!(flags & LX_MAP_ANONYMOUS) && lt->have_file) {
		struct rp_file *f = &lt->file;
		int writable = (lt->open_flags & O_ACCMODE) != O_RDONLY;
		if (!f->zero) {
			uint32_t idx;
			if ((rc = ld_file_index(L, f, &idx)) < 0)
				return rc;
			struct rp_file *F = &L->t->files[idx];
			if (valid_len && off < RP_ADDR_LIMIT && off + plen > F->size)
				F->size = off + plen;
			/* Only a shared mapping that can write keeps the
			 * original out: one made read-only maps the original,
			 * opened read-only, and a later mprotect(PROT_WRITE)
			 * of it fails (a divergence), never writes it. */
			if (shared && writable && (prot & LX_PROT_WRITE))
				F->shared_rw = 1;
			e->flags |= RF_FILE | (writable ? RF_FILE_RW : 0);
			e->arg = idx;
		}
	}
	lt->have_file = 0;

	uint32_t attr = ((uint32_t)prot & AT_PROT) | (shared ? AT_SHARED : 0) |
			((flags & LX_MAP_NORESERVE) ? AT_NORESERVE : 0) |
			((e->flags & RF_FILE) ? AT_FILE : 0);
	if ((e->flags & RF_FILE) && L->t->files[e->arg].shm)
		attr = (attr & ~AT_FILE) | AT_SHM;
	int fixed = (flags & LX_MAP_FIXED) != 0;
	uint64_t R = (uint64_t)sc->result;
	uint32_t region;
	uint64_t roff;

	if (ok) {
		if (!valid_len || (R & mask) || R >= RP_ADDR_LIMIT || R + plen > RP_ADDR_LIMIT ||
		    ((fixed || (flags & LX_MAP_FIXED_NOREPLACE)) && R != addr))
			return ld_fail(L, VMT_E_CORRUPT, "mmap result %#llx is not a possible mapping",
				       (unsigned long long)R);
		if (fixed && in_one_region(P, R, R + plen, &region, &roff)) {
			e->flags |= RF_FIXED_IN;
			e->region2 = region;
			e->off2 = roff;
			sim_need(L, region);
			/* A region is of one kind to the fidelity section: a
			 * file mapped into a reservation (as ld.so maps a
			 * library) makes it a file's. */
			uint32_t fk = ld_fkind(L, region, attr);
			if (fk != RP_FK_ANON && L->t->regions[region].fkind == RP_FK_ANON)
				L->t->regions[region].fkind = (uint8_t)fk;
			if ((rc = sim_overlay(L, region, roff, plen,
					      (e->flags & RF_FILE) ? e->arg : RP_VOID, off)) < 0 ||
			    (rc = touched_remove(L, P, R, R + plen)))
				return rc;
			struct rpam_val v = {region, attr, roff};
			if ((rc = map_set(L, P, R, R + plen, v)))
				return rc;
		} else {
			/* A new region.  Whatever the map still has there was
			 * replaced (MAP_FIXED) or went away unseen: unmap it. */
			e->piece0 = L->t->npieces;
			if ((rc = add_pieces(L, P, R, R + plen, 0, 1, NULL)) < 0)
				return rc;
			e->npieces = (uint32_t)rc;
			if ((rc = ld_new_region(L, (uint32_t)(P - L->lp), RG_MAP, R, plen, &region)))
				return rc;
			e->flags |= RF_NEWREG;
			e->region = region;
			L->t->regions[region].fkind = (uint8_t)ld_fkind(L, region, attr);
			if ((e->flags & RF_FILE) && off < RP_ADDR_LIMIT) {
				L->t->regions[region].file = e->arg;
				L->t->regions[region].file_off = off;
			}
			if ((rc = touched_remove(L, P, R, R + plen)))
				return rc;
			struct rpam_val v = {region, attr, 0};
			if ((rc = map_set(L, P, R, R + plen, v)))
				return rc;
		}
		rng[(*nrng)++] = (struct lrange){R, R + plen};
		return 0;
	}
	/* Recorded failure (or no result): replay the call to compare the
	 * outcome, at a place the replay owns. */
	if (fixed && valid_len && !(addr & mask) && addr < RP_ADDR_LIMIT &&
	    in_one_region(P, addr, addr + plen, &region, &roff)) {
		e->flags |= RF_FIXED_IN;
		e->region2 = region;
		e->off2 = roff;
		sim_need(L, region);
	}
	if (fixed && valid_len && addr < RP_ADDR_LIMIT)
		rng[(*nrng)++] = (struct lrange){addr, addr + plen < RP_ADDR_LIMIT ? addr + plen : RP_ADDR_LIMIT};
	return 0;
}

/* ---- mremap ------------------------------------------------------------ */

/* A file mapping moved or grown by mremap (region made from src's offset
 * src_off, len bytes): the new region maps the same file, and the file
 * must be as long as the new region, since the program made it so
 * before it grew the mapping (with write, pwrite or ftruncate, which are
 * not recorded: a database with mmap I/O extends its file, then its
 * mapping).  Without this, the replay's touches past the file's size as
 * it was first mapped trap, and take the element's other touches with
 * them. */
static void moved_file(struct loader *L, uint32_t src, uint64_t src_off, uint32_t region,
		       uint64_t len)
{
	if (src == RP_VOID || L->t->regions[src].file == RP_VOID)
		return;
	const struct rp_region *s = &L->t->regions[src];
	uint64_t off = s->file_off + src_off;
	if (off >= RP_ADDR_LIMIT || len > RP_ADDR_LIMIT - off)
		return;
	L->t->regions[region].file = s->file;
	L->t->regions[region].file_off = off;
	struct rp_file *F = &L->t->files[s->file];
	if (off + len > F->size)
		F->size = off + len;
}

static int sim_mremap(struct loader *L, struct lproc *P, const struct vmt_syscall *sc,
		      struct rp_elem *e, struct lrange *rng, int *nrng)
{
	uint64_t old = sc->args[0], olen = sc->args[1], nlen = sc->args[2], flags = sc->args[3];
	uint64_t naddr = sc->args[4], mask = L->page - 1;
	int ok = !(sc->flags & VMT_SC_NO_RESULT) && !vmt_is_errno(sc->result);
	int o1 = 0, o2 = 0, rc;
	uint64_t polen = page_up(L, olen, &o1), pnlen = page_up(L, nlen, &o2);
	int old_valid = !(old & mask) && !o1 && old < RP_ADDR_LIMIT && polen <= RP_ADDR_LIMIT - old;
	uint32_t region, src = RP_VOID;
	uint64_t roff, src_off = 0;

	e->how = RX_MREMAP;
	e->piece0 = L->t->npieces;
	e->npieces = 1;
	if (old_valid && olen == 0) {
		if ((rc = point_piece(L, P, old, 0)) < 0)
			return rc;
	} else if (old_valid && in_one_region(P, old, old + polen, &region, &roff)) {
		src = region;
		src_off = roff;
		sim_need(L, region);
		if ((rc = ld_add_piece(L, roff, olen, region)) < 0)
			return rc;
	} else {
		if ((rc = ld_add_piece(L, old & mask, olen, RP_VOID)) < 0)
			return rc;
	}
	if (old_valid && polen)
		rng[(*nrng)++] = (struct lrange){old, old + polen};

	int fixed = (flags & LX_MREMAP_FIXED) != 0;
	int new_valid = !(naddr & mask) && !o2 && naddr < RP_ADDR_LIMIT && pnlen && pnlen <= RP_ADDR_LIMIT - naddr;
	if (fixed) {
		if (new_valid && in_one_region(P, naddr, naddr + pnlen, &region, &roff)) {
			e->flags |= RF_FIXED_IN;
			e->region2 = region;
			e->off2 = roff;
			sim_need(L, region);
		}
		if (new_valid)
			rng[(*nrng)++] = (struct lrange){naddr, naddr + pnlen};
	}
	if (!ok)
		return 0;

	uint64_t R = (uint64_t)sc->result;
	if (!old_valid || o2 || !pnlen || (R & mask) || R >= RP_ADDR_LIMIT || pnlen > RP_ADDR_LIMIT - R ||
	    (fixed && R != naddr))
		return ld_fail(L, VMT_E_CORRUPT, "mremap result %#llx is not a possible mapping",
			       (unsigned long long)R);
	const struct rpam_seg *s = rpam_lookup(&P->map, old);
	uint32_t attr = s ? s->v.attr : (LX_PROT_READ | LX_PROT_WRITE);
	uint32_t sreg = s ? s->v.region : RP_VOID; /* (s is gone with map_remove) */
	if (olen && !(flags & LX_MREMAP_DONTUNMAP)) {
		if ((rc = touched_remove(L, P, old, old + polen)) || (rc = map_remove(L, P, old, old + polen)))
			return rc;
	} else if (olen) {
		if ((rc = touched_remove(L, P, old, old + polen)))
			return rc;
	}
	if ((rc = touched_remove(L, P, R, R + pnlen)))
		return rc;
	if ((rc = ld_new_region(L, (uint32_t)(P - L->lp), RG_MAP, R, pnlen, &region)))
		return rc;
	e->flags |= RF_NEWREG;
	e->region = region;
	/* (moved, it is what it was) */
	L->t->regions[region].fkind = sreg != RP_VOID ? (uint8_t)ld_fkind(L, sreg, attr) : RP_FK_ANON;
	moved_file(L, src, src_off, region, pnlen);
	struct rpam_val v = {region, attr, 0};
	if ((rc = map_set(L, P, R, R + pnlen, v)))
		return rc;
	rng[(*nrng)++] = (struct lrange){R, R + pnlen};
	return 0;
}

/* ---- brk --------------------------------------------------------------- */

static int sim_brk(struct loader *L, struct lproc *P, const struct vmt_syscall *sc,
		   struct rp_elem *e, struct lrange *rng, int *nrng)
{
	uint64_t mask = L->page - 1, res = (uint64_t)sc->result;
	uint32_t p = (uint32_t)(P - L->lp);
	int rc;

	if (sc->flags & VMT_SC_NO_RESULT) {
		e->kind = RK_SKIP;
		return 0;
	}
	if (res >= RP_ADDR_LIMIT || vmt_is_errno(sc->result))
		return ld_fail(L, VMT_E_CORRUPT, "brk result %#llx is not an address",
			       (unsigned long long)res);
	if (P->brk_region == RP_VOID) {
		/* No [heap] in the snapshot: the heap starts at the first
		 * break the trace shows. */
		int pl = sim_plan(L, p);
		if (pl < 0)
			return pl;
		uint64_t start = res & ~mask;
		if ((rc = ld_new_region(L, p, RG_BRK, start, 0, &P->brk_region)))
			return rc;
		L->t->plans[pl].brk_region = P->brk_region;
		L->t->regions[P->brk_region].plan = (uint32_t)pl;
		P->brk_cur = sc->args[0] == res ? start : res;
	}
	struct rp_region *rg = &L->t->regions[P->brk_region];
	uint64_t rs = rg->rec_start, old = P->brk_cur;
	if (res < rs || res - rs > (1ull << 46))
		return ld_fail(L, VMT_E_CORRUPT, "brk result %#llx is outside the heap at %#llx",
			       (unsigned long long)res, (unsigned long long)rs);
	rg->needed = 1;
	e->how = RX_BRK;
	e->region = P->brk_region;
	e->aux = old - rs;
	e->off2 = res - rs;
	uint64_t pold = (old + mask) & ~mask, pnew = (res + mask) & ~mask;
	if (pnew > pold) {
		struct rpam_val v = {P->brk_region, LX_PROT_READ | LX_PROT_WRITE, pold - rs};
		if ((rc = map_set(L, P, pold, pnew, v)))
			return rc;
		rng[(*nrng)++] = (struct lrange){pold, pnew};
	} else if (pnew < pold) {
		if ((rc = touched_remove(L, P, pnew, pold)) || (rc = map_remove(L, P, pnew, pold)))
			return rc;
		rng[(*nrng)++] = (struct lrange){pnew, pold};
	}
	if (pnew - rs > rg->size)
		rg->size = pnew - rs;
	P->brk_cur = res;
	/* All brk calls of a process are ordered among themselves. */
	rng[(*nrng)++] = (struct lrange){RP_BRK_RESOURCE, RP_BRK_RESOURCE + 1};
	return 0;
}

/* ---- SysV shared memory -------------------------------------------------- */

/*
 * shmat and shmdt are replayed as what they do to the address space: a
 * shared mapping of the whole segment and its removal.  A memfd stands in
 * for each recorded segment (rt_open_files()): shmem pages like the
 * segment's, shared by every replay process that attaches it.  The
 * elements keep their op (latency and counts are reported as shmat and
 * shmdt) with mmap's and munmap's arguments.  A call without the
 * segment's identity and size (the recorder could not stat it, or it
 * failed) is skipped.
 */
static int shm_known(struct loader *L, uint32_t tid, const struct vmt_syscall *sc, struct rp_elem *e)
{
	struct lthread *lt = &L->lt[tid];
	if (lt->have_file && lt->file.rec_size && !(sc->flags & VMT_SC_NO_RESULT) &&
	    !vmt_is_errno(sc->result))
		return 1;
	lt->have_file = 0;
	e->kind = RK_SKIP;
	return 0;
}

static int sim_shmat(struct loader *L, uint32_t tid, struct lproc *P, const struct vmt_syscall *sc,
		     struct rp_elem *e, struct lrange *rng, int *nrng)
{
	if (!shm_known(L, tid, sc, e))
		return 0;
	struct lthread *lt = &L->lt[tid];
	uint64_t addr = sc->args[1], flg = sc->args[2];
	if (flg & LX_SHM_RND)
		addr &= ~(uint64_t)(L->page - 1);
	struct vmt_syscall m = *sc;
	m.op = VMT_OP_MMAP;
	m.nargs = 6;
	m.args[0] = addr;
	m.args[1] = lt->file.rec_size;
	m.args[2] = LX_PROT_READ | ((flg & LX_SHM_RDONLY) ? 0 : LX_PROT_WRITE) | ((flg & LX_SHM_EXEC) ? LX_PROT_EXEC : 0);
	/* An address without SHM_REMAP may not replace a mapping. */
	m.args[3] = LX_MAP_SHARED | (addr ? ((flg & LX_SHM_REMAP) ? LX_MAP_FIXED : LX_MAP_FIXED_NOREPLACE) : 0);
	m.args[4] = (uint64_t)-1;
	m.args[5] = 0;
	lt->file.shm = 1;
	lt->open_flags = (flg & LX_SHM_RDONLY) ? O_RDONLY : O_RDWR;
	memcpy(e->args, m.args, sizeof(e->args));
	int rc = sim_mmap(L, tid, P, &m, e, rng, nrng);
	if (rc == 0 && (e->flags & RF_FILE) && (flg & LX_SHM_RDONLY))
		L->t->files[e->arg].shm_ro = 1;
	return rc;
}

static int sim_shmdt(struct loader *L, uint32_t tid, struct lproc *P, struct rp_thread *th,
		     const struct vmt_syscall *sc, struct rp_elem *e, struct lrange *rng, int *nrng)
{
	if (!shm_known(L, tid, sc, e))
		return 0;
	struct lthread *lt = &L->lt[tid];
	uint64_t addr = sc->args[0], len = lt->file.rec_size;
	lt->have_file = 0;
	/* The attach as this trace mapped it: shared, and no longer than what
	 * is left of its region from addr (the recorded size could be stale
	 * or hostile: it must not unmap a neighbour). */
	const struct rpam_seg *s = rpam_lookup(&P->map, addr);
	if (!s || !(s->v.attr & AT_SHARED)) {
		e->kind = RK_SKIP;
		return 0;
	}
	const struct rp_region *rg = &L->t->regions[s->v.region];
	uint64_t at = s->v.off + (addr - s->start);
	if (at < rg->size && rg->size - at < len)
		len = rg->size - at;
	struct vmt_syscall m = *sc;
	m.op = VMT_OP_MUNMAP;
	m.nargs = 2;
	m.args[1] = len;
	memcpy(e->args, m.args, sizeof(e->args));
	return sim_range(L, P, th, &m, e, rng, nrng);
}

/* ---- touches of other threads ------------------------------------------ */

static int overlaps(const struct lrange *r, uint32_t n, const struct lrange *rng, int nrng)
{
	for (uint32_t i = 0; i < n; i++)
		for (int j = 0; j < nrng; j++)
			if (r[i].a < rng[j].b && rng[j].a < r[i].b)
				return 1;
	return 0;
}

/*
 * A thread's touches wait for its own next op, but the pages were touched
 * at their recorded place: before this op of another thread.  Where this
 * op uses a range another thread of the process touched since its last op
 * (a JVM's GC worker fills a bitmap, its service thread uncommits part of
 * it with mmap(PROT_NONE, MAP_FIXED)), the touches could otherwise run
 * after the op, on memory it took away, and be lost.  So this thread takes
 * them over and does them before its op; their ranges order it as its own
 * touches do (order.c).  Touches of other ranges stay with their thread,
 * which keeps the concurrency of the recording.
 */
static int adopt_touches(struct loader *L, uint32_t tid, struct lproc *P,
			 const struct lrange *rng, int nrng)
{
	struct lthread *me = &L->lt[tid];
	for (uint32_t i = 0; i < P->nthreads; i++) {
		uint32_t u = P->threads[i];
		struct lthread *o = &L->lt[u];
		if (u == tid || !o->npt || !overlaps(o->tr, o->ntr, rng, nrng))
			continue;
		if (vmt_grow(&me->pt, &me->cappt, (size_t)me->npt + o->npt, sizeof(*me->pt)) ||
		    vmt_grow(&me->tr, &me->captr, (size_t)me->ntr + o->ntr, sizeof(*me->tr)))
			return ld_fail(L, -ENOMEM, "out of memory");
		memcpy(&me->pt[me->npt], o->pt, o->npt * sizeof(*o->pt));
		me->npt += o->npt;
		memcpy(&me->tr[me->ntr], o->tr, o->ntr * sizeof(*o->tr));
		me->ntr += o->ntr;
		o->npt = 0;
		o->ntr = 0;
	}
	return 0;
}

/* ---- entry ------------------------------------------------------------- */

static int sim_op(struct loader *L, uint32_t tid, const struct vmt_event *ev,
		  struct rp_elem *e, struct lrange *rng, int *nrng, int *global);

int sim_syscall(struct loader *L, uint32_t tid, const struct vmt_event *ev,
		struct rp_elem *e, struct lrange *rng, int *nrng, int *global)
{
	struct lproc *P = &L->lp[L->t->threads[tid].proc];
	int rc = sim_op(L, tid, ev, e, rng, nrng, global);
	if (rc < 0 || *global || !*nrng || e->kind == RK_SKIP)
		return rc;
	int a = adopt_touches(L, tid, P, rng, *nrng);
	return a < 0 ? a : rc;
}

static int sim_op(struct loader *L, uint32_t tid, const struct vmt_event *ev,
		struct rp_elem *e, struct lrange *rng, int *nrng, int *global)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct rp_thread *th = &L->t->threads[tid];
	struct lproc *P = &L->lp[th->proc];

	e->kind = RK_SYSCALL;
	e->op = (uint8_t)sc->op;
	for (uint32_t i = 0; i < VMT_MAX_ARGS; i++)
		e->args[i] = i < sc->nargs ? sc->args[i] : 0;
	e->result = sc->result;
	/* A rewritten call carries the result the rewrite expects it to
	 * return (rewrite.h), so it is checked like a recorded one: a rewrite
	 * that changed what the calls do shows up as divergences. */
	if (!(sc->flags & VMT_SC_NO_RESULT))
		e->flags |= RF_CHECK;
	*nrng = 0;
	*global = 0;
	/* Missing arguments read as 0 (sc->args beyond nargs are ignored). */
	struct vmt_syscall s2 = *sc;
	for (uint32_t i = sc->nargs; i < VMT_MAX_ARGS; i++)
		s2.args[i] = 0;

	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	switch (oi ? oi->range : VMT_RANGE_NONE) {
	case VMT_RANGE_ARGS:
		return sim_range(L, P, th, &s2, e, rng, nrng);
	case VMT_RANGE_MAP:
		return sim_mmap(L, tid, P, &s2, e, rng, nrng);
	case VMT_RANGE_REMAP:
		return sim_mremap(L, P, &s2, e, rng, nrng);
	case VMT_RANGE_BREAK:
		return sim_brk(L, P, &s2, e, rng, nrng);
	case VMT_RANGE_ALL:
		e->how = RX_NOARGS;
		*global = 1;
		return 0;
	case VMT_RANGE_SEGMENT:
		if (sc->op == VMT_OP_SHMAT)
			return sim_shmat(L, tid, P, &s2, e, rng, nrng);
		return sim_shmdt(L, tid, P, th, &s2, e, rng, nrng);
	default:
		/* process_madvise: its iovecs are not recorded. */
		e->kind = RK_SKIP;
		return 0;
	}
}
