/*
 * inprocq.c - the inproc backend's queues (a slot's records, copied out
 * of its ring, until they become events) and its processes: what both
 * the draining and merging (inprocev.c) and the counters (inproccnt.c)
 * put records into.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "inproc_int.h"

/* ---- queues ----------------------------------------------------------- */

static int q_put(struct ipq *q, const void *rec, uint32_t len, uint64_t key, uint64_t done)
{
	size_t n = sizeof(struct ipq_hdr) + ((len + 7u) & ~7u);
	if (q->head && q->head == q->tail)
		q->head = q->tail = 0;
	if (q->tail + n > q->cap && q->head > q->cap / 2) {
		memmove(q->buf, q->buf + q->head, q->tail - q->head);
		q->tail -= q->head;
		q->head = 0;
	}
	if (vmt_grow(&q->buf, &q->cap, q->tail + n, 1))
		return -ENOMEM;
	if (key < q->key)
		key = q->key;
	q->key = key;
	struct ipq_hdr h = { key, done < key ? key : done, len, 0 };
	memcpy(q->buf + q->tail, &h, sizeof(h));
	memcpy(q->buf + q->tail + sizeof(h), rec, len);
	q->tail += n;
	return 0;
}

struct ipq_hdr *ip_q_head(struct ipq *q)
{
	return q->head < q->tail ? (struct ipq_hdr *)(void *)(q->buf + q->head) : NULL;
}

void ip_q_pop(struct ipq *q)
{
	struct ipq_hdr *h = ip_q_head(q);
	q->head += sizeof(*h) + ((h->len + 7u) & ~7u);
	if (q->head == q->tail)
		q->head = q->tail = 0;
}

static void act_add(struct inproc *ip, int qi)
{
	for (size_t i = 0; i < ip->nact; i++)
		if (ip->act[i] == qi)
			return;
	int *a = realloc(ip->act, (ip->nact + 1) * sizeof(*a));
	if (!a)
		return;
	ip->act = a;
	ip->act[ip->nact++] = qi;
}

int ip_queue(struct inproc *ip, int qi, const void *rec, uint32_t len, uint64_t key, uint64_t done)
{
	struct ipq *q = &ip->q[qi];
	int was_empty = q->head == q->tail;
	int e = q_put(q, rec, len, key, done);
	if (!e && was_empty)
		act_add(ip, qi);
	return e;
}

/* ---- processes ------------------------------------------------------------ */

struct ipp *ip_proc(struct inproc *ip, pid_t pid)
{
	for (size_t i = 0; i < ip->nprocs; i++)
		if (ip->procs[i].pid == pid && !ip->procs[i].dead)
			return &ip->procs[i];
	if (vmt_grow(&ip->procs, &ip->capprocs, ip->nprocs + 1, sizeof(*ip->procs)))
		return NULL;
	struct ipp *p = &ip->procs[ip->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	/* (held from now on: its exit status can be asked for after its end) */
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return p;
}

struct ipp *ip_proc_find(struct inproc *ip, pid_t pid)
{
	for (size_t i = ip->nprocs; i-- > 0;)
		if (ip->procs[i].pid == pid)
			return &ip->procs[i];
	return NULL;
}

int ip_queue_of(struct inproc *ip, pid_t tid)
{
	for (int i = 0; i < (int)IP_NSLOTS; i++)
		if (ip->q[i].active && !ip->q[i].ending && ip->q[i].tid == tid)
			return i;
	return -1;
}


void ip_rings_dead(struct inproc *ip, pid_t pid)
{
	/* (an active queue's slot is used: its bit goes with free_slot) */
	for (uint32_t i = ip_next_used(ip->hdr, 0); i < IP_NSLOTS; i = ip_next_used(ip->hdr, i + 1)) {
		struct ip_slot *s = ip_slot_at(ip->shm, i);
		struct ipq *q = &ip->q[i];
		/* (by the slot's own pid too: a ring whose START record is
		 * not copied yet has no pid in its queue) */
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == IP_SLOT_FREE && !q->active)
			continue;
		if ((q->active && q->pid == pid) || __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) == pid)
			q->ending = q->dead = 1;
	}
}
