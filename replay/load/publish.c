/*
 * publish.c - the loaded elements into their thread's stream (arena_int.h),
 * and publication: handing them to the replay.
 *
 * An element is published (the replay may execute it) once the loader
 * has stored LD_LOOKAHEAD elements after it, oldest first, so that what
 * later elements decide about it is still in it: that another thread
 * waits for it (RF_POST), that it is where its process had the most
 * mappings so far (RF_SAMPLE_VMAS).  A wait found for an element already
 * published is marked late (RP_DEP_LATE): the element does not post, and
 * the waiter polls.  What the replay loop reads inline (RF_PIECE1 ...),
 * an exec's frozen plan and a new region's recorded start are set as an
 * element is published.  Publication is in trace order, so every element
 * a published one waits for is published too.
 *
 * While a run goes on, memory is bounded by the trace's window: a thread
 * gets a new block beyond it only while it holds fewer than two, after
 * the blocks every copy of every replay thread has passed are freed; and
 * when the replay has executed everything published, the look-ahead is
 * shortened rather than waited on (no deadlock: the replay then has
 * work again).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "load_int.h"

#define LD_FLUSH 256u	  /* elements published between stores of the counts */
/* Elements published, all threads, between wakes of replay threads that
 * wait for the load, unless the load is about to stop (its window full,
 * or the trace's end): a thread woken for every store of the counts
 * would take the CPU back from the load after a few of its elements,
 * wait again, and so on, in as many switches. */
#define LD_WAKE_BATCH 8192u

void ld_stream_init(struct loader *L, uint32_t tid)
{
	struct rp_tsh *s = &L->t->arena->threads[tid];
	memset(s, 0, sizeof(*s));
	s->proc = L->t->threads[tid].proc;
	s->rec = L->t->threads[tid].rec;
}

static int flush(struct loader *L, int wake);
static int publish(struct loader *L, uint32_t keep);

/* ---- freeing what the replay has passed -------------------------------- */

static void free_block(struct loader *L, struct rp_blk *b)
{
	struct rp_arena *a = L->t->arena;
	for (struct rp_blk *x = b->extra, *nx; x; x = nx) {
		nx = x->next;
		rp_blk_free(a, x);
	}
	rp_blk_free(a, b);
}

/* Free the blocks of every thread that all copies of its replay thread
 * have left (one element of the next block completed, or the whole
 * stream). */
static void reclaim(struct loader *L)
{
	rp_trace *t = L->t;
	for (uint32_t tid = 0; tid < t->nthreads; tid++) {
		struct lthread *lt = &L->lt[tid];
		struct rp_tsh *s = &t->arena->threads[tid];
		if (!s->head)
			continue;
		uint32_t d = L->done(L->hook_arg, tid);
		struct rp_blk *b = s->head;
		while (b && b != lt->pubblk && b->next && d > b->next->first) {
			struct rp_blk *nx = b->next;
			free_block(L, b);
			lt->bix0++;
			b = nx;
		}
		if (b && t->threads[tid].ended && lt->pub == t->threads[tid].nelem &&
		    d >= t->threads[tid].nelem) {
			/* the stream is over */
			while (b) {
				struct rp_blk *nx = b->next;
				free_block(L, b);
				b = nx;
			}
			lt->tail = lt->pubblk = NULL;
			lt->nbix = lt->bix0 = 0;
		}
		s->head = b;
	}
}

/* Has the replay executed everything published? */
static int replay_idle(struct loader *L)
{
	rp_trace *t = L->t;
	for (uint32_t tid = 0; tid < t->nthreads; tid++)
		if (L->lt[tid].pub && L->done(L->hook_arg, tid) < L->lt[tid].pub)
			return 0;
	return 1;
}

/* Room for a block of `size` bytes for thread tid, within the window
 * (a run's load only). */
