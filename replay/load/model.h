/*
 * model.h - the loaded trace, as the executor wants it (internal to
 * libvmreplay).
 *
 * Loading (trace.c, load.c, sim.c) turns the event stream into one array of
 * "elements" per recorded thread, with everything decided up front: which
 * replay region and offset each recorded address range maps to, which
 * pages to touch before each op and how, which ops of other threads each
 * element must wait for, and which stand-ins, scratch files and brk
 * reservations the run needs.  The executor (exec.c, worker.c) then only
 * reads these arrays; the only run-time translation state is the table of
 * region bases (replay address of offset 0 of each region), filled in as
 * the ops that create regions return.
 */
#ifndef VMREPLAY_MODEL_H
#define VMREPLAY_MODEL_H

#include <stdint.h>
#include "linux_abi.h"
#include "replay.h"
#include "vmtrace.h"

/* Element kinds. */
enum rp_kind {
	RK_SYSCALL = 0, /* a replayed memory op */
	RK_SPAWN,	/* create replay thread `arg` (a thread index) */
	RK_FORK,	/* fork; the child runs thread `arg` of process `proc2` */
	RK_EXEC,	/* exec: unmap the address space, create new stand-ins */
	RK_END,		/* the thread ends here (after its last touches) */
	RK_SKIP,	/* a recorded op the replayer cannot replay (counted) */
	RK_TOUCH,	/* only its touches: those the thread had made when
			   another thread of its process forked, before it */
};

/* How a syscall element is executed. */
enum rp_how {
	RX_RANGE = 0, /* the op on each piece: munmap, mprotect, madvise, ... */
	RX_MMAP,      /* mmap: new region, or MAP_FIXED inside one region */
	RX_MREMAP,
	RX_BRK,	      /* emulated on the reserved brk region */
	RX_NOARGS,    /* mlockall, munlockall: raw args */
};

/* Element flags. */
#define RF_CHECK 0x1u	   /* compare the result with the recorded one */
#define RF_FIXED_IN 0x2u   /* mmap/mremap target is inside region `region2` */
#define RF_NEWREG 0x4u	   /* result becomes the base of region `region` */
#define RF_STOP_ERR 0x8u   /* RX_RANGE: stop at the first failing piece */
#define RF_RAW_LEN 0x10u   /* RX_RANGE: one piece, pass the recorded length */
#define RF_SAMPLE_VMAS 0x20u /* count /proc/self/maps lines after this op */
#define RF_UNMAP 0x40u	   /* RX_RANGE: unmaps its range (munmap; shmdt replays as one) */
#define RF_FILE 0x80u	   /* mmap of file `file` (else anonymous) */
#define RF_FILE_RW 0x100u  /* the recorded fd was opened for writing */
#define RF_POST 0x200u	   /* another thread waits for this element: post it */
#define RF_BRK_LAZY 0x2000u /* RX_BRK: the first of a heap its plan did not
			      have when frozen: reserve it */
#define RF_BRK_PAST 0x4000u /* RX_BRK: beyond the heap's reservation: fails */
/* Set last, by the loader (mark_inline, trace.c): */
#define RF_PIECE1 0x1000u  /* RX_RANGE on one piece of a region (not mincore,
			      not RF_RAW_LEN): the piece is inline (region,
			      off2, aux) */
#define RF_TOUCH1 0x800u   /* RF_PIECE1 with one touch run, inline (region2,
			      tpage, arg) */
#define RF_FAST 0x400u	   /* the loop's short path: RF_PIECE1 without waits,
			      post or sampling */

/* One translated piece of a recorded range.  region RP_VOID: a recorded
 * range with no mapping; executed on the never-mapped void range at the
 * bottom of the address space (off: the in-page offset). */
#define RP_VOID UINT32_MAX
struct rp_piece {
	uint64_t off, len;
	uint32_t region;
	uint32_t pad;
};

/* Pages to touch before an element, in one region. */
#define RP_TOUCH_WRITE 0x80000000u
struct rp_touch {
	uint64_t off;	 /* page-aligned offset in the region */
	uint32_t region;
	uint32_t npages; /* | RP_TOUCH_WRITE for writes, else reads */
};

/* Wait until thread `thread` (of the same copy) has completed `seq`
 * elements.  RP_DEP_LATE in thread: the element waited for had reached
 * the replay before the wait was known, so it does not post (RF_POST):
 * the waiter polls. */
#define RP_DEP_LATE 0x80000000u
struct rp_dep {
	uint32_t thread;
	uint32_t seq;
};

