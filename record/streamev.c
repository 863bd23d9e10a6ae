/*
 * streamev.c - the stream backend's records become the trace's events.
 *
 * The order.  The ring holds records in the order the BPF programs
 * reserved them: one order across CPUs, in which a call comes at its
 * exit.  That order is the trace's, with one correction: calls that took
 * mmap_lock for writing must appear in the order they held it (lock_seq),
 * and a call's exit can be reported after the exit of a call that took
 * the lock after it (munmap releases the lock, another thread's mmap
 * takes it and returns, and only then does the munmap's exit get its
 * record).  So records wait in a window (STREAM_WINDOW_NS) before they
 * become events, and a call that arrives late goes back in the window to
 * just before the first call that held the lock after it.  Nothing of its
 * own task can lie in between: the task was inside that call.  The lock's
 * numbers come without gaps but for lost records, so a call whose number
 * is past one not come yet stays in the window, however old, until that
 * one comes (up to STREAM_LOCK_WAIT_NS): a late exit can be late by more
 * than the window (a preempted thread, a descheduled vCPU, a munmap that
 * waits for a userfaultfd reader after its unlock).
 *
 * Tasks.  A task comes with the SR_FORK of its creator (written before
 * the child first runs, so before any record of its own); a new thread
 * group whose child shares its parent's memory without being a vfork is a
 * thread of its parent's process, as with ptrace.  An exec comes after
 * the SR_VMA records of the new image, from which the MAPS event is made;
 * /proc names the files and special mappings where the process is still
 * there to ask.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <dirent.h>
#include "linux_abi.h"
#include "stream_int.h"
#include "stacks.h"

struct qhdr {
	uint32_t len; /* of what follows, a multiple of 8 */
	uint32_t pad;
};

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Room for n more bytes at the tail: the head's space reclaimed when it is
 * at least what the window holds (so that each byte moves at most once on
 * average), else a larger buffer. */
static int q_reserve(struct stream *s, size_t n)
{
	if (s->qtail + n <= s->qcap)
		return 0;
	size_t live = s->qtail - s->qhead;
	if (s->qhead && s->qhead >= live && live + n <= s->qcap) {
		memmove(s->q, s->q + s->qhead, live);
		for (size_t i = s->lockhead; i < s->nlocks; i++)
			s->locks[i].off -= s->qhead;
		s->qtail = live;
		s->qhead = 0;
		return 0;
	}
	return vmt_grow(&s->q, &s->qcap, s->qtail + n, 1);
}

static size_t q_size(size_t alen, size_t blen)
{
	return sizeof(struct qhdr) + round8(alen) + round8(blen);
}

/* Put a record (two parts: the record, then an optional file) into the
 * window at byte offset `at` (the tail, or earlier for a late call),
 * where q_reserve() has made room. */
static void q_put(struct stream *s, size_t at, const void *a, size_t alen, const void *b,
		  size_t blen)
{
	size_t n = q_size(alen, blen);
	memmove(s->q + at + n, s->q + at, s->qtail - at);
	struct qhdr h = { (uint32_t)(n - sizeof(h)), (uint32_t)round8(alen) };
	memcpy(s->q + at, &h, sizeof(h));
	memcpy(s->q + at + sizeof(h), a, alen);
	if (blen)
		memcpy(s->q + at + sizeof(h) + round8(alen), b, blen);
	s->qtail += n;
}

/* ---- the stack copies' ring ------------------------------------------------ */

/* An SR_STACK in the window whose copy is in s->sk (its h.pad; the BPF
 * side writes 0): the record is followed by the copy's offset there. */
#define STACK_IN_SK 1u

/* No copy in s->sk: the next starts at its start again (the memory used
 * stays what one window needs). */
static void sk_reset(struct stream *s)
{
	s->skhead = s->sktail = 0;
	s->skwrapped = 0;
}

/* Where n bytes (> 0, a multiple of 8) of a new copy go in s->sk, or -1
 * when they do not fit (or there is no memory for it). */
