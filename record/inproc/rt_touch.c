/*
 * rt_touch.c - --touch=resident in the inproc runtime: the program reads
 * its own page states (the PAGEMAP_SCAN ioctl on /proc/self/pagemap)
 * right before every call that discards pages or takes write access away,
 * and of every mapping when the process ends, and puts them in its ring
 * as TOUCH records.  The same ranges and the same page states as the
 * ptrace backend's (record/syscalls.c, record/touch.c), which reads them
 * from outside while the program is stopped.
 */
#include "rt.h"

struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct page_region {
	uint64_t start, end, categories;
};
#define PAGEMAP_SCAN 0xc0606610ul /* _IOWR('f', 16, struct pm_scan_arg) */
#define IS_FILE (1u << 2)
#define IS_PRESENT (1u << 3)
#define IS_SWAPPED (1u << 4)
#define IS_PFNZERO (1u << 5)

enum { ST_ABSENT = 0, ST_PRESENT = 1, ST_READ = 2, ST_WRITTEN = 3 };
enum { REASON_BEFORE = 0, REASON_EXIT = 1 };

#define MAX_RUNS 480

struct touch_rec {
	struct ip_touch h;
	uint32_t runs[MAX_RUNS][2];
};

struct builder {
	struct rt_thread *t;
	struct touch_rec r;
	uint64_t cursor; /* address after the last page added */
	uint32_t reason;
	uint64_t t0;
};

static uint32_t page_size(void)
{
	return rt_params.page_size ? rt_params.page_size : 4096;
}

static void flush(struct builder *b)
{
	if (!b->r.h.h.aux)
		return;
	b->r.h.h.t = b->t0;
	b->r.h.reason = b->reason;
	rt_put(b->t, IPR_TOUCH, &b->r,
	       (uint32_t)(sizeof(b->r.h) + 8u * b->r.h.h.aux));
	b->r.h.h.aux = 0;
}

static void add(struct builder *b, uint64_t start, uint64_t end, uint32_t state)
{
	uint64_t ps = page_size();
	if (!b->r.h.h.aux) {
		b->r.h.start = start;
		b->cursor = start;
	}
	if (start > b->cursor) { /* a gap of absent pages */
		if (b->r.h.h.aux == MAX_RUNS - 1) {
			flush(b);
			add(b, start, end, state);
			return;
		}
		b->r.runs[b->r.h.h.aux][0] = (uint32_t)((start - b->cursor) / ps);
		b->r.runs[b->r.h.h.aux++][1] = ST_ABSENT;
	}
	uint32_t n = b->r.h.h.aux;
	if (n && b->r.runs[n - 1][1] == state && start == b->cursor) {
		b->r.runs[n - 1][0] += (uint32_t)((end - start) / ps);
	} else {
		if (n == MAX_RUNS) {
			flush(b);
			add(b, start, end, state);
			return;
		}
		b->r.runs[n][0] = (uint32_t)((end - start) / ps);
		b->r.runs[n][1] = state;
		b->r.h.h.aux++;
	}
	b->cursor = end;
}

static uint32_t state_of(uint64_t cat)
{
	if (!(cat & IS_PRESENT))
		return ST_PRESENT; /* swapped */
	if (cat & IS_FILE)
		return ST_PRESENT;
	return (cat & IS_PFNZERO) ? ST_READ : ST_WRITTEN;
}

/* The present pages of [s, e) into b. */
static void scan(struct builder *b, long fd, uint64_t s, uint64_t e)
{
	static struct page_region vec[256];
	uint64_t ps = page_size();
	while (s < e) {
		struct pm_scan_arg a = {
			.size = sizeof(a), .start = s, .end = e,
			.vec = (uint64_t)vec, .vec_len = 256,
			.category_anyof_mask = IS_PRESENT | IS_SWAPPED,
			.return_mask = IS_PRESENT | IS_SWAPPED | IS_FILE | IS_PFNZERO,
		};
		long n = rt_sys3(NR_ioctl, fd, (long)PAGEMAP_SCAN, (long)&a);
		if (n < 0)
			return;
		for (long i = 0; i < n; i++) {
			/* (runs of at most 2^32 pages) */
			uint64_t rs = vec[i].start, re = vec[i].end;
			while (rs < re) {
				uint64_t step = re - rs > (1ull << 31) * ps ? (1ull << 31) * ps : re - rs;
				add(b, rs, rs + step, state_of(vec[i].categories));
				rs += step;
			}
		}
		if (a.walk_end <= s)
			return;
		s = a.walk_end;
	}
}

