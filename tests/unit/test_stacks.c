/*
 * test_stacks.c - call stacks of a traced child, their interning and their
 * symbolization (record/stacks.c, symbolize.c, elfsym.c).
 *
 * The child is a fork of this test program, so the addresses of its
 * functions are ours: the symbolized offsets are checked exactly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ehframe.h"
#include "elfsym.h"
#include "stacks.h"
#include "tgen.h"

/* ---- the traced child ---------------------------------------------------- */
__attribute__((noinline)) int vmr_test_marker_function(int site)
{
	raise(SIGSTOP);
	__asm__ volatile("" ::: "memory");
	return site + 1;
}

__attribute__((noinline)) int vmr_test_recurse(int n)
{
	volatile int keep = n; /* read after the call: no tail recursion */
	int r = n == 0 ? vmr_test_marker_function(3) : vmr_test_recurse(n - 1);
	return r + keep;
}

#define RECURSE 40
#define REPEAT 50

__attribute__((noinline, noreturn)) static void vmr_test_child(void)
{
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
		_exit(3);
	raise(SIGSTOP); /* stop 0: the parent takes over */
	for (int i = 0; i < REPEAT; i++)
		vmr_test_marker_function(1); /* stops 1..REPEAT: one call site */
	vmr_test_marker_function(2);	     /* another call site */
	vmr_test_recurse(RECURSE);	     /* a deep stack */
	_exit(0);
}

/* After an exec of this program with "vmr-exec-child": a new image, new
 * (randomized) addresses. */
__attribute__((noinline)) static int vmr_test_after_exec(void)
{
	raise(SIGSTOP);
	__asm__ volatile("" ::: "memory");
	return 0;
}

__attribute__((noinline, noreturn)) static void vmr_test_exec_child(void)
{
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
		_exit(3);
	raise(SIGSTOP);
	vmr_test_marker_function(4);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		_exit(4);
	exe[n] = '\0';
	execl(exe, exe, "vmr-exec-child", (char *)NULL);
	_exit(5);
}

/* ---- reading the trace back ---------------------------------------------- */
struct rstack {
	uint32_t depth;
	uint64_t ips[VMT_MAX_STACK_DEPTH];
};
struct rsym {
	uint64_t ip, offset;
	uint32_t module, function;
};
struct rtrace {
	struct rstack *stacks;
	uint32_t nstacks;
	char **strings;
	uint32_t nstrings;
	struct rsym *syms;
	uint32_t nsyms;
};

static void read_trace(int fd, struct rtrace *t)
{
	int err;
	char msg[256] = "";
	memset(t, 0, sizeof(*t));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r)
		fail_msg("reader: %s", msg);
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		switch (ev.kind) {
		case VMT_EV_STACK:
			assert_int_equal(ev.u.stack.id, t->nstacks);
			t->stacks = realloc(t->stacks, (t->nstacks + 1) * sizeof(*t->stacks));
			t->stacks[t->nstacks].depth = ev.u.stack.depth;
			memcpy(t->stacks[t->nstacks].ips, ev.u.stack.ips,
			       ev.u.stack.depth * sizeof(uint64_t));
			t->nstacks++;
			break;
		case VMT_EV_STRING:
			assert_int_equal(ev.u.string.id, t->nstrings);
			for (uint32_t i = 0; i < t->nstrings; i++)
				assert_string_not_equal(t->strings[i], ev.u.string.str);
			t->strings = realloc(t->strings, (t->nstrings + 1) * sizeof(char *));
			t->strings[t->nstrings++] = strdup(ev.u.string.str);
			break;
		case VMT_EV_SYMBOL:
			/* every string it names came before it */
			assert_true(ev.u.symbol.module == VMT_NONE ||
				    ev.u.symbol.module < t->nstrings);
			assert_true(ev.u.symbol.function == VMT_NONE ||
				    ev.u.symbol.function < t->nstrings);
			for (uint32_t i = 0; i < t->nsyms; i++)
				assert_true(t->syms[i].ip != ev.u.symbol.ip);
			t->syms = realloc(t->syms, (t->nsyms + 1) * sizeof(*t->syms));
			t->syms[t->nsyms++] = (struct rsym){ ev.u.symbol.ip,
				ev.u.symbol.offset, ev.u.symbol.module,
				ev.u.symbol.function };
			break;
		}
	}
	if (rc != 0)
		fail_msg("reader: %s", vmt_reader_errmsg(r));
	vmt_reader_free(r);
}

