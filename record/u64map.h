/*
 * u64map.h - hash map from nonzero uint64_t keys to uint32_t values.
 * A zeroed struct is an empty map.  Key 0 is reserved (never stored).
 */
#ifndef VMREC_U64MAP_H
#define VMREC_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys; /* 0 = empty slot */
	uint32_t *vals;
	size_t cap, n; /* cap is 0 or a power of two */
};

/* A well-mixed hash of x (splitmix64 finalizer). */
uint64_t u64map_mix(uint64_t x);
/* 1 and *v set when k is present, else 0. */
int u64map_get(const struct u64map *m, uint64_t k, uint32_t *v);
/* Insert or replace k (nonzero).  Returns 0 or -ENOMEM. */
int u64map_put(struct u64map *m, uint64_t k, uint32_t v);
/* Remove k if present. */
void u64map_del(struct u64map *m, uint64_t k);
void u64map_free(struct u64map *m); /* back to an empty map */

#endif /* VMREC_U64MAP_H */
