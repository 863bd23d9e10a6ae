/*
 * htab.c - the project's hash table (vmtutil.h).
 *
 * Open addressing with linear probing and backward-shift deletion, so that
 * deleting never leaves tombstones behind: a long trace that maps and
 * unmaps the same pages, or a recording with many task exits, keeps its
 * probe runs short.
 *
 * A used slot keeps its key's hash, with the top bit set (so never 0, the
 * empty slot): deletion and growth find an entry's home slot without
 * hashing its key again, and a probe passes other keys on one compare.
 * (The top bit is never part of an index.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "vmtutil.h"

uint64_t vmt_mix64(uint64_t x)
{
	/* splitmix64's finalizer: every input bit reaches every output bit. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#define USED (1ull << 63)

static uint64_t hash(uint64_t a, uint64_t b)
{
	/* A multiply-xorshift mix: page addresses differ only in the middle
	 * bits, which must reach the low bits used as the index. */
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h | USED;
}

void vmt_htab_init(struct vmt_htab *t)
{
	memset(t, 0, sizeof(*t));
}

void vmt_htab_free(struct vmt_htab *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/* The slot of the key (a, b) of hash h, or the empty slot that ends its
 * probe run (t->cap > 0; the load under 1/2 leaves one). */
static size_t probe(const struct vmt_htab *t, uint64_t h, uint64_t a, uint64_t b)
{
	size_t mask = t->cap - 1, i = (size_t)h & mask;
	for (const struct vmt_htab_ent *e; (e = &t->e[i])->used; i = (i + 1) & mask)
		if (e->used == h && e->a == a && e->b == b)
			break;
	return i;
}

uint64_t *vmt_htab_get(const struct vmt_htab *t, uint64_t a, uint64_t b)
{
	if (!t->cap)
		return NULL;
	size_t i = probe(t, hash(a, b), a, b);
	return t->e[i].used ? &t->e[i].v : NULL;
}

static int grow(struct vmt_htab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	struct vmt_htab_ent *ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		struct vmt_htab_ent *e = &t->e[i];
		if (!e->used)
			continue;
		size_t j = (size_t)e->used & (ncap - 1);
		while (ne[j].used)
			j = (j + 1) & (ncap - 1);
		ne[j] = *e;
	}
	free(t->e);
	t->e = ne;
	t->cap = ncap;
	return 0;
}

uint64_t *vmt_htab_put(struct vmt_htab *t, uint64_t a, uint64_t b, int *created)
{
	uint64_t h = hash(a, b);
	size_t i = t->cap ? probe(t, h, a, b) : 0;
	if (created)
		*created = !t->cap || !t->e[i].used;
	if (t->cap && t->e[i].used)
		return &t->e[i].v;
	/* Keep the load under 1/2: probes stay short with linear probing. */
	if ((t->n + 1) * 2 > t->cap) {
		if (grow(t))
			return NULL;
		i = probe(t, h, a, b);
	}
	t->e[i] = (struct vmt_htab_ent){ a, b, 0, h };
	t->n++;
	return &t->e[i].v;
}

int vmt_htab_set(struct vmt_htab *t, uint64_t a, uint64_t b, uint64_t v)
{
	uint64_t *slot = vmt_htab_put(t, a, b, NULL);
	if (!slot)
		return -ENOMEM;
	*slot = v;
	return 0;
}

/* Backward-shift deletion of slot i: later entries of the same probe run
 * move up so that every entry stays reachable from its home slot. */
static void del_slot(struct vmt_htab *t, size_t i)
{
	size_t mask = t->cap - 1;
	size_t j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!t->e[j].used)
			break;
		size_t home = (size_t)t->e[j].used & mask;
		/* Move e[j] to the hole i unless its home lies cyclically in
		 * (i, j]. */
		int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			t->e[i] = t->e[j];
			i = j;
		}
	}
	t->e[i].used = 0;
	t->n--;
}

int vmt_htab_del(struct vmt_htab *t, uint64_t a, uint64_t b)
{
	if (!t->cap)
		return 0;
	size_t i = probe(t, hash(a, b), a, b);
	if (!t->e[i].used)
		return 0;
	del_slot(t, i);
	return 1;
}

size_t vmt_htab_del_range(struct vmt_htab *t, uint64_t lo, uint64_t hi, uint64_t step,
			uint64_t key_b)
{
	size_t removed = 0;
	if (!t->n || hi <= lo || !step)
		return 0;
	uint64_t keys = (hi - lo) / step + ((hi - lo) % step != 0); /* (no wrap near 2^64) */
	if (keys <= t->cap) {
		for (uint64_t a = lo; a < hi && a >= lo; a += step)
			removed += (size_t)vmt_htab_del(t, a, key_b);
		return removed;
	}
	/* Sweep: deleting shifts later entries into slot i, so look at i
	 * again before moving on.  An entry shifted from the wrapped-around
	 * start into the end may be visited twice; that is harmless. */
	for (size_t i = 0; i < t->cap;) {
		struct vmt_htab_ent *e = &t->e[i];
		if (e->used && e->b == key_b && e->a >= lo && e->a < hi) {
			del_slot(t, i);
			removed++;
		} else {
			i++;
		}
	}
	return removed;
}

size_t vmt_htab_count_range(const struct vmt_htab *t, uint64_t lo, uint64_t hi, uint64_t step,
			  uint64_t key_b)
{
	size_t n = 0;
	if (!t->n || hi <= lo || !step)
		return 0;
	uint64_t keys = (hi - lo) / step + ((hi - lo) % step != 0); /* (no wrap near 2^64) */
	if (keys <= t->cap) {
		for (uint64_t a = lo; a < hi && a >= lo; a += step)
			n += vmt_htab_get(t, a, key_b) != NULL;
		return n;
	}
	for (size_t i = 0; i < t->cap; i++) {
		const struct vmt_htab_ent *e = &t->e[i];
		n += e->used && e->b == key_b && e->a >= lo && e->a < hi;
	}
	return n;
}
