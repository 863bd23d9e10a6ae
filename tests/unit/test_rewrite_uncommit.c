/*
 * test_rewrite_uncommit.c - rule prot-none-free in the shapes real
 * programs give it: HotSpot (commit with mmap(MAP_FIXED, RW), uncommit
 * with mmap(PROT_NONE, MAP_NORESERVE), G1 in two threads, re-commits
 * that cover part of an uncommit, or more than it), glibc's arenas
 * (mprotect commits, a shrink over several of them); then what must stay
 * as recorded (another protection, a file mapping over the range, half
 * reservation, a touch while uncommitted, locked memory, other
 * MAP_NORESERVE, strict overcommit, attributes a remap resets), what a
 * kept range does under later calls (mlockall, fork), and the counts:
 * call sites, calls left out, the note on commit charge.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux_abi.h"
#include "rewrite.h"
#include "rwrun.h"
#include "tgen.h"
#include "vmtrace.h"

#define H 0x40000000ull	  /* the heap reservation */
#define NR ((uint64_t)LX_MAP_NORESERVE)
#define RWX ((uint64_t)LX_PROT_RWX)

static void reserve(struct tg_trace *b, uint32_t t, uint64_t len)
{
	TG_PUT_SC(b, 0, t, VMT_OP_MMAP, (int64_t)H, 0, len, LX_PROT_NONE, PRIV_ANON | NR, FD_NONE, 0);
}

/* mmap(a, len, prot, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|extra, -1, 0) = a */
static void remap(struct tg_trace *b, uint32_t t, uint64_t a, uint64_t len, uint64_t prot,
		  uint64_t extra)
{
	TG_PUT_SC(b, 0, t, VMT_OP_MMAP, (int64_t)a, a, len, prot, PRIV_ANON_FIXED | extra, FD_NONE, 0);
}

#define RESERVE_LINE "t1 mmap(NULL, 67108864, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x40000000\n"
#define COMMIT8_LINE "t1 mmap(0x40000000, 8388608, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x40000000\n"

/* Thread 1 reserves 64 MiB and commits the first 8 MiB, HotSpot's way. */
static void hs_open(struct tg_trace *b)
{
	rwt_open(b);
	reserve(b, 1, 64 * MiB);
	remap(b, 1, H, 8 * MiB, RW, 0);
}

/* Parallel and Serial GC: one thread uncommits and commits again. */
static void test_uc_same_thread(void **state)
{
	struct tg_trace b;
	hs_open(&b);
	tg_touch(&b, 0, 1, H + 4 * MiB, 4, VMT_PAGE_WRITTEN);
	remap(&b, 1, H + 4 * MiB, 4 * MiB, 0, NR);
	remap(&b, 1, H + 4 * MiB, 4 * MiB, RW, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, H, 64 * MiB);
	struct rwt_result r = rwt_run(&b, NULL);
	rwt_expect(r.text,
		   RESERVE_LINE COMMIT8_LINE
		   "t1 touch(0x40400000, 4 pages: 4 written, before op)\n"
		   "t1 madvise(0x40400000, 4194304, MADV_DONTNEED) = 0 (rewritten)\n"
		   "t1 munmap(0x40000000, 67108864) = 0\n");
	assert_int_equal(r.applied[0], 1);
	assert_int_equal(r.removed[0], 1);
	/* the calls: 5 in, 4 out; under the write lock 5 and 3 (the madvise
	 * takes it for reading); changing VMAs 5 and 3 */
	assert_int_equal(r.in.calls, 5);
	assert_int_equal(r.out.calls, 4);
	assert_int_equal(r.in.write_locked, 5);
	assert_int_equal(r.out.write_locked, 3);
	assert_int_equal(r.in.vma_changes, 5);
	assert_int_equal(r.out.vma_changes, 3);
	/* the commit charge the madvise keeps is in the note */
	assert_non_null(strstr(r.note, "1 uncommit (4.0 MiB) dropped a commit charge"));
	free(r.text);
}

/* G1: the service thread (t2) uncommits, the VM thread (t1) commits again,
 * in other pieces: part of the uncommit (dropped), the rest with
 * reservation beyond (cut to the reservation), then a range with
 * reservation on both sides (cut in two). */
