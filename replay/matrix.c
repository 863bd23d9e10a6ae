/*
 * matrix.c - vmreplay --kernel=A --kernel=B ... [--host] (matrix.h): the
 * targets prepared (the trace, the images, the guests' memory and
 * settings) and a guest's configuration; matrixrun.c runs them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "matrix.h"
#include "vmtutil.h"

/* The guest kernel's own memory once it runs (page tables, slab, its
 * page cache of the initramfs's files), beyond what it needs to boot:
 * measured with Debian's 6.1 and 6.12 cloud kernels at some 60 MiB. */
#define GUEST_KERNEL_RUN (96ull << 20)
#define GUEST_MEMORY_MIN (256ull << 20)

/* ---- preparing ---------------------------------------------------------------- */

static uint64_t half_ram(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
	return pages > 0 && ps > 0 ? (uint64_t)pages * (uint64_t)ps / 2 : 1ull << 30;
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The setting of key asked for: --vm-sysctl's (the last one given), or
 * the recording's; "" for none. */
static void asked(const struct rp_args *a, const char *key, const char *recorded, char *v,
		  size_t vlen)
{
	v[0] = 0;
	vmt_options_get(recorded, key, v, vlen);
	size_t kl = strlen(key);
	for (unsigned i = 0; i < a->nsysctl; i++)
		if (!strncmp(a->vm_sysctl[i], key, kl) && a->vm_sysctl[i][kl] == '=')
			snprintf(v, vlen, "%s", a->vm_sysctl[i] + kl + 1);
}

static int add_sysctl(struct rp_matrix *m, size_t *n, const char *path, const char *value)
{
	if (*n + 1 >= sizeof(m->sysctl) / sizeof(m->sysctl[0]))
		return 0;
	char *s;
	if (asprintf(&s, "%s=%s", path, value) < 0)
		return -ENOMEM;
	m->sysctl[(*n)++] = s;
	m->sysctl[*n] = NULL;
	return 0;
}

/* The files every guest's /init writes: each recorded mm setting that a
 * file sets, unless --vm-sysctl says otherwise (an empty value: the
 * guest kernel's own), then the other --vm-sysctl settings. */
static int settings(struct rp_matrix *m, char *msg, size_t msglen)
{
	const struct rp_args *a = m->a;
	size_t n = 0;
	char v[128], path[256];
	for (size_t k = 0; vmt_mm_key(k); k++) {
		const char *key = vmt_mm_key(k), *p = vmt_mm_path(key);
		asked(a, key, m->recorded, v, sizeof(v));
		if (!p || !*v)
			continue;
		size_t l = strlen(m->asked);
		snprintf(m->asked + l, sizeof(m->asked) - l, "%s%s=%s", l ? " " : "", key, v);
		if (add_sysctl(m, &n, p, v) < 0)
			return vmt_errf(msg, msglen, -ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < a->nsysctl; i++) {
		const char *s = a->vm_sysctl[i], *eq = strchr(s, '=');
		size_t kl = (size_t)(eq - s), k;
		for (k = 0; vmt_mm_key(k); k++)
			if (strlen(vmt_mm_key(k)) == kl && !strncmp(vmt_mm_key(k), s, kl))
				break;
		if (vmt_mm_key(k) || !eq[1])
			continue; /* done above */
		int rc = rp_vm_sysctl_path(s, path, sizeof(path), msg, msglen);
		if (rc < 0)
			return rc;
		if (add_sysctl(m, &n, path, eq + 1) < 0)
			return vmt_errf(msg, msglen, -ENOMEM, "out of memory");
	}
	return 0;
}

/* The recorded settings, from the trace's header. */
static int read_recorded(struct rp_matrix *m, char *msg, size_t msglen)
{
	if (m->trace) {
		snprintf(m->recorded, sizeof(m->recorded), "%s", m->info.rec_mm);
		return 0;
	}
	int err = 0, fd = open(m->a->trace, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vmt_errf(msg, msglen, -errno, "%s", strerror(errno));
	msg[0] = 0;
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, msglen);
	if (!r) {
		close(fd);
		if (!msg[0])
			snprintf(msg, msglen, "%s", vmt_strerror(err));
		return err ? err : -EINVAL;
	}
	const struct vmt_header *h = vmt_reader_header(r);
	for (size_t k = 0; vmt_mm_key(k); k++) {
		char v[128];
		size_t l = strlen(m->recorded);
		if (vmt_options_get(h->options, vmt_mm_key(k), v, sizeof(v)) && *v)
			snprintf(m->recorded + l, sizeof(m->recorded) - l, "%s%s=%s", l ? " " : "",
				 vmt_mm_key(k), v);
	}
	vmt_reader_free(r);
	close(fd);
	return 0;
}

static void note(struct rp_matrix *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct rp_matrix *m, const char *fmt, ...)
{
	if (m->nnotes == sizeof(m->notes) / sizeof(m->notes[0]))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->notes[m->nnotes++], sizeof(m->notes[0]), fmt, ap);
	va_end(ap);
}

/* Every guest's memory: the largest kernel's needs at boot, the
 * initramfs twice (the archive, then its files), the kernel's own while
 * it runs, and the replay's estimate (as --max-memory checks it: the
 * peak mapped or touched memory of all copies, and its own) with a
 * quarter more. */
static void size_memory(struct rp_matrix *m)
{
	uint64_t need = 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].image && m->t[i].need > need)
			need = m->t[i].need;
	uint64_t initrd = file_size(m->guest) + file_size(m->a->trace) + (64u << 10);
	const struct rp_trace_info *ti = &m->info;
	uint64_t peak = ti->peak_mapped > ti->peak_touched ? ti->peak_mapped : ti->peak_touched;
	uint64_t scale = m->a->o.scale ? m->a->o.scale : 1;
	uint64_t est = peak * scale + ti->own_bytes;
	uint64_t mem = need + 2 * initrd + GUEST_KERNEL_RUN + est + est / 4;
	mem = (mem + (64ull << 20) - 1) & ~((64ull << 20) - 1);
	m->memory = mem < GUEST_MEMORY_MIN ? GUEST_MEMORY_MIN : mem;
	m->sized = 1;
	char b[32];
	vmt_format_bytes(b, sizeof(b), est);
	if (ti->streamed)
		note(m, "the trace is longer than --window: the guests' memory is sized from"
			" the part loaded first (the replay's estimate %s); give more with"
			" --vm-memory if a guest runs out", b);
}

