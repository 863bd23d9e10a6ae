/*
 * touch.c - which pages of a range are present, as TOUCH runs.
 *
 * Source of truth is /proc/PID/pagemap of the stopped tracee.  Kernels
 * since 6.7 answer the PAGEMAP_SCAN ioctl with ranges of pages that share
 * categories, so a sparse gigabyte costs one call; older ones need a
 * pread of 8 bytes per page, which is capped.
 *
 * Page states (enum vmt_page_state):
 *   present file page (page cache, or shmem)   -> PRESENT (write unknown)
 *   present anonymous page mapping the zero pfn -> READ (read fault only)
 *   present anonymous page, other pfn           -> WRITTEN (a private page
 *       exists: written, or populated by MAP_POPULATE/mlock)
 *   swapped out                                 -> PRESENT (was touched)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/types.h>
#include "recording_int.h"

/* ---- run-length encoding ------------------------------------------------ */

#define DEFAULT_MAX_RUNS 65536u

void vmr_runs_init(struct vmr_runs *r, unsigned page_shift, uint32_t max,
		   vmr_runs_emit_fn emit, void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->page_shift = page_shift;
	r->max = max >= 2 ? max : DEFAULT_MAX_RUNS;
	r->emit = emit;
	r->ctx = ctx;
}

void vmr_runs_free(struct vmr_runs *r)
{
	free(r->runs);
	r->runs = NULL;
	r->n = r->cap = 0;
}

void vmr_runs_begin(struct vmr_runs *r)
{
	r->n = 0;
	r->npages = 0;
}

static int push(struct vmr_runs *r, uint64_t pages, uint32_t state)
{
	if (vmt_grow(&r->runs, &r->cap, (size_t)r->n + 1, sizeof(*r->runs)))
		return -ENOMEM;
	r->runs[r->n].pages = pages;
	r->runs[r->n].state = state;
	r->n++;
	r->npages += pages;
	return 0;
}

int vmr_runs_end(struct vmr_runs *r)
{
	int err = 0;

	/* Runs never end with ABSENT: gaps are only added before a present
	 * run.  So anything buffered is worth an event. */
	if (r->n)
		err = r->emit(r->ctx, r->start, r->runs, r->n, r->npages);
	vmr_runs_begin(r);
	return err;
}

int vmr_runs_add(struct vmr_runs *r, uint64_t addr, uint64_t npages,
		 uint32_t state)
{
	int err;

	if (state == VMT_PAGE_ABSENT || npages == 0)
		return 0;
	if (r->n) {
		uint64_t gap = addr > r->cursor ? (addr - r->cursor) >> r->page_shift : 0;
		struct vmt_touch_run *last = &r->runs[r->n - 1];
		if (!gap && last->state == state) {
			last->pages += npages;
			r->npages += npages;
			r->cursor = addr + (npages << r->page_shift);
			return 0;
		}
		if (r->n + (gap ? 2 : 1) > r->max) {
			if ((err = vmr_runs_end(r)))
				return err;
		} else if (gap && (err = push(r, gap, VMT_PAGE_ABSENT))) {
			return err;
		}
	}
	if (!r->n)
		r->start = addr;
	if ((err = push(r, npages, state)))
		return err;
	r->cursor = addr + (npages << r->page_shift);
	return 0;
}

/* ---- PAGEMAP_SCAN (linux/fs.h of 6.7; defined here for older headers) --- */

struct vmr_page_region {
	__u64 start, end, categories;
};

struct vmr_pm_scan_arg {
	__u64 size, flags, start, end, walk_end, vec, vec_len, max_pages,
		category_inverted, category_mask, category_anyof_mask,
		return_mask;
};

#define VMR_PAGEMAP_SCAN _IOWR('f', 16, struct vmr_pm_scan_arg)
#define VMR_PAGE_IS_FILE (1u << 2)
#define VMR_PAGE_IS_PRESENT (1u << 3)
#define VMR_PAGE_IS_SWAPPED (1u << 4)
#define VMR_PAGE_IS_PFNZERO (1u << 5)

