/*
 * test_rtable.c - the table of several kernels (analysis/stats/rtable.c):
 * its statistics on samples of known distributions, its significance
 * marks and "too few runs", counts that tie from run to run, a kernel
 * that gave no results (first, or between others), TCG and KVM columns
 * beside the host's, the mean rows, the text and the JSON, and result
 * files that are not results.
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
#include "rtable.h"
#include "vmtrace.h"

static void assert_close(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.10g, want %.10g (+-%g)", got, want, tol);
}

/* A result file's text: runs with the given minor faults, wall times and
 * major faults (NULL: none), where it ran (accel NULL: the host). */
static char *result(const char *kernel, const char *accel, const char *mm, size_t n,
		    const double *minflt, const double *wall, const double *majflt)
{
	struct vmt_buf b = { 0 };
	vmt_buf_printf(&b, "{\"trace\":\"t.zst\",\"kernel\":\"%s\",\"cpus\":2,\"mm\":\"%s\","
			   "\"recorded_mm\":\"overcommit=0 zeropage=0 thp=madvise\",\"runs\":[",
		       kernel, mm);
	for (size_t i = 0; i < n; i++)
		vmt_buf_printf(&b, "%s{\"wall_ns\":%.17g,\"minor_faults\":%.17g,\"major_faults\":%.17g,"
				   "\"events\":100,\"ops\":{\"mmap\":{\"count\":50,\"errors\":0,"
				   "\"p50_ns\":%.17g,\"p99_ns\":%.17g}},\"threads\":[{\"call_vcsw\":%zu,"
				   "\"call_off_cpu_ns\":1000},{\"call_vcsw\":1,\"call_off_cpu_ns\":null}]}",
			       i ? "," : "", wall[i], minflt[i], majflt ? majflt[i] : 0, wall[i] / 100,
			       wall[i] / 10, i);
	vmt_buf_puts(&b, "],\"median\":{}");
	if (accel)
		vmt_buf_printf(&b, ",\"vm\":{\"accel\":\"%s\",\"cpus\":2,\"memory_bytes\":%llu,"
				   "\"mm_unset\":null,\"noise\":{\"others_pct\":0.25}}",
			       accel, 512ull << 20);
	vmt_buf_puts(&b, ",\"matrix\":{\"host_noise_pct\":3.5}}\n");
	return b.data;
}

static void col(struct van_rcol *c, char *text)
{
	char msg[256];
	assert_int_equal(van_rcol_parse(text, strlen(text), "x.json", c, msg, sizeof(msg)), 0);
	free(text);
}

static const struct van_rtrow *row(const struct van_rtable *t, const char *name)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (!strcmp(t->rows[i].name, name))
			return &t->rows[i];
	fail_msg("no row %s", name);
	return NULL;
}

/* n values of a normal distribution of mean mu and deviation sd, each
 * at the middle of its n-quantile (Acklam's rational approximation of
 * the inverse normal CDF is more than enough here; these are the
 * classic tabulated z values for n = 8). */
static void normal8(double mu, double sd, double *v)
{
	static const double z[8] = { -1.5341, -0.8871, -0.4888, -0.1573,
				     0.1573,  0.4888,  0.8871,  1.5341 };
	for (int i = 0; i < 8; i++)
		v[i] = mu + sd * z[i];
}

/* ---- statistics on known distributions ------------------------------------------- */

