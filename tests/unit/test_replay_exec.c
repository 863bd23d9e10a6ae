/*
 * test_replay_exec.c - replays of synthetic traces (written with
 * libvmtrace) in one thread: every op, splits and punches, MAP_FIXED
 * replacement, mremap moves, brk, file and SysV mappings, stand-ins,
 * touches and their traps, pacing, the op clock, divergences.  The
 * recorded results are what this kernel returns for the same calls, so a
 * correct replay has zero divergences; the counts of ops, errors and
 * touched pages are checked too.  Threads and processes:
 * test_replay_threads.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "exec_int.h"
#include "rprun.h"

static void test_every_op(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	unsigned char vec[8];
	(void)vec;

	rr_begin(&t);
	/* mmap, touch, discard, split and merge by mprotect, punch. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 16 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&t, 0, 0, A, 16, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, A, 16 * PAGE, MADV_DONTNEED);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, A + 4 * PAGE, 4 * PAGE, PROT_READ);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, A, 16 * PAGE, RW);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A + 8 * PAGE, 2 * PAGE);
	/* Across the hole: applied up to it, then ENOMEM. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, -ENOMEM, A + 7 * PAGE, 4 * PAGE, PROT_READ);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, -ENOMEM, A + 6 * PAGE, 6 * PAGE, MADV_WILLNEED);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, -EINVAL, A + 3, PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, -EINVAL, A, PAGE, 12345);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MLOCK, 0, A, 4 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNLOCK, 0, A, 4 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MLOCK2, 0, A + 1, 4 * PAGE, MLOCK_ONFAULT);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNLOCK, 0, A, 5 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MINCORE, 0, A, 4 * PAGE, 0x1000);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MINCORE, -ENOMEM, A + 8 * PAGE, PAGE, 0x1000);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MSYNC, 0, A, 4 * PAGE, MS_ASYNC);
	TG_PUT_SC(&t, 0, 0, VMT_OP_PKEY_MPROTECT, 0, A, 2 * PAGE, PROT_READ, (uint64_t)-1);
	TG_PUT_SC(&t, 0, 0, VMT_OP_REMAP_FILE_PAGES, -EINVAL, A, PAGE, 0, 0, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MLOCKALL, 0, MCL_CURRENT | MCL_ONFAULT);
	tg_put(&t, tg_ev_sc(0, 0, VMT_OP_MUNLOCKALL, 0, 0, NULL));
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 16 * PAGE); /* two pieces and a gap */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 16 * PAGE); /* all gap */
	/* Sealing, then the seal holds. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, B, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MSEAL, 0, B, 4 * PAGE, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, -EPERM, B, 4 * PAGE);
	/* Ops the replay cannot reproduce are skipped, not failed. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_PROCESS_MADVISE, 0, 3, 0x1000, 1, MADV_COLD, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMAT, (int64_t)C, 5, 0, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMDT, 0, C);
	/* A recorded mmap failure that this machine reproduces. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, -EINVAL, 0, 0, RW, PRIV_ANON, FD_NONE, 0);
	tg_thread_exit(&t, 0, 0);
	tg_proc_exit(&t, 0, 0);
	tg_finish(&t);

	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 16);
	assert_int_equal(r.ops[VMT_OP_MMAP].count, 3);
	assert_int_equal(r.ops[VMT_OP_MUNMAP].count, 5);
	assert_int_equal(r.ops[VMT_OP_MUNMAP].errors, 2);
	assert_int_equal(r.ops[VMT_OP_MPROTECT].count, 3);
	assert_int_equal(r.ops[VMT_OP_MPROTECT].errors, 1);
	assert_int_equal(r.ops[VMT_OP_MINCORE].errors, 1);
	assert_int_equal(r.ops[VMT_OP_MSEAL].count, 1);
	assert_int_equal(r.ops[VMT_OP_MLOCKALL].count, 1);
	assert_int_equal(r.skipped, 3);
	assert_int_equal(r.events, 26);
	assert_int_equal(tr->nops, 26);
	assert_true(r.minor_faults >= 16);
	assert_true(r.wall_ns > 0);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* mremap: grow with a move, shrink in place, move onto part of another
 * region (MREMAP_FIXED), DONTUNMAP; MAP_FIXED replacing part of a region. */
