/*
 * asmodel_int.h - internals shared by asmodel.c (the VMA tree, spaces,
 * splitting and merging) and asmodel_ops.c (what each event does).
 */
#ifndef VAN_ASMODEL_INT_H
#define VAN_ASMODEL_INT_H

#include "asmodel.h"

/* The anon_vma of a forked child's VMA is chained to its parent's: the
 * kernel then refuses to share it with, or merge it into, a neighbour that
 * has no anon_vma yet (vma_had_uncowed_parents()).  Kept in vma.anon. */
#define ANON_FORKED (1ull << 63)

/* Flags that are not VMA state in the kernel (or not known for a
 * snapshot) and so do not block a merge. */
#define VMA_NOCMP (VAN_VMA_SNAPSHOT | VAN_VMA_HEAP)

/* Lookup hints per space: more than one made seed 000's two threads,
 * which work at two places, cost more instructions, not fewer. */
#define AM_HINTS 1

/* A space keeps its VMAs in a list, and indexes them in the treap once it
 * has more than this many: below, a lookup that the hint does not answer
 * walks the list from the hint, which costs less than keeping a tree
 * (old-style traces split and merge a VMA per call). */
#define AM_INDEX_AT 32

/* A treap node keyed by vma.start (when the space is indexed: see
 * AM_INDEX_AT); the VMAs of a space never overlap, so changing a node's
 * start or end in place keeps the order valid.  The nodes are also linked
 * in address order: the neighbours that splitting, merging and walking a
 * range want cost no descent. */
struct node {
	struct van_vma v; /* first: a van_vma pointer is a node pointer */
	struct node *l, *r, *up;
	struct node *prev, *next;
	uint32_t prio;
};

struct space {
	struct node *root; /* the treap, when indexed */
	struct node *last; /* the highest VMA */
	int indexed;	   /* had more than AM_INDEX_AT VMAs since its last
			      snapshot or exec */
	/* Where the last lookups landed, the latest first: calls come in
	 * pairs at one place (mprotect then mmap(MAP_FIXED) over it), and
	 * each call looks up its range, splits and merges there, so the next
	 * lookup is mostly one of these nodes or its neighbour
	 * (van_am_first). */
	struct node *hint[AM_HINTS];
	struct van_as_counts c;
	uint32_t refs;	    /* processes using it (vfork shares) */
	uint32_t def_lock;  /* VAN_VMA_LOCKED|LOCKONFAULT of mlockall(MCL_FUTURE) */
	uint64_t brk_start; /* 0: unknown */
	uint64_t brk_cur;
	int known;	    /* had a snapshot or a parent to copy */
};

struct pending_file { /* the MAP_FILE event waiting for its syscall */
	int valid;
	uint64_t dev, ino, size;
	const char *path; /* interned */
};

struct van_asmodel {
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
	struct van_as_counts tot;
	struct van_as_effect last;
	uint64_t inexact;
	int oom;
	int no_zero_page; /* a first read allocates (van_asmodel_set_zero_page) */
};

static inline uint64_t pg_up(const struct van_asmodel *m, uint64_t x)
{
	return (x + m->pmask) & ~m->pmask;
}
static inline uint64_t pg_down(const struct van_asmodel *m, uint64_t x)
{
	return x & ~m->pmask;
}

/* asmodel.c: primitives on a space.  Functions that allocate set m->oom
 * on failure and leave the space consistent. */
const char *van_am_intern(struct van_asmodel *m, const char *s);
struct space *van_am_space(struct van_asmodel *m, uint32_t proc, int create);
struct space *van_am_new_space(struct van_asmodel *m);
void van_am_set_space(struct van_asmodel *m, uint32_t proc, struct space *sp);
void van_am_drop_space(struct van_asmodel *m, struct space *sp);
void van_am_clear_space(struct van_asmodel *m, struct space *sp);
struct node *van_am_first(const struct space *sp, uint64_t addr); /* end > addr */
struct node *van_am_next(const struct space *sp, const struct node *n);
struct node *van_am_insert(struct van_asmodel *m, struct space *sp, const struct van_vma *v);
void van_am_remove(struct van_asmodel *m, struct space *sp, struct node *n);
void van_am_split(struct van_asmodel *m, struct space *sp, uint64_t addr);
/* Split n, which straddles addr, there; returns the upper half, the node
 * after n (NULL when out of memory). */
struct node *van_am_split_node(struct van_asmodel *m, struct space *sp, struct node *n,
			       uint64_t addr);
/* Remove [a, b); returns the bytes that were mapped there. */
uint64_t van_am_unmap(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b);
/* Unmap [v->start, v->end) and insert v there; *was gets the bytes that
 * were mapped there.  NULL when out of memory. */
struct node *van_am_map(struct van_asmodel *m, struct space *sp, const struct van_vma *v,
			uint64_t *was);
/* Bytes of [a, b) that are mapped. */
uint64_t van_am_mapped_in(const struct space *sp, uint64_t a, uint64_t b);
/* Change n's attributes (prot/flags/pkey/anon) keeping the counts right:
 * call before changing them (sign -1) and after (sign +1).  Inline: it
 * runs several times per call, with a constant sign. */
static inline void van_am_account(struct van_asmodel *m, struct space *sp,
				  const struct van_vma *v, int sign)
{
	uint64_t len = v->end - v->start;
	uint64_t locked = (v->flags & VAN_VMA_LOCKED) ? len : 0;
	if (sign > 0) {
		sp->c.vmas++, sp->c.mapped_bytes += len, sp->c.locked_bytes += locked;
		m->tot.vmas++, m->tot.mapped_bytes += len, m->tot.locked_bytes += locked;
	} else {
		sp->c.vmas--, sp->c.mapped_bytes -= len, sp->c.locked_bytes -= locked;
		m->tot.vmas--, m->tot.mapped_bytes -= len, m->tot.locked_bytes -= locked;
	}
}
/* Merge compatible neighbours from the VMA ending at a to the one starting
 * at b. */
void van_am_merge_window(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b);
/* The same for a window that is exactly the VMA n (no lookup): merge it
 * with its neighbours where compatible; returns the VMA now holding n's
 * range. */
struct node *van_am_merge_around(struct van_asmodel *m, struct space *sp, struct node *n);
/* Give the private VMAs within [a, b) an anon_vma if they have none (a
 * write fault or a populate): a compatible neighbour's, else a new one. */
void van_am_give_anon(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b);
/* The same for the one VMA n. */
void van_am_give_anon_node(struct van_asmodel *m, struct node *n);
uint64_t van_am_new_anon(struct van_asmodel *m);

/* asmodel_ops.c */
void van_am_syscall(struct van_asmodel *m, const struct vmt_event *ev);
void van_am_maps(struct van_asmodel *m, const struct vmt_event *ev);

#endif
