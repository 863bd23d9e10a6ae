/*
 * test_asmodel.c - the address-space model against the real kernel.
 *
 * The test performs random sequences of mmap (anonymous, file, shared),
 * munmap, mprotect, mremap (in place, moves, DONTUNMAP), mlock/mlock2/
 * munlock, madvise and page touches inside a region of its own address
 * space, feeds the same calls with their real results to the model, and
 * after every step compares the model's VMAs in the region with
 * /proc/self/smaps: ranges, protection, shared/private, file offset and
 * inode, and the VmFlags the model tracks (lo lf ac nr dc wf dd hg nh mg sr
 * rr gd).  Fork copies and mlockall run in child processes that keep
 * checking their own copy of the model.  brk, shmat and snapshots are
 * tested with synthetic events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asmodel.h"
#include "tgen.h"
#include "vmtrace.h"
#include "vmtutil.h"

#define NPAGES 48 /* pages of the region */
#define FILE_PAGES 64

static long pg;
static uint8_t *region; /* [region, region + NPAGES*pg) between two guards */
static int fd_a, fd_b;	/* memfds for file mappings */
static struct stat st_a, st_b;
static char path_a[64], path_b[64];
static int verbose;
static uint32_t cur_proc; /* the process the ops are reported for */

/* ---- the kernel's view -------------------------------------------------- */

struct kvma {
	uint64_t start, end, offset, ino;
	uint32_t prot, shared, flags;
	char path[80];
};

static const struct {
	const char *mn;
	uint32_t flag;
} vmflags[] = {
	{ "lo", VAN_VMA_LOCKED },    { "lf", VAN_VMA_LOCKONFAULT }, { "ac", VAN_VMA_ACCOUNT },
	{ "nr", VAN_VMA_NORESERVE }, { "dc", VAN_VMA_DONTFORK },    { "wf", VAN_VMA_WIPEONFORK },
	{ "dd", VAN_VMA_DONTDUMP },  { "hg", VAN_VMA_HUGEPAGE },    { "nh", VAN_VMA_NOHUGEPAGE },
	{ "mg", VAN_VMA_MERGEABLE }, { "sr", VAN_VMA_SEQ_READ },    { "rr", VAN_VMA_RAND_READ },
	{ "gd", VAN_VMA_GROWSDOWN }, { "sl", VAN_VMA_SEALED },
};
#define NVMFLAGS (sizeof(vmflags) / sizeof(vmflags[0]))
#define CMP_FLAGS                                                                           \
	(VAN_VMA_LOCKED | VAN_VMA_LOCKONFAULT | VAN_VMA_ACCOUNT | VAN_VMA_NORESERVE |          \
	 VAN_VMA_DONTFORK | VAN_VMA_WIPEONFORK | VAN_VMA_DONTDUMP | VAN_VMA_HUGEPAGE |         \
	 VAN_VMA_NOHUGEPAGE | VAN_VMA_MERGEABLE | VAN_VMA_SEQ_READ | VAN_VMA_RAND_READ |      \
	 VAN_VMA_GROWSDOWN | VAN_VMA_SEALED)

/* The VMAs of /proc/self/smaps that intersect [lo, hi). */
static int kernel_vmas(uint64_t lo, uint64_t hi, struct kvma *out, int max)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int n = 0, in = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e, off, ino;
		char perms[8], dev[16];
		int pos = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &s, &e, perms, &off, dev, &ino, &pos) >= 6 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = s < hi && e > lo;
			if (!in)
				continue;
			assert_true(n < max);
			struct kvma *k = &out[n++];
			memset(k, 0, sizeof(*k));
			k->start = s, k->end = e, k->offset = off, k->ino = ino;
			k->prot = (perms[0] == 'r' ? VMT_PROT_R : 0) | (perms[1] == 'w' ? VMT_PROT_W : 0) |
				  (perms[2] == 'x' ? VMT_PROT_X : 0);
			k->shared = perms[3] == 's';
			snprintf(k->path, sizeof(k->path), "%s", line + pos);
			k->path[strcspn(k->path, "\n")] = 0;
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			for (char *t = strtok(line + 8, " \n"); t; t = strtok(NULL, " \n"))
				for (size_t i = 0; i < NVMFLAGS; i++)
					if (strcmp(t, vmflags[i].mn) == 0)
						out[n - 1].flags |= vmflags[i].flag;
		}
	}
	fclose(f);
	return n;
}

/* ---- events ------------------------------------------------------------- */