static void test_remap_and_fixed(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;

	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, B, A, 4 * PAGE, 8 * PAGE, MREMAP_MAYMOVE, 0);
	tg_touch(&t, 0, 0, B, 8, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, B, 8 * PAGE, MADV_DONTNEED);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, B, B, 8 * PAGE, 2 * PAGE, 0, 0); /* shrink */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);	/* the old place: gone */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, C, 0, 8 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, C + 2 * PAGE, B, 2 * PAGE, 2 * PAGE,
		  MREMAP_MAYMOVE | MREMAP_FIXED, C + 2 * PAGE);
	tg_touch(&t, 0, 0, C, 8, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, C, 8 * PAGE, MADV_DONTNEED);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, B, 2 * PAGE); /* moved away: nothing */
	/* DONTUNMAP keeps the source mapped (empty). */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, D, C, 2 * PAGE, 2 * PAGE,
		  MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0);
	tg_touch(&t, 0, 0, D, 2, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, D, 2 * PAGE);
	/* MAP_FIXED over the middle of C, then the whole range as one. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, C + 3 * PAGE, C + 3 * PAGE, 2 * PAGE, PROT_NONE,
		  PRIV_ANON_FIXED, FD_NONE, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, C, 8 * PAGE, PROT_READ);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, C, 8 * PAGE, RW);
	tg_touch(&t, 0, 0, C, 8, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, C, 8 * PAGE);
	/* MAP_FIXED where nothing was mapped: a new region. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, D + 16 * PAGE, D + 16 * PAGE, 2 * PAGE, RW,
		  PRIV_ANON_FIXED, FD_NONE, 0);
	tg_touch(&t, 0, 0, D + 16 * PAGE, 2, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, D + 16 * PAGE, 2 * PAGE);
	/* Failing mremap of an unmapped range. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, -EFAULT, A, PAGE, 2 * PAGE, MREMAP_MAYMOVE, 0);
	rr_finish(&t);

	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 4 + 8 + 8 + 2 + 8 + 2);
	assert_int_equal(r.ops[VMT_OP_MREMAP].count, 5);
	assert_int_equal(r.ops[VMT_OP_MREMAP].errors, 1);
	assert_int_equal(r.touch_faults, 0);
	rr_release(&r, tr);

	/* The same with the recorded addresses (free in this process). */
	o.placement = RP_PLACE_EXACT;
	tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.fallbacks, 0);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* A temporary file of len bytes 'x' (path: a mkstemp template, filled
 * in); its descriptor, and its stat in *st. */
static int x_file(char *path, size_t len, struct stat *st)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	char buf[4096];
	memset(buf, 'x', sizeof(buf));
	for (size_t n = 0; n < len; n += sizeof(buf)) {
		size_t k = len - n < sizeof(buf) ? len - n : sizeof(buf);
		assert_int_equal(write(fd, buf, k), (ssize_t)k);
	}
	assert_int_equal(fstat(fd, st), 0);
	return fd;
}

/* A recorded touch the replay's mapping does not allow traps (a trace is
 * untrusted: here pages of a --files=original mapping beyond the end of
 * its 1-page file, SIGBUS); the replayer counts it, skips the rest of that
 * element's touches, still replays its call, and goes on. */
