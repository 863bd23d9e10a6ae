/*
 * test_rewrite_stream.c - the rewrite engine's API: rule lists and their
 * errors, the streaming interface (deep copies of held events, the bound
 * on held events, emit errors) and the counts.  The rules themselves are tested on
 * traces in test_rewrite.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "linux_abi.h"
#include "rewrite.h"
#include "tgen.h"
#include "vmtrace.h"

/* ---- API ---------------------------------------------------------------- */

static void test_rule_lists(void **state)
{
	char err[256];
	van_rewrite *rw = van_rewrite_new("populate,mlock-onfault", err, sizeof(err));
	assert_non_null(rw);
	assert_string_equal(van_rewrite_list(rw), "populate,mlock-onfault");
	const struct van_rewrite_counts *c = van_rewrite_counts(rw);
	assert_int_equal(c->nrules, 2);
	assert_string_equal(c->rules[0].name, "populate");
	assert_string_equal(c->rules[1].name, "mlock-onfault");
	van_rewrite_free(rw);

	rw = van_rewrite_new("", err, sizeof(err));
	assert_non_null(rw);
	assert_string_equal(van_rewrite_list(rw), VAN_REWRITE_DEFAULT);
	van_rewrite_free(rw);

	static const struct {
		const char *list, *msg;
	} bad[] = {
		{ "prot-none-free,bogus", "unknown rewrite rule 'bogus' (rules: prot-none-free, "
					  "dontneed-to-free, free-to-dontneed, mlock-onfault, populate, "
					  "discard-before-unmap, free-before-dontneed)" },
		{ "populate,populate", "rewrite rule 'populate' given twice" },
		{ "populate,", "empty rewrite rule name in 'populate,'" },
		{ "dontneed-to-free,free-to-dontneed",
		  "rewrite rules 'dontneed-to-free' and 'free-to-dontneed' undo each other" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_null(van_rewrite_new(bad[i].list, err, sizeof(err)));
		assert_string_equal(err, bad[i].msg);
		assert_int_equal(van_rewrite_check(bad[i].list, NULL, 0), -EINVAL);
	}
	assert_int_equal(van_rewrite_check("mlock-onfault", err, sizeof(err)), 0);

	size_t n;
	const struct van_rewrite_rule_info *info = van_rewrite_rules(&n);
	assert_int_equal(n, 7);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(info[i].summary);
		assert_int_equal(van_rewrite_check(info[i].name, NULL, 0), 0);
	}
}

/* Streaming: collected output events, deep-copied by the collector. */
struct sink {
	int fail_at; /* return -EIO for this event (1-based), 0: never */
	int n;
	char text[64][160];
};

static int collect(void *arg, const struct vmt_event *ev)
{
	struct sink *s = arg;
	if (s->fail_at && s->n + 1 == s->fail_at)
		return -EIO;
	struct vmt_buf b = { 0 };
	vmt_render_text(&b, ev);
	if (s->n < 64)
		snprintf(s->text[s->n], sizeof(s->text[0]), "t%u %s", ev->thread, b.data);
	s->n++;
	vmt_buf_free(&b);
	return 0;
}

/* A prot-none-free rewriter that was pushed a reservation, an enable and
 * a free of R1 by thread 1: the free is held. */
static van_rewrite *pnf_held_free(struct sink *s)
{
	char err[128];
	van_rewrite *rw = van_rewrite_new("prot-none-free", err, sizeof(err));
	assert_non_null(rw);
	struct vmt_event ev = TG_SC(0, 1, VMT_OP_MMAP, R1, 0, PAGE, LX_PROT_NONE, PRIV_ANON,
				    FD_NONE, 0);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, s), 0);
	ev = TG_SC(0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, s), 0);
	ev = TG_SC(0, 1, VMT_OP_MMAP, R1, R1, PAGE, LX_PROT_NONE, PRIV_ANON_FIXED, FD_NONE, 0);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, s), 0);
	return rw;
}

/* The caller's buffers may change as soon as push returns. */
static void test_stream_deep_copy(void **state)
{
	struct sink s = { 0 };
	struct vmt_event ev;
	van_rewrite *rw = pnf_held_free(&s);
	assert_int_equal(s.n, 2); /* the free is held */

	char path[32] = "/tmp/first";
	struct vmt_touch_run runs[2] = { { 1, VMT_PAGE_WRITTEN }, { 1, VMT_PAGE_ABSENT } };
	ev = tg_ev_file(0, 2, path, 0, 0, 0, 0, 0);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), 0);
	strcpy(path, "/tmp/changed");
	ev = tg_ev_touch(0, 2, R2, 2, VMT_TOUCH_BEFORE_OP, 2, runs);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), 0);
	runs[0].state = VMT_PAGE_ABSENT;
	assert_int_equal(s.n, 2);
	assert_int_equal(van_rewrite_counts(rw)->max_held, 3);

	ev = TG_SC(0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), 0);
	assert_int_equal(van_rewrite_finish(rw, collect, &s), 0);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.text[2], "t1 madvise(0x100000, 4096, MADV_DONTNEED) = 0 (rewritten)");
	assert_string_equal(s.text[3], "t2 map_file(\"/tmp/first\", dev=0:0, ino=0, size=0, flags=O_RDONLY)");
	assert_string_equal(s.text[4], "t2 touch(0x200000, 2 pages: 1 written, 1 absent, before op)");
	assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), VMT_E_STATE);
	van_rewrite_free(rw);
}

/* The counts: call sites named from the stacks (symbols at the end, as a
 * recording writes them), calls left out, the note, and both sides' calls
 * (those under the write lock, those changing VMAs). */
