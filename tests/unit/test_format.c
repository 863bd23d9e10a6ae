/*
 * test_format.c - libvmtrace writer and reader: round trips of every event
 * kind, chunking, truncation at every byte, corruption, bad headers, time
 * based flushing and a writer killed with SIGKILL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include "tgen.h"
#include "vmtutil.h"

/* Write n events of `kind` (0: mixed) generated from seed; returns fd. */
static int write_trace(uint64_t seed, uint32_t kind, uint64_t n, size_t chunk_bytes, int finish)
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
		tg_event(&seed, kind, &ev, &st);
		assert_int_equal(vmt_writer_append(w, &ev), 0);
	}
	if (finish)
		assert_int_equal(vmt_writer_finish(w), 0);
	else
		assert_int_equal(vmt_writer_flush(w), 0);
	vmt_writer_free(w);
	return fd;
}

/* Read fd back and compare with the events regenerated from seed. */
static void check_trace(int fd, uint64_t seed, uint32_t kind, uint64_t n)
{
	char msg[320];
	int err = 0;
	lseek(fd, 0, SEEK_SET);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r)
		fail_msg("open: %s", msg);
	const struct vmt_header *h = vmt_reader_header(r);
	assert_string_equal(h->arch, "x86_64");
	assert_string_equal(h->hostname, "testhost");
	assert_int_equal(h->argc, 3);
	assert_string_equal(h->argv[2], "arg with space");
	assert_int_equal(h->page_size, 4096);
	assert_int_equal(h->start_mono_ns, 1000000000ull);
	assert_int_equal(h->major, VMT_FORMAT_MAJOR);

	struct tg_store st;
	struct vmt_event want, got;
	uint64_t by_kind[VMT_EV__COUNT] = { 0 };
	for (uint64_t i = 0; i < n; i++) {
		tg_event(&seed, kind, &want, &st);
		int rc = vmt_reader_next(r, &got);
		if (rc != 1)
			fail_msg("event %llu: rc %d: %s", (unsigned long long)i, rc, vmt_reader_errmsg(r));
		if (!tg_event_equal(&want, &got))
			fail_msg("event %llu (kind %u) differs after the round trip",
				 (unsigned long long)i, want.kind);
		by_kind[want.kind]++;
	}
	assert_int_equal(vmt_reader_next(r, &got), 0);
	const struct vmt_footer *f = vmt_reader_footer(r);
	assert_non_null(f);
	assert_int_equal(f->events, n);
	for (uint32_t k = 0; k < VMT_EV__COUNT; k++)
		assert_int_equal(f->by_kind[k], by_kind[k]);
	vmt_reader_free(r);
}

/* The number appends (written in place, from the last digit back) print
 * what printf prints, at each digit count's edges and between. */
static void buf_numbers(int memo)
{
	struct vmt_buf b = { 0 };
	if (memo)
		assert_int_equal(vmt_buf_memoize(&b), 0);
	char want[96], *exp = NULL;
	size_t explen = 0;
	FILE *f = open_memstream(&exp, &explen);
	assert_non_null(f);
	uint64_t x = 0x9e3779b97f4a7c15ull, seen[97] = { 0 };
	for (int i = 0; i < 20000; i++) {
		uint64_t v;
		if (i < 64 * 3) { /* 2^k - 1, 2^k, 2^k + 1 */
			v = (1ull << (i / 3)) + (uint64_t)(i % 3) - 1;
		} else if (i < 64 * 3 + 20 * 3) { /* 10^k - 1, 10^k, 10^k + 1 */
			uint64_t p = 1;
			for (int k = 0; k < (i - 192) / 3; k++)
				p *= 10;
			v = p + (uint64_t)((i - 192) % 3) - 1;
		} else if (i < 4000) { /* times: the digits above the last 8 kept */
			v = 23851601321192ull + (uint64_t)i * 999983;
		} else {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			v = x >> (x % 64);
		}
		/* and a value of a few numbers back: the memo of recent
		 * numbers (buf.c) hits, or holds another in that slot */
		uint64_t again = seen[(unsigned)i % 97];
		seen[(unsigned)i % 97] = v;
		vmt_buf_u64(&b, v);
		vmt_buf_putc(&b, ' ');
		vmt_buf_i64(&b, (int64_t)v);
		vmt_buf_putc(&b, ' ');
		vmt_buf_hex(&b, v);
		vmt_buf_putc(&b, ' ');
		vmt_buf_u64(&b, again);
		vmt_buf_putc(&b, '\n');
		snprintf(want, sizeof(want), "%" PRIu64 " %" PRId64 " %#" PRIx64 " %" PRIu64 "\n", v,
			 (int64_t)v, v, again);
		fputs(want, f);
	}
	vmt_buf_u64(&b, UINT64_MAX);
	fputs("18446744073709551615", f);
	fclose(f);
	assert_false(b.oom);
	assert_int_equal(b.len, explen);
	assert_string_equal(b.data, exp);
	free(exp);
	vmt_buf_free(&b);
}

