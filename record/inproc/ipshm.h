/*
 * ipshm.h - what the inproc backend's two halves share: vmrec and the
 * runtime it puts into every recorded image (record/inproc/rt_*.c).
 *
 * The runtime is linked at IP_BASE and mapped there in every image of
 * every recorded process, so that the one seccomp filter, installed once
 * before the first exec and inherited by everything after, can allow the
 * recorded calls made from the runtime's own syscall instruction
 * (IP_GATE_IP, a fixed address) and trap them everywhere else.  vmrec maps
 * it into each new image at the exec stop (a short ptrace stop, the only
 * one), before the image's first instruction: ld.so's own calls are then
 * recorded like any other.
 *
 * The image starts with struct ip_image (entry points, the parameters
 * vmrec fills in).  Per-thread rings live in a shared memory file that
 * vmrec creates; the runtime maps it at IP_SHM_ADDR.  Every mapping the
 * runtime makes for itself has the mmap offset IP_MAGIC_OFF, which the
 * filter lets through from any address (vmrec's first mmap of an image is
 * made before the runtime is there) and which tells it apart from the
 * program's calls in a kernel-side count (tracefs shows the offset).
 *
 * This header is included by freestanding code: no libc types.
 */
#ifndef VMREC_IPSHM_H
#define VMREC_IPSHM_H

#include <stdint.h>

#define IP_BASE 0x3f5ec0000000ull	 /* the runtime's link address */
#define IP_IMAGE_MAX (16ull << 20)	 /* room for its segments */
#define IP_SHM_ADDR (IP_BASE + (64ull << 20)) /* the shared rings */
#define IP_END (IP_SHM_ADDR + (1ull << 32))    /* the runtime's region ends */
#define IP_MAGIC_OFF 0x5ec000000000ull	 /* mmap offset of the runtime's own maps */
#define IP_TRAP_DATA 0x5ec		 /* SECCOMP_RET_DATA of the filter's traps */
#define IP_IMAGE_MAGIC 0x636572706e69766dull /* "mvinprec" */
#define IP_VERSION 4

/* The image header, at IP_BASE (section .ip_header). */
struct ip_image {
	uint64_t magic;	   /* IP_IMAGE_MAGIC */
	uint32_t version;  /* IP_VERSION */
	uint32_t size;	   /* sizeof(struct ip_image) */
	uint64_t gate_ip;  /* the address right after the allowed syscall */
	uint64_t clone_ip; /* ... and after the one that clones */
	uint64_t gate;	   /* long gate(nr, a0..a5): a call from gate_ip */
	uint64_t init;	   /* long init(struct ip_params *): at an exec stop */
	uint64_t trap_ret; /* an int3, the return address of init */
	uint64_t params;   /* struct ip_params, in the image's data */
};

/* Flags of ip_params */
#define IP_F_RESIDENT 0x1u /* --touch=resident: scan before discarding calls */
#define IP_F_NOPATCH 0x2u  /* never patch call sites (every call a signal) */
#define IP_F_CODE 0x4u	   /* vmrec reads faulting instructions: a process's
			      last thread asks before its memory goes */

#define IP_MAX_NR 512

/* The lowest descriptor a runtime keeps the shared file open at, for the
 * images after the next exec (IP_KEEP_FD: no lower than this). */
#define IP_KEEP_FD 1000

/* What vmrec tells an image's runtime at its exec stop. */
struct ip_params {
	uint64_t magic;	       /* IP_IMAGE_MAGIC */
	int32_t vmrec_pid;     /* the shared file is /proc/PID/fd/FD of vmrec */
	int32_t shm_fd;
	/* The process's own descriptor of the shared file, that a runtime of
	 * an image before kept open across the exec (-1: none): a process
	 * that changed its user may no longer open vmrec's. */
	int32_t shm_kept;
	uint32_t pad;
	uint64_t shm_size;     /* bytes mapped at IP_SHM_ADDR */
	uint64_t vdso;	       /* AT_SYSINFO_EHDR of the image, 0 if none */
	uint32_t flags;	       /* IP_F_* */
	uint32_t page_size;
	uint8_t op_of_nr[IP_MAX_NR]; /* recorded calls: nr -> vmt op, 0 none */
};

