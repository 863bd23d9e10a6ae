/*
 * vmreplay - re-execute a vmrec trace and measure it (vmreplay(1)).
 *
 * Shows progress and dispatches to libvmreplay (replay.h), which also
 * parses the command line (rp_parse_args).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "compare.h"
#include "replay.h"

#define VMREPLAY_VERSION "0.1"

/* The rules come from the engine, so --help cannot fall out of step. */
static int help(void)
{
	size_t n;
	const struct vmt_rewrite_rule_info *r = vmt_rewrite_rules(&n);
	fputs(rp_usage(), stdout);
	for (size_t i = 0; i < n; i++)
		printf("  %-18s%s\n", r[i].name, r[i].summary);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}

static const char *prog = "vmreplay";

/* ---- progress (standard error, one line rewritten in place) ---------- */

static struct {
	const char *name;   /* the trace */
	unsigned runs;	    /* runs to come (--repeat; with --compare, of both sides) */
	int compare;	    /* runs alternate baseline, rewritten */
	unsigned run;	    /* runs started so far */
	uint64_t phase_start, last;
} prog_state;
static volatile sig_atomic_t progress_shown; /* read by on_signal */

/* A new phase (a load, a run): shown only once it has lasted half a
 * second, then updated at most 4 times a second. */
static void progress_phase(void)
{
	prog_state.phase_start = vmt_now_ns();
	prog_state.last = 0;
}

static void show_progress(void *arg, int what, uint64_t done, uint64_t total)
{
	char label[64] = "";
	if (what == RP_PROGRESS_RUN && done == 0) { /* a new run */
		prog_state.run++;
		progress_phase();
	}
	if (what == RP_PROGRESS_RUN && prog_state.compare)
		snprintf(label, sizeof(label), " %s %u of %u",
			 prog_state.run % 2 ? "baseline" : "rewritten", (prog_state.run + 1) / 2,
			 prog_state.runs / 2);
	else if (what == RP_PROGRESS_RUN && prog_state.runs > 1)
		snprintf(label, sizeof(label), " %u of %u", prog_state.run, prog_state.runs);
	uint64_t now = vmt_now_ns();
	if (now - prog_state.phase_start < 500000000u || now - prog_state.last < 250000000u)
		return;
	prog_state.last = now;
	if (what == RP_PROGRESS_LOAD && total)
		fprintf(stderr, "\r%s: loading '%s': %u%%\033[K", prog, prog_state.name,
			(unsigned)(done < total ? done * 100 / total : 100));
	else if (what == RP_PROGRESS_LOAD)
		fprintf(stderr, "\r%s: loading '%s': %.1f MiB\033[K", prog, prog_state.name,
			(double)done / (1 << 20));
	else
		fprintf(stderr, "\r%s: replaying%s: %.1f s (recorded: %.1f s)\033[K", prog, label,
			(double)done / 1e9, (double)total / 1e9);
	fflush(stderr);
	progress_shown = 1;
}

/* Erase the progress line before anything else is printed. */
static void progress_clear(void)
{
	if (progress_shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		progress_shown = 0;
	}
}