/* Numbers as printf makes them, with and without the buffer's memo. */
static void test_buf_numbers(void **state)
{
	(void)state;
	buf_numbers(0);
	buf_numbers(1);
}

/* Text rendered in place and closed as a JSON string is the string
 * vmt_buf_json_str makes of it: each byte that needs escaping (or a
 * look, as UTF-8), at each position of texts shorter and longer than
 * the eight bytes vmt_buf_json_close tests at once. */
static void test_buf_json_close(void **state)
{
	(void)state;
	static const unsigned char special[] = { '"', '\\', 0x01, 0x1f, 0x7f, 0x80, 0xc3, 0xff, 0x20, 0x7e };
	char text[40];
	for (size_t k = 0; k < sizeof(special); k++)
		for (size_t len = 1; len < sizeof(text) - 1; len += 3)
			for (size_t at = 0; at < len; at++) {
				memset(text, 'a', len);
				text[len] = '\0';
				text[at] = (char)special[k];
				if (special[k] == 0xc3 && at + 1 < len)
					text[at + 1] = (char)0xa9; /* U+00E9 */
				struct vmt_buf got = { 0 }, want = { 0 };
				VMT_BUF_LIT(&got, "{");
				VMT_BUF_LIT(&want, "{");
				size_t from = got.len;
				vmt_buf_putc(&got, '"');
				vmt_buf_puts(&got, text);
				vmt_buf_json_close(&got, from);
				vmt_buf_json_str(&want, text);
				assert_string_equal(got.data, want.data);
				vmt_buf_free(&got);
				vmt_buf_free(&want);
			}
}

static void test_roundtrip_each_kind(void **state)
{
	for (uint32_t k = 1; k < VMT_EV__COUNT; k++) {
		int fd = write_trace(1000 + k, k, 3000, 4096, 1);
		check_trace(fd, 1000 + k, k, 3000);
		close(fd);
	}
}

static void test_roundtrip_million(void **state)
{
	const uint64_t n = 1000000;
	int fd = write_trace(42, 0, n, 0, 1);
	check_trace(fd, 42, 0, n);
	close(fd);
}

static void test_empty_trace(void **state)
{
	int fd = write_trace(1, 0, 0, 0, 1);
	uint64_t n;
	char msg[320];
	assert_int_equal(tg_count_events(fd, &n, msg, sizeof(msg)), 0);
	assert_int_equal(n, 0);
	close(fd);
}

/* Cut a multi-chunk trace at every byte: every event of every complete
 * chunk comes back, then a clean "truncated" error. */
static void cut_everywhere(const uint8_t *buf, size_t len)
{
	/* Chunk boundaries from the complete trace's footer. */
	int fd = tg_memfd_with(buf, len);
	int err;
	char msg[320];
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r)
		fail_msg("open: %s", msg);
	struct vmt_event ev;
	while (vmt_reader_next(r, &ev) == 1)
		;
	const struct vmt_footer *f = vmt_reader_footer(r);
	assert_non_null(f);
	assert_true(f->nchunks >= 3);
	uint32_t nch = f->nchunks;
	uint64_t *end = calloc(nch, sizeof(*end)), *upto = calloc(nch, sizeof(*upto));
	for (uint32_t i = 0; i < nch; i++) {
		end[i] = i + 1 < nch ? f->chunks[i + 1].offset : 0;
		upto[i] = f->chunks[i].first_event + f->chunks[i].events;
	}
	vmt_reader_free(r);
	close(fd);
	/* the last chunk ends where the footer starts: the footer is the
	 * last frame, its size is in the last 4 bytes */
	uint32_t footer_len = (uint32_t)buf[len - 4] | (uint32_t)buf[len - 3] << 8 |
			      (uint32_t)buf[len - 2] << 16 | (uint32_t)buf[len - 1] << 24;
	end[nch - 1] = len - footer_len;

	for (size_t cut = 0; cut < len; cut++) {
		int cfd = tg_memfd_with(buf, cut);
		uint64_t n;
		int rc = tg_count_events(cfd, &n, msg, sizeof(msg));
		close(cfd);
		uint64_t want = 0;
		for (uint32_t i = 0; i < nch; i++)
			if (end[i] <= cut)
				want = upto[i];
		if (cut < 8) {
			if (rc != VMT_E_MAGIC)
				fail_msg("cut %zu: rc %d (%s)", cut, rc, msg);
			continue;
		}
		if (rc != VMT_E_TRUNC || n != want)
			fail_msg("cut at %zu: rc %d, %llu events (want truncated, %llu): %s", cut, rc,
				 (unsigned long long)n, (unsigned long long)want, msg);
		if (!strstr(msg, "truncated at byte"))
			fail_msg("cut at %zu: message lacks offset: %s", cut, msg);
	}
	free(end);
	free(upto);
}

