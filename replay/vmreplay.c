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
#include <pthread.h>
#include <sys/stat.h>
#include "compare.h"
#include "matrix.h"
#include "replay.h"
#include "vm.h"
#include "vmtutil.h"

static const char *prog = "vmreplay";

#define VMREPLAY_VERSION "0.1"

/* The rules come from the engine, so --help cannot fall out of step. */
static int help(void)
{
	size_t n;
	const struct van_rewrite_rule_info *r = van_rewrite_rules(&n);
	fputs(rp_usage(), stdout);
	for (size_t i = 0; i < n; i++)
		printf("  %-20s  %s\n", r[i].name, r[i].summary);
	return vmt_stdout_finish(prog, 0, 1);
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

/* A load that ran out of a resource (--max-memory, the machine's memory,
 * an address-space limit): not a bad trace (EXIT STATUS 1, not 2). */
static int resource_error(int r)
{
	return r == -E2BIG || r == -ENOMEM;
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
	if (info)
		rp_rewrite_report_rules(stdout, info);
	rp_report_text(stdout, t, o, runs, repeat, &med, quiet);
	rc = vmt_stdout_finish(prog, 0, 1);
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
	rp_compare_report_text(stdout, base, rew, o, info, &c, quiet);
	rc = vmt_stdout_finish(prog, 0, 1);
	if (jf)
		rc |= close_json(jf, json, rp_compare_report_json(jf, base, rew, o, info, &c));
	rp_compare_free(&c);
	return rc;
}

/* ---- --kernel: the replay in a guest --------------------------------- */

static struct {
	const char *image;
	unsigned cpus;
	uint64_t memory;
	int quiet;
	const struct rp_matrix *m; /* what the guest is set to */
} vm_state;

static void say_settings(FILE *f, const struct rp_matrix *m);

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
		if (vm_state.m)
			say_settings(stdout, vm_state.m);
		fflush(stdout);
	}
}

/* What the guests are set to, for the line before the runs: what
 * differs from the recording said, and the zero page, which no file sets. */
static void say_settings(FILE *f, const struct rp_matrix *m)
{
	char differs[512] = "", a[128], r[128];
	for (size_t k = 0; vmt_mm_key(k); k++) {
		const char *key = vmt_mm_key(k);
		if (!vmt_mm_path(key) || !vmt_options_get(m->recorded, key, r, sizeof(r)))
			continue;
		vmt_options_get(m->asked, key, a, sizeof(a));
		size_t l = strlen(differs);
		if (strcmp(a, r))
			snprintf(differs + l, sizeof(differs) - l, "%s%s=%s", l ? " " : "", key, r);
	}
	fprintf(f, "guest settings: %s", m->asked[0] ? m->asked : "the guest kernel's own");
	if (differs[0])
		fprintf(f, " (recorded: %s)", differs);
	else if (m->recorded[0])
		fputs(" (as recorded)", f);
	if (vmt_options_get(m->recorded, "zeropage", r, sizeof(r)) && !strcmp(r, "0"))
		fputs("; recorded without the zero page (zeropage=0), which no guest here can be"
		      " set to", f);
	fputc('\n', f);
}

