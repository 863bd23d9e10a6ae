/*
 * arena_int.h - the shared memory between the trace loader and the replay
 * (internal to libvmreplay).
 *
 * The loader fills, and the replay processes read, one mapping made
 * before any of them is forked: MAP_SHARED, so what the loader writes
 * while a run goes on reaches processes forked long before, and
 * MAP_NORESERVE, so only what is used costs memory.  In it:
 *  - per recorded thread, its element stream: a list of blocks, each
 *    holding elements from its start and their pieces, touches and waits
 *    from its end, and the count of elements the replay may execute
 *    (published, see publish.c);
 *  - per process its recorded index, per file what a replay process
 *    needs to open it.
 * Only the loader allocates and frees blocks (it frees those every copy
 * of the replay thread has passed), so the pool takes no locks.
 */
#ifndef VMREPLAY_ARENA_H
#define VMREPLAY_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

#define RP_TCAP 65536u	       /* threads of a trace */
#define RP_PCAP 65536u	       /* processes */
#define RP_FCAP (1u << 20)     /* files */
#define RP_BLK_SHIFT 16	       /* a standard block: 64 KiB */
#define RP_BLK_FIRST_SHIFT 12  /* a thread's first block: 4 KiB (most threads
				  of a server or a build make few calls) */
#define RP_BLK_CLASSES 32
/* Where the replay's large reservations ask to be: far below where the
 * kernel puts mappings by itself (and where recorded programs had
 * theirs), so that --placement=exact finds the recorded addresses free,
 * and above the sanitizer's shadow memory. */
#define RP_HINT_ARENA 0x200000000000ull
#define RP_HINT_BASES 0x280000000000ull
#define RP_HINT_RESULTS 0x300000000000ull

/* One block of a thread's elements.  Elements grow from elem[0], their
 * arrays (pieces, touches, waits; an exec's plan) down from the end;
 * piece0, touch0 and dep0 of its elements are byte offsets from the
 * block's start. */
struct rp_blk {
	struct rp_blk *next; /* the thread's next block; set before any of
				its elements is published */
	void *extra;	     /* (loader) frozen plans of its execs, freed with it */
	uint32_t first;	     /* thread index of its first element */
	uint32_t n;	     /* elements in it */
	uint32_t aux_low;    /* lowest byte of its arrays */
	uint32_t cls;	     /* size class: 1 << cls bytes */
	uint32_t tid;
	/* Regions the trace had when its newest element was stored: its
	 * elements name no later one, and the replay has their bases'
	 * pages ready before it executes them (run/worker.c). */
	uint32_t nregions;
	uint32_t pad[4];
	struct rp_elem elem[];
};

/* A thread's stream, as the replay reads it. */
struct rp_tsh {
	uint32_t published; /* elements the replay may execute */
	uint32_t want;	    /* lowest count a waiting replay thread wants */
	uint32_t epoch;	    /* waiters sleep on it */
	uint32_t proc;	    /* local process index */
	uint32_t rec;	    /* recorded thread index */
	uint32_t pad;
	struct rp_blk *head; /* its first block (NULL until it has one) */
	char pad2[32];
} __attribute__((aligned(64)));

/* A file, as a replay process opens it: the loader's descriptors of
 * this run (fd + 1; 0: none), opened through /proc/PID/fd. */
struct rp_fsh {
	int32_t rd, rw;
	uint8_t zero, shm, pad[6];
};

struct rp_arena {
	size_t size;	 /* of the mapping */
	int32_t pid;	 /* the loader's process */
	uint32_t pad;
	uint64_t bump;	 /* next unused byte of the pool (offset) */
	uint64_t pool0;	 /* offset of the pool */
	uint64_t in_use; /* bytes of blocks handed out */
	uint64_t peak_use;
	int shared;	 /* 0 once privatized */
	struct rp_blk *free_cls[RP_BLK_CLASSES];
	struct rp_tsh *threads; /* [RP_TCAP] */
	uint32_t *proc_rec;	/* [RP_PCAP] */
	struct rp_fsh *files;	/* [RP_FCAP] */
};

/* Map a new arena; NULL with errno set. */
struct rp_arena *rp_arena_new(void);
/* The arena of a trace loaded whole, which no run writes: its used part
 * becomes private memory at the same address.  A forked process then
 * inherits its page tables (fork does not copy those of a shared
 * mapping: each replay process would take a fault per page of elements
 * it reads, counted with the replay's).  The pool's shared pages are
 * given back as they are copied: at no time is the trace in memory
 * twice.  0 or -errno (it stays shared). */
int rp_arena_privatize(struct rp_arena *a, uint32_t nthreads, uint32_t nprocs, uint32_t nfiles);
void rp_arena_free(struct rp_arena *a);

/* A block of at least `bytes` (header included), or NULL (the pool is
 * exhausted).  Its header is zeroed. */
struct rp_blk *rp_blk_alloc(struct rp_arena *a, size_t bytes);
void rp_blk_free(struct rp_arena *a, struct rp_blk *b);
static inline size_t rp_blk_size(const struct rp_blk *b)
{
	return (size_t)1 << b->cls;
}
static inline void *rp_blk_at(const struct rp_blk *b, uint32_t off)
{
	return (char *)b + off;
}
/* Room left between the elements and the arrays. */
static inline size_t rp_blk_room(const struct rp_blk *b)
{
	size_t top = offsetof(struct rp_blk, elem) + (size_t)b->n * sizeof(struct rp_elem);
	return b->aux_low > top ? b->aux_low - top : 0;
}

/* Element i of thread tid of a trace in memory, and its waits (for
 * tests and tools; the replay walks its blocks itself). */
static inline struct rp_elem *rp_trace_elem(const struct rp_arena *a, uint32_t tid, uint32_t i,
					    const struct rp_blk **blk)
{
	const struct rp_blk *b = a->threads[tid].head;
	while (b && i >= b->first + b->n)
		b = b->next;
	if (blk)
		*blk = b;
	return b && i >= b->first ? (struct rp_elem *)&b->elem[i - b->first] : NULL;
}
static inline const struct rp_dep *rp_elem_deps(const struct rp_blk *b, const struct rp_elem *e)
{
	return (const struct rp_dep *)rp_blk_at(b, e->dep0);
}

#endif