static void name_target(struct rp_matrix *m, size_t i)
{
	struct rp_mx_target *t = &m->t[i];
	char base[80];
	if (!t->image)
		snprintf(base, sizeof(base), "host");
	else if (t->version[0])
		snprintf(base, sizeof(base), "%.*s", (int)strcspn(t->version, " "), t->version);
	else
		snprintf(base, sizeof(base), "%s", strrchr(t->image, '/') ? strrchr(t->image, '/') + 1
									  : t->image);
	for (char *c = base; *c; c++)
		if (!(*c == '.' || *c == '-' || *c == '_' || *c == '+' || (*c >= '0' && *c <= '9') ||
		      (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			*c = '_';
	if (!base[0] || base[0] == '.')
		base[0] = '_';
	snprintf(t->name, sizeof(t->name), "%s", base);
	/* the same kernel twice: its own file each */
	for (unsigned k = 2;; k++) {
		size_t j;
		for (j = 0; j < i && strcmp(m->t[j].name, t->name); j++)
			;
		if (j == i)
			break;
		snprintf(t->name, sizeof(t->name), "%.70s-%u", base, k);
	}
}

int rp_matrix_prepare(struct rp_matrix *m, const struct rp_args *a, const char *guest,
		      char *msg, size_t msglen)
{
	memset(m, 0, sizeof(*m));
	m->a = a;
	snprintf(m->guest, sizeof(m->guest), "%s", guest);
	const char *q = getenv("VMREPLAY_QEMU");
	m->qemu = q && *q ? q : "qemu-system-x86_64";
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	m->cpus = a->vm_cpus ? a->vm_cpus
		: online < 1 ? 1 : online > RP_VM_CPUS_MAX ? RP_VM_CPUS_MAX : (unsigned)online;
	m->max_memory = a->o.max_memory ? a->o.max_memory : half_ram();
	for (unsigned k = 0, i = 0; k <= a->nkernels; k++) {
		if (a->host && a->host_pos == k)
			m->t[i++].image = NULL;
		if (k < a->nkernels)
			m->t[i++].image = a->kernels[k];
		m->n = i;
	}
	for (size_t i = 0; i < m->n; i++) {
		struct rp_mx_target *t = &m->t[i];
		t->host_noise_pct = -1;
		if (t->image && rp_vm_image(t->image, t->version, sizeof(t->version), &t->need,
					    t->error, sizeof(t->error)) < 0) {
			t->done = 1;
			t->input_error = 1;
		}
		name_target(m, i);
	}
	/* The trace, here: for --host, and for the guests' memory unless
	 * given (only its header otherwise, and the guests check the rest). */
	if (a->host || !a->vm_memory) {
		struct rp_options o = a->o;
		o.max_memory = m->max_memory;
		o.progress = NULL;
		int rc = rp_trace_load(a->trace, &o, &m->trace, msg, msglen);
		if (rc < 0)
			return rc;
		rp_trace_get_info(m->trace, &m->info);
	}
	int rc = read_recorded(m, msg, msglen);
	if (rc < 0)
		return rc;
	if ((rc = settings(m, msg, msglen)) < 0)
		return rc;
	if (a->vm_memory)
		m->memory = a->vm_memory;
	else
		size_memory(m);
	unsigned guests = (unsigned)(m->n - (a->host ? 1 : 0));
	unsigned jobs = a->vm_jobs < guests ? a->vm_jobs : guests;
	if (jobs > 1 && jobs * m->cpus > (unsigned)(online > 0 ? online : 1))
		note(m, "%u guests of %u CPU%s at once on %ld CPUs: they take each other's"
			" time (the table's others' cpu row says how much)", jobs, m->cpus,
		     m->cpus == 1 ? "" : "s", online);
	return 0;
}

int rp_matrix_vm_config(const struct rp_matrix *m, size_t i, const char *json, int progress,
			int out_fd, int err_fd, char **argv, size_t argmax, char *buf,
			size_t buflen, struct rp_vm_config *c)
{
	struct rp_args ga = *m->a;
	ga.o.max_memory = m->max_memory; /* the same limit as here, not half the guest's */
	if (rp_guest_args(&ga, ga.trace, json, progress, argv, argmax, buf, buflen) < 0)
		return -ENOSPC;
	memset(c, 0, sizeof(*c));
	c->image = m->t[i].image;
	c->qemu = m->qemu;
	c->guest = m->guest;
	c->trace = m->a->trace;
	c->argv = argv;
	c->clock = m->a->o.clock == RP_CLOCK_MONOTONIC ? "monotonic" : NULL;
	c->cpus = m->cpus;
	c->memory = m->memory;
	c->accel = m->a->vm_accel;
	c->timeout_s = m->a->vm_timeout;
	c->out_fd = out_fd;
	c->err_fd = err_fd;
	c->console_fd = -1;
	c->sysctl = m->sysctl;
	c->cmdline = m->a->vm_cmdline[0] ? m->a->vm_cmdline : NULL;
	return 0;
}

void rp_matrix_free(struct rp_matrix *m)
{
	rp_trace_free(m->trace);
	for (size_t i = 0; m->sysctl[i]; i++)
		free(m->sysctl[i]);
	for (size_t i = 0; i < m->n; i++) {
		free(m->t[i].json);
		free(m->t[i].report);
	}
	memset(m, 0, sizeof(*m));
}