static void test_known_distributions(void **state)
{
	double base[8], same[8], shifted[8], wall[8], wall2[8];
	normal8(10000, 100, base);
	normal8(10020, 100, same);    /* 0.2 sd: noise */
	normal8(10400, 100, shifted); /* 4 sd: a real change */
	normal8(1e9, 1e7, wall);
	normal8(2e9, 2e7, wall2);
	struct van_rcol c[3];
	col(&c[0], result("6.1.0", "tcg", "thp=madvise", 8, base, wall, NULL));
	col(&c[1], result("6.12.0", "tcg", "thp=madvise", 8, same, wall, NULL));
	col(&c[2], result("6.18.0", NULL, "thp=madvise", 8, shifted, wall2, NULL));
	struct van_rtable t;
	assert_int_equal(van_rtable_build(c, 3, 0.05, &t), 0);
	assert_int_equal(t.base, 0);
	const struct van_rtrow *r = row(&t, "minor_faults");
	assert_int_equal(r->section, VAN_RS_COUNTS);
	assert_false(r->mean);
	/* the sample's own mean, deviation and coefficient of variation:
	 * symmetric quantiles, so the mean is mu exactly */
	assert_close(r->cell[0].mean, 10000, 1e-9);
	double ss = 0;
	for (int i = 0; i < 8; i++)
		ss += (base[i] - 10000) * (base[i] - 10000);
	assert_close(r->cell[0].sd, sqrt(ss / 7), 1e-9);
	assert_close(r->cell[0].cv, sqrt(ss / 7) / 10000 * 100, 1e-9);
	assert_close(r->cell[0].cv, 0.9862, 1e-4); /* about the 1% asked */
	/* vmreplay's median of an even count: the lower middle (9984.27)
	 * and half the gap (31.46) rounded down */
	assert_close(r->cell[0].median, 9984.27 + 15, 1e-9);
	assert_int_equal(r->cell[0].sig, -1);
	/* 0.2 sd apart: not significant; 4 sd: completely apart, p = 2/C(16,8) */
	assert_int_equal(r->cell[1].sig, VAN_SIG_NO);
	assert_true(r->cell[1].p > 0.5);
	assert_int_equal(r->cell[2].sig, VAN_SIG_YES);
	assert_close(r->cell[2].p, 2.0 / 12870, 1e-12);
	assert_close(r->cell[2].ratio, r->cell[2].median / r->cell[0].median, 1e-12);
	assert_close(r->cell[2].ratio, 1.04, 0.002);
	assert_close(r->cell[2].change_pct, (r->cell[2].ratio - 1) * 100, 1e-9);
	/* a count the same in every run: cv 0, ratio 1, not significant */
	const struct van_rtrow *e = row(&t, "events");
	assert_close(e->cell[2].cv, 0, 0);
	assert_close(e->cell[2].ratio, 1, 0);
	assert_int_equal(e->cell[2].sig, VAN_SIG_NO);
	/* times twice as long on the host: significant, ratio 2 */
	const struct van_rtrow *w = row(&t, "wall_ns");
	assert_int_equal(w->section, VAN_RS_TIMES);
	assert_true(w->timing);
	assert_close(w->cell[2].ratio, 2, 0.01);
	assert_int_equal(w->cell[2].sig, VAN_SIG_YES);
	/* the threads' own call counts, summed over the threads that watched */
	const struct van_rtrow *sl = row(&t, "calls.sleeps");
	assert_int_equal(sl->section, VAN_RS_COUNTS);
	assert_close(sl->cell[0].max, 8, 0); /* run 7: 7 + 1 */
	const struct van_rtrow *off = row(&t, "calls.off_cpu_ns");
	assert_true(off->timing);
	assert_int_equal(off->section, VAN_RS_COUNTS); /* with the counts, as asked */
	assert_close(off->cell[0].median, 1000, 0);
	/* counts first, then times */
	int seen_times = 0;
	for (size_t i = 0; i < t.nrows; i++) {
		if (t.rows[i].section == VAN_RS_TIMES)
			seen_times = 1;
		else
			assert_false(seen_times);
	}
	van_rtable_free(&t);
	for (int i = 0; i < 3; i++)
		van_rcol_free(&c[i]);
}

/* ---- too few runs, rare events ---------------------------------------------------------- */