static void test_uc_g1_cut(void **state)
{
	struct tg_trace b;
	hs_open(&b);
	remap(&b, 2, H + 4 * MiB, 4 * MiB, 0, NR);
	remap(&b, 1, H + 4 * MiB, 2 * MiB, RW, 0);
	remap(&b, 1, H + 6 * MiB, 4 * MiB, RW, 0);
	remap(&b, 2, H + 2 * MiB, 2 * MiB, 0, NR);
	remap(&b, 1, H + MiB, 4 * MiB, RW, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MUNMAP, 0, H, 64 * MiB);
	struct rwt_result r = rwt_run(&b, NULL);
	rwt_expect(r.text,
		   RESERVE_LINE COMMIT8_LINE
		   "t2 madvise(0x40400000, 4194304, MADV_DONTNEED) = 0 (rewritten)\n"
		   "t1 mmap(0x40800000, 2097152, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x40800000 (rewritten)\n"
		   "t2 madvise(0x40200000, 2097152, MADV_DONTNEED) = 0 (rewritten)\n"
		   /* [1M, 2M) is committed, not uncommitted: it stays in the call,
		    * as does [4M, 5M) */
		   "t1 mmap(0x40100000, 1048576, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x40100000 (rewritten)\n"
		   "t1 mmap(0x40400000, 1048576, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x40400000 (rewritten)\n"
		   "t1 munmap(0x40000000, 67108864) = 0\n");
	assert_int_equal(r.applied[0], 2);
	assert_int_equal(r.removed[0], 1);
	assert_int_equal(r.first.ndetails, 1);
	assert_string_equal(r.first.details[0].what, "re-commits cut to the memory they commit");
	assert_int_equal(r.first.details[0].n, 2);
	free(r.text);
}

/* glibc's arena under strict overcommit: grown by mprotects of 64 KiB,
 * shrunk by one remap over several of them (without MAP_NORESERVE, over
 * VMAs some of which have it and some not), grown again by mprotects: the
 * first inside what was uncommitted, the second past it. */
static void test_uc_glibc_arena(void **state)
{
	const uint64_t K = 1024;
	struct tg_trace b;
	rwt_open(&b);
	reserve(&b, 1, 64 * MiB);
	for (uint64_t i = 0; i < 4; i++)
		TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, H + i * 64 * K, 64 * K, RW);
	remap(&b, 1, H + 192 * K, 64 * K, 0, 0);      /* an earlier shrink ... */
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, H + 192 * K, 64 * K, RW); /* ... and growth */
	remap(&b, 1, H + 100 * K, 156 * K, 0, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, H + 100 * K, 28 * K, RW);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, H + 128 * K, 192 * K, RW);
	struct rwt_result r = rwt_run(&b, NULL);
	rwt_expect(r.text,
		   RESERVE_LINE
		   "t1 mprotect(0x40000000, 65536, PROT_READ|PROT_WRITE) = 0\n"
		   "t1 mprotect(0x40010000, 65536, PROT_READ|PROT_WRITE) = 0\n"
		   "t1 mprotect(0x40020000, 65536, PROT_READ|PROT_WRITE) = 0\n"
		   "t1 mprotect(0x40030000, 65536, PROT_READ|PROT_WRITE) = 0\n"
		   "t1 madvise(0x40030000, 65536, MADV_DONTNEED) = 0 (rewritten)\n"
		   "t1 madvise(0x40019000, 159744, MADV_DONTNEED) = 0 (rewritten)\n"
		   "t1 mprotect(0x40040000, 65536, PROT_READ|PROT_WRITE) = 0 (rewritten)\n");
	assert_int_equal(r.applied[0], 2);
	assert_int_equal(r.removed[0], 2);
	free(r.text);
}

/* ---- what stays as recorded --------------------------------------------- */

/* Committed again with another protection (by an mmap and by an mprotect):
 * the uncommits stay, and the commits. */
static void test_uc_not_other_prot(void **state)
{
	struct tg_trace b;
	hs_open(&b);
	remap(&b, 1, H, 4 * MiB, 0, NR);
	remap(&b, 1, H, 4 * MiB, RWX, 0);
	remap(&b, 1, H + 4 * MiB, 4 * MiB, 0, NR);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MPROTECT, 0, H + 4 * MiB, 4 * MiB, LX_PROT_READ);
	rwt_check(&b, "prot-none-free",
		  RESERVE_LINE COMMIT8_LINE
		  "t1 mmap(0x40000000, 4194304, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x40000000\n"
		  "t1 mmap(0x40000000, 4194304, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x40000000\n"
		  "t1 mmap(0x40400000, 4194304, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x40400000\n"
		  "t1 mprotect(0x40400000, 4194304, PROT_READ) = 0\n",
		  0);
}