static void test_cut_every_offset(void **state)
{
	int fd = write_trace(7, 0, 400, 1024, 1);
	size_t len;
	uint8_t *buf = tg_slurp(fd, &len);
	close(fd);
	cut_everywhere(buf, len);
	free(buf);
}

static void test_cut_golden(void **state)
{
	/* (1.0, 1.2 with its COUNTERS and the waits of a call, 1.3 with the
	 * flags of faults, 1.4 with the recorder's own faults) */
	static const char *const paths[] = { "tests/data/every-kind.zst",
					     "tests/data/every-kind-1.2.zst",
					     "tests/data/every-kind-1.3.zst",
					     "tests/data/every-kind-1.4.zst" };
	for (int i = 0; i < 4; i++) {
		int fd = open(paths[i], O_RDONLY);
		if (fd < 0) {
			fail_msg("cannot open %s (run from the source root): %s", paths[i],
				 strerror(errno));
		}
		size_t len;
		uint8_t *buf = tg_slurp(fd, &len);
		close(fd);
		cut_everywhere(buf, len);
		free(buf);
	}
}

/* Random corruption: the reader returns events or a clean error, never
 * crashes, hangs or over-allocates (run under ASan in CI). */
static void test_byte_flips(void **state)
{
	int fd = write_trace(9, 0, 600, 2048, 1);
	size_t len;
	uint8_t *orig = tg_slurp(fd, &len);
	close(fd);
	uint8_t *buf = malloc(len);
	uint64_t rng = 12345;
	size_t first_chunk = 8 + ((size_t)orig[4] | (size_t)orig[5] << 8);
	unsigned errors = 0, clean = 0;
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(buf, orig, len);
		int flips = 1 + (int)(tg_rand(&rng) % 4);
		for (int i = 0; i < flips; i++) {
			size_t at = tg_rand(&rng) % len;
			/* half the flips go into the first chunk descriptor */
			if (iter % 2)
				at = first_chunk + tg_rand(&rng) % 40;
			buf[at] ^= (uint8_t)(1u << (tg_rand(&rng) % 8));
		}
		int cfd = tg_memfd_with(buf, len);
		uint64_t n;
		char msg[320] = "";
		int rc = tg_count_events(cfd, &n, msg, sizeof(msg));
		close(cfd);
		if (rc < 0) {
			errors++;
			assert_true(strstr(msg, " at byte ") != NULL);
		} else {
			clean++;
		}
	}
	/* zstd checksums catch nearly every flip in compressed data */
	assert_true(errors > 2500);
	print_message("byte flips: %u clean errors, %u still valid\n", errors, clean);
	free(buf);
	free(orig);
}

static int open_bytes(const uint8_t *b, size_t n, char *msg, size_t msglen)
{
	int fd = tg_memfd_with(b, n), err = 0;
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, msglen);
	if (r) {
		struct vmt_event ev;
		while ((err = vmt_reader_next(r, &ev)) == 1)
			;
		if (err < 0)
			snprintf(msg, msglen, "%s", vmt_reader_errmsg(r));
	}
	vmt_reader_free(r);
	close(fd);
	return err;
}

