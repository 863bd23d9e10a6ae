/*
 * faults.c - the page faults of traced tasks through perf_event_open.
 *
 * One ring buffer per task (pid = tid, cpu = -1) or, for a process tree,
 * per CPU (inherited events), into which several sampling events of period
 * 1 write, each sample marked with its event (PERF_SAMPLE_IDENTIFIER).
 * Why not one ring for all tasks: the kernel only lets a per-task event
 * redirect its output (PERF_EVENT_IOC_SET_OUTPUT) into an event of the
 * same task, and inherited per-task events cannot be mapped at all.
 *
 * What is a fault: one the kernel counted in the task's minor or major
 * faults (mm/memory.c, mm_account_fault), as its rusage does.  Where it
 * counts one with the faulting registers it also counts the software event
 * PAGE_FAULTS_MIN or PAGE_FAULTS_MAJ, with the address: those samples are
 * the FAULT events.  The exceptions:page_fault_user tracepoint (and
 * page_fault_kernel, on x86: the faults the kernel takes on the task's
 * memory for it, a read() into a fresh buffer) says more, the access
 * (read, write, exec), but fires at every fault exception, counted or not
 * (a bad access, a failed fault, one retried from user space): where it
 * can be sampled, its sample is kept for its task until the counted event
 * of the same page follows, which takes the access and time from it, and
 * is dropped when the task's next exception comes first.  Faults the
 * kernel takes through get_user_pages (populating a mapping) fire neither,
 * and are not recorded here.
 *
 * Timestamps use CLOCK_MONOTONIC (use_clockid), the recorder's clock, so
 * FAULT events fall between the syscalls around them.  sample_id_all gives
 * LOST records a time too.  Nobody waits on the rings: the recorder drains
 * them at its ptrace stops (a ring that fills up in between loses samples,
 * which the kernel counts and we report as LOST events).
 */
#include "faults.h"
#include "tpfind.h"
#include "record_int.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <asm/perf_regs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* x86 page-fault error code bits (arch/x86/include/asm/trap_pf.h). */
#ifndef PERF_FORMAT_LOST
#define PERF_FORMAT_LOST (1u << 4)
#endif

/* Free ring bytes below which a sample may have been dropped (the largest
 * sample we ask for is well under this). */
#define RING_SLACK 256u

#define PF_WRITE 0x2u
#define PF_INSTR 0x10u

/* The events of a ring: the fault tracepoints (where they are sampled)
 * and the kernel's counted faults. */
enum { FE_USER, FE_KERNEL, FE_MIN, FE_MAJ, FE__N };

struct ftask {
	pid_t tid;
	uint32_t thread, proc;
	int fd;		   /* the ring's: fev[lead]'s */
	int fev[FE__N];	   /* the events writing into it, -1: none */
	uint64_t id[FE__N]; /* their sample identifiers */
	void *base; /* the mapping: control page, then data */
	size_t map_len;
	unsigned char *data;
	uint64_t data_size; /* a power of two */
	uint64_t tail;	    /* our read position (mirrors data_tail) */
	uint64_t head;	    /* data_head as read at the start of a drain */
	uint64_t last_ts;   /* time of the last record read */
	uint64_t ring_lost; /* sum of the ring's LOST records */
	uint64_t told_lost; /* samples reported lost (LOST events) */
	int check_lost;	    /* the ring may have overflowed: ask the kernel */
	int gone;	    /* removed: free once drained */
	int cpu;	    /* tree mode: the CPU of this ring, else -1 */
};

/* A task's last fault exception (tracepoint sample), until its counted
 * event comes. */
struct fpend {
	uint64_t addr, ip, ts;
	uint32_t access, valid;
};

