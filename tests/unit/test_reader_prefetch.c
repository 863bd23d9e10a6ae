/*
 * test_reader_prefetch.c - vmt_reader_prefetch(): the same events, errors,
 * messages, positions and footer as the sequential reader, on generated
 * traces of every kind (many chunks, so many batch boundaries), on the
 * golden and real traces, on traces cut short or with flipped bytes; a
 * reader freed with its thread mid-trace; a hold once its thread has
 * ended; the cases it refuses.  Each
 * way also through vmt_reader_next_ref (the event in place, no copy).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tgen.h"

/* What a whole read saw: a digest of every event (its JSON rendering, its
 * index and chunk offset), the count, the end, the message, the footer. */
struct seen {
	uint64_t hash, n, footer_events;
	int rc;
	char msg[320];
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

/* how: READ_PREFETCH, READ_REF, both or neither */
#define READ_PREFETCH 1
#define READ_REF 2
static void read_all(int fd, int how, struct seen *s)
{
	char msg[320];
	int err = 0;
	memset(s, 0, sizeof(*s));
	s->hash = 0xcbf29ce484222325ull;
	lseek(fd, 0, SEEK_SET);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r) {
		s->rc = err;
		snprintf(s->msg, sizeof(s->msg), "%s", msg);
		return;
	}
	if (how & READ_PREFETCH)
		assert_int_equal(vmt_reader_prefetch(r), 0);
	struct vmt_buf b = { 0 };
	struct vmt_event ev;
	const struct vmt_event *e = &ev;
	int rc;
	while ((rc = how & READ_REF ? vmt_reader_next_ref(r, &e) : vmt_reader_next(r, &ev)) == 1) {
		vmt_buf_reset(&b);
		vmt_render_json(&b, e);
		s->hash = fnv(s->hash, b.data, b.len);
		uint64_t pos[2] = { vmt_reader_event_index(r), vmt_reader_offset(r) };
		s->hash = fnv(s->hash, pos, sizeof(pos));
		s->n++;
		/* not yet at the end: no footer, no message */
		assert_null(vmt_reader_footer(r));
		assert_string_equal(vmt_reader_errmsg(r), "");
	}
	s->rc = rc;
	snprintf(s->msg, sizeof(s->msg), "%s", vmt_reader_errmsg(r));
	const struct vmt_footer *f = vmt_reader_footer(r);
	if (f)
		s->footer_events = f->events;
	/* sticky */
	assert_int_equal(vmt_reader_next(r, &ev), rc);
	vmt_buf_free(&b);
	vmt_reader_free(r);
}

static void same_both_ways(int fd, const char *what)
{
	struct seen a, b;
	read_all(fd, 0, &a);
	for (int how = 1; how <= (READ_PREFETCH | READ_REF); how++) {
		read_all(fd, how, &b);
		if (a.hash != b.hash || a.n != b.n || a.rc != b.rc || strcmp(a.msg, b.msg) ||
		    a.footer_events != b.footer_events)
			fail_msg("%s: sequential %llu events rc %d '%s', %s%s %llu events rc %d '%s'%s",
				 what, (unsigned long long)a.n, a.rc, a.msg,
				 how & READ_PREFETCH ? "prefetched" : "sequential",
				 how & READ_REF ? " in place" : "", (unsigned long long)b.n, b.rc,
				 b.msg, a.hash != b.hash ? " (events differ)" : "");
	}
}

/* A trace of n events of every kind in chunks of about chunk_bytes. */
static int mixed_trace(uint64_t seed, uint64_t n, size_t chunk_bytes)
{
	struct vmt_header h;
	struct vmt_writer_opts o = { chunk_bytes, 100000, 0 };
	int fd = tg_memfd("trace"), err = 0;
	tg_header(&h);
	vmt_writer *w = vmt_writer_create(fd, &h, &o, &err);
	assert_non_null(w);
	struct tg_store st;
	struct vmt_event ev;
	for (uint64_t i = 0; i < n; i++) {
		tg_event(&seed, tg_rand(&seed) % 4 ? VMT_EV_SYSCALL : 0, &ev, &st);
		assert_int_equal(vmt_writer_append(w, &ev), 0);
	}
	assert_int_equal(vmt_writer_finish(w), 0);
	vmt_writer_free(w);
	return fd;
}

static void test_generated(void **state)
{
	/* small chunks: a batch ends at each; large: batches end by size */
	static const size_t chunk[] = { 512, 8192, 1u << 20 };
	for (unsigned i = 0; i < 3; i++) {
		int fd = mixed_trace(7 + i, 60000, chunk[i]);
		struct seen s;
		read_all(fd, 1, &s);
		assert_int_equal(s.rc, 0);
		assert_int_equal(s.n, 60000);
		assert_int_equal(s.footer_events, 60000);
		same_both_ways(fd, "generated");
		close(fd);
	}
}

