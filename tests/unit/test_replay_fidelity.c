/*
 * test_replay_fidelity.c - the fidelity section's arithmetic (fidelity.c),
 * on traces of known counters and made-up replay results: the recorded
 * side is the program's own (the root's launch and the recorder's stops
 * taken off), processes without counters are left out and said to be, the
 * tolerances are those of vmreplay(1), switches are judged at --speed=1
 * only, a process whose faults differ gets a warning naming the kind of
 * mapping where they differ, and a trace without counters says so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "fidelity.h"
#include "rprun.h"
#include "vmtutil.h"

static void counters(struct tg_trace *t, uint32_t proc, uint32_t thread, uint32_t scope,
		     uint64_t minflt, uint64_t nvcsw, uint64_t stops)
{
	struct vmt_event ev = { .kind = VMT_EV_COUNTERS, .thread = thread, .proc = proc };
	ev.u.counters = (struct vmt_counters){ .scope = scope, .minflt = minflt, .majflt = 1,
					       .nvcsw = nvcsw, .nivcsw = 7, .stops = stops };
	tg_put(t, ev);
}

/* Process 0 (root, launched: 30 faults, 2 switches, 1 stop before its
 * exec), threads 0 and 1; process 1 forked, thread 2, whose counters the
 * recorder did not see when `partial`.  Faults recorded: 40 in the heap,
 * 10 anonymous (process 0); 5 anonymous (process 1). */