static void free_trace(struct rtrace *t)
{
	for (uint32_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t->stacks);
	free(t->syms);
}

static const struct rsym *sym_of(const struct rtrace *t, uint64_t ip)
{
	for (uint32_t i = 0; i < t->nsyms; i++)
		if (t->syms[i].ip == ip)
			return &t->syms[i];
	return NULL;
}

static const char *fn_of(const struct rtrace *t, uint64_t ip)
{
	const struct rsym *s = sym_of(t, ip);
	return s && s->function != VMT_NONE ? t->strings[s->function] : NULL;
}

/* Index of the first frame of stack id named fn at or after `from`, or -1. */
static int frame_named(const struct rtrace *t, uint32_t id, const char *fn,
		       int from)
{
	for (uint32_t i = (uint32_t)from; i < t->stacks[id].depth; i++) {
		const char *f = fn_of(t, t->stacks[id].ips[i]);
		if (f && !strcmp(f, fn))
			return (int)i;
	}
	return -1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- tests ---------------------------------------------------------------- */
static void test_capture_intern_symbolize(void **state)
{
	int err, fd, fd8;
	struct vmr_stacks *s = vmr_stacks_new(128, &err);
	struct vmr_stacks *s8 = vmr_stacks_new(8, &err);
	assert_non_null(s);
	assert_non_null(s8);
	vmt_writer *w = tg_memfd_writer("stacks", &fd);
	vmt_writer *w8 = tg_memfd_writer("stacks", &fd8);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		vmr_test_child();
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL);

	uint32_t ids[REPEAT + 3], id8 = VMT_NONE;
	uint64_t took[REPEAT + 3];
	for (int k = 1; k <= REPEAT + 2; k++) {
		assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
		if (k == 3) /* as after an exec: caches go, ids stay */
			vmr_stacks_invalidate(s, pid);
		uint64_t t0 = now_ns();
		assert_int_equal(vmr_stacks_capture(s, w, pid, 1, 0, t0, &ids[k]), 0);
		took[k] = now_ns() - t0;
		assert_int_not_equal(ids[k], VMT_NONE);
		if (k == REPEAT + 2)
			assert_int_equal(vmr_stacks_capture(s8, w8, pid, 1, 0, t0, &id8), 0);
	}
	assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	vmr_stacks_task_gone(s, pid);
	vmr_stacks_task_gone(s8, pid);

	/* Interning: one call site, one id; other sites, other ids. */
	for (int k = 2; k <= REPEAT; k++)
		assert_int_equal(ids[k], ids[1]);
	assert_int_not_equal(ids[REPEAT + 1], ids[1]);
	assert_int_not_equal(ids[REPEAT + 2], ids[1]);
	assert_int_not_equal(ids[REPEAT + 2], ids[REPEAT + 1]);

	struct vmr_stacks_stats sst;
	vmr_stacks_get_stats(s, &sst);
	assert_int_equal(sst.stacks, 3);
	assert_int_equal(sst.captures, REPEAT + 2);
	assert_int_equal(sst.failed, 0);
	qsort(took + 2, REPEAT - 1, sizeof(uint64_t), cmp_u64);
	print_message("stacks: first capture %.1f us, same site again (median) "
		      "%.1f us, deep new stack %.1f us; %llu maps reads, %llu "
		      "memory reads\n", took[1] / 1e3, took[2 + REPEAT / 2] / 1e3,
		      took[REPEAT + 2] / 1e3, (unsigned long long)sst.maps_reads,
		      (unsigned long long)sst.mem_reads);

	uint64_t t0 = now_ns();
	assert_int_equal(vmr_stacks_finish(s, w, 123), 0);
	assert_int_equal(vmr_stacks_finish(s8, w8, 123), 0);
	print_message("stacks: symbolizing %llu ips in %llu modules took %.1f ms\n",
		      (unsigned long long)sst.ips, (unsigned long long)sst.modules,
		      (now_ns() - t0) / 1e6);
	assert_int_equal(vmt_writer_finish(w), 0);
	assert_int_equal(vmt_writer_finish(w8), 0);
	vmt_writer_free(w);
	vmt_writer_free(w8);
	vmr_stacks_free(s);
	vmr_stacks_free(s8);

	struct rtrace t, t8;
	read_trace(fd, &t);
	read_trace(fd8, &t8);
	assert_int_equal(t.nstacks, 3);
	assert_int_equal(t.nsyms, sst.ips);

	/* Every ip of every stack is symbolized. */
	for (uint32_t i = 0; i < t.nstacks; i++)
		for (uint32_t j = 0; j < t.stacks[i].depth; j++)
			assert_non_null(sym_of(&t, t.stacks[i].ips[j]));

	/* Stack of site 1: marker, called by the child body, ..., main. */
	uint32_t a = ids[1];
	int m = frame_named(&t, a, "vmr_test_marker_function", 0);
	assert_true(m >= 0);
	assert_true(m + 1 < (int)t.stacks[a].depth);
	assert_string_equal(fn_of(&t, t.stacks[a].ips[m + 1]), "vmr_test_child");
	assert_true(frame_named(&t, a, "main", m) > m);
	/* The child is our fork: offsets are exact. */
	const struct rsym *ms = sym_of(&t, t.stacks[a].ips[m]);
	assert_int_equal(ms->offset, t.stacks[a].ips[m] -
			 (uintptr_t)vmr_test_marker_function);
	assert_true(ms->offset > 0 && ms->offset < 256);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_not_equal(ms->module, VMT_NONE);
	assert_string_equal(t.strings[ms->module], exe);
	/* Frames above the marker are in libc (raise). */
	assert_true(m >= 1);
	const struct rsym *top = sym_of(&t, t.stacks[a].ips[0]);
	assert_int_not_equal(top->module, VMT_NONE);
	assert_non_null(strstr(t.strings[top->module], "libc"));

	/* The deep stack: all RECURSE + 1 levels, then the child and main. */
	uint32_t d = ids[REPEAT + 2];
	int r0 = frame_named(&t, d, "vmr_test_recurse", 0), count = 0;
	assert_true(r0 > frame_named(&t, d, "vmr_test_marker_function", 0));
	for (uint32_t i = 0; i < t.stacks[d].depth; i++) {
		const char *f = fn_of(&t, t.stacks[d].ips[i]);
		count += f && !strcmp(f, "vmr_test_recurse");
	}
	assert_int_equal(count, RECURSE + 1);
	assert_string_equal(fn_of(&t, t.stacks[d].ips[r0 + RECURSE + 1]),
			    "vmr_test_child");
	assert_true(frame_named(&t, d, "main", r0) > r0);

	/* The depth cap keeps the innermost frames. */
	assert_int_equal(id8, 0);
	assert_int_equal(t8.nstacks, 1);
	assert_int_equal(t8.stacks[0].depth, 8);
	assert_memory_equal(t8.stacks[0].ips, t.stacks[d].ips, 8 * sizeof(uint64_t));

	free_trace(&t);
	free_trace(&t8);
	close(fd);
	close(fd8);
}

