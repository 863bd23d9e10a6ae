/*
 * test_rewrite.c - the rewrite rules on small synthetic traces (rwrun.h:
 * written, rewritten file to file, read back and compared line by line
 * with the expected stream).  The cases where a rule must not apply get
 * their own traces.  prot-none-free here in seed 000's shape; in the
 * shapes of HotSpot and glibc's arenas in test_rewrite_uncommit.c; the
 * discard rules in test_rewrite_discard.c; the streaming API in
 * test_rewrite_stream.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux_abi.h"
#include "rewrite.h"
#include "rwrun.h"
#include "tgen.h"
#include "vmtrace.h"

/* ---- prot-none-free ----------------------------------------------------- */

/* rwt_open, then thread 1 reserves `len` bytes at R1 (PROT_NONE) and
 * enables the first `enable` of them (mprotect PROT_READ|PROT_WRITE). */
static void pnf_open(struct tg_trace *b, uint64_t len, uint64_t enable)
{
	rwt_open(b);
	TG_PUT_SC(b, 0, 1, VMT_OP_MMAP, R1, 0, len, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(b, 0, 1, VMT_OP_MPROTECT, 0, R1, enable, RW);
}

/* The stream's lines for thread 1's reservation of len bytes at R1 and
 * its enable of the first `enable` of them (what pnf_open writes); len
 * and enable in decimal. */
#define PNF_HEAD(len, enable)                                                               \
	"t1 mmap(NULL, " #len ", PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n" \
	"t1 mprotect(0x100000, " #enable ", PROT_READ|PROT_WRITE) = 0\n"

/* A one-page reservation and two cycles of touch / free, the page
 * enabled again between them, then munmap. */
static void pnf_two_cycles(struct tg_trace *b)
{
	pnf_open(b, PAGE, PAGE);
	tg_touch(b, 0, 1, R1, 1, VMT_PAGE_WRITTEN);
	RWT_UNCOMMIT(b, 0, 1, R1, PAGE);
	TG_PUT_SC(b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	tg_touch(b, 0, 1, R1, 1, VMT_PAGE_WRITTEN);
	RWT_UNCOMMIT(b, 0, 1, R1, PAGE);
	TG_PUT_SC(b, 0, 1, VMT_OP_MUNMAP, 0, R1, PAGE);
}

/* Two cycles of enable / touch / free: the first enable stays, each free
 * becomes madvise, the second enable goes. */
static void test_pnf_basic(void **state)
{
	struct tg_trace b;
	pnf_two_cycles(&b);
	struct rwt_result r = rwt_run(&b, NULL); /* NULL: the default rule */
	rwt_expect(r.text,
		    PNF_HEAD(4096, 4096)
		    "t1 touch(0x100000, 1 page: 1 written, before op)\n"
		    "t1 madvise(0x100000, 4096, MADV_DONTNEED) = 0 (rewritten)\n"
		    "t1 touch(0x100000, 1 page: 1 written, before op)\n"
		    "t1 madvise(0x100000, 4096, MADV_DONTNEED) = 0 (rewritten)\n"
		    "t1 munmap(0x100000, 4096) = 0\n");
	assert_int_equal(r.nrules, 1);
	assert_int_equal(r.applied[0], 2);
	assert_int_equal(r.events_in, 4 + 8);
	assert_int_equal(r.events_out, 4 + 7);
	free(r.text);
}

/* Two threads on their own 4-page ranges, interleaved: every cycle is
 * found, and the other thread's events keep their place in the stream
 * while a free is held back. */
static void test_pnf_threads_multipage(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, 4 * PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, R2, 0, 4 * PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 4 * PAGE, RW);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MPROTECT, 0, R2, 4 * PAGE, RW);
	for (int i = 0; i < 2; i++) {
		tg_touch(&b, 0, 1, R1, 4, VMT_PAGE_WRITTEN);
		RWT_UNCOMMIT(&b, 0, 1, R1, 4 * PAGE);
		tg_touch(&b, 0, 2, R2, 4, VMT_PAGE_WRITTEN);
		RWT_UNCOMMIT(&b, 0, 2, R2, 4 * PAGE);
		TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 4 * PAGE, RW);
		TG_PUT_SC(&b, 0, 2, VMT_OP_MPROTECT, 0, R2, 4 * PAGE, RW);
	}
	tg_touch(&b, 0, 2, R2, 4, VMT_PAGE_WRITTEN);
	RWT_UNCOMMIT(&b, 0, 2, R2, 4 * PAGE);
	tg_touch(&b, 0, 1, R1, 4, VMT_PAGE_WRITTEN);
	RWT_UNCOMMIT(&b, 0, 1, R1, 4 * PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 4 * PAGE);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MUNMAP, 0, R2, 4 * PAGE);
	rwt_check(&b, "prot-none-free",
	      "t1 mmap(NULL, 16384, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t2 mmap(NULL, 16384, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t1 mprotect(0x100000, 16384, PROT_READ|PROT_WRITE) = 0\n"
	      "t2 mprotect(0x200000, 16384, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 touch(0x100000, 4 pages: 4 written, before op)\n"
	      "t1 madvise(0x100000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t2 touch(0x200000, 4 pages: 4 written, before op)\n"
	      "t2 madvise(0x200000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t1 touch(0x100000, 4 pages: 4 written, before op)\n"
	      "t1 madvise(0x100000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t2 touch(0x200000, 4 pages: 4 written, before op)\n"
	      "t2 madvise(0x200000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t2 touch(0x200000, 4 pages: 4 written, before op)\n"
	      "t2 madvise(0x200000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t1 touch(0x100000, 4 pages: 4 written, before op)\n"
	      "t1 madvise(0x100000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t1 munmap(0x100000, 16384) = 0\n"
	      "t2 munmap(0x200000, 16384) = 0\n",
	      6);
}

