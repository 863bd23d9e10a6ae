/*
 * test_rewrite.c - the rewrite rules on small synthetic traces: each trace
 * is written with vmt_writer, rewritten file to file with
 * vmt_rewrite_trace(), read back with vmt_reader and compared line by line
 * with the expected stream (the text `vmtrace dump` shows, without the
 * time column; calls flagged VMT_SC_REWRITTEN render with " (rewritten)").  The cases
 * where a rule must not apply get their own traces.  The streaming API is
 * tested in test_rewrite_stream.c.
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
#include "tgen.h"
#include "vmtrace.h"

#define PAGE 4096ull
#define NONE (uint64_t)LX_PROT_NONE
#define RW (uint64_t)(LX_PROT_READ | LX_PROT_WRITE)
#define RO (uint64_t)LX_PROT_READ
#define PRIV_ANON (uint64_t)(LX_MAP_PRIVATE | LX_MAP_ANONYMOUS)
#define PRIV_ANON_FIXED (PRIV_ANON | LX_MAP_FIXED)
#define SHARED_ANON (uint64_t)(LX_MAP_SHARED | LX_MAP_ANONYMOUS)
#define FD_NONE ((uint64_t)-1)
#define DONTNEED (uint64_t)LX_MADV_DONTNEED
#define FREE (uint64_t)LX_MADV_FREE
#define R1 0x100000ull
#define R2 0x200000ull

/* ---- trace builder ------------------------------------------------------ */

struct tb {
	vmt_writer *w;
	int fd;
	uint64_t now;
	struct vmt_header h;
};

static void put(struct tb *b, uint32_t proc, uint32_t thread, struct vmt_event *ev)
{
	ev->proc = proc;
	ev->thread = thread;
	ev->ts_ns = b->now += 1000;
	if (ev->kind == VMT_EV_SYSCALL) {
		ev->u.sc.exit_ns = ev->ts_ns + 500;
		ev->u.sc.stack_id = VMT_NONE;
	}
	assert_int_equal(vmt_writer_append(b->w, ev), 0);
}

/* Process 0 with threads 0, 1 and 2. */
static void tb_open(struct tb *b)
{
	int err;
	memset(b, 0, sizeof(*b));
	tg_header(&b->h);
	b->fd = tg_memfd("rewrite-in");
	b->w = vmt_writer_create(b->fd, &b->h, NULL, &err);
	assert_non_null(b->w);
	b->now = b->h.start_mono_ns;
	struct vmt_event ev = { .kind = VMT_EV_PROCESS_START };
	ev.u.process_start = (struct vmt_process_start){ VMT_NONE, 1000, VMT_PROC_ROOT };
	put(b, 0, 0, &ev);
	for (uint32_t t = 0; t < 3; t++) {
		ev = (struct vmt_event){ .kind = VMT_EV_THREAD_START };
		ev.u.thread_start = (struct vmt_thread_start){ t ? 0 : VMT_NONE, 1000 + (int)t };
		put(b, 0, t, &ev);
	}
}

static void scp(struct tb *b, uint32_t proc, uint32_t thread, uint32_t op, int64_t result,
		uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct vmt_event ev = { .kind = VMT_EV_SYSCALL };
	ev.u.sc.op = op;
	ev.u.sc.nargs = vmt_op_info(op)->nargs;
	uint64_t a[6] = { a0, a1, a2, a3, a4, a5 };
	memcpy(ev.u.sc.args, a, ev.u.sc.nargs * sizeof(uint64_t));
	ev.u.sc.result = result;
	put(b, proc, thread, &ev);
}

static void sc(struct tb *b, uint32_t thread, uint32_t op, int64_t result, uint64_t a0, uint64_t a1,
	       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	scp(b, 0, thread, op, result, a0, a1, a2, a3, a4, a5);
}

#define MMAP(b, t, res, addr, len, prot, fl) \
	sc(b, t, VMT_OP_MMAP, (int64_t)(res), addr, len, prot, fl, FD_NONE, 0)