static int64_t res(long r)
{
	return r == -1 ? -errno : r;
}
static int64_t resp(void *p)
{
	return p == MAP_FAILED ? -errno : (int64_t)(uintptr_t)p;
}

static void apply(van_asmodel *m, const struct vmt_event *ev)
{
	assert_int_equal(van_asmodel_apply(m, ev), 0);
}

/* Give the model this process's current mappings. */
static void feed_snapshot(van_asmodel *m, uint32_t proc)
{
	static struct vmt_map_entry ents[512];
	static char paths[512][128];
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint32_t n = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && n < 512) {
		unsigned long s, e, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &s, &e, perms, &off, &maj, &min, &ino, &pos) < 7)
			continue;
		snprintf(paths[n], sizeof(paths[n]), "%s", line + pos);
		paths[n][strcspn(paths[n], "\n")] = 0;
		ents[n] = (struct vmt_map_entry){
			.start = s, .end = e, .offset = off, .dev = makedev(maj, min), .ino = ino,
			.perms = (perms[0] == 'r' ? VMT_PROT_R : 0) | (perms[1] == 'w' ? VMT_PROT_W : 0) |
				 (perms[2] == 'x' ? VMT_PROT_X : 0) | (perms[3] == 's' ? VMT_MAPS_SHARED : 0),
			.path = paths[n],
		};
		n++;
	}
	fclose(f);
	struct vmt_event ev = { .kind = VMT_EV_MAPS, .proc = proc };
	ev.u.maps.count = n;
	ev.u.maps.entries = ents;
	apply(m, &ev);
}

/* ---- comparison --------------------------------------------------------- */

static char history[16][160];
static unsigned nhist;

static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(history[nhist % 16], sizeof(history[0]), fmt, ap);
	va_end(ap);
	nhist++;
	if (verbose)
		fprintf(stderr, "  %s\n", history[(nhist - 1) % 16]);
}

static void print_views(const struct kvma *k, int nk, const van_asmodel *m, uint32_t proc)
{
	uint64_t lo = (uint64_t)(uintptr_t)region, hi = lo + NPAGES * pg;
	fprintf(stderr, "last ops:\n");
	for (unsigned i = nhist > 16 ? nhist - 16 : 0; i < nhist; i++)
		fprintf(stderr, "  %s\n", history[i % 16]);
	fprintf(stderr, "kernel:\n");
	for (int i = 0; i < nk; i++)
		fprintf(stderr, "  %3" PRId64 "-%3" PRId64 " prot=%u %c off=%" PRIx64 " flags=%05x %s\n",
			(int64_t)(k[i].start - lo) / pg, (int64_t)(k[i].end - lo) / pg, k[i].prot,
			k[i].shared ? 's' : 'p', k[i].offset, k[i].flags, k[i].path);
	fprintf(stderr, "model:\n");
	for (const struct van_vma *v = van_asmodel_first(m, proc, lo); v && v->start < hi;
	     v = van_asmodel_next(m, proc, v))
		fprintf(stderr, "  %3" PRId64 "-%3" PRId64 " prot=%u %c off=%" PRIx64 " flags=%05x anon=%" PRIx64 " %s\n",
			(int64_t)(v->start - lo) / pg, (int64_t)(v->end - lo) / pg, v->prot,
			v->flags & VAN_VMA_SHARED ? 's' : 'p', v->offset, v->flags & CMP_FLAGS, v->anon,
			v->path);
}

/* 0 if the model's VMAs in the region equal the kernel's. */
static int compare(const van_asmodel *m, uint32_t proc, int quiet)
{
	struct kvma k[NPAGES + 2];
	uint64_t lo = (uint64_t)(uintptr_t)region, hi = lo + NPAGES * pg;
	int nk = kernel_vmas(lo, hi, k, NPAGES + 2);
	int i = 0, bad = 0;
	const struct van_vma *v = van_asmodel_first(m, proc, lo);
	for (; v && v->start < hi && !bad; v = van_asmodel_next(m, proc, v), i++) {
		if (i >= nk) {
			bad = 1;
			break;
		}
		if (v->start != k[i].start || v->end != k[i].end || v->prot != k[i].prot ||
		    !!(v->flags & VAN_VMA_SHARED) != k[i].shared ||
		    (v->flags & CMP_FLAGS) != k[i].flags)
			bad = 1;
		if ((v->flags & VAN_VMA_FILE) && (v->offset != k[i].offset))
			bad = 1;
		if (strncmp(v->path, "/memfd:", 7) == 0 && v->ino != k[i].ino)
			bad = 1;
	}
	if (i != nk)
		bad = 1;
	if (bad && !quiet)
		print_views(k, nk, m, proc);
	return bad;
}