/* The range changes protection between enable and free: not the pattern
 * (the free releases a read-only range). */
static void test_pnf_not_prot_changed_before_free(void **state)
{
	struct tg_trace b;
	pnf_open(&b, 2 * PAGE, 2 * PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 2 * PAGE, LX_PROT_READ);
	RWT_UNCOMMIT(&b, 0, 1, R1, 2 * PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 2 * PAGE, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 2 * PAGE);
	rwt_check(&b, "prot-none-free",
	      PNF_HEAD(8192, 8192)
	      "t1 mprotect(0x100000, 8192, PROT_READ) = 0\n"
	      "t1 mmap(0x100000, 8192, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 8192) = 0\n",
	      0);
}

/* The freed range changes protection before it is enabled again: the
 * PROT_NONE state was observed, so the free stays. */
static void test_pnf_not_prot_changed_after_free(void **state)
{
	struct tg_trace b;
	pnf_open(&b, 2 * PAGE, 2 * PAGE);
	RWT_UNCOMMIT(&b, 0, 1, R1, 2 * PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 2 * PAGE, LX_PROT_READ);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 2 * PAGE, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 2 * PAGE);
	rwt_check(&b, "prot-none-free",
	      PNF_HEAD(8192, 8192)
	      "t1 mmap(0x100000, 8192, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ) = 0\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 8192) = 0\n",
	      0);
}

/* A free of part of the RW range is a free (the rest stays RW on both
 * sides); a free of more than it covers PROT_NONE reservation, which the
 * madvise would leave alone, so it stays as recorded. */
static void test_pnf_sub_and_not_super(void **state)
{
	struct tg_trace b;
	pnf_open(&b, 4 * PAGE, 2 * PAGE);
	RWT_UNCOMMIT(&b, 0, 1, R1, PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 2 * PAGE, RW);
	RWT_UNCOMMIT(&b, 0, 1, R1, 3 * PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, 2 * PAGE, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 4 * PAGE);
	rwt_check(&b, "prot-none-free",
	      PNF_HEAD(16384, 8192)
	      "t1 madvise(0x100000, 4096, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 mmap(0x100000, 12288, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 16384) = 0\n",
	      1);
}

