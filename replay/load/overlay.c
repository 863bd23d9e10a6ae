/*
 * overlay.c - which file a part of a replay region maps, for the page
 * cache a replay gives it (simtouch.c marks, replay/run/files.c fills):
 * a region made by mapping a file is that file's; the files mapped into
 * a region with MAP_FIXED (as ld.so maps a library's segments into an
 * anonymous reservation, or a snapshot's stand-ins) are noted as the
 * region's overlays, newest first.
 */
#include "sim_int.h"

/* At most this many files mapped into one region are noted: past them,
 * its touches warm no page cache (a loader's memory stays bounded by its
 * regions whatever the trace does). */
#define OVERLAY_MAX 32u
#define OVERLAY_LOST 0xffu

static int push_overlay(struct loader *L, struct rp_region *rg, uint64_t roff, uint64_t len,
			uint32_t file, uint64_t off)
{
	if (rg->noverlay >= OVERLAY_MAX) {
		rg->noverlay = OVERLAY_LOST;
		return 0;
	}
	int rc = ld_grow(L, &L->ov, &L->capov, L->nov + 1, sizeof(*L->ov));
	if (rc < 0)
		return rc;
	L->ov[L->nov] = (struct ld_overlay){roff, len, off, file, rg->overlay};
	rg->overlay = (uint32_t)++L->nov;
	rg->noverlay++;
	return 0;
}

int sim_overlay(struct loader *L, uint32_t region, uint64_t roff, uint64_t len, uint32_t file,
		uint64_t off)
{
	struct rp_region *rg = &L->t->regions[region];
	if (rg->file != RP_VOID && file == rg->file && rg->file_off + roff == off)
		return 0;
	/* Anything but the region's own file at its own offset mapped into
	 * it: the region is no longer one file's (an mremap of it then grows
	 * no file), its parts are. */
	if (rg->file != RP_VOID) {
		int rc = push_overlay(L, rg, 0, rg->size, rg->file, rg->file_off);
		if (rc < 0)
			return rc;
		rg->file = RP_VOID;
	}
	return push_overlay(L, rg, roff, len, file, off);
}

uint32_t sim_file_at(const struct loader *L, uint32_t region, uint64_t roff, uint64_t *off,
		     uint64_t *len)
{
	const struct rp_region *rg = &L->t->regions[region];
	if (rg->file != RP_VOID) {
		*off = rg->file_off + roff;
		return rg->file;
	}
	if (rg->noverlay == OVERLAY_LOST)
		return RP_VOID;
	for (uint32_t i = rg->overlay; i; i = L->ov[i - 1].prev) {
		const struct ld_overlay *o = &L->ov[i - 1];
		if (roff < o->roff || roff - o->roff >= o->len)
			continue;
		if (*len > o->len - (roff - o->roff))
			*len = o->len - (roff - o->roff);
		*off = o->file_off + (roff - o->roff);
		return o->file;
	}
	return RP_VOID;
}