static void test_touch_traps(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	char path[] = "/tmp/tgen-small.XXXXXX";
	struct stat st;
	close(x_file(path, PAGE, &st));

	rr_begin(&t);
	tg_file(&t, 0, 0, path, (uint64_t)st.st_ino, PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, MAP_PRIVATE, 3, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, B, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&t, 0, 0, B, 2, VMT_PAGE_WRITTEN);	    /* before the trap: done */
	tg_touch(&t, 0, 0, A + 2 * PAGE, 2, VMT_PAGE_WRITTEN); /* beyond the end */
	tg_touch(&t, 0, 0, B + 3 * PAGE, 1, VMT_PAGE_WRITTEN); /* skipped */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, B, 4 * PAGE, MADV_DONTNEED);
	for (int i = 0; i < 3; i++) {
		tg_touch(&t, 0, 0, A + PAGE, 1, VMT_PAGE_PRESENT); /* a read beyond */
		TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
		tg_touch(&t, 0, 0, A, 1, VMT_PAGE_WRITTEN);
		tg_touch(&t, 0, 0, B, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, B, 4 * PAGE, MADV_DONTNEED);
	}
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, B, 4 * PAGE);
	rr_finish(&t);

	rr_opts(&o);
	o.files = RP_FILES_ORIGINAL;
	rp_trace *tr;
	/* On the short path, then off it (any pacing takes every element
	 * there; a speed this high adds no waiting). */
	for (int slow = 0; slow < 2; slow++) {
		o.speed = slow ? 1e6 : 0;
		tr = rr_replay_clean(t.path, &o, &r);
		uint32_t small = 0;
		for (uint32_t i = 0; i < tr->nfiles; i++)
			small += !strcmp(tr->files[i].path, path) && tr->files[i].original;
		assert_int_equal(small, 1);
		assert_int_equal(r.touch_faults, 4);
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 7);
		assert_int_equal(r.ops[VMT_OP_MUNMAP].count, 2);
		assert_int_equal(r.touched_pages, 2 + 3 * (1 + 4));
		rr_release(&r, tr);
	}
	tg_remove(&t);

	/* A trap in an element another thread waits for: it still posts
	 * (else the main thread's munmap would wait forever: the alarm). */
	rr_begin(&t);
	tg_file(&t, 0, 0, path, (uint64_t)st.st_ino, PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, MAP_PRIVATE, 3, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, B, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_thread(&t, 0, 1, 0);
	tg_touch(&t, 0, 1, A + 2 * PAGE, 1, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 1, VMT_OP_MADVISE, 0, B, 4 * PAGE, MADV_DONTNEED);
	tg_thread_exit(&t, 0, 1);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, B, 4 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	rr_finish(&t);
	o.speed = 0;
	alarm(RR_HANG_S);
	tr = rr_replay_clean(t.path, &o, &r);
	alarm(0);
	const struct rp_elem *mad = NULL;
	for (uint32_t i = 0; i < tr->threads[1].nelem; i++)
		if (rp_trace_elem(tr->arena, 1, i, NULL)->op == VMT_OP_MADVISE)
			mad = rp_trace_elem(tr->arena, 1, i, NULL);
	assert_non_null(mad);
	assert_true(mad->flags & RF_POST);
	assert_int_equal(r.touch_faults, 1);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 1);
	assert_int_equal(r.ops[VMT_OP_MUNMAP].count, 2);
	rr_release(&r, tr);
	tg_remove(&t);
	unlink(path);
}

/* A file that grew while mapped: the program extended it (pwrite,
 * ftruncate: not recorded) and grew its shared mapping with mremap, then
 * touched the new pages.  The scratch file is as long as the grown
 * mapping, so none of the touches traps (before, every touch past the
 * size first mapped trapped, and took its element's later touches with
 * it: a database with mmap I/O replayed half its faults). */
