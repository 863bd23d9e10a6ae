/*
 * prefetch.c - decoding ahead on a second thread (prefetch_int.h).
 *
 * The trace's model (vmtrace stat, lint, ...) is sequential, but reading,
 * decompressing, decoding and validating the events need not wait for it:
 * on a machine with a second core they run there, one ring of batches
 * ahead.  Memory stays flat: NBATCH batches of at most BATCH_EVENTS events
 * (plus what their strings and arrays take).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "prefetch_int.h"

#define NBATCH 4
#define BATCH_EVENTS 4096u
#define BLOCK_MIN (64u << 10)

/* Memory for the strings and arrays of one batch's events: blocks that
 * never move, kept for reuse when the batch is refilled. */
struct pf_block {
	struct pf_block *next;
	size_t cap, used;
	_Alignas(16) unsigned char data[];
};

struct pf_batch {
	struct vmt_event ev[BATCH_EVENTS];
	uint32_t n;
	int end;	    /* after the events: 0 none, 1 clean end, <0 error */
	uint64_t chunk_off; /* of its events */
	struct pf_block *blocks;
};

struct vmt_prefetch {
	vmt_pf_source fn;
	void *src;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t filled, freed;
	int stop;
	/* vmt_pf_hold: the producer waits, and says so (parked), or has
	 * ended (gone); joined: its thread is gone too (the consumer's) */
	int hold, parked, gone, joined;
	pthread_cond_t held;
	uint64_t produced, consumed; /* batches published / released */
	struct pf_batch *b[NBATCH];
	/* consumer side */
	struct pf_batch *cur; /* the batch being read, or NULL */
	int final;	      /* the sticky result once reached */
};

static void *pf_alloc(struct pf_batch *b, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct pf_block *k = b->blocks;
	for (; k; k = k->next)
		if (k->cap - k->used >= n)
			break;
	if (!k) {
		size_t cap = n > BLOCK_MIN ? n : BLOCK_MIN;
		if (!(k = malloc(sizeof(*k) + cap)))
			return NULL;
		k->cap = cap;
		k->used = 0;
		k->next = b->blocks;
		b->blocks = k;
	}
	void *p = k->data + k->used;
	k->used += n;
	return p;
}