#define MPROTECT(b, t, addr, len, prot) sc(b, t, VMT_OP_MPROTECT, 0, addr, len, prot, 0, 0, 0)
#define MUNMAP(b, t, addr, len) sc(b, t, VMT_OP_MUNMAP, 0, addr, len, 0, 0, 0, 0)
#define MADVISE(b, t, res, addr, len, adv) sc(b, t, VMT_OP_MADVISE, res, addr, len, adv, 0, 0, 0)
/* glibc's free: mmap(a, len, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED, -1, 0) */
#define FREE_RANGE(b, t, addr, len) MMAP(b, t, addr, addr, len, NONE, PRIV_ANON_FIXED)

static void touchp(struct tb *b, uint32_t proc, uint32_t thread, uint64_t start, uint64_t npages,
		   uint32_t state, uint32_t reason)
{
	struct vmt_touch_run run = { npages, state };
	struct vmt_event ev = { .kind = VMT_EV_TOUCH };
	ev.u.touch = (struct vmt_touch){ start, npages, reason, 1, &run };
	put(b, proc, thread, &ev);
}

static void touch(struct tb *b, uint32_t thread, uint64_t start, uint64_t npages)
{
	touchp(b, 0, thread, start, npages, VMT_PAGE_WRITTEN, VMT_TOUCH_BEFORE_OP);
}

static void fault(struct tb *b, uint32_t thread, uint64_t addr)
{
	struct vmt_event ev = { .kind = VMT_EV_FAULT };
	ev.u.fault = (struct vmt_fault){ addr, 0x401000, VMT_FAULT_WRITE };
	put(b, 0, thread, &ev);
}

static void map_file(struct tb *b, uint32_t thread, const char *path)
{
	struct vmt_event ev = { .kind = VMT_EV_MAP_FILE };
	ev.u.file = (struct vmt_map_file){ path, 0x801, 42, 1 << 20, 0, 0100644 };
	put(b, 0, thread, &ev);
}

static void proc_exit(struct tb *b, uint32_t proc)
{
	struct vmt_event ev = { .kind = VMT_EV_PROCESS_EXIT };
	ev.u.process_exit.status = 0;
	put(b, proc, 0, &ev);
}

/* ---- running the rules -------------------------------------------------- */

struct result {
	char *text;
	uint64_t applied[8];
	uint32_t nrules;
	uint64_t events_in, events_out;
};

/* The events of the trace in fd as text lines; the preamble of tb_open
 * (process and thread starts) is left out. */
static char *render_all(int fd)
{
	struct vmt_buf out = { 0 }, line = { 0 };
	char msg[256];
	int err;
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	assert_non_null(r);
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		if (ev.kind == VMT_EV_PROCESS_START || ev.kind == VMT_EV_THREAD_START)
			continue;
		vmt_buf_reset(&line);
		vmt_render_text(&line, &ev);
		if (ev.proc)
			vmt_buf_printf(&out, "p%u ", ev.proc);
		vmt_buf_printf(&out, "t%u %s\n", ev.thread, line.data);
	}
	assert_int_equal(rc, 0);
	vmt_reader_free(r);
	vmt_buf_free(&line);
	if (!out.data)
		vmt_buf_puts(&out, "");
	return out.data;
}

/* Finish b's trace and rewrite it with `rules`. */
static struct result run(struct tb *b, const char *rules)
{
	struct result res = { 0 };
	char err[256];
	assert_int_equal(vmt_writer_finish(b->w), 0);
	vmt_writer_free(b->w);
	vmt_rewrite *rw = vmt_rewrite_new(rules, err, sizeof(err));
	assert_non_null(rw);
	int out = tg_memfd("rewrite-out");
	assert_int_equal(lseek(b->fd, 0, SEEK_SET), 0);
	int rc = vmt_rewrite_trace(rw, b->fd, out, err, sizeof(err));
	if (rc)
		fail_msg("vmt_rewrite_trace: %d %s", rc, err);
	const struct vmt_rewrite_counts *c = vmt_rewrite_counts(rw);
	res.nrules = c->nrules;
	for (uint32_t i = 0; i < c->nrules && i < 8; i++)
		res.applied[i] = c->rules[i].applied;
	res.events_in = c->events_in;
	res.events_out = c->events_out;
	res.text = render_all(out);
	/* The header says what was done to the trace. */
	int e;
	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(out, &e, NULL, 0);
	assert_non_null(r);
	char want[300];
	snprintf(want, sizeof(want), "touch=resident rewrite=%s", vmt_rewrite_list(rw));
	assert_string_equal(vmt_reader_header(r)->options, want);
	vmt_reader_free(r);
	vmt_rewrite_free(rw);
	close(out);
	close(b->fd);
	return res;
}

