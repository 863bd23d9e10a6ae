/*
 * test_resultdiff.c - the comparison of vmreplay results (analysis/stats/
 * resultdiff.c): the Mann-Whitney U test against values worked out by
 * hand and by brute force, samples from known distributions, "too few
 * runs", result files, and the JSON reader beneath them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonread.h"
#include "resultdiff.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void assert_close(double got, double want, double tol)
{
	if (fabs(got - want) > tol)
		fail_msg("got %.10g, want %.10g (+-%g)", got, want, tol);
}

/* ---- the test against hand-worked values ---------------------------------- */

static void test_mwu_separated(void **state)
{
	const double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 };
	struct van_mwu r;
	assert_int_equal(van_mann_whitney(a, 5, b, 5, &r), 0);
	assert_true(r.exact);
	assert_close(r.u, 0, 0);
	/* Only the two complete separations out of C(10,5) = 252 are as extreme. */
	assert_close(r.p, 2.0 / 252, 1e-12);
	assert_close(r.p_min, 2.0 / 252, 1e-12);
	/* The same from the other side, and with the sides reversed. */
	assert_int_equal(van_mann_whitney(b, 5, a, 5, &r), 0);
	assert_close(r.u, 25, 0);
	assert_close(r.p, 2.0 / 252, 1e-12);
}

static void test_mwu_critical_values(void **state)
{
	/* n = 10 each: the two-sided 5% critical value of U is 23 (tables of
	 * the exact distribution): p(U = 23) = 0.0433, p(U = 24) = 0.0524. */
	double a[10], b[10];
	for (int u = 23; u <= 24; u++) {
		int used[21] = { 0 }, k = 0;
		for (int i = 0; i < 10; i++)
			a[i] = i + 1;
		a[9] = 20, a[8] = 19, a[7] = 8 + u - 20; /* 10 + 10 + (u - 20) pairs */
		for (int i = 0; i < 10; i++)
			used[(int)a[i]] = 1;
		for (int v = 1; v <= 20; v++)
			if (!used[v])
				b[k++] = v;
		struct van_mwu r;
		assert_int_equal(van_mann_whitney(a, 10, b, 10, &r), 0);
		assert_close(r.u, u, 0);
		assert_close(r.p, u == 23 ? 0.0433 : 0.0524, 5e-5);
	}
}

static void test_mwu_one_swap(void **state)
{
	/* a = {1,2,3,5}, b = {4,6,7,8}: U_a = 1.  Rank sums of 4 of 8 that are
	 * at most 11 (a's): {1,2,3,4}=10 and {1,2,3,5}=11; by symmetry as many
	 * at the top: p = 4/70. */
	const double a[] = { 1, 2, 3, 5 }, b[] = { 4, 6, 7, 8 };
	struct van_mwu r;
	assert_int_equal(van_mann_whitney(a, 4, b, 4, &r), 0);
	assert_close(r.u, 1, 0);
	assert_close(r.p, 4.0 / 70, 1e-12);
}

static void test_mwu_identical_and_unequal_sizes(void **state)
{
	const double a[] = { 7, 7, 7 }, b[] = { 7, 7, 7, 7, 7 };
	struct van_mwu r;
	assert_int_equal(van_mann_whitney(a, 3, b, 5, &r), 0);
	assert_close(r.p, 1, 1e-12);
	assert_close(r.u, 7.5, 0); /* every pair a tie: 15 * 1/2 */
	const double c[] = { 10 }, d[] = { 1, 2, 3 };
	assert_int_equal(van_mann_whitney(c, 1, d, 3, &r), 0);
	assert_close(r.p, 0.5, 1e-12); /* 2 of C(4,1) = 4 */
	assert_int_equal(van_mann_whitney(c, 0, d, 3, &r), -EINVAL);
}

static void test_min_p(void **state)
{
	assert_close(van_mwu_min_p(1, 1), 1, 0);
	assert_close(van_mwu_min_p(3, 3), 0.1, 1e-12);
	assert_close(van_mwu_min_p(3, 4), 2.0 / 35, 1e-12);
	assert_close(van_mwu_min_p(4, 4), 2.0 / 70, 1e-12);
	assert_close(van_mwu_min_p(5, 3), 2.0 / 56, 1e-12);
	assert_true(van_mwu_min_p(500, 500) < 1e-290);
}

/* The exact p-value with ties, checked against enumerating every way of
 * splitting the pooled values into the two sizes. */
