/*
 * touchlog_int.h - the TOUCH events a thread's recorder took since that
 * thread's last syscall: the state of the pages right before its next
 * (discarding) call, which says how many pages a MADV_FREE or
 * MADV_DONTNEED found present.  For rule free-before-dontneed and its finding
 * free-before-dontneed.  Library code: 0 or -ENOMEM, no prints.
 */
#ifndef VAN_TOUCHLOG_INT_H
#define VAN_TOUCHLOG_INT_H

#include <stddef.h>
#include <stdint.h>
#include "vmtrace.h"
#include "vmtutil.h"

struct tl_rec {
	uint64_t start;
	uint32_t nruns;
	struct vmt_touch_run *runs; /* a copy */
};

struct tl_thread {
	struct tl_rec *r;
	uint32_t n, cap;
};

struct touchlog {
	struct tl_thread *t;
	size_t nt;
	uint64_t page;
};

void tl_init(struct touchlog *l, uint64_t page);
void tl_free(struct touchlog *l);

/* Keep a copy of TOUCH event ev (reason "before op") for its thread.
 * 0 or -ENOMEM. */
int tl_add(struct touchlog *l, const struct vmt_event *ev);

/* Pages of [a, b) the touches of `thread` show present (-1: they say
 * nothing about [a, b)). */
int64_t tl_present(const struct touchlog *l, uint32_t thread, uint64_t a, uint64_t b);

/* Forget the touches of `thread` (at its syscall, after it used them). */
void tl_clear(struct touchlog *l, uint32_t thread);

#endif