struct vmr_faults {
	int tracepoint; /* 1: exceptions:page_fault_user, 0: software event */
	struct perf_event_attr attr; /* the ring's lead event */
	struct perf_event_attr sw;   /* the counted faults' (minor; major alike) */
	struct tp_field f_addr, f_ip, f_err;
	uint64_t kconfig; /* exceptions:page_fault_kernel's id, 0: none */
	uint32_t ring_pages; /* 0: by task count */
	size_t page;
	struct ftask **tasks;
	size_t ntasks, cap;
	struct vmt_htab by_tid; /* tid -> index in tasks, live tasks only */
	uint64_t lost;
	uint64_t last_out_ts; /* time of the last event appended */
	int lost_count_read; /* read() gives the lost count (Linux >= 6.0) */
	unsigned char *rec; /* one record, copied when it wraps the ring */
	size_t rec_cap;
	struct fact { /* drain scratch: a ring with data, its next time */
		struct ftask *t;
		uint64_t ts;
	} *act;
	size_t act_cap;
	/* tree mode: inherited events, one per CPU, for a whole process tree */
	int tree;
	vmr_faults_who_fn who;
	void *who_ctx;
	uint64_t unknown; /* samples of tasks who() did not know */
	vmr_faults_access_fn access;
	void *access_ctx;
	uint64_t sample_regs; /* software event: the user registers sampled */
	struct vmt_htab pend_of; /* tid -> index in pend */
	struct fpend *pend;
	size_t npend, cappend;
};

static int perf_open_cpu(struct perf_event_attr *a, pid_t pid, int cpu)
{
	long fd = syscall(SYS_perf_event_open, a, pid, cpu, -1,
			  PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

static int perf_open(struct perf_event_attr *a, pid_t pid)
{
	return perf_open_cpu(a, pid, -1);
}

static void base_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_period = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	a->exclude_hv = 1;
	/* Nobody polls: let the kernel skip wake-ups until half full. */
	a->watermark = 1;
	a->wakeup_watermark = 1u << 30;
}

/* The counted faults' event: the software event of minor faults (the
 * major one alike), with its address; kernel: whether faults the kernel
 * takes on the task's memory are counted too. */
static void setup_counted(struct vmr_faults *f, int kernel)
{
	base_attr(&f->sw);
	f->sw.type = PERF_TYPE_SOFTWARE;
	f->sw.config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
	f->sw.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
	/* (an unprivileged user may sample user mode only) */
	f->sw.exclude_kernel = !kernel;
}

/* Attributes for the tracepoint; fails when it or its fields are missing. */
static int setup_tracepoint(struct vmr_faults *f)
{
	struct tp_info tp;
	int err = tp_find("exceptions", "page_fault_user", &tp);
	if (err)
		return err;
	const struct tp_field *a = tp_field(&tp, "address"),
			      *ip = tp_field(&tp, "ip"),
			      *ec = tp_field(&tp, "error_code");
	if (!a || !ip || !ec || a->size > 8 || ip->size > 8 || ec->size > 8)
		return -EINVAL;
	f->f_addr = *a;
	f->f_ip = *ip;
	f->f_err = *ec;
	/* Kernel-mode faults, where their record is laid out the same. */
	struct tp_info ktp;
	if (!tp_find("exceptions", "page_fault_kernel", &ktp)) {
		const struct tp_field *ka = tp_field(&ktp, "address"),
				      *kip = tp_field(&ktp, "ip"),
				      *kec = tp_field(&ktp, "error_code");
		if (ka && kip && kec && ka->offset == a->offset && ka->size == a->size &&
		    kip->offset == ip->offset && kip->size == ip->size &&
		    kec->offset == ec->offset && kec->size == ec->size)
			f->kconfig = ktp.id;
	}
	base_attr(&f->attr);
	f->attr.type = PERF_TYPE_TRACEPOINT;
	f->attr.config = tp.id;
	f->attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			      PERF_SAMPLE_RAW;
	/* The tracepoint fires in the kernel's fault handler: excluding
	 * kernel mode would drop every sample. */
	f->tracepoint = 1;
	setup_counted(f, 1);
	return 0;
}

static void setup_software(struct vmr_faults *f)
{
	/* The counted faults alone, taken in user mode, like page_fault_user
	 * (and what an unprivileged user may sample). */
	setup_counted(f, 0);
	f->attr = f->sw;
	f->tracepoint = 0;
}

/* Can we open the event at all?  Try it on ourselves, first asking for
 * the lost-sample count in read() (older kernels refuse that flag). */
static int probe(struct vmr_faults *f)
{
	struct perf_event_attr a = f->attr;
	a.disabled = 1;
	a.read_format = PERF_FORMAT_LOST;
	int fd = perf_open(&a, 0);
	if (fd == -EINVAL) {
		a.read_format = 0;
		fd = perf_open(&a, 0);
	}
	if (fd < 0)
		return fd;
	close(fd);
	f->attr.read_format = f->sw.read_format = a.read_format;
	f->lost_count_read = a.read_format != 0;
	/* (with the tracepoint: and the counted faults' event it pairs with) */
	a = f->sw;
	a.disabled = 1;
	if (f->tracepoint && (fd = perf_open(&a, 0)) < 0)
		return fd;
	if (f->tracepoint)
		close(fd);
	return 0;
}

struct vmr_faults *vmr_faults_new_opts(const struct vmr_faults_opts *opts,
				       int *err, const char **why)
{
	static const struct vmr_faults_opts defaults = { 0, 0 };
	if (!opts)
		opts = &defaults;
	*why = NULL;
	if (opts->source > VMR_FAULTS_SOFTWARE ||
	    (opts->ring_pages & (opts->ring_pages - 1))) {
		*err = -EINVAL;
		return NULL;
	}
	struct vmr_faults *f = calloc(1, sizeof(*f));
	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	f->page = (size_t)sysconf(_SC_PAGESIZE);
	f->ring_pages = opts->ring_pages;
	int e = -ENOENT;
	if (opts->source != VMR_FAULTS_SOFTWARE) {
		e = setup_tracepoint(f);
		if (!e)
			e = probe(f);
		if (e && opts->source == VMR_FAULTS_TRACEPOINT) {
			free(f);
			*err = e;
			return NULL;
		}
		if (e)
			*why = e == -EACCES || e == -EPERM
			? "exceptions:page_fault_user tracepoint not permitted: "
			  "using the software page-fault events (no access type)"
			: "exceptions:page_fault_user tracepoint not available: "
			  "using the software page-fault events (no access type)";
	}
	if (e) {
		setup_software(f);
		if ((e = probe(f))) {
			free(f);
			*why = NULL;
			*err = e;
			return NULL;
		}
	}
	return f;
}

struct vmr_faults *vmr_faults_new(int *err, const char **why)
{
	return vmr_faults_new_opts(NULL, err, why);
}

static uint32_t default_pages(const struct vmr_faults *f)
{
	if (f->ring_pages)
		return f->ring_pages;
	size_t live = f->by_tid.n;
	return live < 16 ? 256 : live < 256 ? 64 : 16;
}

/* Close t's events and unmap its ring. */
static void ring_close(struct ftask *t)
{
	if (t->base && t->base != MAP_FAILED)
		munmap(t->base, t->map_len);
	for (int i = 0; i < FE__N; i++)
		if (t->fev[i] >= 0)
			close(t->fev[i]);
}

/* One more event of t's ring, like its lead `like` (inherited and enabled
 * alike) but of attributes a: 0, or -errno (none kept). */
static int ring_add(struct ftask *t, int which, const struct perf_event_attr *a,
		    const struct perf_event_attr *like, pid_t pid, int cpu)
{
	struct perf_event_attr at = *a;
	at.inherit = like->inherit;
	at.disabled = like->disabled;
	at.enable_on_exec = like->enable_on_exec;
	at.read_format = like->read_format;
	int fd = perf_open_cpu(&at, pid, cpu);
	if (fd < 0)
		return fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, t->fd) < 0 ||
	    ioctl(fd, PERF_EVENT_IOC_ID, &t->id[which]) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	t->fev[which] = fd;
	return 0;
}