static void test_bad_headers(void **state)
{
	char msg[320];
	assert_int_equal(open_bytes((const uint8_t *)"", 0, msg, sizeof(msg)), VMT_E_MAGIC);
	assert_non_null(strstr(msg, "empty"));
	assert_int_equal(open_bytes((const uint8_t *)"hello world\n", 12, msg, sizeof(msg)), VMT_E_MAGIC);
	assert_non_null(strstr(msg, "at byte 0"));

	/* a plain zstd file */
	uint8_t z[64];
	size_t zn = ZSTD_compress(z, sizeof(z), "abc", 3, 1);
	assert_int_equal(open_bytes(z, zn, msg, sizeof(msg)), VMT_E_MAGIC);
	assert_non_null(strstr(msg, "plain zstd"));

	int fd = write_trace(3, 0, 50, 0, 1);
	size_t len;
	uint8_t *buf = tg_slurp(fd, &len);
	close(fd);

	/* newer major version */
	uint8_t *b = malloc(len);
	memcpy(b, buf, len);
	b[12] = 2;
	assert_int_equal(open_bytes(b, len, msg, sizeof(msg)), VMT_E_VERSION);
	assert_non_null(strstr(msg, "trace format 2."));

	/* absurd header length */
	memcpy(b, buf, len);
	b[7] = 0x7f;
	int rc = open_bytes(b, len, msg, sizeof(msg));
	assert_true(rc == VMT_E_LIMIT || rc == VMT_E_TRUNC);

	/* absurd chunk sizes: find the chunk descriptor after the header */
	uint32_t hsize = (uint32_t)buf[4] | (uint32_t)buf[5] << 8 | (uint32_t)buf[6] << 16;
	size_t d = 8 + hsize;
	assert_int_equal(buf[d], 0x5B);
	memcpy(b, buf, len);
	b[d + 8 + 7] = 0x7f; /* raw size ~2 GiB */
	rc = open_bytes(b, len, msg, sizeof(msg));
	assert_true(rc == VMT_E_LIMIT || rc == VMT_E_CORRUPT);
	memcpy(b, buf, len);
	b[d + 8 + 11] = 0x7f; /* compressed size ~2 GiB */
	rc = open_bytes(b, len, msg, sizeof(msg));
	assert_true(rc == VMT_E_CORRUPT || rc == VMT_E_TRUNC);
	memcpy(b, buf, len);
	b[d + 8 + 15] = 0x7f; /* event count */
	assert_int_equal(open_bytes(b, len, msg, sizeof(msg)), VMT_E_CORRUPT);

	/* data after the footer */
	uint8_t *longer = malloc(len + 1);
	memcpy(longer, buf, len);
	longer[len] = 0;
	assert_int_equal(open_bytes(longer, len + 1, msg, sizeof(msg)), VMT_E_CORRUPT);
	assert_non_null(strstr(msg, "after the footer"));
	free(longer);
	free(b);
	free(buf);
}

/* Events must not sit in memory longer than flush_ms. */
static void test_time_flush(void **state)
{
	struct vmt_header h;
	struct vmt_writer_opts o = { 0, 50, 0 };
	int fd = tg_memfd("t"), err;
	tg_header(&h);
	vmt_writer *w = vmt_writer_create(fd, &h, &o, &err);
	assert_non_null(w);
	uint64_t seed = 5;
	struct tg_store st;
	struct vmt_event ev;
	tg_event(&seed, VMT_EV_SYSCALL, &ev, &st);
	assert_int_equal(vmt_writer_append(w, &ev), 0);
	uint64_t n;
	char msg[320];
	assert_int_equal(tg_count_events(fd, &n, msg, sizeof(msg)), VMT_E_TRUNC);
	assert_int_equal(n, 0);
	assert_int_equal(vmt_writer_tick(w), 0); /* too early: nothing */
	assert_int_equal(tg_count_events(fd, &n, msg, sizeof(msg)), VMT_E_TRUNC);
	assert_int_equal(n, 0);
	struct timespec ts = { 0, 80 * 1000000 };
	nanosleep(&ts, NULL);
	assert_int_equal(vmt_writer_tick(w), 0);
	assert_int_equal(tg_count_events(fd, &n, msg, sizeof(msg)), VMT_E_TRUNC);
	assert_int_equal(n, 1);
	assert_non_null(strstr(msg, "without a footer"));
	vmt_writer_free(w);
	close(fd);
}