/* The MAP_FIXED maps a file over the range: not a free. */
static void test_pnf_not_file(void **state)
{
	struct tg_trace b;
	pnf_open(&b, PAGE, PAGE);
	tg_file(&b, 0, 1, "/data/f", 42, 1 << 20, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, (int64_t)R1, R1, PAGE, LX_PROT_NONE,
		  0x12 /* PRIVATE|FIXED */, 3, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, PAGE);
	rwt_check(&b, "prot-none-free",
	      PNF_HEAD(4096, 4096)
	      "t1 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t1 mmap(0x100000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED, 3, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 4096) = 0\n",
	      0);
}

/* A PROT_NONE range never enabled again nor unmapped (the process exits
 * with it, or the trace ends) may be a guard: the free stays. */
static void test_pnf_not_never_reenabled(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, R2, 0, PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MPROTECT, 0, R2, PAGE, RW);
	tg_touch(&b, 0, 1, R1, 1, VMT_PAGE_WRITTEN);
	RWT_UNCOMMIT(&b, 0, 1, R1, PAGE);
	tg_touch(&b, 0, 2, R2, 1, VMT_PAGE_WRITTEN);
	RWT_UNCOMMIT(&b, 0, 2, R2, PAGE);
	tg_proc_exit(&b, 0, 0);
	rwt_check(&b, "prot-none-free",
	      "t1 mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t2 mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t1 mprotect(0x100000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t2 mprotect(0x200000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 touch(0x100000, 1 page: 1 written, before op)\n"
	      "t1 mmap(0x100000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t2 touch(0x200000, 1 page: 1 written, before op)\n"
	      "t2 mmap(0x200000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t0 +++ process_exit status=0 (exited 0) +++\n",
	      0);
	/* The same without the exit: the trace just ends. */
	pnf_open(&b, PAGE, PAGE);
	RWT_UNCOMMIT(&b, 0, 1, R1, PAGE);
	rwt_check(&b, "prot-none-free",
	      PNF_HEAD(4096, 4096)
	      "t1 mmap(0x100000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n",
	      0);
}

/* Enabled again by another thread: still the pattern (G1 uncommits in
 * one thread and commits in another; the madvise keeps the range, so the
 * other thread's later calls still wait for it in a replay).  A munmap of
 * only part of the freed range leaves the rest PROT_NONE: that free stays
 * as recorded. */
static void test_pnf_other_thread_not_partial_unmap(void **state)
{
	struct tg_trace b;
	pnf_open(&b, 2 * PAGE, 2 * PAGE);
	RWT_UNCOMMIT(&b, 0, 1, R1, 2 * PAGE);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MPROTECT, 0, R1, 2 * PAGE, RW);
	RWT_UNCOMMIT(&b, 0, 2, R1, 2 * PAGE);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MUNMAP, 0, R1, PAGE);
	rwt_check(&b, "prot-none-free",
	      PNF_HEAD(8192, 8192)
	      "t1 madvise(0x100000, 8192, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t2 mmap(0x100000, 8192, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t2 munmap(0x100000, 4096) = 0\n",
	      1);
}

/* Checks the model makes: a locked range (mlockall(MCL_FUTURE) locks the
 * reservation; madvise(MADV_DONTNEED) fails on locked memory), and a
 * range touched while PROT_NONE (the rule does not understand it). */
static void test_pnf_not_locked_or_touched(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCKALL, 0, 3 /* MCL_CURRENT|MCL_FUTURE */);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	RWT_UNCOMMIT(&b, 0, 1, R1, PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, PAGE);
	tg_put(&b, tg_ev_sc(0, 0, VMT_OP_MUNLOCKALL, 0, 0, NULL));
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, R2, 0, PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MPROTECT, 0, R2, PAGE, RW);
	RWT_UNCOMMIT(&b, 0, 2, R2, PAGE);
	tg_put(&b, tg_ev_touch(0, 0, R2, 1, VMT_TOUCH_SNAPSHOT, 1,
			       &(struct vmt_touch_run){ 1, VMT_PAGE_PRESENT }));
	TG_PUT_SC(&b, 0, 2, VMT_OP_MPROTECT, 0, R2, PAGE, RW);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MUNMAP, 0, R2, PAGE);
	rwt_check(&b, "prot-none-free",
	      "t0 mlockall(MCL_CURRENT|MCL_FUTURE) = 0\n"
	      PNF_HEAD(4096, 4096)
	      "t1 mmap(0x100000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 4096) = 0\n"
	      "t0 munlockall() = 0\n"
	      "t2 mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t2 mprotect(0x200000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t2 mmap(0x200000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t0 touch(0x200000, 1 page: 1 present, snapshot)\n"
	      "t2 mprotect(0x200000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t2 munmap(0x200000, 4096) = 0\n",
	      0);
}