/* ---- the random walk ---------------------------------------------------- */

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static uint64_t pick(uint64_t n)
{
	return rnd() % n;
}

static uint8_t *page_at(uint64_t i)
{
	return region + i * pg;
}

/* A random range [*a, *a + *len) inside the region. */
static void rnd_range(uint8_t **a, uint64_t *len)
{
	uint64_t p = pick(NPAGES), n = 1 + pick(12);
	if (p + n > NPAGES)
		n = NPAGES - p;
	*a = page_at(p);
	*len = n * pg;
}

static const uint32_t prots[] = { PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE,
				  PROT_READ | PROT_WRITE, PROT_READ | PROT_EXEC };

static void op_mmap(van_asmodel *m, int kind)
{
	uint8_t *a;
	uint64_t len;
	rnd_range(&a, &len);
	uint32_t prot = prots[pick(5)];
	uint32_t flags = MAP_FIXED | MAP_PRIVATE;
	int fd = -1;
	uint64_t off = 0;
	if (kind == 0) {
		flags |= MAP_ANONYMOUS;
		if (pick(6) == 0)
			flags |= MAP_NORESERVE;
		if (pick(6) == 0)
			flags |= MAP_POPULATE;
		if (pick(10) == 0)
			flags |= MAP_LOCKED;
		if (pick(10) == 0)
			flags |= MAP_STACK;
		if (pick(20) == 0)
			flags |= MAP_GROWSDOWN;
	} else if (kind == 1) {
		int which = (int)pick(2);
		fd = which ? fd_b : fd_a;
		off = pick(FILE_PAGES - len / pg + 1) * pg;
		if (pick(2))
			flags = MAP_FIXED | MAP_SHARED;
		if (pick(8) == 0)
			flags |= MAP_POPULATE;
		const struct stat *st = which ? &st_b : &st_a;
		struct vmt_event fe = tg_ev_file(cur_proc, 0, which ? path_b : path_a, st->st_dev,
						 st->st_ino, FILE_PAGES * pg, 0, 0);
		apply(m, &fe);
	} else {
		flags = MAP_FIXED | MAP_SHARED | MAP_ANONYMOUS;
	}
	void *r = mmap(a, len, prot, flags, fd, (off_t)off);
	note("mmap(%td, %" PRIu64 ", prot=%u, flags=%#x, fd=%d, off=%" PRIu64 ") = %s",
	     (a - region) / pg, len / pg, prot, flags, fd, off / pg, r == MAP_FAILED ? "fail" : "ok");
	struct vmt_event ev = TG_SC(cur_proc, 0, VMT_OP_MMAP, resp(r), (uint64_t)(uintptr_t)a, len,
				    prot, flags, fd, off);
	apply(m, &ev);
}

static void op_munmap(van_asmodel *m)
{
	uint8_t *a;
	uint64_t len;
	rnd_range(&a, &len);
	int r = munmap(a, len);
	note("munmap(%td, %" PRIu64 ") = %d", (a - region) / pg, len / pg, r);
	struct vmt_event ev = TG_SC(cur_proc, 0, VMT_OP_MUNMAP, res(r), (uint64_t)(uintptr_t)a, len);
	apply(m, &ev);
}

static void op_mprotect(van_asmodel *m)
{
	uint8_t *a;
	uint64_t len;
	rnd_range(&a, &len);
	uint32_t prot = prots[pick(5)];
	int r = mprotect(a, len, (int)prot);
	note("mprotect(%td, %" PRIu64 ", %u) = %d", (a - region) / pg, len / pg, prot, r ? -errno : 0);
	struct vmt_event ev = TG_SC(cur_proc, 0, VMT_OP_MPROTECT, res(r), (uint64_t)(uintptr_t)a,
				    len, prot);
	apply(m, &ev);
}

