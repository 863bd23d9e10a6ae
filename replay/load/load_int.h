/*
 * load_int.h - state shared by the trace loader and the address-space
 * simulation.  Internal.  Its files, each using only those below it:
 *   trace.c     the whole load: reading, the checks after the last event
 *   load.c      the events one at a time: threads, processes, elements
 *   sim.c       each recorded op translated into replay pieces
 *   simtouch.c  TOUCH and FAULT events (uses sim.c)
 *   simspace.c  MAPS snapshots: stand-ins, plans, a process's map
 *   overlay.c   which file each part of a region maps (files mapped into
 *               a region with MAP_FIXED)
 *   order.c     the waits of each element
 *   publish.c   elements into their thread's blocks (arena_int.h), and
 *               handing them to the replay (publication)
 *   ldcore.c    errors, arrays, regions, pieces, files, memory checks
 *   counts.c    the recorded run's counters, waits and faults by kind
 */
#ifndef VMREPLAY_LOAD_INT_H
#define VMREPLAY_LOAD_INT_H

#include "addrmap_int.h"
#include "arena_int.h"
#include "model.h"
#include "vmtutil.h"

/* Attributes kept per recorded mapping in the simulated map (rpam_val.attr). */
#define AT_PROT LX_PROT_RWX /* the recorded prot bits */
#define AT_SHARED 0x8u
#define AT_NORESERVE 0x10u
/* It maps a file (not /dev/zero, not a SysV segment).  A present page of
 * a private file mapping that the recorder saw in the page cache was only
 * read: written, it would be the process's own copy. */
#define AT_FILE 0x20u
/* The main thread's stack ([stack] of a snapshot), a SysV segment: kinds
 * the fidelity section tells faults apart by (enum rp_fkind). */
#define AT_STACK 0x40u
#define AT_SHM 0x80u
/* The kernel's pages of a process ([vdso], [vvar]): an anonymous
 * stand-in takes the program's first reads of them; their faults are of
 * kind other. */
#define AT_KPAGES 0x100u

/* Addresses at or above this are outside any address space: clamps
 * ranges, and gives each process a private "brk resource" for ordering. */
#define RP_ADDR_LIMIT VMT_ADDR_LIMIT
#define RP_BRK_RESOURCE (1ull << 62)

struct lrange {
	uint64_t a, b;
};

struct lthread {
	uint32_t in_proc;      /* index among its process's threads */
	/* Touches waiting for the thread's next element. */
	struct rp_touch *pt;
	uint32_t npt;
	size_t cappt;
	struct lrange *tr;     /* their recorded ranges (for ordering) */
	uint32_t ntr;
	size_t captr;
	/* MAP_FILE waiting for the thread's next syscall. */
	int have_file;
	struct rp_file file;   /* path points into pathbuf */
	uint32_t open_flags;
	char *pathbuf;
	/* Highest seq of each thread of the process this thread has
	 * already waited for (resource order; indexed by in_proc). */
	uint32_t *known;
	size_t capknown;       /* (entries past the last written are 0) */
	uint32_t last_dep_thread, last_dep_seq; /* other-process deps (strict order, vfork) */
	/* The exec (or end) of a vfork child this thread made: its next
	 * element waits for it (vf_seq 0: none). */
	uint32_t vf_thread, vf_seq;
	/* Its blocks (publish.c): the one being filled, the one holding its
	 * first unpublished element, elements published, and the blocks it
	 * holds, in order, from bix0 (ld_elem looks elements up in them). */
	struct rp_blk *tail, *pubblk;
	uint32_t pub;
	struct rp_blk **bix;
	uint32_t nbix, bix0;
	size_t capbix;
	uint32_t dirty;	       /* published more since the last store */
	/* Faults the kernel took, for the thread, outside any mapping of its
	 * address space while it was at its element xf_seq (simtouch.c): an
	 * exec's in the new image, if an exec follows. */
	struct lxfault {
		uint64_t addr;
		uint32_t state; /* VMT_PAGE_* */
	} *xf;
	uint32_t nxf, xf_seq;
	size_t capxf;
};

struct lproc {
	struct addrmap map;     /* recorded address -> region/offset/attr */
	struct addrmap last;    /* recorded address -> last (thread, seq) */
	struct addrmap touched; /* pages known present */
	uint64_t mapped;	/* bytes it reserves alone (ld_reserve) */
	uint64_t touched_bytes;
	uint32_t plan;		/* current epoch's plan, RP_VOID if none */
	int have_snapshot;	/* the epoch's MAPS has been seen */
	uint32_t brk_region;	/* RP_VOID until known */
	uint64_t brk_cur;	/* recorded current break (absolute) */
	uint32_t *threads;	/* local thread ids, in creation order */
	uint32_t nthreads;
	size_t capthreads;
	uint32_t live;		/* threads not ended */
	uint32_t pending_fork;	/* 1: first thread not yet seen */
	uint32_t vforked;	/* started by vfork */
	uint32_t vfork_parent;	/* the suspended thread until exec or exit, RP_VOID */
	uint32_t global_thread, global_seq; /* last global op (RP_VOID) */
	uint32_t exited;
	/* Its FAULT events so far, the kernel's count of its faults at its
	 * latest exec (COUNTERS, exec_counted: one is in), and how many of
	 * those no event showed at the exec before (simtouch.c). */
	uint64_t faults_seen, exec_minflt, unseen;
	uint32_t exec_counted;
	size_t max_segs;	/* peak of map.n, and where it happened */
	uint32_t max_thread, max_elem;
	size_t sampled_segs;	/* the peak of the elements flagged to sample */
};

