/*
 * rptw.h - test helpers for the replayer: write small synthetic traces
 * event by event (with libvmtrace's writer) into a temporary file.
 */
#ifndef VMT_RPTW_H
#define VMT_RPTW_H

#include <stdint.h>
#include "vmtrace.h"

struct tw {
	int fd;
	vmt_writer *w;
	char path[64];
	uint64_t ts;
};

#define TW_P 4096ull

/* A new trace in a temporary file (tw->path). */
void tw_open(struct tw *t);
/* Finish the trace and close it (the file stays; tw_remove deletes it). */
void tw_close(struct tw *t);
void tw_remove(struct tw *t);

/* PROCESS_START of proc (parent VMT_NONE for a root) with its first thread
 * (created by parent_thread, VMT_NONE for a root). */
void tw_proc(struct tw *t, uint32_t proc, uint32_t parent_proc, uint32_t thread,
	     uint32_t parent_thread);
/* The same, started as `how` (VMT_PROC_*). */
void tw_proc_how(struct tw *t, uint32_t proc, uint32_t parent_proc, uint32_t thread,
		 uint32_t parent_thread, uint32_t how);
void tw_thread(struct tw *t, uint32_t proc, uint32_t thread, uint32_t parent_thread);
void tw_thread_exit(struct tw *t, uint32_t proc, uint32_t thread);
void tw_proc_exit(struct tw *t, uint32_t proc, uint32_t thread);
void tw_exec(struct tw *t, uint32_t proc, uint32_t thread, const char *path);
/* MAPS with n entries {start, end, perms, path}. */
struct tw_map {
	uint64_t start, end;
	uint32_t perms;
	const char *path;
};
void tw_maps(struct tw *t, uint32_t proc, uint32_t thread, const struct tw_map *m, uint32_t n);
/* A SYSCALL with the op's number of arguments. */
void tw_sc(struct tw *t, uint32_t proc, uint32_t thread, uint32_t op, int64_t result,
	   uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5);
/* TOUCH of npages pages at start, all in `state`. */
void tw_touch(struct tw *t, uint32_t proc, uint32_t thread, uint64_t start, uint64_t npages,
	      uint32_t state);
void tw_fault(struct tw *t, uint32_t proc, uint32_t thread, uint64_t addr, uint32_t access);
void tw_file(struct tw *t, uint32_t proc, uint32_t thread, const char *path, uint64_t ino,
	     uint64_t size, uint32_t open_flags);
/* Any prepared event (ts and ids filled by the caller). */
void tw_event(struct tw *t, struct vmt_event *ev);

/* A writer of a trace with this host's header (vmt_header_from_host) into
 * a new memfd called name (*fd); fails the test if it cannot be made. */
vmt_writer *tw_memfd_writer(const char *name, int *fd);

#endif