static void test_damaged(void **state)
{
	int fd = mixed_trace(3, 20000, 4096);
	size_t len;
	uint8_t *buf = tg_slurp(fd, &len);
	close(fd);
	uint64_t rng = 99;
	for (int i = 0; i < 60; i++) {
		uint8_t *copy = malloc(len);
		memcpy(copy, buf, len);
		size_t cut = len;
		char what[64];
		if (i % 2) {
			cut = (size_t)(tg_rand(&rng) % len);
			snprintf(what, sizeof(what), "cut at byte %zu", cut);
		} else {
			size_t at = (size_t)(tg_rand(&rng) % len);
			copy[at] ^= (uint8_t)(1 + tg_rand(&rng) % 255);
			snprintf(what, sizeof(what), "byte %zu flipped", at);
		}
		int cfd = tg_memfd_with(copy, cut);
		struct seen s;
		read_all(cfd, 1, &s);
		if (i % 2 && cut > 64)
			assert_true(s.rc < 0); /* a cut trace never ends cleanly */
		same_both_ways(cfd, what);
		close(cfd);
		free(copy);
	}
	free(buf);
}

static void each_trace_in(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".zst"))
			continue;
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		same_both_ways(fd, path);
		close(fd);
		n++;
	}
	closedir(d);
	assert_true(n > 0);
}

static void test_golden_and_real(void **state)
{
	each_trace_in("tests/data");
	each_trace_in("tests/data/real");
}

static void test_free_midway(void **state)
{
	/* The thread is ahead, waiting for a free batch, when the reader is
	 * freed: the free stops and waits for it (ASan sees any leak). */
	int fd = mixed_trace(5, 100000, 8192), err;
	char msg[320];
	for (int stop_at = 0; stop_at < 3; stop_at++) {
		lseek(fd, 0, SEEK_SET);
		vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
		assert_non_null(r);
		assert_int_equal(vmt_reader_prefetch(r), 0);
		assert_int_equal(vmt_reader_prefetch(r), 0); /* already on */
		struct vmt_event ev;
		for (int i = 0; i < stop_at * 5000; i++)
			assert_int_equal(vmt_reader_next(r, &ev), 1);
		if (stop_at == 2)
			usleep(20000); /* let it fill every batch */
		vmt_reader_free(r);
	}
	close(fd);
}

/* The threads of this process that can still run its code: those whose
 * status shows the memory (a thread past its exit_mm has none; a joined
 * thread may still be listed until the kernel reaps it). */
static int nthreads(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		char path[300], line[128];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* (reaped meanwhile) */
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "VmSize:", 7)) {
				n++;
				break;
			}
		fclose(f);
	}
	closedir(d);
	return n;
}

static void test_hold_after_the_end(void **state)
{
	/* The thread has decoded the whole trace and ended (or is ending):
	 * the hold returns only once that thread is gone.  One still on its
	 * way out may hold the allocator's lock (ASan's) at a fork.  The
	 * free after it then joins nothing twice. */
	int fd = mixed_trace(1, 64, 8192), err;
	char msg[320];
	int before = nthreads();
	for (int i = 0; i < 200; i++) {
		lseek(fd, 0, SEEK_SET);
		vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
		assert_non_null(r);
		assert_int_equal(vmt_reader_prefetch(r), 0);
		struct vmt_event ev;
		int rc;
		while ((rc = vmt_reader_next(r, &ev)) == 1)
			;
		assert_int_equal(rc, 0);
		vmt_reader_hold(r, 1);
		assert_int_equal(nthreads(), before);
		vmt_reader_hold(r, 0);
		vmt_reader_free(r);
	}
	close(fd);
}

static void test_refused(void **state)
{
	int fd = mixed_trace(6, 1000, 8192), err;
	char msg[320];
	/* after the first event: too late */
	lseek(fd, 0, SEEK_SET);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	assert_non_null(r);
	struct vmt_event ev;
	assert_int_equal(vmt_reader_next(r, &ev), 1);
	assert_int_equal(vmt_reader_prefetch(r), -EINVAL);
	assert_int_equal(vmt_reader_next(r, &ev), 1); /* still reads */
	vmt_reader_free(r);

	/* a pipe stays sequential */
	size_t len;
	uint8_t *buf = tg_slurp(fd, &len);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		for (size_t off = 0; off < len;) {
			ssize_t k = write(p[1], buf + off, len - off);
			if (k <= 0)
				_exit(1);
			off += (size_t)k;
		}
		_exit(0);
	}
	close(p[1]);
	r = vmt_reader_open_fd(p[0], &err, msg, sizeof(msg));
	assert_non_null(r);
	assert_int_equal(vmt_reader_prefetch(r), -ENOTSUP);
	uint64_t n = 0;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1)
		n++;
	assert_int_equal(rc, 0);
	assert_int_equal(n, 1000);
	vmt_reader_free(r);
	close(p[0]);
	free(buf);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_golden_and_real),
		cmocka_unit_test(test_free_midway),
		cmocka_unit_test(test_hold_after_the_end),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests_name("reader_prefetch", tests, NULL, NULL);
}
