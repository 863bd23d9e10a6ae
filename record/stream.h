/*
 * stream.h - what the stream backend's loader (stream.c) and its record
 * processing (streamev.c) share.  Internal to record/.
 */
#ifndef VMREC_STREAM_H
#define VMREC_STREAM_H

#include "tracer.h"
#include "bpf/stream.h"

#define STREAM_MAX_LINKS 16

/* Records wait this long (by their time) before they become events, so
 * that a call that held mmap_lock before another, but whose exit was
 * reported after it, can still be put first (seen: a few microseconds). */
#define STREAM_WINDOW_NS 2000000ull
#define STREAM_WINDOW_BYTES (8u << 20) /* ... and at most this much */
#define STREAM_BATCH 16384 /* records taken from the ring in one go */
#define STREAM_STACK_WAKE (256u << 10) /* with stacks, wake at this much */


/* A SR_FILE waiting for its SR_CALL (the same task's next record). */
struct stream_file {
	uint32_t tid;
	int used;
	struct sr_file f;
};
#define STREAM_FILE_SLOTS 64

/* A SR_VMA of an exec in progress. */
struct stream_vma {
	uint32_t tid;
	struct sr_vma v;
};

struct stream {
	struct bpf_object *obj;
	struct bpf_link *links[STREAM_MAX_LINKS];
	int nlinks;
	struct ring_buffer *rb;
	int tgids_fd, stats_fd, waiting_fd;
	int ncpus;
	uint64_t ring_bytes;
	pid_t root;
	uint32_t live_procs; /* traced processes not yet ended */
	uint64_t dropped_told; /* records the BPF side dropped, reported */
	uint64_t last_ts;      /* of the newest record */
	uint64_t stop_at;      /* when the stop signal came */
	unsigned batch;	       /* records of the current batch */

	/* The window: records in the order they become events.  Each is
	 * a struct qhdr followed by the record (and, for a call, the file
	 * of its mapping), 8-byte aligned. */
	unsigned char *q;
	size_t qhead, qtail, qcap;
	size_t qstack; /* bytes of stack copies in the window (not counted
			  against STREAM_WINDOW_BYTES, which is for calls) */
	/* The calls in the window that took mmap_lock for writing: where
	 * they are and their lock_seq, in window order. */
	struct qlock {
		size_t off;
		uint64_t seq;
	} *locks;
	size_t nlocks, caplocks, lockhead;

	struct stream_file files[STREAM_FILE_SLOTS];
	struct stream_vma *vmas;
	size_t nvmas, capvmas;
	struct vmt_map_entry vsyscall; /* as /proc lists it (end 0: none) */
};

/* streamev.c */
/* The ring buffer's callback: a record into the window. */
int stream_record(void *ctx, void *data, size_t size);
/* Turn the window's records older than STREAM_WINDOW_NS into events
 * (all of them when `all`). */
void stream_flush(struct vmr_rec *r, struct stream *s, int all);
void stream_window_free(struct stream *s);


#endif
