/*
 * test_stacks_copy.c - stacks unwound from a copy of the registers and of
 * the top of the stack, as the stream backend's kernel side makes them at
 * a call (record/stacks.c, stackunw.c).
 *
 * The oracle is a ptrace capture of the same stop of a child: the copy's
 * stack is the same stack (the same id), also once the child is gone; a
 * short copy gives a prefix of it; and the mappings the trace says the
 * process has, not /proc, say where the code is.  A copy that reads as one
 * unwound before is that one's stack without an unwind (the memo), and one
 * that differs where the unwind read is unwound.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record_int.h"
#include "stacks.h"
#include "tgen.h"

#define DEPTH 20

__attribute__((noinline)) int vmr_copy_marker(void)
{
	raise(SIGSTOP);
	__asm__ volatile("" ::: "memory");
	return 1;
}

__attribute__((noinline)) int vmr_copy_recurse(int n)
{
	volatile int keep = n; /* read after the call: no tail recursion */
	int r = n == 0 ? vmr_copy_marker() : vmr_copy_recurse(n - 1);
	return r + keep;
}

__attribute__((noinline, noreturn)) static void child(void)
{
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
		_exit(3);
	raise(SIGSTOP);
	vmr_copy_recurse(DEPTH);
	_exit(0);
}

/* The stacks a trace holds, by id. */
struct stk {
	uint32_t depth;
	uint64_t ips[128];
};

static struct stk *read_stacks(int fd, uint32_t *n)
{
	int err;
	char msg[256] = "";
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r)
		fail_msg("reader: %s", msg);
	struct stk *s = NULL;
	struct vmt_event ev;
	*n = 0;
	while (vmt_reader_next(r, &ev) == 1) {
		if (ev.kind != VMT_EV_STACK)
			continue;
		assert_int_equal(ev.u.stack.id, *n);
		assert_true(ev.u.stack.depth <= 128);
		s = realloc(s, (*n + 1) * sizeof(*s));
		s[*n].depth = ev.u.stack.depth;
		memcpy(s[*n].ips, ev.u.stack.ips, ev.u.stack.depth * sizeof(uint64_t));
		(*n)++;
	}
	vmt_reader_free(r);
	return s;
}

/* a is a strict prefix of b. */
static int strict_prefix(const struct stk *a, const struct stk *b)
{
	return a->depth < b->depth && !memcmp(a->ips, b->ips, a->depth * sizeof(uint64_t));
}


/* The registers and the stack of stopped task pid, as the kernel side
 * copies them: whole pages from sp's, up to `bytes` above sp. */
