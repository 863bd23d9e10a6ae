/*
 * test_u64tab.c - the hash table of the analyses (analysis/u64tab.h)
 * against a plain array, under random puts, deletes and range deletes
 * (whose sweep path moves entries while it walks the table).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tgen.h"
#include "u64tab.h"

#define NKEYS 2048

struct ref {
	int present[NKEYS];
	uint64_t v[NKEYS];
};

/* Keys: page addresses of 4 processes, so that keys collide in the low
 * bits as real ones do. */
static uint64_t key_a(int i) { return 0x7f0000000000ull + (uint64_t)(i / 4) * 4096; }
static uint64_t key_b(int i) { return (uint64_t)(i % 4); }

static void check_same(const struct u64tab *t, const struct ref *r)
{
	size_t n = 0;
	for (int i = 0; i < NKEYS; i++) {
		uint64_t *v = u64tab_get(t, key_a(i), key_b(i));
		if (r->present[i]) {
			assert_non_null(v);
			assert_int_equal(*v, r->v[i]);
			n++;
		} else {
			assert_null(v);
		}
	}
	assert_int_equal(t->n, n);
}

static void test_random_ops(void **state)
{
	uint64_t rng = 42;
	struct u64tab t;
	struct ref *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	u64tab_init(&t);
	for (int step = 0; step < 20000; step++) {
		int i = (int)(tg_rand(&rng) % NKEYS);
		switch (tg_rand(&rng) % 8) {
		case 0: case 1: case 2: case 3: {
			int created;
			uint64_t *v = u64tab_put(&t, key_a(i), key_b(i), &created);
			assert_non_null(v);
			assert_int_equal(created, !r->present[i]);
			*v = r->v[i] = tg_rand(&rng);
			r->present[i] = 1;
			break;
		}
		case 4: case 5:
			assert_int_equal(u64tab_del(&t, key_a(i), key_b(i)), r->present[i]);
			r->present[i] = 0;
			break;
		default: {
			/* a range of pages of one process, small or large */
			uint64_t lo = key_a(i), pages = tg_rand(&rng) % 2 ? 1 + tg_rand(&rng) % 8
									  : 1 + tg_rand(&rng) % 100000;
			uint64_t hi = lo + pages * 4096, b = key_b(i);
			size_t want = 0;
			for (int k = 0; k < NKEYS; k++)
				if (r->present[k] && key_b(k) == b && key_a(k) >= lo && key_a(k) < hi)
					want++;
			assert_int_equal(u64tab_count_range(&t, lo, hi, 4096, b), want);
			assert_int_equal(u64tab_del_range(&t, lo, hi, 4096, b), want);
			for (int k = 0; k < NKEYS; k++)
				if (key_b(k) == b && key_a(k) >= lo && key_a(k) < hi)
					r->present[k] = 0;
			break;
		}
		}
		if (step % 500 == 0)
			check_same(&t, r);
	}
	check_same(&t, r);
	u64tab_free(&t);
	free(r);
}

static void test_empty(void **state)
{
	struct u64tab t;
	u64tab_init(&t);
	assert_null(u64tab_get(&t, 1, 2));
	assert_int_equal(u64tab_del(&t, 1, 2), 0);
	assert_int_equal(u64tab_del_range(&t, 0, ~0ull, 4096, 0), 0);
	assert_int_equal(u64tab_count_range(&t, 0, ~0ull, 4096, 0), 0);
	u64tab_free(&t);
	u64tab_free(&t); /* freeing twice is harmless */
}

/* A range reaching the top of the address space, as an untrusted trace
 * may give: counted and deleted in a bounded time (the key count once
 * wrapped to a small number, and a page-by-page walk over 2^64 followed). */
static void test_range_near_the_top(void **state)
{
	struct u64tab t;
	u64tab_init(&t);
	uint64_t top = ~0ull & ~4095ull;
	for (uint64_t k = 0; k < 8; k++)
		assert_non_null(u64tab_put(&t, top - k * 4096, 1, NULL));
	assert_non_null(u64tab_put(&t, 4096, 1, NULL));
	assert_int_equal(u64tab_count_range(&t, 8192, ~0ull, 4096, 1), 8);
	assert_int_equal(u64tab_count_range(&t, 1, ~0ull - 2, 4096, 1), 9);
	assert_int_equal(u64tab_del_range(&t, 8192, ~0ull, 4096, 1), 8);
	assert_int_equal(u64tab_count_range(&t, 0, ~0ull, 4096, 1), 1);
	u64tab_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_range_near_the_top),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