struct rp_elem {
	uint8_t kind;  /* enum rp_kind */
	uint8_t op;    /* enum vmt_op (RK_SYSCALL, RK_SKIP) */
	uint8_t how;   /* enum rp_how */
	uint8_t pad;
	uint32_t flags; /* RF_* */
	/* Its arrays: byte offsets in its block (arena_int.h); while it is
	 * loaded, indexes of rp_trace.pieces, .deps and .touches. */
	uint32_t npieces, piece0;
	uint32_t ndeps, dep0;
	uint32_t ntouch, touch0;
	/* By kind, how and flags (the short path reads the element alone,
	 * no piece or touch array: each stream more per op was measurable). */
	uint32_t region;  /* RF_NEWREG / RX_BRK: region; RK_FORK: child proc;
			     RF_PIECE1: the piece's region */
	uint32_t region2; /* RF_FIXED_IN: region of the target;
			     RF_TOUCH1: the touch's region */
	uint32_t arg;	  /* RK_SPAWN/RK_FORK: thread; RF_FILE: file index;
			     RK_EXEC: stand-in plan index (loaded);
			     RF_TOUCH1: the touch's pages | RP_TOUCH_WRITE */
	uint32_t tpage;	  /* RF_TOUCH1: the touch's offset in region2, in pages */
	uint64_t off2;	  /* RF_FIXED_IN: offset of the target in region2;
			     RX_BRK: new break offset; RF_PIECE1: the piece's offset;
			     RK_EXEC (published): its frozen plan (rp_xplan *) */
	uint64_t aux;	  /* RX_BRK: old break offset; RF_PIECE1: the piece's length;
			     RF_NEWREG mmap: the region's recorded start;
			     RK_FORK: the regions loaded so far (those it may
			     have a base of) */
	uint64_t args[VMT_MAX_ARGS];
	int64_t result;	  /* recorded */
	uint64_t ts;	  /* recorded entry time - trace start (ns) */
	uint64_t event;	  /* event index in the trace */
};

/* Region kinds. */
enum rp_region_kind {
	RG_MAP = 0, /* created by a replayed mmap/mremap */
	RG_SNAP,    /* a stand-in for mappings of a MAPS snapshot */
	RG_BRK,	    /* the emulated brk heap */
};

struct rp_region {
	uint64_t rec_start; /* recorded address of offset 0 */
	uint64_t size;
	uint32_t proc;
	uint8_t kind;
	uint8_t needed; /* RG_SNAP/RG_BRK: some element uses it */
	uint8_t fkind;	/* RG_MAP, RG_BRK: enum rp_fkind (RG_SNAP: its
			   stand-ins') */
	uint8_t noverlay; /* (load) files mapped into it (sim_overlay) */
	uint32_t overlay; /* (load) ... the last of them, 1-based */
	uint32_t pad;
	uint64_t brk_init; /* RG_BRK: initial break offset */
	uint64_t reserved; /* RG_BRK: bytes its frozen plan reserves (0: none
			      yet) */
	uint32_t plan;	   /* RG_BRK: its plan */
	uint32_t file;	   /* RG_MAP made by mapping a file, or moved from
			      one (mremap): its file index, else RP_VOID */
	uint64_t file_off; /* ... and the file offset at its offset 0 */
};

/* One mapping of a stand-in group (a region covering contiguous snapshot
 * entries). */
struct rp_standin {
	uint32_t region;
	uint32_t prot;	 /* PROT_* */
	uint32_t shared; /* MAP_SHARED */
	uint32_t file;	 /* file index, or RP_VOID for anonymous */
	uint64_t off, len; /* in the region */
	uint64_t file_off;
	uint32_t fkind;	 /* enum rp_fkind of the mapping it stands in for */
	uint32_t pad;
};

/* The stand-ins and brk region of one address space epoch (a root
 * process, or an exec). */
struct rp_plan {
	uint32_t standin0, nstandin;
	uint32_t brk_region; /* RP_VOID if none */
	uint32_t proc;
	uint8_t snap;	     /* its MAPS snapshot has been loaded */
	uint8_t frozen;	     /* it has been frozen for a run (rp_xplan) */
	uint8_t pad[6];
};

/* A plan as the replay sets it up (frozen when the element that uses
 * it is published, publish.c): its stand-ins with what they need of
 * their regions, and the heap. */
struct rp_xstandin {
	struct rp_standin s;
	uint64_t rec_start, rsize; /* of its region */
	uint32_t map;		   /* some element uses the region */
	uint32_t pad;
};
struct rp_xplan {
	uint32_t nstandin;
	uint32_t brk_region; /* RP_VOID: none */
	uint64_t brk_rec_start, brk_size, brk_init;
	uint32_t brk_map, pad;
	struct rp_xstandin st[];
};
typedef struct rp_trace rp_trace;
/* publish.c: the bytes of plan's frozen form, and freezing it into x
 * (all: every stand-in and the heap are mapped, as which are used is not
 * known yet). */
