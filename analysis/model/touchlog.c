/*
 * touchlog.c - see touchlog_int.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "touchlog_int.h"

/* Touches kept per thread until its next syscall: a recorder writes one
 * or a few before each discarding call. */
#define TL_MAX 16

void tl_init(struct touchlog *l, uint64_t page)
{
	memset(l, 0, sizeof(*l));
	l->page = page;
}

void tl_clear(struct touchlog *l, uint32_t thread)
{
	if (thread >= l->nt)
		return;
	struct tl_thread *t = &l->t[thread];
	for (uint32_t i = 0; i < t->n; i++)
		free(t->r[i].runs);
	t->n = 0;
}

void tl_free(struct touchlog *l)
{
	for (size_t i = 0; i < l->nt; i++) {
		tl_clear(l, (uint32_t)i);
		free(l->t[i].r);
	}
	free(l->t);
	memset(l, 0, sizeof(*l));
}

int tl_add(struct touchlog *l, const struct vmt_event *ev)
{
	const struct vmt_touch *tc = &ev->u.touch;
	if (ev->kind != VMT_EV_TOUCH || tc->reason != VMT_TOUCH_BEFORE_OP || !tc->nruns)
		return 0;
	if (ev->thread >= VMT_MAX_THREADS || vmt_grow(&l->t, &l->nt, (size_t)ev->thread + 1, sizeof(*l->t)))
		return -ENOMEM;
	struct tl_thread *t = &l->t[ev->thread];
	if (t->n == TL_MAX) {
		free(t->r[0].runs);
		memmove(&t->r[0], &t->r[1], (TL_MAX - 1) * sizeof(*t->r));
		t->n--;
	}
	if (t->n == t->cap) {
		uint32_t n = t->cap ? 2 * t->cap : 2;
		struct tl_rec *r = realloc(t->r, n * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->r = r;
		t->cap = n;
	}
	struct tl_rec *r = &t->r[t->n];
	r->runs = malloc(tc->nruns * sizeof(*r->runs));
	if (!r->runs)
		return -ENOMEM;
	memcpy(r->runs, tc->runs, tc->nruns * sizeof(*r->runs));
	r->start = tc->start;
	r->nruns = tc->nruns;
	t->n++;
	return 0;
}

int64_t tl_present(const struct touchlog *l, uint32_t thread, uint64_t a, uint64_t b)
{
	if (thread >= l->nt)
		return -1;
	const struct tl_thread *t = &l->t[thread];
	int64_t n = 0;
	int seen = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t at = t->r[i].start;
		for (uint32_t k = 0; k < t->r[i].nruns; k++) {
			uint64_t pages = t->r[i].runs[k].pages;
			uint64_t end = pages > (UINT64_MAX - at) / l->page ? UINT64_MAX : at + pages * l->page;
			uint64_t lo = at > a ? at : a, hi = end < b ? end : b;
			if (lo < hi) {
				seen = 1;
				if (t->r[i].runs[k].state != VMT_PAGE_ABSENT)
					n += (int64_t)((hi - lo) / l->page);
			}
			at = end;
		}
	}
	return seen ? n : -1;
}