/* Open t's events with attributes a for its lead on (pid, cpu) and map
 * its ring.  Returns 0 or -errno (nothing kept open). */
static int open_ring(struct vmr_faults *f, struct ftask *t, const struct perf_event_attr *a,
		     pid_t pid, int cpu)
{
	struct perf_event_attr at = *a;
	int lead = f->tracepoint ? FE_USER : FE_MIN, e;
	for (int i = 0; i < FE__N; i++)
		t->fev[i] = -1;
	t->base = NULL;
	int fd = perf_open_cpu(&at, pid, cpu);
	if (fd < 0)
		return fd;
	t->fd = t->fev[lead] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &t->id[lead]) < 0) {
		e = -errno;
		ring_close(t);
		return e;
	}
	/* Halve the ring while the kernel refuses the locked memory (an
	 * unprivileged user's perf_event_mlock_kb). */
	for (uint32_t pages = default_pages(f);; pages /= 2) {
		t->map_len = (pages + 1) * f->page;
		t->base = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		if (t->base != MAP_FAILED)
			break;
		e = -errno;
		if (pages == 1 || (e != -EPERM && e != -ENOMEM)) {
			ring_close(t);
			return e;
		}
	}
	struct perf_event_mmap_page *m = t->base;
	if (m->data_size) { /* Linux >= 4.1 says where the data is */
		t->data = (unsigned char *)t->base + m->data_offset;
		t->data_size = m->data_size;
	} else {
		t->data = (unsigned char *)t->base + f->page;
		t->data_size = t->map_len - f->page;
	}
	t->tail = __atomic_load_n(&m->data_tail, __ATOMIC_RELAXED);
	/* The counted faults: the major ones (and, with the tracepoint, the
	 * minor ones) write into the lead's ring. */
	struct perf_event_attr sw = f->sw;
	if (f->tracepoint && (e = ring_add(t, FE_MIN, &sw, &at, pid, cpu))) {
		ring_close(t);
		return e;
	}
	sw.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
	if ((e = ring_add(t, FE_MAJ, &sw, &at, pid, cpu))) {
		ring_close(t);
		return e;
	}
	if (f->tracepoint && f->kconfig) {
		/* Without it the kernel's faults have no access type (it fails
		 * where perf_event_paranoid forbids kernel tracepoints). */
		struct perf_event_attr ka = at;
		ka.config = f->kconfig;
		ring_add(t, FE_KERNEL, &ka, &at, pid, cpu);
	}
	return 0;
}