static double brute_p(const double *a, size_t na, const double *b, size_t nb)
{
	double pool[16];
	size_t n = na + nb;
	memcpy(pool, a, na * sizeof(double));
	memcpy(pool + na, b, nb * sizeof(double));
	double u_obs = 0;
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			u_obs += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
	double mu = (double)na * (double)nb / 2, extreme = 0, total = 0;
	for (unsigned mask = 0; mask < 1u << n; mask++) {
		if ((size_t)__builtin_popcount(mask) != na)
			continue;
		double u = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++)
				if ((mask >> i & 1) && !(mask >> j & 1))
					u += pool[i] > pool[j] ? 1 : pool[i] == pool[j] ? 0.5 : 0;
		total++;
		if (fabs(u - mu) >= fabs(u_obs - mu) - 1e-9)
			extreme++;
	}
	return extreme / total;
}

static void test_mwu_ties_exact(void **state)
{
	const double a[] = { 3, 3, 5, 1, 3, 8 }, b[] = { 3, 5, 5, 9, 9, 5, 8 };
	struct van_mwu r;
	assert_int_equal(van_mann_whitney(a, N(a), b, N(b), &r), 0);
	assert_true(r.exact);
	assert_close(r.p, brute_p(a, N(a), b, N(b)), 1e-12);
	const double c[] = { 0, 0, 0, 1 }, d[] = { 0, 1, 1, 1, 1 };
	assert_int_equal(van_mann_whitney(c, N(c), d, N(d), &r), 0);
	assert_close(r.p, brute_p(c, N(c), d, N(d)), 1e-12);
}