static void test_few_runs_and_means(void **state)
{
	const double a[3] = { 100, 101, 102 }, b[3] = { 200, 201, 202 }, w[3] = { 1e6, 1e6, 1e6 };
	const double maj_a[3] = { 0, 0, 0 }, maj_b[3] = { 0, 1, 0 };
	struct van_rcol c[2];
	col(&c[0], result("6.1.0", NULL, "", 3, a, w, maj_a));
	col(&c[1], result("6.12.0", NULL, "", 3, b, w, maj_b));
	struct van_rtable t;
	assert_int_equal(van_rtable_build(c, 2, 0.05, &t), 0);
	/* completely apart, but 3 runs each cannot tell: p_min = 2/20 */
	const struct van_rtrow *r = row(&t, "minor_faults");
	assert_int_equal(r->cell[1].sig, VAN_SIG_FEW);
	assert_close(r->cell[1].ratio, 2, 0.02);
	/* one major fault in three runs: the median (0) hides it, the mean not */
	const struct van_rtrow *m = row(&t, "major_faults");
	assert_true(m->mean);
	assert_close(m->cell[1].mean, 1.0 / 3, 1e-12);
	assert_close(m->cell[1].ratio, 1.0 / 3, 1e-12); /* the divisor at least 1 */
	assert_true(isinf(m->cell[1].change_pct));
	struct vmt_buf o = { 0 };
	van_rtable_text(&t, 0, &o);
	assert_non_null(strstr(o.data, "3 (too few runs)"));
	assert_non_null(strstr(o.data, "major_faults (mean)"));
	assert_non_null(strstr(o.data, "?: too few runs to tell: with 3 and 3 runs no difference can"
				       " be significant; give each at least 4"));
	/* the significance mark of the minor faults' row is '?' */
	const char *l = strstr(o.data, "\nminor_faults ");
	assert_non_null(l);
	const char *eol = strchr(l + 1, '\n');
	assert_true(eol[-1] == '?');
	/* no TCG column: no '~' anywhere */
	assert_null(strstr(o.data, "~"));
	vmt_buf_free(&o);
	assert_int_equal(van_runs_needed(0.05), 4);
	van_rtable_free(&t);
	van_rcol_free(&c[0]);
	van_rcol_free(&c[1]);
}

/* ---- a kernel that did not boot; TCG beside the host ----------------------------------- */

static const char failed_json[] =
	"{\"error\":\"the guest kernel panicked: Kernel panic - not syncing: VFS: Unable to mount"
	" root fs on unknown-block(0,0)\",\"trace\":\"t.zst\",\"kernel\":null,"
	"\"vm\":{\"image\":\"/k/vmlinuz-6.12\",\"image_version\":\"6.12.117+deb12-cloud-amd64 (x)\","
	"\"accel\":\"tcg\",\"cpus\":2,\"memory_bytes\":536870912}}";