static int make_room(struct loader *L, uint32_t tid, size_t size)
{
	struct rp_arena *a = L->t->arena;
	int rc;
	if (!L->done || L->lt[tid].nbix - L->lt[tid].bix0 < 2)
		return 0;
	while (a->in_use + size > L->t->window) {
		if ((rc = flush(L, 1)) < 0)
			return rc;
		reclaim(L);
		if (a->in_use + size <= L->t->window)
			break;
		if (replay_idle(L)) {
			/* (the newest stays: an exec's plan may still be
			 * coming, with the snapshot after it) */
			uint32_t n = L->fifo_n;
			if (n <= 1)
				break;
			if ((rc = ld_publish(L, n / 2)) < 0)
				return rc;
			if (L->fifo_n == n)
				break; /* an exec waits for its snapshot: go beyond */
			continue;
		}
		if ((rc = L->wait(L->hook_arg, 1)) < 0)
			return ld_fail(L, rc, "the replay ended");
	}
	return 0;
}

/* ---- storing ----------------------------------------------------------- */

/* The arena's reserve is used up: the machine's memory or an address-space
 * limit made it smaller than a trace of this size needs. */
static int no_room(struct loader *L)
{
	char a[32], b[32];
	vmt_format_bytes(a, sizeof(a), L->t->arena->in_use);
	vmt_format_bytes(b, sizeof(b), L->t->arena->size);
	return ld_fail(L, -ENOMEM, "cannot allocate memory for the trace's elements (%s in use "
		       "of a reserve of %s): this machine's memory or an address-space limit "
		       "(ulimit -v) stopped it, not the trace", a, b);
}

static struct rp_blk *new_block(struct loader *L, uint32_t tid, size_t aux)
{
	struct lthread *lt = &L->lt[tid];
	struct rp_arena *a = L->t->arena;
	size_t need = offsetof(struct rp_blk, elem) + sizeof(struct rp_elem) + aux;
	size_t std = (size_t)1 << (lt->tail ? RP_BLK_SHIFT : RP_BLK_FIRST_SHIFT);
	size_t size = need > std ? need : std;
	if (make_room(L, tid, size) < 0)
		return NULL;
	struct rp_blk *b = rp_blk_alloc(a, size);
	if (!b) {
		no_room(L);
		return NULL;
	}
	b->tid = tid;
	b->first = L->t->threads[tid].nelem;
	/* Its header is written before it is linked, and linked before any
	 * of its elements is published. */
	if (lt->tail)
		__atomic_store_n(&lt->tail->next, b, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&L->t->arena->threads[tid].head, b, __ATOMIC_RELEASE);
	lt->tail = b;
	if (!lt->pubblk)
		lt->pubblk = b;
	if (lt->bix0 > 64 && lt->bix0 > lt->nbix / 2) {
		memmove(lt->bix, lt->bix + lt->bix0, (lt->nbix - lt->bix0) * sizeof(*lt->bix));
		lt->nbix -= lt->bix0;
		lt->bix0 = 0;
	}
	if (vmt_grow(&lt->bix, &lt->capbix, (size_t)lt->nbix + 1, sizeof(*lt->bix))) {
		ld_fail(L, -ENOMEM, "out of memory");
		return NULL;
	}
	lt->bix[lt->nbix++] = b;
	return b;
}

/* Copy n items of size sz to the low end of b's arrays; their offset. */
static uint32_t put_aux(struct rp_blk *b, const void *src, uint32_t n, size_t sz)
{
	if (!n)
		return 0;
	b->aux_low -= (uint32_t)(n * sz);
	memcpy(rp_blk_at(b, b->aux_low), src, n * sz);
	return b->aux_low;
}

/* Double the publication queue (a ring: its elements moved to the start). */
static int fifo_grow(struct loader *L)
{
	uint32_t cap = L->fifo_cap ? L->fifo_cap * 2 : 4096;
	uint32_t *q = malloc((size_t)cap * sizeof(*q));
	if (!q || cap < L->fifo_cap)
		return free(q), ld_fail(L, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < L->fifo_n; i++)
		q[i] = L->fifo[(L->fifo_head + i) % L->fifo_cap];
	free(L->fifo);
	L->fifo = q;
	L->fifo_cap = cap;
	L->fifo_head = 0;
	return 0;
}