/* A file mapped over the uncommitted range (HotSpot's CDS maps its archive
 * over a reservation), an uncommit half over reservation, and a commit
 * with MAP_NORESERVE where the range had none. */
static void test_uc_not_file_half_noreserve(void **state)
{
	struct tg_trace b;
	hs_open(&b);
	remap(&b, 1, H, 2 * MiB, 0, NR);
	tg_file(&b, 0, 1, "/usr/lib/jvm/classes.jsa", 42, 16 * MiB, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, (int64_t)H, H, 2 * MiB, RW, 0x12 /* PRIVATE|FIXED */, 4, 0x1000);
	remap(&b, 1, H + 6 * MiB, 4 * MiB, 0, NR); /* [8M, 10M) is reservation */
	remap(&b, 1, H + 2 * MiB, 2 * MiB, 0, NR);
	remap(&b, 1, H + 2 * MiB, 2 * MiB, RW, NR);
	rwt_check(&b, "prot-none-free",
		  RESERVE_LINE COMMIT8_LINE
		  "t1 mmap(0x40000000, 2097152, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x40000000\n"
		  "t1 map_file(\"/usr/lib/jvm/classes.jsa\", dev=8:1, ino=42, size=16777216, flags=O_RDONLY)\n"
		  "t1 mmap(0x40000000, 2097152, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED, 4, 0x1000) = 0x40000000\n"
		  "t1 mmap(0x40600000, 4194304, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x40600000\n"
		  "t1 mmap(0x40200000, 2097152, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x40200000\n"
		  "t1 mmap(0x40200000, 2097152, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x40200000\n",
		  0);
}

/* Pages present while uncommitted (another thread's touch, a fault): not
 * understood, kept. */
static void test_uc_not_touched(void **state)
{
	struct tg_trace b;
	hs_open(&b);
	remap(&b, 2, H, 4 * MiB, 0, NR);
	tg_touch(&b, 0, 1, H + MiB, 1, VMT_PAGE_WRITTEN);
	remap(&b, 1, H, 4 * MiB, RW, 0);
	remap(&b, 2, H + 4 * MiB, 4 * MiB, 0, NR);
	tg_fault(&b, 0, 0, H + 5 * MiB + 8, VMT_FAULT_WRITE);
	remap(&b, 1, H + 4 * MiB, 4 * MiB, RW, 0);
	struct rwt_result r = rwt_run(&b, NULL);
	assert_int_equal(r.applied[0], 0);
	assert_int_equal(r.events_in, r.events_out);
	free(r.text);
}

/* Locked memory (madvise(MADV_DONTNEED) fails there), an attribute a remap
 * resets (MADV_DONTFORK), and a recording under strict overcommit. */
static void test_uc_not_locked_dontfork_strict(void **state)
{
	struct tg_trace b;
	hs_open(&b);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCK, 0, H, 2 * MiB);
	remap(&b, 1, H, 2 * MiB, 0, NR);
	remap(&b, 1, H, 2 * MiB, RW, 0);
	TG_PUT_SC(&b, 0, 1, VMT_OP_MADVISE, 0, H + 2 * MiB, 2 * MiB, LX_MADV_DONTFORK);
	remap(&b, 1, H + 2 * MiB, 2 * MiB, 0, NR);
	remap(&b, 1, H + 2 * MiB, 2 * MiB, RW, 0);
	struct rwt_result r = rwt_run(&b, NULL);
	assert_int_equal(r.applied[0], 0);
	free(r.text);

	struct vmt_header h;
	tg_header(&h);
	h.options = "touch=resident overcommit=2";
	tg_trace_open(&b, tg_memfd("strict"), &h);
	tg_put(&b, tg_ev_process_start(0, 0, VMT_NONE, 1000, VMT_PROC_ROOT));
	tg_put(&b, tg_ev_thread_start(0, 0, VMT_NONE, 1000));
	tg_put(&b, tg_ev_thread_start(0, 1, 0, 1001));
	reserve(&b, 1, 64 * MiB);
	remap(&b, 1, H, 8 * MiB, RW, 0);
	remap(&b, 1, H, 2 * MiB, 0, 0);
	remap(&b, 1, H, 2 * MiB, RW, 0);
	/* rwt_run checks the output header against touch=resident */
	tg_finish(&b);
	char err[256];
	van_rewrite *rw = van_rewrite_new("prot-none-free", err, sizeof(err));
	int out = tg_memfd("strict-out");
	assert_int_equal(van_rewrite_trace(rw, b.fd, out, err, sizeof(err)), 0);
	const struct van_rewrite_counts *c = van_rewrite_counts(rw);
	assert_int_equal(c->rules[0].applied, 0);
	assert_non_null(c->rules[0].note);
	assert_non_null(strstr(c->rules[0].note, "1 uncommit of charged memory left as recorded"));
	van_rewrite_free(rw);
	close(out);
	close(b.fd);
}

