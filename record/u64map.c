/*
 * u64map.c - a small open-addressing hash map from nonzero 64-bit keys to
 * 32-bit values (linear probing, backward-shift deletion: no tombstones, so
 * a long recording with many task exits keeps short probe chains).
 */
#include "u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t u64map_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int u64map_get(const struct u64map *m, uint64_t k, uint32_t *v)
{
	if (!m->cap)
		return 0;
	for (size_t i = u64map_mix(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k) {
			*v = m->vals[i];
			return 1;
		}
		if (m->keys[i] == 0)
			return 0;
	}
}

static int grow_map(struct u64map *m)
{
	struct u64map n = { 0 };
	n.cap = m->cap ? m->cap * 2 : 64;
	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			u64map_put(&n, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

/* Insert or replace. */
int u64map_put(struct u64map *m, uint64_t k, uint32_t v)
{
	if ((m->n + 1) * 2 > m->cap && grow_map(m))
		return -ENOMEM;
	size_t i = u64map_mix(k) & (m->cap - 1);
	while (m->keys[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = k;
	m->vals[i] = v;
	return 0;
}

/* Remove with backward shifting (no tombstones). */
void u64map_del(struct u64map *m, uint64_t k)
{
	if (!m->cap)
		return;
	size_t mask = m->cap - 1, i = u64map_mix(k) & mask;
	while (m->keys[i] != k) {
		if (!m->keys[i])
			return;
		i = (i + 1) & mask;
	}
	for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
		size_t home = u64map_mix(m->keys[j]) & mask;
		/* Move j into the hole i if its home is not in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->n--;
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