int ld_store(struct loader *L, uint32_t tid, const struct rp_elem *proto)
{
	rp_trace *t = L->t;
	struct lthread *lt = &L->lt[tid];
	size_t aux = (size_t)proto->npieces * sizeof(struct rp_piece) +
		     (size_t)proto->ntouch * sizeof(struct rp_touch) +
		     (size_t)proto->ndeps * sizeof(struct rp_dep);
	struct rp_blk *b = lt->tail;
	if (!b || rp_blk_room(b) < sizeof(struct rp_elem) + aux) {
		if (!(b = new_block(L, tid, aux)))
			return L->err ? L->err : -ENOMEM;
	}
	struct rp_elem *e = &b->elem[b->n];
	*e = *proto;
	e->piece0 = proto->npieces ? put_aux(b, t->pieces + proto->piece0, proto->npieces,
					     sizeof(struct rp_piece)) : 0;
	e->touch0 = proto->ntouch ? put_aux(b, t->touches + proto->touch0, proto->ntouch,
					    sizeof(struct rp_touch)) : 0;
	e->dep0 = proto->ndeps ? put_aux(b, t->deps + proto->dep0, proto->ndeps,
					 sizeof(struct rp_dep)) : 0;
	L->stored += sizeof(struct rp_elem) + aux;
	b->nregions = t->nregions;
	/* (the replay reads the count of a block it executes) */
	__atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELEASE);
	t->npieces = t->ntouches = t->ndeps = 0;
	/* into the publication queue */
	if (L->fifo_n == L->fifo_cap && fifo_grow(L) < 0)
		return L->err;
	L->fifo[(L->fifo_head + L->fifo_n++) % L->fifo_cap] = tid;
	/* Only a run reads what is published: before one, nothing is (a
	 * trace loaded whole is published at its end, every element with
	 * all it will ever know). */
	return L->done && L->fifo_n > LD_LOOKAHEAD ? publish(L, LD_LOOKAHEAD) : 0;
}

struct rp_elem *ld_elem(struct loader *L, uint32_t tid, uint32_t idx)
{
	struct lthread *lt = &L->lt[tid];
	if (idx < lt->pub || idx >= L->t->threads[tid].nelem)
		return NULL;
	/* the last block starting at or before idx */
	uint32_t lo = lt->bix0, hi = lt->nbix;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (lt->bix[mid]->first <= idx)
			lo = mid;
		else
			hi = mid;
	}
	struct rp_blk *b = lo < lt->nbix ? lt->bix[lo] : NULL;
	return b && b->first <= idx ? &b->elem[idx - b->first] : NULL;
}

/* ---- publishing -------------------------------------------------------- */

size_t rp_plan_frozen_size(const rp_trace *t, uint32_t plan)
{
	return sizeof(struct rp_xplan) + (size_t)t->plans[plan].nstandin * sizeof(struct rp_xstandin);
}

void rp_plan_freeze(rp_trace *t, uint32_t plan, int all, struct rp_xplan *x)
{
	struct rp_plan *pl = &t->plans[plan];
	pl->frozen = 1;
	memset(x, 0, sizeof(*x));
	x->nstandin = pl->nstandin;
	for (uint32_t i = 0; i < pl->nstandin; i++) {
		const struct rp_standin *s = &t->standins[pl->standin0 + i];
		const struct rp_region *rg = &t->regions[s->region];
		struct rp_xstandin *xs = &x->st[i];
		memset(xs, 0, sizeof(*xs));
		xs->s = *s;
		xs->rec_start = rg->rec_start;
		xs->rsize = rg->size;
		xs->map = rg->needed || all;
	}
	x->brk_region = pl->brk_region;
	if (pl->brk_region != RP_VOID) {
		struct rp_region *rg = &t->regions[pl->brk_region];
		x->brk_rec_start = rg->rec_start;
		/* Streamed, the heap's peak is not known: a reservation that
		 * only a larger heap overruns (its growth then fails). */
		x->brk_size = all && rg->size < RP_BRK_STREAMED ? RP_BRK_STREAMED : rg->size;
		x->brk_init = rg->brk_init;
		x->brk_map = rg->needed || all;
		rg->reserved = (x->brk_size + t->page_size - 1) & ~(uint64_t)(t->page_size - 1);
		if (rg->reserved < t->page_size)
			rg->reserved = t->page_size;
	}
}

