/*
 * inproccnt.c - the inproc backend's COUNTERS: the kernel's own counters
 * of every recorded thread and process, as the other backends record
 * them (tasks.c writes the events, with the same scopes and flags).
 *
 * Where they come from:
 *  - a thread that exits (exit, exit_group): its getrusage(RUSAGE_THREAD),
 *    read by the runtime right before the call; its process's
 *    getrusage(RUSAGE_SELF) too when it is the last thread or ends them
 *    all (the kernel's count for the process, as wait4's for the ptrace
 *    backend);
 *  - the threads an exit_group or an exec ends, which run no more of the
 *    runtime: /proc, read by vmrec when the ending thread asks, just
 *    before (IPR_ENDING, IPR_EXEC), so what they do in between is not in
 *    them;
 *  - an exec: /proc of the process at its exec stop (inproc.c), as the
 *    ptrace backend reads it at its own;
 *  - a process killed by a signal: /proc of its zombie (its leader; the
 *    process's faults and times), and wait4's rusage when vmrec itself
 *    reaps it and it waited for no child.  A killed process's other
 *    threads, gone before vmrec can read them, end without counters, and
 *    so does a zombie its parent reaped before vmrec saw it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "inproc_int.h"

static void from_ip(const struct ip_counters *k, struct vmt_counters *c)
{
	memset(c, 0, sizeof(*c));
	c->minflt = k->minflt;
	c->majflt = k->majflt;
	c->nvcsw = k->nvcsw;
	c->nivcsw = k->nivcsw;
	c->utime_ns = k->utime_ns;
	c->stime_ns = k->stime_ns;
}

void ip_cnt_others(struct vmr_rec *r, struct inproc *ip, int qi, pid_t pid, pid_t tid,
		   uint64_t ts)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long o = strtol(de->d_name, &end, 10);
		if (*end || o <= 0 || (pid_t)o == tid)
			continue;
		struct ipx_cnt x;
		memset(&x, 0, sizeof(x));
		x.h.word = IP_REC_WORD(IPR_X_CNT, 8);
		x.h.t = ts;
		x.tid = (int32_t)o;
		/* (a thread gone meanwhile has said so itself) */
		if (vmr_cnt_read_task(pid, (pid_t)o, &x.cnt))
			continue;
		if (ip_queue(ip, qi, &x, sizeof(x), ts, ts) && !r->werr)
			r->werr = -ENOMEM;
	}
	closedir(d);
}

void ip_cnt_take(struct vmr_rec *r, const struct ipx_cnt *x)
{
	struct vmr_task *t = vmr_task_find(r, x->tid);
	if (t && !(t->flags & T_PRESTART)) {
		t->cnt = x->cnt;
		t->have_cnt = 1;
	}
}

void ip_cnt_exit(struct vmr_task *t, const struct ip_exit *x)
{
	if (t->flags & T_PRESTART)
		return;
	if (x->have & IPE_THREAD) {
		from_ip(&x->thread, &t->cnt);
		t->have_cnt = 1;
	}
	if (x->have & IPE_PROCESS) {
		from_ip(&x->proc, &t->proc->cnt_final);
		t->proc->have_final = 1;
	}
}

void ip_cnt_zombie(pid_t pid, struct ipx_dead *d)
{
	struct vmt_counters ch;
	if (vmr_cnt_read_task(pid, pid, &d->thread) == 0)
		d->have |= IPE_THREAD;
	if (vmr_cnt_read_group(pid, pid, &d->proc) == 0) {
		d->have |= IPE_PROCESS;
		d->proc_group = 1;
	}
	/* (wait4's rusage would count its children's too) */
	if (vmr_cnt_read_proc(pid, NULL, &ch) == 0 && !ch.minflt && !ch.majflt && !ch.utime_ns &&
	    !ch.stime_ns)
		d->proc_group = 2;
}

void ip_cnt_reaped(struct ipx_dead *d, const struct rusage *ru)
{
	if (d->proc_group != 2)
		return;
	vmr_cnt_from_rusage(ru, &d->proc);
	d->have |= IPE_PROCESS;
	d->proc_group = 0;
}

void ip_cnt_dead(struct vmr_proc *p, struct vmr_task *lead, const struct ipx_dead *d)
{
	if (lead && !lead->have_cnt && (d->have & IPE_THREAD) && !(lead->flags & T_PRESTART)) {
		lead->cnt = d->thread;
		lead->have_cnt = 1;
	}
	if ((d->have & IPE_PROCESS) && !p->have_final) {
		p->cnt_final = d->proc;
		if (d->proc_group) {
			/* its ended threads' switches, and its leader's own
			 * (read from /proc, in d->proc already) */
			vmr_cnt_group_end(p, &p->cnt_final);
		}
		p->have_final = 1;
	}
}

void ip_request(struct vmr_rec *r, struct inproc *ip, int slot, const struct ip_rec *h)
{
	struct ipq *q = &ip->q[slot];
	uint32_t kind = IP_REC_KIND(h->word);
	vmr_faults_read_code(r->faults, q->pid);
	if (kind == IPR_ENDING || !h->aux)
		ip_cnt_others(r, ip, slot, q->pid, q->tid, h->t);
	if (kind == IPR_EXEC) {
		ip_exec_request(r, ip, slot, q->tid, h->aux != 0);
		return;
	}
	struct ip_slot *s = ip_slot_at(ip->shm, (uint32_t)slot);
	__atomic_store_n(&s->reply, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->reply, 1 /* FUTEX_WAKE */, 1 << 30, NULL, NULL, 0);
}

void ip_cnt_prefault(pid_t pid, int slot)
{
	/* The shared file's header and the slot, read by vmrec: the reads
	 * map their pages into the process (writable: a shared mapping of
	 * memory with no write-back to track), and the kernel counts those
	 * faults as vmrec's.  A thread would otherwise take one fault per
	 * page of its ring, the runtime's own, counted in its counters but
	 * never made again by a replay. */
	static unsigned char page[4096];
	struct iovec l[1 + IP_SLOT_SIZE / 4096], rv[2];
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++)
		l[i] = (struct iovec){ page, sizeof(page) };
	rv[0] = (struct iovec){ (void *)(uintptr_t)IP_SHM_ADDR, 4096 };
	rv[1] = (struct iovec){ (void *)(uintptr_t)(IP_SHM_ADDR + IP_HDR_SIZE +
						     (uint64_t)slot * IP_SLOT_SIZE), IP_SLOT_SIZE };
	(void)process_vm_readv(pid, l, sizeof(l) / sizeof(l[0]), rv, 2, 0);
}