static void test_failed_and_mixed(void **state)
{
	double v[5] = { 10, 11, 12, 13, 14 }, w[5] = { 5e6, 5.1e6, 5.2e6, 5.3e6, 5.4e6 };
	double w2[5] = { 1e6, 1.1e6, 1.2e6, 1.3e6, 1.4e6 };
	char msg[256];
	struct van_rcol c[3];
	/* the first column failed: the base is the next that has results */
	assert_int_equal(van_rcol_parse(failed_json, strlen(failed_json), "dir/6.12.json", &c[0], msg,
					sizeof(msg)), 0);
	assert_non_null(c[0].error);
	assert_string_equal(c[0].label, "6.12.117+deb12-cloud-amd64");
	assert_string_equal(c[0].where, "tcg");
	col(&c[1], result("6.1.0-57-cloud-amd64", "tcg", "overcommit=0 zeropage=1 thp=madvise", 5, v,
			  w, NULL));
	col(&c[2], result("6.18.44", NULL, "overcommit=0 zeropage=0 thp=madvise", 5, v, w2, NULL));
	struct van_rtable t;
	assert_int_equal(van_rtable_build(c, 3, 0.05, &t), 0);
	assert_int_equal(t.base, 1);
	const struct van_rtrow *r = row(&t, "minor_faults");
	assert_false(r->cell[0].have);
	assert_true(r->cell[1].have && r->cell[2].have);
	struct vmt_buf o = { 0 };
	van_rtable_text(&t, 0, &o);
	/* the failed column says why, wrapped in its width; the others print */
	assert_non_null(strstr(o.data, "failed: the guest kernel"));
	assert_non_null(strstr(o.data, "panicked: Kernel panic"));
	assert_non_null(strstr(o.data, "qemu tcg (emulated)"));
	assert_non_null(strstr(o.data, "this machine"));
	/* the guest's zero page is not the recording's: marked */
	const char *z = strstr(o.data, "\nzeropage");
	assert_non_null(z);
	assert_non_null(strstr(z, "1 !"));
	assert_non_null(strstr(o.data, "!: a setting not as recorded"));
	/* times: the TCG column's marked '~', the host's not; counts never */
	const char *wall = strstr(o.data, "\nwall_ns");
	assert_non_null(wall);
	const char *eol = strchr(wall + 1, '\n');
	char line[512];
	snprintf(line, sizeof(line), "%.*s", (int)(eol - wall - 1), wall + 1);
	assert_non_null(strstr(line, "5.200ms~"));
	assert_non_null(strstr(line, "1.200ms "));
	assert_null(strstr(line, "1.200ms~"));
	const char *cnt = strstr(o.data, "\nminor_faults");
	eol = strchr(cnt + 1, '\n');
	assert_null(memchr(cnt, '~', (size_t)(eol - cnt)));
	assert_true(strstr(o.data, "\ncounts") < strstr(o.data, "\ntimes (~: emulated)"));
	assert_non_null(strstr(o.data, "~: a time on a processor that TCG emulates"));
	/* the host's noise, the guest's */
	assert_non_null(strstr(o.data, "others' cpu, machine"));
	assert_non_null(strstr(o.data, "others' cpu, guest"));
	vmt_buf_free(&o);

	/* The JSON: the same columns and cells, and it parses. */
	struct vmt_buf j = { 0 };
	vmt_buf_puts(&j, "{");
	van_rtable_json(&t, 0, &j);
	vmt_buf_puts(&j, "}");
	char err[160];
	struct van_json *root = van_json_parse(j.data, j.len, err, sizeof(err));
	assert_non_null(root);
	assert_close(van_json_num(root, "base", -1), 1, 0);
	const struct van_json *cols = van_json_get(root, "columns");
	assert_int_equal(cols->n, 3);
	assert_string_equal(van_json_str(cols->child, "error"), c[0].error);
	assert_string_equal(van_json_str(cols->child->next->next, "where"), "host");
	const struct van_json *m = van_json_get(root, "metrics")->child;
	assert_string_equal(van_json_str(m, "name"), "minor_faults");
	const struct van_json *cell = van_json_get(m, "cells")->child;
	assert_int_equal(cell->type, VAN_JSON_NULL); /* the failed column */
	assert_string_equal(van_json_str(cell->next->next, "significant"), "no");
	assert_close(van_json_num(cell->next->next, "ratio", -1), 1, 0);
	van_json_free(root);
	vmt_buf_free(&j);
	van_rtable_free(&t);
	for (int i = 0; i < 3; i++)
		van_rcol_free(&c[i]);

	/* No column with results: the table says so. */
	assert_int_equal(van_rcol_parse(failed_json, strlen(failed_json), "f.json", &c[0], msg,
					sizeof(msg)), 0);
	assert_int_equal(van_rtable_build(c, 1, 0.05, &t), 0);
	assert_int_equal(t.base, 1);
	van_rtable_text(&t, 0, &o);
	assert_non_null(strstr(o.data, "(no column has results)"));
	vmt_buf_free(&o);
	van_rtable_free(&t);
	van_rcol_free(&c[0]);
}

/* ---- counts with ties ------------------------------------------------------------------ */

/* Fault and call counts repeat from run to run: the exact test over
 * mid-ranks, its p-values worked out by enumerating every split of the
 * pooled runs. */