/* A writer killed with SIGKILL leaves every complete chunk readable. */
static void test_kill9_writer(void **state)
{
	char path[] = "/tmp/vmt-kill9-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vmt_header h;
		struct vmt_writer_opts o = { 8192, 20, 0 };
		int err;
		tg_header(&h);
		vmt_writer *w = vmt_writer_create(fd, &h, &o, &err);
		uint64_t seed = 77;
		struct tg_store st;
		struct vmt_event ev;
		for (;;) {
			tg_event(&seed, 0, &ev, &st);
			if (vmt_writer_append(w, &ev))
				_exit(1);
			if (tg_rand(&seed) % 64 == 0)
				usleep(1000);
		}
	}
	struct timespec ts = { 0, 300 * 1000000 };
	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFSIGNALED(status));
	char msg[320];
	int err;
	lseek(fd, 0, SEEK_SET);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r)
		fail_msg("open: %s", msg);
	uint64_t seed = 77, n = 0;
	struct tg_store st;
	struct vmt_event want, got;
	int rc;
	while ((rc = vmt_reader_next(r, &got)) == 1) {
		tg_event(&seed, 0, &want, &st);
		(void)tg_rand(&seed); /* the child's sleep draw */
		assert_true(tg_event_equal(&want, &got));
		n++;
	}
	assert_int_equal(rc, VMT_E_TRUNC);
	assert_true(n > 100);
	print_message("killed writer left %llu readable events\n", (unsigned long long)n);
	vmt_reader_free(r);
	close(fd);
}

/* Invalid events are refused by the writer. */
static void test_writer_validates(void **state)
{
	struct vmt_header h;
	int fd = tg_memfd("v"), err;
	tg_header(&h);
	vmt_writer *w = vmt_writer_create(fd, &h, NULL, &err);
	struct vmt_event ev = { 0 };
	ev.kind = VMT_EV_SYSCALL;
	ev.u.sc.op = 999;
	assert_int_equal(vmt_writer_append(w, &ev), -EINVAL);
	ev.kind = 77;
	assert_int_equal(vmt_writer_append(w, &ev), -EINVAL);
	ev.kind = VMT_EV_TOUCH;
	struct vmt_touch_run run = { 3, VMT_PAGE_WRITTEN };
	ev.u.touch = (struct vmt_touch){ 0x1000, 4, 0, 1, &run };
	assert_int_equal(vmt_writer_append(w, &ev), -EINVAL); /* 3 != 4 */
	ev.u.touch.npages = 3;
	assert_int_equal(vmt_writer_append(w, &ev), 0);
	ev.u.touch.start = 0x1001;
	assert_int_equal(vmt_writer_append(w, &ev), -EINVAL);
	ev.kind = VMT_EV_SYSCALL;
	ev.u.sc = (struct vmt_syscall){ VMT_OP_MUNMAP, 2, { 0x1000, 4096 }, 0, 5, VMT_NONE, 0, 0, 0, 0, 0 };
	ev.ts_ns = 10;
	assert_int_equal(vmt_writer_append(w, &ev), -EINVAL); /* exit before entry */
	assert_int_equal(vmt_writer_finish(w), 0);
	assert_int_equal(vmt_writer_append(w, &ev), VMT_E_STATE);
	vmt_writer_free(w);
	vmt_writer_free(NULL);
	vmt_reader_free(NULL);
	close(fd);
}

/* A newer minor version may add kinds: an old reader skips them. */
static void test_newer_minor_skips_unknown(void **state)
{
	/* Build a chunk by hand: an unknown kind 200 (with a payload byte an
	 * old reader cannot know), then a lost event; then the time section
	 * with one time delta per record. */
	static const uint8_t raw[] = {
		12,			     /* record section length */
		0xc8, 0x01, 3, 0, 0, 0x55,   /* kind 200, len 3: thread, proc, ? */
		VMT_EV_LOST, 4, 0, 0, 9, 1,  /* lost: count 9, faults */
		0, 0,			     /* time section */
	};
	size_t n = sizeof(raw);
	uint8_t comp[256];
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	size_t cn = ZSTD_compress2(cc, comp, sizeof(comp), raw, n);
	ZSTD_freeCCtx(cc);
	assert_false(ZSTD_isError(cn));

	int fd = write_trace(1, 0, 0, 0, 0); /* header only */
	size_t hlen;
	uint8_t *hdr = tg_slurp(fd, &hlen);
	close(fd);
	uint8_t file[1024];
	memcpy(file, hdr, hlen);
	free(hdr);
	size_t at = hlen;
	uint8_t d[40] = { 0x5B, 0x2A, 0x4D, 0x18, 32, 0, 0, 0, 'V', 'M', 'T', 'C' };
	d[12] = (uint8_t)n;
	d[16] = (uint8_t)cn;
	d[20] = 2; /* two events */
	memcpy(file + at, d, 40);
	at += 40;
	memcpy(file + at, comp, cn);
	at += cn;

	char msg[320];
	/* as this reader's minor: an unknown kind is corruption */
	file[8 + 6] = VMT_FORMAT_MINOR;
	assert_int_equal(open_bytes(file, at, msg, sizeof(msg)), VMT_E_CORRUPT);
	assert_non_null(strstr(msg, "unknown event kind"));
	/* as a newer minor: skipped; the lost event is read, then truncated */
	file[8 + 6] = VMT_FORMAT_MINOR + 1;
	int mfd = tg_memfd_with(file, at), err;
	vmt_reader *r = vmt_reader_open_fd(mfd, &err, msg, sizeof(msg));
	assert_non_null(r);
	struct vmt_event ev;
	assert_int_equal(vmt_reader_next(r, &ev), 1);
	assert_int_equal(ev.kind, VMT_EV_LOST);
	assert_int_equal(ev.u.lost.count, 9);
	assert_int_equal(vmt_reader_next(r, &ev), VMT_E_TRUNC);
	vmt_reader_free(r);
	close(mfd);
}