static void on_signal(int sig)
{
	if (progress_shown) {
		ssize_t w = write(2, "\r\033[K", 4);
		(void)w; /* nothing to do about a failure here */
	}
	rp_abort_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void write_error(const char *what)
{
	fprintf(stderr, "%s: write error on %s\n", prog, what);
}

/* Open --json's FILE before replaying, so a bad path fails in a second,
 * not after minutes of replay. */
static FILE *open_json(const char *json)
{
	FILE *f = fopen(json, "w");
	if (!f) {
		fprintf(stderr, "%s: cannot write '%s': %s\n", prog, json, strerror(errno));
		exit(2);
	}
	return f;
}

/* A run failed: leave no empty or partial JSON behind. */
static void drop_json(FILE *f, const char *json)
{
	if (f) {
		fclose(f);
		unlink(json);
	}
}

static int close_json(FILE *f, const char *json, int wr)
{
	if (fclose(f) || wr < 0) {
		fprintf(stderr, "%s: write error on '%s'\n", prog, json);
		return 1;
	}
	return 0;
}

/* Plain replay, or (info != NULL) replay of the rewritten trace. */
static int replay(const char *path, rp_trace *t, const struct rp_options *o,
		  const struct rp_rewrite_info *info, unsigned repeat, const char *json,
		  FILE *jf, int quiet)
{
	char msg[512];
	struct rp_run_result *runs = calloc(repeat, sizeof(*runs)), med;
	if (!runs) {
		fprintf(stderr, "%s: out of memory\n", prog);
		drop_json(jf, json);
		return 1;
	}
	prog_state.runs = repeat;
	for (unsigned i = 0; i < repeat; i++) {
		int r = rp_run(t, o, &runs[i], msg, sizeof(msg));
		progress_clear();
		if (r < 0) {
			fprintf(stderr, "%s: '%s': replay failed: %s\n", prog, path, msg);
			drop_json(jf, json);
			return 1;
		}
	}
	if (rp_run_median(runs, repeat, &med) < 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		drop_json(jf, json);
		return 1;
	}
	int rc = 0;
	if ((info && rp_rewrite_report_rules(stdout, info) < 0) ||
	    rp_report_text(stdout, t, o, runs, repeat, &med, quiet) < 0 || fflush(stdout) ||
	    ferror(stdout)) {
		write_error("stdout");
		rc = 1;
	}
	if (jf) {
		int wr = info ? rp_rewrite_report_json(jf, t, o, info, runs, repeat, &med)
			      : rp_report_json(jf, t, o, runs, repeat, &med);
		rc |= close_json(jf, json, wr);
	}
	for (unsigned i = 0; i < repeat; i++)
		rp_run_result_free(&runs[i]);
	rp_run_result_free(&med);
	free(runs);
	return rc;
}

static int compare(const char *path, rp_trace *base, rp_trace *rew, const struct rp_options *o,
		   const struct rp_rewrite_info *info, unsigned repeat, const char *json,
		   FILE *jf, int quiet)
{
	char msg[512];
	struct rp_compare c;
	prog_state.runs = 2 * repeat;
	prog_state.compare = 1;
	int r = rp_compare_run(base, rew, o, repeat, &c, msg, sizeof(msg));
	progress_clear();
	if (r < 0) {
		fprintf(stderr, "%s: '%s': replay failed: %s\n", prog, path, msg);
		drop_json(jf, json);
		return 1;
	}
	int rc = 0;
	if (rp_compare_report_text(stdout, base, rew, o, info, &c, quiet) < 0 || fflush(stdout) ||
	    ferror(stdout)) {
		write_error("stdout");
		rc = 1;
	}
	if (jf)
		rc |= close_json(jf, json, rp_compare_report_json(jf, base, o, info, &c));
	rp_compare_free(&c);
	return rc;
}

int main(int argc, char **argv)
{
	struct rp_args a;
	char msg[512];

	if (rp_parse_args(argc, argv, getenv("VMREPLAY_CLOCK"), &a, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n", prog, msg, prog);
		return 2;
	}
	if (a.action == RP_ACTION_HELP)
		return help();
	if (a.action == RP_ACTION_VERSION) {
		printf("vmreplay %s\n", VMREPLAY_VERSION);
		return fflush(stdout) || ferror(stdout) ? 1 : 0;
	}
	const char *path = a.trace, *json = a.json;
	struct rp_options o = a.o;
	int quiet = a.quiet;
	if (a.progress < 0 ? !quiet && isatty(2) : a.progress) {
		o.progress = show_progress;
		prog_state.name = path;
	}

	/* (From here, on a signal: erase the progress line, end the run.) */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);

	rp_trace *t = NULL, *rew = NULL;
	struct rp_rewrite_info info;
	progress_phase();
	if (a.mode != RP_MODE_REWRITE && rp_trace_load(path, &o, &t, msg, sizeof(msg)) < 0) {
		progress_clear();
		fprintf(stderr, "%s: '%s': %s\n", prog, path, msg);
		return 2;
	}
	if (a.mode != RP_MODE_REPLAY) {
		int input = 1;
		progress_phase();
		int r = rp_load_rewritten(path, a.rules, &o, &rew, &info, &input, msg, sizeof(msg));
		progress_clear();
		if (r < 0) {
			fprintf(stderr, "%s: '%s': %s\n", prog, path, msg);
			rp_trace_free(t);
			return input ? 2 : 1;
		}
	}
	progress_clear();
	FILE *jf = json ? open_json(json) : NULL;

	int rc;
	if (a.mode == RP_MODE_COMPARE)
		rc = compare(path, t, rew, &o, &info, a.repeat, json, jf, quiet);
	else if (a.mode == RP_MODE_REWRITE)
		rc = replay(path, rew, &o, &info, a.repeat, json, jf, quiet);
	else
		rc = replay(path, t, &o, NULL, a.repeat, json, jf, quiet);
	rp_trace_free(t);
	rp_trace_free(rew);
	return rc;
}
