/*
 * test_golden_real.c - lint and the rewrite rules on the real recordings
 * of tests/data/real/ (README.md there says how each was made): the
 * findings each must give, with their numbers and demangled call sites,
 * how often each rule applies, that the rewrites change exactly the calls
 * they say, and the recordings where a rule must not apply.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux_abi.h"
#include "lint.h"
#include "rewrite.h"
#include "tgen.h"
#include "vmtrace.h"

#define DIR "tests/data/real/"

struct linted {
	van_lint *l;
	int n;
	vmt_reader *r;
	int fd;
};

static struct linted lint_file(const char *name)
{
	struct linted x;
	int err;
	char msg[256];
	x.fd = open(name, O_RDONLY | O_CLOEXEC);
	assert_true(x.fd >= 0);
	x.r = vmt_reader_open_fd(x.fd, &err, msg, sizeof(msg));
	assert_non_null(x.r);
	x.l = van_lint_new(vmt_reader_header(x.r));
	struct vmt_event ev;
	uint64_t i = 0;
	int rc;
	while ((rc = vmt_reader_next(x.r, &ev)) == 1)
		assert_int_equal(van_lint_event(x.l, i++, &ev), 0);
	assert_int_equal(rc, 0);
	x.n = van_lint_finish(x.l);
	assert_true(x.n >= 0);
	return x;
}

static void lint_done(struct linted *x)
{
	van_lint_free(x->l);
	vmt_reader_free(x->r);
	close(x->fd);
}

/* The findings' ids, comma-separated. */
static void expect_ids(const struct linted *x, const char *want)
{
	char got[256] = "";
	for (int i = 0; i < x->n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "",
			 van_lint_get(x->l, (uint32_t)i)->id);
	assert_string_equal(got, want);
}

static const struct van_lint_finding *finding(const struct linted *x, const char *id)
{
	for (int i = 0; i < x->n; i++)
		if (!strcmp(van_lint_get(x->l, (uint32_t)i)->id, id))
			return van_lint_get(x->l, (uint32_t)i);
	fail_msg("no finding %s", id);
	return NULL;
}

static uint64_t ev(const struct van_lint_finding *f, const char *key)
{
	for (uint32_t i = 0; i < f->nnums; i++)
		if (!strcmp(f->nums[i].key, key))
			return f->nums[i].value;
	fail_msg("finding %s has no evidence '%s'", f->id, key);
	return 0;
}

/* The rewrite of trace `name` by `rules` into a memfd (returned, rewound)
 * and its counts (copied into *c, rules[0..7]). */
static int rewrite_file(const char *name, const char *rules, struct van_rewrite_counts *c,
			struct van_rewrite_count *rc8)
{
	char err[256];
	van_rewrite *rw = van_rewrite_new(rules, err, sizeof(err));
	assert_non_null(rw);
	int in = open(name, O_RDONLY | O_CLOEXEC), out = tg_memfd("golden-real");
	assert_true(in >= 0);
	if (van_rewrite_trace(rw, in, out, err, sizeof(err)))
		fail_msg("rewrite %s: %s", name, err);
	*c = *van_rewrite_counts(rw);
	for (uint32_t i = 0; i < c->nrules && i < 8; i++) {
		rc8[i] = c->rules[i];
		rc8[i].note = NULL;
	}
	c->rules = rc8;
	van_rewrite_free(rw);
	close(in);
	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	return out;
}

/* Calls in the trace in fd: total, with VMT_SC_REWRITTEN, and rewritten
 * madvise(MADV_DONTNEED) calls. */
static void count_calls(int fd, uint64_t *calls, uint64_t *rewritten, uint64_t *madv)
{
	int err;
	vmt_reader *r = vmt_reader_open_fd(fd, &err, NULL, 0);
	assert_non_null(r);
	struct vmt_event e;
	*calls = *rewritten = *madv = 0;
	while (vmt_reader_next(r, &e) == 1) {
		if (e.kind != VMT_EV_SYSCALL)
			continue;
		(*calls)++;
		if (!(e.u.sc.flags & VMT_SC_REWRITTEN))
			continue;
		(*rewritten)++;
		*madv += e.u.sc.op == VMT_OP_MADVISE && e.u.sc.args[2] == LX_MADV_DONTNEED;
	}
	vmt_reader_free(r);
}

/* What the rewritten calls of the trace in fd (rewound) are: how many
 * are flagged VMT_SC_REWRITTEN, and of those how many are `op` with
 * args[argi] == val (mask 0: equal; else the bits of mask of args[argi]
 * equal val); also how many calls in all match. */
struct opcount {
	uint64_t rewritten, rewritten_match, match;
};

