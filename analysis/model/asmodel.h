/*
 * asmodel.h - a model of the address spaces of the recorded processes.
 *
 * Feed every event of a trace, in order, to van_asmodel_apply(); at any
 * point the model can say, per process, which VMAs exist (ranges,
 * protection, flags, file identity) and how many VMAs, mapped bytes and
 * locked bytes there are.  It splits and merges VMAs the way the Linux
 * kernel does (see asmodel.c for the rules and where it approximates):
 * two adjacent VMAs merge when their flags (including the accounting flag
 * VM_ACCOUNT, which mprotect only ever adds), protection key and backing
 * are equal, their page offsets are contiguous and their anon_vma
 * identities are compatible (equal, or one of them has none yet).
 *
 * Sources of truth, in order: a MAPS snapshot replaces the process's VMAs;
 * EXEC empties the process; PROCESS_START copies the parent (fork/clone)
 * or shares its space (vfork, until the child's EXEC); PROCESS_EXIT drops
 * it; successful SYSCALL events change it; failed ones (result < 0, or no
 * result) change nothing.  MAP_FILE events give the identity of the file
 * of the next mmap/shmat of the same thread; TOUCH (present pages) and
 * FAULT (writes) events tell which anonymous VMAs have pages, which
 * decides whether they can merge later.
 *
 * Conventions as in vmtrace.h: functions return 0 or -errno, never print.
 * Pointers returned by queries stay valid until the next apply or free.
 */
#ifndef VAN_ASMODEL_H
#define VAN_ASMODEL_H

#include <stdint.h>
#include "vmtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* VMA flags (the model's own bits, not the kernel's VM_* values). */
#define VAN_VMA_SHARED	    0x00001u /* MAP_SHARED (or a SysV segment) */
#define VAN_VMA_FILE	    0x00002u /* backed by a file (incl. shmem of a
					 shared anonymous mapping) */
#define VAN_VMA_LOCKED	    0x00004u /* VM_LOCKED: mlock, MAP_LOCKED, MCL_* */
#define VAN_VMA_LOCKONFAULT 0x00008u /* MLOCK_ONFAULT / MCL_ONFAULT */
#define VAN_VMA_GROWSDOWN   0x00010u /* MAP_GROWSDOWN, [stack] */
#define VAN_VMA_DONTFORK    0x00020u /* MADV_DONTFORK */
#define VAN_VMA_WIPEONFORK  0x00040u /* MADV_WIPEONFORK */
#define VAN_VMA_DONTDUMP    0x00080u /* MADV_DONTDUMP */
#define VAN_VMA_HUGEPAGE    0x00100u /* MADV_HUGEPAGE */
#define VAN_VMA_NOHUGEPAGE  0x00200u /* MADV_NOHUGEPAGE */
#define VAN_VMA_MERGEABLE   0x00400u /* MADV_MERGEABLE (KSM) */
#define VAN_VMA_SEQ_READ    0x00800u /* MADV_SEQUENTIAL */
#define VAN_VMA_RAND_READ   0x01000u /* MADV_RANDOM */
#define VAN_VMA_SEALED	    0x02000u /* mseal */
#define VAN_VMA_NORESERVE   0x04000u /* MAP_NORESERVE */
#define VAN_VMA_ACCOUNT	    0x08000u /* VM_ACCOUNT: private writable memory
					 charged to the commit limit */
#define VAN_VMA_HUGETLB	    0x10000u /* MAP_HUGETLB / SHM_HUGETLB */
#define VAN_VMA_SPECIAL	    0x20000u /* [vdso], [vvar], ...: never merges,
					 never locked */
#define VAN_VMA_HEAP	    0x40000u /* the brk heap */
#define VAN_VMA_SYSV	    0x80000u /* a SysV shared memory attachment */
#define VAN_VMA_SNAPSHOT   0x100000u /* came from a MAPS snapshot: flags
					 beyond prot/shared/file unknown */