static void op_mremap(van_asmodel *m, int kind)
{
	uint8_t *a;
	uint64_t olen, nlen;
	rnd_range(&a, &olen);
	nlen = (1 + pick(12)) * pg;
	uint32_t flags = 0;
	uint8_t *dst = NULL;
	if (kind == 1 || kind == 2) {
		flags = MREMAP_MAYMOVE | MREMAP_FIXED;
		uint64_t p = pick(NPAGES);
		if (kind == 2)
			flags |= MREMAP_DONTUNMAP, nlen = olen;
		if (p + nlen / pg > NPAGES)
			p = NPAGES - nlen / pg;
		dst = page_at(p);
	} else if (a + nlen > region + NPAGES * pg) {
		nlen = (uint64_t)(region + NPAGES * pg - a);
	}
	void *r = mremap(a, olen, nlen, (int)flags, dst);
	note("mremap(%td, %" PRIu64 ", %" PRIu64 ", %#x, %td) = %td", (a - region) / pg, olen / pg,
	     nlen / pg, flags, dst ? (dst - region) / pg : -1,
	     r == MAP_FAILED ? (ptrdiff_t)-errno : ((uint8_t *)r - region) / pg);
	struct vmt_event ev = TG_SC(cur_proc, 0, VMT_OP_MREMAP, resp(r), (uint64_t)(uintptr_t)a,
				    olen, nlen, flags, (uint64_t)(uintptr_t)dst);
	apply(m, &ev);
}

static void op_mlock(van_asmodel *m)
{
	uint8_t *a;
	uint64_t len;
	rnd_range(&a, &len);
	int which = (int)pick(3);
	long r;
	struct vmt_event ev;
	if (which == 0) {
		r = syscall(SYS_mlock, a, len); /* ASan's mlock() does nothing */
		ev = TG_SC(cur_proc, 0, VMT_OP_MLOCK, res(r), (uint64_t)(uintptr_t)a, len);
	} else if (which == 1) {
		r = syscall(SYS_mlock2, a, len, 1 /* MLOCK_ONFAULT */);
		ev = TG_SC(cur_proc, 0, VMT_OP_MLOCK2, res(r), (uint64_t)(uintptr_t)a, len, 1);
	} else {
		r = syscall(SYS_munlock, a, len);
		ev = TG_SC(cur_proc, 0, VMT_OP_MUNLOCK, res(r), (uint64_t)(uintptr_t)a, len);
	}
	note("%s(%td, %" PRIu64 ") = %" PRId64, which == 0 ? "mlock" : which == 1 ? "mlock2" : "munlock",
	     (a - region) / pg, len / pg, ev.u.sc.result);
	apply(m, &ev);
}

static const int advices[] = {
	MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_DONTNEED, MADV_FREE,
	MADV_DONTFORK, MADV_DOFORK, MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_DONTDUMP,
	MADV_DODUMP, MADV_WIPEONFORK, MADV_KEEPONFORK, MADV_MERGEABLE, MADV_UNMERGEABLE,
	MADV_WILLNEED, 22 /* MADV_POPULATE_READ */, 23 /* MADV_POPULATE_WRITE */,
};

static void op_madvise(van_asmodel *m)
{
	uint8_t *a;
	uint64_t len;
	rnd_range(&a, &len);
	int adv = advices[pick(sizeof(advices) / sizeof(advices[0]))];
	int r = madvise(a, len, adv);
	note("madvise(%td, %" PRIu64 ", %d) = %d", (a - region) / pg, len / pg, adv, r ? -errno : 0);
	struct vmt_event ev = TG_SC(cur_proc, 0, VMT_OP_MADVISE, res(r), (uint64_t)(uintptr_t)a,
				    len, adv);
	apply(m, &ev);
}

/* Touch a few pages the model says are accessible (the model matched the
 * kernel after the previous step) and report them as TOUCH events: a read
 * gives a VMA its anon_vma where the kernel has no zero page to map. */
static void op_touch(van_asmodel *m, uint32_t proc)
{
	for (int i = 0; i < 4; i++) {
		uint64_t p = pick(NPAGES);
		volatile uint8_t *addr = page_at(p);
		const struct van_vma *v = van_asmodel_lookup(m, proc, (uint64_t)(uintptr_t)addr);
		if (!v)
			continue;
		if ((v->flags & VAN_VMA_FILE) &&
		    (strncmp(v->path, "/memfd:", 7) != 0 ||
		     v->offset + ((uint64_t)(uintptr_t)addr - v->start) >= (uint64_t)FILE_PAGES * pg))
			continue; /* beyond the file: SIGBUS */
		if (v->prot & VMT_PROT_W && pick(3)) {
			*addr = 1;
			struct vmt_touch_run run = { 1, VMT_PAGE_WRITTEN };
			struct vmt_event ev = { .kind = VMT_EV_TOUCH, .proc = proc };
			ev.u.touch = (struct vmt_touch){ (uint64_t)(uintptr_t)addr, 1,
							 VMT_TOUCH_SNAPSHOT, 1, &run };
			note("write page %" PRIu64, p);
			apply(m, &ev);
		} else if (v->prot & VMT_PROT_R) {
			(void)*addr;
			struct vmt_touch_run run = { 1, VMT_PAGE_READ };
			struct vmt_event ev = { .kind = VMT_EV_TOUCH, .proc = proc };
			ev.u.touch = (struct vmt_touch){ (uint64_t)(uintptr_t)addr, 1,
							 VMT_TOUCH_SNAPSHOT, 1, &run };
			note("read page %" PRIu64, p);
			apply(m, &ev);
		}
	}
}