size_t rp_plan_frozen_size(const rp_trace *t, uint32_t plan);
void rp_plan_freeze(rp_trace *t, uint32_t plan, int all, struct rp_xplan *x);
/* The heap of a streamed replay: its reservation when its peak is not
 * known yet. */
#define RP_BRK_STREAMED (4ull << 30)

/* A file behind file-backed mappings. */
/* Why --files=original mapped a scratch file instead (rp_not_original_why). */
enum rp_not_original {
	RP_ORIG_OK,
	RP_ORIG_WRITABLE, /* a recorded mapping could have written it */
	RP_ORIG_RELATIVE, /* the recorded path is not absolute */
	RP_ORIG_MISSING,  /* no such file, or it cannot be read */
	RP_ORIG_TYPE,	  /* not a regular file (a FIFO, a device, ...) */
	RP_ORIG_PSEUDO,	  /* on /proc, /sys or another kernel file system */
	RP_ORIG_NO_INODE, /* the trace gives no inode to check it by */
	RP_ORIG_INODE,	  /* another file now (another inode) */
	RP_ORIG_SIZE,	  /* another size */
};

struct rp_file {
	uint64_t dev, ino;
	uint64_t rec_size; /* recorded st_size (0 if unknown) */
	uint64_t size;	   /* scratch size: covers every mapped offset */
	char *path;
	uint8_t zero;	   /* /dev/zero and other devices: anonymous */
	uint8_t shared_rw; /* some mapping could write it (MAP_SHARED of a
			      writable fd) */
	uint8_t original;  /* --files=original and the file qualifies */
	uint8_t not_original; /* --files=original, and why it did not
				 (enum rp_not_original), else 0 */
	uint8_t shm;	   /* a SysV shared memory segment (ino: its id) */
	uint8_t shm_ro;	   /* ... and some attach of it is SHM_RDONLY */
	/* What a scratch file's page cache is to hold, by fault-around
	 * window (RP_WARM_WINDOW), bitmaps of `capwarm` and `capcold` words
	 * (the load marks them as it meets the touches, replay/run/files.c
	 * fills the cache): the windows the trace touches, and those where
	 * the recorded run took a major fault, which the page cache did not
	 * hold then. */
	uint64_t *warm, *cold;
	size_t capwarm, capcold;
};

/* The kernel's fault-around window (fault_around_bytes, its default): a
 * read fault on a file maps the page-cache pages of the aligned window
 * around it. */
#define RP_WARM_WINDOW (64u << 10)
/* Offsets past this many windows (1 TiB) are not marked, so that a
 * hostile offset cannot make the bitmaps large. */
#define RP_WARM_MAX_WINDOWS (1ull << 24)

struct rp_thread {
	uint32_t proc;	 /* local process index */
	uint32_t rec;	 /* recorded thread index */
	uint32_t nelem;	 /* elements loaded (in its stream, arena_int.h) */
	uint8_t ended;	 /* (load time) */
	uint8_t pad[3];
	uint64_t mincore_max; /* largest mincore vector it needs (bytes) */
};

struct rp_proc {
	uint32_t rec;	       /* recorded process index */
	uint32_t parent;       /* local index, RP_VOID for a root */
	uint32_t first_thread; /* the thread the process starts with */
	uint32_t plan;	       /* initial plan (roots), RP_VOID otherwise */
	uint32_t nthreads;     /* threads it ever had */
	uint32_t pad;
};

/* The recorded run's own counters of a thread or process (COUNTERS events,
 * format 1.2), what its calls waited for, and where it took its faults:
 * what a replay is judged against (report/fidelity.c). */
struct rp_rec_counts {
	uint8_t have;	   /* a COUNTERS event gave the counters */
	uint8_t flags;	   /* its VMT_CNT_* */
	uint8_t exec_seen; /* process: the launch baseline is known */
	uint8_t pad;
	int32_t os_pid;	   /* process: its pid when recorded */
	uint64_t minflt, majflt, nvcsw, nivcsw, utime_ns, stime_ns, stops;
	/* process: its counters at its first exec (the root's: the
	 * recorder's launch, which the replay does not do) */
	uint64_t base_minflt, base_majflt, base_nvcsw, base_nivcsw, base_stops;
	uint64_t calls, calls_waits; /* calls, and those with their waits */
	uint64_t call_off_cpu_ns, call_vcsw, call_ivcsw;
	uint64_t first_ts, last_ts;  /* of its calls */
	/* FAULT events (or present pages of TOUCH events) by enum rp_fkind */
	uint64_t faults[RP_FK__COUNT];
	char path[128];	   /* process: its program (last exec), cut */
};