static struct opcount count_op(int fd, uint32_t op, int argi, uint64_t mask, uint64_t val)
{
	int err;
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, NULL, 0);
	assert_non_null(r);
	struct vmt_event e;
	struct opcount c = { 0, 0, 0 };
	while (vmt_reader_next(r, &e) == 1) {
		if (e.kind != VMT_EV_SYSCALL)
			continue;
		uint64_t a = e.u.sc.args[argi];
		int m = e.u.sc.op == op && (mask ? (a & mask) == val : a == val);
		int rw = !!(e.u.sc.flags & VMT_SC_REWRITTEN);
		c.match += m;
		c.rewritten += rw;
		c.rewritten_match += rw && m;
	}
	vmt_reader_free(r);
	return c;
}

/* ---- the JVMs and glibc: uncommit by remap ------------------------------ */

static void test_jvm_g1(void **state)
{
	struct linted x = lint_file(DIR "jvm17-g1.zst");
	expect_ids(&x, VAN_LINT_PROT_NONE_FREE);
	const struct van_lint_finding *f = finding(&x, VAN_LINT_PROT_NONE_FREE);
	assert_int_equal(ev(f, "uncommits"), 1029);
	assert_int_equal(ev(f, "recommitted"), 720);
	assert_int_equal(ev(f, "recommitted_by_other_thread"), 720);
	assert_int_equal(ev(f, "left_uncommitted"), 309);
	assert_int_equal(ev(f, "threads"), 1);
	assert_int_equal(f->parts[0].thread, 6); /* the G1 service thread */
	assert_string_equal(f->sites[0].site,
			    "os::pd_uncommit_memory(char*, unsigned long, bool) (libjvm.so)");
	assert_int_equal(f->sites[0].calls, 1029);
	assert_non_null(strstr(f->sites[1].site, "os::pd_commit_memory_or_exit("));
	assert_non_null(strstr(f->note, "dropped a commit charge"));
	lint_done(&x);

	struct van_rewrite_counts c;
	struct van_rewrite_count r[8];
	int fd = rewrite_file(DIR "jvm17-g1.zst", NULL, &c, r);
	assert_int_equal(r[0].applied, 720); /* every cycle lint counts */
	assert_int_equal(r[0].nsites, 1);
	assert_string_equal(r[0].sites[0].site,
			    "os::pd_uncommit_memory(char*, unsigned long, bool) (libjvm.so)");
	uint64_t calls, rew, madv;
	count_calls(fd, &calls, &rew, &madv);
	/* each uncommit became a madvise; what else changed is the cut
	 * re-commits; the dropped re-commits are gone */
	assert_int_equal(madv, 720);
	assert_int_equal(rew, 720 + r[0].details[0].n);
	assert_int_equal(c.in.calls - calls, r[0].removed);
	assert_int_equal(calls, c.out.calls);
	assert_true(c.out.write_locked + 720 + r[0].removed <= c.in.write_locked);
	close(fd);
}

/* Parallel, Serial and glibc's strict arenas: rule applications equal the
 * cycles lint counts (uncommits committed again or unmapped). */