static void expect_text(const char *got, const char *want)
{
	if (strcmp(got, want))
		fail_msg("rewritten stream differs.\n--- expected:\n%s--- got:\n%s", want, got);
}

/* The trace rewritten by `rules` must be exactly `want`, the rule applied
 * `applied` times. */
static void check(struct tb *b, const char *rules, const char *want, uint64_t applied)
{
	struct result r = run(b, rules);
	expect_text(r.text, want);
	assert_int_equal(r.applied[0], applied);
	free(r.text);
}

/* ---- prot-none-free ----------------------------------------------------- */

/* tb_open, then thread 1 reserves `len` bytes at R1 (PROT_NONE) and
 * enables the first `enable` of them (mprotect PROT_READ|PROT_WRITE). */
static void pnf_open(struct tb *b, uint64_t len, uint64_t enable)
{
	tb_open(b);
	MMAP(b, 1, R1, 0, len, NONE, PRIV_ANON);
	MPROTECT(b, 1, R1, enable, RW);
}

/* The stream's lines for thread 1's reservation of len bytes at R1 and
 * its enable of the first `enable` of them (what pnf_open writes); len
 * and enable in decimal. */
#define PNF_HEAD(len, enable)                                                               \
	"t1 mmap(NULL, " #len ", PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n" \
	"t1 mprotect(0x100000, " #enable ", PROT_READ|PROT_WRITE) = 0\n"

/* A one-page reservation and two cycles of touch / free, the page
 * enabled again between them, then munmap. */
static void pnf_two_cycles(struct tb *b)
{
	pnf_open(b, PAGE, PAGE);
	touch(b, 1, R1, 1);
	FREE_RANGE(b, 1, R1, PAGE);
	MPROTECT(b, 1, R1, PAGE, RW);
	touch(b, 1, R1, 1);
	FREE_RANGE(b, 1, R1, PAGE);
	MUNMAP(b, 1, R1, PAGE);
}

/* Two cycles of enable / touch / free: the first enable stays, each free
 * becomes madvise, the second enable goes. */