static int64_t sk_alloc(struct stream *s, size_t n)
{
	if (!s->sk && !(s->sk = malloc(STREAM_STACK_ARENA)))
		return -1;
	if (!s->sklive)
		sk_reset(s);
	size_t at;
	if (!s->skwrapped && s->sktail + n <= STREAM_STACK_ARENA)
		at = s->sktail;
	else if (!s->skwrapped && n <= s->skhead)
		at = 0, s->skwrapped = 1;
	else if (s->skwrapped && s->sktail + n <= s->skhead)
		at = s->sktail;
	else
		return -1;
	s->sktail = at + n;
	s->sklive++;
	return (int64_t)at;
}

/* The oldest copy (at, n bytes) is used up. */
static void sk_free(struct stream *s, size_t at, size_t n)
{
	if (at < s->skhead)
		s->skwrapped = 0; /* (the first of those at 0) */
	s->skhead = at + n;
	if (s->sklive && !--s->sklive)
		sk_reset(s);
}

/* Bytes of s->sk between the oldest copy and the newest. */
static size_t sk_used(const struct stream *s)
{
	if (!s->sklive)
		return 0;
	return s->skwrapped ? STREAM_STACK_ARENA - s->skhead + s->sktail : s->sktail - s->skhead;
}

/* The SR_FILE of task tid waiting for its SR_CALL, or NULL.  (A task's
 * records come in its order: at most one of its own waits.  Tasks whose
 * tids are alike modulo the slots each have theirs: two threads mapping
 * files at the same instant.) */
static struct stream_file *file_waiting(struct stream *s, uint32_t tid)
{
	if (!s->nfiles)
		return NULL; /* (most calls) */
	for (unsigned i = 0; i < STREAM_FILE_SLOTS; i++) {
		struct stream_file *f = &s->files[(tid + i) % STREAM_FILE_SLOTS];
		if (f->used && f->tid == tid)
			return f;
	}
	return NULL;
}

/* Where task tid's new SR_FILE waits: in place of one of its own left
 * without a call (lost), else a free slot. */
static struct stream_file *file_slot(struct stream *s, uint32_t tid)
{
	struct stream_file *f = file_waiting(s, tid);
	if (f)
		return f;
	for (unsigned i = 0; i < STREAM_FILE_SLOTS; i++) {
		f = &s->files[(tid + i) % STREAM_FILE_SLOTS];
		if (!f->used) {
			s->nfiles++;
			return f;
		}
	}
	return &s->files[tid % STREAM_FILE_SLOTS]; /* (more waiting than CPUs) */
}

/* lock_seq's bit in lock_seen: its word, and the bit in *bit. */
static uint64_t *lock_bit(struct stream *s, uint64_t seq, uint64_t *bit)
{
	uint64_t b = seq % STREAM_LOCK_SEEN;
	*bit = 1ull << (b % 64);
	return &s->lock_seen[b / 64];
}

/* lock_seq numbers below `to` are no longer waited for; lock_next then
 * moves past those that came. */
static void lock_skip(struct stream *s, uint64_t to)
{
	uint64_t bit, *w;
	for (; s->lock_next < to; s->lock_next++) {
		w = lock_bit(s, s->lock_next, &bit);
		*w &= ~bit;
	}
	while (*(w = lock_bit(s, s->lock_next, &bit)) & bit) {
		*w &= ~bit;
		s->lock_next++;
	}
}

/* lock_seq `seq` came. */
static void lock_came(struct stream *s, uint64_t seq)
{
	uint64_t bit;
	if (seq < s->lock_next)
		return; /* (given up on: it goes where put_lock_call puts it) */
	if (seq - s->lock_next >= STREAM_LOCK_SEEN)
		lock_skip(s, seq - STREAM_LOCK_SEEN + 1);
	*lock_bit(s, seq, &bit) |= bit;
	lock_skip(s, s->lock_next);
}

/* A call that held mmap_lock for writing goes before the first call of
 * the window that held it after it. */
