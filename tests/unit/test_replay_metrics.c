/*
 * test_replay_metrics.c - the latency histogram (quantiles within one
 * bucket, i.e. 1/16 of a power of two, of the exact value), merging, and
 * the per-field median of runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "replay.h"

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_quantiles(void **state)
{
	static struct rp_hist h;
	static uint64_t v[20000];
	uint64_t s = 88172645463325252ull;
	memset(&h, 0, sizeof(h));
	assert_int_equal(rp_hist_quantile(&h, 0.5), 0);
	for (int i = 0; i < 20000; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		/* log-uniform from 1 ns to ~1 s */
		v[i] = (uint64_t)1 << (s % 30);
		v[i] += (s >> 32) % v[i];
		rp_hist_add(&h, v[i]);
	}
	qsort(v, 20000, sizeof(v[0]), cmp);
	assert_int_equal(h.count, 20000);
	assert_int_equal(h.max, v[19999]);
	const double qs[] = {0.5, 0.9, 0.99, 0.999, 1.0};
	for (int k = 0; k < 5; k++) {
		uint64_t exact = v[(size_t)(qs[k] * 20000 + 0.5) - 1];
		uint64_t got = rp_hist_quantile(&h, qs[k]);
		/* An upper bucket bound: not below, at most 1/16 above. */
		assert_true(got >= exact);
		assert_true(got <= exact + exact / 16 + 1);
	}
	/* Small values are exact. */
	memset(&h, 0, sizeof(h));
	for (uint64_t i = 0; i < 10; i++)
		rp_hist_add(&h, i);
	assert_int_equal(rp_hist_quantile(&h, 0.5), 4);
	assert_int_equal(rp_hist_quantile(&h, 1.0), 9);
	/* Merging two halves is the whole. */
	static struct rp_hist a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	for (uint64_t i = 0; i < 1000; i++)
		rp_hist_add(i % 2 ? &a : &b, i * 1000);
	rp_hist_merge(&a, &b);
	assert_int_equal(a.count, 1000);
	assert_int_equal(a.max, 999000);
	uint64_t p50 = rp_hist_quantile(&a, 0.5);
	assert_true(p50 >= 499000 && p50 <= 499000 + 499000 / 16);
	/* Absurd values land in the last bucket. */
	rp_hist_add(&a, UINT64_MAX / 2);
	assert_int_equal(rp_hist_quantile(&a, 1.0), UINT64_MAX / 2);
}

static void test_median(void **state)
{
	struct rp_run_result runs[4], med;
	memset(runs, 0, sizeof(runs));
	uint64_t walls[4] = {40, 10, 30, 20};
	for (int i = 0; i < 4; i++) {
		runs[i].wall_ns = walls[i];
		runs[i].minor_faults = 100 + (uint64_t)i;
		runs[i].ops[VMT_OP_MMAP].p99_ns = 1000 * (uint64_t)(i + 1);
		runs[i].nthreads = 1;
		runs[i].threads = calloc(1, sizeof(*runs[i].threads));
		runs[i].threads[0].elems = walls[i];
	}
	assert_int_equal(rp_run_median(runs, 3, &med), 0);
	assert_int_equal(med.wall_ns, 30);
	assert_int_equal(med.minor_faults, 101);
	assert_int_equal(med.ops[VMT_OP_MMAP].p99_ns, 2000);
	assert_int_equal(med.nthreads, 1);
	assert_int_equal(med.threads[0].elems, 30); /* the median run's threads */
	rp_run_result_free(&med);
	assert_int_equal(rp_run_median(runs, 4, &med), 0);
	assert_int_equal(med.wall_ns, 25); /* even count: between the middle two */
	rp_run_result_free(&med);
	for (int i = 0; i < 4; i++)
		rp_run_result_free(&runs[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantiles),
		cmocka_unit_test(test_median),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