static void test_grown_file(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	(void)state;

	rr_begin(&t);
	tg_file(&t, 0, 0, "/var/db/grows.db", 77, 2 * PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 2 * PAGE, RW, MAP_SHARED, 3, 0);
	tg_touch(&t, 0, 0, A, 2, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, (int64_t)B, A, 2 * PAGE, 8 * PAGE, MREMAP_MAYMOVE, 0);
	tg_touch(&t, 0, 0, B + 6 * PAGE, 2, VMT_PAGE_WRITTEN); /* past the first size */
	tg_touch(&t, 0, 0, B + 2 * PAGE, 1, VMT_PAGE_PRESENT);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, (int64_t)B, B, 8 * PAGE, 12 * PAGE, MREMAP_MAYMOVE, 0);
	tg_touch(&t, 0, 0, B + 11 * PAGE, 1, VMT_PAGE_WRITTEN); /* grown in place */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, B, 12 * PAGE);
	rr_finish(&t);

	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	int found = 0;
	for (uint32_t i = 0; i < tr->nfiles; i++)
		if (!strcmp(tr->files[i].path, "/var/db/grows.db")) {
			assert_true(tr->files[i].size >= 12 * PAGE);
			found++;
		}
	assert_int_equal(found, 1);
	assert_int_equal(r.touch_faults, 0);
	assert_int_equal(r.touched_pages, 2 + 2 + 1 + 1);
	assert_int_equal(r.ops[VMT_OP_MREMAP].count, 2);
	assert_int_equal(r.ops[VMT_OP_MREMAP].errors, 0);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* --speed=F honours the recorded gaps (divided by F), --speed=max
 * (0) does not: the second madvise and the munmap each came 60 ms after
 * the op before, and each gap is a sleep of the replay thread (one
 * voluntary context switch; the thread's end alone, paced, would catch
 * up with one sleep). */
static void test_speed(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;

	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 2; i++) {
		tg_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
		t.now += 60000000;
	}
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	rr_finish(&t);

	/* The recorded gaps (120 ms) are kept at --speed=1, a quarter of them
	 * at 4, none at max.  Only the lower bounds are times; the rest are
	 * told apart by the gaps, which a loaded machine does not shorten. */
	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	uint64_t wall_max = r.wall_ns;
	assert_int_equal(r.touched_pages, 8);
	rr_release(&r, tr);

	o.speed = 1;
	tr = rr_replay_clean(t.path, &o, &r);
	uint64_t wall_1 = r.wall_ns;
	assert_true(r.wall_ns >= 120000000);
	assert_true(wall_max + 60000000 < wall_1);
	assert_int_equal(r.nthreads, 1);
	assert_true(r.threads[0].voluntary_cs >= 2);
	assert_int_equal(r.touched_pages, 8);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 2);
	rr_release(&r, tr);

	o.speed = 4; /* a quarter of the gaps */
	tr = rr_replay_clean(t.path, &o, &r);
	assert_true(r.wall_ns >= 30000000 && r.wall_ns + 30000000 < wall_1);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* What a display of progress is told: the load's bytes read out of the
 * file's size, every few thousand events; a run's time so far against the
 * recorded duration, about 4 times a second. */
struct progress_seen {
	unsigned loads, runs;
	uint64_t load_done, load_total, run_done, run_total;
	int backwards;
};

static void note_progress(void *arg, int what, uint64_t done, uint64_t total)
{
	struct progress_seen *p = arg;
	if (what == RP_PROGRESS_LOAD) {
		p->backwards |= done < p->load_done;
		p->loads++, p->load_done = done, p->load_total = total;
	} else {
		assert_int_equal(what, RP_PROGRESS_RUN);
		p->backwards |= done < p->run_done;
		p->runs++, p->run_done = done, p->run_total = total;
	}
}

static void test_progress(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	struct progress_seen seen = {0};

	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pfd < 0 && errno == ENOSYS) {
		fprintf(stderr, "skip: this kernel has no pidfd_open (Linux 5.3): a run's progress"
				" is reported only as it starts\n");
		skip();
	}
	if (pfd >= 0)
		close(pfd);

	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 40000; i++)
		TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, A, PAGE, MADV_DONTNEED);
	t.now += 600000000; /* 0.6 s before the last call */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, PAGE);
	rr_finish(&t);
	struct stat st;
	assert_int_equal(stat(t.path, &st), 0);

	rr_opts(&o);
	o.progress = note_progress;
	o.progress_arg = &seen;
	o.speed = 1;
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	fprintf(stderr, "load: %u reports, last %" PRIu64 " of %" PRIu64 " bytes; run: %u reports,"
		" last %" PRIu64 " of %" PRIu64 " ns\n", seen.loads, seen.load_done, seen.load_total,
		seen.runs, seen.run_done, seen.run_total);
	assert_true(seen.loads >= 4); /* 40000 events, one report per 8192 */
	assert_int_equal(seen.load_total, st.st_size);
	assert_true(seen.load_done > 0 && seen.load_done <= seen.load_total);
	assert_true(seen.runs >= 2); /* its start (0), then at least one report */
	assert_true(seen.run_total >= 600000000 && seen.run_total < 700000000);
	assert_true(seen.run_done >= 250000000);
	assert_false(seen.backwards);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* brk on the emulated heap; stand-ins for snapshot mappings ops use. */