static int put_lock_call(struct stream *s, const struct sr_call *c, const void *file,
			 size_t flen)
{
	size_t n = q_size(sizeof(*c), flen);
	if (q_reserve(s, n) ||
	    vmt_grow(&s->locks, &s->caplocks, s->nlocks + 1, sizeof(*s->locks)))
		return -ENOMEM;
	size_t i = s->nlocks;
	while (i > s->lockhead && s->locks[i - 1].seq > c->lock_seq)
		i--;
	size_t at = i < s->nlocks ? s->locks[i].off : s->qtail;
	q_put(s, at, c, sizeof(*c), file, flen);
	for (size_t k = i; k < s->nlocks; k++)
		s->locks[k].off += n;
	memmove(&s->locks[i + 1], &s->locks[i], (s->nlocks - i) * sizeof(*s->locks));
	s->locks[i] = (struct qlock){ at, c->lock_seq };
	s->nlocks++;
	lock_came(s, c->lock_seq);
	return 0;
}

static int put(struct stream *s, const void *a, size_t alen, const void *b, size_t blen)
{
	if (q_reserve(s, q_size(alen, blen)))
		return -ENOMEM;
	q_put(s, s->qtail, a, alen, b, blen);
	return 0;
}

int stream_record(void *ctx, void *data, size_t size)
{
	struct vmr_rec *r = ctx;
	struct stream *s = r->stream;
	const struct sr_hdr *h = data;
	int e = 0;

	if (size < sizeof(*h) || h->size > size)
		return 0; /* cannot happen: the BPF side writes whole records */
	if (h->time > s->last_ts)
		s->last_ts = h->time;
	if (h->kind == SR_FILE && size >= sizeof(struct sr_file)) {
		/* Kept until its call, the next record of the task. */
		struct stream_file *f = file_slot(s, h->tid);
		f->tid = h->tid;
		f->used = 1;
		memcpy(&f->f, data, sizeof(f->f));
		return 0;
	} else if (h->kind == SR_STACK && size >= sizeof(struct sr_stack)) {
		/* From the stack pointer up (a kernel that copied whole pages
		 * copied some below it): less to move. */
		struct sr_stack k;
		_Static_assert(sizeof(k) % 8 == 0, "the copy follows the record");
		memcpy(&k, data, sizeof(k));
		uint64_t skip = k.regs[1] > k.base ? (k.regs[1] - k.base) & ~7ull : 0;
		if (k.size > size - sizeof(k) || skip > k.size)
			skip = k.size = 0;
		k.base += skip;
		k.size -= skip;
		k.h.size = (unsigned short)(sizeof(k) + k.size);
		const unsigned char *bytes = (const unsigned char *)data + sizeof(k) + skip;
		size_t tail = s->sktail;
		int wrapped = s->skwrapped;
		int64_t at = k.size ? sk_alloc(s, round8(k.size)) : -1;
		if (at >= 0) {
			/* (the window moves what it holds: this copy stays) */
			uint64_t off = (uint64_t)at;
			memcpy(s->sk + off, bytes, k.size);
			k.h.pad = STACK_IN_SK;
			e = put(s, &k, sizeof(k), &off, sizeof(off));
			if (e) { /* not kept: the newest copy's room is free again */
				s->sktail = tail;
				s->skwrapped = wrapped;
				if (!--s->sklive)
					sk_reset(s);
			}
		} else {
			k.h.pad = 0;
			e = put(s, &k, sizeof(k), bytes, k.size);
			if (!e)
				s->qstack += k.size;
		}
		/* Past half of s->sk the loop flushes first. */
		if (sk_used(s) > STREAM_STACK_ARENA / 2) {
			if (e && !r->werr)
				r->werr = e;
			s->batch = 0;
			return -EAGAIN;
		}
	} else if (h->kind == SR_CALL && size >= sizeof(struct sr_call)) {
		const struct sr_call *c = data;
		struct stream_file *f = file_waiting(s, h->tid);
		const void *file = NULL;
		size_t flen = 0;
		if (f) {
			/* (one whose call was lost names no other call) */
			if (f->f.addr == (uint64_t)c->ret) {
				file = &f->f;
				flen = sizeof(f->f);
			}
			f->used = 0;
			s->nfiles--;
		}
		if (c->lock_ok & 1)
			e = put_lock_call(s, c, file, flen);
		else
			e = put(s, data, h->size, file, flen);
	} else {
		e = put(s, data, h->size, NULL, 0);
	}
	if (e && !r->werr)
		r->werr = e;
	/* libbpf consumes for as long as the producers keep up: a batch at
	 * a time, so that the loop gets to flush and to look at signals. */
	if (++s->batch >= STREAM_BATCH) {
		s->batch = 0;
		return -EAGAIN;
	}
	return 0;
}

