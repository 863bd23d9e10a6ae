/*
 * asmodel_int.h - internals shared by asmodel.c (the VMA tree, spaces,
 * splitting and merging) and asmodel_ops.c (what each event does).
 */
#ifndef VMT_ASMODEL_INT_H
#define VMT_ASMODEL_INT_H

#include "asmodel.h"

/* The anon_vma of a forked child's VMA is chained to its parent's: the
 * kernel then refuses to share it with, or merge it into, a neighbour that
 * has no anon_vma yet (vma_had_uncowed_parents()).  Kept in vma.anon. */
#define ANON_FORKED (1ull << 63)

/* Flags that are not VMA state in the kernel (or not known for a
 * snapshot) and so do not block a merge. */
#define VMA_NOCMP (VMT_VMA_SNAPSHOT | VMT_VMA_HEAP)

/* A treap node keyed by vma.start; the VMAs of a space never overlap, so
 * changing a node's start or end in place keeps the order valid. */
struct node {
	struct vmt_vma v; /* first: a vmt_vma pointer is a node pointer */
	struct node *l, *r;
	uint32_t prio;
};

struct space {
	struct node *root;
	struct vmt_as_counts c;
	uint32_t refs;	    /* processes using it (vfork shares) */
	uint32_t def_lock;  /* VMT_VMA_LOCKED|LOCKONFAULT of mlockall(MCL_FUTURE) */
	uint64_t brk_start; /* 0: unknown */
	uint64_t brk_cur;
	int known;	    /* had a snapshot or a parent to copy */
};

struct pending_file { /* the MAP_FILE event waiting for its syscall */
	int valid;
	uint64_t dev, ino, size;
	const char *path; /* interned */
};

struct vmt_asmodel {
	uint64_t page, pmask; /* page size, page_size - 1 */
	struct space **procs;
	uint32_t nprocs, cap_procs;
	struct pending_file *pend;
	size_t cap_pend;
	struct node *free_nodes;
	uint64_t rng;
	uint64_t next_anon, next_ino;
	char **strs; /* interned strings: open addressing */
	uint32_t nstrs, cap_strs;
	struct vmt_as_counts tot;
	struct vmt_as_effect last;
	uint64_t inexact;
	int oom;
	int no_zero_page; /* a first read allocates (vmt_asmodel_set_zero_page) */
};

static inline uint64_t pg_up(const struct vmt_asmodel *m, uint64_t x)
{
	return (x + m->pmask) & ~m->pmask;
}
static inline uint64_t pg_down(const struct vmt_asmodel *m, uint64_t x)
{
	return x & ~m->pmask;
}

/* asmodel.c: primitives on a space.  Functions that allocate set m->oom
 * on failure and leave the space consistent. */
const char *vmt_am_intern(struct vmt_asmodel *m, const char *s);
struct space *vmt_am_space(struct vmt_asmodel *m, uint32_t proc, int create);
struct space *vmt_am_new_space(struct vmt_asmodel *m);
void vmt_am_set_space(struct vmt_asmodel *m, uint32_t proc, struct space *sp);
void vmt_am_drop_space(struct vmt_asmodel *m, struct space *sp);
void vmt_am_clear_space(struct vmt_asmodel *m, struct space *sp);
struct node *vmt_am_first(const struct space *sp, uint64_t addr); /* end > addr */
struct node *vmt_am_next(const struct space *sp, const struct node *n);
struct node *vmt_am_insert(struct vmt_asmodel *m, struct space *sp, const struct vmt_vma *v);
void vmt_am_remove(struct vmt_asmodel *m, struct space *sp, struct node *n);
void vmt_am_split(struct vmt_asmodel *m, struct space *sp, uint64_t addr);
/* Remove [a, b); returns the bytes that were mapped there. */
uint64_t vmt_am_unmap(struct vmt_asmodel *m, struct space *sp, uint64_t a, uint64_t b);
/* Bytes of [a, b) that are mapped. */
uint64_t vmt_am_mapped_in(const struct space *sp, uint64_t a, uint64_t b);
/* Change n's attributes (prot/flags/pkey/anon) keeping the counts right:
 * call before changing them (sign -1) and after (sign +1). */
void vmt_am_account(struct vmt_asmodel *m, struct space *sp, const struct vmt_vma *v, int sign);
/* Merge compatible neighbours from the VMA ending at a to the one starting
 * at b. */
void vmt_am_merge_window(struct vmt_asmodel *m, struct space *sp, uint64_t a, uint64_t b);
/* Give the private VMAs within [a, b) an anon_vma if they have none (a
 * write fault or a populate): a compatible neighbour's, else a new one. */
void vmt_am_give_anon(struct vmt_asmodel *m, struct space *sp, uint64_t a, uint64_t b);
uint64_t vmt_am_new_anon(struct vmt_asmodel *m);

/* asmodel_ops.c */
void vmt_am_syscall(struct vmt_asmodel *m, const struct vmt_event *ev);
void vmt_am_maps(struct vmt_asmodel *m, const struct vmt_event *ev);

#endif