#define VEC_LEN 512u
#define ENT_LEN 4096u
#define FALLBACK_CAP (1ull << 20) /* 4 GiB of 4 KiB pages per range */

/* pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_FILE (1ull << 61)
#define PM_PFN_MASK ((1ull << 55) - 1)

/* The zero page's pfn, found by reading our own pagemap for a page that was
 * only read.  Needs CAP_SYS_ADMIN (else pfns read as 0: returns 0). */
static uint64_t find_zero_pfn(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t ent = 0;
	volatile char *p;
	int fd;

	p = mmap(NULL, (size_t)ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	(void)p[0];
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (pread(fd, &ent, 8, (off_t)((uintptr_t)p / (uintptr_t)ps * 8)) != 8)
			ent = 0;
		close(fd);
	}
	munmap((void *)p, (size_t)ps);
	return (ent & PM_PRESENT) ? ent & PM_PFN_MASK : 0;
}

/* Does this kernel know PAGEMAP_SCAN?  Asked once, on our own stack page,
 * so that a bad range later is never mistaken for a missing feature. */
static int probe_scan(void *vec)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t here = (uintptr_t)&ps & ~(uint64_t)(ps - 1);
	struct vmr_pm_scan_arg a = {
		.size = sizeof(a),
		.start = here,
		.end = here + (uint64_t)ps,
		.vec = (uintptr_t)vec,
		.vec_len = 1,
		.category_anyof_mask = VMR_PAGE_IS_PRESENT,
		.return_mask = VMR_PAGE_IS_PRESENT,
	};
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return 0;
	n = ioctl(fd, VMR_PAGEMAP_SCAN, &a);
	close(fd);
	return n == 1;
}

int vmr_pagemap_init(struct vmr_pagemap *pm)
{
	memset(pm, 0, sizeof(*pm));
	pm->fallback_cap = FALLBACK_CAP;
	pm->vec = malloc(VEC_LEN * sizeof(struct vmr_page_region));
	if (!pm->vec)
		return -ENOMEM;
	pm->scan = probe_scan(pm->vec);
	return 0;
}

void vmr_pagemap_free(struct vmr_pagemap *pm)
{
	free(pm->vec);
	free(pm->ent);
	pm->vec = pm->ent = NULL;
}

static uint32_t scan_state(uint64_t cat)
{
	if (!(cat & VMR_PAGE_IS_PRESENT))
		return VMT_PAGE_PRESENT; /* swapped */
	if (cat & VMR_PAGE_IS_FILE)
		return VMT_PAGE_PRESENT;
	return (cat & VMR_PAGE_IS_PFNZERO) ? VMT_PAGE_READ : VMT_PAGE_WRITTEN;
}

/* Walk [start, end) with PAGEMAP_SCAN, handing each batch of present or
 * swapped regions to batch().  Returns 0 or the first -err. */
static int scan_walk(struct vmr_pagemap *pm, int fd, uint64_t start,
		     uint64_t end,
		     int (*batch)(void *ctx, const struct vmr_page_region *v,
				  long n),
		     void *ctx)
{
	while (start < end) {
		struct vmr_pm_scan_arg a = {
			.size = sizeof(a),
			.start = start,
			.end = end,
			.vec = (uintptr_t)pm->vec,
			.vec_len = VEC_LEN,
			.category_anyof_mask = VMR_PAGE_IS_PRESENT | VMR_PAGE_IS_SWAPPED,
			.return_mask = VMR_PAGE_IS_PRESENT | VMR_PAGE_IS_SWAPPED |
				       VMR_PAGE_IS_FILE | VMR_PAGE_IS_PFNZERO,
		};
		long n = ioctl(fd, VMR_PAGEMAP_SCAN, &a);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		int err = batch(ctx, pm->vec, n);
		if (err)
			return err;
		if (a.walk_end <= start)
			break; /* no progress: never loop forever */
		start = a.walk_end;
	}
	return 0;
}