/* ---- tasks -------------------------------------------------------------- */

/* The task of tid (in thread group tgid), known or adopted: a task whose
 * birth was not seen (its record was dropped) joins its thread group's
 * process, or starts one without a parent. */
static struct vmr_task *task_of(struct vmr_rec *r, struct stream *s, uint32_t tid,
				uint32_t tgid, uint64_t ts)
{
	struct vmr_task *t = vmr_task_find(r, (pid_t)tid);
	if (t)
		return t;
	struct vmr_task *lead = vmr_task_find(r, (pid_t)tgid);
	struct vmr_proc *p = lead ? lead->proc : vmr_proc_new(r, (pid_t)tgid);
	if (!p || !(t = vmr_task_add(r, (pid_t)tid, p)))
		return NULL;
	if (!lead)
		s->live_procs++;
	vmr_start_events(r, t, VMT_NONE, VMT_NONE, lead ? VMT_NONE : VMT_PROC_ATTACH, ts);
	return t;
}

static void on_fork(struct vmr_rec *r, struct stream *s, const struct sr_fork *f)
{
	struct vmr_task *parent = task_of(r, s, f->h.tid, f->h.tgid, f->h.time), *t;
	struct vmr_proc *p;
	uint32_t how = VMT_NONE;

	if (!parent || vmr_task_find(r, (pid_t)f->child_tid))
		return;
	if (f->child_tgid == f->h.tgid || (f->same_mm && !f->vfork)) {
		p = parent->proc;
	} else {
		if (!(p = vmr_proc_fork(r, parent->proc, (pid_t)f->child_tgid)))
			return;
		p->borrowed_mm = f->same_mm;
		how = f->vfork ? VMT_PROC_VFORK : VMT_PROC_FORK;
	}
	if (!(t = vmr_task_add(r, (pid_t)f->child_tid, p))) {
		if (how != VMT_NONE)
			vmr_proc_free(p);
		return;
	}
	if (how != VMT_NONE) {
		s->live_procs++;
		vmr_stacks_copy_fork(r->stacks, parent->proc->index, p->index, (pid_t)f->child_tgid);
	}
	vmr_start_events(r, t, parent->thread, parent->proc->index, how, f->h.time);
}

/* The kernel's counters of a task (or, at an exec, of its process). */
static void counters_of(const struct sr_counters *k, struct vmt_counters *c)
{
	memset(c, 0, sizeof(*c));
	c->minflt = k->minflt;
	c->majflt = k->majflt;
	c->nvcsw = k->nvcsw;
	c->nivcsw = k->nivcsw;
	vmr_cnt_adjust(k->utime, k->stime, k->rtime, &c->utime_ns, &c->stime_ns);
}

static void on_task_exit(struct vmr_rec *r, struct stream *s, const struct sr_exit *x)
{
	struct vmr_task *t = vmr_task_find(r, (pid_t)x->h.tid);
	uint32_t proc = t ? t->proc->index : 0;
	if (t) {
		counters_of(&x->cnt, &t->cnt);
		t->have_cnt = 1;
	}
	if (t && vmr_task_end(r, t, x->exit_code, x->h.time)) {
		vmr_stacks_copy_gone(r->stacks, proc);
		if (s->live_procs)
			s->live_procs--;
	}
}

/* A path from components leaf first (ncomp > SR_PATH_SLOTS: unknown,
 * ""); returns its length. */
static size_t join_path(char *out, size_t len, const char (*comp)[SR_NAME_LEN], uint32_t ncomp)
{
	size_t n = 0;
	out[0] = 0;
	if (ncomp > SR_PATH_SLOTS || len < 2)
		return 0;
	if (!ncomp) {
		snprintf(out, len, "/");
		return 1;
	}
	for (int i = (int)ncomp - 1; i >= 0 && n + 2 < len; i--)
		n += (size_t)snprintf(out + n, len - n, "/%.*s", SR_NAME_LEN, comp[i]);
	return n < len ? n : len - 1;
}

