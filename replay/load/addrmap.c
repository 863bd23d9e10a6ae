/*
 * addrmap.c - see addrmap_int.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "addrmap_int.h"

void rpam_init(struct addrmap *m, int track_off)
{
	memset(m, 0, sizeof(*m));
	m->track_off = track_off;
}

void rpam_free(struct addrmap *m)
{
	free(m->s);
	m->s = NULL;
	m->n = m->cap = 0;
}

static int reserve(struct addrmap *m, size_t n)
{
	if (n <= m->cap)
		return 0;
	size_t cap = m->cap ? m->cap : 16;
	while (cap < n)
		cap *= 2;
	struct rpam_seg *s = realloc(m->s, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	m->s = s;
	m->cap = cap;
	return 0;
}

int rpam_copy(struct addrmap *dst, const struct addrmap *src)
{
	rpam_init(dst, src->track_off);
	if (reserve(dst, src->n))
		return -ENOMEM;
	if (src->n)
		memcpy(dst->s, src->s, src->n * sizeof(*src->s));
	dst->n = src->n;
	return 0;
}

size_t rpam_find(const struct addrmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->s[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

const struct rpam_seg *rpam_lookup(const struct addrmap *m, uint64_t addr)
{
	size_t i = rpam_find(m, addr);
	if (i < m->n && m->s[i].start <= addr)
		return &m->s[i];
	return NULL;
}

int rpam_covered(const struct addrmap *m, uint64_t a, uint64_t b)
{
	size_t i = rpam_find(m, a);
	uint64_t at = a;
	for (; i < m->n && at < b; i++) {
		if (m->s[i].start > at)
			return 0;
		at = m->s[i].end;
	}
	return at >= b;
}

/* Does y continue x (y starts where x ends)? */
static int continues(const struct addrmap *m, const struct rpam_seg *x, const struct rpam_seg *y)
{
	if (x->end != y->start || x->v.region != y->v.region || x->v.attr != y->v.attr)
		return 0;
	return !m->track_off || x->v.off + (x->end - x->start) == y->v.off;
}

/* Merge continuing neighbours among segments [lo, hi] (clamped). */
static void merge_around(struct addrmap *m, size_t lo, size_t hi)
{
	if (lo > 0)
		lo--;
	if (hi >= m->n)
		hi = m->n ? m->n - 1 : 0;
	size_t w = lo;
	for (size_t r = lo + 1; r <= hi && r < m->n; r++) {
		if (continues(m, &m->s[w], &m->s[r])) {
			m->s[w].end = m->s[r].end;
		} else {
			w++;
			if (w != r)
				m->s[w] = m->s[r];
		}
	}
	if (m->n == 0)
		return;
	size_t removed = hi - w;
	if (removed && hi + 1 < m->n)
		memmove(&m->s[w + 1], &m->s[hi + 1], (m->n - hi - 1) * sizeof(*m->s));
	m->n -= removed;
}

/* Replace segments [i, j) by nn segments from nw. */
static int splice(struct addrmap *m, size_t i, size_t j, const struct rpam_seg *nw, size_t nn)
{
	size_t n = m->n - (j - i) + nn;
	if (reserve(m, n))
		return -ENOMEM;
	if (nn != j - i && j < m->n)
		memmove(&m->s[i + nn], &m->s[j], (m->n - j) * sizeof(*m->s));
	if (nn)
		memcpy(&m->s[i], nw, nn * sizeof(*nw));
	m->n = n;
	return 0;
}

/* The part [a, b) of segment s (a, b inside it). */
static struct rpam_seg cut(const struct addrmap *m, const struct rpam_seg *s, uint64_t a, uint64_t b)
{
	struct rpam_seg r = *s;
	r.start = a;
	r.end = b;
	if (m->track_off)
		r.v.off = s->v.off + (a - s->start);
	return r;
}

/* Common body: replace what overlaps [a, b) by the remnants outside it,
 * plus (mode 1) one new segment, or (mode 2) the overlapped parts with a
 * new attr. */
static int rewrite(struct addrmap *m, uint64_t a, uint64_t b, int mode, struct rpam_val v)
{
	if (a >= b)
		return 0;
	size_t i = rpam_find(m, a), j = i;
	while (j < m->n && m->s[j].start < b)
		j++;
	if (i == j && mode != 1)
		return 0;
	/* At most: left remnant, the middle parts (mode 2: j - i of them, or
	 * the one new segment), right remnant. */
	struct rpam_seg small[8], *nw = small;
	size_t need = (j - i) + 3;
	if (need > 8) {
		nw = malloc(need * sizeof(*nw));
		if (!nw)
			return -ENOMEM;
	}
	size_t nn = 0;
	if (i < j && m->s[i].start < a)
		nw[nn++] = cut(m, &m->s[i], m->s[i].start, a);
	if (mode == 1) {
		nw[nn].start = a;
		nw[nn].end = b;
		nw[nn].v = v;
		nn++;
	} else if (mode == 2) {
		for (size_t k = i; k < j; k++) {
			uint64_t s = m->s[k].start > a ? m->s[k].start : a;
			uint64_t e = m->s[k].end < b ? m->s[k].end : b;
			nw[nn] = cut(m, &m->s[k], s, e);
			nw[nn].v.attr = v.attr;
			nn++;
		}
	}
	if (i < j && m->s[j - 1].end > b)
		nw[nn++] = cut(m, &m->s[j - 1], b, m->s[j - 1].end);
	int rc = splice(m, i, j, nw, nn);
	if (nw != small)
		free(nw);
	if (rc)
		return rc;
	if (nn)
		merge_around(m, i, i + nn);
	return 0;
}

int rpam_set(struct addrmap *m, uint64_t a, uint64_t b, struct rpam_val v)
{
	return rewrite(m, a, b, 1, v);
}

int rpam_remove(struct addrmap *m, uint64_t a, uint64_t b)
{
	struct rpam_val v = {0, 0, 0};
	return rewrite(m, a, b, 0, v);
}

int rpam_set_attr(struct addrmap *m, uint64_t a, uint64_t b, uint32_t attr)
{
	struct rpam_val v = {0, attr, 0};
	return rewrite(m, a, b, 2, v);
}

int rpam_pieces(const struct addrmap *m, uint64_t a, uint64_t b, int merge_attr,
	      int (*fn)(void *ctx, const struct rpam_piece *p), void *ctx)
{
	struct rpam_piece cur;
	int have = 0, rc;
	uint64_t at = a;
	size_t i = rpam_find(m, a);

	while (at < b) {
		struct rpam_piece p;
		if (i < m->n && m->s[i].start <= at) {
			const struct rpam_seg *s = &m->s[i];
			uint64_t e = s->end < b ? s->end : b;
			p.start = at;
			p.len = e - at;
			p.region = s->v.region;
			p.attr = s->v.attr;
			p.off = m->track_off ? s->v.off + (at - s->start) : 0;
			i++;
		} else {
			uint64_t e = (i < m->n && m->s[i].start < b) ? m->s[i].start : b;
			p.start = at;
			p.len = e - at;
			p.region = RPAM_GAP;
			p.attr = 0;
			p.off = at;
		}
		at = p.start + p.len;
		if (have && cur.region == p.region && cur.start + cur.len == p.start &&
		    (p.region == RPAM_GAP ||
		     ((merge_attr || cur.attr == p.attr) &&
		      (!m->track_off || cur.off + cur.len == p.off)))) {
			cur.len += p.len;
			continue;
		}
		if (have && (rc = fn(ctx, &cur)))
			return rc;
		cur = p;
		have = 1;
	}
	if (have)
		return fn(ctx, &cur);
	return 0;
}
