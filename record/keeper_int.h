/*
 * keeper_int.h - a process that kills the launched program if vmrec dies
 * (keeper.c).  Internal to record/.
 */
#ifndef VMREC_KEEPER_INT_H
#define VMREC_KEEPER_INT_H

#include <sys/types.h>

/* The processes of a recording, as the keeper reads them after vmrec
 * died: list() fills up to cap pids and returns how many (0: none left),
 * member() says whether pid is still one of them.  Both run in the
 * keeper, on what it inherited (a BPF map, shared memory). */
struct vmr_keeper_list {
	int (*list)(void *ctx, pid_t *pids, int cap);
	int (*member)(void *ctx, pid_t pid);
	void *ctx;
};

struct vmr_keeper {
	int wfd;   /* vmrec's end of the pipe; -1: no keeper */
	pid_t pid; /* the keeper */
};

/* Fork the keeper.  It closes the nclose descriptors close_fds (ends of
 * pipes the program must see closed when vmrec dies) and its standard
 * streams.  Call it once the list names the program.  Returns 0 or
 * -errno (k->wfd is then -1). */
int vmr_keeper_start(struct vmr_keeper *k, const struct vmr_keeper_list *l, const int *close_fds,
		     int nclose);

/* The recording ended: the keeper exits without killing; reaped here.
 * Does nothing without a keeper. */
void vmr_keeper_done(struct vmr_keeper *k);

/* The same, but not waiting for the keeper's exit: what it alone still
 * holds (the stream backend's BPF links, whose detach patches the
 * kernel's text and can take 10-80 ms) is let go in its exit, which
 * comes once vmrec has exited (its end of the pipe stays open until
 * then).  It stays a zombie until vmrec exits. */
void vmr_keeper_release(struct vmr_keeper *k);

#endif
