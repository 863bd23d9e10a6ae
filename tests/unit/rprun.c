/*
 * rprun.c - see rprun.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>
#include "rprun.h"

int rr_expect_divergences;

static void show(const struct rp_run_result *r)
{
	if (rr_expect_divergences)
		return;
	for (uint32_t i = 0; i < r->ndiv_shown; i++)
		fprintf(stderr, "divergence: event %llu: %s; replayed %lld\n",
			(unsigned long long)r->div[i].event, r->div[i].text,
			(long long)r->div[i].replayed);
}

static rp_trace *load_run(const char *path, const struct rp_options *o, struct rp_run_result *r)
{
	char msg[512];
	rp_trace *t;
	int rc = rp_trace_load(path, o, &t, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "load: %s\n", msg);
	assert_int_equal(rc, 0);
	rc = rp_run(t, o, r, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "run: %s\n", msg);
	assert_int_equal(rc, 0);
	return t;
}

/* What a replay loaded as it runs must have replayed as the whole load
 * did (the faults and times are the machine's). */
static void same_run(const struct rp_run_result *a, const struct rp_run_result *b)
{
	assert_int_equal(a->events, b->events);
	assert_int_equal(a->divergences, b->divergences);
	assert_int_equal(a->touched_pages, b->touched_pages);
	assert_int_equal(a->touch_faults, b->touch_faults);
	assert_int_equal(a->skipped, b->skipped);
	for (unsigned op = 0; op < VMT_OP__COUNT; op++) {
		assert_int_equal(a->ops[op].count, b->ops[op].count);
		assert_int_equal(a->ops[op].errors, b->ops[op].errors);
	}
	assert_int_equal(a->ndiv_shown, b->ndiv_shown);
	for (uint32_t i = 0; i < a->ndiv_shown; i++) {
		assert_int_equal(a->div[i].event, b->div[i].event);
		assert_string_equal(a->div[i].text, b->div[i].text);
	}
}

rp_trace *rr_replay(const char *path, const struct rp_options *o, struct rp_run_result *r)
{
	rp_trace *t = load_run(path, o, r);
	show(r);
	/* The same trace loaded as it runs (not with --order=free, whose
	 * touches race with other threads' ops by design): a window of one
	 * byte streams all but the first block, and the load waits for the
	 * run at each thread's third. */
	if (!o->window && !o->speed && o->order != RP_ORDER_FREE) {
		struct rp_options so = *o;
		struct rp_run_result sr;
		so.window = 1;
		rp_trace *st = load_run(path, &so, &sr);
		same_run(r, &sr);
		rp_run_result_free(&sr);
		rp_trace_free(st);
	}
	return t;
}

void rr_opts(struct rp_options *o)
{
	rp_options_default(o);
	o->max_memory = 1ull << 30;
}

rp_trace *rr_replay_clean(const char *path, const struct rp_options *o, struct rp_run_result *r)
{
	rp_trace *t = rr_replay(path, o, r);
	assert_int_equal(r->divergences, 0);
	return t;
}

void rr_release(struct rp_run_result *r, rp_trace *tr)
{
	rp_run_result_free(r);
	rp_trace_free(tr);
}

void rr_begin(struct tg_trace *t)
{
	static const struct tg_map m[] = {
		{0x555400000000ull, 0x555400002000ull, VMT_PROT_R, "/usr/bin/app"},
		{0x555400002000ull, 0x555400004000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app"},
		{0x555400004000ull, 0x555400005000ull, VMT_PROT_R | VMT_PROT_W, "/usr/bin/app"},
		{HEAP, HEAP + 4 * PAGE, VMT_PROT_R | VMT_PROT_W, "[heap]"},
		{0x7ffd00000000ull, 0x7ffd00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
		{0x7ffd00030000ull, 0x7ffd00032000ull, VMT_PROT_R | VMT_PROT_X, "[vdso]"},
	};
	tg_trace_file(t);
	tg_proc(t, 0, 0, VMT_NONE, VMT_NONE);
	tg_maps(t, 0, 0, m, sizeof(m) / sizeof(m[0]));
}

void rr_finish(struct tg_trace *t)
{
	tg_thread_exit(t, 0, 0);
	tg_finish(t);
}

int rr_cancel_alarm(void **state)
{
	(void)state;
	alarm(0);
	return 0;
}