/* ---- exec: the new image's MAPS -------------------------------------------- */

static void on_exec(struct vmr_rec *r, struct stream *s, const struct sr_exec *x)
{
	uint64_t ts = x->h.time;
	struct vmr_task *t = vmr_task_find(r, (pid_t)x->old_tid);
	char exe[PATH_MAX];

	if (!t)
		t = task_of(r, s, x->h.tid, x->h.tgid, ts);
	if (!t)
		goto out;
	if (x->old_tid != x->h.tid) {
		/* A thread exec'd and took its leader's tid (the leader's exit
		 * came before). */
		struct vmr_task *lead = vmr_task_find(r, (pid_t)x->h.tid);
		if (lead && lead != t)
			vmr_task_end(r, lead, 0, ts);
		vmr_task_retid(r, t, (pid_t)x->h.tid);
	}
	/* The executed file's path (not the name exec was given, which may
	 * be relative, or /proc/self/exe). */
	if (!join_path(exe, sizeof(exe), x->comp, x->ncomp))
		snprintf(exe, sizeof(exe), "%.255s", x->filename);
	struct vmt_counters c;
	counters_of(&x->group, &c);
	vmr_exec_start(r, t, exe, &c, ts);

	/* The MAPS snapshot: the VMAs the BPF side read at the exec (the
	 * executable's and its interpreter's files named by the exec); all
	 * from /proc when the kernel could not list them. */
	uint32_t n = 0;
	for (size_t i = 0; i < s->nvmas; i++)
		n += s->vmas[i].tid == x->old_tid || s->vmas[i].tid == x->h.tid;
	if (!x->complete || !n) {
		vmr_maps_event(r, t, ts);
		vmr_stacks_copy_maps(r->stacks, t->proc->index, (pid_t)x->h.tgid, NULL, 0);
		goto out;
	}
	struct vmt_map_entry *e = calloc((size_t)n + 1, sizeof(*e));
	char (*names)[32] = calloc(n, sizeof(*names));
	char interp[PATH_MAX];
	uint64_t x_interp = 0;
	if (!e || !names) {
		free(e);
		free(names);
		goto out;
	}
	/* The interpreter (ld.so) is the executable's PT_INTERP; the kernel
	 * keeps no path for it. */
	interp[0] = 0;
	for (size_t i = 0; i < s->nvmas; i++)
		if (s->vmas[i].v.file && s->vmas[i].v.file != x->file &&
		    (s->vmas[i].tid == x->old_tid || s->vmas[i].tid == x->h.tid)) {
			const struct sr_vma *v = &s->vmas[i].v;
			if (vmr_elf_interp(exe, makedev(v->dev >> 20, v->dev & 0xfffff), v->ino, interp,
					   sizeof(interp)) == 0)
				x_interp = v->file;
			break;
		}
	uint32_t k = 0;
	for (size_t i = 0; i < s->nvmas && k < n; i++) {
		const struct sr_vma *v = &s->vmas[i].v;
		if (s->vmas[i].tid != x->old_tid && s->vmas[i].tid != x->h.tid)
			continue;
		struct vmt_map_entry *m = &e[k];
		m->start = v->start;
		m->end = v->end;
		m->offset = v->ino ? v->pgoff << r->page_shift : 0;
		m->dev = makedev(v->dev >> 20, v->dev & 0xfffff);
		m->ino = v->ino;
		m->perms = ((v->flags & 1) ? VMT_PROT_R : 0) | ((v->flags & 2) ? VMT_PROT_W : 0) |
			   ((v->flags & 4) ? VMT_PROT_X : 0) | ((v->flags & 8) ? VMT_MAPS_SHARED : 0);
		snprintf(names[k], sizeof(names[k]), "%.31s", v->name);
		m->path = v->file ? (v->file == x->file ? exe : v->file == x_interp ? interp : "")
			: v->special == 1 ? "[stack]" : v->special == 2 ? "[heap]"
			: v->special == 3 ? names[k] : "";
		k++;
	}
	/* The kernel's vsyscall page is no VMA, but /proc lists it. */
	if (s->vsyscall.end)
		e[k++] = s->vsyscall;
	vmr_maps_emit(r, t, e, k, ts);
	vmr_stacks_copy_maps(r->stacks, t->proc->index, (pid_t)x->h.tgid, e, k);
	free(e);
	free(names);
out:;
	/* The VMAs of this exec are used up. */
	size_t w = 0;
	for (size_t i = 0; i < s->nvmas; i++)
		if (s->vmas[i].tid != x->old_tid && s->vmas[i].tid != x->h.tid)
			s->vmas[w++] = s->vmas[i];
	s->nvmas = w;
}

