/*
 * test_faults.c - page-fault capture with perf_event_open (record/faults.c,
 * tpfind.c): a traced child touches fresh anonymous pages, first reading
 * then writing them, and the trace must hold exactly those faults, in
 * order, with the right addresses, access types, threads and times.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"
#include "tgen.h"
#include "tpfind.h"
#include "vmtutil.h"


static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the traced children -------------------------------------------------- */
enum { READ_THEN_WRITE = 0, READ_PHASES = 1 };

__attribute__((noinline)) void vmr_test_toucher(volatile char *p, size_t n,
						int write)
{
	for (size_t i = 0; i < n; i++) {
		if (write)
			p[i * PAGE] = 1;
		else
			(void)p[i * PAGE];
	}
}

/* Map npages*nphases fresh pages, publish the address, stop; then per
 * phase: touch npages (READ_THEN_WRITE: read all, then write all) and
 * stop. */
__attribute__((noreturn)) static void child(volatile uint64_t *addr_out,
					    size_t npages, int nphases, int mode)
{
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
		_exit(3);
	size_t len = npages * (size_t)nphases * PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(4);
	madvise(p, len, MADV_NOHUGEPAGE); /* one fault per page */
	*addr_out = (uint64_t)(uintptr_t)p;
	raise(SIGSTOP);
	for (int ph = 0; ph < nphases; ph++) {
		char *q = p + (size_t)ph * npages * PAGE;
		vmr_test_toucher(q, npages, 0);
		if (mode == READ_THEN_WRITE)
			vmr_test_toucher(q, npages, 1);
		raise(SIGSTOP);
	}
	_exit(0);
}

static volatile uint64_t *shared_words(void)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

static pid_t start_child(volatile uint64_t *slot, size_t npages, int nphases,
			 int mode)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(slot, npages, nphases, mode);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL);
	return pid;
}

/* Continue pid to its next stop (expect_exit: to its exit). */
static void run_to_stop(pid_t pid, int expect_exit)
{
	int st;
	assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (expect_exit)
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	else
		assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
}

/* ---- trace helpers ---------------------------------------------------------- */
struct evlist {
	struct vmt_event *ev;
	size_t n;
};

/* Finish w and read every event of fd back. */
static void read_back(vmt_writer *w, int fd, struct evlist *l)
{
	int err;
	char msg[256] = "";
	assert_int_equal(vmt_writer_finish(w), 0);
	vmt_writer_free(w);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r)
		fail_msg("reader: %s", msg);
	l->ev = NULL;
	l->n = 0;
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		l->ev = realloc(l->ev, (l->n + 1) * sizeof(ev));
		l->ev[l->n++] = ev; /* FAULT and LOST hold no pointers */
	}
	if (rc != 0)
		fail_msg("reader: %s", vmt_reader_errmsg(r));
	vmt_reader_free(r);
	close(fd);
}

/* Skip (with the reason) only when the kernel refuses perf events. */
static struct vmr_faults *open_or_skip(uint32_t source, uint32_t ring_pages)
{
	struct vmr_faults_opts o = { source, ring_pages };
	const char *why;
	int err;
	struct vmr_faults *f = vmr_faults_new_opts(&o, &err, &why);
	if (!f && (err == -EACCES || err == -EPERM || err == -ENOSYS ||
		   (source == VMR_FAULTS_TRACEPOINT && err == -ENOENT))) {
		print_message("skip: perf_event_open refused: %s\n",
			      vmt_strerror(err));
		skip();
	}
	if (!f)
		fail_msg("vmr_faults_new: %s", vmt_strerror(err));
	return f;
}

/* One capture: the fault source, the trace it is drained into (a memfd)
 * and a shared page where the children publish their pages' addresses. */
struct capture {
	struct vmr_faults *f;
	vmt_writer *w;
	int fd;
	volatile uint64_t *slot;
};