/* ---- the shared file -------------------------------------------------- */

#define IP_SHM_MAGIC 0x6d6873706e69766dull /* "mvinpshm" */
#define IP_HDR_SIZE 4096u
#define IP_SLOT_HDR 4096u	    /* a slot's header page, before its ring */
#define IP_RING_SIZE (256u << 10) /* a thread's ring, a power of two */
#define IP_SLOT_SIZE (IP_SLOT_HDR + IP_RING_SIZE)
#define IP_NSLOTS 1024u
#define IP_SHM_SIZE ((uint64_t)IP_HDR_SIZE + (uint64_t)IP_NSLOTS * IP_SLOT_SIZE)

/* The shared file's header (its first page). */
struct ip_shared {
	uint64_t magic;
	uint32_t nslots, slot_size, ring_size;
	uint32_t doorbell;  /* futex: bumped (and woken) when vmrec is wanted */
	uint32_t sleeping;  /* vmrec waits on the doorbell */
	uint32_t dead;	    /* vmrec is gone: every call kills its process */
	uint64_t lost;	    /* records no ring could take (no free slot) */
	/* Bit i: slot i is claimed (set by its thread right after the claim,
	 * before the ring's first record; cleared by vmrec right before it
	 * frees the slot), so that vmrec reads only the slots in use, not
	 * a page of each of the 1024. */
	uint64_t used[IP_NSLOTS / 64];
};

/* The next used slot at or after i (IP_NSLOTS: none). */
static inline uint32_t ip_next_used(const struct ip_shared *h, uint32_t i)
{
	while (i < IP_NSLOTS) {
		uint64_t w = __atomic_load_n(&h->used[i / 64], __ATOMIC_ACQUIRE) >> (i % 64);
		if (w)
			return i + (uint32_t)__builtin_ctzll(w);
		i = (i | 63u) + 1;
	}
	return IP_NSLOTS;
}

/* Slot states */
enum { IP_SLOT_FREE = 0, IP_SLOT_LIVE = 1, IP_SLOT_DONE = 2 };

/* A slot: one thread's ring.  The thread claims a free slot (FREE ->
 * LIVE, then its tid and pid: 0 in a FREE slot), writes records and, at
 * its exit, makes it DONE; vmrec drains it and frees it (DONE -> FREE, or
 * LIVE -> FREE once the thread is known to be gone).  The fields written by the thread and by vmrec are on
 * separate cache lines. */
struct ip_slot {
	/* the thread's */
	uint32_t state;
	int32_t tid, pid;
	uint32_t gen;	 /* bumped at each claim */
	uint64_t resv;	 /* bytes reserved so far (the ring's head) */
	uint64_t busy;	 /* 0: no call in progress; 1: one is starting;
			    else the entry time of the call in progress */
	uint64_t lost;	 /* records dropped (a nested writer met a full ring) */
	uint32_t waiting; /* the thread waits for room (futex on space) */
	uint32_t kicked;  /* the thread has rung the doorbell for this ring */
	uint32_t reply;	  /* futex: vmrec's answer to a request */
	uint32_t pad0;
	uint8_t pad1[64 - 56];
	/* vmrec's */
	uint64_t tail;	  /* bytes consumed (zeroed again) */
	uint32_t space;	  /* futex: bumped when tail moves */
	uint32_t pad2;
	uint8_t pad3[256 - 80];
};
_Static_assert(sizeof(struct ip_slot) == 256, "slot header");

static inline struct ip_slot *ip_slot_at(void *shm, uint32_t i)
{
	return (struct ip_slot *)((char *)shm + IP_HDR_SIZE + (uint64_t)i * IP_SLOT_SIZE);
}

static inline unsigned char *ip_ring_of(struct ip_slot *s)
{
	return (unsigned char *)s + IP_SLOT_HDR;
}

/* ---- records --------------------------------------------------------- */