/* ---- calls and faults ------------------------------------------------------ */

/* t->file from the kernel's view of the mapped file. */
static void take_file(struct vmr_rec *r, struct vmr_task *t, const struct sr_call *c,
		      const struct sr_file *f)
{
	char *path = vmr_task_path(t);
	if (!path)
		return;
	memset(&t->file, 0, sizeof(t->file));
	if (c->op == VMT_OP_SHMAT) {
		/* A System V segment: its id is its inode (ipc/shm.c). */
		snprintf(path, PATH_MAX, "shm:%d", (int)c->args[0]);
		t->file.ino = (uint64_t)(uint32_t)c->args[0];
		t->file.open_flags = (c->args[2] & LX_SHM_RDONLY) ? O_RDONLY : O_RDWR;
	} else {
		join_path(path, PATH_MAX, f->comp, f->ncomp);
		t->file.ino = f->ino;
		t->file.dev = makedev(f->dev >> 20, f->dev & 0xfffff);
		t->file.open_flags = f->f_flags;
	}
	t->file.path = path;
	t->file.size = (uint64_t)f->size;
	t->file.mode = f->i_mode & 07777;
	t->flags |= T_HAVE_FILE;
	(void)r;
}

/* The stack of a call to come, unwound now, in the trace's order (the
 * mappings its process has are those of the trace), and kept for the
 * SR_CALL of the same entry time. */
static void on_stack(struct vmr_rec *r, struct stream *s, const struct sr_stack *k,
		     const unsigned char *data)
{
	/* (the order of sr_stack: ip sp bp bx r12-r15 ax cx dx si di r8-r11) */
	static const unsigned char reg[] = {
		VMR_REG_IP, VMR_REG_SP, VMR_REG_BP, VMR_REG_BX, VMR_REG_R12, VMR_REG_R13,
		VMR_REG_R14, VMR_REG_R15, VMR_REG_AX, VMR_REG_CX, VMR_REG_DX, VMR_REG_SI,
		VMR_REG_DI, VMR_REG_R8, VMR_REG_R9, VMR_REG_R10, VMR_REG_R11,
	};
	struct vmr_stack_copy c = {
		.data = data, .base = k->base, .size = k->size, .holes = k->holes
	};
	uint32_t id;
	if (!r->stacks)
		return;
	struct vmr_task *t = task_of(r, s, k->h.tid, k->h.tgid, k->h.time);
	if (!t || (t->flags & T_PRESTART))
		return;
	for (size_t i = 0; i < sizeof(reg); i++)
		c.regs[reg[i]] = k->regs[i];
	int e = vmr_stacks_capture_copy(r->stacks, r->w, (pid_t)k->h.tgid, t->thread,
					t->proc->index, k->h.time, &c, &id);
	if (e) {
		if (!r->werr)
			r->werr = e;
		return;
	}
	t->stack = id == VMT_NONE ? 0 : id + 1;
	t->stack_t = k->h.time;
}