static void test_uncommit_others(void **state)
{
	static const struct {
		const char *file;
		uint64_t uncommits, cycles;
		const char *site;
	} t[] = {
		{ DIR "jvm17-parallel.zst", 29, 26,
		  "os::pd_uncommit_memory(char*, unsigned long, bool) (libjvm.so)" },
		{ DIR "jvm17-serial.zst", 30, 20,
		  "os::pd_uncommit_memory(char*, unsigned long, bool) (libjvm.so)" },
		{ DIR "glibc-arenas-strict.zst", 30, 17, "_int_free (libc.so.6)" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct linted x = lint_file(t[i].file);
		expect_ids(&x, VAN_LINT_PROT_NONE_FREE);
		const struct van_lint_finding *f = finding(&x, VAN_LINT_PROT_NONE_FREE);
		assert_int_equal(ev(f, "uncommits"), t[i].uncommits);
		assert_int_equal(ev(f, "cycles"), t[i].cycles);
		assert_int_equal(ev(f, "recommitted_by_other_thread"), 0);
		assert_string_equal(f->sites[0].site, t[i].site);
		lint_done(&x);
		struct van_rewrite_counts c;
		struct van_rewrite_count r[8];
		int fd = rewrite_file(t[i].file, "prot-none-free", &c, r);
		assert_int_equal(r[0].applied, t[i].cycles);
		uint64_t calls, rew, madv;
		count_calls(fd, &calls, &rew, &madv);
		assert_int_equal(madv, t[i].cycles);
		close(fd);
	}
}

/* glibc's arenas in the default mode shrink with madvise already: nothing
 * to find, nothing to rewrite. */
static void test_glibc_default(void **state)
{
	struct linted x = lint_file(DIR "glibc-arenas.zst");
	expect_ids(&x, "");
	lint_done(&x);
	struct van_rewrite_counts c;
	struct van_rewrite_count r[8];
	int fd = rewrite_file(DIR "glibc-arenas.zst", "prot-none-free,discard-before-unmap,free-before-dontneed", &c, r);
	assert_int_equal(r[0].applied + r[1].applied + r[2].applied, 0);
	assert_int_equal(c.events_in, c.events_out);
	close(fd);
}

/* ---- V8, jemalloc: discards for nothing --------------------------------- */

static void test_node_teardown(void **state)
{
	struct linted x = lint_file(DIR "node20-workers.zst");
	expect_ids(&x, VAN_LINT_DISCARD_UNMAP);
	const struct van_lint_finding *f = finding(&x, VAN_LINT_DISCARD_UNMAP);
	assert_int_equal(ev(f, "calls"), 786);
	assert_int_equal(ev(f, "unmaps"), 387);
	assert_non_null(strstr(f->sites[0].site, "v8::base::OS::SetPermissions("));
	lint_done(&x);
	struct van_rewrite_counts c;
	struct van_rewrite_count r[8];
	int fd = rewrite_file(DIR "node20-workers.zst", "discard-before-unmap", &c, r);
	assert_int_equal(r[0].applied, 783);
	assert_int_equal(r[0].removed, 783);
	/* touches of pages in PROT_NONE ranges went with their mprotects */
	assert_int_equal(r[0].details[0].n, 387);
	assert_int_equal(c.in.calls - c.out.calls, 783);
	close(fd);
}

static void test_redis_muzzy(void **state)
{
	struct linted x = lint_file(DIR "redis-jemalloc-muzzy.zst");
	expect_ids(&x, VAN_LINT_MADV_FREE "," VAN_LINT_FREE_DONTNEED);
	const struct van_lint_finding *f = finding(&x, VAN_LINT_FREE_DONTNEED);
	assert_int_equal(ev(f, "calls"), 296);
	assert_int_equal(ev(f, "other_thread"), 117);
	assert_string_equal(f->sites[0].site, "libjemalloc.so.2+0x94ebe");
	lint_done(&x);
	struct van_rewrite_counts c;
	struct van_rewrite_count r[8];
	int fd = rewrite_file(DIR "redis-jemalloc-muzzy.zst", "free-before-dontneed", &c, r);
	assert_int_equal(r[0].applied, 291);
	assert_int_equal(r[0].removed, 291);
	close(fd);
}

/* ---- the one-call rules: dontneed-to-free, free-to-dontneed,
 * mlock-onfault, populate ---------------------------------------------- */

/* glibc's arenas in the default mode shrink with 52 madvise(MADV_DONTNEED)
 * of private anonymous memory: dontneed-to-free makes each a MADV_FREE.
 * QEMU's malloc_trim under mlockall makes 391 that failed with EINVAL on
 * locked memory: none is rewritten.  redis/jemalloc's 301 MADV_FREE all
 * become MADV_DONTNEED with free-to-dontneed. */
static void test_madvise_swaps(void **state)
{
	struct van_rewrite_counts c;
	struct van_rewrite_count r[8];
	int fd = rewrite_file(DIR "glibc-arenas.zst", "dontneed-to-free", &c, r);
	assert_int_equal(r[0].applied, 52);
	assert_non_null(strstr(r[0].sites[0].site, "(libc.so.6)"));
	struct opcount o = count_op(fd, VMT_OP_MADVISE, 2, 0, LX_MADV_FREE);
	assert_int_equal(o.rewritten, 52);
	assert_int_equal(o.rewritten_match, 52);
	assert_int_equal(count_op(fd, VMT_OP_MADVISE, 2, 0, LX_MADV_DONTNEED).match, 0);
	assert_int_equal(c.events_in, c.events_out);
	close(fd);

	fd = rewrite_file(DIR "qemu-memlock.zst", "dontneed-to-free", &c, r);
	assert_int_equal(r[0].applied, 0);
	o = count_op(fd, VMT_OP_MADVISE, 2, 0, LX_MADV_DONTNEED);
	assert_int_equal(o.match, 391); /* all still there, none rewritten */
	assert_int_equal(o.rewritten, 0);
	close(fd);

	fd = rewrite_file(DIR "redis-jemalloc-muzzy.zst", "free-to-dontneed", &c, r);
	assert_int_equal(r[0].applied, 301);
	assert_string_equal(r[0].sites[0].site, "libjemalloc.so.2+0x94ebe");
	o = count_op(fd, VMT_OP_MADVISE, 2, 0, LX_MADV_DONTNEED);
	assert_int_equal(o.rewritten_match, 301);
	assert_int_equal(o.rewritten, 301);
	assert_int_equal(count_op(fd, VMT_OP_MADVISE, 2, 0, LX_MADV_FREE).match, 0);
	close(fd);
}

/* QEMU with mem-lock=on: its one mlockall(MCL_CURRENT|MCL_FUTURE) gets
 * MCL_ONFAULT; the JVM, which locks nothing, is left alone. */
static void test_mlock_onfault_real(void **state)
{
	struct van_rewrite_counts c;
	struct van_rewrite_count r[8];
	int fd = rewrite_file(DIR "qemu-memlock.zst", "mlock-onfault", &c, r);
	assert_int_equal(r[0].applied, 1);
	struct opcount o = count_op(fd, VMT_OP_MLOCKALL, 0, 0,
				    LX_MCL_CURRENT | LX_MCL_FUTURE | LX_MCL_ONFAULT);
	assert_int_equal(o.rewritten_match, 1);
	assert_int_equal(o.rewritten, 1);
	assert_int_equal(c.events_in, c.events_out);
	close(fd);

	fd = rewrite_file(DIR "jvm17-g1.zst", "mlock-onfault", &c, r);
	assert_int_equal(r[0].applied, 0);
	assert_int_equal(count_op(fd, VMT_OP_MLOCKALL, 0, 0, 0).rewritten, 0);
	close(fd);
}

/* populate on G1 and glibc's arenas: the mappings it populates are
 * private anonymous ones, never MAP_NORESERVE (G1's heap reservation and
 * the NORESERVE uncommits stay lazy), never PROT_NONE. */
static void test_populate_real(void **state)
{
	static const struct {
		const char *file;
		uint64_t applied;
	} t[] = {
		{ DIR "jvm17-g1.zst", 710 },
		{ DIR "glibc-arenas.zst", 17 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct van_rewrite_counts c;
		struct van_rewrite_count r[8];
		int fd = rewrite_file(t[i].file, "populate", &c, r);
		assert_int_equal(r[0].applied, t[i].applied);
		struct opcount o = count_op(fd, VMT_OP_MMAP, 3, LX_MAP_POPULATE, LX_MAP_POPULATE);
		assert_int_equal(o.rewritten, t[i].applied);
		assert_int_equal(o.rewritten_match, t[i].applied);
		assert_int_equal(o.match, t[i].applied);
		/* each populated mmap is a private anonymous, accessible one
		 * without MAP_NORESERVE */
		int err;
		assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
		vmt_reader *rd = vmt_reader_open_fd(fd, &err, NULL, 0);
		assert_non_null(rd);
		struct vmt_event e;
		uint64_t n = 0;
		while (vmt_reader_next(rd, &e) == 1) {
			const struct vmt_syscall *sc = &e.u.sc;
			if (e.kind != VMT_EV_SYSCALL || sc->op != VMT_OP_MMAP ||
			    !(sc->args[3] & LX_MAP_POPULATE))
				continue;
			n++;
			assert_int_equal(sc->args[3] & (LX_MAP_SHARED | LX_MAP_ANONYMOUS |
							 LX_MAP_NORESERVE), LX_MAP_ANONYMOUS);
			assert_int_not_equal(sc->args[2], LX_PROT_NONE);
		}
		vmt_reader_free(rd);
		assert_int_equal(n, t[i].applied);
		close(fd);
	}
}

/* ---- the counting findings ---------------------------------------------- */

static void test_counting_findings(void **state)
{
	struct linted x = lint_file(DIR "qemu-memlock.zst");
	expect_ids(&x, VAN_LINT_LOCKED_UNTOUCHED "," VAN_LINT_DISCARD_LOCKED);
	const struct van_lint_finding *f = finding(&x, VAN_LINT_DISCARD_LOCKED);
	assert_int_equal(ev(f, "calls"), 391);
	assert_string_equal(f->sites[0].site, "malloc_trim (libc.so.6)");
	lint_done(&x);

	x = lint_file(DIR "ld-gold.zst");
	expect_ids(&x, VAN_LINT_FRAGMENTATION);
	assert_int_equal(ev(finding(&x, VAN_LINT_FRAGMENTATION), "peak_vmas"), 1573);
	lint_done(&x);

	x = lint_file(DIR "git-loose.zst");
	expect_ids(&x, VAN_LINT_FILE_MAP_CHURN);
	f = finding(&x, VAN_LINT_FILE_MAP_CHURN);
	assert_int_equal(ev(f, "pairs"), 2065);
	assert_string_equal(f->sites[0].site, "git+0x1c15f2");
	assert_int_equal(f->sites[0].calls, 2064);
	lint_done(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jvm_g1),
		cmocka_unit_test(test_uncommit_others),
		cmocka_unit_test(test_glibc_default),
		cmocka_unit_test(test_node_teardown),
		cmocka_unit_test(test_redis_muzzy),
		cmocka_unit_test(test_madvise_swaps),
		cmocka_unit_test(test_mlock_onfault_real),
		cmocka_unit_test(test_populate_real),
		cmocka_unit_test(test_counting_findings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
