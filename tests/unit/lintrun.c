/*
 * lintrun.c - see lintrun.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "lintrun.h"

/* A root process with one thread and a small address space (program,
 * heap, libc, stack): 6 VMAs. */
void lr_open(struct tg_trace *b, const char *options)
{
	static const struct vmt_map_entry maps[] = {
		{ 0x555555554000ull, 0x555555556000ull, 0, 0x801, 131, VMT_PROT_R, "/usr/bin/app" },
		{ 0x555555556000ull, 0x555555558000ull, 0x2000, 0x801, 131, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app" },
		{ 0x555555559000ull, 0x55555557a000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[heap]" },
		{ 0x7ffff7d00000ull, 0x7ffff7d28000ull, 0, 0x801, 77, VMT_PROT_R, "/usr/lib/libc.so.6" },
		{ 0x7ffff7d28000ull, 0x7ffff7ebd000ull, 0x28000, 0x801, 77, VMT_PROT_R | VMT_PROT_X, "/usr/lib/libc.so.6" },
		{ 0x7ffffffde000ull, 0x7ffffffff000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[stack]" },
	};
	tg_trace_memfd(b, "lint", options);
	tg_put(b, tg_ev_process_start(0, 0, VMT_NONE, 1000, VMT_PROC_ROOT));
	tg_put(b, tg_ev_thread_start(0, 0, VMT_NONE, 1000));
	tg_put(b, tg_ev_maps(0, 0, 6, maps));
}

void lr_thread(struct tg_trace *b, uint32_t proc, uint32_t thread)
{
	tg_put(b, tg_ev_thread_start(proc, thread, 0, (int32_t)(1000 + thread)));
}

void lr_fork(struct tg_trace *b, uint32_t proc, uint32_t thread)
{
	tg_put(b, tg_ev_process_start(proc, thread, 0, (int32_t)(2000 + proc), VMT_PROC_FORK));
	lr_thread(b, proc, thread);
}

/* A FAULT from the program's text. */
void lr_fault(struct tg_trace *b, uint32_t proc, uint32_t thread, uint64_t addr, uint32_t access)
{
	tg_put(b, tg_ev_fault(proc, thread, addr, 0x555555556100ull, access));
}

/* The MAP_FILE of an mmap of /tmp/data, just before the mmap that follows. */
void lr_map_file(struct tg_trace *b, uint32_t proc, uint32_t thread, uint64_t ino)
{
	tg_put_at(b, tg_ev_file(proc, thread, "/tmp/data", 0x801, ino, 1 << 30, 2, 0100644),
		  b->now + 1);
}

/* Finish the trace, read it back into a linter and decide. */
van_lint *lr_lint(struct tg_trace *b, int *nfound)
{
	tg_finish(b);
	assert_int_equal(lseek(b->fd, 0, SEEK_SET), 0);
	int err;
	vmt_reader *r = vmt_reader_open_fd(b->fd, &err, NULL, 0);
	assert_non_null(r);
	van_lint *l = van_lint_new(vmt_reader_header(r));
	assert_non_null(l);
	struct vmt_event ev;
	uint64_t i = 0;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1)
		assert_int_equal(van_lint_event(l, i++, &ev), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(i, b->count);
	*nfound = van_lint_finish(l);
	assert_true(*nfound >= 0);
	vmt_reader_free(r);
	close(b->fd);
	return l;
}

const struct van_lint_finding *lr_find(const van_lint *l, int n, const char *id)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(van_lint_get(l, (uint32_t)i)->id, id))
			return van_lint_get(l, (uint32_t)i);
	return NULL;
}

uint64_t lr_evidence(const struct van_lint_finding *f, const char *key)
{
	for (uint32_t i = 0; i < f->nnums; i++)
		if (!strcmp(f->nums[i].key, key))
			return f->nums[i].value;
	fail_msg("finding %s has no evidence '%s'", f->id, key);
	return 0;
}

/* The only finding is `id`; returns it. */
const struct van_lint_finding *lr_only(const van_lint *l, int n, const char *id)
{
	if (n != 1 || strcmp(van_lint_get(l, 0)->id, id)) {
		for (int i = 0; i < n; i++)
			print_message("finding: %s\n", van_lint_get(l, (uint32_t)i)->id);
		fail_msg("want exactly the finding %s, got %d findings", id, n);
	}
	return van_lint_get(l, 0);
}

void lr_none(van_lint *l, int n)
{
	for (int i = 0; i < n; i++)
		print_message("unexpected finding: %s: %s\n", van_lint_get(l, (uint32_t)i)->id,
			      van_lint_get(l, (uint32_t)i)->summary);
	assert_int_equal(n, 0);
	van_lint_free(l);
}

/* The trace has no finding. */
void lr_expect_none(struct tg_trace *b)
{
	int n;
	van_lint *l = lr_lint(b, &n);
	lr_none(l, n);
}