static void test_brk_and_standins(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;

	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)(HEAP + 4 * PAGE), 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)(HEAP + 20 * PAGE + 100), HEAP + 20 * PAGE + 100);
	tg_touch(&t, 0, 0, HEAP, 21, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)(HEAP + 8 * PAGE), HEAP + 8 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)(HEAP + 8 * PAGE), 1); /* below start: fails */
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)(HEAP + 8 * PAGE), 0);
	/* Ops on the binary and the stack from the snapshot. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, 0x555400004000ull, PAGE, PROT_READ);
	tg_touch(&t, 0, 0, 0x7ffd00020000ull, 1, VMT_PAGE_WRITTEN);
	tg_touch(&t, 0, 0, 0x555400000000ull, 2, VMT_PAGE_PRESENT);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, 0x7ffd00000000ull, 0x21000, MADV_DONTNEED);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, 0x555400000000ull, 4 * PAGE, MADV_WILLNEED);
	rr_finish(&t);

	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.ops[VMT_OP_BRK].count, 5);
	assert_int_equal(r.touched_pages, 21 + 1 + 2);
	assert_int_equal(r.touch_faults, 0);
	rr_release(&r, tr);
	tg_remove(&t);

	/* No [heap] in the snapshot: the heap starts with the first brk.
	 * Streamed (rr_replay also replays it with a window of one byte),
	 * the process's plan is frozen before that brk: the brk reserves
	 * the heap itself. */
	static const struct tg_map m[] = {
		{0x555400000000ull, 0x555400002000ull, VMT_PROT_R, "/usr/bin/app"},
		{0x7ffd00000000ull, 0x7ffd00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	tg_maps(&t, 0, 0, m, sizeof(m) / sizeof(m[0]));
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, 0x7ffd00000000ull, PAGE, MADV_DONTNEED);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)HEAP, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)(HEAP + 8 * PAGE), HEAP + 8 * PAGE);
	tg_touch(&t, 0, 0, HEAP, 8, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, (int64_t)(HEAP + 2 * PAGE), HEAP + 2 * PAGE);
	tg_touch(&t, 0, 0, HEAP, 2, VMT_PAGE_WRITTEN);
	rr_finish(&t);
	tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.ops[VMT_OP_BRK].count, 3);
	assert_int_equal(r.ops[VMT_OP_BRK].errors, 0);
	assert_int_equal(r.touched_pages, 10);
	rr_release(&r, tr);
	struct rp_options so = o;
	char msg[256];
	so.window = 1;
	assert_int_equal(rp_trace_load(t.path, &so, &tr, msg, sizeof(msg)), 0);
	assert_false(tr->complete); /* (streamed) */
	assert_int_equal(rp_run(tr, &so, &r, msg, sizeof(msg)), 0);
	assert_int_equal(r.ops[VMT_OP_BRK].errors, 0);
	assert_int_equal(r.touched_pages, 10);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* File mappings: scratch by default; --files=original maps the real file
 * read-only and never changes it. */