int vmr_faults_add_task(struct vmr_faults *f, pid_t tid, uint32_t thread,
			uint32_t proc)
{
	if (f->tree)
		return 0; /* (the tree's events have it from its birth) */
	if (tid <= 0)
		return -EINVAL;
	if (vmt_htab_get(&f->by_tid, (uint64_t)tid, 0))
		return -EEXIST;
	if (vmt_grow(&f->tasks, &f->cap, f->ntasks + 1, sizeof(*f->tasks)))
		return -ENOMEM;
	struct ftask *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->tid = tid;
	t->thread = thread;
	t->proc = proc;
	t->cpu = -1;
	/* Enabled at once (attr.disabled = 0): tid is stopped, so counting
	 * starts with its next instruction. */
	int e = open_ring(f, t, &f->attr, tid, -1);
	if (e) {
		free(t);
		return e;
	}
	if (vmt_htab_set(&f->by_tid, (uint64_t)tid, 0, f->ntasks)) {
		ring_close(t);
		free(t);
		return -ENOMEM;
	}
	f->tasks[f->ntasks++] = t;
	return 0;
}

void vmr_faults_set_access(struct vmr_faults *f, vmr_faults_access_fn fn, void *ctx)
{
	f->access = fn;
	f->access_ctx = ctx;
	if (fn && !f->tracepoint) {
		/* (the registers an instruction's operands may name: rsi and
		 * rdi of string moves, rsp of pushes and calls) */
		f->sample_regs = (1ull << PERF_REG_X86_SI) | (1ull << PERF_REG_X86_DI) |
				 (1ull << PERF_REG_X86_SP);
		f->attr.sample_type |= PERF_SAMPLE_REGS_USER;
		f->attr.sample_regs_user = f->sample_regs;
		f->sw.sample_type |= PERF_SAMPLE_REGS_USER;
		f->sw.sample_regs_user = f->sample_regs;
	}
}

int vmr_faults_add_tree(struct vmr_faults *f, pid_t pid, vmr_faults_who_fn who, void *ctx)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (f->tree || f->ntasks)
		return -EBUSY;
	if (ncpu < 1 || ncpu > 4096)
		return -EINVAL;
	struct perf_event_attr a = f->attr;
	/* Every task pid creates inherits the events, from its birth: no
	 * thread starts unsampled.  Counting starts at pid's exec. */
	a.inherit = 1;
	a.disabled = 1;
	a.enable_on_exec = 1;
	f->tree = 1;
	f->who = who;
	f->who_ctx = ctx;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		if (vmt_grow(&f->tasks, &f->cap, f->ntasks + 1, sizeof(*f->tasks)))
			return -ENOMEM;
		struct ftask *t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->tid = -1;
		t->cpu = cpu;
		int e = open_ring(f, t, &a, pid, cpu);
		if (e == -ENODEV || e == -EINVAL) { /* (a CPU that is not online) */
			free(t);
			continue;
		}
		if (e) {
			free(t);
			return e;
		}
		f->tasks[f->ntasks++] = t;
	}
	return f->ntasks ? 0 : -ENODEV;
}