static long open_pagemap(void)
{
	return rt_sys3(NR_open, (long)"/proc/self/pagemap", 02000000 /* O_RDONLY|O_CLOEXEC */, 0);
}

static void scan_range(struct rt_thread *t, uint64_t s, uint64_t e, uint32_t reason)
{
	uint64_t ps = page_size();
	s &= ~(uint64_t)(ps - 1);
	e = (e + ps - 1) & ~(uint64_t)(ps - 1);
	if (s >= e || rt_guarded(s, e - s))
		return;
	long fd = open_pagemap();
	if (fd < 0)
		return;
	struct builder b;
	b.t = t;
	b.r.h.h.aux = 0;
	b.reason = reason;
	b.t0 = rt_now();
	scan(&b, fd, s, e);
	flush(&b);
	rt_sys1(NR_close, fd);
}

#define PROT_WRITE_ 2
#define MADV_DONTNEED_ 4
#define MADV_FREE_ 8
#define MADV_REMOVE_ 9
#define MADV_COLD_ 20
#define MADV_PAGEOUT_ 21
#define MADV_DONTNEED_LOCKED_ 24
#define MREMAP_MAYMOVE_ 1
#define MREMAP_FIXED_ 2

static uint64_t brk_cur;

void rt_touch_before(struct rt_thread *t, long nr, const uint64_t *a)
{
	uint64_t ps = page_size();
	switch (nr) {
	case NR_munmap:
		scan_range(t, a[0], a[0] + a[1], REASON_BEFORE);
		break;
	case NR_madvise:
		if (a[2] == MADV_DONTNEED_ || a[2] == MADV_FREE_ || a[2] == MADV_REMOVE_ ||
		    a[2] == MADV_COLD_ || a[2] == MADV_PAGEOUT_ || a[2] == MADV_DONTNEED_LOCKED_)
			scan_range(t, a[0], a[0] + a[1], REASON_BEFORE);
		break;
	case NR_mmap:
		if (a[3] & 0x10 /* MAP_FIXED */)
			scan_range(t, a[0], a[0] + a[1], REASON_BEFORE);
		break;
	case NR_mprotect:
	case 329: /* pkey_mprotect */
		if (!(a[2] & PROT_WRITE_) && !(a[0] & (ps - 1)))
			scan_range(t, a[0], a[0] + a[1], REASON_BEFORE);
		break;
	case NR_mremap:
		if (a[3] & (MREMAP_MAYMOVE_ | MREMAP_FIXED_))
			scan_range(t, a[0], a[0] + a[1], REASON_BEFORE);
		else if (a[2] < a[1])
			scan_range(t, a[0] + ((a[2] + ps - 1) & ~(ps - 1)), a[0] + a[1], REASON_BEFORE);
		break;
	case NR_brk:
		if (!brk_cur)
			brk_cur = (uint64_t)rt_sys1(NR_brk, 0);
		if (a[0] && a[0] < brk_cur)
			scan_range(t, a[0], brk_cur, REASON_BEFORE);
		break;
	default:
		break;
	}
}

/* (brk's result, for the next shrink; called after each brk) */
void rt_touch_brk(uint64_t v)
{
	brk_cur = v;
}

struct exit_scan {
	struct builder b;
	long fd;
};

static int exit_line(void *ctx, const struct rt_map *m)
{
	struct exit_scan *x = ctx;
	if (m->perms[0] == '-' && m->perms[1] == '-' && m->perms[2] == '-')
		return 0; /* PROT_NONE */
	if (!rt_strcmp(m->path, "[vdso]") || !rt_strcmp(m->path, "[vvar]") ||
	    !rt_strcmp(m->path, "[vsyscall]") || !rt_strcmp(m->path, "[vvar_vclock]"))
		return 0;
	if (rt_guarded(m->start, m->end - m->start))
		return 0;
	/* each mapping its own events, as the ptrace backend's exit scan */
	scan(&x->b, x->fd, m->start, m->end);
	flush(&x->b);
	return 0;
}

void rt_touch_exit(struct rt_thread *t)
{
	struct exit_scan x;
	x.fd = open_pagemap();
	if (x.fd < 0)
		return;
	x.b.t = t;
	x.b.r.h.h.aux = 0;
	x.b.reason = REASON_EXIT;
	x.b.t0 = rt_now();
	rt_maps_each(exit_line, &x);
	rt_sys1(NR_close, x.fd);
}
