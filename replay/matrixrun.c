/*
 * matrixrun.c - vmreplay with several kernels (matrix.h): the targets
 * run (this machine first and alone, then the guests, --vm-jobs at once),
 * each one's results file, and the table of them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "compare.h"
#include "matrix.h"
#include "rtable.h"
#include "vmtutil.h"

/* The significance level of the table's test. */
#define ALPHA 0.05

/* ---- running ------------------------------------------------------------------ */

static void emit(struct rp_matrix *m, size_t i, struct rp_mx_status *s)
{
	s->target = i;
	s->name = m->t[i].name;
	if (m->event)
		m->event(m->event_arg, s);
}

/* Busy CPU time of the whole machine so far (ns): /proc/stat's first
 * line, all but idle and iowait. */
static uint64_t machine_busy_ns(void)
{
	char b[512];
	unsigned long long v[8] = { 0 };
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	if (sscanf(b, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
}

static uint64_t rusage_ns(int who)
{
	struct rusage ru;
	if (getrusage(who, &ru) < 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

/* What others took of the machine while a target ran for el ns: its busy
 * time less the target's own, over all CPUs' time; -1 unknown. */
static double others_pct(uint64_t busy0, uint64_t busy1, uint64_t own, uint64_t el)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	if (!busy0 || busy1 < busy0 || !el || online < 1)
		return -1;
	double o = (double)(busy1 - busy0) - (double)own;
	double pct = (o > 0 ? o : 0) * 100 / ((double)el * (double)online);
	return pct > 100 ? 100 : pct;
}

/* JSON text `obj` with `members` ("\"k\":v,...") added before its last
 * brace, as a new string.  NULL when obj is not an object or memory runs
 * out. */
static char *json_add(const char *obj, size_t len, const char *members, size_t *out_len)
{
	size_t s = 0, e = len;
	while (s < e && strchr(" \t\r\n", obj[s]))
		s++;
	while (e > s && strchr(" \t\r\n", obj[e - 1]))
		e--;
	if (e - s < 2 || obj[s] != '{' || obj[e - 1] != '}')
		return NULL;
	size_t body = e - 1;
	while (body > s && strchr(" \t\r\n", obj[body - 1]))
		body--;
	struct vmt_buf b = { 0 };
	vmt_buf_printf(&b, "%.*s%s%s}\n", (int)(body - s), obj + s, body - s > 1 ? "," : "", members);
	if (b.oom) {
		vmt_buf_free(&b);
		return NULL;
	}
	*out_len = b.len;
	return b.data;
}

/* The members every results file of the matrix gets. */
static void matrix_members(const struct rp_matrix *m, size_t i, const char *label,
			   struct vmt_buf *b)
{
	const struct rp_mx_target *t = &m->t[i];
	vmt_buf_puts(b, "\"matrix\":{\"label\":");
	vmt_buf_json_str(b, label);
	vmt_buf_puts(b, ",\"name\":");
	vmt_buf_json_str(b, t->name);
	vmt_buf_printf(b, ",\"column\":%zu,\"columns\":%zu,\"elapsed_ns\":%" PRIu64
			  ",\"host_noise_pct\":",
		       i, m->n, t->elapsed_ns);
	if (t->host_noise_pct >= 0)
		vmt_buf_printf(b, "%.3f", t->host_noise_pct);
	else
		vmt_buf_puts(b, "null");
	vmt_buf_puts(b, ",\"mm_asked\":");
	vmt_buf_json_str(b, t->image ? m->asked : "");
	/* this machine's memory, to set beside the guests' */
	long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
	if (!t->image && pages > 0 && ps > 0)
		vmt_buf_printf(b, ",\"memory_bytes\":%" PRIu64, (uint64_t)pages * (uint64_t)ps);
	vmt_buf_puts(b, "}");
}

/* A failed target's file: why, and what is known of where it ran. */
static void fail_json(struct rp_matrix *m, size_t i)
{
	struct rp_mx_target *t = &m->t[i];
	struct vmt_buf b = { 0 };
	vmt_buf_puts(&b, "{\"error\":");
	vmt_buf_json_str(&b, t->error);
	vmt_buf_puts(&b, ",\"trace\":");
	vmt_buf_json_str(&b, m->a->trace);
	vmt_buf_puts(&b, ",\"kernel\":");
	if (t->release[0])
		vmt_buf_json_str(&b, t->release);
	else
		vmt_buf_puts(&b, "null");
	vmt_buf_puts(&b, ",\"recorded_mm\":");
	vmt_buf_json_str(&b, m->recorded);
	if (t->image) {
		vmt_buf_puts(&b, ",\"vm\":{\"image\":");
		vmt_buf_json_str(&b, t->image);
		vmt_buf_puts(&b, ",\"image_version\":");
		vmt_buf_json_str(&b, t->version);
		vmt_buf_printf(&b, ",\"accel\":\"%s\",\"cpus\":%u,\"memory_bytes\":%" PRIu64 "}",
			       t->accel == RP_VM_KVM ? "kvm" : "tcg", m->cpus, m->memory);
	}
	vmt_buf_puts(&b, ",");
	char label[80];
	snprintf(label, sizeof(label), "%s", t->release[0] ? t->release : t->name);
	matrix_members(m, i, label, &b);
	vmt_buf_puts(&b, "}\n");
	free(t->json);
	t->json = b.oom ? NULL : b.data;
	t->json_len = b.oom ? 0 : b.len;
	if (b.oom)
		vmt_buf_free(&b);
}

static void finish(struct rp_matrix *m, size_t i, const char *json, size_t len)
{
	struct rp_mx_target *t = &m->t[i];
	if (t->ok) {
		struct vmt_buf mem = { 0 };
		matrix_members(m, i, t->release[0] ? t->release : t->name, &mem);
		char *j = mem.oom ? NULL : json_add(json, len, mem.data, &t->json_len);
		vmt_buf_free(&mem);
		if (!j) {
			t->ok = 0;
			snprintf(t->error, sizeof(t->error), "%s", "its results are not a JSON object");
		}
		t->json = j;
	}
	if (!t->ok)
		fail_json(m, i);
	t->done = 1;
	struct rp_mx_status s = { .what = RP_MX_DONE, .ok = t->ok, .error = t->error,
				  .elapsed_ns = t->elapsed_ns };
	emit(m, i, &s);
}

/* Read back what went into a memfd. */
static char *slurp_fd(int fd, size_t *len)
{
	struct stat st;
	*len = 0;
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	char *b = malloc((size_t)st.st_size + 1);
	if (!b)
		return NULL;
	ssize_t n = pread(fd, b, (size_t)st.st_size, 0);
	b[n > 0 ? n : 0] = 0;
	*len = n > 0 ? (size_t)n : 0;
	return b;
}

static void host_progress(void *arg, int what, uint64_t done, uint64_t total)
{
	struct { struct rp_matrix *m; size_t i; unsigned run, runs; } *h = arg;
	if (what != RP_PROGRESS_RUN || done)
		return;
	struct rp_mx_status s = { .what = RP_MX_RUN, .done = ++h->run, .total = h->runs };
	emit(h->m, h->i, &s);
}

/* The replay on this machine, on as many CPUs as the guests have. */
static void run_host(struct rp_matrix *m, size_t i)
{
	struct rp_mx_target *t = &m->t[i];
	const struct rp_args *a = m->a;
	struct rp_options o = a->o;
	char msg[512];
	rp_trace *rew = NULL, *tr = m->trace;
	struct rp_rewrite_info info;
	struct { struct rp_matrix *m; size_t i; unsigned run, runs; } h = { m, i, 0, a->repeat };
	o.max_memory = m->max_memory;
	o.progress = host_progress;
	o.progress_arg = &h;
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(t->release, sizeof(t->release), "%s", u.release);
	if (a->mode == RP_MODE_REWRITE) {
		int input = 1;
		if (rp_load_rewritten(a->trace, a->rules, &o, &rew, &info, &input, msg,
				      sizeof(msg)) < 0) {
			snprintf(t->error, sizeof(t->error), "%s", msg);
			t->input_error = input;
			finish(m, i, NULL, 0);
			return;
		}
		tr = rew;
	}
	cpu_set_t old, use;
	int pinned = sched_getaffinity(0, sizeof(old), &old) == 0 && (unsigned)CPU_COUNT(&old) > m->cpus;
	if (pinned) {
		CPU_ZERO(&use);
		for (int c = 0, k = 0; c < CPU_SETSIZE && (unsigned)k < m->cpus; c++)
			if (CPU_ISSET(c, &old))
				CPU_SET(c, &use), k++;
		pinned = sched_setaffinity(0, sizeof(use), &use) == 0;
	}
	struct rp_run_result *runs = calloc(a->repeat, sizeof(*runs)), med;
	uint64_t t0 = vmt_now_ns(), busy0 = machine_busy_ns();
	uint64_t own0 = rusage_ns(RUSAGE_SELF) + rusage_ns(RUSAGE_CHILDREN);
	unsigned done = 0;
	int rc = runs ? 0 : -ENOMEM;
	snprintf(msg, sizeof(msg), "out of memory");
	for (; rc == 0 && done < a->repeat; done++)
		if ((rc = rp_run(tr, &o, &runs[done], msg, sizeof(msg))) < 0)
			break;
	t->elapsed_ns = vmt_now_ns() - t0;
	t->host_noise_pct = others_pct(busy0, machine_busy_ns(),
				       rusage_ns(RUSAGE_SELF) + rusage_ns(RUSAGE_CHILDREN) - own0,
				       t->elapsed_ns);
	if (pinned)
		sched_setaffinity(0, sizeof(old), &old);
	if (rc == 0 && rp_run_median(runs, a->repeat, &med) < 0) {
		rc = -ENOMEM;
		snprintf(msg, sizeof(msg), "out of memory");
	}
	char *jtext = NULL, *rtext = NULL;
	size_t jlen = 0, rlen = 0;
	if (rc == 0) {
		FILE *jf = open_memstream(&jtext, &jlen), *rf = open_memstream(&rtext, &rlen);
		int wr = !jf || !rf ? -ENOMEM
			 : rew ? rp_rewrite_report_json(jf, tr, &o, &info, runs, a->repeat, &med)
			       : rp_report_json(jf, tr, &o, runs, a->repeat, &med);
		if (wr == 0 && rf)
			wr = (rew && rp_rewrite_report_rules(rf, &info) < 0) ||
			     rp_report_text(rf, tr, &o, runs, a->repeat, &med, a->quiet) < 0 ? -EIO : 0;
		if (jf)
			fclose(jf);
		if (rf)
			fclose(rf);
		rp_run_result_free(&med);
		if (wr < 0) {
			rc = wr;
			snprintf(msg, sizeof(msg), "out of memory");
		}
	}
	for (unsigned k = 0; runs && k < done; k++)
		rp_run_result_free(&runs[k]);
	free(runs);
	if (rc < 0) {
		/* a trace found bad further on is bad input, as at the start */
		t->input_error = rc <= VMT_E_TRUNC && rc >= VMT_E_STATE;
		snprintf(t->error, sizeof(t->error), "replay failed: %s", msg);
	}
	t->ok = rc == 0;
	t->report = rtext;
	t->report_len = rlen;
	finish(m, i, jtext, jlen);
	free(jtext);
	rp_trace_free(rew);
}

static void vm_event(void *arg, const struct rp_vm_status *vs)
{
	struct { struct rp_matrix *m; size_t i; } *h = arg;
	struct rp_mx_status s = { .what = RP_MX_VM, .vm = vs };
	if (vs->what == RP_VM_UP) {
		snprintf(h->m->t[h->i].release, sizeof(h->m->t[h->i].release), "%s", vs->release);
		h->m->t[h->i].accel = vs->accel;
	}
	emit(h->m, h->i, &s);
}

/* The last line the guest replay wrote on its standard error, without
 * the program's name: why it failed, as it would say here. */
static void last_line(const char *err, size_t len, char *out, size_t n)
{
	out[0] = 0;
	while (len && (err[len - 1] == '\n' || err[len - 1] == '\r'))
		len--;
	size_t s = len;
	while (s && err[s - 1] != '\n')
		s--;
	const char *l = err + s;
	size_t ll = len - s;
	if (ll > 10 && !strncmp(l, "vmreplay: ", 10))
		l += 10, ll -= 10;
	snprintf(out, n, "%.*s", (int)ll, l);
}

static void run_guest(struct rp_matrix *m, size_t i)
{
	struct rp_mx_target *t = &m->t[i];
	char buf[8192], *argv[64], msg[1024];
	int out = memfd_create("vmreplay-guest-out", MFD_CLOEXEC);
	int err = memfd_create("vmreplay-guest-err", MFD_CLOEXEC);
	struct rp_vm_config c;
	struct rp_vm_result r;
	struct { struct rp_matrix *m; size_t i; } h = { m, i };
	memset(&r, 0, sizeof(r));
	t->accel = m->a->vm_accel == RP_VM_KVM ? RP_VM_KVM : RP_VM_TCG;
	if (out < 0 || err < 0) {
		snprintf(t->error, sizeof(t->error), "memfd: %s", strerror(errno));
		goto done;
	}
	if (rp_matrix_vm_config(m, i, RP_VM_GUEST_JSON, 0, out, err, argv,
				sizeof(argv) / sizeof(argv[0]), buf, sizeof(buf), &c) < 0) {
		snprintf(t->error, sizeof(t->error), "the command line is too long for the guest");
		t->input_error = 1;
		goto done;
	}
	c.event = vm_event;
	c.event_arg = &h;
	int console = -1;
	if (m->a->vm_console) {
		char path[4200];
		snprintf(path, sizeof(path), "%s.%s", m->a->vm_console, t->name);
		console = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		c.console_fd = console;
	}
	uint64_t t0 = vmt_now_ns(), busy0 = machine_busy_ns();
	int rc = rp_vm_run(&c, &r, msg, sizeof(msg));
	t->elapsed_ns = vmt_now_ns() - t0;
	t->host_noise_pct = others_pct(busy0, machine_busy_ns(), r.qemu_cpu_ns, t->elapsed_ns);
	if (console >= 0)
		close(console);
	if (r.release[0])
		snprintf(t->release, sizeof(t->release), "%s", r.release);
	if (rc == 0)
		t->accel = r.accel;
	size_t olen, elen;
	t->report = slurp_fd(out, &olen);
	t->report_len = olen;
	char *etext = slurp_fd(err, &elen);
	if (rc < 0) {
		snprintf(t->error, sizeof(t->error), "%s", msg);
		t->input_error = r.input_error;
	} else if (r.status != 0) {
		char line[900];
		last_line(etext ? etext : "", elen, line, sizeof(line));
		if (r.status >= 128)
			snprintf(t->error, sizeof(t->error), "the replay in the guest was killed by"
				 " signal %d%s%s", r.status - 128, line[0] ? ": " : "", line);
		else if (line[0] && r.status <= 2)
			snprintf(t->error, sizeof(t->error), "%s", line);
		else
			snprintf(t->error, sizeof(t->error), "the guest could not run the replay"
				 " (status %d)%s%s", r.status, line[0] ? ": " : "", line);
		t->input_error = r.status == 2;
	} else {
		struct vmt_buf j = { 0 };
		int jr = r.json ? rp_vm_json(&c, &r, &j) : -ENOENT;
		if (jr < 0) {
			snprintf(t->error, sizeof(t->error), "the guest's results came back %s",
				 jr == -ENOMEM ? "too large for memory" : "without their JSON");
		} else {
			t->ok = 1;
			finish(m, i, j.data, j.len);
			vmt_buf_free(&j);
			free(etext);
			rp_vm_result_free(&r);
			close(out);
			close(err);
			return;
		}
		vmt_buf_free(&j);
	}
	free(etext);
done:
	rp_vm_result_free(&r);
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	finish(m, i, NULL, 0);
}

struct pool {
	struct rp_matrix *m;
	pthread_mutex_t lock;
	size_t next;
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		size_t i = p->next;
		while (i < p->m->n && (!p->m->t[i].image || p->m->t[i].done))
			i++;
		p->next = i + 1;
		pthread_mutex_unlock(&p->lock);
		if (i >= p->m->n)
			return NULL;
		struct rp_mx_status s = { .what = RP_MX_START };
		emit(p->m, i, &s);
		run_guest(p->m, i);
	}
}

int rp_matrix_run(struct rp_matrix *m)
{
	/* This machine first, alone: no guest takes its CPUs meanwhile. */
	for (size_t i = 0; i < m->n; i++)
		if (!m->t[i].image) {
			struct rp_mx_status s = { .what = RP_MX_START };
			emit(m, i, &s);
			run_host(m, i);
		}
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].done && !m->t[i].json)
			finish(m, i, NULL, 0); /* (an image refused at the start) */
	struct pool p = { m, PTHREAD_MUTEX_INITIALIZER, 0 };
	unsigned jobs = m->a->vm_jobs ? m->a->vm_jobs : 1;
	pthread_t th[RP_KERNELS_MAX];
	unsigned started = 0;
	for (unsigned k = 1; k < jobs && k < RP_KERNELS_MAX; k++)
		if (pthread_create(&th[started], NULL, worker, &p) == 0)
			started++;
	worker(&p);
	for (unsigned k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	int failed = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (!m->t[i].json)
			return -ENOMEM;
		failed += !m->t[i].ok;
	}
	return failed;
}

