/*
 * runfiles_int.h - the files of one run (files.c), internal to libvmreplay.
 */
#ifndef VMREPLAY_RUNFILES_H
#define VMREPLAY_RUNFILES_H

#include "arena_int.h"
#include "model.h"

struct rp_runfiles {
	rp_trace *t; /* (sets each file's `original`) */
	struct {
		int rd, rw;    /* this process's descriptors, -1: none */
		uint64_t size; /* bytes it has been given */
		/* windows of the file's rp_file.warm filled, of .cold
		 * dropped (bitmaps of as many words) */
		uint64_t *warmed, *dropped;
		size_t capwarmed, capdropped;
	} *fd;
	uint32_t n, cap;       /* files made, room */
	uint64_t warm;	       /* bytes left to read into the page cache
				  beyond the windows the trace touches */
	int made;	       /* dir exists */
	char dir[4096];
};

void rp_files_init(struct rp_runfiles *rf, rp_trace *t);
/* Make the trace's files not made yet and grow those the trace now maps
 * further, publishing their descriptors in the arena.  0 or -errno. */
int rp_files_sync(struct rp_runfiles *rf);
void rp_files_close(struct rp_runfiles *rf);

#endif