struct van_vma {
	uint64_t start, end; /* [start, end), page aligned */
	uint32_t prot;	     /* VMT_PROT_R|W|X */
	uint32_t flags;	     /* VAN_VMA_* */
	int32_t pkey;	     /* protection key (0 by default) */
	/* File mappings: byte offset in the file of `start`.  Anonymous
	 * mappings: the kernel's linear page offset (start address at
	 * creation) in bytes, which decides merging after mremap moves. */
	uint64_t offset;
	uint64_t dev, ino;   /* file identity (0 when anonymous/unknown) */
	const char *path;    /* file path, "[heap]", "[stack]", "" ... */
	uint64_t anon;	     /* anon_vma identity: 0 = no anonymous pages
				yet; equal ids share one anon_vma */
};

typedef struct van_asmodel van_asmodel;

/* A new model for traces with pages of page_size bytes (0: 4096).
 * Returns NULL on allocation failure. */
van_asmodel *van_asmodel_new(uint32_t page_size);
void van_asmodel_free(van_asmodel *m);

/* Tell the model whether the recording kernel mapped the zero page on a
 * first read of private anonymous memory (vmt_header_zero_page; the
 * default is 1).  With 0, such a read (a read fault, or a TOUCH page
 * reported read) gives the VMA its anon_vma as a write does, which
 * changes what later merges with it. */
void van_asmodel_set_zero_page(van_asmodel *m, int maps_zero_page);

/* A model for the trace with header h: its page size (4096 when h is NULL
 * or its page size is not a power of two) and its kernel's zero page.
 * Returns NULL on allocation failure. */
van_asmodel *van_asmodel_for(const struct vmt_header *h);

/* Apply one event (any kind; kinds that do not change address spaces are
 * ignored).  Returns 0, or -ENOMEM (the model is then unreliable). */
int van_asmodel_apply(van_asmodel *m, const struct vmt_event *ev);

struct van_as_counts {
	uint64_t vmas;
	uint64_t mapped_bytes;
	uint64_t locked_bytes; /* bytes of VMAs with VAN_VMA_LOCKED */
};

/* Counts of process `proc` now (zeros for an unknown or exited process;
 * a vfork child reports the space it shares with its parent). */
void van_asmodel_counts(const van_asmodel *m, uint32_t proc,
			struct van_as_counts *c);

/* Sums over all live address spaces (a space shared by vfork counts
 * once). */
void van_asmodel_totals(const van_asmodel *m, struct van_as_counts *c);

/* 1 if process `proc` has a live address space in the model. */
int van_asmodel_alive(const van_asmodel *m, uint32_t proc);

/* Iteration in address order: the first VMA of `proc` that ends above
 * addr (van_asmodel_first(m, p, 0) is the lowest VMA), then the one after
 * v.  NULL at the end or for an unknown process. */
const struct van_vma *van_asmodel_first(const van_asmodel *m, uint32_t proc,
					uint64_t addr);
const struct van_vma *van_asmodel_next(const van_asmodel *m, uint32_t proc,
				       const struct van_vma *v);
/* The VMA of `proc` that contains addr, or NULL. */
const struct van_vma *van_asmodel_lookup(const van_asmodel *m, uint32_t proc,
					 uint64_t addr);

/* What the last van_asmodel_apply() did. */
struct van_as_effect {
	int changed;	   /* 1 if a VMA of the event's process was added, removed
			    * or modified */
	uint64_t start, end; /* the range the event addressed (page aligned) */
	int64_t d_vmas;	   /* change of the VMA count of that process */
	int64_t d_mapped;  /* change of its mapped bytes */
	int64_t d_locked;  /* change of its locked bytes */
	uint32_t merges;   /* VMA merges the event caused */
	uint32_t splits;   /* VMA splits the event caused */
	int inexact;	   /* 1 if the model had to guess (see below) */
};
const struct van_as_effect *van_asmodel_last(const van_asmodel *m);

/* Number of events applied so far that the model could only approximate
 * (a shmat without its MAP_FILE size, a syscall on a process that has no
 * snapshot, a range the model did not know was mapped, ...). */
uint64_t van_asmodel_inexact(const van_asmodel *m);

#ifdef __cplusplus
}
#endif
#endif /* VAN_ASMODEL_H */
