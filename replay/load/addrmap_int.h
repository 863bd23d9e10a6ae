/*
 * addrmap_int.h - an interval map over addresses: [start, end) -> value.
 * Not format/vmtutil.h's range set: a translation needs neighbours that
 * continue each other merged and offsets carried through splits, where
 * that set's entries keep their identity when cut.
 *
 * The replayer keeps one per recorded address space to know, for every
 * recorded address, which replay "region" holds it and at which offset
 * (replay address = base of the region at run time + offset), with the
 * recorded protection.  The same structure, without offsets, records the
 * last op that touched each range (ordering dependencies) and which pages
 * are touched (memory accounting).
 *
 * Segments are kept sorted, non-overlapping, and merged with a neighbour
 * when they continue it (same region and attr, and, when offsets are
 * tracked, the offset continues).  Storage is one sorted array: lookups
 * are binary searches, changes move the tail.  Address spaces have a few
 * thousand mappings at most, so this beats a tree in practice.
 *
 * Functions return 0 or -ENOMEM; the map is unchanged on failure.
 */
#ifndef VMREPLAY_ADDRMAP_H
#define VMREPLAY_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

#define RPAM_GAP UINT32_MAX /* region of a gap piece (no mapping) */

struct rpam_val {
	uint32_t region; /* owner (region id, thread index, ...) */
	uint32_t attr;	 /* opaque attribute (protection, seq, ...) */
	uint64_t off;	 /* offset of the segment's start in its region */
};

struct rpam_seg {
	uint64_t start, end; /* [start, end), start < end */
	struct rpam_val v;
};

struct addrmap {
	struct rpam_seg *s;
	size_t n, cap;
	int track_off; /* split segments advance v.off; merge needs continuity */
};

/* An empty map.  track_off: see struct addrmap. */
void rpam_init(struct addrmap *m, int track_off);
void rpam_free(struct addrmap *m);
/* dst = copy of src (dst must be freed or fresh).  0 or -ENOMEM. */
int rpam_copy(struct addrmap *dst, const struct addrmap *src);

/* Map [a, b) to v (v.off is the offset at a), replacing what was there. */
int rpam_set(struct addrmap *m, uint64_t a, uint64_t b, struct rpam_val v);
/* Unmap [a, b) (parts that are not mapped are ignored). */
int rpam_remove(struct addrmap *m, uint64_t a, uint64_t b);
/* Set attr on the mapped parts of [a, b). */
int rpam_set_attr(struct addrmap *m, uint64_t a, uint64_t b, uint32_t attr);

/* Index of the first segment whose end is > addr (m->n if none). */
size_t rpam_find(const struct addrmap *m, uint64_t addr);
/* The segment containing addr, or NULL. */
const struct rpam_seg *rpam_lookup(const struct addrmap *m, uint64_t addr);
/* 1 if every byte of [a, b) is mapped. */
int rpam_covered(const struct addrmap *m, uint64_t a, uint64_t b);

/* A translated piece of a range: region RPAM_GAP for an unmapped part
 * (off is then the recorded address of the gap). */
struct rpam_piece {
	uint64_t start, len; /* recorded start and length */
	uint32_t region;
	uint32_t attr;
	uint64_t off;
};

/* Cut [a, b) into pieces in address order: mapped parts, merged when they
 * continue each other in the same region (ignoring attr when merge_attr),
 * and gaps.  Calls fn for each piece; stops and returns fn's value when it
 * is not 0.  Returns 0 when all pieces were visited. */
int rpam_pieces(const struct addrmap *m, uint64_t a, uint64_t b, int merge_attr,
	      int (*fn)(void *ctx, const struct rpam_piece *p), void *ctx);

#endif