/* Events of other threads held behind a free keep their strings and
 * arrays (deep copies), and a free in one process is not confused with
 * the same addresses in another. */
static void test_pnf_held_copies_and_procs(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	tg_put(&b, tg_ev_process_start(1, 3, 0, 2000, VMT_PROC_FORK));
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	RWT_UNCOMMIT(&b, 0, 1, R1, PAGE);
	tg_file(&b, 0, 2, "/lib/a-rather-long-library-name.so", 42, 1 << 20, 0);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, 0x300000, 0, PAGE, LX_PROT_READ, 0x2 /* PRIVATE */, 3, 0);
	tg_touch(&b, 0, 2, 0x300000, 1, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	/* Process 1 at the same address: its own story. */
	TG_PUT_SC(&b, 1, 3, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	RWT_UNCOMMIT(&b, 0, 1, R1, PAGE);
	TG_PUT_SC(&b, 1, 3, VMT_OP_MPROTECT, 0, R1, PAGE, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, PAGE);
	rwt_check(&b, "prot-none-free",
	      PNF_HEAD(4096, 4096)
	      "t1 madvise(0x100000, 4096, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t2 map_file(\"/lib/a-rather-long-library-name.so\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t2 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3, 0) = 0x300000\n"
	      "t2 touch(0x300000, 1 page: 1 written, before op)\n"
	      "p1 t3 mprotect(0x100000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 madvise(0x100000, 4096, MADV_DONTNEED) = 0 (rewritten)\n"
	      "p1 t3 mprotect(0x100000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 4096) = 0\n",
	      2);
}

/* ---- madvise rules ------------------------------------------------------ */

static void madv_trace(struct tg_trace *b, uint64_t adv)
{
	rwt_open(b);
	TG_PUT_SC(b, 0, 1, VMT_OP_MMAP, R1, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, R1, 4 * PAGE, adv); /* private anonymous: yes */
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, -EINVAL, R1 + 1, PAGE, adv); /* failed: no */
	TG_PUT_SC(b, 0, 1, VMT_OP_MMAP, R2, 0, PAGE, RW, SHARED_ANON, FD_NONE, 0);
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, R2, PAGE, adv); /* shared: no */
	tg_file(b, 0, 1, "/data/f", 42, 1 << 20, 0);
	TG_PUT_SC(b, 0, 1, VMT_OP_MMAP, 0x300000, 0, PAGE, RW, 0x2, 3, 0);
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, 0x300000, PAGE, adv); /* file: no */
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, R1, 8 * PAGE, adv); /* past the mapping: no */
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, R1 + PAGE, PAGE, adv); /* part of it: yes */
	/* locked (on fault): the kernel refuses both advices there; a call
	 * the trace says succeeded is not changed all the same */
	TG_PUT_SC(b, 0, 1, VMT_OP_MMAP, 0x400000, 0, 2 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(b, 0, 1, VMT_OP_MLOCK2, 0, 0x400000, PAGE, LX_MLOCK_ONFAULT);
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, 0x400000, 2 * PAGE, adv); /* locked in part: no */
	TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, 0x401000, PAGE, adv); /* the unlocked page: yes */
}

#define MADV_LOCKED_LINES(adv, rewritten) \
	"t1 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x400000\n" \
	"t1 mlock2(0x400000, 4096, MLOCK_ONFAULT) = 0\n" \
	"t1 madvise(0x400000, 8192, " adv ") = 0\n" \
	"t1 madvise(0x401000, 4096, " rewritten ") = 0 (rewritten)\n"

