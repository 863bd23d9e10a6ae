/*
 * u64tab.h - a hash table from a pair of 64-bit keys to a 64-bit value, for
 * the analyses that remember ranges or pages per process (lint, export).
 *
 * Open addressing with linear probing and backward-shift deletion, so that
 * deleting never leaves tombstones behind and a long trace that maps and
 * unmaps the same pages keeps the table small.  Library code: no prints.
 */
#ifndef VMT_U64TAB_H
#define VMT_U64TAB_H

#include <stddef.h>
#include <stdint.h>

struct u64tab_ent {
	uint64_t a, b; /* the key */
	uint64_t v;
	uint64_t used; /* 0: empty slot */
};

struct u64tab {
	struct u64tab_ent *e;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

/* Initialise an empty table (no allocation until the first put). */
void u64tab_init(struct u64tab *t);
void u64tab_free(struct u64tab *t);

/* The value slot of (a, b), or NULL when absent. */
uint64_t *u64tab_get(const struct u64tab *t, uint64_t a, uint64_t b);

/* The value slot of (a, b), created with value 0 when absent (*created
 * says which, when not NULL).  NULL on allocation failure. */
uint64_t *u64tab_put(struct u64tab *t, uint64_t a, uint64_t b, int *created);

/* Remove (a, b); returns 1 if it was there. */
int u64tab_del(struct u64tab *t, uint64_t a, uint64_t b);

/* Remove every entry with a in [lo, hi) and b == key_b; returns how many.
 * Costs min(pages, capacity) probes: per key for small ranges, one sweep
 * of the table for large ones. `step` is the distance between possible
 * keys a (e.g. the page size). */
size_t u64tab_del_range(struct u64tab *t, uint64_t lo, uint64_t hi, uint64_t step,
			uint64_t key_b);

/* Number of entries with a in [lo, hi) and b == key_b (same cost as
 * u64tab_del_range). */
size_t u64tab_count_range(const struct u64tab *t, uint64_t lo, uint64_t hi, uint64_t step,
			  uint64_t key_b);

#endif