/* What a call changed of the mappings copies are unwound with. */
static void stack_maps(struct vmr_rec *r, struct vmr_task *t, const struct sr_call *c)
{
	uint32_t proc = t->proc->index;
	uint64_t ps = r->page_size, len = (c->args[1] + ps - 1) & ~(ps - 1);
	if (!r->stacks || vmt_is_errno(c->ret) || (c->lock_ok & 2))
		return;
	if (c->op == VMT_OP_MMAP)
		vmr_stacks_copy_map(r->stacks, proc, (uint64_t)c->ret, (uint64_t)c->ret + len,
				    c->args[5], !!(c->args[2] & LX_PROT_EXEC),
				    (t->flags & T_HAVE_FILE) ? &t->file : NULL);
	else if (c->op == VMT_OP_MUNMAP)
		vmr_stacks_copy_unmap(r->stacks, proc, c->args[0], c->args[0] + len);
	else if (c->op == VMT_OP_MREMAP)
		vmr_stacks_copy_move(r->stacks, proc, c->args[0], len, (uint64_t)c->ret,
				     (c->args[2] + ps - 1) & ~(ps - 1));
}

static void on_call(struct vmr_rec *r, struct stream *s, const struct sr_call *c,
		    const struct sr_file *f)
{
	struct vmr_task *t = task_of(r, s, c->h.tid, c->h.tgid, c->t_enter);
	if (!t || (t->flags & T_PRESTART))
		return;
	struct vmt_syscall sc = { .op = c->op, .result = c->ret, .exit_ns = c->h.time,
				  .stack_id = VMT_NONE };
	if (t->stack && c->t_stack && t->stack_t == c->t_stack)
		sc.stack_id = t->stack - 1;
	t->stack = 0;
	memcpy(sc.args, c->args, sizeof(sc.args));
	if (c->lock_ok & 2) { /* the task died inside the call */
		sc.flags |= VMT_SC_NO_RESULT;
		sc.result = 0;
		sc.exit_ns = c->t_enter;
	} else if (c->h.time >= c->t_enter) {
		/* What it waited for inside the call (never more than its
		 * own time: the clocks are one, the reads apart). */
		uint64_t d = c->h.time - c->t_enter;
		sc.waits = 1;
		sc.off_cpu_ns = c->off_ns < d ? c->off_ns : d;
		sc.vcsw = c->vcsw;
		sc.ivcsw = c->ivcsw;
	}
	/* The faults the kernel took for the call (a populating one), pages
	 * unknown: before it, at its entry. */
	struct vmt_event fe = { .kind = VMT_EV_FAULT, .thread = t->thread,
				.proc = t->proc->index, .ts_ns = c->t_enter };
	for (uint64_t i = 0; i < (uint64_t)c->gup_min + c->gup_maj; i++) {
		fe.u.fault.flags = VMT_FLT_GUP | VMT_FLT_CALL | (i < c->gup_maj ? VMT_FLT_MAJOR : 0);
		vmr_emit(r, &fe);
	}
	t->flags &= ~T_HAVE_FILE;
	if (f)
		take_file(r, t, c, f);
	stack_maps(r, t, c);
	vmr_sc_record(r, t, &sc, c->t_enter);
}

/* Faults the kernel counted: one exception's, or (SR_FAULT_GUP) as many
 * of its own as the record says, whose pages are not known: as many FAULT
 * events. */
static void on_fault(struct vmr_rec *r, const struct sr_fault *f)
{
	struct vmr_task *t = vmr_task_find(r, (pid_t)f->h.tid);
	if (!t || (t->flags & T_PRESTART))
		return;
	struct vmt_event ev = { .kind = VMT_EV_FAULT, .thread = t->thread,
				.proc = t->proc->index, .ts_ns = f->h.time };
	if (f->flags & SR_FAULT_GUP) {
		for (uint64_t i = 0; i < (uint64_t)f->count + f->count_maj; i++) {
			ev.u.fault.flags = VMT_FLT_GUP | (i < f->count_maj ? VMT_FLT_MAJOR : 0);
			vmr_emit(r, &ev);
		}
		return;
	}
	ev.u.fault.addr = f->addr;
	ev.u.fault.ip = f->ip;
	/* x86 error code: bit 1 write, bit 4 instruction fetch. */
	ev.u.fault.access = (f->flags & SR_FAULT_NOERR) ? 0
			    : (f->error_code & 2) ? VMT_FAULT_WRITE
			    : (f->error_code & 0x10) ? VMT_FAULT_EXEC : VMT_FAULT_READ;
	ev.u.fault.flags = (f->flags & SR_FAULT_MAJOR) ? VMT_FLT_MAJOR : 0;
	vmr_emit(r, &ev);
}