static void test_tied_counts(void **state)
{
	const double w[8] = { 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6 };
	const double base[8] = { 500, 500, 500, 500, 501, 501, 501, 501 };
	const double up[8] = { 501, 501, 501, 501, 502, 502, 502, 502 };
	const double half[6] = { 500, 500, 500, 501, 501, 501 };
	const double one[6] = { 500, 500, 500, 500, 500, 501 };
	const double six[6] = { 500, 500, 500, 500, 500, 500 };
	const double k61[5] = { 10485, 10485, 10485, 10485, 10485 };
	const double k612[5] = { 10074, 10074, 10074, 10074, 10074 };
	struct van_rcol c[2];
	struct van_rtable t;
	const struct van_rtrow *r;

	/* half the runs one fault up, in each: 14 of C(16,8) splits as far
	 * from the middle */
	col(&c[0], result("6.1.0", "tcg", "", 8, base, w, NULL));
	col(&c[1], result("6.12.0", "tcg", "", 8, up, w, NULL));
	assert_int_equal(van_rtable_build(c, 2, 0.05, &t), 0);
	r = row(&t, "minor_faults");
	assert_close(r->cell[1].p, 14.0 / 1287, 1e-12);
	assert_int_equal(r->cell[1].sig, VAN_SIG_YES);
	/* the lower middle of an even count, half the gap (0.5) rounded down */
	assert_close(r->cell[0].median, 500, 0);
	assert_close(r->cell[1].median, 501, 0);
	assert_close(r->cell[1].ratio, 501.0 / 500, 1e-12);
	assert_close(r->cell[1].change_pct, 0.2, 1e-9);
	assert_close(r->cell[0].mean, 500.5, 1e-12);
	van_rtable_free(&t);
	van_rcol_free(&c[0]);
	van_rcol_free(&c[1]);

	/* six runs of 500 against three of 500 and three of 501: p = 2/11,
	 * not significant; against one run of 501: p = 1 */
	col(&c[0], result("6.1.0", NULL, "", 6, six, w, NULL));
	col(&c[1], result("6.12.0", NULL, "", 6, half, w, NULL));
	assert_int_equal(van_rtable_build(c, 2, 0.05, &t), 0);
	r = row(&t, "minor_faults");
	assert_close(r->cell[1].p, 2.0 / 11, 1e-12);
	assert_int_equal(r->cell[1].sig, VAN_SIG_NO);
	assert_close(r->cell[0].cv, 0, 0);
	van_rtable_free(&t);
	van_rcol_free(&c[1]);
	col(&c[1], result("6.12.0", NULL, "", 6, one, w, NULL));
	assert_int_equal(van_rtable_build(c, 2, 0.05, &t), 0);
	r = row(&t, "minor_faults");
	assert_close(r->cell[1].p, 1, 1e-12);
	assert_int_equal(r->cell[1].sig, VAN_SIG_NO);
	van_rtable_free(&t);
	van_rcol_free(&c[0]);
	van_rcol_free(&c[1]);

	/* five equal runs a side, apart (the README's 6.1 against this
	 * machine): 2 of C(10,5); the same count everywhere: p = 1 */
	col(&c[0], result("6.1.0", "tcg", "", 5, k61, w, NULL));
	col(&c[1], result("6.18.0", NULL, "", 5, k612, w, NULL));
	assert_int_equal(van_rtable_build(c, 2, 0.05, &t), 0);
	r = row(&t, "minor_faults");
	assert_close(r->cell[1].p, 2.0 / 252, 1e-12);
	assert_int_equal(r->cell[1].sig, VAN_SIG_YES);
	assert_close(r->cell[1].ratio, 10074.0 / 10485, 1e-12);
	r = row(&t, "ops.mmap.count");
	assert_close(r->cell[1].p, 1, 0);
	assert_int_equal(r->cell[1].sig, VAN_SIG_NO);
	van_rtable_free(&t);
	van_rcol_free(&c[0]);
	van_rcol_free(&c[1]);
}

