/*
 * rangeset.c - see rangeset_int.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rangeset_int.h"

void rs_init(struct rs_set *s)
{
	memset(s, 0, sizeof(*s));
}

void rs_free(struct rs_set *s)
{
	free(s->e);
	memset(s, 0, sizeof(*s));
}

size_t rs_first(const struct rs_set *s, uint64_t a)
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

int rs_overlaps(const struct rs_set *s, uint64_t a, uint64_t b)
{
	size_t i = rs_first(s, a);
	return a < b && i < s->n && s->e[i].start < b;
}

static int room(struct rs_set *s, size_t need)
{
	if (need <= s->cap)
		return 0;
	size_t n = s->cap ? 2 * s->cap : 16;
	while (n < need)
		n *= 2;
	struct rs_ent *e = realloc(s->e, n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	s->e = e;
	s->cap = n;
	return 0;
}

static int insert_at(struct rs_set *s, size_t i, const struct rs_ent *x)
{
	if (room(s, s->n + 1))
		return -ENOMEM;
	memmove(&s->e[i + 1], &s->e[i], (s->n - i) * sizeof(*s->e));
	s->e[i] = *x;
	s->n++;
	return 0;
}

int rs_add(struct rs_set *s, const struct rs_ent *x)
{
	return insert_at(s, rs_first(s, x->start), x);
}

void rs_del(struct rs_set *s, size_t i)
{
	memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
	s->n--;
}

int rs_cut(struct rs_set *s, uint64_t a, uint64_t b)
{
	if (a >= b || !s->n)
		return 0;
	size_t i = rs_first(s, a);
	if (i < s->n && s->e[i].start < a && s->e[i].end > b) {
		/* [a, b) inside one entry: it becomes two. */
		struct rs_ent tail = s->e[i];
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

uint64_t rs_covered(const struct rs_set *s, uint64_t a, uint64_t b)
{
	uint64_t n = 0;
	for (size_t i = rs_first(s, a); i < s->n && s->e[i].start < b; i++) {
		uint64_t lo = s->e[i].start > a ? s->e[i].start : a;
		uint64_t hi = s->e[i].end < b ? s->e[i].end : b;
		n += hi - lo;
	}
	return n;
}
