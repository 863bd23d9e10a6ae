/*
 * stream_int.h - what the stream backend's loader (stream.c) and its record
 * processing (streamev.c) share.  Internal to record/.
 */
#ifndef VMREC_STREAM_INT_H
#define VMREC_STREAM_INT_H

#include <pthread.h>
#include <semaphore.h>
#include "recording_int.h"
#include "keeper_int.h"
#include "bpf/records.h"
#include "vmtutil.h"

#define STREAM_MAX_PROGS 16
#define STREAM_MAX_MAPS 16

/* Records wait this long (by their time) before they become events, so
 * that a call that held mmap_lock before another, but whose exit was
 * reported after it, can still be put first (seen: a few microseconds). */
#define STREAM_WINDOW_NS 2000000ull
#define STREAM_WINDOW_BYTES (8u << 20) /* ... and at most this much */
/* ... but a call waits, at most this long, for the calls that held the
 * lock before it: one whose exit came later than the window (a thread
 * preempted, or its vCPU descheduled, between its unlock and its exit; a
 * munmap waiting on a userfaultfd reader) still goes first. */
#define STREAM_LOCK_WAIT_NS 1000000000ull
#define STREAM_LOCK_SEEN 4096 /* lock_seq numbers looked ahead at most */
#define STREAM_BATCH 16384 /* records taken from the ring in one go */
/* The reader takes what waits at least this often, wake-up or not: with
 * the window and the writer's 50 ms, a record is in the file within
 * 100 ms of its call (or of the late exit of a call that held mmap_lock
 * before it, STREAM_LOCK_WAIT_NS at most). */
#define STREAM_DRAIN_MS 20
#define STREAM_STACK_WAKE (256u << 10) /* with stacks, wake at this much */
/* on_lock's tracepoint (bpf/stream.bpf.c), switched on ahead of its
 * attach (stream_arm_start). */
#define STREAM_LOCK_TP "mmap_lock_acquire_returned"
/* The stack copies waiting in the window are kept apart from it, in one
 * buffer used as a ring (they leave in the order they came): each copied
 * once from the ring buffer, never moved, into memory that is reused.  A
 * copy that does not fit goes into the window itself. */
#define STREAM_STACK_ARENA (4u << 20)


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
	/* The descriptors of its maps and of the programs it loads, in the
	 * object's order (streamload.c), and of the programs' links. */
	int map_fd[STREAM_MAX_MAPS], nmaps;
	int prog_fd[STREAM_MAX_PROGS], nprogs;
	int own_fds; /* 1: ours to close; 0: libbpf's (the object's) */
	/* The thread that switches STREAM_LOCK_TP on while the programs
	 * load (arming: it runs or was not joined yet), and the link of
	 * its program there (-1: none). */
	pthread_t arm;
	int arming, arm_link;
	/* ... which also opens the counted-fault perf events of every CPU
	 * (when arm_counted), for on_counted's links: counted[i] of CPU
	 * i / 2, the major one when i is odd, -1 for an offline CPU;
	 * counted_err: why they cannot be opened (0: they are). */
	int arm_counted, *counted, ncounted, counted_err;
	sem_t counted_ready; /* posted once counted_err is known */
	int have_kfault; /* the kernel has exceptions:page_fault_kernel */
	/* The programs' links: one per program, and the counted faults'
	 * two per CPU (its perf events, held by their links). */
	int *link_fd, nlinks;
	size_t caplinks;
	struct ring_buffer *rb;
	/* What the loop waits on: the ring's epoll set and, until it is
	 * reaped, the launched program's pidfd (its exit ends the wait at
	 * once, not at the next timeout); -1: none. */
	int ep, root_pidfd;
	int tgids_fd, stats_fd, waiting_fd;
	struct vmr_keeper keeper; /* kills the launched program if vmrec dies */
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
	/* The stack copies' ring (STREAM_STACK_ARENA bytes once used): the
	 * oldest live copy at skhead, the next one at sktail; skwrapped:
	 * the newest ones start again at 0, below skhead. */
	unsigned char *sk;
	size_t skhead, sktail, sklive;
	int skwrapped;
	/* The calls in the window that took mmap_lock for writing: where
	 * they are and their lock_seq, in window order. */
	struct qlock {
		size_t off;
		uint64_t seq;
	} *locks;
	size_t nlocks, caplocks, lockhead;
	/* The lock_seq numbers come (the BPF side hands them out from 0):
	 * all those below lock_next (or given up), and of the
	 * STREAM_LOCK_SEEN from there, those set in lock_seen (bit seq %
	 * STREAM_LOCK_SEEN).  lock_wait_since: when the window's first call
	 * began to wait for a number below its own (0: it does not), and
	 * lock_wait_drops the records lost by then (dropped_told). */
	uint64_t lock_next, lock_wait_since, lock_wait_drops;
	uint64_t lock_seen[STREAM_LOCK_SEEN / 64];

	struct stream_file files[STREAM_FILE_SLOTS];
	unsigned nfiles; /* of them used */
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

/* streamload.c */
/* Load the configured object through a loader program the kernel runs
 * (no BTF parsed here); fills map_fd and prog_fd.  On failure the object
 * is spent (open it again to load it otherwise); close what it filled
 * with stream_close_fds. */
int stream_load_fast(struct stream *s);
/* After bpf_object__load: the object's descriptors into map_fd, prog_fd. */
int stream_take_fds(struct stream *s);
/* The descriptor of map `name`, or -ENOENT. */
int stream_map_fd(const struct stream *s, const char *name);
/* Close the descriptors stream_load_fast filled. */
void stream_close_fds(struct stream *s);
/* Switch on STREAM_LOCK_TP on a thread of its own, with a program that
 * does nothing, while this one loads the programs: the first probe on a
 * tracepoint patches each of its sites in the kernel's text, and
 * mmap_lock's are inlined in hundreds of places (8-30 ms).  on_lock's
 * own attach then adds a probe to a tracepoint that is on.  Anything
 * failing here only leaves that cost to on_lock's attach.  Before that,
 * when s->arm_counted, open the counted-fault events (their first one
 * patches the kernel's text too, which would wait for the patching above
 * on this thread); counted_err says whether they could be. */
void stream_arm_start(struct stream *s);
/* Wait until the counted-fault events are open (or known not to open):
 * 0, or why not. */
int stream_arm_counted(struct stream *s);
/* Wait for the thread (before attaching on_lock, and before any fork
 * after which the link must not be held elsewhere). */
void stream_arm_wait(struct stream *s);
/* Wait, and detach the program that did nothing (on_lock keeps the
 * tracepoint on), and close the counted-fault events not yet taken. */
void stream_arm_release(struct stream *s);


#endif
