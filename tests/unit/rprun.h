/*
 * rprun.h - the replay tests' part of the unit-test toolkit, on top of
 * tgen.h (which writes their traces): replays of a trace file with checks,
 * the synthetic process a replayed trace starts with (rr_begin: a binary,
 * a heap at HEAP, a stack) and the addresses its mappings are recorded at
 * (A to E).  Apart from tgen.h because it needs libvmreplay.
 */
#ifndef VMT_RPRUN_H
#define VMT_RPRUN_H

#include "model.h"
#include "replay.h"
#include "tgen.h"

#define A 0x7f1000000000ull /* recorded mapping addresses */
#define B 0x7f2000000000ull
#define C 0x7f3000000000ull
#define D 0x7f4000000000ull
#define E 0x7f5000000000ull
#define HEAP 0x555500000000ull /* rr_begin's heap */

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
/* A new trace (tg_trace_file) with the start of every synthetic process:
 * process 0 with thread 0, its binary, heap and stack (a MAPS). */
void rr_begin(struct tg_trace *t);
/* The end of a one-process trace: its main thread exits, the trace is
 * finished (tg_finish). */
void rr_finish(struct tg_trace *t);
/* The seconds of alarm() that turn a replay that hangs into a failure:
 * long enough for a loaded machine whose faults are slow (a replay that
 * is only slow must never fail). */
#define RR_HANG_S 600

/* A teardown: an assertion that failed under alarm() left the alarm set;
 * it must not kill a later test. */
int rr_cancel_alarm(void **state);

#endif