/* The plan as the replay sets it up; all: map every stand-in and the
 * heap, as which ones are used is not known yet. */
static int freeze_plan(struct loader *L, struct rp_blk *owner, uint32_t plan, int all,
		       struct rp_xplan **out)
{
	rp_trace *t = L->t;
	size_t bytes = offsetof(struct rp_blk, elem) + rp_plan_frozen_size(t, plan);
	struct rp_blk *xb = rp_blk_alloc(t->arena, bytes);
	if (!xb)
		return no_room(L);
	xb->next = owner->extra;
	owner->extra = xb;
	struct rp_xplan *x = (struct rp_xplan *)xb->elem;
	rp_plan_freeze(t, plan, all, x);
	*out = x;
	return 0;
}

/* Element idx of thread tid is about to be published: what is final now. */
static int finalize(struct loader *L, uint32_t tid, struct rp_blk *b, uint32_t idx)
{
	rp_trace *t = L->t;
	struct rp_elem *e = &b->elem[idx - b->first];
	struct lproc *P = &L->lp[t->threads[tid].proc];
	int rc;

	if (P->max_thread == tid && P->max_elem == idx && P->max_segs > P->sampled_segs) {
		e->flags |= RF_SAMPLE_VMAS;
		P->sampled_segs = P->max_segs;
	}
	if (e->kind == RK_EXEC) {
		struct rp_xplan *x = NULL;
		if ((rc = freeze_plan(L, b, e->arg, !t->complete, &x)) < 0)
			return rc;
		e->off2 = (uint64_t)(uintptr_t)x;
	}
	if (e->kind == RK_SYSCALL && e->how == RX_MMAP && (e->flags & RF_NEWREG))
		e->aux = t->regions[e->region].rec_start;
	if (e->kind == RK_SYSCALL && e->how == RX_BRK && e->region != RP_VOID) {
		struct rp_region *rg = &t->regions[e->region];
		e->args[5] = rg->rec_start;
		/* A heap its plan did not have when it was frozen (its first
		 * brk came later): this element reserves it. */
		if (!rg->reserved && t->plans[rg->plan].frozen) {
			e->flags |= RF_BRK_LAZY;
			rg->reserved = RP_BRK_STREAMED;
		}
		uint64_t pnew = (e->off2 + L->page - 1) & ~(L->page - 1);
		if (rg->reserved && pnew > rg->reserved)
			e->flags |= RF_BRK_PAST;
	}
	/* What the loop reads inline of a one-piece range op, and the
	 * elements it runs on its short path. */
	if (!(e->kind == RK_SYSCALL && e->how == RX_RANGE && e->npieces == 1 &&
	      e->op != VMT_OP_MINCORE && !(e->flags & RF_RAW_LEN)))
		return 0;
	const struct rp_piece *p = rp_blk_at(b, e->piece0);
	if (p->region == RP_VOID)
		return 0;
	e->flags |= RF_PIECE1;
	e->region = p->region;
	e->off2 = p->off;
	e->aux = p->len;
	if (!e->ndeps && !(e->flags & (RF_SAMPLE_VMAS | RF_POST)))
		e->flags |= RF_FAST;
	if (e->ntouch != 1)
		return 0;
	const struct rp_touch *tc = rp_blk_at(b, e->touch0);
	if (tc->off / L->page > UINT32_MAX || tc->off % L->page)
		return 0;
	e->flags |= RF_TOUCH1;
	e->region2 = tc->region;
	e->tpage = (uint32_t)(tc->off / L->page);
	e->arg = tc->npages;
	return 0;
}