static void capture_open(struct capture *c, uint32_t source, uint32_t ring_pages)
{
	c->f = open_or_skip(source, ring_pages);
	c->w = tg_memfd_writer("faults", &c->fd);
	c->slot = shared_words();
}

/* Free the source, then read every event of the trace back. */
static void capture_read(struct capture *c, struct evlist *l)
{
	vmr_faults_free(c->f);
	read_back(c->w, c->fd, l);
}

/* Free what capture_read and capture_open left: the events, the page. */
static void capture_close(struct capture *c, struct evlist *l)
{
	free(l->ev);
	munmap((void *)c->slot, PAGE);
}

/* Touch n pages reading then writing; check the trace holds n read faults
 * then, where the kernel maps the zero page on a read, n write faults on
 * exactly those pages (access 0 without the tracepoint).  Without the zero
 * page the read allocates, and the writes take no fault. */
static void check_read_then_write(uint32_t source)
{
	const size_t n = 64;
	const int zp = vmt_host_zero_page();
	assert_true(zp >= 0);
	const size_t per_page = zp ? 2 : 1;
	struct capture c;
	capture_open(&c, source, 0);
	pid_t pid = start_child(c.slot, n, 1, READ_THEN_WRITE);
	uint64_t base = c.slot[0];

	uint64_t t0 = now_ns();
	assert_int_equal(vmr_faults_add_task(c.f, pid, 3, 1), 0);
	assert_int_equal(vmr_faults_add_task(c.f, pid, 3, 1), -EEXIST);
	run_to_stop(pid, 0);
	uint64_t t1 = now_ns();
	int got = vmr_faults_drain(c.f, c.w, UINT64_MAX);
	assert_true(got >= (int)(per_page * n));
	vmr_faults_remove_task(c.f, pid);
	run_to_stop(pid, 1);
	assert_int_equal(vmr_faults_drain(c.f, c.w, UINT64_MAX), 0);
	assert_int_equal(vmr_faults_lost(c.f), 0);

	struct evlist l;
	capture_read(&c, &l);
	assert_int_equal(l.n, (size_t)got);
	size_t k = 0;
	uint64_t prev = 0;
	for (size_t i = 0; i < l.n; i++) {
		const struct vmt_event *e = &l.ev[i];
		assert_int_equal(e->kind, VMT_EV_FAULT);
		assert_int_equal(e->thread, 3);
		assert_int_equal(e->proc, 1);
		assert_true(e->ts_ns >= prev && e->ts_ns >= t0 && e->ts_ns <= t1);
		prev = e->ts_ns;
		if (e->u.fault.addr < base || e->u.fault.addr >= base + n * PAGE)
			continue; /* the child's own stack, libc, ... */
		assert_true(k < per_page * n);
		uint64_t want = base + (k % n) * PAGE;
		assert_int_equal(e->u.fault.addr, want);
		if (source == VMR_FAULTS_SOFTWARE)
			assert_int_equal(e->u.fault.access, 0);
		else
			assert_int_equal(e->u.fault.access,
					 k < n ? VMT_FAULT_READ : VMT_FAULT_WRITE);
		/* The faulting instruction is in the toucher. */
		assert_true(e->u.fault.ip >= (uintptr_t)vmr_test_toucher &&
			    e->u.fault.ip < (uintptr_t)vmr_test_toucher + 512);
		k++;
	}
	assert_int_equal(k, per_page * n);
	capture_close(&c, &l);
}

static void test_tracepoint_read_then_write(void **state)
{
	check_read_then_write(VMR_FAULTS_TRACEPOINT);
}

static void test_software_read_then_write(void **state)
{
	check_read_then_write(VMR_FAULTS_SOFTWARE);
}

