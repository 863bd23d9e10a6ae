/*
 * vmreplay - re-execute a vmrec trace and measure it (vmreplay(1)).
 *
 * Parses options and dispatches to libvmreplay (replay.h).
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

static const char usage_text[] =
"usage: vmreplay TRACE [OPTION...]\n"
"Re-execute the memory-management calls of a vmrec trace on this machine, with\n"
"one replay thread per recorded thread and one replay process per recorded\n"
"process, and measure faults, context switches, per-op latency and divergences.\n"
"\n"
"  --rewrite[=RULES]   replay the trace as rewritten by RULES (comma-separated,\n"
"                      applied in order; default " VMT_REWRITE_DEFAULT "), and print how\n"
"                      often each rule applied\n"
"  --compare[=RULES]   replay the trace as recorded and as rewritten by RULES\n"
"                      alternately (A B A B ..., --repeat times, default 5) and\n"
"                      print one table: each metric's two medians, their ratio,\n"
"                      each side's min-max and whether the ranges are apart\n"
"  --order=resource|strict|free\n"
"                      resource (default): ops on overlapping ranges keep their\n"
"                      recorded order across threads, others run concurrently;\n"
"                      strict: the recorded total order; free: per-thread order\n"
"  --placement=kernel|exact\n"
"                      kernel (default): this kernel places new mappings;\n"
"                      exact: at the recorded addresses where free\n"
"  --speed=max|FACTOR  max (default): no pauses; FACTOR: keep the recorded gaps\n"
"                      between ops, divided by FACTOR\n"
"  --scale=K           run K copies of the trace at once (default 1)\n"
"  --repeat=N          replay N times; report each run and the median\n"
"                      (with --compare: N runs of each side)\n"
"  --json=FILE         also write the results as JSON to FILE (with --compare:\n"
"                      keys baseline, rewritten, rules and ratio)\n"
"  --files=scratch|original\n"
"                      scratch (default): file mappings map sparse scratch files\n"
"                      of the recorded size; original: the recorded file,\n"
"                      read-only, when it exists with the recorded size\n"
"  --max-memory=SIZE   refuse traces needing more (bytes; suffixes K M G T;\n"
"                      default: half of physical memory)\n"
"  --progress          show progress on standard error (loading, then each run),\n"
"                      also when it is not a terminal\n"
"  --no-progress       never show progress (default: shown on a terminal,\n"
"                      unless -q)\n"
"  -q, --quiet         print only the totals line\n"
"  -h, --help          this text\n"
"      --version       print the version\n"
"\n"
"Exit status: 0 replayed (divergences are reported, not an error); 1 the replay\n"
"failed; 2 usage error or a trace that cannot be replayed.\n"
"\n"
"Rewrite rules:\n";

/* The rules come from the engine, so --help cannot fall out of step. */
static int help(void)
{
	size_t n;
	const struct vmt_rewrite_rule_info *r = vmt_rewrite_rules(&n);
	fputs(usage_text, stdout);
	for (size_t i = 0; i < n; i++)
		printf("  %-18s%s\n", r[i].name, r[i].summary);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}

static const char *prog = "vmreplay";

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
	exit(2);
}