static int batch_runs(void *ctx, const struct vmr_page_region *v, long n)
{
	struct vmr_runs *r = ctx;

	for (long i = 0; i < n; i++) {
		int err = vmr_runs_add(r, v[i].start,
				       (v[i].end - v[i].start) >> r->page_shift,
				       scan_state(v[i].categories));
		if (err)
			return err;
	}
	return 0;
}

static uint32_t entry_state(const struct vmr_pagemap *pm, uint64_t e)
{
	if (!(e & PM_PRESENT))
		return (e & PM_SWAPPED) ? VMT_PAGE_PRESENT : VMT_PAGE_ABSENT;
	if (e & PM_FILE)
		return VMT_PAGE_PRESENT;
	if (!(e & PM_PFN_MASK) || !pm->zero_pfn)
		return VMT_PAGE_PRESENT; /* pfns hidden: cannot tell */
	return (e & PM_PFN_MASK) == pm->zero_pfn ? VMT_PAGE_READ : VMT_PAGE_WRITTEN;
}

static int scan_pread(struct vmr_pagemap *pm, int fd, uint64_t start,
		      uint64_t end, struct vmr_runs *r)
{
	unsigned shift = r->page_shift;
	uint64_t first = start >> shift, last = end >> shift;

	if (!pm->ent) {
		pm->ent = malloc(ENT_LEN * sizeof(uint64_t));
		if (!pm->ent)
			return -ENOMEM;
		pm->zero_pfn = find_zero_pfn();
	}
	if (last - first > pm->fallback_cap) {
		last = first + pm->fallback_cap;
		pm->truncated++;
	}
	for (uint64_t pg = first; pg < last;) {
		uint64_t want = last - pg < ENT_LEN ? last - pg : ENT_LEN;
		ssize_t got = pread(fd, pm->ent, want * 8, (off_t)(pg * 8));
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (got < 8)
			break;
		for (uint64_t i = 0; i < (uint64_t)got / 8; i++) {
			int err = vmr_runs_add(r, (pg + i) << shift, 1,
					       entry_state(pm, pm->ent[i]));
			if (err)
				return err;
		}
		pg += (uint64_t)got / 8;
	}
	return 0;
}

int vmr_pagemap_scan(struct vmr_pagemap *pm, int fd, uint64_t start,
		     uint64_t end, struct vmr_runs *r)
{
	uint64_t mask = (1ull << r->page_shift) - 1;

	start &= ~mask;
	end = (end + mask) & ~mask;
	if (end <= start)
		return 0;
	if (pm->scan)
		return scan_walk(pm, fd, start, end, batch_runs, r);
	return scan_pread(pm, fd, start, end, r);
}

struct collect {
	struct vmr_present **v;
	size_t *cap, n;
};

static int batch_collect(void *ctx, const struct vmr_page_region *rv, long k)
{
	struct collect *c = ctx;

	if (vmt_grow(c->v, c->cap, c->n + (size_t)k, sizeof(**c->v)))
		return -ENOMEM;
	for (long i = 0; i < k; i++)
		(*c->v)[c->n++] = (struct vmr_present){ rv[i].start, rv[i].end,
							scan_state(rv[i].categories) };
	return 0;
}

long vmr_pagemap_collect(struct vmr_pagemap *pm, int fd, uint64_t start,
			 uint64_t end, struct vmr_present **v, size_t *cap)
{
	struct collect c = { v, cap, 0 };
	int err;

	if (!pm->scan)
		return -EOPNOTSUPP;
	err = scan_walk(pm, fd, start, end, batch_collect, &c);
	return err ? err : (long)c.n;
}

/* ---- touch events of a recording ---------------------------------------- */

int vmr_pagemap_fd(struct vmr_rec *r, struct vmr_task *t)
{
	struct vmr_proc *p = t->proc;
	char path[64];

	if (p->pagemap_fd >= 0)
		return p->pagemap_fd;
	/* Through the task's own tid: a thread group leader that has exited
	 * (a zombie while other threads run) has no memory to show. */
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)t->tid);
	p->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	return p->pagemap_fd >= 0 ? p->pagemap_fd : -errno;
}

