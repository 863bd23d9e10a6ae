/*
 * fmtpipe.c - a reader's events formatted on several threads, written in
 * order (see fmtpipe.h).
 *
 * Batches of events go round a ring of slots: the calling thread reads a
 * batch into the next free slot, workers take the filled slots in order
 * and make their text, and the calling thread writes the oldest slot once
 * it is done and reuses it.  When every slot is taken the calling thread
 * formats a filled one itself instead of waiting, so with no worker (one
 * CPU) the same loop runs on one thread.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include "fmtpipe.h"
#include "vmtutil.h"

/* Events per batch: big enough that handing a batch over (a lock, a
 * wake-up) costs nothing beside its text, small enough that the slots
 * stay a few megabytes (a perfetto batch is ~0.5 MB of text). */
#define FP_BATCH 2048
#define FP_MAX_WORKERS 3

enum { S_FREE, S_FILLED, S_BUSY, S_DONE };

struct slot {
	struct fp_rec *recs;
	uint32_t n;
	int state;
	struct vmt_buf pre; /* the text of events made on the reading thread */
	struct vmt_buf out;
};

struct pipe {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a slot was filled, or stop */
	pthread_cond_t done; /* a slot is done */
	struct slot *slot;
	unsigned nslot;
	uint64_t next_fill, next_claim; /* (under mu) */
	uint64_t next_write;		/* (the calling thread's) */
	int stop;
	const struct fp_ops *ops;
};

static void format_slot(const struct fp_ops *ops, struct slot *s, struct vmt_buf *scratch)
{
	vmt_buf_reset(&s->out);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct fp_rec *r = &s->recs[i];
		if (r->pre)
			vmt_buf_add(&s->out, s->pre.data + r->pre_off, r->pre_len);
		else
			ops->format(ops->ctx, &s->out, scratch, r);
	}
}

/* Take the oldest filled slot nobody formats yet and format it; with mu
 * held, which is released meanwhile.  Returns 0 if there was none. */
static int claim_one(struct pipe *p, struct vmt_buf *scratch)
{
	if (p->next_claim == p->next_fill)
		return 0;
	struct slot *s = &p->slot[p->next_claim++ % p->nslot];
	s->state = S_BUSY;
	pthread_mutex_unlock(&p->mu);
	format_slot(p->ops, s, scratch);
	pthread_mutex_lock(&p->mu);
	s->state = S_DONE;
	pthread_cond_broadcast(&p->done);
	return 1;
}