static void test_dontneed_to_free(void **state)
{
	struct tg_trace b;
	madv_trace(&b, LX_MADV_DONTNEED);
	rwt_check(&b, "dontneed-to-free",
	      "t1 mmap(NULL, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 madvise(0x100000, 16384, MADV_FREE) = 0 (rewritten)\n"
	      "t1 madvise(0x100001, 4096, MADV_DONTNEED) = -1 EINVAL (Invalid argument)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t1 madvise(0x200000, 4096, MADV_DONTNEED) = 0\n"
	      "t1 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE, 3, 0) = 0x300000\n"
	      "t1 madvise(0x300000, 4096, MADV_DONTNEED) = 0\n"
	      "t1 madvise(0x100000, 32768, MADV_DONTNEED) = 0\n"
	      "t1 madvise(0x101000, 4096, MADV_FREE) = 0 (rewritten)\n"
	      MADV_LOCKED_LINES("MADV_DONTNEED", "MADV_FREE"),
	      3);
}

static void test_free_to_dontneed(void **state)
{
	struct tg_trace b;
	madv_trace(&b, LX_MADV_FREE);
	rwt_check(&b, "free-to-dontneed",
	      "t1 mmap(NULL, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 madvise(0x100000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t1 madvise(0x100001, 4096, MADV_FREE) = -1 EINVAL (Invalid argument)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t1 madvise(0x200000, 4096, MADV_FREE) = 0\n"
	      "t1 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE, 3, 0) = 0x300000\n"
	      "t1 madvise(0x300000, 4096, MADV_FREE) = 0\n"
	      "t1 madvise(0x100000, 32768, MADV_FREE) = 0\n"
	      "t1 madvise(0x101000, 4096, MADV_DONTNEED) = 0 (rewritten)\n"
	      MADV_LOCKED_LINES("MADV_FREE", "MADV_DONTNEED"),
	      3);
}

/* ---- mlock-onfault ------------------------------------------------------ */

static void test_mlock_onfault(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCK, 0, R1, PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCK, -ENOMEM, R1, 64 * PAGE); /* failed: stays */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCK2, 0, R1, PAGE, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCK2, 0, R1, PAGE, 1); /* on fault already */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCKALL, 0, 1);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCKALL, 0, 5); /* on fault already */
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, R2, 0, 2 * PAGE, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	/* over RLIMIT_MEMLOCK: failed, stays */
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, -EAGAIN, 0, 64 * PAGE, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	tg_file(&b, 0, 2, "/data/f", 42, 1 << 20, 0);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, 0x300000, 0, PAGE, LX_PROT_READ, 0x2 | LX_MAP_LOCKED, 3, 0);
	tg_touch(&b, 0, 2, 0x300000, 1, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MUNMAP, 0, 0x300000, PAGE);
	rwt_check(&b, "mlock-onfault",
	      "t1 mmap(NULL, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mlock2(0x100000, 4096, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t1 mlock(0x100000, 262144) = -1 ENOMEM (Cannot allocate memory)\n"
	      "t1 mlock2(0x100000, 4096, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t1 mlock2(0x100000, 4096, MLOCK_ONFAULT) = 0\n"
	      "t1 mlockall(MCL_CURRENT|MCL_ONFAULT) = 0 (rewritten)\n"
	      "t1 mlockall(MCL_CURRENT|MCL_ONFAULT) = 0\n"
	      "t2 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x200000 (rewritten)\n"
	      "t2 mlock2(0x200000, 8192, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t2 mmap(NULL, 262144, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_LOCKED, -1, 0) = -1 EAGAIN (Resource temporarily unavailable)\n"
	      "t2 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t2 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3, 0) = 0x300000 (rewritten)\n"
	      "t2 mlock2(0x300000, 4096, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t2 touch(0x300000, 1 page: 1 written, before op)\n"
	      "t2 munmap(0x300000, 4096) = 0\n",
	      5);
}

/* A MAP_LOCKED mmap that waited (off CPU, under load): the mlock2 made
 * after it is a call of no time, with no waits of its own; the mmap's
 * stay the mmap's. */
