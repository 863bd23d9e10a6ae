/*
 * tracks.h - per-process quantities over time, for export and plot.
 *
 * Feed every event in order to vmt_tracks_apply(); after each call the
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
#ifndef VMT_TRACKS_H
#define VMT_TRACKS_H

#include <stdint.h>
#include "vmtrace.h"

struct vmt_track_vals {
	uint64_t vmas;
	uint64_t mapped_bytes;
	uint64_t locked_bytes;
	uint64_t touched_pages;
	uint64_t syscalls;
};

/* What the last vmt_tracks_apply() changed. */
#define VMT_TRK_SPACE 0x1u   /* vmas / mapped / locked */
#define VMT_TRK_TOUCHED 0x2u /* touched_pages */
#define VMT_TRK_SYSCALL 0x4u /* syscalls */
#define VMT_TRK_NAMES 0x8u   /* a process or thread name or id */

typedef struct vmt_tracks vmt_tracks;

/* NULL on allocation failure.  h must stay valid while the tracks live. */
vmt_tracks *vmt_tracks_new(const struct vmt_header *h);
void vmt_tracks_free(vmt_tracks *t);

/* Take in one event; *changed (if not NULL) gets VMT_TRK_* bits for the
 * values of the event's process that it changed.  Returns 0 or -ENOMEM. */
int vmt_tracks_apply(vmt_tracks *t, const struct vmt_event *ev, unsigned *changed);

/* One past the largest process / thread index seen. */
uint32_t vmt_tracks_nprocs(const vmt_tracks *t);
uint32_t vmt_tracks_nthreads(const vmt_tracks *t);

/* Current values of process p (zeros when unknown or exited, except the
 * cumulative touched_pages and syscalls). */
void vmt_tracks_get(const vmt_tracks *t, uint32_t p, struct vmt_track_vals *v);

/* The program a process runs (basename of its last exec, of its parent's
 * program for a fork, or of argv[0] for the root), "" when unknown; OS pid
 * and tid (0 when unknown); the process of a thread (VMT_NONE if unknown). */
const char *vmt_tracks_proc_name(const vmt_tracks *t, uint32_t p);
int32_t vmt_tracks_os_pid(const vmt_tracks *t, uint32_t p);
/* The process p was forked from, VMT_NONE for a root (or unknown). */
uint32_t vmt_tracks_parent(const vmt_tracks *t, uint32_t p);
int32_t vmt_tracks_os_tid(const vmt_tracks *t, uint32_t thread);
uint32_t vmt_tracks_thread_proc(const vmt_tracks *t, uint32_t thread);

/* Nanoseconds since the start of recording (0 for earlier times). */
uint64_t vmt_tracks_rel_ns(const vmt_tracks *t, uint64_t ts_ns);

#endif