static int parse_u64(const char *s, uint64_t *out, int sizes)
{
	char *end;
	if (!*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (sizes && *end) {
		int shift = 0;
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return -1;
		}
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
		if (v > (UINT64_MAX >> shift))
			return -1;
		v <<= shift;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

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
	enum { OPT_REWRITE = 256, OPT_COMPARE, OPT_PROGRESS, OPT_NO_PROGRESS };
	static const struct option longopts[] = {
		{"order", required_argument, NULL, 'o'},
		{"placement", required_argument, NULL, 'p'},
		{"speed", required_argument, NULL, 's'},
		{"scale", required_argument, NULL, 'k'},
		{"repeat", required_argument, NULL, 'r'},
		{"json", required_argument, NULL, 'j'},
		{"files", required_argument, NULL, 'f'},
		{"max-memory", required_argument, NULL, 'm'},
		{"rewrite", optional_argument, NULL, OPT_REWRITE},
		{"compare", optional_argument, NULL, OPT_COMPARE},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct rp_options o;
	const char *json = NULL, *rules = NULL;
	uint64_t repeat = 0, v;
	int quiet = 0, c, mode = 0; /* 0, OPT_REWRITE or OPT_COMPARE */
	int progress = -1;	    /* -1: on a terminal, unless -q */
	char msg[512];

	rp_options_default(&o);
	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!strcmp(optarg, "resource"))
				o.order = RP_ORDER_RESOURCE;
			else if (!strcmp(optarg, "strict"))
				o.order = RP_ORDER_STRICT;
			else if (!strcmp(optarg, "free"))
				o.order = RP_ORDER_FREE;
			else
				usage_error("--order: '%s' is not resource, strict or free", optarg);
			break;
		case 'p':
			if (!strcmp(optarg, "kernel"))
				o.placement = RP_PLACE_KERNEL;
			else if (!strcmp(optarg, "exact"))
				o.placement = RP_PLACE_EXACT;
			else
				usage_error("--placement: '%s' is not kernel or exact", optarg);
			break;
		case 's':
			if (!strcmp(optarg, "max")) {
				o.speed = 0;
			} else {
				char *end;
				errno = 0;
				double d = strtod(optarg, &end);
				if (errno || *end || !(d > 0) || d > 1e9)
					usage_error("--speed: '%s' is not max or a positive factor", optarg);
				o.speed = d;
			}
			break;
		case 'k':
			if (parse_u64(optarg, &v, 0) || v < 1 || v > 1024)
				usage_error("--scale: '%s' is not a number from 1 to 1024", optarg);
			o.scale = (uint32_t)v;
			break;
		case 'r':
			if (parse_u64(optarg, &v, 0) || v < 1 || v > 1000)
				usage_error("--repeat: '%s' is not a number from 1 to 1000", optarg);
			repeat = v;
			break;
		case 'j':
			json = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "scratch"))
				o.files = RP_FILES_SCRATCH;
			else if (!strcmp(optarg, "original"))
				o.files = RP_FILES_ORIGINAL;
			else
				usage_error("--files: '%s' is not scratch or original", optarg);
			break;
		case 'm':
			if (parse_u64(optarg, &v, 1) || v == 0)
				usage_error("--max-memory: '%s' is not a size", optarg);
			o.max_memory = v;
			break;
		case OPT_REWRITE:
		case OPT_COMPARE:
			/* Both at once would be ambiguous (compare the rewritten
			 * trace with what?): --compare=RULES already replays the
			 * rewritten side. */
			if (mode && mode != c)
				usage_error("--rewrite and --compare cannot be combined;"
					    " --compare=RULES replays the trace rewritten by RULES"
					    " against the original");
			mode = c;
			rules = optarg && *optarg ? optarg : VMT_REWRITE_DEFAULT;
			if (vmt_rewrite_check(rules, msg, sizeof(msg)) < 0)
				usage_error("--%s: %s", c == OPT_REWRITE ? "rewrite" : "compare", msg);
			break;
		case OPT_PROGRESS:
		case OPT_NO_PROGRESS:
			progress = c == OPT_PROGRESS;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			return help();
		case 'V':
			printf("vmreplay %s\n", VMREPLAY_VERSION);
			return fflush(stdout) || ferror(stdout) ? 1 : 0;
		default:
			fprintf(stderr, "Try '%s --help' for more information.\n", prog);
			return 2;
		}
	}
	if (optind >= argc)
		usage_error("no trace given");
	if (optind + 1 < argc)
		usage_error("unexpected argument '%s'", argv[optind + 1]);
	const char *clk = getenv("VMREPLAY_CLOCK");
	if (clk && *clk && strcmp(clk, "monotonic") != 0)
		usage_error("VMREPLAY_CLOCK: '%s' is not monotonic", clk);
	const char *path = argv[optind];
	if (!repeat)
		repeat = mode == OPT_COMPARE ? 5 : 1;

	if (progress < 0)
		progress = !quiet && isatty(2);
	if (progress) {
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
	if (mode != OPT_REWRITE && rp_trace_load(path, &o, &t, msg, sizeof(msg)) < 0) {
		progress_clear();
		fprintf(stderr, "%s: '%s': %s\n", prog, path, msg);
		return 2;
	}
	if (mode) {
		int input = 1;
		progress_phase();
		int r = rp_load_rewritten(path, rules, &o, &rew, &info, &input, msg, sizeof(msg));
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
	if (mode == OPT_COMPARE)
		rc = compare(path, t, rew, &o, &info, (unsigned)repeat, json, jf, quiet);
	else if (mode == OPT_REWRITE)
		rc = replay(path, rew, &o, &info, (unsigned)repeat, json, jf, quiet);
	else
		rc = replay(path, t, &o, NULL, (unsigned)repeat, json, jf, quiet);
	rp_trace_free(t);
	rp_trace_free(rew);
	return rc;
}