/* One --kernel: the guest's output as it comes, as if it ran here. */
static int in_guest(const struct rp_args *a, const struct rp_matrix *m)
{
	char msg[1024], buf[8192];
	char *gargv[64];
	int show = a->progress < 0 ? !a->quiet && isatty(2) : a->progress;
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
	struct rp_vm_config c;
	if (rp_matrix_vm_config(m, 0, a->json ? RP_VM_GUEST_JSON : NULL, show, 1, 2, gargv,
				sizeof(gargv) / sizeof(gargv[0]), buf, sizeof(buf), &c) < 0) {
		fprintf(stderr, "%s: the command line is too long for the guest\n", prog);
		drop_json(jf, a->json);
		return 2;
	}
	c.console_fd = console;
	c.event = vm_event;
	c.event_arg = show ? &vm_state : NULL;
	vm_state.image = a->kernel;
	vm_state.cpus = m->cpus;
	vm_state.memory = m->memory;
	vm_state.quiet = a->quiet;
	vm_state.m = m;
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
	if (r.unset[0])
		fprintf(stderr, "%s: the guest could not set: %s\n", prog, r.unset);
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

/* ---- several kernels: one table ------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	int show;
	size_t n;
	unsigned cpus;
} mx_state = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };

static void mx_event(void *arg, const struct rp_mx_status *s)
{
	pthread_mutex_lock(&mx_state.lock);
	uint64_t now = vmt_now_ns();
	if (s->what == RP_MX_DONE) {
		progress_clear();
		if (mx_state.show && s->ok)
			fprintf(stderr, "%s: [%zu/%zu] %s: replayed in %.1f s\n", prog, s->target + 1,
				mx_state.n, s->name, (double)s->elapsed_ns / 1e9);
		else if (mx_state.show)
			fprintf(stderr, "%s: [%zu/%zu] %s: failed\n", prog, s->target + 1, mx_state.n,
				s->name);
	} else if (mx_state.show && now - prog_state.last >= 250000000u) {
		const struct rp_vm_status *v = s->vm;
		char what[128];
		if (s->what == RP_MX_START)
			snprintf(what, sizeof(what), "starting");
		else if (s->what == RP_MX_RUN)
			snprintf(what, sizeof(what), "run %" PRIu64 " of %" PRIu64, s->done, s->total);
		else if (v->what == RP_VM_BOOTING)
			snprintf(what, sizeof(what), "booting (%s, %u CPU%s): %.1f s",
				 v->accel == RP_VM_KVM ? "kvm" : "tcg", mx_state.cpus,
				 mx_state.cpus == 1 ? "" : "s", (double)v->elapsed_ns / 1e9);
		else if (v->what == RP_VM_UP)
			snprintf(what, sizeof(what), "Linux %s is up, replaying", v->release);
		else
			what[0] = 0;
		if (what[0]) {
			prog_state.last = now;
			fprintf(stderr, "\r%s: [%zu/%zu] %s: %s\033[K", prog, s->target + 1, mx_state.n,
				s->name, what);
			fflush(stderr);
			progress_shown = 1;
		}
	}
	pthread_mutex_unlock(&mx_state.lock);
}

static int matrix(const struct rp_args *a, struct rp_matrix *m)
{
	char msg[1024];
	if (a->json) {
		/* a directory that cannot be written fails now, not after the runs */
		if ((mkdir(a->json, 0777) < 0 && errno != EEXIST) || access(a->json, W_OK) < 0) {
			fprintf(stderr, "%s: cannot write in '%s': %s\n", prog, a->json, strerror(errno));
			return 2;
		}
	}
	mx_state.show = a->progress < 0 ? !a->quiet && isatty(2) : a->progress;
	mx_state.n = m->n;
	mx_state.cpus = m->cpus;
	m->event = mx_event;
	if (!a->quiet) {
		char mem[32];
		vmt_format_bytes(mem, sizeof(mem), m->memory);
		printf("vmreplay: '%s' on %zu kernel%s, %u run%s each; guests of %u CPU%s and %s%s\n",
		       a->trace, m->n, m->n == 1 ? "" : "s", a->repeat, a->repeat == 1 ? "" : "s",
		       m->cpus, m->cpus == 1 ? "" : "s", mem,
		       m->sized ? " (sized from the replay's needs)" : "");
		say_settings(stdout, m);
		for (size_t i = 0; i < m->nnotes; i++)
			printf("(%s)\n", m->notes[i]);
		putchar('\n');
		fflush(stdout);
	}
	int failed = rp_matrix_run(m);
	progress_clear();
	if (failed < 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	struct vmt_buf out = { 0 };
	int rc = 0;
	if (rp_matrix_table(m, &out, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, msg);
		rc = 1;
	} else if (vmt_buf_write(&out, stdout) == -ENOMEM) {
		fprintf(stderr, "%s: out of memory\n", prog);
		rc = 1;
	} else {
		rc = vmt_stdout_finish(prog, 0, 1);
	}
	vmt_buf_free(&out);
	if (a->json && rp_matrix_write(m, a->json, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, msg);
		rc = 1;
	}
	int inputs = 0;
	for (size_t i = 0; i < m->n; i++)
		if (!m->t[i].ok) {
			fprintf(stderr, "%s: %s: %s\n", prog, m->t[i].name, m->t[i].error);
			inputs += m->t[i].input_error;
		}
	if (failed && (size_t)inputs == m->n)
		return 2;
	return failed ? 1 : rc;
}

/* --kernel, once or several times (with --host). */
static int kernels(const struct rp_args *a)
{
	char msg[1024], guest[4096];
	if (rp_vm_find_guest(getenv("VMREPLAY_STATIC"), guest, sizeof(guest), msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s: --kernel: %s\n", prog, msg);
		return 1;
	}
	struct rp_matrix m;
	int rc = rp_matrix_prepare(&m, a, guest, msg, sizeof(msg));
	if (rc < 0) {
		fprintf(stderr, "%s: '%s': %s\n", prog, a->trace, msg);
		rp_matrix_free(&m);
		return resource_error(rc) ? 1 : 2;
	}
	if (m.n == 1 && !a->json_dir) {
		if (m.t[0].done) { /* the image was refused */
			fprintf(stderr, "%s: %s\n", prog, m.t[0].error);
			rp_matrix_free(&m);
			return 2;
		}
		rc = in_guest(a, &m);
	} else {
		rc = matrix(a, &m);
	}
	rp_matrix_free(&m);
	return rc;
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
		return vmt_stdout_finish(prog, 0, 1);
	}
	if (a.kernel) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
		return kernels(&a);
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
	int lr = a.mode != RP_MODE_REWRITE ? rp_trace_load(path, &o, &t, msg, sizeof(msg)) : 0;
	if (lr < 0) {
		progress_clear();
		fprintf(stderr, "%s: '%s': %s\n", prog, path, msg);
		return resource_error(lr) ? 1 : 2;
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

	uint64_t applied = 0;
	for (uint32_t i = 0; a.mode == RP_MODE_COMPARE && i < info.nrules; i++)
		applied += info.rule[i].applied;
	int rc;
	if (a.mode == RP_MODE_COMPARE && !applied) {
		/* nothing to compare: both sides would be the same trace */
		fprintf(stderr, "%s: '%s': %s applied nowhere: the rewritten trace is the trace as "
			"recorded, which is replayed alone\n", prog, path, info.rules);
		rc = replay(path, t, &o, &info, a.repeat, json, jf, quiet);
	} else if (a.mode == RP_MODE_COMPARE)
		rc = compare(path, t, rew, &o, &info, a.repeat, json, jf, quiet);
	else if (a.mode == RP_MODE_REWRITE)
		rc = replay(path, rew, &o, &info, a.repeat, json, jf, quiet);
	else
		rc = replay(path, t, &o, NULL, a.repeat, json, jf, quiet);
	rp_trace_free(t);
	rp_trace_free(rew);
	return rc;
}
