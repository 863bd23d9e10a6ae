/*
 * rset.c - the project's set of disjoint ranges (vmtutil.h).
 *
 * A sorted array: lookups are binary searches, insertions and removals
 * move the entries behind them.  The sets hold at most a few thousand
 * ranges (one per live uncommit of a heap, one per code mapping of a
 * process), where that is cheaper than a tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "vmtutil.h"

void vmt_rset_free(struct vmt_rset *s)
{
	free(s->e);
	memset(s, 0, sizeof(*s));
}

size_t vmt_rset_first(const struct vmt_rset *s, uint64_t a)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->e[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int vmt_rset_overlaps(const struct vmt_rset *s, uint64_t a, uint64_t b)
{
	size_t i = vmt_rset_first(s, a);
	return a < b && i < s->n && s->e[i].start < b;
}

static int insert_at(struct vmt_rset *s, size_t i, const struct vmt_rset_ent *x)
{
	if (vmt_grow(&s->e, &s->cap, s->n + 1, sizeof(*s->e)))
		return -ENOMEM;
	memmove(&s->e[i + 1], &s->e[i], (s->n - i) * sizeof(*s->e));
	s->e[i] = *x;
	s->n++;
	return 0;
}

int vmt_rset_add(struct vmt_rset *s, const struct vmt_rset_ent *x)
{
	return insert_at(s, vmt_rset_first(s, x->start), x);
}

void vmt_rset_del(struct vmt_rset *s, size_t i)
{
	memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
	s->n--;
}

int vmt_rset_cut(struct vmt_rset *s, uint64_t a, uint64_t b)
{
	if (a >= b || !s->n)
		return 0;
	size_t i = vmt_rset_first(s, a);
	if (i < s->n && s->e[i].start < a && s->e[i].end > b) {
		/* [a, b) inside one entry: it becomes two. */
		struct vmt_rset_ent tail = s->e[i];
		tail.start = b;
		s->e[i].end = a;
		return insert_at(s, i + 1, &tail);
	}
	if (i < s->n && s->e[i].start < a) {
		s->e[i].end = a;
		i++;
	}
	size_t j = i;
	while (j < s->n && s->e[j].end <= b)
		j++;
	if (j < s->n && s->e[j].start < b)
		s->e[j].start = b;
	memmove(&s->e[i], &s->e[j], (s->n - j) * sizeof(*s->e));
	s->n -= j - i;
	return 0;
}