static void test_files(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	char path[] = "/tmp/tgen-file.XXXXXX";
	char buf[3 * 4096];
	memset(buf, 'x', sizeof(buf));
	struct stat st0;
	int fd = x_file(path, sizeof(buf), &st0);

	rr_begin(&t);
	tg_file(&t, 0, 0, path, (uint64_t)st0.st_ino, sizeof(buf), O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 3 * PAGE, RW, MAP_PRIVATE, 3, 0);
	tg_touch(&t, 0, 0, A, 3, VMT_PAGE_WRITTEN);
	tg_file(&t, 0, 0, "/gone/away.db", 99, 8 * PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, B, 0, 8 * PAGE, RW, MAP_SHARED, 4, 0);
	tg_touch(&t, 0, 0, B, 8, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MSYNC, 0, B, 8 * PAGE, MS_SYNC);
	tg_file(&t, 0, 0, path, (uint64_t)st0.st_ino, sizeof(buf), O_RDONLY);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, C, 0, PAGE, PROT_READ, MAP_SHARED, 5, PAGE);
	tg_touch(&t, 0, 0, C, 1, VMT_PAGE_PRESENT);
	/* A shared mapping of a read-only fd cannot become writable. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, -EACCES, C, PAGE, RW);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 3 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, B, 8 * PAGE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, C, PAGE);
	rr_finish(&t);

	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 12);
	assert_int_equal(r.touch_faults, 0);
	rr_release(&r, tr);

	o.files = RP_FILES_ORIGINAL;
	tr = rr_replay_clean(t.path, &o, &r);
	for (uint32_t i = 0; i < tr->nfiles; i++) {
		if (!strcmp(tr->files[i].path, path))
			assert_int_equal(tr->files[i].original, 1); /* same size, read-only */
		else
			assert_int_equal(tr->files[i].original, 0); /* missing */
	}
	rr_release(&r, tr);

	/* The real file is untouched. */
	char back[sizeof(buf)];
	assert_int_equal(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	struct stat st1;
	fstat(fd, &st1);
	assert_int_equal(st1.st_mtim.tv_sec, st0.st_mtim.tv_sec);
	assert_int_equal(st1.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);
	close(fd);
	unlink(path);
	tg_remove(&t);
}

/* SysV shared memory: each attach maps the segment (a memfd stands in),
 * a read-only attach cannot be made writable, SHM_REMAP replaces a
 * mapping, shmdt unmaps; an attach without the segment's identity is
 * skipped. */
static void test_shm(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;

	rr_begin(&t);
	tg_file(&t, 0, 0, "shm:7", 7, 4 * PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMAT, (int64_t)C, 7, 0, 0);
	tg_touch(&t, 0, 0, C, 4, VMT_PAGE_WRITTEN);
	tg_file(&t, 0, 0, "shm:7", 7, 4 * PAGE, O_RDONLY);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMAT, (int64_t)D, 7, 0, SHM_RDONLY);
	tg_touch(&t, 0, 0, D, 4, VMT_PAGE_READ);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, -EACCES, D, 4 * PAGE, RW);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, (int64_t)E, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_file(&t, 0, 0, "shm:7", 7, 4 * PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMAT, (int64_t)E, 7, E, SHM_REMAP);
	tg_touch(&t, 0, 0, E, 4, VMT_PAGE_WRITTEN);
	/* No identity (the recorder could not stat the segment): skipped. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMAT, -EINVAL, 99, 0, 0);
	/* A neighbour right after the first attach, and a detach whose
	 * segment size is stale (the recorder's table): only the attach's own
	 * mapping goes. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, (int64_t)(C + 4 * PAGE), 0, 4 * PAGE, RW, PRIV_ANON,
		  FD_NONE, 0);
	tg_file(&t, 0, 0, "shm:7", 7, 8 * PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMDT, 0, C);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, C + 4 * PAGE, 4 * PAGE, PROT_READ);
	tg_file(&t, 0, 0, "shm:7", 7, 4 * PAGE, O_RDONLY);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMDT, 0, D);
	tg_file(&t, 0, 0, "shm:7", 7, 4 * PAGE, O_RDWR);
	TG_PUT_SC(&t, 0, 0, VMT_OP_SHMDT, 0, E);
	/* Detached: the range is free again. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, -ENOMEM, C, PAGE, PROT_READ);
	rr_finish(&t);

	rr_opts(&o);
	for (int place = 0; place < 2; place++) {
		o.placement = place ? RP_PLACE_EXACT : RP_PLACE_KERNEL;
		rp_trace *tr = rr_replay_clean(t.path, &o, &r);
		assert_int_equal(r.ops[VMT_OP_SHMAT].count, 3);
		assert_int_equal(r.ops[VMT_OP_SHMDT].count, 3);
		assert_int_equal(r.ops[VMT_OP_MPROTECT].count, 3);
		assert_int_equal(r.ops[VMT_OP_MPROTECT].errors, 2);
		assert_int_equal(r.skipped, 1);
		assert_int_equal(r.touched_pages, 12);
		assert_int_equal(r.touch_faults, 0);
		uint32_t segs = 0; /* one segment, however attached */
		for (uint32_t i = 0; i < tr->nfiles; i++)
			segs += tr->files[i].shm;
		assert_int_equal(segs, 1);
		rr_release(&r, tr);
	}
	tg_remove(&t);
}