/* exec replaces the image: after vmr_stacks_invalidate the new image's
 * stack is unwound and symbolized. */
static void test_exec_invalidate(void **state)
{
	int err, fd, st;
	struct vmr_stacks *s = vmr_stacks_new(64, &err);
	vmt_writer *w = tg_memfd_writer("stacks", &fd);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		vmr_test_exec_child();
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL);
	uint32_t before, after;
	assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid); /* in the marker */
	assert_int_equal(vmr_stacks_capture(s, w, pid, 0, 0, 1, &before), 0);
	assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid); /* SIGTRAP after exec */
	assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP);
	vmr_stacks_invalidate(s, pid);
	assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid); /* in vmr_test_after_exec */
	assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	assert_int_equal(vmr_stacks_capture(s, w, pid, 0, 0, 2, &after), 0);
	assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	vmr_stacks_task_gone(s, pid);
	assert_int_equal(before, 0);
	assert_int_equal(after, 1);
	assert_int_equal(vmr_stacks_finish(s, w, 3), 0);
	assert_int_equal(vmt_writer_finish(w), 0);
	vmt_writer_free(w);
	vmr_stacks_free(s);

	struct rtrace t;
	read_trace(fd, &t);
	assert_int_equal(t.nstacks, 2);
	assert_true(frame_named(&t, 0, "vmr_test_marker_function", 0) >= 0);
	assert_true(frame_named(&t, 0, "vmr_test_exec_child", 0) >= 0);
	int a = frame_named(&t, 1, "vmr_test_after_exec", 0);
	assert_true(a >= 0);
	assert_true(frame_named(&t, 1, "main", a) > a);
	assert_true(frame_named(&t, 1, "vmr_test_marker_function", 0) < 0);
	free_trace(&t);
	close(fd);
}