static void process(struct vmr_rec *r, struct stream *s, const unsigned char *rec, size_t len,
		    size_t part)
{
	const struct sr_hdr *h = (const void *)rec;
	switch (h->kind) {
	case SR_CALL:
		on_call(r, s, (const void *)rec,
			part < len ? (const struct sr_file *)(const void *)(rec + part) : NULL);
		break;
	case SR_FORK:
		on_fork(r, s, (const void *)rec);
		break;
	case SR_VMA:
		if (!vmt_grow(&s->vmas, &s->capvmas, s->nvmas + 1, sizeof(*s->vmas))) {
			s->vmas[s->nvmas].tid = h->tid;
			memcpy(&s->vmas[s->nvmas].v, rec, sizeof(struct sr_vma));
			s->nvmas++;
		}
		break;
	case SR_EXEC:
		on_exec(r, s, (const void *)rec);
		break;
	case SR_EXIT:
		on_task_exit(r, s, (const void *)rec);
		break;
	case SR_FAULT:
		on_fault(r, (const void *)rec);
		break;
	default:
		break;
	}
}

void stream_flush(struct vmr_rec *r, struct stream *s, int all)
{
	/* A record is reserved at its own time: all those older than the
	 * window are in. */
	uint64_t now = vmt_now_ns(), horizon = now > STREAM_WINDOW_NS ? now - STREAM_WINDOW_NS : 0;
	while (s->qhead < s->qtail) {
		struct qhdr qh;
		memcpy(&qh, s->q + s->qhead, sizeof(qh));
		const unsigned char *rec = s->q + s->qhead + sizeof(qh);
		const struct sr_hdr *h = (const void *)rec;
		int full = s->qtail - s->qhead - s->qstack >= STREAM_WINDOW_BYTES ||
			   sk_used(s) > STREAM_STACK_ARENA / 2;
		if (!all && h->time > horizon && !full)
			break;
		if (s->lockhead < s->nlocks && s->locks[s->lockhead].off == s->qhead) {
			/* A call that held the lock before this one has not
			 * come yet: it is still in the kernel (or its record
			 * was lost). */
			uint64_t seq = s->locks[s->lockhead].seq;
			if (s->lock_next < seq && !all && !full) {
				if (!s->lock_wait_since) {
					s->lock_wait_since = now;
					s->lock_wait_drops = s->dropped_told;
				}
				/* (once records were lost, the missing one
				 * may be among them) */
				if (now - s->lock_wait_since < STREAM_LOCK_WAIT_NS &&
				    s->dropped_told == s->lock_wait_drops)
					break;
			}
			if (s->lock_next < seq)
				lock_skip(s, seq);
			s->lock_wait_since = 0;
			s->lockhead++;
		}
		if (h->kind == SR_STACK && qh.len >= sizeof(struct sr_stack)) {
			struct sr_stack k;
			memcpy(&k, rec, sizeof(k));
			if (k.h.pad == STACK_IN_SK && qh.len >= sizeof(k) + 8) {
				uint64_t at;
				memcpy(&at, rec + sizeof(k), sizeof(at));
				on_stack(r, s, &k, s->sk + at);
				sk_free(s, at, round8(k.size));
			} else if (k.size <= qh.len - sizeof(k)) {
				s->qstack -= k.size <= s->qstack ? k.size : s->qstack;
				on_stack(r, s, &k, rec + sizeof(k));
			}
		} else {
			process(r, s, rec, qh.len, qh.pad);
		}
		s->qhead += sizeof(qh) + qh.len;
	}
	if (s->qhead == s->qtail) {
		s->qhead = s->qtail = 0;
		s->qstack = 0;
		s->nlocks = s->lockhead = 0;
	} else if (s->lockhead > 4096) {
		memmove(s->locks, s->locks + s->lockhead, (s->nlocks - s->lockhead) * sizeof(*s->locks));
		s->nlocks -= s->lockhead;
		s->lockhead = 0;
	}
}

void stream_window_free(struct stream *s)
{
	free(s->sk);
	free(s->q);
	free(s->locks);
	free(s->vmas);
}