/* A model that follows this kernel: whether a first read maps the zero
 * page decides which VMAs get an anon_vma, and so which merge. */
static van_asmodel *new_model(uint32_t page)
{
	int zp = vmt_host_zero_page();
	assert_true(zp >= 0);
	van_asmodel *m = van_asmodel_new(page);
	assert_non_null(m);
	van_asmodel_set_zero_page(m, zp);
	return m;
}

static void random_step(van_asmodel *m, uint32_t proc)
{
	switch (pick(16)) {
	case 0: case 1: case 2: op_mmap(m, 0); break;
	case 3: case 4: op_mmap(m, 1); break;
	case 5: op_mmap(m, 2); break;
	case 6: op_munmap(m); break;
	case 7: case 8: op_mprotect(m); break;
	case 9: op_mremap(m, 0); break;
	case 10: op_mremap(m, 1); break;
	case 11: op_mremap(m, 2); break;
	case 12: op_mlock(m); break;
	case 13: op_madvise(m); break;
	default: op_touch(m, proc); break;
	}
}

/* ---- fixtures ----------------------------------------------------------- */

static int memfd_file(const char *name, struct stat *st, char *path, size_t plen)
{
	int fd = memfd_create(name, 0);
	char link[64];
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, FILE_PAGES * pg), 0);
	assert_int_equal(fstat(fd, st), 0);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, plen - 1);
	assert_true(n > 0);
	path[n] = 0;
	return fd;
}