uint64_t vmr_faults_unknown(const struct vmr_faults *f)
{
	return f ? f->unknown : 0;
}

void vmr_faults_remove_task(struct vmr_faults *f, pid_t tid)
{
	const uint64_t *idx = f ? vmt_htab_get(&f->by_tid, (uint64_t)tid, 0) : NULL;
	if (!idx)
		return;
	struct ftask *t = f->tasks[*idx];
	/* Stop new samples; keep the ring until the next drain reads it. */
	for (int i = 0; i < FE__N; i++)
		if (t->fev[i] >= 0)
			ioctl(t->fev[i], PERF_EVENT_IOC_DISABLE, 0);
	t->gone = 1;
	t->check_lost = 1;
	vmt_htab_del(&f->by_tid, (uint64_t)tid, 0);
}

static void task_free(struct ftask *t)
{
	ring_close(t);
	free(t);
}

/* Free drained removed tasks; reindex the live ones. */
static void compact(struct vmr_faults *f)
{
	size_t n = 0;
	for (size_t i = 0; i < f->ntasks; i++) {
		struct ftask *t = f->tasks[i];
		if (t->gone && t->tail == t->head) {
			task_free(t);
			continue;
		}
		if (!t->gone && n != i) /* (a slot that exists: no allocation) */
			*vmt_htab_get(&f->by_tid, (uint64_t)t->tid, 0) = n;
		f->tasks[n++] = t;
	}
	f->ntasks = n;
}

/* The record at t->tail, contiguous (copied to f->rec if it wraps), or
 * NULL when the ring holds garbage (then the rest of it is dropped). */
static const unsigned char *peek(struct vmr_faults *f, struct ftask *t,
				 uint32_t *size)
{
	uint64_t mask = t->data_size - 1, avail = t->head - t->tail;
	struct perf_event_header h;
	uint64_t off = t->tail & mask;
	if (avail < sizeof(h))
		return NULL;
	for (size_t i = 0; i < sizeof(h); i++)
		((unsigned char *)&h)[i] = t->data[(off + i) & mask];
	if (h.size < sizeof(h) || h.size > avail || (h.size & 7))
		return NULL;
	*size = h.size;
	if (off + h.size <= t->data_size)
		return t->data + off;
	if (f->rec_cap < h.size) {
		unsigned char *r = realloc(f->rec, h.size);
		if (!r)
			return NULL;
		f->rec = r;
		f->rec_cap = h.size;
	}
	size_t first = (size_t)(t->data_size - off);
	memcpy(f->rec, t->data + off, first);
	memcpy(f->rec + first, t->data, h.size - first);
	return f->rec;
}

static uint64_t get_uint(const unsigned char *p, uint32_t size)
{
	uint64_t v = 0;
	if (size == 8) {
		memcpy(&v, p, 8);
	} else if (size == 4) {
		uint32_t x;
		memcpy(&x, p, 4);
		v = x;
	} else if (size == 2) {
		uint16_t x;
		memcpy(&x, p, 2);
		v = x;
	} else if (size == 1) {
		v = *p;
	}
	return v;
}

/* The last fault exception of tid (made, zeroed, with `create`); NULL
 * when there is none (or no memory for one). */
static struct fpend *pend_get(struct vmr_faults *f, pid_t tid, int create)
{
	const uint64_t *ix = vmt_htab_get(&f->pend_of, (uint64_t)(uint32_t)tid, 0);
	if (ix)
		return &f->pend[*ix];
	if (!create || vmt_grow(&f->pend, &f->cappend, f->npend + 1, sizeof(*f->pend)) ||
	    vmt_htab_set(&f->pend_of, (uint64_t)(uint32_t)tid, 0, f->npend))
		return NULL;
	memset(&f->pend[f->npend], 0, sizeof(*f->pend));
	return &f->pend[f->npend++];
}

/* Which of t's events wrote the sample r (FE_*), or -1. */
static int sample_event(const struct ftask *t, const unsigned char *r, uint32_t size)
{
	uint64_t id;
	if (size < sizeof(struct perf_event_header) + 8)
		return -1;
	memcpy(&id, r + sizeof(struct perf_event_header), 8);
	for (int i = 0; i < FE__N; i++)
		if (t->fev[i] >= 0 && t->id[i] == id)
			return i;
	return -1;
}