static void *worker(void *arg)
{
	struct pipe *p = arg;
	struct vmt_buf scratch = { 0 };
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (claim_one(p, &scratch))
			continue;
		if (p->stop)
			break;
		pthread_cond_wait(&p->work, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	vmt_buf_free(&scratch);
	return NULL;
}

/* Write the oldest slot, formatting others (or waiting) until it is
 * done.  Returns 0 or -ENOMEM. */
static int write_oldest(struct pipe *p, struct vmt_buf *scratch, FILE *out)
{
	struct slot *s = &p->slot[p->next_write % p->nslot];
	pthread_mutex_lock(&p->mu);
	while (s->state != S_DONE)
		if (!claim_one(p, scratch))
			pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	int err = vmt_buf_write(&s->out, out);
	s->state = S_FREE;
	p->next_write++;
	return err == -ENOMEM ? err : 0; /* (a write error: ferror) */
}

/* The oldest slot is done (without waiting for it). */
static int oldest_done(struct pipe *p)
{
	pthread_mutex_lock(&p->mu);
	int done = p->slot[p->next_write % p->nslot].state == S_DONE;
	pthread_mutex_unlock(&p->mu);
	return done;
}

static unsigned nworkers(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	int n = CPU_COUNT(&set) - 1;
	return n <= 0 ? 0 : n > FP_MAX_WORKERS ? FP_MAX_WORKERS : (unsigned)n;
}

/* Read the next batch into s: its events, prepared, and the text of
 * those that point into the reader.  Returns the last reader result. */
static int fill(struct pipe *p, vmt_reader *r, struct slot *s, uint64_t *index,
		struct vmt_buf *scratch, int *err)
{
	const struct fp_ops *ops = p->ops;
	int rc = 1;
	s->n = 0;
	vmt_buf_reset(&s->pre);
	while (s->n < FP_BATCH && (rc = vmt_reader_next(r, &s->recs[s->n].ev)) == 1) {
		struct fp_rec *rec = &s->recs[s->n];
		rec->index = (*index)++;
		rec->pre = 0;
		if (ops->prepare && (*err = ops->prepare(ops->ctx, rec)))
			break;
		s->n++;
		if (vmt_kind_has_pointers(rec->ev.kind)) {
			rec->pre = 1;
			rec->pre_off = s->pre.len;
			ops->format(ops->ctx, &s->pre, scratch, rec);
			rec->pre_len = s->pre.len - rec->pre_off;
			if (s->pre.oom) {
				*err = -ENOMEM;
				break;
			}
		}
	}
	return rc;
}

int fp_run(vmt_reader *r, const struct fp_ops *ops, FILE *out, int *err)
{
	struct pipe p = { .ops = ops };
	struct vmt_buf scratch = { 0 };
	pthread_t thr[FP_MAX_WORKERS];
	unsigned nthr = nworkers(), started = 0;
	uint64_t index = 0;
	int rc = 1;

	*err = 0;
	/* Two slots a thread: one to format while the next is filled. */
	p.nslot = 2 * (nthr + 1);
	p.slot = calloc(p.nslot, sizeof(*p.slot));
	if (!p.slot) {
		*err = -ENOMEM;
		return 0;
	}
	for (unsigned i = 0; i < p.nslot; i++) {
		if (!(p.slot[i].recs = malloc(FP_BATCH * sizeof(*p.slot[i].recs))))
			*err = -ENOMEM;
		/* (a slot is formatted by one thread at a time; without a
		 * memo the same text is made the long way) */
		vmt_buf_memoize(&p.slot[i].out);
	}
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.work, NULL);
	pthread_cond_init(&p.done, NULL);
	/* (No worker started: the calling thread formats every batch.) */
	while (!*err && started < nthr && !pthread_create(&thr[started], NULL, worker, &p))
		started++;

	while (!*err && rc == 1 && !ferror(out)) {
		if (p.next_fill - p.next_write == p.nslot && (*err = write_oldest(&p, &scratch, out)))
			break;
		struct slot *s = &p.slot[p.next_fill % p.nslot];
		rc = fill(&p, r, s, &index, &scratch, err);
		if (s->n) {
			pthread_mutex_lock(&p.mu);
			s->state = S_FILLED;
			p.next_fill++;
			pthread_cond_signal(&p.work);
			pthread_mutex_unlock(&p.mu);
		}
		while (!*err && p.next_write < p.next_fill && oldest_done(&p))
			*err = write_oldest(&p, &scratch, out);
	}
	/* The batches read are written, whatever stopped the reading. */
	while (p.next_write < p.next_fill) {
		int e = write_oldest(&p, &scratch, out);
		if (!*err)
			*err = e;
	}
	pthread_mutex_lock(&p.mu);
	p.stop = 1;
	pthread_cond_broadcast(&p.work);
	pthread_mutex_unlock(&p.mu);
	for (unsigned i = 0; i < started; i++)
		pthread_join(thr[i], NULL);
	pthread_cond_destroy(&p.done);
	pthread_cond_destroy(&p.work);
	pthread_mutex_destroy(&p.mu);
	for (unsigned i = 0; i < p.nslot; i++) {
		free(p.slot[i].recs);
		vmt_buf_free(&p.slot[i].pre);
		vmt_buf_free(&p.slot[i].out);
	}
	free(p.slot);
	vmt_buf_free(&scratch);
	return rc == 1 ? 0 : rc;
}