/* ---- a kernel missing between others; KVM beside TCG and the host -------------------- */

/* The file vmreplay writes for an image that is not there. */
static const char missing_json[] =
	"{\"error\":\"--kernel: '/k/vmlinuz-6.13': No such file or directory\",\"trace\":\"t.zst\","
	"\"kernel\":null,\"recorded_mm\":\"\",\"vm\":{\"image\":\"/k/vmlinuz-6.13\","
	"\"image_version\":\"\",\"accel\":\"tcg\",\"cpus\":2,\"memory_bytes\":536870912},"
	"\"matrix\":{\"label\":\"vmlinuz-6.13\",\"name\":\"vmlinuz-6.13\",\"column\":1,"
	"\"columns\":4,\"elapsed_ns\":0,\"host_noise_pct\":null,\"mm_asked\":\"\"}}";

/* The line of the table's text that starts with name, without its end. */
static void line_of(const char *text, const char *name, char *out, size_t n)
{
	char key[96];
	snprintf(key, sizeof(key), "\n%s ", name);
	const char *l = text;
	if (strncmp(text, key + 1, strlen(key + 1))) {
		if (!(l = strstr(text, key)))
			fail_msg("no line %s in:\n%s", name, text);
		l++;
	}
	size_t len = strcspn(l, "\n");
	snprintf(out, n, "%.*s", (int)len, l);
}

static void test_missing_between_and_kvm(void **state)
{
	double base[8], shifted[8], wall[8], wall_kvm[8], wall_host[8];
	normal8(10000, 100, base);
	normal8(10400, 100, shifted);
	normal8(4e6, 4e4, wall);
	normal8(1e6, 1e4, wall_kvm);
	normal8(1e6, 1e4, wall_host);
	char msg[256];
	struct van_rcol c[4];
	col(&c[0], result("6.1.0-57-cloud-amd64", "tcg", "thp=madvise", 8, base, wall, NULL));
	assert_int_equal(van_rcol_parse(missing_json, strlen(missing_json), "d/vmlinuz-6.13.json",
					&c[1], msg, sizeof(msg)), 0);
	col(&c[2], result("6.12.117+deb12-cloud-amd64", "kvm", "thp=madvise", 8, shifted, wall_kvm,
			  NULL));
	col(&c[3], result("6.18.44", NULL, "thp=madvise", 8, base, wall_host, NULL));
	assert_string_equal(c[1].label, "vmlinuz-6.13");
	assert_string_equal(c[2].where, "kvm");
	struct van_rtable t;
	assert_int_equal(van_rtable_build(c, 4, 0.05, &t), 0);
	/* the base stays the first column; the missing one has no cells, and
	 * the columns after it are tested against the base, not against it */
	assert_int_equal(t.base, 0);
	const struct van_rtrow *r = row(&t, "minor_faults");
	assert_false(r->cell[1].have);
	assert_true(r->cell[2].have && r->cell[3].have);
	assert_int_equal(r->cell[2].sig, VAN_SIG_YES);
	assert_close(r->cell[2].p, 2.0 / 12870, 1e-12);
	assert_int_equal(r->cell[3].sig, VAN_SIG_NO);
	assert_close(r->cell[3].p, 1, 1e-12);
	const struct van_rtrow *w = row(&t, "wall_ns");
	assert_close(w->cell[2].ratio, 0.25, 0.001);
	assert_int_equal(w->cell[2].sig, VAN_SIG_YES);

	struct vmt_buf o = { 0 };
	van_rtable_text(&t, 0, &o);
	char line[1024];
	line_of(o.data, "kernel", line, sizeof(line));
	assert_non_null(strstr(line, "6.1.0-57-cloud-amd64"));
	assert_true(strstr(line, "vmlinuz-6.13") < strstr(line, "6.12.117+deb12-cloud-amd64"));
	line_of(o.data, "ran on", line, sizeof(line));
	const char *tcg2 = strstr(strstr(line, "qemu tcg (emulated)") + 1, "qemu tcg (emulated)");
	assert_non_null(tcg2);
	assert_true(tcg2 < strstr(line, "qemu kvm") && strstr(line, "qemu kvm") < strstr(line, "this machine"));
	line_of(o.data, "runs", line, sizeof(line));
	assert_non_null(strstr(line, " 8  "));
	assert_non_null(strstr(line, "  -  "));
	line_of(o.data, "status", line, sizeof(line));
	assert_non_null(strstr(line, "ok  "));
	assert_non_null(strstr(line, "failed: --kernel:"));
	assert_non_null(strstr(o.data, "'/k/vmlinuz-6.13': No such"));
	/* the missing column's cells "-" */
	line_of(o.data, "minor_faults", line, sizeof(line));
	assert_non_null(strstr(line, " - "));
	/* times: TCG's marked emulated; KVM's and this machine's count */
	line_of(o.data, "wall_ns", line, sizeof(line));
	assert_non_null(strstr(line, "4.000ms~"));
	assert_non_null(strstr(line, "1.000ms "));
	assert_null(strstr(line, "1.000ms~"));
	assert_non_null(strstr(o.data, "\ntimes (~: emulated)"));
	vmt_buf_free(&o);
	van_rtable_free(&t);

	/* Without the TCG column's results, nothing is emulated: no '~',
	 * nor its legend. */
	struct van_rcol d[3] = { c[1], c[2], c[3] };
	assert_int_equal(van_rtable_build(d, 3, 0.05, &t), 0);
	assert_int_equal(t.base, 1);
	van_rtable_text(&t, 0, &o);
	assert_null(strchr(o.data, '~'));
	assert_non_null(strstr(o.data, "\ntimes "));
	assert_non_null(strstr(o.data, "qemu kvm"));
	vmt_buf_free(&o);
	van_rtable_free(&t);
	for (int i = 0; i < 4; i++)
		van_rcol_free(&c[i]);
}