/* A tracepoint's sample (after its identifier): the task's last fault
 * exception, kept for the counted event that may follow. */
static void take_exception(struct vmr_faults *f, struct ftask *t, const unsigned char *p,
			   const unsigned char *end)
{
	/* tid (pid, tid), time, raw size, raw */
	if (end - p < 8 + 8 + 4)
		return;
	uint32_t ids[2], raw_size;
	uint64_t ts;
	memcpy(ids, p, 8);
	memcpy(&ts, p + 8, 8);
	memcpy(&raw_size, p + 16, 4);
	t->last_ts = ts;
	const unsigned char *raw = p + 20;
	if (raw_size > (uint64_t)(end - raw))
		return;
	const struct tp_field *fl[3] = { &f->f_addr, &f->f_ip, &f->f_err };
	for (int i = 0; i < 3; i++)
		if (fl[i]->offset + fl[i]->size > raw_size)
			return;
	uint64_t addr = get_uint(raw + f->f_addr.offset, f->f_addr.size);
	struct fpend *pd = pend_get(f, (pid_t)ids[1], 1);
	if (!pd)
		return;
	/* (the kernel's fault on its own memory: not the program's; it
	 * still ends the task's last exception) */
	pd->valid = !(addr >> 63);
	pd->addr = addr;
	pd->ip = get_uint(raw + f->f_ip.offset, f->f_ip.size);
	pd->ts = ts;
	uint64_t ec = get_uint(raw + f->f_err.offset, f->f_err.size);
	pd->access = ec & PF_WRITE ? VMT_FAULT_WRITE : ec & PF_INSTR ? VMT_FAULT_EXEC : VMT_FAULT_READ;
}

/* A counted fault's sample, p past its identifier: ip, tid (pid, tid),
 * time, addr.  -1 when it is too short. */
struct counted {
	uint64_t ip, ts, addr;
	uint32_t pid, tid;
};

static int counted_sample(const unsigned char *p, const unsigned char *end, struct counted *c)
{
	uint32_t ids[2];
	if (end - p < 32)
		return -1;
	memcpy(&c->ip, p, 8);
	memcpy(ids, p + 8, 8);
	memcpy(&c->ts, p + 16, 8);
	memcpy(&c->addr, p + 24, 8);
	c->pid = ids[0];
	c->tid = ids[1];
	return 0;
}

/* The access type of a counted fault's sample from its instruction
 * (f->access), p past the sample's identifier: ip, tid, time, addr, then
 * the user registers abi, si, di, sp. */
static uint32_t sample_access(struct vmr_faults *f, const unsigned char *p,
			      const unsigned char *end, pid_t pid, uint64_t ip, uint64_t addr)
{
	uint64_t regs[4] = { 0 };
	if (end - p >= 32 + 8)
		memcpy(regs, p + 32, 8);
	if (regs[0] && end - p >= 32 + 32)
		memcpy(regs + 1, p + 40, 24);
	return f->access(f->access_ctx, pid, ip, addr, regs[0] ? regs + 1 : NULL);
}

void vmr_faults_read_code(struct vmr_faults *f, pid_t pid)
{
	if (!f || !f->access)
		return;
	for (size_t i = 0; i < f->ntasks; i++) {
		struct ftask *t = f->tasks[i];
		struct perf_event_mmap_page *m = t->base;
		uint64_t tail = t->tail, head = t->head;
		t->head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
		uint32_t size;
		const unsigned char *r;
		while (t->head - t->tail <= t->data_size && t->tail != t->head &&
		       (r = peek(f, t, &size))) {
			int which = sample_event(t, r, size);
			const unsigned char *p = r + sizeof(struct perf_event_header) + 8;
			struct counted c;
			if ((which == FE_MIN || which == FE_MAJ) &&
			    counted_sample(p, r + size, &c) == 0 && (pid_t)c.pid == pid)
				(void)sample_access(f, p, r + size, pid, c.ip, c.addr);
			t->tail += size;
		}
		t->tail = tail;
		t->head = head;
	}
}

/* Decode the record r (size bytes) of task t into *ev.  Returns 1 for an
 * event to append, 0 for a record to skip (other record types, short
 * records, losses already reported, a fault exception, which waits for
 * its counted event). */