static int emit_runs(void *ctx, uint64_t start, const struct vmt_touch_run *runs,
		     uint32_t nruns, uint64_t npages)
{
	struct vmr_rec *r = ctx;
	struct vmt_event *ev = &r->touch_ev;

	ev->kind = VMT_EV_TOUCH;
	ev->u.touch.start = start;
	ev->u.touch.npages = npages;
	ev->u.touch.nruns = nruns;
	ev->u.touch.runs = runs;
	return vmr_emit(r, ev);
}

void vmr_touch_begin(struct vmr_rec *r, struct vmr_task *t, uint32_t reason,
		     uint64_t ts)
{
	if (!r->runs.emit)
		vmr_runs_init(&r->runs, r->page_shift, 0, emit_runs, r);
	r->touch_ev.thread = t->thread;
	r->touch_ev.proc = t->proc->index;
	r->touch_ev.ts_ns = ts;
	r->touch_ev.u.touch.reason = reason;
	vmr_runs_begin(&r->runs);
}

int vmr_touch_range(struct vmr_rec *r, struct vmr_task *t, uint64_t start,
		    uint64_t end, uint32_t reason, uint64_t ts)
{
	int fd, err;

	if (end <= start)
		return 0;
	fd = vmr_pagemap_fd(r, t);
	if (fd < 0)
		return fd;
	vmr_touch_begin(r, t, reason, ts);
	err = vmr_pagemap_scan(&r->pm, fd, start, end, &r->runs);
	if (err) {
		vmr_runs_begin(&r->runs); /* a partial picture is not written */
		return err;
	}
	return vmr_runs_end(&r->runs);
}

/* Touch state of every mapping at exit, except the kernel's special ones
 * and PROT_NONE reservations (which cannot have been touched).  One TOUCH
 * event per mapping, as before a discarding op; with PAGEMAP_SCAN the whole
 * address space is read in one pass and split by mapping here, instead of
 * one ioctl per mapping (processes with hundreds of mappings exit often in
 * a build or a shell script). */
void vmr_touch_exit(struct vmr_rec *r, struct vmr_task *t)
{
	uint64_t ts = vmt_now_ns();
	long n = -EOPNOTSUPP;
	int fd;

	if (vmr_maps_read(&r->maps, t->tid) || r->maps.n == 0)
		return;
	fd = vmr_pagemap_fd(r, t);
	if (fd >= 0)
		n = vmr_pagemap_collect(&r->pm, fd, r->maps.e[0].start,
					r->maps.e[r->maps.n - 1].end,
					&r->present, &r->present_cap);
	size_t k = 0;
	for (uint32_t i = 0; i < r->maps.n; i++) {
		const struct vmt_map_entry *e = &r->maps.e[i];
		if (!(e->perms & (VMT_PROT_R | VMT_PROT_W | VMT_PROT_X)))
			continue;
		if (!strncmp(e->path, "[v", 2)) /* [vdso] [vvar] [vsyscall] */
			continue;
		if (n < 0) {
			if (vmr_touch_range(r, t, e->start, e->end, VMT_TOUCH_EXIT, ts))
				break;
			continue;
		}
		/* the collected ranges are sorted; a range may cross into the
		 * next mapping, so clamp rather than consume */
		while (k < (size_t)n && r->present[k].end <= e->start)
			k++;
		vmr_touch_begin(r, t, VMT_TOUCH_EXIT, ts);
		for (size_t j = k; j < (size_t)n && r->present[j].start < e->end; j++) {
			uint64_t s = r->present[j].start > e->start ? r->present[j].start : e->start;
			uint64_t x = r->present[j].end < e->end ? r->present[j].end : e->end;
			if (vmr_runs_add(&r->runs, s, (x - s) >> r->page_shift,
					 r->present[j].state))
				goto out;
		}
		if (vmr_runs_end(&r->runs))
			break;
	}
out:;
}
