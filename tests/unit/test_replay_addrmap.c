/*
 * test_replay_addrmap.c - the replayer's interval map, alone: fixed cases
 * (splits, punches, attr changes, merging, pieces) and long randomized
 * sequences checked page by page against a plain page-array model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "addrmap_int.h"
#include "tgen.h"

static struct rpam_val V(uint32_t region, uint32_t attr, uint64_t off)
{
	struct rpam_val v = {region, attr, off};
	return v;
}

/* The map is sorted, non-overlapping, and no two neighbours continue
 * each other (fully merged). */
static void check_invariants(const struct addrmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		assert_true(m->s[i].start < m->s[i].end);
		if (i) {
			assert_true(m->s[i - 1].end <= m->s[i].start);
			const struct rpam_seg *x = &m->s[i - 1], *y = &m->s[i];
			int cont = x->end == y->start && x->v.region == y->v.region &&
				   x->v.attr == y->v.attr &&
				   (!m->track_off || x->v.off + (x->end - x->start) == y->v.off);
			assert_false(cont);
		}
	}
}

static void test_set_split_merge(void **state)
{
	struct addrmap m;
	rpam_init(&m, 1);
	assert_int_equal(rpam_set(&m, 10 * PAGE, 20 * PAGE, V(1, 3, 0)), 0);
	assert_int_equal(m.n, 1);
	/* Punch a hole in the middle: two segments, offsets preserved. */
	assert_int_equal(rpam_remove(&m, 12 * PAGE, 14 * PAGE), 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(m.s[1].start, 14 * PAGE);
	assert_int_equal(m.s[1].v.off, 4 * PAGE);
	/* Re-protect across the hole: only mapped parts change. */
	assert_int_equal(rpam_set_attr(&m, 11 * PAGE, 15 * PAGE, 1), 0);
	assert_int_equal(m.n, 4);
	assert_int_equal(rpam_lookup(&m, 11 * PAGE)->v.attr, 1);
	assert_int_equal(rpam_lookup(&m, 10 * PAGE)->v.attr, 3);
	assert_null(rpam_lookup(&m, 13 * PAGE));
	assert_int_equal(rpam_lookup(&m, 15 * PAGE)->v.attr, 3);
	/* Restore the attr and fill the hole with the same region at the
	 * right offset: everything merges back into one segment. */
	assert_int_equal(rpam_set_attr(&m, 0, 100 * PAGE, 3), 0);
	assert_int_equal(rpam_set(&m, 12 * PAGE, 14 * PAGE, V(1, 3, 2 * PAGE)), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.s[0].start, 10 * PAGE);
	assert_int_equal(m.s[0].end, 20 * PAGE);
	/* A different region over the middle does not merge. */
	assert_int_equal(rpam_set(&m, 12 * PAGE, 14 * PAGE, V(2, 3, 0)), 0);
	assert_int_equal(m.n, 3);
	check_invariants(&m);
	assert_true(rpam_covered(&m, 10 * PAGE, 20 * PAGE));
	assert_false(rpam_covered(&m, 9 * PAGE, 20 * PAGE));
	rpam_free(&m);
}

struct pcoll {
	struct rpam_piece p[16];
	int n;
};

static int collect(void *ctx, const struct rpam_piece *p)
{
	struct pcoll *c = ctx;
	assert_true(c->n < 16);
	c->p[c->n++] = *p;
	return 0;
}

static void test_pieces(void **state)
{
	struct addrmap m;
	rpam_init(&m, 1);
	rpam_set(&m, 10 * PAGE, 12 * PAGE, V(1, 3, 0));
	rpam_set(&m, 12 * PAGE, 14 * PAGE, V(1, 1, 2 * PAGE)); /* same region, other attr */
	rpam_set(&m, 14 * PAGE, 16 * PAGE, V(2, 1, 0));
	rpam_set(&m, 18 * PAGE, 20 * PAGE, V(2, 1, 4 * PAGE));
	struct pcoll c = {.n = 0};
	assert_int_equal(rpam_pieces(&m, 9 * PAGE, 21 * PAGE, 1, collect, &c), 0);
	assert_int_equal(c.n, 6);
	assert_int_equal(c.p[0].region, RPAM_GAP);
	assert_int_equal(c.p[0].len, PAGE);
	assert_int_equal(c.p[1].region, 1); /* both attrs merged */
	assert_int_equal(c.p[1].len, 4 * PAGE);
	assert_int_equal(c.p[2].region, 2);
	assert_int_equal(c.p[2].off, 0);
	assert_int_equal(c.p[3].region, RPAM_GAP);
	assert_int_equal(c.p[3].off, 16 * PAGE);
	assert_int_equal(c.p[4].off, 4 * PAGE);
	assert_int_equal(c.p[4].len, 2 * PAGE);
	assert_int_equal(c.p[5].region, RPAM_GAP);
	assert_int_equal(c.p[5].len, PAGE);
	/* Without merging attrs, region 1 is two pieces. */
	c.n = 0;
	rpam_pieces(&m, 11 * PAGE, 13 * PAGE, 0, collect, &c);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.p[0].off, PAGE);
	assert_int_equal(c.p[1].off, 2 * PAGE);
	/* A range inside one segment. */
	c.n = 0;
	rpam_pieces(&m, 19 * PAGE, 19 * PAGE + 100, 1, collect, &c);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.p[0].off, 5 * PAGE);
	assert_int_equal(c.p[0].len, 100);
	rpam_free(&m);
}

/* Without offsets (the dependency map), neighbours with the same value
 * merge regardless of where they started. */