static int setup(void **state)
{
	pg = sysconf(_SC_PAGESIZE);
	verbose = getenv("ASMODEL_VERBOSE") != NULL;
	fd_a = memfd_file("asm-a", &st_a, path_a, sizeof(path_a));
	fd_b = memfd_file("asm-b", &st_b, path_b, sizeof(path_b));
	/* Guards: one-page shared mappings of a third file, which never merge
	 * with anything the test creates, on both sides of the region. */
	int g = memfd_create("asm-guard", 0);
	assert_true(g >= 0);
	assert_int_equal(ftruncate(g, pg), 0);
	uint8_t *base = mmap(NULL, (NPAGES + 2) * pg, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(base != MAP_FAILED);
	assert_true(mmap(base, pg, PROT_NONE, MAP_SHARED | MAP_FIXED, g, 0) != MAP_FAILED);
	assert_true(mmap(base + (NPAGES + 1) * pg, pg, PROT_NONE, MAP_SHARED | MAP_FIXED, g, 0) !=
		    MAP_FAILED);
	close(g);
	region = base + pg;
	assert_int_equal(munmap(region, NPAGES * pg), 0);
	return 0;
}

static void clear_region(van_asmodel *m, uint32_t proc)
{
	syscall(SYS_munlock, region, NPAGES * pg);
	assert_int_equal(munmap(region, NPAGES * pg), 0);
	struct vmt_event ev = TG_SC(cur_proc, 0, VMT_OP_MUNMAP, 0, (uint64_t)(uintptr_t)region,
				    (uint64_t)NPAGES * pg);
	ev.proc = proc;
	apply(m, &ev);
}

/* ---- tests -------------------------------------------------------------- */

static void run_seed(uint64_t seed, int steps)
{
	van_asmodel *m = new_model((uint32_t)pg);
	assert_non_null(m);
	feed_snapshot(m, 0);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	nhist = 0;
	int dump_at = getenv("ASMODEL_DUMP_AT") ? atoi(getenv("ASMODEL_DUMP_AT")) : -1;
	for (int i = 0; i < steps; i++) {
		if (dump_at >= 0 && i >= dump_at) { /* the state before each step from dump_at */
			struct kvma k[NPAGES + 2];
			uint64_t lo = (uint64_t)(uintptr_t)region;
			print_views(k, kernel_vmas(lo, lo + NPAGES * pg, k, NPAGES + 2), m, 0);
		}
		random_step(m, 0);
		if (compare(m, 0, 0))
			fail_msg("seed %" PRIu64 " step %d: model differs from /proc/self/smaps", seed, i);
	}
	clear_region(m, 0);
	assert_int_equal(compare(m, 0, 0), 0);
	van_asmodel_free(m);
}

static void test_random_walks(void **state)
{
#ifdef __SANITIZE_ADDRESS__
	int steps = 120; /* smaps of an ASan process is slow to read */
#else
	int steps = 400;
#endif
	if (getenv("ASMODEL_STEPS"))
		steps = atoi(getenv("ASMODEL_STEPS"));
	uint64_t first = 1, last = 8;
	if (getenv("ASMODEL_SEED")) /* to rerun one failure */
		first = last = strtoull(getenv("ASMODEL_SEED"), NULL, 0);
	for (uint64_t seed = first; seed <= last; seed++)
		run_seed(seed, steps);
}

/* The child of a fork checks the model's copy of the parent (the parent's
 * model, cloned with the process, applies PROCESS_START), then keeps
 * walking with its anon_vmas inherited. */
static void test_fork_copy(void **state)
{
	for (uint64_t seed = 11; seed <= 14; seed++) {
		van_asmodel *m = new_model((uint32_t)pg);
		feed_snapshot(m, 0);
		rng = seed;
		nhist = 0;
		for (int i = 0; i < 60; i++)
			random_step(m, 0);
		assert_int_equal(compare(m, 0, 0), 0);
		fflush(stderr);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct vmt_event ev = { .kind = VMT_EV_PROCESS_START, .proc = 1, .thread = 1 };
			ev.u.process_start = (struct vmt_process_start){ 0, getpid(), VMT_PROC_FORK };
			if (van_asmodel_apply(m, &ev) || compare(m, 1, 0))
				_exit(1);
			cur_proc = 1;
			for (int i = 0; i < 150; i++) {
				switch (pick(4)) {
				case 0: op_mprotect(m); break;
				case 1: op_mmap(m, 0); break;
				case 2: op_touch(m, 1); break;
				default: op_mremap(m, 1); break;
				}
				/* ops of the child apply to proc 1 */
				if (compare(m, 1, 0))
					_exit(2);
			}
			_exit(0);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("seed %" PRIu64 ": fork child saw a difference (status %#x)", seed, status);
		clear_region(m, 0);
		van_asmodel_free(m);
	}
}

static void test_mlockall(void **state)
{
#ifdef __SANITIZE_ADDRESS__
	/* mlockall(MCL_CURRENT) would lock ASan's terabytes of shadow. */
	fprintf(stderr, "skip test_mlockall: not under AddressSanitizer\n");
	skip();
#endif
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		van_asmodel *m = new_model((uint32_t)pg);
		feed_snapshot(m, 0);
		rng = 99;
		static const int how[] = { MCL_FUTURE, MCL_CURRENT | MCL_ONFAULT, MCL_FUTURE | MCL_ONFAULT,
					   MCL_CURRENT | MCL_FUTURE, 0 };
		for (int round = 0; round < 5; round++) {
			int r = (int)(how[round] ? syscall(SYS_mlockall, how[round]) : syscall(SYS_munlockall));
			struct vmt_event ev = how[round]
				? TG_SC(cur_proc, 0, VMT_OP_MLOCKALL, res(r), how[round])
				: tg_ev_sc(cur_proc, 0, VMT_OP_MUNLOCKALL, res(r), 0, NULL);
			note("mlockall(%#x) = %d", how[round], r);
			apply(m, &ev);
			for (int i = 0; i < 40; i++) {
				random_step(m, 0);
				if (compare(m, 0, 0))
					_exit(1);
			}
		}
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- synthetic events: what the kernel test above cannot reach -------- */

static void count_is(const van_asmodel *m, uint32_t proc, uint64_t vmas, uint64_t pages)
{
	struct van_as_counts c;
	van_asmodel_counts(m, proc, &c);
	assert_int_equal(c.vmas, vmas);
	assert_int_equal(c.mapped_bytes, pages * 4096);
}

/* Two neighbours, each read before they come to the same protection:
 * where the kernel maps the zero page they merge, where a read allocates
 * they have an anon_vma each and stay apart.  Likewise populated by a
 * read (MADV_POPULATE_READ) rather than faulted. */
static void test_read_without_zero_page(void **state)
{
	const uint64_t A = 0x7f0000000000ull, P = 4096;
	for (int zp = 0; zp <= 1; zp++) {
		for (int how = 0; how < 2; how++) {
			van_asmodel *m = van_asmodel_new(4096);
			van_asmodel_set_zero_page(m, zp);
			struct vmt_event ev = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, 0, P, RW, PRIV_ANON, -1, 0);
			apply(m, &ev);
			ev = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)(A + P), A + P, P, LX_PROT_READ,
				   PRIV_ANON_FIXED, -1, 0);
			apply(m, &ev);
			count_is(m, 0, 2, 2);
			for (int i = 0; i < 2; i++) {
				if (how == 0) {
					ev = (struct vmt_event){ .kind = VMT_EV_FAULT, .proc = 0 };
					ev.u.fault.addr = A + (uint64_t)i * P + 8;
					ev.u.fault.access = VMT_FAULT_READ;
				} else {
					ev = TG_SC(0, 0, VMT_OP_MADVISE, 0, A + (uint64_t)i * P, P,
						   LX_MADV_POPULATE_READ);
				}
				apply(m, &ev);
			}
			ev = TG_SC(0, 0, VMT_OP_MPROTECT, 0, A + P, P, RW);
			apply(m, &ev);
			count_is(m, 0, zp ? 1 : 2, 2);
			van_asmodel_free(m);
		}
	}
}