static void test_mlock_onfault_waits(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	struct vmt_event e =
		TG_SC(0, 1, VMT_OP_MMAP, R1, 0, 2 * PAGE, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	e.u.sc.waits = 1;
	e.u.sc.vcsw = 1;
	e.u.sc.off_cpu_ns = 300;
	tg_put(&b, e);
	rwt_check(&b, "mlock-onfault",
	      "t1 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000 (rewritten)"
	      " <off cpu 300 ns, 1 vcsw, 0 ivcsw>\n"
	      "t1 mlock2(0x100000, 8192, MLOCK_ONFAULT) = 0 (rewritten)\n",
	      1);
}

/* ---- populate ----------------------------------------------------------- */

static void test_populate(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	/* all 3 pages touched before the munmap: yes */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, 3 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&b, 0, 1, R1, 3, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 3 * PAGE);
	/* 2 of 3: no */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, 3 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&b, 0, 1, R1, 2, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 3 * PAGE);
	/* faults of every page, interleaved with another thread: yes */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R2, 0, 2 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_fault(&b, 0, 1, R2 + 10, VMT_FAULT_WRITE);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, 0x400000, 0, PAGE, RW, SHARED_ANON, FD_NONE, 0); /* shared: no */
	tg_fault(&b, 0, 1, R2 + PAGE + 20, VMT_FAULT_WRITE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R2, 2 * PAGE);
	/* the madvise ends the watch before the second page is seen: no */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, 2 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&b, 0, 1, R1, 1, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MADVISE, 0, R1, PAGE, LX_MADV_DONTNEED);
	tg_touch(&b, 0, 1, R1, 2, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 2 * PAGE);
	/* PROT_NONE and MAP_NORESERVE are never populated */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R2, 0, PAGE, LX_PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, 0x500000, 0, PAGE, RW, PRIV_ANON | LX_MAP_NORESERVE,
		  FD_NONE, 0);
	tg_touch(&b, 0, 1, 0x500000, 1, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, 0x500000, PAGE);
	/* a private file mapping and a MAP_LOCKED one (populated already),
	 * each touched entirely: no */
	tg_file(&b, 0, 1, "/data/f", 42, 1 << 20, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, 0x700000, 0, PAGE, RW, LX_MAP_PRIVATE, 3, 0);
	tg_touch(&b, 0, 1, 0x700000, 1, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, 0x700000, PAGE);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, 0x800000, 0, PAGE, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	tg_touch(&b, 0, 1, 0x800000, 1, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, 0x800000, PAGE);
	/* touched entirely by exit: yes */
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, 0x600000, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_put(&b, tg_ev_touch(0, 0, 0x600000, 1, VMT_TOUCH_EXIT, 1,
			       &(struct vmt_touch_run){ 1, VMT_PAGE_READ }));
	tg_proc_exit(&b, 0, 0);
	rwt_check(&b, "populate",
	      "t1 mmap(NULL, 12288, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE, -1, 0) = 0x100000 (rewritten)\n"
	      "t1 touch(0x100000, 3 pages: 3 written, before op)\n"
	      "t1 munmap(0x100000, 12288) = 0\n"
	      "t1 mmap(NULL, 12288, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 touch(0x100000, 2 pages: 2 written, before op)\n"
	      "t1 munmap(0x100000, 12288) = 0\n"
	      "t1 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE, -1, 0) = 0x200000 (rewritten)\n"
	      "t1 fault(0x20000a, write, ip=0x401000)\n"
	      "t2 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) = 0x400000\n"
	      "t1 fault(0x201014, write, ip=0x401000)\n"
	      "t1 munmap(0x200000, 8192) = 0\n"
	      "t1 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 touch(0x100000, 1 page: 1 written, before op)\n"
	      "t1 madvise(0x100000, 4096, MADV_DONTNEED) = 0\n"
	      "t1 touch(0x100000, 2 pages: 2 written, before op)\n"
	      "t1 munmap(0x100000, 8192) = 0\n"
	      "t1 mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x500000\n"
	      "t1 touch(0x500000, 1 page: 1 written, before op)\n"
	      "t1 munmap(0x500000, 4096) = 0\n"
	      "t1 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE, 3, 0) = 0x700000\n"
	      "t1 touch(0x700000, 1 page: 1 written, before op)\n"
	      "t1 munmap(0x700000, 4096) = 0\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_LOCKED, -1, 0) = 0x800000\n"
	      "t1 touch(0x800000, 1 page: 1 written, before op)\n"
	      "t1 munmap(0x800000, 4096) = 0\n"
	      "t2 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE, -1, 0) = 0x600000 (rewritten)\n"
	      "t0 touch(0x600000, 1 page: 1 read, exit)\n"
	      "t0 +++ process_exit status=0 (exited 0) +++\n",
	      3);
}