static const char *pf_str(struct pf_batch *b, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = pf_alloc(b, n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static const void *pf_mem(struct pf_batch *b, const void *s, size_t n)
{
	void *d = pf_alloc(b, n ? n : 1);
	if (d && n)
		memcpy(d, s, n);
	return d;
}

/* Copy what ev points to into b.  Returns 0 or -ENOMEM. */
static int pf_own(struct pf_batch *b, struct vmt_event *ev)
{
	switch (ev->kind) {
	case VMT_EV_MAP_FILE:
		return (ev->u.file.path = pf_str(b, ev->u.file.path)) ? 0 : -ENOMEM;
	case VMT_EV_EXEC:
		return (ev->u.exec.path = pf_str(b, ev->u.exec.path)) ? 0 : -ENOMEM;
	case VMT_EV_STRING:
		return (ev->u.string.str = pf_str(b, ev->u.string.str)) ? 0 : -ENOMEM;
	case VMT_EV_STACK:
		ev->u.stack.ips = pf_mem(b, ev->u.stack.ips,
					 sizeof(*ev->u.stack.ips) * ev->u.stack.depth);
		return ev->u.stack.ips ? 0 : -ENOMEM;
	case VMT_EV_TOUCH:
		ev->u.touch.runs = pf_mem(b, ev->u.touch.runs,
					  sizeof(*ev->u.touch.runs) * ev->u.touch.nruns);
		return ev->u.touch.runs ? 0 : -ENOMEM;
	case VMT_EV_MAPS: {
		struct vmt_map_entry *e = (struct vmt_map_entry *)pf_mem(
			b, ev->u.maps.entries, sizeof(*e) * ev->u.maps.count);
		if (!e)
			return -ENOMEM;
		for (uint32_t i = 0; i < ev->u.maps.count; i++)
			if (!(e[i].path = pf_str(b, e[i].path)))
				return -ENOMEM;
		ev->u.maps.entries = e;
		return 0;
	}
	default:
		return 0; /* no pointers */
	}
}

static void pf_reset(struct pf_batch *b)
{
	b->n = 0;
	b->end = 0;
	for (struct pf_block *k = b->blocks; k; k = k->next)
		k->used = 0;
}

/* The producer waits for room or for the end of a hold (p->mu held). */
static void park(struct vmt_prefetch *p)
{
	p->parked = 1;
	pthread_cond_broadcast(&p->held);
	pthread_cond_wait(&p->freed, &p->mu);
	p->parked = 0;
}

static void *gone(struct vmt_prefetch *p)
{
	pthread_mutex_lock(&p->mu);
	p->gone = 1;
	pthread_cond_broadcast(&p->held);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void vmt_pf_hold(struct vmt_prefetch *p, int on)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->hold = on;
	if (on) {
		while (!p->parked && !p->gone)
			pthread_cond_wait(&p->held, &p->mu);
		/* A producer that has ended may still be on its way out of
		 * its thread, and ASan's teardown of a thread takes its
		 * allocator's lock: a fork then would copy that lock held
		 * into a child with no thread to release it (the sanitized
		 * test_replay_exec hung so).  So it is joined first. */
		if (p->gone && !p->joined) {
			pthread_mutex_unlock(&p->mu);
			pthread_join(p->thread, NULL);
			pthread_mutex_lock(&p->mu);
			p->joined = 1;
		}
	} else {
		pthread_cond_broadcast(&p->freed);
	}
	pthread_mutex_unlock(&p->mu);
}

static void *producer(void *arg)
{
	struct vmt_prefetch *p = arg;
	for (uint64_t seq = 0;; seq++) {
		pthread_mutex_lock(&p->mu);
		while (!p->stop && (seq - p->consumed >= NBATCH || p->hold))
			park(p);
		int stop = p->stop;
		pthread_mutex_unlock(&p->mu);
		if (stop)
			return gone(p);
		/* The slot is ours until published: the consumer has released
		 * it, and takes it again only once produced passes seq. */
		struct pf_batch *b = p->b[seq % NBATCH];
		pf_reset(b);
		int rc = 1;
		while (b->n < BATCH_EVENTS) {
			uint32_t got = 0;
			uint64_t off = 0;
			int last = 0;
			rc = p->fn(p->src, &b->ev[b->n], BATCH_EVENTS - b->n, &got, &off, &last);
			if (got) {
				if (b->n == 0)
					b->chunk_off = off;
				/* only the last event of a run may point into
				 * the source's memory */
				int err = pf_own(b, &b->ev[b->n + got - 1]);
				b->n += got;
				if (err) {
					rc = err;
					break;
				}
			}
			/* a batch ends with its chunk: one offset per batch */
			if (rc != 1 || (last && b->n))
				break;
		}
		if (rc != 1)
			b->end = rc ? rc : 1;
		pthread_mutex_lock(&p->mu);
		p->produced = seq + 1;
		pthread_cond_signal(&p->filled);
		pthread_mutex_unlock(&p->mu);
		if (rc != 1)
			return gone(p);
	}
}

struct vmt_prefetch *vmt_pf_start(vmt_pf_source fn, void *src, int *err)
{
	struct vmt_prefetch *p = calloc(1, sizeof(*p));
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	p->fn = fn;
	p->src = src;
	for (int i = 0; i < NBATCH; i++)
		if (!(p->b[i] = calloc(1, sizeof(*p->b[i])))) {
			*err = -ENOMEM;
			goto fail;
		}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->filled, NULL);
	pthread_cond_init(&p->freed, NULL);
	pthread_cond_init(&p->held, NULL);
	int e = pthread_create(&p->thread, NULL, producer, p);
	if (e) {
		*err = -e;
		pthread_cond_destroy(&p->held);
		pthread_cond_destroy(&p->freed);
		pthread_cond_destroy(&p->filled);
		pthread_mutex_destroy(&p->mu);
		goto fail;
	}
	return p;
fail:
	for (int i = 0; i < NBATCH; i++)
		free(p->b[i]);
	free(p);
	return NULL;
}

int vmt_pf_batch(struct vmt_prefetch *p, const struct vmt_event **evs, uint32_t *n,
		 uint64_t *chunk_off)
{
	for (;;) {
		if (p->final)
			return p->final > 0 ? 0 : p->final;
		struct pf_batch *b = p->cur;
		if (b && b->end) {
			p->final = b->end;
			continue;
		}
		pthread_mutex_lock(&p->mu);
		if (b) { /* done with it: the producer may refill it */
			p->consumed++;
			pthread_cond_signal(&p->freed);
		}
		while (p->produced == p->consumed)
			pthread_cond_wait(&p->filled, &p->mu);
		p->cur = b = p->b[p->consumed % NBATCH];
		pthread_mutex_unlock(&p->mu);
		if (b->n) {
			*evs = b->ev;
			*n = b->n;
			*chunk_off = b->chunk_off;
			return 1;
		}
	}
}

void vmt_pf_stop(struct vmt_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->mu);
	if (!p->joined)
		pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->held);
	pthread_cond_destroy(&p->freed);
	pthread_cond_destroy(&p->filled);
	pthread_mutex_destroy(&p->mu);
	for (int i = 0; i < NBATCH; i++) {
		struct pf_block *k = p->b[i]->blocks;
		while (k) {
			struct pf_block *next = k->next;
			free(k);
			k = next;
		}
		free(p->b[i]);
	}
	free(p);
}