static void test_synthetic(void **state)
{
	van_asmodel *m = van_asmodel_new(4096);
	const uint64_t H = 0x555555559000ull, S = 0x7f0000000000ull;
	struct vmt_map_entry e[] = {
		{ 0x555555554000ull, 0x555555556000ull, 0, 0x801, 7, VMT_PROT_R | VMT_PROT_X, "/bin/app" },
		{ H, H + 0x21000, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[heap]" },
		{ 0x7ffff7fc3000ull, 0x7ffff7fc7000ull, 0, 0, 0, VMT_PROT_R, "[vvar]" },
	};
	struct vmt_event ev = { .kind = VMT_EV_MAPS };
	ev.u.maps.count = 3;
	ev.u.maps.entries = e;
	apply(m, &ev);
	count_is(m, 0, 3, 2 + 33 + 4);
	/* brk grows the heap VMA in place, then shrinks it */
	ev = TG_SC(cur_proc, 0, VMT_OP_BRK, (int64_t)(H + 0x21000), 0);
	apply(m, &ev);
	ev = TG_SC(cur_proc, 0, VMT_OP_BRK, (int64_t)(H + 0x42800), H + 0x42800);
	apply(m, &ev);
	count_is(m, 0, 3, 2 + 67 + 4);
	const struct van_vma *v = van_asmodel_lookup(m, 0, H + 0x40000);
	assert_non_null(v);
	assert_int_equal(v->start, H);
	assert_int_equal(v->end, H + 0x43000);
	assert_string_equal(v->path, "[heap]");
	ev = TG_SC(cur_proc, 0, VMT_OP_BRK, (int64_t)(H + 0x10000), H + 0x10000);
	apply(m, &ev);
	count_is(m, 0, 3, 2 + 16 + 4);
	/* a failed call changes nothing */
	ev = TG_SC(cur_proc, 0, VMT_OP_MUNMAP, -EINVAL, H, 4096);
	apply(m, &ev);
	count_is(m, 0, 3, 2 + 16 + 4);
	/* shmat: the size comes from the map_file event; shmdt undoes it */
	struct vmt_event fe = { .kind = VMT_EV_MAP_FILE };
	fe.u.file = (struct vmt_map_file){ "/SYSV00000000 (deleted)", 0, 98306, 65536, 0, 0 };
	apply(m, &fe);
	ev = TG_SC(cur_proc, 0, VMT_OP_SHMAT, (int64_t)S, 98306, 0, 0);
	apply(m, &ev);
	count_is(m, 0, 4, 2 + 16 + 4 + 16);
	v = van_asmodel_lookup(m, 0, S);
	assert_true(v && (v->flags & VAN_VMA_SYSV) && (v->flags & VAN_VMA_SHARED));
	assert_int_equal(van_asmodel_inexact(m), 0);
	ev = TG_SC(cur_proc, 0, VMT_OP_SHMDT, 0, S);
	apply(m, &ev);
	count_is(m, 0, 3, 2 + 16 + 4);
	/* mlockall(MCL_CURRENT) locks all but the special mapping */
	ev = TG_SC(cur_proc, 0, VMT_OP_MLOCKALL, 0, 1);
	apply(m, &ev);
	struct van_as_counts c;
	van_asmodel_counts(m, 0, &c);
	assert_int_equal(c.locked_bytes, (2 + 16) * 4096);
	/* vfork shares the space until exec; fork copies it without locks */
	struct vmt_event ps = { .kind = VMT_EV_PROCESS_START, .proc = 1, .thread = 1 };
	ps.u.process_start = (struct vmt_process_start){ 0, 2, VMT_PROC_VFORK };
	apply(m, &ps);
	ev = TG_SC(cur_proc, 0, VMT_OP_MMAP, (int64_t)S, 0, 8192, 3, 0x22, FD_NONE, 0);
	ev.proc = 1;
	apply(m, &ev);
	count_is(m, 0, 4, 2 + 16 + 4 + 2);
	van_asmodel_totals(m, &c);
	assert_int_equal(c.vmas, 4); /* one shared space */
	struct vmt_event ex = { .kind = VMT_EV_EXEC, .proc = 1, .thread = 1 };
	ex.u.exec.path = "/bin/true";
	apply(m, &ex);
	count_is(m, 1, 0, 0);
	count_is(m, 0, 4, 2 + 16 + 4 + 2);
	ps.proc = 2;
	ps.u.process_start.how = VMT_PROC_FORK;
	apply(m, &ps);
	count_is(m, 2, 4, 2 + 16 + 4 + 2);
	van_asmodel_counts(m, 2, &c);
	assert_int_equal(c.locked_bytes, 0);
	const struct van_as_effect *fx = van_asmodel_last(m);
	assert_int_equal(fx->d_vmas, 4);
	struct vmt_event pe = { .kind = VMT_EV_PROCESS_EXIT, .proc = 2 };
	apply(m, &pe);
	assert_false(van_asmodel_alive(m, 2));
	van_asmodel_totals(m, &c);
	assert_int_equal(c.vmas, 4);
	van_asmodel_free(m);
}

/* Successes the kernel could not have returned: ranges that wrap around
 * or leave the user address space.  The model skips them (marked
 * inexact) instead of building a VMA that wraps, which broke its tree
 * (a later mlockall walked off it; found by fuzz_replay).  Failures on
 * ranges past the address space that do not wrap still change the mapped
 * part, as the kernel's do. */
static void test_impossible_ranges(void **state)
{
	van_asmodel *m = van_asmodel_new(4096);
	const uint64_t S = 0x7f1000000000ull;
	struct vmt_map_entry e[] = {
		{ S, S + 0x4000, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "" },
	};
	struct vmt_event ev = { .kind = VMT_EV_MAPS };
	ev.u.maps.count = 1;
	ev.u.maps.entries = e;
	apply(m, &ev);
	count_is(m, 0, 1, 4);
	const uint64_t huge = 0xffffff2600000001ull, A = S + 0x100000;
	struct vmt_event bad[] = {
		TG_SC(cur_proc, 0, VMT_OP_MMAP, (int64_t)A, A, huge, 1, 0x32, FD_NONE, 0),
		TG_SC(cur_proc, 0, VMT_OP_MMAP, (int64_t)(1ull << 62), 0, 4096, 3, 0x22, FD_NONE, 0),
		TG_SC(cur_proc, 0, VMT_OP_MREMAP, (int64_t)A, S, 0x4000, huge, 1, 0),
		TG_SC(cur_proc, 0, VMT_OP_MPROTECT, 0, S, huge, 1),
		TG_SC(cur_proc, 0, VMT_OP_MLOCK, 0, S + 1, ~0ull),
		TG_SC(cur_proc, 0, VMT_OP_MUNMAP, 0, S, huge),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		apply(m, &bad[i]);
		assert_true(van_asmodel_last(m)->inexact);
		count_is(m, 0, 1, 4);
	}
	/* A range past the address space that does not wrap is walked: the
	 * kernel changes its mapped part, then fails at the first hole. */
	ev = TG_SC(cur_proc, 0, VMT_OP_MPROTECT, -ENOMEM, S, 1ull << 60, 1);
	apply(m, &ev);
	const struct van_vma *v = van_asmodel_lookup(m, 0, S);
	assert_non_null(v);
	assert_int_equal(v->prot, VMT_PROT_R);
	ev = TG_SC(cur_proc, 0, VMT_OP_MLOCK, -ENOMEM, S, 1ull << 60);
	apply(m, &ev);
	struct van_as_counts c;
	van_asmodel_counts(m, 0, &c);
	assert_int_equal(c.locked_bytes, 4 * 4096);
	ev = TG_SC(cur_proc, 0, VMT_OP_MLOCKALL, 0, 1);
	apply(m, &ev);
	van_asmodel_counts(m, 0, &c);
	assert_int_equal(c.locked_bytes, 4 * 4096);
	van_asmodel_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_walks),
		cmocka_unit_test(test_fork_copy),
		cmocka_unit_test(test_mlockall),
		cmocka_unit_test(test_read_without_zero_page),
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_impossible_ranges),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