static void write_trace(struct tg_trace *t, int partial, int with_counters)
{
	static const struct tg_map m[] = {
		{0x555400000000ull, 0x555400002000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app"},
		{HEAP, HEAP + 64 * PAGE, VMT_PROT_R | VMT_PROT_W, "[heap]"},
		{0x7ffd00000000ull, 0x7ffd00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};
	tg_trace_file(t);
	tg_proc(t, 0, 0, VMT_NONE, VMT_NONE);
	if (with_counters)
		counters(t, 0, 0, VMT_CNT_EXEC, 30, 2, 1);
	tg_exec(t, 0, 0, "/usr/bin/app");
	tg_maps(t, 0, 0, m, 3);
	TG_PUT_SC(t, 0, 0, VMT_OP_MMAP, (int64_t)A, 0, 16 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 40; i++)
		tg_fault(t, 0, 0, HEAP + (uint64_t)i * PAGE, VMT_FAULT_WRITE);
	tg_thread(t, 0, 1, 0);
	for (int i = 0; i < 10; i++)
		tg_fault(t, 0, 1, A + (uint64_t)i * PAGE, VMT_FAULT_WRITE);
	TG_PUT_SC(t, 0, 1, VMT_OP_MUNMAP, 0, A, 16 * PAGE);
	if (with_counters)
		counters(t, 0, 1, VMT_CNT_THREAD, 20, 5, 3);
	tg_thread_exit(t, 0, 1);
	tg_proc(t, 1, 2, 0, 0);
	TG_PUT_SC(t, 1, 2, VMT_OP_MMAP, (int64_t)B, 0, 8 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 5; i++)
		tg_fault(t, 1, 2, B + (uint64_t)i * PAGE, VMT_FAULT_WRITE);
	if (with_counters && !partial) {
		counters(t, 1, 2, VMT_CNT_THREAD, 300, 4, 0);
		tg_thread_exit(t, 1, 2);
		counters(t, 1, 2, VMT_CNT_PROCESS, 300, 4, 0);
	} else {
		tg_thread_exit(t, 1, 2);
	}
	tg_proc_exit(t, 1, 2);
	if (with_counters)
		counters(t, 0, 0, VMT_CNT_THREAD, 200, 12, 5);
	tg_thread_exit(t, 0, 0);
	if (with_counters)
		counters(t, 0, 0, VMT_CNT_PROCESS, 220, 17, 8);
	tg_proc_exit(t, 0, 0);
	tg_finish(t);
}

static rp_trace *load(struct tg_trace *t)
{
	struct rp_options o;
	rr_opts(&o);
	char msg[256];
	rp_trace *tr = NULL;
	int rc = rp_trace_load(t->path, &o, &tr, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "load: %s\n", msg);
	assert_int_equal(rc, 0);
	return tr;
}

/* A replay result of threads {rec, proc, minflt, vcs, kind faults by
 * heap, anonymous}. */
static void result(struct rp_run_result *r, struct rp_thread_result *th, uint32_t n,
		   const uint64_t (*v)[6])
{
	memset(r, 0, sizeof(*r));
	memset(th, 0, n * sizeof(*th));
	for (uint32_t i = 0; i < n; i++) {
		th[i].thread = (uint32_t)v[i][0];
		th[i].proc = (uint32_t)v[i][1];
		th[i].minor_faults = v[i][2];
		th[i].major_faults = i == 0 ? 1 : 0;
		th[i].voluntary_cs = v[i][3];
		th[i].involuntary_cs = 7;
		th[i].watched = 1;
		th[i].kind_faults[RP_FK_HEAP] = v[i][4];
		th[i].kind_faults[RP_FK_ANON] = v[i][5];
		th[i].fault_samples = v[i][4] + v[i][5];
	}
	r->threads = th;
	r->nthreads = n;
}

/* A faithful replay of write_trace's: 491 faults against 490. */
static const uint64_t faithful[3][6] = {
	{0, 0, 170, 4, 40, 0}, {1, 0, 20, 2, 0, 10}, {2, 1, 301, 4, 0, 5},
};

/* Most tests start from write_trace's trace with every counter, loaded,
 * the default options and a faithful replay's result. */
struct fx {
	struct tg_trace t;
	rp_trace *tr;
	struct rp_options o;
	struct rp_run_result r;
	struct rp_thread_result th[3];
};

static int fx_setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	write_trace(&x->t, 0, 1);
	x->tr = load(&x->t);
	rr_opts(&x->o);
	result(&x->r, x->th, 3, faithful);
	*state = x;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *x = *state;
	rp_trace_free(x->tr);
	tg_remove(&x->t);
	free(x);
	return 0;
}

static void test_faithful(void **state)
{
	struct fx *x = *state;
	rp_trace *tr = x->tr;
	struct rp_options o = x->o;
	struct rp_run_result r = x->r;
	struct rp_thread_result *th = x->th;
	/* Recorded, the program's own: process 0 220 - 30 = 190 faults
	 * (thread 0 200 - 30 = 170, thread 1 20), process 1 300. */
	struct rp_fidelity f;
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_true(f.have);
	assert_int_equal(f.total.n[RP_FID_MINFLT].recorded, 490);
	assert_int_equal(f.total.n[RP_FID_MINFLT].replay, 491);
	assert_true(f.total.n[RP_FID_MINFLT].judged && f.total.n[RP_FID_MINFLT].ok);
	assert_int_equal(f.procs[0].n[RP_FID_MINFLT].recorded, 190);
	assert_int_equal(f.threads[0].n[RP_FID_MINFLT].recorded, 170);
	assert_int_equal(f.threads[1].n[RP_FID_MINFLT].recorded, 20);
	/* Voluntary switches: less the launch's 2 and the recorder's stops
	 * (8, of which 1 at the launch): 17 - 2 - 7 = 8. */
	assert_int_equal(f.procs[0].n[RP_FID_VCS].recorded, 8);
	assert_int_equal(f.threads[1].n[RP_FID_VCS].recorded, 2);
	/* At --speed=max switches are shown, not judged. */
	assert_false(f.total.n[RP_FID_VCS].judged);
	assert_true(f.ok);
	assert_int_equal(f.nwarn, 0);
	assert_non_null(strstr(f.verdict, "minor faults 1.002"));
	assert_non_null(strstr(f.verdict, "within tolerance"));
	/* The recorded faults by kind, from the trace's FAULT events. */
	assert_int_equal(f.procs[0].rec_kind[RP_FK_HEAP], 40);
	assert_int_equal(f.procs[0].rec_kind[RP_FK_ANON], 10);
	assert_int_equal(f.procs[1].rec_kind[RP_FK_ANON], 5);
	assert_int_equal(f.procs[0].os_pid, 1000);
	rp_fidelity_free(&f);
	/* At --speed=1 they are judged: 4 + 2 + 4 against 8 + 4 is within
	 * 10 switches; with 40 more in the replay it is not. */
	o.speed = 1;
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_true(f.total.n[RP_FID_VCS].judged && f.total.n[RP_FID_VCS].ok);
	rp_fidelity_free(&f);
	th[0].voluntary_cs += 40;
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_true(f.total.n[RP_FID_VCS].judged && !f.total.n[RP_FID_VCS].ok);
	assert_false(f.ok);
	assert_non_null(strstr(f.verdict, "outside tolerance: voluntary cs"));
	rp_fidelity_free(&f);
}

/* The settings line: this machine's memory-management settings where
 * they are not the recording's (the trace header's), none where they
 * are. */
static void test_settings_differ(void **state)
{
	struct fx *x = *state;
	rp_trace *tr = x->tr;
	struct rp_options o = x->o;
	struct rp_run_result r = x->r;
	struct rp_fidelity f;
	char here[512] = "";
	vmt_host_mm_words(here, sizeof(here));
	free(tr->rec_mm);
	tr->rec_mm = strdup(here);
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_string_equal(f.mm, "");
	rp_fidelity_free(&f);
	free(tr->rec_mm);
	tr->rec_mm = strdup("overcommit=7 thp=sometimes nosuchkey=1");
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_non_null(strstr(f.mm, "(recorded 7)"));
	assert_non_null(strstr(f.mm, "thp="));
	assert_non_null(strstr(f.mm, "(recorded sometimes)"));
	assert_null(strstr(f.mm, "nosuchkey"));
	rp_fidelity_free(&f);
}

/* The load line: none for a trace loaded whole; for one loaded as the
 * replay ran, the load's CPU time and, when the threads waited for it,
 * that the replay ran late for it, how long, in text and JSON. */
static void test_load_said(void **state)
{
	struct fx *x = *state;
	rp_trace *tr = x->tr;
	struct rp_options o = x->o;
	struct rp_run_result r = x->r;
	struct rp_fidelity f;
	assert_true(tr->complete);
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_string_equal(f.load, "");
	assert_false(f.streamed || f.late);
	rp_fidelity_free(&f);
	/* loaded as it ran, never waited for */
	tr->streamed = 1;
	tr->window = 8 << 20;
	r.load_cpu_ns = 702100000;
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_true(f.streamed && !f.late);
	assert_non_null(strstr(f.load, "702.1 ms of CPU"));
	assert_non_null(strstr(f.load, "never waited"));
	assert_true(f.ok); /* (said, not judged) */
	rp_fidelity_free(&f);
	/* its threads waited: late, in the line and the JSON */
	r.load_wait_ns = 1765700000;
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_true(f.late);
	assert_non_null(strstr(f.load, "ran late for its load: its threads waited 1765.7 ms"));
	assert_non_null(strstr(f.load, "--window=8.0 MiB"));
	struct vmt_buf b = {0};
	rp_fidelity_json(&b, &f);
	assert_non_null(b.data);
	assert_non_null(strstr(b.data, "\"load\":{\"streamed\":true,\"late\":true,\"wait_ns\":1765700000,"
				    "\"cpu_ns\":702100000,\"text\":\"the replay ran late"));
	free(b.data);
	rp_fidelity_free(&f);
}

static void test_unfaithful_names_kind(void **state)
{
	struct fx *x = *state;
	rp_trace *tr = x->tr;
	struct rp_options o = x->o;
	/* Process 0 replays 140 faults for 190: 50 missing, all in its heap
	 * (its samples: 0 there instead of 40). */
	static const uint64_t v[3][6] = {
		{0, 0, 120, 4, 0, 0}, {1, 0, 20, 2, 0, 10}, {2, 1, 300, 4, 0, 5},
	};
	struct rp_run_result r;
	struct rp_thread_result th[3];
	result(&r, th, 3, v);
	struct rp_fidelity f;
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_false(f.ok);
	assert_false(f.procs[0].n[RP_FID_MINFLT].ok);
	assert_true(f.procs[1].n[RP_FID_MINFLT].ok);
	assert_int_equal(f.nwarn, 1);
	assert_non_null(strstr(f.warn[0], "process 0 (pid 1000, /usr/bin/app)"));
	assert_non_null(strstr(f.warn[0], "in heap mappings"));
	assert_non_null(strstr(f.verdict, "outside tolerance: minor faults"));
	/* The JSON says as much. */
	struct vmt_buf b = {0};
	rp_fidelity_json(&b, &f);
	assert_non_null(strstr(b.data, "\"ok\":false"));
	assert_non_null(strstr(b.data, "\"heap\":{\"replay\":0,\"recorded\":40}"));
	vmt_buf_free(&b);
	rp_fidelity_free(&f);
}

static void test_missing(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	rr_opts(&o);
	static const uint64_t v[3][6] = {
		{0, 0, 170, 4, 40, 0}, {1, 0, 20, 2, 0, 10}, {2, 1, 300, 4, 0, 5},
	};
	struct rp_run_result r;
	struct rp_thread_result th[3];
	result(&r, th, 3, v);
	struct rp_fidelity f;
	/* Process 1's counters were not seen: it is left out of the total. */
	write_trace(&t, 1, 1);
	rp_trace *tr = load(&t);
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_true(f.have);
	assert_int_equal(f.missing, 1);
	assert_false(f.procs[1].n[RP_FID_MINFLT].have);
	assert_int_equal(f.total.n[RP_FID_MINFLT].recorded, 190);
	assert_int_equal(f.total.n[RP_FID_MINFLT].replay, 190);
	rp_fidelity_free(&f);
	rp_trace_free(tr);
	tg_remove(&t);
	/* No counters at all: nothing to compare, and why. */
	write_trace(&t, 0, 0);
	tr = load(&t);
	assert_int_equal(rp_fidelity(tr, &o, &r, &f), 0);
	assert_false(f.have);
	assert_non_null(strstr(f.why_not, "no counters"));
	rp_fidelity_free(&f);
	rp_trace_free(tr);
	tg_remove(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_faithful, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_settings_differ, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_load_said, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_unfaithful_names_kind, fx_setup, fx_teardown),
		cmocka_unit_test(test_missing),
	};
	return cmocka_run_group_tests_name("replay_fidelity", tests, NULL, NULL);
}