static void test_auto_prefers_tracepoint(void **state)
{
	const char *why = "x";
	int err;
	struct vmr_faults *f = vmr_faults_new(&err, &why);
	if (!f) {
		print_message("skip: perf_event_open refused: %s\n", vmt_strerror(err));
		skip();
	}
	struct tp_info tp;
	if (tp_find("exceptions", "page_fault_user", &tp) == 0)
		assert_null(why);
	else
		assert_non_null(strstr(why, "software page-fault event"));
	vmr_faults_free(f);
	vmr_faults_free(NULL);
}

/* Two tasks touching in turns: the drain merges them in time order, stops
 * at up_to_ns, and a removed task's samples still come out. */
static void test_merge_up_to_and_remove(void **state)
{
	const size_t n = 16;
	struct capture c;
	capture_open(&c, VMR_FAULTS_AUTO, 0);
	pid_t a = start_child(&c.slot[0], n, 2, READ_PHASES);
	pid_t b = start_child(&c.slot[1], n, 2, READ_PHASES);
	assert_int_equal(vmr_faults_add_task(c.f, a, 0, 0), 0);
	assert_int_equal(vmr_faults_add_task(c.f, b, 1, 1), 0);
	run_to_stop(a, 0); /* A phase 1 */
	run_to_stop(b, 0); /* B phase 1 */
	run_to_stop(a, 0); /* A phase 2 */
	uint64_t mid = now_ns();
	run_to_stop(b, 0); /* B phase 2 */
	vmr_faults_remove_task(c.f, b);
	int first = vmr_faults_drain(c.f, c.w, mid);
	int second = vmr_faults_drain(c.f, c.w, UINT64_MAX);
	assert_true(first >= (int)(3 * n));
	assert_true(second >= (int)n);
	run_to_stop(a, 1);
	run_to_stop(b, 1);

	struct evlist l;
	capture_read(&c, &l);
	assert_int_equal(l.n, (size_t)(first + second));
	/* The page order must be A1 B1 A2 | B2, and time never goes back. */
	size_t seen[4] = { 0 };
	int phase_of_prev = 0;
	for (size_t i = 0; i < l.n; i++) {
		const struct vmt_event *e = &l.ev[i];
		if (i)
			assert_true(e->ts_ns >= l.ev[i - 1].ts_ns);
		assert_true(i < (size_t)first ? e->ts_ns <= mid : e->ts_ns > mid);
		assert_int_equal(e->kind, VMT_EV_FAULT);
		int who = e->thread;
		assert_int_equal(e->proc, (uint32_t)who);
		uint64_t base = c.slot[who];
		if (e->u.fault.addr < base || e->u.fault.addr >= base + 2 * n * PAGE)
			continue;
		int ph = (int)((e->u.fault.addr - base) / (n * PAGE));
		int order = ph * 2 + who; /* A1=0 B1=1 A2=2 B2=3 */
		assert_true(order >= phase_of_prev);
		phase_of_prev = order;
		assert_int_equal(e->u.fault.addr,
				 base + (size_t)ph * n * PAGE + seen[order] * PAGE);
		seen[order]++;
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(seen[i], n);
	capture_close(&c, &l);
}

/* A ring too small for what happens between two drains loses samples: the
 * loss is counted, written as LOST events, and what remains is in order. */
static void test_lost_samples(void **state)
{
	const size_t n = 2000;
	struct capture c;
	capture_open(&c, VMR_FAULTS_AUTO, 1);
	pid_t pid = start_child(c.slot, n, 1, READ_PHASES);
	uint64_t base = c.slot[0];
	assert_int_equal(vmr_faults_add_task(c.f, pid, 0, 0), 0);
	run_to_stop(pid, 0);
	int got = vmr_faults_drain(c.f, c.w, UINT64_MAX);
	run_to_stop(pid, 1);
	got += vmr_faults_drain(c.f, c.w, UINT64_MAX);
	uint64_t lost = vmr_faults_lost(c.f);
	assert_true(lost > 0);

	struct evlist l;
	capture_read(&c, &l);
	assert_int_equal(l.n, (size_t)got);
	uint64_t lost_events = 0, in_range = 0, last = 0;
	for (size_t i = 0; i < l.n; i++) {
		const struct vmt_event *e = &l.ev[i];
		if (e->kind == VMT_EV_LOST) {
			assert_int_equal(e->u.lost.what, VMT_LOST_FAULTS);
			lost_events += e->u.lost.count;
			continue;
		}
		assert_int_equal(e->kind, VMT_EV_FAULT);
		if (e->u.fault.addr >= base && e->u.fault.addr < base + n * PAGE) {
			assert_true(e->u.fault.addr >= last); /* in order */
			last = e->u.fault.addr + 1;
			in_range++;
		}
	}
	assert_int_equal(lost_events, lost);
	assert_true(in_range + lost >= n);
	assert_true(in_range < n);
	print_message("faults: 1-page ring, %zu touches: %llu kept, %llu lost\n",
		      n, (unsigned long long)in_range, (unsigned long long)lost);
	capture_close(&c, &l);
}

static void test_add_errors(void **state)
{
	struct vmr_faults *f = open_or_skip(VMR_FAULTS_AUTO, 0);
	assert_int_equal(vmr_faults_add_task(f, 0x3ffffff0, 0, 0), -ESRCH);
	assert_int_equal(vmr_faults_add_task(f, 0, 0, 0), -EINVAL);
	vmr_faults_remove_task(f, 12345678); /* unknown: ignored */
	int fd;
	vmt_writer *w = tg_memfd_writer("faults", &fd);
	assert_int_equal(vmr_faults_drain(f, w, UINT64_MAX), 0);
	vmt_writer_free(w);
	close(fd);
	vmr_faults_free(f);
	struct vmr_faults_opts bad = { 0, 3 };
	const char *why;
	int err;
	assert_null(vmr_faults_new_opts(&bad, &err, &why));
	assert_int_equal(err, -EINVAL);
}

static void test_tp_parse_format(void **state)
{
	static const char fmt[] =
		"name: page_fault_user\nID: 190\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n"
		"\tfield:char comm[16];\toffset:16;\tsize:16;\tsigned:0;\n"
		"\tfield:unsigned long error_code;\toffset:32;\tsize:8;\tsigned:0;\n"
		"\nprint fmt: \"address=%ps\", REC->address\n";
	struct tp_info tp;
	assert_int_equal(tp_parse_format(fmt, &tp), 0);
	assert_int_equal(tp.nfields, 5);
	const struct tp_field *a = tp_field(&tp, "address");
	assert_non_null(a);
	assert_int_equal(a->offset, 8);
	assert_int_equal(a->size, 8);
	assert_int_equal(tp_field(&tp, "comm")->offset, 16);
	assert_int_equal(tp_field(&tp, "error_code")->offset, 32);
	assert_null(tp_field(&tp, "ip"));
	assert_int_equal(tp_parse_format("nothing here\n", &tp), -EINVAL);
	assert_int_equal(tp_parse_format("field:int x;\toffset:zz\n", &tp), -EINVAL);
	/* On this machine the tracepoint exists (or tracefs is refused). */
	int err = tp_find("exceptions", "page_fault_user", &tp);
	if (err == 0) {
		assert_true(tp.id > 0);
		assert_non_null(tp_field(&tp, "error_code"));
		assert_int_equal(tp_find("exceptions", "no_such_event_here", &tp),
				 -ENOENT);
	} else {
		print_message("note: tracepoint lookup: %s\n", vmt_strerror(err));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tp_parse_format),
		cmocka_unit_test(test_auto_prefers_tracepoint),
		cmocka_unit_test(test_tracepoint_read_then_write),
		cmocka_unit_test(test_software_read_then_write),
		cmocka_unit_test(test_merge_up_to_and_remove),
		cmocka_unit_test(test_lost_samples),
		cmocka_unit_test(test_add_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