/* A task that is not traced (or gone) gives no stack, and no error. */
static void test_capture_failure_is_not_error(void **state)
{
	int err, fd;
	struct vmr_stacks *s = vmr_stacks_new(32, &err);
	vmt_writer *w = tg_memfd_writer("stacks", &fd);
	uint32_t id = 0;
	assert_int_equal(vmr_stacks_capture(s, w, getpid(), 0, 0, 1, &id), 0);
	assert_int_equal(id, VMT_NONE);
	assert_int_equal(vmr_stacks_capture(s, w, 0x3ffffff0, 0, 0, 1, &id), 0);
	assert_int_equal(id, VMT_NONE);
	vmr_stacks_task_gone(s, getpid());
	vmr_stacks_task_gone(s, 12345678); /* unknown: ignored */
	vmr_stacks_invalidate(s, 12345678);
	struct vmr_stacks_stats st;
	vmr_stacks_get_stats(s, &st);
	assert_int_equal(st.failed, 2);
	assert_int_equal(vmr_stacks_finish(s, w, 1), 0);
	assert_int_equal(vmt_writer_finish(w), 0);
	vmt_writer_free(w);
	vmr_stacks_free(s);
	vmr_stacks_free(NULL);
	close(fd);

	assert_null(vmr_stacks_new(0, &err));
	assert_int_equal(err, -EINVAL);
	assert_null(vmr_stacks_new(VMT_MAX_STACK_DEPTH + 1, &err));
	assert_int_equal(err, -EINVAL);
}

static unsigned char *slurp_path(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	unsigned char *p = tg_slurp(fd, len);
	close(fd);
	return p;
}

/* elfsym finds our own functions and survives truncated/corrupt files. */
static void test_elfsym_own_and_corrupt(void **state)
{
	struct elfsym e;
	int fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(elfsym_load_fd(&e, fd, NULL), 0);
	close(fd);
	assert_true(e.from_symtab);
	assert_true(e.nloads >= 1);
	const struct elfsym_fn *f = NULL;
	for (size_t i = 0; i < e.nfns; i++)
		if (!strcmp(e.fns[i].name, "vmr_test_recurse"))
			f = &e.fns[i];
	assert_non_null(f);
	assert_ptr_equal(elfsym_lookup(&e, f->addr), f);
	assert_ptr_equal(elfsym_lookup(&e, f->addr + f->size - 1), f);
	assert_true(elfsym_lookup(&e, f->addr + f->size) != f);
	assert_null(elfsym_lookup(&e, 0));
	elfsym_free(&e);
	elfsym_free(&e); /* twice is fine */

	size_t len;
	unsigned char *img = slurp_path("/proc/self/exe", &len);
	unsigned char *bad = malloc(len);
	uint64_t rng = 42;
	/* Truncations: an error or a smaller table, never a crash. */
	for (int i = 0; i < 200; i++) {
		size_t cut = (size_t)(tg_rand(&rng) % len);
		if (elfsym_load_mem(&e, img, cut) == 0)
			elfsym_free(&e);
	}
	/* Random damage in the headers and the tables they point to. */
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	for (int i = 0; i < 2000; i++) {
		memcpy(bad, img, len);
		for (int k = 0; k < 4; k++) {
			size_t at;
			switch (tg_rand(&rng) % 3) {
			case 0: at = tg_rand(&rng) % sizeof(Elf64_Ehdr); break;
			case 1: at = eh->e_shoff + tg_rand(&rng) %
				     ((size_t)eh->e_shnum * sizeof(Elf64_Shdr)); break;
			default: at = tg_rand(&rng) % len; break;
			}
			if (at < len)
				bad[at] = (unsigned char)tg_rand(&rng);
		}
		if (elfsym_load_mem(&e, bad, len) == 0) {
			for (int k = 0; k < 16; k++)
				(void)elfsym_lookup(&e, tg_rand(&rng));
			elfsym_free(&e);
		}
	}
	/* The same damage for the .eh_frame_hdr locator, through a file. */
	int mfd = tg_memfd("elf");
	struct ehf_module u;
	for (int i = 0; i < 300; i++) {
		memcpy(bad, img, len);
		for (int k = 0; k < 3; k++) {
			size_t at = tg_rand(&rng) % 4096;
			bad[at % len] = (unsigned char)tg_rand(&rng);
		}
		size_t cut = i % 3 ? len : (size_t)(tg_rand(&rng) % len);
		assert_int_equal(ftruncate(mfd, 0), 0);
		assert_int_equal(pwrite(mfd, bad, cut, 0), (ssize_t)cut);
		ehf_load(&u, mfd);
		uint64_t bias;
		(void)ehf_bias(&u, 0x400000, 0x1000, tg_rand(&rng) % len, &bias);
	}
	close(mfd);
	assert_int_equal(elfsym_load_mem(&e, "\177ELF", 4), -ENOEXEC);
	assert_int_equal(elfsym_load_mem(&e, "#!/bin/sh\n", 10), -ENOEXEC);
	free(bad);
	free(img);
}