struct rp_trace {
	struct rp_options opt; /* as loaded (order matters to deps) */
	char *path;
	uint32_t page_size;    /* recorded */
	uint64_t void_len;     /* never-mapped bytes at address 0 (this machine) */
	uint64_t first_ts, last_ts; /* of the trace's events */
	uint64_t events;       /* events in the trace */
	uint64_t nops;	       /* syscall elements */

	/* The arrays, each with its count and its capacity (load time). */
	struct rp_thread *threads;
	uint32_t nthreads;
	size_t capthreads;
	struct rp_proc *procs;
	uint32_t nprocs;
	size_t capprocs;
	struct rp_region *regions;
	uint32_t nregions;
	size_t capregions;
	struct rp_piece *pieces;
	uint32_t npieces;
	size_t cappieces;
	struct rp_touch *touches;
	uint32_t ntouches;
	size_t captouches;
	struct rp_dep *deps;
	uint32_t ndeps;
	size_t capdeps;
	struct rp_standin *standins;
	uint32_t nstandins;
	size_t capstandins;
	struct rp_plan *plans;
	uint32_t nplans;
	size_t capplans;
	struct rp_file *files;
	uint32_t nfiles;
	size_t capfiles;
	/* The recorded counters, by local thread and process index (as
	 * threads and procs); rec_counters: how many COUNTERS events. */
	struct rp_rec_counts *rec_threads, *rec_procs;
	size_t caprec_threads, caprec_procs;
	uint64_t rec_counters;
	uint64_t rec_fault_events;	/* FAULT events (0: touches were resident) */

	/* Load-time facts, reported. */
	uint64_t peak_mapped, peak_touched; /* bytes, one copy */
	uint64_t skipped_ops;		    /* RK_SKIP elements */
	uint64_t touch_unmapped_pages;	    /* recorded touches outside mappings */
	uint64_t lost_events;
	uint64_t loaded_bytes;		    /* memory of this structure */
	uint64_t own_bytes;		    /* the replay's own memory for its threads,
					       processes, mappings, files (ld_charge) */
	uint64_t load_start_ns, load_ns;    /* CLOCK_MONOTONIC at the start of
					       the load, and its duration */
	char *cut;			    /* --truncated=replay: where the
					       trace was cut short, or NULL */
	char *rec_mm;			    /* the recording machine's mm settings
					       (the header's OPTIONS words of
					       vmt_mm_key), "" if it names none */
	uint32_t ops_used_mask;		    /* bit per vmt_op present */
	uint16_t rec_minor;		    /* the trace's format version */
	uint8_t rec_rewritten;		    /* written by a rewrite (options: rewrite=) */
	char rec_backend[16];		    /* its header's BACKEND */

	/* The streams (arena_int.h), and the load itself while it is not
	 * complete: a trace whose elements do not fit in --window is
	 * loaded on as it is replayed (trace.c), and again for each run. */
	struct rp_arena *arena;
	struct rp_load *load;	/* the load going on (trace.c), NULL once complete */
	int complete;		/* every event loaded (and published) */
	int streamed;		/* loaded during a run: load again for the next */
	int fd;			/* the trace (for loading it again), or -1 */
	uint64_t fd_off;	/* where it starts in fd */
	uint64_t window;	/* bytes of blocks kept in memory */
	uint32_t region_cap;	/* a run's room for regions (0: unbounded) */
	uint32_t thread_cap;	/* and for threads */
	uint32_t loads;		/* times it has been loaded (the reports give
				   the first load's times) */
};

/* What a run gives the load that goes on beside it (trace.c, exec.c):
 * sync, before published elements reach the replay (the run's files);
 * done, the elements every copy of a replay thread has completed; wait,
 * for the replay to move on (sleep 1: memory is short; 0: only whether
 * the run still goes on).  <0 stops the load. */
struct rp_load_hooks {
	int (*sync)(void *arg);
	uint32_t (*done)(void *arg, uint32_t tid);
	int (*wait)(void *arg, int sleep);
	void *arg;
};
/* trace.c: load the rest of t beside a run (1: complete; <0: stopped,
 * rp_load_msg says why); load t again from its start, up to its window,
 * for another run. */
int rp_load_rest(rp_trace *t, const struct rp_load_hooks *h);
/* on: the load's decoding thread waits (and is waiting on return), off:
 * it goes on.  Around a fork while a load is open: ASan's allocator is
 * not fork-safe, and a child that inherits a lock its thread held at the
 * fork waits on it forever. */
void rp_load_hold(const rp_trace *t, int on);
const char *rp_load_msg(const rp_trace *t);
int rp_load_again(rp_trace *t, char *msg, size_t msglen);

#endif