static int decode(struct vmr_faults *f, struct ftask *t,
		  const unsigned char *r, uint32_t size, struct vmt_event *ev)
{
	struct perf_event_header h;
	memcpy(&h, r, sizeof(h));
	const unsigned char *p = r + sizeof(h), *end = r + size;
	memset(ev, 0, sizeof(*ev));
	ev->thread = t->thread;
	ev->proc = t->proc;
	ev->ts_ns = t->last_ts;
	if (h.type == PERF_RECORD_LOST) {
		/* id, lost, then sample_id {pid, tid, time, identifier}. */
		if (end - p < 16)
			return 0;
		uint64_t lost;
		memcpy(&lost, p + 8, 8);
		if (end - p >= 40)
			memcpy(&ev->ts_ns, end - 16, 8);
		/* Part of it may have been reported already from the count
		 * read() gave at an earlier drain. */
		t->ring_lost += lost;
		if (t->ring_lost <= t->told_lost)
			return 0;
		ev->kind = VMT_EV_LOST;
		ev->u.lost.count = t->ring_lost - t->told_lost;
		ev->u.lost.what = VMT_LOST_FAULTS;
		t->told_lost = t->ring_lost;
		f->lost += ev->u.lost.count;
		t->last_ts = ev->ts_ns;
		return 1;
	}
	if (h.type != PERF_RECORD_SAMPLE)
		return 0; /* throttling notes etc. */
	int which = sample_event(t, r, size);
	p += 8; /* (its identifier) */
	if (which == FE_USER || which == FE_KERNEL) {
		take_exception(f, t, p, end);
		return 0;
	}
	if (which != FE_MIN && which != FE_MAJ)
		return 0;
	struct counted c;
	if (counted_sample(p, end, &c))
		return 0;
	ev->u.fault.ip = c.ip;
	ev->ts_ns = c.ts;
	ev->u.fault.addr = c.addr;
	t->last_ts = ev->ts_ns;
	ev->kind = VMT_EV_FAULT;
	ev->u.fault.flags = which == FE_MAJ ? VMT_FLT_MAJOR : 0;
	/* The exception it counted, when its tracepoint's sample came first:
	 * its access and time (the fault's start). */
	struct fpend *pd = f->tracepoint ? pend_get(f, (pid_t)c.tid, 0) : NULL;
	if (pd && pd->valid && (pd->addr ^ ev->u.fault.addr) < f->page) {
		ev->ts_ns = pd->ts;
		ev->u.fault.ip = pd->ip;
		ev->u.fault.access = pd->access;
	} else if (f->access) {
		ev->u.fault.access = sample_access(f, p, end, (pid_t)c.pid, c.ip, c.addr);
	}
	if (pd)
		pd->valid = 0;
	if (f->tree) {
		/* The task is the sample's; faults on the recorder's own
		 * memory are not the program's. */
		int who = f->who(f->who_ctx, (pid_t)c.tid, c.addr, &ev->thread, &ev->proc);
		if (who) {
			f->unknown += who > 0;
			return 0;
		}
	}
	return 1;
}

/* *ts = time of the record at t->tail (for merging; the task's last time
 * when the record has none).  Returns 0 when there is no valid record. */
static int next_time(struct vmr_faults *f, struct ftask *t, uint64_t *ts)
{
	uint32_t size;
	const unsigned char *r = peek(f, t, &size);
	if (!r)
		return 0;
	struct perf_event_header h;
	memcpy(&h, r, sizeof(h));
	*ts = t->last_ts;
	if (h.type == PERF_RECORD_SAMPLE) {
		/* after the identifier: the time follows the tid (and, for
		 * the counted faults' events, the ip) */
		int which = sample_event(t, r, size);
		size_t at = sizeof(h) + 8 + (which == FE_MIN || which == FE_MAJ ? 16 : 8);
		if (which >= 0 && at + 8 <= size)
			memcpy(ts, r + at, 8);
	} else if (size >= sizeof(h) + 24) {
		memcpy(ts, r + size - 16, 8); /* sample_id_all trailer */
	}
	return 1;
}

/* Compare the kernel's lost count for t with what we reported; append a
 * LOST event for the difference.  Returns events appended or -err. */