/* ---- untrusted files -------------------------------------------------------------------- */

static void test_bad_files(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "[1,2]", "not a vmreplay result: not a JSON object" },
		{ "{\"runs\":[]", "not valid JSON" },
		{ "{\"runs\":[],\"median\":{}}", "a vmreplay result without runs" },
		{ "{\"baseline\":{},\"rewritten\":{}}", "a vmreplay --compare result" },
		{ "{\"x\":1}", "not a vmreplay result: no \"runs\" and \"median\"" },
	};
	struct van_rcol c;
	char msg[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = 0;
		assert_int_equal(van_rcol_parse(bad[i].text, strlen(bad[i].text), "b.json", &c, msg,
						sizeof(msg)), -EINVAL);
		if (strncmp(msg, bad[i].why, strlen(bad[i].why)))
			fail_msg("'%s': got '%s'", bad[i].text, msg);
	}
	/* A label with control bytes and of any length is cut and cleaned. */
	const char *t = "{\"kernel\":\"6.1\\n\\u001b[2Jevil-and-very-long-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"runs\":[{\"wall_ns\":1}],\"median\":{},"
			"\"mm\":\"thp=al\\tways\",\"vm\":{\"cpus\":-5,\"memory_bytes\":-1}}";
	assert_int_equal(van_rcol_parse(t, strlen(t), "b.json", &c, msg, sizeof(msg)), 0);
	assert_int_equal(strlen(c.label), 60);
	assert_null(strpbrk(c.label, "\n\033"));
	assert_int_equal(c.cpus, 0);
	assert_close(c.memory, 0, 0);
	assert_int_equal(c.host_noise, -1);
	van_rcol_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_distributions),
		cmocka_unit_test(test_few_runs_and_means),
		cmocka_unit_test(test_failed_and_mixed),
		cmocka_unit_test(test_tied_counts),
		cmocka_unit_test(test_missing_between_and_kvm),
		cmocka_unit_test(test_bad_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