/* Op latencies are timed with the TSC where the kernel keeps time with it
 * and converted to nanoseconds against CLOCK_MONOTONIC; with
 * RP_CLOCK_MONOTONIC (VMREPLAY_CLOCK=monotonic), with clock_gettime.  A thread doing nothing
 * but calls spends most of its busy time inside them: the ops' summed
 * latency must lie between a quarter of its busy time and all of it.  A
 * conversion left out (ticks of a clock above 1.3 GHz) or inverted fails
 * one bound; preemption lands inside and between calls alike. */
int rp_tsc_usable(void); /* replay/run/metrics.c */

static uint64_t op_time_sum(const struct rp_run_result *r)
{
	uint64_t sum = 0;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++)
		sum += r->ops[op].count * r->ops[op].mean_ns;
	return sum;
}

static void test_op_clock(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 10000; i++) {
		TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, A, PAGE, PROT_READ);
		TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, A, PAGE, RW);
	}
	rr_finish(&t);
	if (!rp_tsc_usable())
		fprintf(stderr, "(the clocksource is not tsc: both runs time with CLOCK_MONOTONIC)\n");
	rr_opts(&o);
	for (int mono = 0; mono < 2; mono++) {
		o.clock = mono ? RP_CLOCK_MONOTONIC : RP_CLOCK_AUTO;
		rp_trace *tr = rr_replay(t.path, &o, &r);
		assert_int_equal(r.nthreads, 1);
		uint64_t busy = r.threads[0].busy_ns, ops = op_time_sum(&r);
		fprintf(stderr, "%s: calls %" PRIu64 " ns of %" PRIu64 " ns busy\n",
			mono ? "monotonic" : "op clock", ops, busy);
		assert_true(ops <= busy);
		assert_true(ops >= busy / 4);
		assert_true(r.ops[VMT_OP_MPROTECT].p50_ns <= r.ops[VMT_OP_MPROTECT].max_ns);
		rr_release(&r, tr);
	}
	tg_remove(&t);
}

/* A replay that cannot do what was recorded reports it. */
static void test_divergences(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;

	rr_begin(&t);
	for (int i = 0; i < 12; i++) /* "failed" there, works here */
		TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, -ENOMEM, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, A, PAGE, MADV_DONTNEED); /* nothing mapped */
	rr_finish(&t);

	rr_opts(&o);
	rr_expect_divergences = 1;
	rp_trace *tr = rr_replay(t.path, &o, &r);
	rr_expect_divergences = 0;
	assert_int_equal(r.divergences, 13);
	assert_int_equal(r.ndiv_shown, RP_DIV_SHOWN);
	assert_int_equal(r.div_by_op[VMT_OP_MMAP], 12);
	assert_int_equal(r.div_by_op[VMT_OP_MADVISE], 1);
	assert_non_null(strstr(r.div[0].text, "mmap(NULL, 4096"));
	assert_non_null(strstr(r.div[0].text, "ENOMEM"));
	assert_true(r.div[0].replayed > 0);
	assert_true(r.div[0].event < r.div[1].event);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* --touch=faults traces: each fault in order, read as read. */
static void test_fault_touches(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;

	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 64 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 64; i++)
		tg_fault(&t, 0, 0, A + i * PAGE + 8, VMT_FAULT_READ);
	for (int i = 0; i < 64; i++)
		tg_fault(&t, 0, 0, A + i * PAGE + 16, VMT_FAULT_WRITE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 64 * PAGE);
	rr_finish(&t);

	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 128);
	/* Read faults map the zero page, writes then copy: 2 per page; where
	 * the kernel has no zero page the read allocates and the write takes
	 * no fault. */
	assert_true(vmt_host_zero_page() >= 0);
	assert_true(r.rusage_minor >= (vmt_host_zero_page() ? 128 : 64));
	rr_release(&r, tr);
	tg_remove(&t);
}