/* ---- composition -------------------------------------------------------- */

/* prot-none-free's madvise feeds dontneed-to-free: each rule counts its
 * own applications. */
static void test_compose(void **state)
{
	struct tg_trace b;
	pnf_two_cycles(&b);
	struct rwt_result r = rwt_run(&b, "prot-none-free,dontneed-to-free");
	rwt_expect(r.text,
		    PNF_HEAD(4096, 4096)
		    "t1 touch(0x100000, 1 page: 1 written, before op)\n"
		    "t1 madvise(0x100000, 4096, MADV_FREE) = 0 (rewritten)\n"
		    "t1 touch(0x100000, 1 page: 1 written, before op)\n"
		    "t1 madvise(0x100000, 4096, MADV_FREE) = 0 (rewritten)\n"
		    "t1 munmap(0x100000, 4096) = 0\n");
	assert_int_equal(r.nrules, 2);
	assert_int_equal(r.applied[0], 2);
	assert_int_equal(r.applied[1], 2);
	free(r.text);
}

/* Fork and vfork are told apart (rewrite_int.h, rw_stale): a fork copies
 * the space as it is, so the parent's candidate stays watched and its
 * pages touched after the fork still make it MAP_POPULATE; a vfork child
 * shares the space under its own process index, so the parent's watch
 * ends at it, no page seen yet, and the mmap stays as recorded. */
static void test_populate_fork_vfork(void **state)
{
	for (int vf = 0; vf < 2; vf++) {
		struct tg_trace b;
		rwt_open(&b);
		TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, R1, 0, 2 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
		tg_put(&b, tg_ev_process_start(1, 3, 0, 2000, vf ? VMT_PROC_VFORK : VMT_PROC_FORK));
		tg_touch(&b, 0, 1, R1, 2, VMT_PAGE_WRITTEN);
		TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, R1, 2 * PAGE);
		rwt_check(&b, "populate",
			  vf ? "t1 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
			       "t1 touch(0x100000, 2 pages: 2 written, before op)\n"
			       "t1 munmap(0x100000, 8192) = 0\n"
			     : "t1 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE, -1, 0) = 0x100000 (rewritten)\n"
			       "t1 touch(0x100000, 2 pages: 2 written, before op)\n"
			       "t1 munmap(0x100000, 8192) = 0\n",
			  vf ? 0 : 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pnf_basic),
		cmocka_unit_test(test_pnf_threads_multipage),
		cmocka_unit_test(test_pnf_not_prot_changed_before_free),
		cmocka_unit_test(test_pnf_not_prot_changed_after_free),
		cmocka_unit_test(test_pnf_sub_and_not_super),
		cmocka_unit_test(test_pnf_not_file),
		cmocka_unit_test(test_pnf_not_never_reenabled),
		cmocka_unit_test(test_pnf_other_thread_not_partial_unmap),
		cmocka_unit_test(test_pnf_not_locked_or_touched),
		cmocka_unit_test(test_pnf_held_copies_and_procs),
		cmocka_unit_test(test_dontneed_to_free),
		cmocka_unit_test(test_free_to_dontneed),
		cmocka_unit_test(test_mlock_onfault),
		cmocka_unit_test(test_mlock_onfault_waits),
		cmocka_unit_test(test_populate),
		cmocka_unit_test(test_populate_fork_vfork),
		cmocka_unit_test(test_compose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
