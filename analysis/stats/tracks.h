/*
 * tracks.h - per-process quantities over time, for export and plot.
 *
 * Feed every event in order to van_tracks_apply(); after each call the
 * values of every process are current: VMA count, mapped and locked bytes
 * (from the address-space model, asmodel.h), touched pages and syscalls so
 * far, and the names and OS ids of processes and threads.
 *
 * "Touched pages" counts what the trace shows of page use: the present
 * pages of each TOUCH event (vmrec --touch=resident takes them before each
 * discarding call and at exit) plus one page per FAULT event (--touch=
 * faults).  A page touched again after being discarded counts again.
 *
 * Library code: returns 0 or -errno, never prints.
 */
#ifndef VAN_TRACKS_H
#define VAN_TRACKS_H

#include <stdint.h>
#include "vmtrace.h"

struct van_track_vals {
	uint64_t vmas;
	uint64_t mapped_bytes;
	uint64_t locked_bytes;
	uint64_t touched_pages;
	uint64_t syscalls;
};

/* What the last van_tracks_apply() changed. */
#define VAN_TRK_SPACE 0x1u   /* vmas / mapped / locked */
#define VAN_TRK_TOUCHED 0x2u /* touched_pages */
#define VAN_TRK_SYSCALL 0x4u /* syscalls */
#define VAN_TRK_NAMES 0x8u   /* a process or thread name or id */

typedef struct van_tracks van_tracks;

/* NULL on allocation failure.  h must stay valid while the tracks live. */
van_tracks *van_tracks_new(const struct vmt_header *h);
void van_tracks_free(van_tracks *t);

/* Take in one event; *changed (if not NULL) gets VAN_TRK_* bits for the
 * values of the event's process that it changed.  Returns 0 or -ENOMEM. */
int van_tracks_apply(van_tracks *t, const struct vmt_event *ev, unsigned *changed);

/* One past the largest process / thread index seen. */
uint32_t van_tracks_nprocs(const van_tracks *t);
uint32_t van_tracks_nthreads(const van_tracks *t);

/* Current values of process p (zeros when unknown or exited, except the
 * cumulative touched_pages and syscalls). */
void van_tracks_get(const van_tracks *t, uint32_t p, struct van_track_vals *v);

/* The program a process runs (basename of its last exec, of its parent's
 * program for a fork, or of argv[0] for the root), "" when unknown; OS pid
 * and tid (0 when unknown); the process of a thread (VMT_NONE if unknown). */
const char *van_tracks_proc_name(const van_tracks *t, uint32_t p);
int32_t van_tracks_os_pid(const van_tracks *t, uint32_t p);
/* The process p was forked from, VMT_NONE for a root (or unknown). */
uint32_t van_tracks_parent(const van_tracks *t, uint32_t p);
int32_t van_tracks_os_tid(const van_tracks *t, uint32_t thread);
uint32_t van_tracks_thread_proc(const van_tracks *t, uint32_t thread);

/* Nanoseconds since the start of recording (0 for earlier times). */
uint64_t van_tracks_rel_ns(const van_tracks *t, uint64_t ts_ns);

#endif
