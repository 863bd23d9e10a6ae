/*
 * rprun.h - helpers of the replayer's unit tests that run replays of
 * synthetic traces (test_replay_exec.c, test_replay_threads.c): load and
 * run with checks, the start and end of a one-process trace, and the
 * short names the tests write traces with.
 */
#ifndef VMT_RPRUN_H
#define VMT_RPRUN_H

#include <sys/mman.h>
#include "linux_abi.h"
#include "model.h"
#include "replay.h"
#include "rptw.h"


#define P TW_P
#define N VMT_NONE
#define A 0x7f1000000000ull /* recorded mapping addresses */
#define B 0x7f2000000000ull
#define C 0x7f3000000000ull
#define D 0x7f4000000000ull
#define E 0x7f5000000000ull
#define HEAP 0x555500000000ull
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define RW (PROT_READ | PROT_WRITE)

#define SC(t, th, op, res, ...) tw_sc(t, 0, th, VMT_OP_##op, res, __VA_ARGS__)

/* Set while a test expects divergences: they are not printed. */
extern int rr_expect_divergences;

/* Options for tests: the defaults, with --max-memory 1 GiB. */
void rr_opts(struct rp_options *o);
/* Load and replay path with o; return the loaded trace (for checks). */
rp_trace *rr_replay(const char *path, const struct rp_options *o, struct rp_run_result *r);
/* rr_replay(), and check that the replay did not diverge. */
rp_trace *rr_replay_clean(const char *path, const struct rp_options *o, struct rp_run_result *r);
/* Free a replay's result and its loaded trace. */
void rr_release(struct rp_run_result *r, rp_trace *tr);
/* A new trace (tw_open) with the start of every synthetic process: a
 * binary, a heap, a stack. */
void rr_begin(struct tw *t);
/* The end of a one-process trace: its main thread exits, the trace is
 * closed. */
void rr_finish(struct tw *t);
/* A teardown: an assertion that failed under alarm() left the alarm set;
 * it must not kill a later test. */
int rr_cancel_alarm(void **state);

#endif