/* Every record starts with this header, written last: word 0 means "not
 * committed yet".  Records are 8-byte aligned and never wrap: a PAD
 * record fills the end of the ring. */
struct ip_rec {
	uint32_t word; /* (length in 8-byte units) << 8 | kind */
	uint32_t aux;  /* kind-specific */
	uint64_t t;    /* time (CLOCK_MONOTONIC ns): entry time for calls */
};
#define IP_REC_WORD(kind, len) ((uint32_t)(((len) / 8u) << 8) | (uint32_t)(kind))
#define IP_REC_KIND(w) ((w)&0xffu)
#define IP_REC_LEN(w) (((w) >> 8) * 8u)

enum ip_kind {
	IPR_PAD = 1,
	IPR_START,  /* the ring's first record: struct ip_start */
	IPR_CALL,   /* a recorded call: struct ip_call (+ struct ip_file) */
	IPR_CLONE,  /* a task was created: struct ip_clone */
	IPR_EXIT,   /* exit or exit_group: struct ip_exit */
	IPR_EXEC,   /* request: this thread is about to exec (aux: 0), or its
		       exec failed (aux: 1, then .t2 the error) */
	IPR_TOUCH,  /* present pages before a call: struct ip_touch + runs */
	IPR_OWN,    /* the runtime mapped [a, b) for itself: struct ip_own */
	IPR_NOTE,   /* something the user should know: text follows */
	IPR_LOST,   /* records the thread could not write: aux count */
	IPR_REAP,   /* the thread reaped a child: struct ip_exit, aux its pid,
		       status its wait status */
	IPR_ENDING, /* request: this thread is about to end its process's
		       other threads (exit_group): vmrec reads their counters
		       first (struct ip_exit, no counters) */
};

/* How a ring's thread began (ip_start.how) */
enum { IP_HOW_EXEC = 1, IP_HOW_THREAD, IP_HOW_FORK, IP_HOW_VFORK };

struct ip_start {
	struct ip_rec h;
	int32_t tid, pid;
	int32_t parent_tid; /* the creator, 0 for IP_HOW_EXEC */
	uint32_t how;
};

#define IPC_FILE 0x1u /* an ip_file follows */
#define IPC_NO_RESULT 0x2u

struct ip_call {
	struct ip_rec h; /* h.aux: the syscall number; h.t: entry */
	uint64_t args[6];
	int64_t ret;
	uint64_t t_exit;
	uint32_t flags; /* IPC_* */
	uint32_t pad;
};

struct ip_file {
	uint64_t dev, ino, size;
	uint32_t mode, open_flags;
	uint32_t pathlen; /* bytes of path that follow, NUL included, padded to 8 */
	uint32_t pad;
};

struct ip_clone {
	struct ip_rec h; /* h.aux: the syscall number; h.t: entry */
	uint64_t flags;	 /* clone flags (fork: SIGCHLD, vfork: CLONE_VM|CLONE_VFORK) */
	int64_t ret;	 /* the child's tid or -errno */
	uint64_t t_exit;
};

/* The kernel's counters of a thread or a process, as getrusage(2)
 * gives them (the times in ns). */
struct ip_counters {
	uint64_t minflt, majflt, nvcsw, nivcsw, utime_ns, stime_ns;
};

/* ip_exit.have */
#define IPE_THREAD 0x1u	 /* .thread: the thread's own, read right before its exit */
#define IPE_PROCESS 0x2u /* .proc: the process's, read right before its end */

struct ip_exit {
	struct ip_rec h; /* h.aux: 1 for exit_group */
	int32_t status;
	uint32_t have; /* IPE_*: which counters follow (IPR_EXIT only) */
	struct ip_counters thread, proc;
};

struct ip_touch {
	struct ip_rec h; /* h.aux: number of runs */
	uint64_t start;	 /* address of the first page */
	uint32_t reason; /* VMT_TOUCH_* */
	uint32_t pad;
	/* then aux x { uint32_t pages, state } */
};

struct ip_own {
	struct ip_rec h;
	uint64_t start, end;
};

#endif /* VMREC_IPSHM_H */
