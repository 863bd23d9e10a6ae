/*
 * rangeset_int.h - a set of disjoint address ranges, each with a few
 * values, kept sorted for the rules and detectors that follow ranges
 * through a trace (an uncommitted heap range, a range a rewrite keeps
 * read-write, a discard waiting for its munmap).
 *
 * A sorted array: lookups are binary searches, insertions and removals
 * move the entries behind them.  The sets hold at most a few thousand
 * ranges (one per live uncommit of a heap), where that is cheaper than a
 * tree.  Library code: 0 or -ENOMEM, no prints.
 */
#ifndef VMT_RANGESET_INT_H
#define VMT_RANGESET_INT_H

#include <stddef.h>
#include <stdint.h>

struct rs_ent {
	uint64_t start, end; /* [start, end), start < end */
	uint64_t seq;	     /* the user's: e.g. a held event's number */
	uint64_t index;	     /* the user's: e.g. an event's ordinal */
	uint32_t thread, prot, flags, stack;
};

struct rs_set {
	struct rs_ent *e;
	size_t n, cap;
};

void rs_init(struct rs_set *s);
void rs_free(struct rs_set *s);

/* Index of the first entry that ends above a (s->n when there is none):
 * the entries overlapping [a, b) are those from there while start < b. */
size_t rs_first(const struct rs_set *s, uint64_t a);

/* 1 if an entry overlaps [a, b). */
int rs_overlaps(const struct rs_set *s, uint64_t a, uint64_t b);

/* Insert *x, which must overlap no entry.  0 or -ENOMEM. */
int rs_add(struct rs_set *s, const struct rs_ent *x);

/* Remove entry i. */
void rs_del(struct rs_set *s, size_t i);

/* Take [a, b) out of the set: entries inside go, entries across an end
 * are cut there (a cut entry keeps its values).  0 or -ENOMEM (an entry
 * split in two needs room). */
int rs_cut(struct rs_set *s, uint64_t a, uint64_t b);

/* Bytes of [a, b) the set covers. */
uint64_t rs_covered(const struct rs_set *s, uint64_t a, uint64_t b);

#endif