static int report_read_lost(struct vmr_faults *f, struct ftask *t,
			    vmt_writer *w)
{
	uint64_t v[2] = { 0, 0 }, kv[2];
	if (!f->lost_count_read)
		return 0;
	/* A sample the shared ring had no room for counts as the loss of the
	 * event whose it was. */
	for (int i = 0; i < FE__N; i++)
		if (t->fev[i] >= 0 && read(t->fev[i], kv, sizeof(kv)) == sizeof(kv))
			v[1] += kv[1];
	if (v[1] <= t->told_lost)
		return 0;
	struct vmt_event ev = { .kind = VMT_EV_LOST, .thread = t->thread,
				.proc = t->proc };
	/* After everything appended so far: the stream stays in order. */
	ev.ts_ns = f->last_out_ts > t->last_ts ? f->last_out_ts : t->last_ts;
	ev.u.lost.count = v[1] - t->told_lost;
	ev.u.lost.what = VMT_LOST_FAULTS;
	int err = vmt_writer_append(w, &ev);
	if (err)
		return err;
	t->told_lost = v[1];
	f->lost += ev.u.lost.count;
	f->last_out_ts = ev.ts_ns;
	return 1;
}

int vmr_faults_drain(struct vmr_faults *f, vmt_writer *w, uint64_t up_to_ns)
{
	int appended = 0, err = 0;
	size_t nact = 0;
	/* Rings with data, with the time of their next record (scratch kept
	 * across drains: this runs at every traced call). */
	if (vmt_grow(&f->act, &f->act_cap, f->ntasks, sizeof(*f->act)))
		return -ENOMEM;
	struct fact *act = f->act;
	for (size_t i = 0; i < f->ntasks; i++) {
		struct ftask *t = f->tasks[i];
		struct perf_event_mmap_page *m = t->base;
		t->head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
		if (t->head - t->tail > t->data_size)
			t->tail = t->head; /* cannot happen; never trust it */
		/* Samples are only dropped when the ring has no room for one:
		 * with room left, nothing was lost since the last drain. */
		if (t->data_size - (t->head - t->tail) < RING_SLACK)
			t->check_lost = 1;
		uint64_t ts;
		if (t->head != t->tail) {
			if (next_time(f, t, &ts))
				act[nact++] = (struct fact){ t, ts };
			else
				t->tail = t->head; /* garbage: drop */
		}
	}
	while (nact && !err) {
		size_t best = 0;
		for (size_t i = 1; i < nact; i++)
			if (act[i].ts < act[best].ts)
				best = i;
		if (act[best].ts > up_to_ns)
			break;
		struct ftask *t = act[best].t;
		uint32_t size;
		const unsigned char *r = peek(f, t, &size);
		struct vmt_event ev;
		if (r && decode(f, t, r, size, &ev)) {
			if ((err = vmt_writer_append(w, &ev)))
				break;
			if (ev.ts_ns > f->last_out_ts)
				f->last_out_ts = ev.ts_ns;
			appended++;
		}
		t->tail += r ? size : t->head - t->tail;
		if (t->tail == t->head || !next_time(f, t, &act[best].ts)) {
			t->tail = t->head;
			act[best] = act[--nact];
		}
	}
	/* Losses the kernel has not written into a ring yet (it does so only
	 * when the next sample fits): report them now, after everything
	 * drained, so that a run's loss is never silent. */
	for (size_t i = 0; i < f->ntasks && !err; i++) {
		struct ftask *t = f->tasks[i];
		if (!t->check_lost || t->tail != t->head)
			continue;
		t->check_lost = 0;
		int n = report_read_lost(f, t, w);
		if (n < 0)
			err = n;
		else
			appended += n;
	}
	/* Give the space back to the kernel (after our reads of it). */
	for (size_t i = 0; i < f->ntasks; i++) {
		struct perf_event_mmap_page *m = f->tasks[i]->base;
		__atomic_store_n(&m->data_tail, f->tasks[i]->tail,
				 __ATOMIC_RELEASE);
	}
	compact(f);
	return err ? err : appended;
}

uint64_t vmr_faults_lost(const struct vmr_faults *f)
{
	return f->lost;
}

void vmr_faults_free(struct vmr_faults *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->ntasks; i++)
		task_free(f->tasks[i]);
	free(f->tasks);
	free(f->rec);
	free(f->act);
	free(f->pend);
	vmt_htab_free(&f->by_tid);
	vmt_htab_free(&f->pend_of);
	free(f);
}
