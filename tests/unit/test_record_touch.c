/*
 * test_record_touch.c - TOUCH run-length encoding and page-state reading
 * (record/touch.c): synthetic page sequences, then this process's own
 * pages read through /proc/self/pagemap with PAGEMAP_SCAN and with the
 * pread fallback.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record_int.h"
#include "tgen.h"

/* Collected emits, pages expanded into a state per page for checking. */
struct got {
	int emits;
	uint64_t start[16], npages[16];
	uint32_t nruns[16];
	uint8_t state[16][256];
	int fail_with;
};

static int collect(void *ctx, uint64_t start, const struct vmt_touch_run *runs,
		   uint32_t nruns, uint64_t npages)
{
	struct got *g = ctx;
	uint64_t k = 0, sum = 0;

	if (g->fail_with)
		return g->fail_with;
	assert_true(g->emits < 16);
	assert_true(nruns > 0);
	/* Edges are present pages, neighbouring runs differ. */
	assert_int_not_equal(runs[0].state, VMT_PAGE_ABSENT);
	assert_int_not_equal(runs[nruns - 1].state, VMT_PAGE_ABSENT);
	for (uint32_t i = 0; i < nruns; i++) {
		assert_true(runs[i].pages > 0);
		if (i)
			assert_int_not_equal(runs[i].state, runs[i - 1].state);
		for (uint64_t j = 0; j < runs[i].pages && k < 256; j++)
			g->state[g->emits][k++] = (uint8_t)runs[i].state;
		sum += runs[i].pages;
	}
	assert_int_equal(sum, npages);
	g->start[g->emits] = start;
	g->npages[g->emits] = npages;
	g->nruns[g->emits] = nruns;
	g->emits++;
	return 0;
}

static void test_runs_basic(void **state)
{
	struct vmr_runs r;
	struct got g = { 0 };

	(void)state;
	vmr_runs_init(&r, 12, 0, collect, &g);
	vmr_runs_begin(&r);
	/* absent pages first and last are not part of the range */
	assert_int_equal(vmr_runs_add(&r, 0x10000, 2, VMT_PAGE_ABSENT), 0);
	assert_int_equal(vmr_runs_add(&r, 0x12000, 1, VMT_PAGE_WRITTEN), 0);
	assert_int_equal(vmr_runs_add(&r, 0x13000, 2, VMT_PAGE_WRITTEN), 0);
	assert_int_equal(vmr_runs_add(&r, 0x17000, 1, VMT_PAGE_READ), 0); /* gap 2 */
	assert_int_equal(vmr_runs_add(&r, 0x18000, 1, VMT_PAGE_PRESENT), 0);
	assert_int_equal(vmr_runs_add(&r, 0x19000, 4, VMT_PAGE_ABSENT), 0);
	assert_int_equal(vmr_runs_end(&r), 0);
	assert_int_equal(g.emits, 1);
	assert_int_equal(g.start[0], 0x12000);
	assert_int_equal(g.npages[0], 7);
	assert_int_equal(g.nruns[0], 4);
	const uint8_t want[] = { 3, 3, 3, 0, 0, 2, 1 };
	assert_memory_equal(g.state[0], want, sizeof(want));

	/* Nothing present: no emit at all. */
	vmr_runs_begin(&r);
	assert_int_equal(vmr_runs_add(&r, 0x10000, 9, VMT_PAGE_ABSENT), 0);
	assert_int_equal(vmr_runs_end(&r), 0);
	assert_int_equal(g.emits, 1);
	vmr_runs_free(&r);
}

static void test_runs_split(void **state)
{
	struct vmr_runs r;
	struct got g = { 0 };

	(void)state;
	/* At most 3 runs per emit: W _ R _ W _ R  splits as [W _ R] [W _ R]. */
	vmr_runs_init(&r, 12, 3, collect, &g);
	vmr_runs_begin(&r);
	for (int i = 0; i < 4; i++)
		assert_int_equal(vmr_runs_add(&r, 0x100000 + (uint64_t)i * 2 * PAGE, 1,
					      i % 2 ? VMT_PAGE_READ : VMT_PAGE_WRITTEN), 0);
	assert_int_equal(vmr_runs_end(&r), 0);
	assert_int_equal(g.emits, 2);
	assert_int_equal(g.start[0], 0x100000);
	assert_int_equal(g.npages[0], 3);
	assert_int_equal(g.start[1], 0x100000 + 4 * PAGE);
	assert_int_equal(g.npages[1], 3);
	/* A run that only extends the last one never splits. */
	vmr_runs_begin(&r);
	for (int i = 0; i < 100; i++)
		assert_int_equal(vmr_runs_add(&r, 0x200000 + (uint64_t)i * PAGE, 1,
					      VMT_PAGE_WRITTEN), 0);
	assert_int_equal(vmr_runs_end(&r), 0);
	assert_int_equal(g.emits, 3);
	assert_int_equal(g.nruns[2], 1);
	assert_int_equal(g.npages[2], 100);
	/* An emit error comes back. */
	g.fail_with = -ENOSPC;
	vmr_runs_begin(&r);
	assert_int_equal(vmr_runs_add(&r, 0x300000, 1, VMT_PAGE_READ), 0);
	assert_int_equal(vmr_runs_end(&r), -ENOSPC);
	vmr_runs_free(&r);
}