static void test_counts(void **state)
{
	struct sink s = { 0 };
	char err[128];
	static const uint64_t ips[] = { 0x7ffff7d30010ull, 0x555555556120ull };
	van_rewrite *rw = van_rewrite_new("prot-none-free", err, sizeof(err));
	assert_non_null(rw);
	struct vmt_event evs[] = {
		tg_ev_stack(0, 2, ips),
		TG_SC(0, 1, VMT_OP_MMAP, R1, 0, PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0),
		TG_SC(0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW),
		tg_with_stack(TG_SC(0, 1, VMT_OP_MMAP, R1, R1, PAGE, LX_PROT_NONE, PRIV_ANON_FIXED,
				    FD_NONE, 0), 0),
		TG_SC(0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW),
		tg_with_stack(TG_SC(0, 1, VMT_OP_MMAP, R1, R1, PAGE, LX_PROT_NONE, PRIV_ANON_FIXED,
				    FD_NONE, 0), 0),
		TG_SC(0, 1, VMT_OP_MUNMAP, 0, R1, PAGE),
		tg_ev_string(0, "/usr/lib/libc.so.6"),
		tg_ev_string(1, "__mmap64"),
		tg_ev_string(2, "/usr/bin/app"),
		tg_ev_string(3, "old_free"),
		tg_ev_symbol(ips[0], 0, 1, 0x13),
		tg_ev_symbol(ips[1], 2, 3, 0x20),
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		assert_int_equal(van_rewrite_push(rw, &evs[i], collect, &s), 0);
	assert_int_equal(van_rewrite_finish(rw, collect, &s), 0);
	const struct van_rewrite_counts *c = van_rewrite_counts(rw);
	const struct van_rewrite_count *r = &c->rules[0];
	assert_int_equal(r->applied, 2);
	assert_int_equal(r->removed, 1);
	assert_int_equal(r->nsites, 1);
	assert_string_equal(r->sites[0].site, "old_free (app)");
	assert_int_equal(r->sites[0].calls, 2);
	assert_int_equal(r->sites_rest, 0);
	/* the reservation had no MAP_NORESERVE: mprotect(RW) charged it */
	assert_non_null(r->note);
	assert_non_null(strstr(r->note, "dropped a commit charge"));
	assert_int_equal(c->in.calls, 6);
	assert_int_equal(c->out.calls, 5);
	assert_int_equal(c->in.write_locked, 6);
	assert_int_equal(c->out.write_locked, 3); /* madvise(MADV_DONTNEED) reads */
	assert_int_equal(c->in.vma_changes, 6);
	assert_int_equal(c->out.vma_changes, 3);
	van_rewrite_free(rw);

	struct vmt_syscall sc = { .op = VMT_OP_MADVISE, .nargs = 3, .args = { R1, PAGE, LX_MADV_DONTNEED } };
	assert_int_equal(van_sc_write_locked(&sc), 0);
	sc.args[2] = LX_MADV_DONTFORK;
	assert_int_equal(van_sc_write_locked(&sc), 1);
	assert_int_equal(van_op_write_locked(VMT_OP_MADVISE), -1);
	assert_int_equal(van_op_write_locked(VMT_OP_MPROTECT), 1);
	assert_int_equal(van_op_write_locked(VMT_OP_MINCORE), 0);
}

/* Too many events behind a held free: the free is decided early (kept as
 * recorded), counted as an overflow; nothing is lost or reordered. */
static void test_stream_overflow(void **state)
{
	struct sink s = { 0 };
	struct vmt_event ev;
	van_rewrite *rw = pnf_held_free(&s);
	const int many = 200000;
	for (int i = 0; i < many; i++) {
		ev = tg_ev_fault(0, 2, R2, 0, 0);
		assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), 0);
	}
	ev = TG_SC(0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), 0);
	assert_int_equal(van_rewrite_finish(rw, collect, &s), 0);
	const struct van_rewrite_counts *c = van_rewrite_counts(rw);
	assert_int_equal(c->overflows, 1);
	assert_int_equal(c->rules[0].applied, 0);
	assert_true(c->max_held > 100000 && c->max_held <= 140000);
	assert_int_equal(s.n, 3 + many + 1);
	assert_int_equal(c->events_out, 3 + many + 1);
	assert_string_equal(s.text[2], "t1 mmap(0x100000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000");
	assert_string_equal(s.text[3], "t2 fault(0x200000, unknown, ip=0)");
	van_rewrite_free(rw);
}

/* An emit error stops the rewrite and sticks. */
static void test_stream_emit_error(void **state)
{
	char err[128];
	van_rewrite *rw = van_rewrite_new("mlock-onfault", err, sizeof(err));
	assert_non_null(rw);
	struct sink s = { .fail_at = 2 };
	struct vmt_event ev = TG_SC(0, 1, VMT_OP_MMAP, R1, 0, PAGE, RW, PRIV_ANON | LX_MAP_LOCKED,
				    FD_NONE, 0);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), -EIO);
	assert_int_equal(s.n, 1);
	ev = TG_SC(0, 1, VMT_OP_MUNMAP, 0, R1, PAGE);
	assert_int_equal(van_rewrite_push(rw, &ev, collect, &s), -EIO);
	assert_int_equal(van_rewrite_finish(rw, collect, &s), -EIO);
	van_rewrite_free(rw);
	van_rewrite_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_lists),
		cmocka_unit_test(test_stream_deep_copy),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_stream_overflow),
		cmocka_unit_test(test_stream_emit_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
