/*
 * vmreplay - re-execute a vmrec trace and measure it (vmreplay(1)).
 *
 * Shows progress and dispatches to libvmreplay (replay.h), which also
 * parses the command line (rp_parse_args); with --kernel, to the replay
 * in a guest (vm.h).  Started as a guest's /init, it is that init.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
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
#include "vm.h"

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
	FILE *f = fopen(json, "we");
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
/* A run that failed: a trace found bad as it was loaded on (a long
 * trace is loaded as it is replayed) is bad input, as at the start. */
static int run_failed(const char *path, int r, const char *msg)
{
	if (r <= VMT_E_TRUNC && r >= VMT_E_STATE) {
		fprintf(stderr, "%s: '%s': %s\n", prog, path, msg);
		return 2;
	}
	fprintf(stderr, "%s: '%s': replay failed: %s\n", prog, path, msg);
	return 1;
}

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
			drop_json(jf, json);
			for (unsigned k = 0; k < i; k++)
				rp_run_result_free(&runs[k]);
			free(runs);
			return run_failed(path, r, msg);
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
		drop_json(jf, json);
		return run_failed(path, r, msg);
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

/* ---- --kernel: the replay in a guest --------------------------------- */

static struct {
	const char *image;
	unsigned cpus;
	uint64_t memory;
	int quiet;
} vm_state;

static void vm_event(void *arg, const struct rp_vm_status *s)
{
	if (s->what == RP_VM_OUTPUT) {
		progress_clear();
	} else if (s->what == RP_VM_BOOTING && arg) {
		uint64_t now = vmt_now_ns();
		if (s->elapsed_ns < 500000000u || now - prog_state.last < 250000000u)
			return;
		prog_state.last = now;
		const char *base = strrchr(vm_state.image, '/');
		fprintf(stderr, "\r%s: booting '%s' (%s, %u CPU%s): %.1f s\033[K", prog,
			base ? base + 1 : vm_state.image, s->accel == RP_VM_KVM ? "kvm" : "tcg",
			vm_state.cpus, vm_state.cpus == 1 ? "" : "s", (double)s->elapsed_ns / 1e9);
		fflush(stderr);
		progress_shown = 1;
	} else if (s->what == RP_VM_RETRY) {
		progress_clear();
		if (!vm_state.quiet)
			fprintf(stderr, "%s: kvm: the guest did not boot in %.0f s; retrying with tcg\n",
				prog, (double)s->elapsed_ns / 1e9);
	} else if (s->what == RP_VM_UP) {
		progress_clear();
		if (vm_state.quiet)
			return;
		uint64_t m = vm_state.memory;
		printf("guest: Linux %s, %u CPU%s, %" PRIu64 "%s memory, qemu %s%s\n", s->release,
		       s->cpus, s->cpus == 1 ? "" : "s", m % (1 << 30) ? m >> 20 : m >> 30,
		       m % (1 << 30) ? "M" : "G",
		       s->accel == RP_VM_KVM ? "kvm" : "tcg",
		       s->accel == RP_VM_KVM ? ""
					     : " (emulated: compare counts and ratios, not times)");
		fflush(stdout);
	}
}

static int in_guest(const struct rp_args *a)
{
	char msg[1024], guest[4096], buf[8192];
	char *gargv[64];
	if (rp_vm_find_guest(getenv("VMREPLAY_STATIC"), guest, sizeof(guest), msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s: --kernel: %s\n", prog, msg);
		return 1;
	}
	int show = a->progress < 0 ? !a->quiet && isatty(2) : a->progress;
	if (rp_guest_args(a, a->trace, a->json ? RP_VM_GUEST_JSON : NULL, show, gargv,
			  sizeof(gargv) / sizeof(gargv[0]), buf, sizeof(buf)) < 0) {
		fprintf(stderr, "%s: the command line is too long for the guest\n", prog);
		return 2;
	}
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned cpus = a->vm_cpus ? a->vm_cpus
		      : online < 1 ? 1 : online > RP_VM_CPUS_MAX ? RP_VM_CPUS_MAX : (unsigned)online;
	const char *qemu = getenv("VMREPLAY_QEMU");
	int console = -1;
	FILE *jf = a->json ? open_json(a->json) : NULL;
	if (a->vm_console) {
		console = open(a->vm_console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (console < 0) {
			fprintf(stderr, "%s: cannot write '%s': %s\n", prog, a->vm_console,
				strerror(errno));
			drop_json(jf, a->json);
			return 2;
		}
	}
	vm_state.image = a->kernel;
	vm_state.cpus = cpus;
	vm_state.memory = a->vm_memory;
	vm_state.quiet = a->quiet;
	struct rp_vm_config c = {
		.image = a->kernel, .qemu = qemu && *qemu ? qemu : "qemu-system-x86_64",
		.guest = guest, .trace = a->trace, .argv = gargv, .clock = NULL,
		.cpus = cpus, .memory = a->vm_memory, .accel = a->vm_accel,
		.timeout_s = a->vm_timeout, .out_fd = 1, .err_fd = 2, .console_fd = console,
		.event = vm_event, .event_arg = show ? &vm_state : NULL,
	};
	if (a->o.clock == RP_CLOCK_MONOTONIC)
		c.clock = "monotonic";
	fflush(stdout);
	struct rp_vm_result r;
	int rc = rp_vm_run(&c, &r, msg, sizeof(msg));
	progress_clear();
	if (console >= 0)
		close(console);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", prog, msg);
		drop_json(jf, a->json);
		rp_vm_result_free(&r);
		return r.input_error ? 2 : 1;
	}
	int status = r.status;
	if (status >= 128) {
		fprintf(stderr, "%s: the replay in the guest was killed by signal %d\n", prog,
			status - 128);
		status = 1;
	} else if (status > 2) {
		fprintf(stderr, "%s: the guest could not start the replay (status %d)\n", prog,
			status);
		status = 1;
	}
	if (jf && status == 0) {
		struct vmt_buf out = { 0 };
		int jr = r.json ? rp_vm_json(&c, &r, &out) : -ENOENT;
		if (jr < 0) {
			fprintf(stderr, "%s: the guest's results came back %s\n", prog,
				jr == -ENOMEM ? "too large for memory" : "without their JSON");
			vmt_buf_free(&out);
			drop_json(jf, a->json);
			rp_vm_result_free(&r);
			return 1;
		}
		status = close_json(jf, a->json, rp_json_emit(jf, &out));
	} else if (jf) {
		drop_json(jf, a->json);
	}
	rp_vm_result_free(&r);
	return status;
}

int main(int argc, char **argv)
{
	struct rp_args a;
	char msg[512];

	if (rp_guest_is_init(argc, argv))
		return rp_guest_main();

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
	if (a.kernel) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		return in_guest(&a);
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

	if (o.truncated == RP_TRUNC_REPLAY && a.mode != RP_MODE_REPLAY) {
		/* the rules read the whole trace, footer included */
		fprintf(stderr, "%s: --truncated=replay cannot be combined with --rewrite or"
			" --compare\nTry '%s --help' for more information.\n", prog, prog);
		return 2;
	}
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
