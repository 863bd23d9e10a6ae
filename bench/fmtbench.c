/*
 * fmtbench.c - measures libvmtrace's encoded size and decode speed for two
 * generated streams (see bench/format.sh).
 *
 *   fmtbench seed000|random EVENTS REPEATS
 * prints: stream events file_bytes bytes_per_event encode_ev_s decode_ev_s(median)
 *   fmtbench read TRACE REPEATS
 * decodes a recorded trace on this thread alone (the reader's sequential
 * path, without the prefetch thread) and prints: events file_bytes
 * bytes_per_event decode_ev_s(median) in M events/s.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "vmtrace.h"

static uint64_t rng = 0x1234567;
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Decode TRACE REPEATS times; the median rate. */
static int read_trace(const char *path, int reps)
{
	double *dec = calloc((size_t)reps, sizeof(double));
	uint64_t cnt = 0, sum = 0;
	off_t size = 0;
	for (int r = 0; r < reps; r++) {
		int fd = open(path, O_RDONLY), err = 0, rc;
		if (fd < 0) {
			fprintf(stderr, "fmtbench: cannot open '%s': %s\n", path, strerror(errno));
			return 1;
		}
		size = lseek(fd, 0, SEEK_END);
		lseek(fd, 0, SEEK_SET);
		struct vmt_event ev;
		double d0 = now();
		vmt_reader *rd = vmt_reader_open_fd(fd, &err, NULL, 0);
		if (!rd) {
			fprintf(stderr, "fmtbench: '%s': %s\n", path, strerror(-err));
			return 1;
		}
		cnt = 0;
		while ((rc = vmt_reader_next(rd, &ev)) == 1) {
			cnt++;
			sum += ev.ts_ns;
		}
		dec[r] = now() - d0;
		if (rc != 0) {
			fprintf(stderr, "fmtbench: '%s': %s\n", path, vmt_reader_errmsg(rd));
			return 1;
		}
		vmt_reader_free(rd);
		close(fd);
	}
	if (sum == 42)
		puts("");
	qsort(dec, (size_t)reps, sizeof(double), cmp);
	printf("%llu %lld %.2f %.1f\n", (unsigned long long)cnt, (long long)size,
	       (double)size / (double)cnt, (double)cnt / dec[reps / 2] / 1e6);
	free(dec);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "read") == 0)
		return read_trace(argv[2], atoi(argv[3]));
	if (argc != 4) {
		fprintf(stderr, "usage: fmtbench seed000|random EVENTS REPEATS\n"
				"       fmtbench read TRACE REPEATS\n");
		return 2;
	}
	int random = strcmp(argv[1], "random") == 0;
	uint64_t n = strtoull(argv[2], NULL, 10);
	int reps = atoi(argv[3]);
	int fd = memfd_create("bench", 0), err;
	struct vmt_header h;
	vmt_header_from_host(&h);
	vmt_writer *w = vmt_writer_create(fd, &h, NULL, &err);
	if (!w)
		return 1;

	/* seed 000: each thread mprotect(RW)s its page, then frees it with
	 * mmap(PROT_NONE, MAP_FIXED); threads alternate.  Times follow a
	 * syscall of 0.5-2.5 us and gaps of 0.2-1.2 us, with ns jitter. */
	uint64_t t = h.start_mono_ns, t0 = now() * 0 + 0;
	const uint64_t page[2] = { 0x7f12a4c01000ull, 0x7f12a4c09000ull };
	double e0 = now();
	struct vmt_event ev = { .kind = VMT_EV_SYSCALL };
	for (uint64_t i = 0; i < n; i++) {
		uint32_t th = (uint32_t)(i & 1);
		t += 200 + rnd() % 1000;
		ev.thread = th + 1;
		ev.ts_ns = t;
		uint64_t dur = 500 + rnd() % 2000;
		if (!random) {
			uint64_t a = page[th];
			if ((i >> 1) & 1)
				ev.u.sc = (struct vmt_syscall){ VMT_OP_MMAP, 6,
					{ a, 4096, 0, 0x32, (uint64_t)-1, 0 }, (int64_t)a, t + dur, VMT_NONE, 0, 0, 0, 0, 0 };
			else
				ev.u.sc = (struct vmt_syscall){ VMT_OP_MPROTECT, 3,
					{ a, 4096, 3, 0, 0, 0 }, 0, t + dur, VMT_NONE, 0, 0, 0, 0, 0 };
		} else {
			uint64_t a = 0x7f0000000000ull + (rnd() % (1ull << 28)) * 4096;
			uint64_t len = (1 + rnd() % 64) * 4096;
			switch (rnd() % 4) {
			case 0:
				ev.u.sc = (struct vmt_syscall){ VMT_OP_MMAP, 6,
					{ 0, len, 3, 0x22, (uint64_t)-1, 0 }, (int64_t)a, t + dur, VMT_NONE, 0, 0, 0, 0, 0 };
				break;
			case 1:
				ev.u.sc = (struct vmt_syscall){ VMT_OP_MUNMAP, 2, { a, len }, 0, t + dur, VMT_NONE, 0, 0, 0, 0, 0 };
				break;
			case 2:
				ev.u.sc = (struct vmt_syscall){ VMT_OP_MPROTECT, 3, { a, len, rnd() % 4 }, 0,
								t + dur, VMT_NONE, 0, 0, 0, 0, 0 };
				break;
			default:
				ev.u.sc = (struct vmt_syscall){ VMT_OP_MADVISE, 3, { a, len, 4 }, 0,
								t + dur, VMT_NONE, 0, 0, 0, 0, 0 };
			}
		}
		if (vmt_writer_append(w, &ev)) {
			fprintf(stderr, "fmtbench: append failed\n");
			return 1;
		}
	}
	vmt_writer_finish(w);
	double enc = now() - e0;
	vmt_writer_free(w);
	(void)t0;
	off_t size = lseek(fd, 0, SEEK_END);

	double *dec = calloc((size_t)reps, sizeof(double));
	for (int r = 0; r < reps; r++) {
		lseek(fd, 0, SEEK_SET);
		double d0 = now();
		vmt_reader *rd = vmt_reader_open_fd(fd, &err, NULL, 0);
		uint64_t cnt = 0, sum = 0;
		int rc;
		while ((rc = vmt_reader_next(rd, &ev)) == 1) {
			cnt++;
			sum += ev.u.sc.args[0];
		}
		dec[r] = now() - d0;
		vmt_reader_free(rd);
		if (rc != 0 || cnt != n) {
			fprintf(stderr, "fmtbench: read back %llu events, rc %d\n", (unsigned long long)cnt, rc);
			return 1;
		}
		if (sum == 42)
			puts("");
	}
	qsort(dec, (size_t)reps, sizeof(double), cmp);
	printf("%s %llu %lld %.2f %.1f %.1f\n", argv[1], (unsigned long long)n, (long long)size,
	       (double)size / (double)n, (double)n / enc / 1e6, (double)n / dec[reps / 2] / 1e6);
	free(dec);
	return 0;
}
