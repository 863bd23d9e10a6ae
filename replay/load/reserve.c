/*
 * reserve.c - the memory a replay reserves, for --max-memory.
 *
 * The replay processes commit what the kernel charges to them, and no
 * more: each process's private writable mappings (anonymous or of a
 * file), and shared memory (shared anonymous, /dev/zero, SysV, memfd)
 * once, however many processes map it.  A fork's child counts its
 * inherited private writable mappings again, as the kernel charges them
 * at fork: copy-on-write gives the child its own copy of every page it
 * writes, and it may write all of them; their parts that cannot be
 * written (a library's text, its relro) count in no process.  Read-only
 * and shared file mappings reserve nothing (their pages are the page
 * cache's), nor do MAP_NORESERVE mappings until touched (the touched
 * estimate, sim_touched_add).
 */
#include <errno.h>
#include <string.h>
#include "sim_int.h"

/* What a mapping of attributes attr reserves: 1 in each process, 2 once
 * for all (shared memory), 0 nothing. */
static int reserves(uint32_t attr)
{
	if (!(attr & AT_PROT))
		return 0;
	if ((attr & AT_SHM) || ((attr & AT_SHARED) && !(attr & AT_FILE)))
		return 2;
	if ((attr & AT_SHARED) || !(attr & LX_PROT_WRITE) || (attr & AT_NORESERVE))
		return 0;
	return 1;
}

int ld_private_writable(uint32_t attr)
{
	return (attr & LX_PROT_WRITE) && !(attr & (AT_SHARED | AT_SHM));
}

/* Shared memory of region r: mapped bytes += delta over all processes;
 * it is charged once, at most the region's size. */
static int shared_add(struct loader *L, uint32_t r, int64_t delta)
{
	rp_trace *t = L->t;
	if (r >= t->nregions) /* no region to share by: as a private one */
		return 1;
	if (r >= L->capshared) {
		int rc = ld_grow(L, &L->shared, &L->capshared, t->nregions, sizeof(*L->shared));
		if (rc)
			return rc;
	}
	struct ld_shared *s = &L->shared[r];
	s->bytes += (uint64_t)delta;
	uint64_t c = s->bytes < t->regions[r].size ? s->bytes : t->regions[r].size;
	L->cur_mapped += c - s->charged;
	s->charged = c;
	return 0;
}

int ld_reserve(struct loader *L, struct lproc *P, uint64_t a, uint64_t b, int sign)
{
	const struct addrmap *m = &P->map;
	for (size_t i = rpam_find(m, a); i < m->n && m->s[i].start < b; i++) {
		const struct rpam_seg *s = &m->s[i];
		uint64_t x = s->start > a ? s->start : a, y = s->end < b ? s->end : b;
		int k = reserves(s->v.attr);
		if (k == 2) {
			k = shared_add(L, s->v.region, sign * (int64_t)(y - x));
			if (k < 0)
				return k;
		}
		if (k == 1) {
			P->mapped += (uint64_t)(sign * (int64_t)(y - x));
			L->cur_mapped += (uint64_t)(sign * (int64_t)(y - x));
		}
	}
	return 0;
}
