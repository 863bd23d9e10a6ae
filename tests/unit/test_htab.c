/*
 * test_htab.c - the project's hash table (format/vmtutil.h) against a plain
 * array, under random puts, deletes and range deletes (whose sweep path
 * moves entries while it walks the table), with the keys of the analyses
 * (pages of processes) and of vmrec (tids).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tgen.h"
#include "vmtutil.h"

#define NKEYS 2048

struct ref {
	int present[NKEYS];
	uint64_t v[NKEYS];
};

/* Keys: page addresses of 4 processes, so that keys collide in the low
 * bits as real ones do. */
static uint64_t key_a(int i) { return 0x7f0000000000ull + (uint64_t)(i / 4) * 4096; }
static uint64_t key_b(int i) { return (uint64_t)(i % 4); }

static void check_same(const struct vmt_htab *t, const struct ref *r)
{
	size_t n = 0;
	for (int i = 0; i < NKEYS; i++) {
		uint64_t *v = vmt_htab_get(t, key_a(i), key_b(i));
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
	struct vmt_htab t;
	struct ref *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	vmt_htab_init(&t);
	for (int step = 0; step < 20000; step++) {
		int i = (int)(tg_rand(&rng) % NKEYS);
		switch (tg_rand(&rng) % 8) {
		case 0: case 1: case 2: case 3: {
			int created;
			uint64_t *v = vmt_htab_put(&t, key_a(i), key_b(i), &created);
			assert_non_null(v);
			assert_int_equal(created, !r->present[i]);
			*v = r->v[i] = tg_rand(&rng);
			r->present[i] = 1;
			break;
		}
		case 4: case 5:
			assert_int_equal(vmt_htab_del(&t, key_a(i), key_b(i)), r->present[i]);
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
			assert_int_equal(vmt_htab_count_range(&t, lo, hi, 4096, b), want);
			assert_int_equal(vmt_htab_del_range(&t, lo, hi, 4096, b), want);
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
	vmt_htab_free(&t);
	free(r);
}

static void test_empty(void **state)
{
	struct vmt_htab t;
	vmt_htab_init(&t);
	assert_null(vmt_htab_get(&t, 1, 2));
	assert_int_equal(vmt_htab_del(&t, 1, 2), 0);
	assert_int_equal(vmt_htab_del_range(&t, 0, ~0ull, 4096, 0), 0);
	assert_int_equal(vmt_htab_count_range(&t, 0, ~0ull, 4096, 0), 0);
	vmt_htab_free(&t);
	vmt_htab_free(&t); /* freeing twice is harmless */
}

/* A range reaching the top of the address space, as an untrusted trace
 * may give: counted and deleted in a bounded time (the key count once
 * wrapped to a small number, and a page-by-page walk over 2^64 followed). */
static void test_range_near_the_top(void **state)
{
	struct vmt_htab t;
	vmt_htab_init(&t);
	uint64_t top = ~0ull & ~4095ull;
	for (uint64_t k = 0; k < 8; k++)
		assert_non_null(vmt_htab_put(&t, top - k * 4096, 1, NULL));
	assert_non_null(vmt_htab_put(&t, 4096, 1, NULL));
	assert_int_equal(vmt_htab_count_range(&t, 8192, ~0ull, 4096, 1), 8);
	assert_int_equal(vmt_htab_count_range(&t, 1, ~0ull - 2, 4096, 1), 9);
	assert_int_equal(vmt_htab_del_range(&t, 8192, ~0ull, 4096, 1), 8);
	assert_int_equal(vmt_htab_count_range(&t, 0, ~0ull, 4096, 1), 1);
	vmt_htab_free(&t);
}

/* vmrec's use: one key (tids, clustered), values set and deleted through
 * many backward-shift deletions, against a plain array. */
static void test_single_keys(void **state)
{
	enum { KEYS = 3000 };
	static uint64_t ref[KEYS]; /* value + 1, 0 = absent */
	struct vmt_htab m = { 0 };
	uint64_t rng = 7;
	size_t live = 0;
	memset(ref, 0, sizeof(ref));
	for (int i = 0; i < 200000; i++) {
		uint64_t k = tg_rand(&rng) % KEYS;
		uint64_t key = k * 0x10000; /* clustered; 0 is a key too */
		switch (tg_rand(&rng) % 3) {
		case 0:
		case 1:
			assert_int_equal(vmt_htab_set(&m, key, 0, (uint64_t)i), 0);
			live += !ref[k];
			ref[k] = (uint64_t)i + 1;
			break;
		default:
			assert_int_equal(vmt_htab_del(&m, key, 0), ref[k] != 0);
			live -= !!ref[k];
			ref[k] = 0;
			break;
		}
		if (i % 1000 == 0)
			for (uint64_t j = 0; j < KEYS; j++) {
				const uint64_t *v = vmt_htab_get(&m, j * 0x10000, 0);
				assert_int_equal(v != NULL, ref[j] != 0);
				if (v)
					assert_int_equal(*v + 1, ref[j]);
			}
	}
	assert_int_equal(m.n, live);
	vmt_htab_free(&m);
	assert_null(vmt_htab_get(&m, 0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_range_near_the_top),
		cmocka_unit_test(test_single_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