static void test_no_offsets(void **state)
{
	struct addrmap m;
	rpam_init(&m, 0);
	rpam_set(&m, 0, PAGE, V(7, 1, 0));
	rpam_set(&m, PAGE, 2 * PAGE, V(7, 1, 0));
	assert_int_equal(m.n, 1);
	rpam_set(&m, PAGE / 2, PAGE, V(8, 2, 0));
	assert_int_equal(m.n, 3);
	struct addrmap c;
	assert_int_equal(rpam_copy(&c, &m), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(rpam_lookup(&c, PAGE / 2)->v.region, 8);
	rpam_free(&m);
	rpam_free(&c);
}

/* ---- Randomized, against a page-array model ---- */

#define NPAGES 96
struct model {
	uint32_t region[NPAGES]; /* RPAM_GAP when unmapped */
	uint32_t attr[NPAGES];
	uint64_t off[NPAGES]; /* offset of the page in its region */
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void compare(const struct addrmap *m, const struct model *md)
{
	check_invariants(m);
	for (uint64_t pg = 0; pg < NPAGES; pg++) {
		const struct rpam_seg *s = rpam_lookup(m, pg * PAGE + 17);
		if (md->region[pg] == RPAM_GAP) {
			assert_null(s);
			continue;
		}
		assert_non_null(s);
		assert_int_equal(s->v.region, md->region[pg]);
		assert_int_equal(s->v.attr, md->attr[pg]);
		assert_int_equal(s->v.off + (pg * PAGE - s->start), md->off[pg]);
	}
	/* No segment outside the model's pages. */
	if (m->n)
		assert_true(m->s[m->n - 1].end <= NPAGES * PAGE);
}

/* Pieces of a random range reassemble the model exactly. */
struct pcheck {
	const struct model *md;
	uint64_t at;
};

static int check_piece(void *ctx, const struct rpam_piece *p)
{
	struct pcheck *c = ctx;
	assert_int_equal(p->start, c->at);
	for (uint64_t a = p->start; a < p->start + p->len; a += PAGE) {
		uint64_t pg = a / PAGE;
		assert_int_equal(p->region, c->md->region[pg]);
		if (p->region != RPAM_GAP)
			assert_int_equal(p->off + (a - p->start), c->md->off[pg]);
	}
	c->at += p->len;
	return 0;
}

static void test_random_vs_model(void **state)
{
	uint64_t rng = 0x1234567887654321ull;
	for (int round = 0; round < 200; round++) {
		struct addrmap m;
		struct model md;
		rpam_init(&m, 1);
		for (int i = 0; i < NPAGES; i++)
			md.region[i] = RPAM_GAP;
		uint32_t next_region = 1;
		for (int step = 0; step < 300; step++) {
			uint64_t a = rnd(&rng) % NPAGES, len = 1 + rnd(&rng) % 12;
			if (a + len > NPAGES)
				len = NPAGES - a;
			uint32_t attr = (uint32_t)(rnd(&rng) % 3);
			switch (rnd(&rng) % 6) {
			case 0: /* a new region (mmap) */
			case 1: {
				uint32_t r = next_region++;
				assert_int_equal(rpam_set(&m, a * PAGE, (a + len) * PAGE, V(r, attr, 0)), 0);
				for (uint64_t k = 0; k < len; k++) {
					md.region[a + k] = r;
					md.attr[a + k] = attr;
					md.off[a + k] = k * PAGE;
				}
				break;
			}
			case 2: { /* MAP_FIXED back into an existing region's place */
				const struct rpam_seg *s = rpam_lookup(&m, a * PAGE);
				if (!s)
					break;
				uint32_t r = s->v.region;
				uint64_t off = s->v.off + (a * PAGE - s->start);
				assert_int_equal(rpam_set(&m, a * PAGE, (a + len) * PAGE, V(r, attr, off)), 0);
				for (uint64_t k = 0; k < len; k++) {
					md.region[a + k] = r;
					md.attr[a + k] = attr;
					md.off[a + k] = off + k * PAGE;
				}
				break;
			}
			case 3: /* munmap */
				assert_int_equal(rpam_remove(&m, a * PAGE, (a + len) * PAGE), 0);
				for (uint64_t k = 0; k < len; k++)
					md.region[a + k] = RPAM_GAP;
				break;
			case 4: /* mprotect */
				assert_int_equal(rpam_set_attr(&m, a * PAGE, (a + len) * PAGE, attr), 0);
				for (uint64_t k = 0; k < len; k++)
					md.attr[a + k] = attr;
				break;
			case 5: { /* mremap move: [a, a+len) to a fresh place as a new region */
				uint64_t to = rnd(&rng) % NPAGES;
				if (to + len > NPAGES || (to < a + len && a < to + len))
					break;
				if (!rpam_covered(&m, a * PAGE, (a + len) * PAGE))
					break;
				uint32_t at = rpam_lookup(&m, a * PAGE)->v.attr;
				uint32_t r = next_region++;
				assert_int_equal(rpam_remove(&m, a * PAGE, (a + len) * PAGE), 0);
				assert_int_equal(rpam_set(&m, to * PAGE, (to + len) * PAGE, V(r, at, 0)), 0);
				for (uint64_t k = 0; k < len; k++) {
					md.region[a + k] = RPAM_GAP;
					md.region[to + k] = r;
					md.attr[to + k] = at;
					md.off[to + k] = k * PAGE;
				}
				break;
			}
			}
			compare(&m, &md);
			uint64_t qa = rnd(&rng) % NPAGES, ql = 1 + rnd(&rng) % (NPAGES - qa);
			struct pcheck pc = {&md, qa * PAGE};
			assert_int_equal(rpam_pieces(&m, qa * PAGE, (qa + ql) * PAGE, 1, check_piece, &pc), 0);
			assert_int_equal(pc.at, (qa + ql) * PAGE);
		}
		rpam_free(&m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_split_merge),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_no_offsets),
		cmocka_unit_test(test_random_vs_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