static vmt_reader *header_reader;

/* A header read back: backend and touch source as written (1.1), or, in a
 * 1.0 trace, derived from the recorder and the options. */
static struct vmt_header header_back(const char *recorder, const char *options,
				     const char *backend, const char *touch, int minor)
{
	struct vmt_header h;
	int fd = tg_memfd("hdr"), err = 0;
	tg_header(&h);
	h.recorder = recorder;
	h.options = options;
	h.backend = backend;
	h.touch = touch;
	vmt_writer *w = vmt_writer_create(fd, &h, NULL, &err);
	assert_non_null(w);
	assert_int_equal(vmt_writer_finish(w), 0);
	vmt_writer_free(w);
	size_t len;
	uint8_t *buf = tg_slurp(fd, &len);
	close(fd);
	buf[8 + 6] = (uint8_t)minor;
	int mfd = tg_memfd_with(buf, len);
	free(buf);
	char msg[320];
	vmt_reader_free(header_reader); /* (its strings live until then) */
	header_reader = vmt_reader_open_fd(mfd, &err, msg, sizeof(msg));
	assert_non_null(header_reader);
	close(mfd);
	return *vmt_reader_header(header_reader);
}

static void test_backend_and_touch(void **state)
{
	struct vmt_header h = header_back("vmrec 0.1", "backend=stream touch=faults", "stream",
					  "faults", VMT_FORMAT_MINOR);
	assert_int_equal(h.minor, VMT_FORMAT_MINOR);
	assert_string_equal(h.backend, "stream");
	assert_string_equal(h.touch, "faults");
	/* 1.0, by vmrec: ptrace was its only backend. */
	h = header_back("vmrec 0.1", "touch=resident stacks=32", NULL, NULL, 0);
	assert_string_equal(h.backend, "ptrace");
	assert_string_equal(h.touch, "resident");
	h = header_back("vmrec 0.1", "stacks=8 touch=none", NULL, NULL, 0);
	assert_string_equal(h.touch, "none");
	/* Another writer, or options without a touch word: unknown. */
	h = header_back("mkgolden", "touch=residentx", NULL, NULL, 0);
	assert_string_equal(h.backend, "");
	assert_string_equal(h.touch, "");
	vmt_reader_free(header_reader);
	header_reader = NULL;
	/* The golden 1.0 trace of tests/data. */
	int fd = open("tests/data/every-kind.zst", O_RDONLY), err;
	char msg[320];
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	assert_non_null(r);
	assert_int_equal(vmt_reader_header(r)->minor, 0);
	assert_string_equal(vmt_reader_header(r)->touch, "resident");
	vmt_reader_free(r);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_numbers),
		cmocka_unit_test(test_buf_json_close),
		cmocka_unit_test(test_roundtrip_each_kind),
		cmocka_unit_test(test_roundtrip_million),
		cmocka_unit_test(test_empty_trace),
		cmocka_unit_test(test_cut_every_offset),
		cmocka_unit_test(test_cut_golden),
		cmocka_unit_test(test_byte_flips),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_time_flush),
		cmocka_unit_test(test_kill9_writer),
		cmocka_unit_test(test_writer_validates),
		cmocka_unit_test(test_newer_minor_skips_unknown),
		cmocka_unit_test(test_backend_and_touch),
	};
	return cmocka_run_group_tests_name("format", tests, NULL, NULL);
}