/* Our own memory: 12 pages, read some, write some, leave the rest. */
static void check_self(int use_scan)
{
	struct vmr_pagemap pm;
	struct vmr_runs r;
	struct got g = { 0 };
	volatile char *p;
	int fd;

	assert_int_equal(vmr_pagemap_init(&pm), 0);
	if (use_scan && !pm.scan) {
		vmr_pagemap_free(&pm);
		skip(); /* kernel before 6.7 */
	}
	pm.scan = use_scan;
	p = mmap(NULL, 12 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	/* THP would turn one touch into 512 pages; keep pages small. */
	madvise((void *)p, 12 * PAGE, MADV_NOHUGEPAGE);
	(void)p[1 * PAGE];	   /* read: the zero page, where the kernel has it */
	p[2 * PAGE] = 1;		   /* written */
	p[3 * PAGE] = 1;
	(void)p[6 * PAGE];
	p[7 * PAGE] = 1;
	p[10 * PAGE] = 1;
	fd = open("/proc/self/pagemap", O_RDONLY);
	assert_true(fd >= 0);
	vmr_runs_init(&r, 12, 0, collect, &g);
	vmr_runs_begin(&r);
	assert_int_equal(vmr_pagemap_scan(&pm, fd, (uintptr_t)p, (uintptr_t)p + 12 * PAGE, &r), 0);
	assert_int_equal(vmr_runs_end(&r), 0);
	assert_int_equal(g.emits, 1);
	assert_int_equal(g.start[0], (uintptr_t)p + PAGE);
	assert_int_equal(g.npages[0], 10);
	uint8_t R = VMT_PAGE_READ, W = VMT_PAGE_WRITTEN, A = VMT_PAGE_ABSENT;
	/* Without the zero page a read allocates a page of its own, which
	 * pagemap cannot tell from a written one. */
	assert_true(vmt_host_zero_page() >= 0);
	if (!vmt_host_zero_page())
		R = W;
	if (!use_scan && !pm.zero_pfn) /* pfns hidden (not root) */
		R = W = VMT_PAGE_PRESENT;
	const uint8_t want[] = { R, W, W, A, A, R, W, A, A, W };
	assert_memory_equal(g.state[0], want, sizeof(want));

	/* Unaligned bounds cover the pages they touch. */
	vmr_runs_begin(&r);
	assert_int_equal(vmr_pagemap_scan(&pm, fd, (uintptr_t)p + 2 * PAGE + 5,
					  (uintptr_t)p + 2 * PAGE + 6, &r), 0);
	assert_int_equal(vmr_runs_end(&r), 0);
	assert_int_equal(g.emits, 2);
	assert_int_equal(g.npages[1], 1);
	assert_int_equal(g.state[1][0], W);

	/* After MADV_DONTNEED nothing is present. */
	assert_int_equal(madvise((void *)p, 12 * PAGE, MADV_DONTNEED), 0);
	vmr_runs_begin(&r);
	assert_int_equal(vmr_pagemap_scan(&pm, fd, (uintptr_t)p, (uintptr_t)p + 12 * PAGE, &r), 0);
	assert_int_equal(vmr_runs_end(&r), 0);
	assert_int_equal(g.emits, 2);
	close(fd);
	munmap((void *)p, 12 * PAGE);
	vmr_runs_free(&r);
	vmr_pagemap_free(&pm);
}

static void test_self_scan(void **state)
{
	(void)state;
	check_self(1);
}

static void test_self_pread(void **state)
{
	(void)state;
	check_self(0);
}

/* A page-cache page of a file mapping is PRESENT (not known to be written). */
static void test_file_pages(void **state)
{
	struct vmr_pagemap pm;
	struct vmr_runs r;
	struct got g = { 0 };
	char path[] = "/tmp/vmrec-touch-XXXXXX";
	int fd = mkstemp(path), pmfd;
	volatile char *p;

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 4 * PAGE), 0);
	p = mmap(NULL, 4 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	(void)p[2 * PAGE];
	assert_int_equal(vmr_pagemap_init(&pm), 0);
	pmfd = open("/proc/self/pagemap", O_RDONLY);
	vmr_runs_init(&r, 12, 0, collect, &g);
	for (int scan = 1; scan >= 0; scan--) {
		if (scan && !pm.scan)
			continue;
		pm.scan = scan;
		vmr_runs_begin(&r);
		assert_int_equal(vmr_pagemap_scan(&pm, pmfd, (uintptr_t)p, (uintptr_t)p + 4 * PAGE, &r), 0);
		assert_int_equal(vmr_runs_end(&r), 0);
		/* Fault-around may map cached neighbours too: the page read
		 * must be there, and every present page is PRESENT. */
		int e = g.emits - 1;
		uint64_t off = ((uintptr_t)p + 2 * PAGE - g.start[e]) / PAGE;
		assert_true(g.start[e] <= (uintptr_t)p + 2 * PAGE);
		assert_true(off < g.npages[e]);
		assert_int_equal(g.state[e][off], VMT_PAGE_PRESENT);
		for (uint64_t i = 0; i < g.npages[e]; i++)
			assert_true(g.state[e][i] == VMT_PAGE_PRESENT ||
				    g.state[e][i] == VMT_PAGE_ABSENT);
	}
	close(pmfd);
	close(fd);
	munmap((void *)p, 4 * PAGE);
	vmr_runs_free(&r);
	vmr_pagemap_free(&pm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_basic),
		cmocka_unit_test(test_runs_split),
		cmocka_unit_test(test_self_scan),
		cmocka_unit_test(test_self_pread),
		cmocka_unit_test(test_file_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