struct loader {
	rp_trace *t;
	struct lthread *lt;	 /* [t->nthreads] */
	size_t caplt;
	struct lproc *lp;	 /* [t->nprocs] */
	size_t caplp;
	uint32_t *thread_of_rec; /* recorded thread index -> local, RP_VOID */
	size_t capthread_of_rec; /* (all of it is valid) */
	uint32_t *proc_of_rec;
	size_t capproc_of_rec;
	uint64_t event;	       /* index of the event being loaded */
	uint64_t page;	       /* recorded page size */
	int kernel_faults;     /* a FAULT taken in the kernel was seen (a
				  recording by a normal user has none) */
	uint64_t cur_mapped, cur_touched; /* all processes (reserve.c) */
	struct ld_shared {	/* by region: its shared memory (reserve.c) */
		uint64_t bytes;	  /* mapped, summed over processes */
		uint64_t charged; /* in cur_mapped: once, at most its size */
	} *shared;
	size_t capshared;
	uint32_t prev_thread, prev_seq;	  /* last element (strict order) */
	/* Publication (publish.c): the threads of the elements stored and
	 * not yet published, oldest first (a ring of fifo_cap). */
	uint32_t *fifo;
	uint32_t fifo_cap, fifo_head, fifo_n;
	uint32_t *dirty;	/* threads published since the last store */
	uint32_t ndirty;
	size_t capdirty;
	uint32_t unflushed;	/* published since the last store of the counts */
	uint32_t unwoken;	/* ... since the last store that woke waiters */
	uint64_t stored;	/* bytes of elements and their arrays stored */
	/* A run's hooks (NULL outside one), with hook_arg: sync before
	 * published elements reach the replay (the run's files); done: the
	 * elements every copy of a replay thread has completed; wait: for
	 * the replay to move on (sleep 1: memory is short; 0: only whether
	 * the run is still going).  <0 stops the load. */
	int (*sync)(void *arg);
	uint32_t (*done)(void *arg, uint32_t tid);
	int (*wait)(void *arg, int sleep);
	void *hook_arg;
	/* The files mapped with MAP_FIXED into a region that is no one
	 * file's (as ld.so maps a library's segments into a reservation),
	 * each with the one before it in its region (sim_overlay). */
	struct ld_overlay {
		uint64_t roff, len; /* in the region */
		uint64_t file_off;
		uint32_t file;	    /* RP_VOID: anonymous memory */
		uint32_t prev;	    /* 1-based, 0: none */
	} *ov;
	size_t nov, capov;
	char *msg;
	size_t msglen;
	int err;
};

/* ---- reserve.c: the memory the replay reserves (--max-memory) -------- */

/* Take the mappings of P in [a, b) into the estimate (sign 1) or out of
 * it (-1): private writable ones into P->mapped and L->cur_mapped, shared
 * memory once for all processes, the others not.  Returns 0 or <0. */
int ld_reserve(struct loader *L, struct lproc *P, uint64_t a, uint64_t b, int sign);
/* A mapping of attributes attr is private and writable: its pages,
 * touched, are the process's own (the touched estimate). */
int ld_private_writable(uint32_t attr);

/* ---- ldcore.c: what every part of the loader uses ------------------- */

