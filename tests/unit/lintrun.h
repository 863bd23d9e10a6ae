/*
 * lintrun.h - the lint tests' part of the unit-test toolkit, on top of
 * tgen.h: traces that start like a real process (lr_open), a few events
 * they need often, and running the linter over a trace with checks on
 * its findings.  Every trace goes through vmt_writer and vmt_reader (so
 * the events are valid ones) before the linter sees it.
 */
#ifndef VMT_LINTRUN_H
#define VMT_LINTRUN_H

#include <stdint.h>
#include "lint.h"
#include "tgen.h"

/* A trace (tg_trace_memfd, with `options` unless NULL) whose root process
 * 0 has one thread and a small address space (program, heap, libc,
 * stack): 6 VMAs. */
void lr_open(struct tg_trace *b, const char *options);
/* THREAD_START of `thread` in proc, created by thread 0. */
void lr_thread(struct tg_trace *b, uint32_t proc, uint32_t thread);
/* proc forked by process 0, and its first thread. */
void lr_fork(struct tg_trace *b, uint32_t proc, uint32_t thread);
/* A FAULT from the program's text. */
void lr_fault(struct tg_trace *b, uint32_t proc, uint32_t thread, uint64_t addr, uint32_t access);
/* The MAP_FILE of an mmap of /tmp/data (inode ino), just before the mmap
 * that follows. */
void lr_map_file(struct tg_trace *b, uint32_t proc, uint32_t thread, uint64_t ino);

/* Finish the trace, read it back into a linter and decide: the linter,
 * with the number of findings in *nfound. */
van_lint *lr_lint(struct tg_trace *b, int *nfound);
/* The finding `id` among the n, or NULL. */
const struct van_lint_finding *lr_find(const van_lint *l, int n, const char *id);
/* The number `key` of f's evidence (fails the test without one). */
uint64_t lr_evidence(const struct van_lint_finding *f, const char *key);
/* The only finding is `id` (fails the test otherwise); returns it. */
const struct van_lint_finding *lr_only(const van_lint *l, int n, const char *id);
/* There is no finding (fails the test otherwise); frees l. */
void lr_none(van_lint *l, int n);
/* The trace has no finding. */
void lr_expect_none(struct tg_trace *b);

#endif