/* ---- samples of known distributions --------------------------------------- */

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(double mean, double sd)
{
	return mean + sd * sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

/* How often a test at 5% calls a difference, over many experiments. */
static double rejections(size_t n, double shift, int trials)
{
	double a[200], b[200];
	int rej = 0;
	for (int t = 0; t < trials; t++) {
		for (size_t i = 0; i < n; i++) {
			a[i] = normal(100, 10);
			b[i] = normal(100 + shift, 10);
		}
		struct van_mwu r;
		assert_int_equal(van_mann_whitney(a, n, b, n, &r), 0);
		assert_int_equal(r.exact, 2 * n <= 60);
		rej += r.p < 0.05;
	}
	return (double)rej / trials;
}

static void test_known_distributions(void **state)
{
	/* The same distribution: "significant" about 5% of the time, never
	 * much more (the exact test is conservative with few runs). */
	double same = rejections(10, 0, 400);
	assert_true(same <= 0.09);
	assert_true(rejections(100, 0, 200) <= 0.09);
	/* Three standard deviations apart: nearly always, with 10 runs; one
	 * apart: mostly with 10 runs, always with 100 (normal approximation). */
	assert_true(rejections(10, 30, 100) >= 0.99);
	assert_true(rejections(10, 10, 200) >= 0.35);
	assert_true(rejections(100, 10, 50) >= 0.99);
	/* A large shift with large samples: tiny p from the approximation. */
	double a[35], b[35];
	for (int i = 0; i < 35; i++)
		a[i] = i + 1, b[i] = i + 36;
	struct van_mwu r;
	assert_int_equal(van_mann_whitney(a, 35, b, 35, &r), 0);
	assert_false(r.exact);
	/* z = (612.5 - 0.5) / sqrt(35 * 35 * 71 / 12) = 7.189 */
	assert_close(r.p, erfc(612.0 / sqrt(35.0 * 35 * 71 / 12) / sqrt(2)), 1e-15);
	assert_true(r.p < 1e-11);
}

static void test_median(void **state)
{
	double odd[] = { 5, 1, 3 }, even[] = { 10, 1, 4, 7 }, one[] = { 2 };
	assert_close(van_median(odd, 3), 3, 0);
	assert_close(van_median(even, 4), 5, 0); /* 4 + (7 - 4) / 2, rounded down */
	assert_close(van_median(one, 1), 2, 0);
}

/* ---- result files --------------------------------------------------------- */

/* A result with the given wall times and mmap p99s, one run each. */
static char *result(const char *kernel, const double *wall, const double *p99, size_t n,
		    unsigned minflt)
{
	static char buf[8192];
	size_t k = (size_t)snprintf(buf, sizeof(buf),
				    "{\"trace\":\"t.zst\",\"trace_events\":120,\"kernel\":\"%s\","
				    "\"cpus\":2,\"vm\":{\"accel\":\"tcg\"},\"runs\":[",
				    kernel);
	for (size_t i = 0; i < n; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k,
				      "%s{\"wall_ns\":%.0f,\"minor_faults\":%u,\"major_faults\":0,"
				      "\"ops\":{\"mmap\":{\"count\":10,\"errors\":0,\"p50_ns\":100,"
				      "\"p99_ns\":%.0f}}}",
				      i ? "," : "", wall[i], minflt, p99[i]);
	snprintf(buf + k, sizeof(buf) - k, "],\"median\":{}}\n");
	return buf;
}

static const struct van_rrow *row(const struct van_rrow *rows, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	fail_msg("no row %s", name);
	return NULL;
}

static void test_result_parse(void **state)
{
	const double wall[] = { 1000, 3000, 2000 }, p99[] = { 500, 600, 700 };
	struct van_result r;
	char msg[256];
	const char *t = result("6.1.0", wall, p99, 3, 50);
	assert_true(van_result_sniff(t, strlen(t)));
	assert_int_equal(van_result_parse(t, strlen(t), &r, msg, sizeof(msg)), 0);
	assert_string_equal(r.trace, "t.zst");
	assert_string_equal(r.kernel, "6.1.0");
	assert_string_equal(r.accel, "tcg");
	assert_int_equal(r.cpus, 2);
	assert_int_equal(r.nruns, 3);
	assert_string_equal(r.m[0].name, "wall_ns");
	assert_true(r.m[0].timing);
	assert_close(r.m[0].v[1], 3000, 0);
	int found = 0;
	for (size_t i = 0; i < r.nmetrics; i++)
		if (strcmp(r.m[i].name, "ops.mmap.p99_ns") == 0) {
			found = 1;
			assert_close(r.m[i].v[2], 700, 0);
		} else if (strcmp(r.m[i].name, "minor_faults") == 0) {
			assert_false(r.m[i].timing);
			assert_close(r.m[i].v[0], 50, 0);
		}
	assert_true(found);
	van_result_free(&r);
}

static void test_result_refused(void **state)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{\"baseline\":{},\"rewritten\":{},\"ratio\":{}}", "a vmreplay --compare result" },
		{ "{\"events\":12}", "not a vmreplay result: no \"runs\" and \"median\"" },
		{ "[1,2]", "not a vmreplay result: not a JSON object" },
		{ "{\"runs\":[],\"median\":{}}", "a vmreplay result without runs" },
		{ "{\"runs\":[1],\"median\":{}}", "not a vmreplay result: a run is not an object" },
		{ "{\"runs\":[\n{\"wall_ns\":1,}]}", "not valid JSON: line 2, column 14: expected a member name" },
	};
	struct van_result r;
	char msg[256];
	for (size_t i = 0; i < N(bad); i++) {
		msg[0] = 0;
		assert_int_equal(van_result_parse(bad[i].text, strlen(bad[i].text), &r, msg, sizeof(msg)),
				 -EINVAL);
		if (strncmp(msg, bad[i].want, strlen(bad[i].want)) != 0)
			fail_msg("'%s': got '%s', want '%s'", bad[i].text, msg, bad[i].want);
	}
	assert_false(van_result_sniff("\x28\xb5\x2f\xfd", 4));
	assert_true(van_result_sniff(" \n {", 4));
}

