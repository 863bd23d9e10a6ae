/*
 * arena.c - the loader's shared memory (arena_int.h): one NORESERVE shared
 * mapping, its tables, and a pool of power-of-two blocks with a free list
 * per size.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "arena_int.h"

/* The pool's address space. */
#define ARENA_POOL (64ull << 30)

static size_t up64(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

struct rp_arena *rp_arena_new(void)
{
	size_t head = up64(sizeof(struct rp_arena));
	size_t o_thr = head, o_proc = o_thr + up64(RP_TCAP * sizeof(struct rp_tsh));
	size_t o_file = o_proc + up64(RP_PCAP * sizeof(uint32_t));
	size_t o_pool = o_file + up64((size_t)RP_FCAP * sizeof(struct rp_fsh));
	const int fl = MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE;
	void *p = MAP_FAILED;
	/* Smaller where the machine refuses a large one (overcommit 2); at
	 * the hint, or beyond it where another trace's arena is (--compare),
	 * else where the kernel likes. */
	for (size_t pool = ARENA_POOL; p == MAP_FAILED && pool >= (64ull << 20); pool /= 4) {
		for (unsigned k = 0; k <= 8 && p == MAP_FAILED; k++)
			p = mmap((void *)(RP_HINT_ARENA + k * (ARENA_POOL + (1ull << 30))),
				 o_pool + pool, PROT_READ | PROT_WRITE,
				 fl | (k < 8 ? MAP_FIXED_NOREPLACE : 0), -1, 0);
		if (p != MAP_FAILED) {
			struct rp_arena *a = p;
			a->size = o_pool + pool;
		}
	}
	if (p == MAP_FAILED)
		return NULL;
	struct rp_arena *a = p;
	a->shared = 1;
	a->pid = (int32_t)getpid();
	a->pool0 = o_pool;
	a->bump = o_pool;
	a->threads = (struct rp_tsh *)((char *)p + o_thr);
	a->proc_rec = (uint32_t *)((char *)p + o_proc);
	a->files = (struct rp_fsh *)((char *)p + o_file);
	return a;
}

/* Copy [from, from + len) of the arena at src to the same offset of dst,
 * a piece at a time; release: give each piece's shared pages back once
 * copied, so that a large trace is never in memory twice.  undo: copy
 * back (the copy could not take the arena's place). */
#define PRIV_PIECE (16ull << 20)
static void copy_part(char *dst, const char *src, const void *from, size_t len, int release,
		      int undo)
{
	size_t off = (size_t)((const char *)from - src);
	for (size_t done = 0; done < len; done += PRIV_PIECE) {
		size_t n = len - done < PRIV_PIECE ? len - done : PRIV_PIECE;
		if (undo) {
			memcpy((char *)from + done, dst + off + done, n);
			continue;
		}
		memcpy(dst + off + done, (const char *)from + done, n);
		/* (whole pages only: a table's last page holds the next's
		 * start) */
		uintptr_t a = ((uintptr_t)from + done + 4095) & ~(uintptr_t)4095;
		uintptr_t b = ((uintptr_t)from + done + n) & ~(uintptr_t)4095;
		if (release && b > a)
			madvise((void *)a, b - a, MADV_REMOVE);
	}
}

int rp_arena_privatize(struct rp_arena *a, uint32_t nthreads, uint32_t nprocs, uint32_t nfiles)
{
	size_t len = up64(a->bump);
	char *src = (char *)a;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* only what is used: the rest stays unallocated; the pool, most of
	 * it, given back as it is copied */
	copy_part(p, src, a, sizeof(*a), 0, 0);
	copy_part(p, src, a->threads, (size_t)nthreads * sizeof(*a->threads), 0, 0);
	copy_part(p, src, a->proc_rec, (size_t)nprocs * sizeof(*a->proc_rec), 0, 0);
	copy_part(p, src, a->files, (size_t)nfiles * sizeof(*a->files), 0, 0);
	copy_part(p, src, src + a->pool0, a->bump - a->pool0, 1, 0);
	((struct rp_arena *)p)->shared = 0;
	if (mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, a) == MAP_FAILED) {
		int err = -errno;
		/* the arena stays shared, with what it held */
		copy_part(p, src, src + a->pool0, a->bump - a->pool0, 0, 1);
		munmap(p, len);
		return err;
	}
	return 0;
}

void rp_arena_free(struct rp_arena *a)
{
	if (a)
		munmap(a, a->size);
}

struct rp_blk *rp_blk_alloc(struct rp_arena *a, size_t bytes)
{
	uint32_t cls = RP_BLK_FIRST_SHIFT;
	while (cls < RP_BLK_CLASSES - 1 && ((size_t)1 << cls) < bytes)
		cls++;
	if (((size_t)1 << cls) < bytes)
		return NULL;
	struct rp_blk *b = a->free_cls[cls];
	if (b) {
		a->free_cls[cls] = b->next;
	} else {
		size_t sz = (size_t)1 << cls;
		if (a->bump + sz > a->size) {
			errno = ENOMEM;
			return NULL;
		}
		b = (struct rp_blk *)((char *)a + a->bump);
		a->bump += sz;
	}
	memset(b, 0, sizeof(*b));
	b->cls = cls;
	b->aux_low = (uint32_t)(((size_t)1 << cls) > UINT32_MAX ? UINT32_MAX : ((size_t)1 << cls));
	a->in_use += (size_t)1 << cls;
	if (a->in_use > a->peak_use)
		a->peak_use = a->in_use;
	return b;
}

void rp_blk_free(struct rp_arena *a, struct rp_blk *b)
{
	a->in_use -= rp_blk_size(b);
	b->next = a->free_cls[b->cls];
	a->free_cls[b->cls] = b;
}