/* The counts of the threads published since the last store reach the
 * replay (after the run's files are ready for them); wake: waking a
 * replay thread that waits for them. */
static int flush(struct loader *L, int wake)
{
	int rc;
	uint32_t keep = 0;
	if (!L->ndirty)
		return 0;
	if (L->sync && (rc = L->sync(L->hook_arg)) < 0)
		return ld_fail(L, rc, "cannot create scratch files: %s", strerror(-rc));
	if (wake)
		L->unwoken = 0;
	for (uint32_t i = 0; i < L->ndirty; i++) {
		uint32_t tid = L->dirty[i];
		struct rp_tsh *s = &L->t->arena->threads[tid];
		L->lt[tid].dirty = 0;
		__atomic_store_n(&s->published, L->lt[tid].pub, __ATOMIC_SEQ_CST);
		uint32_t want = __atomic_load_n(&s->want, __ATOMIC_SEQ_CST);
		if (!wake) {
			/* (a thread not woken now stays dirty: it is looked at
			 * again at the next store that wakes) */
			if (want && L->lt[tid].pub >= want) {
				L->dirty[keep++] = tid;
				L->lt[tid].dirty = 1;
			}
			continue;
		}
		if (want && L->lt[tid].pub >= want && __atomic_exchange_n(&s->want, 0, __ATOMIC_SEQ_CST)) {
			__atomic_add_fetch(&s->epoch, 1, __ATOMIC_SEQ_CST);
			syscall(SYS_futex, &s->epoch, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		}
	}
	L->ndirty = keep;
	L->unflushed = 0;
	return 0;
}

/* Can plan pl be frozen: will nothing more be added to it?  Its snapshot
 * came, or cannot come any more (the process went on to another plan or
 * exited, or the load is over). */
static int plan_final(struct loader *L, uint32_t pl)
{
	const struct rp_plan *p = &L->t->plans[pl];
	const struct lproc *P = &L->lp[p->proc];
	return p->snap || P->plan != pl || P->exited || L->t->complete;
}

/* Publish until at most keep elements are stored and not published (or
 * an exec whose plan is not final is next); the counts are stored every
 * LD_FLUSH elements. */
static int publish(struct loader *L, uint32_t keep)
{
	int rc;
	while (L->fifo_n > keep) {
		uint32_t tid = L->fifo[L->fifo_head];
		struct lthread *lt = &L->lt[tid];
		uint32_t idx = lt->pub;
		struct rp_blk *b = lt->pubblk;
		while (b && idx >= b->first + b->n)
			b = b->next;
		if (!b)
			return ld_fail(L, -EIO, "lost element %u of thread %u", idx, tid);
		lt->pubblk = b;
		const struct rp_elem *e = &b->elem[idx - b->first];
		if (e->kind == RK_EXEC && !plan_final(L, e->arg))
			break; /* its MAPS snapshot is still to come */
		L->fifo_head = (L->fifo_head + 1) % L->fifo_cap;
		L->fifo_n--;
		if ((rc = finalize(L, tid, b, idx)) < 0)
			return rc;
		lt->pub++;
		if (!lt->dirty) {
			if (vmt_grow(&L->dirty, &L->capdirty, (size_t)L->ndirty + 1, sizeof(*L->dirty)))
				return ld_fail(L, -ENOMEM, "out of memory");
			lt->dirty = 1;
			L->dirty[L->ndirty++] = tid;
		}
		L->unwoken++;
		if (++L->unflushed >= LD_FLUSH && (rc = flush(L, L->unwoken >= LD_WAKE_BATCH)) < 0)
			return rc;
	}
	return 0;
}

int ld_publish(struct loader *L, uint32_t keep)
{
	int rc = publish(L, keep);
	return rc < 0 ? rc : flush(L, 1);
}