static void test_result_compare(void **state)
{
	const double bw[] = { 100, 102, 101, 99, 103 }, nw[] = { 150, 149, 152, 151, 148 };
	const double bp[] = { 10, 30, 20, 40, 50 }, np[] = { 35, 15, 25, 45, 55 };
	struct van_result a, b, c;
	char msg[256];
	char *t = strdup(result("6.1", bw, bp, 5, 50));
	assert_int_equal(van_result_parse(t, strlen(t), &a, msg, sizeof(msg)), 0);
	free(t);
	t = strdup(result("6.18", nw, np, 5, 50));
	assert_int_equal(van_result_parse(t, strlen(t), &b, msg, sizeof(msg)), 0);
	free(t);
	t = strdup(result("6.18", nw, np, 2, 70));
	assert_int_equal(van_result_parse(t, strlen(t), &c, msg, sizeof(msg)), 0);
	free(t);

	struct van_rrow *rows;
	size_t n;
	assert_int_equal(van_result_compare(&a, &b, 0.05, &rows, &n), 0);
	const struct van_rrow *w = row(rows, n, "wall_ns");
	assert_close(w->base, 101, 0);
	assert_close(w->new_, 150, 0);
	assert_close(w->ratio, 150.0 / 101, 1e-12);
	assert_close(w->change_pct, 49.0 / 101 * 100, 1e-9);
	assert_close(w->base_min, 99, 0);
	assert_close(w->new_max, 152, 0);
	assert_int_equal(w->sig, VAN_SIG_YES);
	assert_close(w->p, 2.0 / 252, 1e-12);
	/* Overlapping latencies: not significant. */
	const struct van_rrow *p = row(rows, n, "ops.mmap.p99_ns");
	assert_int_equal(p->sig, VAN_SIG_NO);
	assert_true(p->p > 0.5);
	/* Equal counts: ratio 1, p 1. */
	const struct van_rrow *m = row(rows, n, "minor_faults");
	assert_close(m->ratio, 1, 0);
	assert_close(m->change_pct, 0, 0);
	assert_int_equal(m->sig, VAN_SIG_NO);
	/* From 0: the divisor is 1, the change infinite. */
	const struct van_rrow *z = row(rows, n, "major_faults");
	assert_close(z->base, 0, 0);
	free(rows);

	/* 5 runs against 2: no difference can reach 5%. */
	assert_int_equal(van_result_compare(&a, &c, 0.05, &rows, &n), 0);
	w = row(rows, n, "wall_ns");
	assert_int_equal(w->sig, VAN_SIG_FEW);
	m = row(rows, n, "minor_faults");
	assert_int_equal(m->sig, VAN_SIG_FEW);
	assert_close(m->ratio, 70.0 / 50, 1e-12);
	free(rows);
	van_result_free(&a);
	van_result_free(&b);
	van_result_free(&c);
}

/* ---- the JSON reader --------------------------------------------------------- */

static void test_json(void **state)
{
	char err[128];
	const char *t = " {\"a\":[1,-2.5e3,true,false,null],\"s\":\"q\\\"\\\\\\/\\n\\u00e9\\ud83d\\ude00\","
			"\"o\":{},\"e\":[]} ";
	struct van_json *v = van_json_parse(t, strlen(t), err, sizeof(err));
	assert_non_null(v);
	assert_int_equal(v->type, VAN_JSON_OBJECT);
	assert_int_equal(v->n, 4);
	const struct van_json *a = van_json_get(v, "a");
	assert_int_equal(a->type, VAN_JSON_ARRAY);
	assert_int_equal(a->n, 5);
	assert_close(a->child->num, 1, 0);
	assert_close(a->child->next->num, -2500, 0);
	assert_int_equal(a->child->next->next->type, VAN_JSON_TRUE);
	assert_int_equal(a->child->next->next->next->next->type, VAN_JSON_NULL);
	assert_string_equal(van_json_str(v, "s"), "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
	assert_int_equal(van_json_get(v, "o")->n, 0);
	assert_null(van_json_get(v, "missing"));
	assert_close(van_json_num(v, "s", -1), -1, 0);
	van_json_free(v);

	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "", "line 1, column 1: unexpected end of the text" },
		{ "{\"a\" 1}", "line 1, column 6: expected ':'" },
		{ "[1 2]", "line 1, column 4: expected ',' or ']'" },
		{ "\"abc", "line 1, column 5: unterminated string" },
		{ "01", "line 1, column 2: unexpected text after the value" },
		{ "[1.]", "line 1, column 2: expected a value" },
		{ "\"\\x\"", "line 1, column 3: bad escape in a string" },
		{ "{} x", "line 1, column 4: unexpected text after the value" },
		{ "nul", "line 1, column 1: expected a value" },
	};
	for (size_t i = 0; i < N(bad); i++) {
		err[0] = 0;
		assert_null(van_json_parse(bad[i].text, strlen(bad[i].text), err, sizeof(err)));
		if (strcmp(err, bad[i].want) != 0)
			fail_msg("'%s': got '%s', want '%s'", bad[i].text, err, bad[i].want);
	}
	char deep[200];
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	assert_null(van_json_parse(deep, sizeof(deep), err, sizeof(err)));
	assert_non_null(strstr(err, "nested more than 64 deep"));
	struct van_json *ok = van_json_parse(deep + 40, 120, err, sizeof(err));
	assert_non_null(ok);
	van_json_free(ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mwu_separated),
		cmocka_unit_test(test_mwu_one_swap),
		cmocka_unit_test(test_mwu_critical_values),
		cmocka_unit_test(test_mwu_identical_and_unequal_sizes),
		cmocka_unit_test(test_min_p),
		cmocka_unit_test(test_mwu_ties_exact),
		cmocka_unit_test(test_known_distributions),
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_result_parse),
		cmocka_unit_test(test_result_refused),
		cmocka_unit_test(test_result_compare),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