/* --files=original with paths a hostile trace names: a FIFO (never opened,
 * so never waited on), a symlink (not followed), a kernel file of the
 * recorded size and inode, a file with no inode to check it by; each is
 * replayed from a scratch file, and says why.  The file that still is
 * the recorded one is mapped from its path. */
static void test_originals_refused(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	char good[] = "/tmp/tgen-orig.XXXXXX", other[] = "/tmp/tgen-orig2.XXXXXX",
	     dir[] = "/tmp/tgen-origd.XXXXXX";
	struct stat st, ost, sys;
	close(x_file(good, PAGE, &st));
	close(x_file(other, PAGE, &ost));
	assert_non_null(mkdtemp(dir));
	char fifo[64], link[64];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(symlink(other, link), 0);
	struct stat fst;
	assert_int_equal(stat(fifo, &fst), 0);
	const char *kfile = "/sys/kernel/mm/transparent_hugepage/enabled";
	int have_sys = stat(kfile, &sys) == 0 && sys.st_size > 0;
	const struct {
		const char *path;
		uint64_t ino, size;
		int why;
	} files[] = {
		{ good, (uint64_t)st.st_ino, PAGE, RP_ORIG_OK },
		{ fifo, (uint64_t)fst.st_ino, PAGE, RP_ORIG_TYPE },
		{ link, (uint64_t)ost.st_ino, PAGE, RP_ORIG_TYPE },
		{ good, 0, PAGE, RP_ORIG_NO_INODE },
		{ kfile, have_sys ? (uint64_t)sys.st_ino : 1, have_sys ? (uint64_t)sys.st_size : PAGE,
		  have_sys ? RP_ORIG_PSEUDO : RP_ORIG_MISSING },
	};
	const size_t n = sizeof(files) / sizeof(files[0]);
	rr_begin(&t);
	for (size_t i = 0; i < n; i++) {
		tg_file(&t, 0, 0, files[i].path, files[i].ino, files[i].size, O_RDONLY);
		TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A + (int64_t)(i * 4 * PAGE), 0, PAGE, LX_PROT_READ,
			  MAP_PRIVATE, 3, 0);
	}
	for (size_t i = 0; i < n; i++)
		TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A + i * 4 * PAGE, PAGE);
	rr_finish(&t);
	rr_opts(&o);
	o.files = RP_FILES_ORIGINAL;
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.divergences, 0);
	assert_int_equal(r.ops[VMT_OP_MMAP].count, n);
	/* files are told apart by identity: the good path twice (inode 0) */
	for (size_t i = 0; i < n; i++) {
		int found = 0;
		for (uint32_t k = 0; k < tr->nfiles; k++) {
			const struct rp_file *f = &tr->files[k];
			if (strcmp(f->path, files[i].path) || f->ino != files[i].ino)
				continue;
			found = 1;
			assert_int_equal(f->not_original, files[i].why);
			assert_int_equal(f->original, files[i].why == RP_ORIG_OK);
		}
		assert_true(found);
	}
	rr_release(&r, tr);
	tg_remove(&t);
	unlink(fifo);
	unlink(link);
	rmdir(dir);
	unlink(good);
	unlink(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_op),
		cmocka_unit_test(test_remap_and_fixed),
		cmocka_unit_test_teardown(test_touch_traps, rr_cancel_alarm),
		cmocka_unit_test(test_grown_file),
		cmocka_unit_test(test_speed),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_brk_and_standins),
		cmocka_unit_test(test_files),
		cmocka_unit_test_teardown(test_originals_refused, rr_cancel_alarm),
		cmocka_unit_test(test_shm),
		cmocka_unit_test(test_op_clock),
		cmocka_unit_test(test_divergences),
		cmocka_unit_test(test_fault_touches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