static void take_copy(pid_t pid, struct vmr_stack_copy *c, unsigned char *buf, size_t bytes)
{
	struct user_regs_struct r;
	assert_int_equal(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
	memset(c, 0, sizeof(*c));
	uint64_t *g = c->regs;
	g[VMR_REG_AX] = r.rax, g[VMR_REG_DX] = r.rdx, g[VMR_REG_CX] = r.rcx;
	g[VMR_REG_BX] = r.rbx, g[VMR_REG_SI] = r.rsi, g[VMR_REG_DI] = r.rdi;
	g[VMR_REG_BP] = r.rbp, g[VMR_REG_SP] = r.rsp, g[VMR_REG_R8] = r.r8;
	g[VMR_REG_R9] = r.r9, g[VMR_REG_R10] = r.r10, g[VMR_REG_R11] = r.r11;
	g[VMR_REG_R12] = r.r12, g[VMR_REG_R13] = r.r13, g[VMR_REG_R14] = r.r14;
	g[VMR_REG_R15] = r.r15, g[VMR_REG_IP] = r.rip;
	/* (from the page of the word below sp: the memo test changes one
	 * there, and sp can lie within 8 bytes of its page's start) */
	c->base = (r.rsp - 8) & ~4095ull;
	c->data = buf;
	for (c->size = 0; c->size < bytes + 4096; c->size += 4096) {
		struct iovec l = { buf + c->size, 4096 };
		struct iovec rm = { (void *)(uintptr_t)(c->base + c->size), 4096 };
		if (process_vm_readv(pid, &l, 1, &rm, 1, 0) != 4096)
			break;
	}
	assert_true(c->size >= 4096);
}

static void test_copy_is_the_ptrace_stack(void **state)
{
	int err, fd;
	struct vmr_stacks *s = vmr_stacks_new(128, &err);
	assert_non_null(s);
	vmt_writer *w = tg_memfd_writer("copy", &fd);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child();
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL);
	assert_int_equal(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);

	/* The oracle (trace process 0), and the copy of the same stop
	 * (process 1, its mappings as of now). */
	uint32_t want, id, id_short, id_gone, id_hole, id_unmapped, id_back, id_moved,
		id_forked, id_unknown;
	assert_int_equal(vmr_stacks_capture(s, w, pid, 0, 0, 1, &want), 0);
	assert_int_not_equal(want, VMT_NONE);
	/* (its frames, now: a trace of its own) */
	int ofd;
	uint32_t oid, nst;
	struct vmr_stacks *o = vmr_stacks_new(128, &err);
	vmt_writer *ow = tg_memfd_writer("oracle", &ofd);
	assert_int_equal(vmr_stacks_capture(o, ow, pid, 0, 0, 1, &oid), 0);
	assert_int_equal(oid, 0);
	assert_int_equal(vmt_writer_finish(ow), 0);
	vmt_writer_free(ow);
	vmr_stacks_free(o);
	struct stk *oracle = read_stacks(ofd, &nst);
	close(ofd);
	assert_int_equal(nst, 1);
	static unsigned char buf[16384 + 4096];
	struct vmr_stack_copy c;
	/* (16 KiB: a sanitized build's frames are several times larger) */
	take_copy(pid, &c, buf, 16384);
	struct vmr_maps m = { 0 };
	assert_int_equal(vmr_maps_read(&m, pid), 0);
	vmr_stacks_copy_maps(s, 1, pid, m.e, m.n);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 2, &c, &id), 0);
	assert_int_equal(id, want);

	/* The memo: the same copy again is the same stack without an unwind;
	 * so is one that differs only in a word no unwind reads (below sp);
	 * one whose return address differs is unwound (and another stack). */
	struct vmr_stacks_stats sst;
	uint32_t id_again, id_below, id_ret, id_holed;
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 2, &c, &id_again), 0);
	vmr_stacks_get_stats(s, &sst);
	assert_int_equal(id_again, want);
	assert_int_equal(sst.memo_hits, 1);
	assert_int_equal(sst.cut, 0);
	uint64_t sp = c.regs[VMR_REG_SP], word;
	assert_true(sp - c.base >= 8);
	memcpy(&word, buf, 8);
	buf[0] ^= 0x55;
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 2, &c, &id_below), 0);
	memcpy(buf, &word, 8);
	vmr_stacks_get_stats(s, &sst);
	assert_int_equal(id_below, want);
	assert_int_equal(sst.memo_hits, 2);
	size_t ret = 0; /* the slot of the innermost frame's return address */
	for (size_t at = (sp - c.base + 7) & ~7ull; at + 8 <= c.size && !ret; at += 8) {
		memcpy(&word, buf + at, 8);
		if (word == oracle->ips[1])
			ret = at;
	}
	assert_true(ret != 0);
	uint64_t bad = 0x10;
	memcpy(buf + ret, &bad, 8);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 2, &c, &id_ret), 0);
	memcpy(buf + ret, &word, 8);
	vmr_stacks_get_stats(s, &sst);
	assert_int_equal(sst.memo_hits, 2);
	assert_int_not_equal(id_ret, want);

	/* The page holding that return address could not be read (a hole in
	 * the copy): its zeros are not read as words, so the stack is not
	 * the whole one, and the memo of the whole copy does not answer. */
	struct vmr_stack_copy holed = c;
	holed.holes = 1ull << (ret / 4096);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 2, &holed, &id_holed), 0);
	vmr_stacks_get_stats(s, &sst);
	assert_int_equal(sst.memo_hits, 2);
	assert_int_not_equal(id_holed, want);

	/* One page of stack: a prefix, never wrong frames. */
	struct vmr_stack_copy shortc = c;
	/* (to the end of the page of the innermost frame's return address:
	 * sp can lie at the end of its page, and that address on the next) */
	shortc.size = (ret & ~(size_t)4095) + 4096;
	vmr_stacks_get_stats(s, &sst);
	uint64_t cut = sst.cut;
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 3, &shortc, &id_short), 0);
	/* (and said to be cut where the copy ended, as the whole one is not) */
	vmr_stacks_get_stats(s, &sst);
	assert_int_equal(sst.cut, cut + 1);

	/* The child gone: the copy and the trace's mappings are enough. */
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	vmr_stacks_task_gone(s, pid);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 4, &c, &id_gone), 0);
	assert_int_equal(id_gone, want);

	/* Our own executable's text, where most frames are. */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;
	const struct vmt_map_entry *text = NULL;
	for (uint32_t i = 0; i < m.n; i++)
		if ((m.e[i].perms & VMT_PROT_X) && !strcmp(m.e[i].path, exe))
			text = &m.e[i];
	assert_non_null(text);
	struct vmt_map_file f = { .path = text->path, .dev = text->dev, .ino = text->ino };

	/* A hole in some code where no frame is, below one that is: the
	 * mapping becomes two, the part above keeps its file offset, the
	 * stack is whole.  Mapped back after. */
	uint64_t hole = 0;
	const struct vmt_map_entry *in = NULL;
	for (uint32_t j = 0; j < m.n && !hole; j++) {
		const struct vmt_map_entry *e = &m.e[j];
		if (!(e->perms & VMT_PROT_X) || e->path[0] != '/')
			continue;
		for (uint64_t pg = e->start; pg + 4096 < e->end && !hole; pg += 4096) {
			int used = 0, above = 0;
			for (uint32_t i = 0; i < oracle->depth; i++) {
				used |= oracle->ips[i] >= pg && oracle->ips[i] < pg + 4096;
				above |= oracle->ips[i] >= pg + 4096 && oracle->ips[i] < e->end;
			}
			if (!used && above && pg > e->start) {
				hole = pg;
				in = e;
			}
		}
	}
	assert_true(hole != 0);
	struct vmt_map_file hf = { .path = in->path, .dev = in->dev, .ino = in->ino };
	vmr_stacks_copy_unmap(s, 1, hole, hole + 4096);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 5, &c, &id_hole), 0);
	assert_int_equal(id_hole, want);
	vmr_stacks_copy_map(s, 1, hole, hole + 4096, in->offset + (hole - in->start), 1, &hf);

	/* The text unmapped: the stack ends in it (also in a build with frame
	 * pointers, where libunwind would guess on); mapped back, whole. */
	vmr_stacks_copy_unmap(s, 1, text->start, text->end);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 6, &c, &id_unmapped), 0);
	vmr_stacks_copy_map(s, 1, text->start, text->end, text->offset, 1, &f);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 7, &c, &id_back), 0);
	assert_int_equal(id_back, want);

	/* A fork keeps its parent's mappings; then the parent's text moves
	 * away (mremap), and only the child's stack is whole. */
	vmr_stacks_copy_fork(s, 1, 2, pid);
	uint64_t len = text->end - text->start;
	vmr_stacks_copy_move(s, 1, text->start, len, text->start + (1ull << 40), len);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 1, 1, 8, &c, &id_moved), 0);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 2, 2, 9, &c, &id_forked), 0);
	assert_int_equal(id_forked, want);

	/* A process with no mappings known, and none in /proc: the innermost
	 * frame only. */
	vmr_stacks_copy_gone(s, 2);
	assert_int_equal(vmr_stacks_capture_copy(s, w, pid, 2, 2, 10, &c, &id_unknown), 0);

	vmr_stacks_get_stats(s, &sst);
	uint64_t shallow = sst.shallow;
	assert_int_equal(vmr_stacks_finish(s, w, 11), 0);
	assert_int_equal(vmt_writer_finish(w), 0);
	vmt_writer_free(w);
	vmr_stacks_free(s);
	vmr_maps_free(&m);

	struct stk *k = read_stacks(fd, &nst);
	close(fd);
	assert_int_equal(k[want].depth, oracle->depth);
	assert_memory_equal(k[want].ips, oracle->ips, oracle->depth * sizeof(uint64_t));
	free(oracle);
	assert_true(k[want].depth > DEPTH);
	assert_true(strict_prefix(&k[id_short], &k[want]));
	assert_true(strict_prefix(&k[id_unmapped], &k[want]));
	assert_true(strict_prefix(&k[id_moved], &k[want]));
	assert_int_equal(id_moved, id_unmapped);
	assert_int_equal(k[id_unknown].depth, 1);
	assert_int_equal(k[id_unknown].ips[0], k[want].ips[0]);
	/* (the copy of the unknown ip, and the holed one if its hole is in
	 * sp's page) */
	assert_true(strict_prefix(&k[id_holed], &k[want]));
	assert_int_equal(shallow, 1 + (k[id_holed].depth == 1));
	print_message("copy: %u frames; one page of stack: %u; text unmapped: %u\n",
		      k[want].depth, k[id_short].depth, k[id_unmapped].depth);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_is_the_ptrace_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