/* Errors: set a message (with the event index) and return <0. */
int ld_fail(struct loader *L, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Make room for `need` elements in the array at arrp (a T **) of capacity
 * *cap, counted toward --max-memory (vmt_grow: new elements zeroed).
 * Returns 0 or <0 (ENOMEM, E2BIG, the 2^31 limit), with a message. */
int ld_grow(struct loader *L, void *arrp, size_t *cap, size_t need, size_t elsz);
/* New items of the trace; all return 0 (ld_add_piece: the index) or <0. */
int ld_new_region(struct loader *L, uint32_t proc, uint8_t kind, uint64_t rec_start,
		  uint64_t size, uint32_t *out);
int ld_add_piece(struct loader *L, uint64_t off, uint64_t len, uint32_t region);
int ld_file_index(struct loader *L, const struct rp_file *f, uint32_t *out);
/* Take the current memory use (L->cur_*) into the peaks, and fail if
 * they (times --scale), with the replay's own memory (ld_charge), exceed
 * --max-memory. */
int ld_check_memory(struct loader *L);
/* The enum rp_fkind of a recorded mapping of region with attributes attr. */
uint32_t ld_fkind(const struct loader *L, uint32_t region, uint32_t attr);
/* Count the replay's own memory for one more thread, process, mapping or
 * file (times --scale) toward --max-memory, before it is taken; fail (with
 * a message naming the option) when it would exceed it. */
enum ld_cost { LD_COST_THREAD, LD_COST_PROC, LD_COST_REGION, LD_COST_FILE };
int ld_charge(struct loader *L, enum ld_cost what);

/* order.c: compute the dependencies of element e (the seq-th of thread
 * tid, using recorded ranges rng, or the whole address space when global)
 * into L->t->deps; the caller sets e->dep0 before and ndeps after. */
int ld_order(struct loader *L, uint32_t tid, const struct rp_elem *e, uint32_t seq,
	     const struct lrange *rng, int nrng, int global);

/* sim.c: translate one SYSCALL of thread `tid` into element e (kind, how,
 * flags, pieces, region fields), update the simulated address space, and
 * collect the recorded ranges it uses (for ordering) in rng[0..*nrng).
 * *global is set for ops on the whole address space. */
#define LD_MAX_RANGES 4
int sim_syscall(struct loader *L, uint32_t tid, const struct vmt_event *ev,
		struct rp_elem *e, struct lrange *rng, int *nrng, int *global);
/* simtouch.c: a TOUCH or FAULT event of thread tid: append touch actions
 * to the thread's pending list. */
int sim_touch(struct loader *L, uint32_t tid, const struct vmt_event *ev);
/* overlay.c: a mapping of file (RP_VOID: anonymous) at offset off made
 * with MAP_FIXED into the region at roff: noted so that a touch there
 * knows its file (the page cache a replay gives it, files.c).  0 or <0. */
int sim_overlay(struct loader *L, uint32_t region, uint64_t roff, uint64_t len, uint32_t file,
		uint64_t off);
/* The file at offset roff of the region, and its offset there (*off):
 * RP_VOID if none (or if too many were mapped into the region to tell).
 * *len is cut to what that mapping covers. */
uint32_t sim_file_at(const struct loader *L, uint32_t region, uint64_t roff, uint64_t *off,
		     uint64_t *len);
/* simtouch.c: after the snapshot of process p (an exec's), the faults
 * the kernel took in the new image while it exec'd (ELF bss, the new
 * stack), which came before the exec, as touches of its first element. */
int sim_exec_faults(struct loader *L, uint32_t p, uint32_t tid);
/* simspace.c: a MAPS snapshot starting process p's epoch: stand-in regions
 * into the map, a plan. */
int sim_snapshot(struct loader *L, uint32_t p, const struct vmt_maps *m);
/* simspace.c: ensure process p has a current plan; returns its index or <0. */
int sim_plan(struct loader *L, uint32_t p);
/* simspace.c: all mapped pieces of p's map (for exec), appended to the pieces;
 * then the map is emptied (piece0, npieces: where they went). */
int sim_clear(struct loader *L, uint32_t p, uint32_t *piece0, uint32_t *npieces);
/* simspace.c: forget p's accounting (process exit). */
void sim_proc_exit(struct loader *L, uint32_t p);
/* publish.c: store element e (its arrays staged in the trace's pieces,
 * touches and deps from e's indexes) as thread tid's next, then publish
 * the oldest stored elements beyond the look-ahead.  The staging arrays
 * are emptied. */
int ld_store(struct loader *L, uint32_t tid, const struct rp_elem *e);
/* publish.c: element idx of thread tid while the loader may still change
 * it (not published), else NULL. */
struct rp_elem *ld_elem(struct loader *L, uint32_t tid, uint32_t idx);
/* publish.c: publish stored elements until at most `keep` are not
 * (LD_LOOKAHEAD: as a run goes on). */
#define LD_LOOKAHEAD 65536u
int ld_publish(struct loader *L, uint32_t keep);
/* publish.c: a new thread's stream in the arena. */
void ld_stream_init(struct loader *L, uint32_t tid);
/* counts.c: the recorded run's counters for the fidelity section.  Room
 * for one more thread and process (before either is added), a COUNTERS
 * event, a call's waits (tid: its local thread), faults of a kind in the
 * process of local thread tid, a process's start or exec (its pid, its
 * program). */
int ld_counts_room(struct loader *L);
int ld_counters(struct loader *L, const struct vmt_event *ev);
void ld_count_call(struct loader *L, uint32_t tid, const struct vmt_event *ev);
void ld_count_faults(struct loader *L, uint32_t tid, uint32_t fkind, uint64_t pages);
void ld_count_process(struct loader *L, uint32_t p, const struct vmt_event *ev);

/* load.c: one event of the trace into the loader. */
int ld_event(struct loader *L, const struct vmt_event *ev);
/* load.c: thread tid ends (its RK_END element); ts 0: with the recording. */
int ld_end_thread(struct loader *L, uint32_t tid, uint64_t ts);
/* sim.c: pages [a, b) of P are present (counted toward the touched peak). */
int sim_touched_add(struct loader *L, struct lproc *P, uint64_t a, uint64_t b);
/* sim.c: some element uses region (a stand-in region gets its mapping). */
void sim_need(struct loader *L, uint32_t region);

#endif