/* Our own executable: its unwind table is found, and the load bias from
 * /proc/self/maps agrees with a function's address minus its symbol. */
static void test_ehframe_own(void **state)
{
	struct ehf_module u;
	int fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	ehf_load(&u, fd);
	struct elfsym e;
	assert_int_equal(elfsym_load_fd(&e, fd, NULL), 0);
	close(fd);
	assert_int_equal(u.state, EHF_OK);
	assert_true(u.fde_count > 10);
	uint64_t sym = 0;
	for (size_t i = 0; i < e.nfns; i++)
		if (!strcmp(e.fns[i].name, "vmr_test_recurse"))
			sym = e.fns[i].addr;
	elfsym_free(&e);
	assert_true(sym != 0);
	uint64_t ip = (uintptr_t)vmr_test_recurse;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off;
		if (sscanf(line, "%llx-%llx %*s %llx", &a, &b, &off) != 3 ||
		    ip < a || ip >= b)
			continue;
		uint64_t bias;
		assert_int_equal(ehf_bias(&u, a, off, ip - a + off, &bias), 0);
		assert_int_equal(bias + sym, ip);
		found = 1;
	}
	fclose(f);
	assert_true(found);
}

/* A stripped module gets its names from <root>/.build-id/xx/yyy.debug. */
static void test_elfsym_debug_file(void **state)
{
	char dir[] = "/tmp/vmr-stk-XXXXXX", cmd[16384], path[600];
	assert_non_null(mkdtemp(dir));
	struct elfsym e;
	int fd = open("/proc/self/exe", O_RDONLY);
	assert_int_equal(elfsym_load_fd(&e, fd, NULL), 0);
	close(fd);
	if (e.build_id_len == 0) {
		elfsym_free(&e);
		skip(); /* linked without --build-id */
	}
	int n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", dir, e.build_id[0]);
	for (unsigned i = 1; i < e.build_id_len; i++)
		n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x", e.build_id[i]);
	elfsym_free(&e);
	/* /proc/self/exe in a shell names the shell: use our real path. */
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	snprintf(cmd, sizeof(cmd),
		 "set -e; mkdir -p \"$(dirname '%s')\"; "
		 "objcopy --only-keep-debug '%s' '%s.debug'; "
		 "strip -o '%s/stripped' '%s'", path, exe, path, dir, exe);
	if (system(cmd) != 0) {
		print_message("skip: objcopy/strip failed (binutils missing?)\n");
		skip();
	}
	char stripped[700];
	snprintf(stripped, sizeof(stripped), "%s/stripped", dir);
	fd = open(stripped, O_RDONLY);
	assert_true(fd >= 0);
	/* Without the debug root: .dynsym only, no static functions. */
	assert_int_equal(elfsym_load_fd(&e, fd, NULL), 0);
	assert_false(e.from_symtab);
	for (size_t i = 0; i < e.nfns; i++)
		assert_string_not_equal(e.fns[i].name, "vmr_test_child");
	elfsym_free(&e);
	assert_int_equal(elfsym_load_fd(&e, fd, dir), 0);
	assert_true(e.from_symtab);
	int found = 0;
	for (size_t i = 0; i < e.nfns; i++)
		found += !strcmp(e.fns[i].name, "vmr_test_child");
	assert_int_equal(found, 1);
	elfsym_free(&e);
	close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "vmr-exec-child")) {
		volatile int r = vmr_test_after_exec(); /* not a tail call */
		_exit(r); /* (LeakSanitizer cannot run under ptrace) */
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_intern_symbolize),
		cmocka_unit_test(test_exec_invalidate),
		cmocka_unit_test(test_capture_failure_is_not_error),
		cmocka_unit_test(test_elfsym_own_and_corrupt),
		cmocka_unit_test(test_elfsym_debug_file),
		cmocka_unit_test(test_ehframe_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