static void test_pnf_basic(void **state)
{
	struct tb b;
	pnf_two_cycles(&b);
	struct result r = run(&b, NULL); /* NULL: the default rule */
	expect_text(r.text,
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
	struct tb b;
	tb_open(&b);
	MMAP(&b, 1, R1, 0, 4 * PAGE, NONE, PRIV_ANON);
	MMAP(&b, 2, R2, 0, 4 * PAGE, NONE, PRIV_ANON);
	MPROTECT(&b, 1, R1, 4 * PAGE, RW);
	MPROTECT(&b, 2, R2, 4 * PAGE, RW);
	for (int i = 0; i < 2; i++) {
		touch(&b, 1, R1, 4);
		FREE_RANGE(&b, 1, R1, 4 * PAGE);
		touch(&b, 2, R2, 4);
		FREE_RANGE(&b, 2, R2, 4 * PAGE);
		MPROTECT(&b, 1, R1, 4 * PAGE, RW);
		MPROTECT(&b, 2, R2, 4 * PAGE, RW);
	}
	touch(&b, 2, R2, 4);
	FREE_RANGE(&b, 2, R2, 4 * PAGE);
	touch(&b, 1, R1, 4);
	FREE_RANGE(&b, 1, R1, 4 * PAGE);
	MUNMAP(&b, 1, R1, 4 * PAGE);
	MUNMAP(&b, 2, R2, 4 * PAGE);
	check(&b, "prot-none-free",
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
	struct tb b;
	pnf_open(&b, 2 * PAGE, 2 * PAGE);
	MPROTECT(&b, 1, R1, 2 * PAGE, RO);
	FREE_RANGE(&b, 1, R1, 2 * PAGE);
	MPROTECT(&b, 1, R1, 2 * PAGE, RW);
	MUNMAP(&b, 1, R1, 2 * PAGE);
	check(&b, "prot-none-free",
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
	struct tb b;
	pnf_open(&b, 2 * PAGE, 2 * PAGE);
	FREE_RANGE(&b, 1, R1, 2 * PAGE);
	MPROTECT(&b, 1, R1, 2 * PAGE, RO);
	MPROTECT(&b, 1, R1, 2 * PAGE, RW);
	MUNMAP(&b, 1, R1, 2 * PAGE);
	check(&b, "prot-none-free",
	      PNF_HEAD(8192, 8192)
	      "t1 mmap(0x100000, 8192, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ) = 0\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 8192) = 0\n",
	      0);
}

/* Partial overlap: a free of part of the RW range, and a free of more
 * than it.  Either would leave a different protection somewhere. */
static void test_pnf_not_partial(void **state)
{
	struct tb b;
	pnf_open(&b, 4 * PAGE, 2 * PAGE);
	FREE_RANGE(&b, 1, R1, PAGE);
	MPROTECT(&b, 1, R1, PAGE, RW);
	MPROTECT(&b, 1, R1, 2 * PAGE, RW);
	FREE_RANGE(&b, 1, R1, 3 * PAGE);
	MPROTECT(&b, 1, R1, 2 * PAGE, RW);
	MUNMAP(&b, 1, R1, 4 * PAGE);
	check(&b, "prot-none-free",
	      PNF_HEAD(16384, 8192)
	      "t1 mmap(0x100000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 4096, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 mmap(0x100000, 12288, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t1 munmap(0x100000, 16384) = 0\n",
	      0);
}

/* The MAP_FIXED maps a file over the range: not a free. */
static void test_pnf_not_file(void **state)
{
	struct tb b;
	pnf_open(&b, PAGE, PAGE);
	map_file(&b, 1, "/data/f");
	sc(&b, 1, VMT_OP_MMAP, (int64_t)R1, R1, PAGE, NONE, 0x12 /* PRIVATE|FIXED */, 3, 0);
	MPROTECT(&b, 1, R1, PAGE, RW);
	MUNMAP(&b, 1, R1, PAGE);
	check(&b, "prot-none-free",
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
	struct tb b;
	tb_open(&b);
	MMAP(&b, 1, R1, 0, PAGE, NONE, PRIV_ANON);
	MMAP(&b, 2, R2, 0, PAGE, NONE, PRIV_ANON);
	MPROTECT(&b, 1, R1, PAGE, RW);
	MPROTECT(&b, 2, R2, PAGE, RW);
	touch(&b, 1, R1, 1);
	FREE_RANGE(&b, 1, R1, PAGE);
	touch(&b, 2, R2, 1);
	FREE_RANGE(&b, 2, R2, PAGE);
	proc_exit(&b, 0);
	check(&b, "prot-none-free",
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
	FREE_RANGE(&b, 1, R1, PAGE);
	check(&b, "prot-none-free",
	      PNF_HEAD(4096, 4096)
	      "t1 mmap(0x100000, 4096, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n",
	      0);
}

/* Enabled again by another thread: dropping that mprotect would lose the
 * order between the two threads; a munmap of only part of the freed
 * range leaves the rest PROT_NONE. */
static void test_pnf_not_other_thread_or_partial_unmap(void **state)
{
	struct tb b;
	pnf_open(&b, 2 * PAGE, 2 * PAGE);
	FREE_RANGE(&b, 1, R1, 2 * PAGE);
	MPROTECT(&b, 2, R1, 2 * PAGE, RW);
	FREE_RANGE(&b, 2, R1, 2 * PAGE);
	MUNMAP(&b, 2, R1, PAGE);
	check(&b, "prot-none-free",
	      PNF_HEAD(8192, 8192)
	      "t1 mmap(0x100000, 8192, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t2 mprotect(0x100000, 8192, PROT_READ|PROT_WRITE) = 0\n"
	      "t2 mmap(0x100000, 8192, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t2 munmap(0x100000, 4096) = 0\n",
	      0);
}

/* Checks the model makes: a locked range (mlockall(MCL_FUTURE) locks the
 * reservation; madvise(MADV_DONTNEED) fails on locked memory), and a
 * range touched while PROT_NONE (the rule does not understand it). */
static void test_pnf_not_locked_or_touched(void **state)
{
	struct tb b;
	tb_open(&b);
	sc(&b, 0, VMT_OP_MLOCKALL, 0, 3 /* MCL_CURRENT|MCL_FUTURE */, 0, 0, 0, 0, 0);
	MMAP(&b, 1, R1, 0, PAGE, NONE, PRIV_ANON);
	MPROTECT(&b, 1, R1, PAGE, RW);
	FREE_RANGE(&b, 1, R1, PAGE);
	MPROTECT(&b, 1, R1, PAGE, RW);
	MUNMAP(&b, 1, R1, PAGE);
	sc(&b, 0, VMT_OP_MUNLOCKALL, 0, 0, 0, 0, 0, 0, 0);
	MMAP(&b, 2, R2, 0, PAGE, NONE, PRIV_ANON);
	MPROTECT(&b, 2, R2, PAGE, RW);
	FREE_RANGE(&b, 2, R2, PAGE);
	touchp(&b, 0, 0, R2, 1, VMT_PAGE_PRESENT, VMT_TOUCH_SNAPSHOT);
	MPROTECT(&b, 2, R2, PAGE, RW);
	MUNMAP(&b, 2, R2, PAGE);
	check(&b, "prot-none-free",
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
	struct tb b;
	tb_open(&b);
	struct vmt_event ev = { .kind = VMT_EV_PROCESS_START };
	ev.u.process_start = (struct vmt_process_start){ 0, 2000, VMT_PROC_FORK };
	put(&b, 1, 3, &ev);
	MMAP(&b, 1, R1, 0, PAGE, NONE, PRIV_ANON);
	MPROTECT(&b, 1, R1, PAGE, RW);
	FREE_RANGE(&b, 1, R1, PAGE);
	map_file(&b, 2, "/lib/a-rather-long-library-name.so");
	sc(&b, 2, VMT_OP_MMAP, 0x300000, 0, PAGE, RO, 0x2 /* PRIVATE */, 3, 0);
	touch(&b, 2, 0x300000, 1);
	MPROTECT(&b, 1, R1, PAGE, RW);
	/* Process 1 at the same address: its own story. */
	scp(&b, 1, 3, VMT_OP_MPROTECT, 0, R1, PAGE, RW, 0, 0, 0);
	FREE_RANGE(&b, 1, R1, PAGE);
	scp(&b, 1, 3, VMT_OP_MPROTECT, 0, R1, PAGE, RW, 0, 0, 0);
	MUNMAP(&b, 1, R1, PAGE);
	check(&b, "prot-none-free",
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

static void madv_trace(struct tb *b, uint64_t adv)
{
	tb_open(b);
	MMAP(b, 1, R1, 0, 4 * PAGE, RW, PRIV_ANON);
	MADVISE(b, 1, 0, R1, 4 * PAGE, adv);	    /* private anonymous: yes */
	MADVISE(b, 1, -EINVAL, R1 + 1, PAGE, adv); /* failed: no */
	MMAP(b, 1, R2, 0, PAGE, RW, SHARED_ANON);
	MADVISE(b, 1, 0, R2, PAGE, adv); /* shared: no */
	map_file(b, 1, "/data/f");
	sc(b, 1, VMT_OP_MMAP, 0x300000, 0, PAGE, RW, 0x2, 3, 0);
	MADVISE(b, 1, 0, 0x300000, PAGE, adv); /* file: no */
	MADVISE(b, 1, 0, R1, 8 * PAGE, adv);   /* past the mapping: no */
	MADVISE(b, 1, 0, R1 + PAGE, PAGE, adv); /* part of it: yes */
}

static void test_dontneed_to_free(void **state)
{
	struct tb b;
	madv_trace(&b, DONTNEED);
	check(&b, "dontneed-to-free",
	      "t1 mmap(NULL, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 madvise(0x100000, 16384, MADV_FREE) = 0 (rewritten)\n"
	      "t1 madvise(0x100001, 4096, MADV_DONTNEED) = -1 EINVAL (Invalid argument)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t1 madvise(0x200000, 4096, MADV_DONTNEED) = 0\n"
	      "t1 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE, 3, 0) = 0x300000\n"
	      "t1 madvise(0x300000, 4096, MADV_DONTNEED) = 0\n"
	      "t1 madvise(0x100000, 32768, MADV_DONTNEED) = 0\n"
	      "t1 madvise(0x101000, 4096, MADV_FREE) = 0 (rewritten)\n",
	      2);
}

static void test_free_to_dontneed(void **state)
{
	struct tb b;
	madv_trace(&b, FREE);
	check(&b, "free-to-dontneed",
	      "t1 mmap(NULL, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 madvise(0x100000, 16384, MADV_DONTNEED) = 0 (rewritten)\n"
	      "t1 madvise(0x100001, 4096, MADV_FREE) = -1 EINVAL (Invalid argument)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) = 0x200000\n"
	      "t1 madvise(0x200000, 4096, MADV_FREE) = 0\n"
	      "t1 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE, 3, 0) = 0x300000\n"
	      "t1 madvise(0x300000, 4096, MADV_FREE) = 0\n"
	      "t1 madvise(0x100000, 32768, MADV_FREE) = 0\n"
	      "t1 madvise(0x101000, 4096, MADV_DONTNEED) = 0 (rewritten)\n",
	      2);
}

/* ---- mlock-onfault ------------------------------------------------------ */

static void test_mlock_onfault(void **state)
{
	struct tb b;
	tb_open(&b);
	MMAP(&b, 1, R1, 0, 4 * PAGE, RW, PRIV_ANON);
	sc(&b, 1, VMT_OP_MLOCK, 0, R1, PAGE, 0, 0, 0, 0);
	sc(&b, 1, VMT_OP_MLOCK, -ENOMEM, R1, 64 * PAGE, 0, 0, 0, 0); /* failed: stays */
	sc(&b, 1, VMT_OP_MLOCK2, 0, R1, PAGE, 0, 0, 0, 0);
	sc(&b, 1, VMT_OP_MLOCK2, 0, R1, PAGE, 1, 0, 0, 0); /* on fault already */
	sc(&b, 1, VMT_OP_MLOCKALL, 0, 1, 0, 0, 0, 0, 0);
	sc(&b, 1, VMT_OP_MLOCKALL, 0, 5, 0, 0, 0, 0, 0); /* on fault already */
	MMAP(&b, 2, R2, 0, 2 * PAGE, RW, PRIV_ANON | LX_MAP_LOCKED);
	map_file(&b, 2, "/data/f");
	sc(&b, 2, VMT_OP_MMAP, 0x300000, 0, PAGE, RO, 0x2 | LX_MAP_LOCKED, 3, 0);
	touch(&b, 2, 0x300000, 1);
	MUNMAP(&b, 2, 0x300000, PAGE);
	check(&b, "mlock-onfault",
	      "t1 mmap(NULL, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x100000\n"
	      "t1 mlock2(0x100000, 4096, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t1 mlock(0x100000, 262144) = -1 ENOMEM (Cannot allocate memory)\n"
	      "t1 mlock2(0x100000, 4096, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t1 mlock2(0x100000, 4096, MLOCK_ONFAULT) = 0\n"
	      "t1 mlockall(MCL_CURRENT|MCL_ONFAULT) = 0 (rewritten)\n"
	      "t1 mlockall(MCL_CURRENT|MCL_ONFAULT) = 0\n"
	      "t2 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x200000 (rewritten)\n"
	      "t2 mlock2(0x200000, 8192, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t2 map_file(\"/data/f\", dev=8:1, ino=42, size=1048576, flags=O_RDONLY)\n"
	      "t2 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3, 0) = 0x300000 (rewritten)\n"
	      "t2 mlock2(0x300000, 4096, MLOCK_ONFAULT) = 0 (rewritten)\n"
	      "t2 touch(0x300000, 1 page: 1 written, before op)\n"
	      "t2 munmap(0x300000, 4096) = 0\n",
	      5);
}

/* ---- populate ----------------------------------------------------------- */

static void test_populate(void **state)
{
	struct tb b;
	tb_open(&b);
	/* all 3 pages touched before the munmap: yes */
	MMAP(&b, 1, R1, 0, 3 * PAGE, RW, PRIV_ANON);
	touch(&b, 1, R1, 3);
	MUNMAP(&b, 1, R1, 3 * PAGE);
	/* 2 of 3: no */
	MMAP(&b, 1, R1, 0, 3 * PAGE, RW, PRIV_ANON);
	touch(&b, 1, R1, 2);
	MUNMAP(&b, 1, R1, 3 * PAGE);
	/* faults of every page, interleaved with another thread: yes */
	MMAP(&b, 1, R2, 0, 2 * PAGE, RW, PRIV_ANON);
	fault(&b, 1, R2 + 10);
	MMAP(&b, 2, 0x400000, 0, PAGE, RW, SHARED_ANON); /* shared: no */
	fault(&b, 1, R2 + PAGE + 20);
	MUNMAP(&b, 1, R2, 2 * PAGE);
	/* the madvise ends the watch before the second page is seen: no */
	MMAP(&b, 1, R1, 0, 2 * PAGE, RW, PRIV_ANON);
	touch(&b, 1, R1, 1);
	MADVISE(&b, 1, 0, R1, PAGE, DONTNEED);
	touch(&b, 1, R1, 2);
	MUNMAP(&b, 1, R1, 2 * PAGE);
	/* PROT_NONE and MAP_NORESERVE are never populated */
	MMAP(&b, 1, R2, 0, PAGE, NONE, PRIV_ANON);
	MMAP(&b, 1, 0x500000, 0, PAGE, RW, PRIV_ANON | LX_MAP_NORESERVE);
	touch(&b, 1, 0x500000, 1);
	MUNMAP(&b, 1, 0x500000, PAGE);
	/* touched entirely by exit: yes */
	MMAP(&b, 2, 0x600000, 0, PAGE, RW, PRIV_ANON);
	touchp(&b, 0, 0, 0x600000, 1, VMT_PAGE_READ, VMT_TOUCH_EXIT);
	proc_exit(&b, 0);
	check(&b, "populate",
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
	struct tb b;
	pnf_two_cycles(&b);
	struct result r = run(&b, "prot-none-free,dontneed-to-free");
	expect_text(r.text,
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pnf_basic),
		cmocka_unit_test(test_pnf_threads_multipage),
		cmocka_unit_test(test_pnf_not_prot_changed_before_free),
		cmocka_unit_test(test_pnf_not_prot_changed_after_free),
		cmocka_unit_test(test_pnf_not_partial),
		cmocka_unit_test(test_pnf_not_file),
		cmocka_unit_test(test_pnf_not_never_reenabled),
		cmocka_unit_test(test_pnf_not_other_thread_or_partial_unmap),
		cmocka_unit_test(test_pnf_not_locked_or_touched),
		cmocka_unit_test(test_pnf_held_copies_and_procs),
		cmocka_unit_test(test_dontneed_to_free),
		cmocka_unit_test(test_free_to_dontneed),
		cmocka_unit_test(test_mlock_onfault),
		cmocka_unit_test(test_populate),
		cmocka_unit_test(test_compose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
