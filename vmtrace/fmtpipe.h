/*
 * fmtpipe.h - a reader's events formatted as text on several threads,
 * written in their order.
 *
 * An export spends most of its time making text, event by event, from
 * nothing but the event (and a little state that earlier events set):
 * that part runs on worker threads, batch by batch, while the calling
 * thread reads the next events, keeps the state in order (prepare) and
 * writes the batches done, in order.  The output is the one a single
 * thread calling prepare and format for each event in turn would write.
 */
#ifndef VMTRACE_FMTPIPE_H
#define VMTRACE_FMTPIPE_H

#include <stdint.h>
#include <stdio.h>
#include "vmtrace.h"

/* One event on its way.  ev's pointers (paths, runs, arrays) are only
 * valid while the reader is on it, so an event that has any is made text
 * on the reading thread, right after prepare; the rest are plain values. */
struct fp_rec {
	struct vmt_event ev;
	uint64_t index; /* 0 for the trace's first event */
	uint64_t aux[4]; /* the caller's: what prepare found */
	uint32_t flags;	 /* the caller's */
	uint32_t pre, pre_len; /* (its text made on the reading thread) */
	size_t pre_off;
};

struct fp_ops {
	/* On the calling thread, for each event in order before format:
	 * the state that earlier events set, into r->aux and r->flags.
	 * Returns 0, or a negative errno that stops the run.  May be NULL. */
	int (*prepare)(void *ctx, struct fp_rec *r);
	/* On any thread: append r's text to out.  scratch is that thread's
	 * own buffer, for whatever the format needs. */
	void (*format)(const void *ctx, struct vmt_buf *out, struct vmt_buf *scratch,
		       const struct fp_rec *r);
	void *ctx;
};

/* Read r to its end (or error), writing every event's text to out.
 * Returns the last vmt_reader_next() result (0 at the clean end, or a
 * negative error: the events before it are written); *err is 0, or
 * -ENOMEM, or prepare's error.  A write error stops the reading: the
 * caller checks ferror(out). */
int fp_run(vmt_reader *r, const struct fp_ops *ops, FILE *out, int *err);

#endif