/* ---- kept ranges under later calls -------------------------------------- */

/* An uncommit committed again in part: the rest stays kept (read-write
 * here, PROT_NONE in the recording).  mlockall would populate it, so the
 * recorded protection comes back first; a fork copies the kept ranges,
 * and the child's re-commit of one goes too. */
static void test_uc_kept_ranges(void **state)
{
	struct tg_trace b;
	hs_open(&b);
	remap(&b, 1, H, 8 * MiB, 0, NR);
	remap(&b, 1, H, 2 * MiB, RW, 0);
	tg_put(&b, tg_ev_process_start(1, 3, 0, 2000, VMT_PROC_FORK));
	remap(&b, 1, H + 2 * MiB, 2 * MiB, RW, 0);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MLOCKALL, 0, LX_MCL_CURRENT);
	remap(&b, 1, H + 4 * MiB, 2 * MiB, RW, 0);
	TG_PUT_SC(&b, 1, 3, VMT_OP_MPROTECT, 0, H + 6 * MiB, 2 * MiB, RW);
	rwt_check(&b, "prot-none-free",
		  RESERVE_LINE COMMIT8_LINE
		  "t1 madvise(0x40000000, 8388608, MADV_DONTNEED) = 0 (rewritten)\n"
		  "t2 mprotect(0x40400000, 4194304, PROT_NONE) = 0 (rewritten)\n"
		  "t2 mlockall(MCL_CURRENT) = 0\n"
		  "t1 mmap(0x40400000, 2097152, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x40400000\n",
		  1);
}

/* ---- call sites --------------------------------------------------------- */

static void test_uc_sites(void **state)
{
	struct tg_trace b;
	static const uint64_t unc[] = { 0x7ffff7d30010ull, 0x7ffff1000100ull };
	hs_open(&b);
	tg_put(&b, tg_ev_stack(0, 2, unc));
	for (int i = 0; i < 3; i++) {
		tg_put(&b, tg_with_stack(TG_SC(0, 2, VMT_OP_MMAP, (int64_t)H, H, MiB, LX_PROT_NONE,
					       PRIV_ANON_FIXED | NR, FD_NONE, 0), 0));
		remap(&b, 1, H, MiB, RW, 0);
	}
	remap(&b, 1, H + MiB, MiB, 0, NR); /* no stack */
	remap(&b, 1, H + MiB, MiB, RW, 0);
	static const char *const strs[] = { "/usr/lib/libc.so.6", "__mmap64",
					    "/usr/lib/jvm/lib/server/libjvm.so",
					    "_ZN2os18pd_uncommit_memoryEPcmb" };
	for (uint32_t i = 0; i < 4; i++)
		tg_put(&b, tg_ev_string(i, strs[i]));
	tg_put(&b, tg_ev_symbol(unc[0], 0, 1, 0x13));
	tg_put(&b, tg_ev_symbol(unc[1], 2, 3, 0x19));
	struct rwt_result r = rwt_run(&b, NULL);
	assert_int_equal(r.applied[0], 4);
	assert_int_equal(r.first.nsites, 1);
	assert_string_equal(r.first.sites[0].site,
			    "os::pd_uncommit_memory(char*, unsigned long, bool) (libjvm.so)");
	assert_int_equal(r.first.sites[0].calls, 3);
	assert_int_equal(r.first.sites_rest, 1);
	free(r.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uc_same_thread),
		cmocka_unit_test(test_uc_g1_cut),
		cmocka_unit_test(test_uc_glibc_arena),
		cmocka_unit_test(test_uc_not_other_prot),
		cmocka_unit_test(test_uc_not_file_half_noreserve),
		cmocka_unit_test(test_uc_not_touched),
		cmocka_unit_test(test_uc_not_locked_dontfork_strict),
		cmocka_unit_test(test_uc_kept_ranges),
		cmocka_unit_test(test_uc_sites),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