/* ---- the table and the files ------------------------------------------------------- */

int rp_matrix_table(const struct rp_matrix *m, struct vmt_buf *out, char *msg, size_t msglen)
{
	struct van_rcol cols[RP_KERNELS_MAX + 1];
	struct van_rtable tab;
	size_t n = 0;
	int rc = 0;
	for (; n < m->n; n++) {
		char why[256];
		rc = van_rcol_parse(m->t[n].json, m->t[n].json_len, m->t[n].name, &cols[n], why,
				    sizeof(why));
		if (rc < 0) {
			vmt_errf(msg, msglen, rc, "%s: %s", m->t[n].name,
				 rc == -ENOMEM ? "out of memory" : why);
			break;
		}
	}
	if (rc == 0 && (rc = van_rtable_build(cols, n, ALPHA, &tab)) == 0) {
		van_rtable_text(&tab, 0, out);
		van_rtable_free(&tab);
		if (out->oom)
			rc = -ENOMEM;
	}
	if (rc == -ENOMEM)
		snprintf(msg, msglen, "out of memory");
	for (size_t i = 0; i < n; i++)
		van_rcol_free(&cols[i]);
	return rc;
}

static int write_file(const char *dir, const char *name, const char *ext, const char *data,
		      size_t len, char *msg, size_t msglen)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name,
		 ext);
	FILE *f = fopen(path, "we");
	if (!f)
		return vmt_errf(msg, msglen, -errno, "cannot write '%s': %s", path, strerror(errno));
	int bad = fwrite(data, 1, len, f) != len;
	if (fclose(f) || bad)
		return vmt_errf(msg, msglen, -EIO, "write error on '%s'", path);
	return 0;
}

int rp_matrix_write(const struct rp_matrix *m, const char *dir, char *msg, size_t msglen)
{
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return vmt_errf(msg, msglen, -errno, "cannot make '%s': %s", dir, strerror(errno));
	for (size_t i = 0; i < m->n; i++) {
		const struct rp_mx_target *t = &m->t[i];
		int rc = write_file(dir, t->name, ".json", t->json, t->json_len, msg, msglen);
		if (rc == 0 && t->report)
			rc = write_file(dir, t->name, ".txt", t->report, t->report_len, msg, msglen);
		if (rc < 0)
			return rc;
	}
	return 0;
}
