// SPDX-License-Identifier: GPL-2.0
/*
 * stream.bpf.c - the stream backend's programs: the memory-management
 * calls, tasks, execs and page faults of a traced process tree, written
 * into one BPF ring buffer that vmrec drains (record/stream.c), so that
 * the program is never stopped.
 *
 * Which processes: a hash map of thread group ids.  vmrec puts the root
 * in it (or the process it attaches to); sched_process_fork adds every
 * new process whose parent is in it, before the child first runs, and
 * sched_process_exit removes a thread group when its last task goes.
 *
 * A call is one record, written at its exit with what its entry saw
 * (task storage holds the entry in between).  The order of records in
 * the ring is the order of their reservations, one total order across
 * CPUs; for calls that take mmap_lock for writing, lock_seq is the exact
 * order in which they held it (exits can be reported in another order).
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "records.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the recorder before loading. */
const volatile unsigned int want_faults = 1;
const volatile unsigned int want_lock = 1;
const volatile unsigned int stack_bytes = 0; /* 0: no stacks */
const volatile unsigned long long wake_bytes = 1 << 20;
const volatile unsigned long long flow_bytes = 1 << 23; /* half the ring */
const volatile unsigned long long stack_room = 3 << 22; /* 3/4 of the ring */
/* Syscall numbers of the calls that create tasks (their flags say whether
 * a child is a vfork), -1 where the architecture lacks one. */
const volatile int nr_clone = -1, nr_clone3 = -1, nr_vfork = -1;
/* 1: the kernel has the VMA iterator's kfuncs (Linux 6.7).  The recorder
 * says: libbpf 1.1's loader program (record/streamload.c) mistakes a
 * weak kfunc's address check for a variable's and then leaves the kfunc
 * uncalled.  (0: the calls are dead code, which the verifier drops.) */
const volatile unsigned int vma_iter = 0;

/* Syscall number -> op (0: not recorded). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SR_MAX_NR);
	__type(key, u32);
	__type(value, u32);
} opmap SEC(".maps");

/* (Not preallocated: 65,536 elements on per-CPU free lists cost vmrec
 * 25-30 ms at every start; an element is allocated at a fork.) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u32);
} tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* the recorder sets the size */
} rb SEC(".maps");

/* 1 while the reader sleeps in its poll (it sets it, wake() clears it). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} waiting SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SR_STAT__COUNT);
	__type(key, u32);
	__type(value, u64);
} stats SEC(".maps");

/* A task's call in progress, and the flags of its last clone. */
struct pending {
	u64 args[6];
	u64 t_enter;
	u64 t_stack; /* the time naming its SR_STACK, 0: none */
	u64 lock_seq;
	u64 file; /* struct file * behind an mmap's fd, read at entry */
	u64 clone_flags;
	u64 off_ns; /* time off CPU inside the call so far */
	u64 t_out;  /* when it left the CPU (0: it is on one) */
	u32 vcsw, ivcsw; /* times it left the CPU inside the call */
	u32 op;
	u32 active;
	u32 lock_ok;
	u32 pad;
	/* Its last page-fault exception (the tracepoint's), until the
	 * kernel counts it (on_counted); f_time 0: none. */
	u64 f_addr, f_ip, f_err, f_time;
	/* Its min_flt and maj_flt as the records so far account for them
	 * (acct_ok 0: not yet set). */
	u64 acct_min, acct_maj;
	u32 acct_ok;
	u32 pad2;
	/* The top of the stack the task started on (0: not known): its
	 * first user sp, at its clone or exec.  Unwinding reads nothing of
	 * what lies above (struct pthread, TLS, argv and the environment),
	 * but for what a clone wrapper left there for the thread's first
	 * function (STACK_SLACK). */
	u64 stack_top;
};
#define STACK_SLACK 256

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending);
} pend SEC(".maps");

unsigned long long lock_counter = 0;


static __always_inline void count(u32 i)
{
	u64 *v = bpf_map_lookup_elem(&stats, &i);
	if (v)
		(*v)++;
}

/* Wake the reader once wake_bytes wait, and once only: a wake-up (an
 * interrupt to the CPU) costs more than a record, and the reader, once
 * awake, takes everything there is.  It says before it sleeps that it
 * waits (two CPUs may both see that and both wake it: harmless).  But
 * once half the ring waits, the reader is falling behind: every record
 * asks for a wake-up (the kernel folds those still pending), so that the
 * reader does not sleep while records wait.  Nothing here holds the
 * program back: past 3/4 stack copies are left out (stack_copy), and
 * what a full ring has no room for is lost and counted. */
static __always_inline u64 wake(void)
{
	u32 k = 0, *w;
	u64 avail = bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA);
	if (avail >= flow_bytes)
		return BPF_RB_FORCE_WAKEUP;
	if (avail < wake_bytes || !(w = bpf_map_lookup_elem(&waiting, &k)) || !*w)
		return BPF_RB_NO_WAKEUP;
	*w = 0;
	return BPF_RB_FORCE_WAKEUP;
}

static __always_inline int traced_tgid(u32 tgid)
{
	return bpf_map_lookup_elem(&tgids, &tgid) != 0;
}

static __always_inline int traced(void)
{
	return traced_tgid(bpf_get_current_pid_tgid() >> 32);
}

static __always_inline void *reserve(u64 size)
{
	void *p = bpf_ringbuf_reserve(&rb, size, 0);
	if (!p)
		count(SR_STAT_DROPPED);
	return p;
}

static __always_inline void hdr(struct sr_hdr *h, u16 kind, u16 size)
{
	u64 pt = bpf_get_current_pid_tgid();
	h->kind = kind;
	h->size = size;
	h->tid = (u32)pt;
	h->tgid = pt >> 32;
	h->pad = 0;
	h->time = bpf_ktime_get_ns();
}

/* The task's storage, made if it has none (a task that was running when
 * it was first traced: its faults count from now). */
static __always_inline struct pending *task_pend(struct task_struct *t)
{
	struct pending *p = bpf_task_storage_get(&pend, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (p && !p->acct_ok) {
		p->acct_min = t->min_flt;
		p->acct_maj = t->maj_flt;
		p->acct_ok = 1;
	}
	return p;
}

/* The faults the task's counters grew by that no record has told (less
 * the one being counted: less_min, less_maj), into *mn and *mj: told
 * from here on. */
static __always_inline void gup_take(struct task_struct *t, struct pending *p, u32 less_min,
				     u32 less_maj, u32 *mn, u32 *mj)
{
	*mn = *mj = 0;
	if (!want_faults || !p->acct_ok)
		return;
	u64 cmin = t->min_flt - less_min, cmaj = t->maj_flt - less_maj;
	if (cmin > p->acct_min)
		*mn = (u32)(cmin - p->acct_min);
	if (cmaj > p->acct_maj)
		*mj = (u32)(cmaj - p->acct_maj);
	p->acct_min = cmin;
	p->acct_maj = cmaj;
}

/* ... written as faults of the kernel's, outside a recorded call. */
static __always_inline void gup(struct task_struct *t, struct pending *p, u32 less_min,
				u32 less_maj)
{
	u32 mn, mj;
	gup_take(t, p, less_min, less_maj, &mn, &mj);
	if (!mn && !mj)
		return;
	struct sr_fault *e = reserve(sizeof(*e));
	if (!e)
		return;
	hdr(&e->h, SR_FAULT, sizeof(*e));
	e->addr = e->ip = e->error_code = 0;
	e->flags = SR_FAULT_GUP;
	e->count = mn;
	e->count_maj = mj;
	bpf_ringbuf_submit(e, wake());
}

/* Per-CPU scratch for the part of sp's page above sp (the ring record
 * takes it through bpf_dynptr_write, whose length may vary). */
struct stack_page {
	unsigned char b[SR_PAGE];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct stack_page);
} stack_scratch SEC(".maps");

/* The registers and the top of the user stack at a call's entry, in an
 * SR_STACK of time t (the call's SR_CALL names it by its t_stack).
 * Returns t, or 0 when there is no copy. */
static __always_inline u64 stack_copy(struct pt_regs *regs, struct pending *p, u64 t)
{
	const u32 cap = stack_bytes > SR_STACK_MAX ? SR_STACK_MAX : stack_bytes;
	/* Whole pages from the one sp is in: enough for cap bytes above sp
	 * wherever sp lies in its page. */
	const u32 room = ((cap + SR_PAGE - 1) & ~(u32)(SR_PAGE - 1)) + SR_PAGE;
	/* Past 3/4 of the ring the reader is far behind, and flow control has
	 * not slowed the program enough: give up this stack, not the calls
	 * that would follow it into a full ring. */
	if (bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) >= stack_room) {
		count(SR_STAT_STACKSKIP);
		return 0;
	}
	/* ... and no page above the top of the task's stack: what the
	 * unwinding reads is all below it (a thread's stack near its top,
	 * the common case, is one or two pages, not room's). */
	u64 from = regs->sp & ~(u64)(SR_PAGE - 1);
	u32 pages = room / SR_PAGE;
	if (p->stack_top > regs->sp) {
		u64 end = (p->stack_top + STACK_SLACK + SR_PAGE - 1) & ~(u64)(SR_PAGE - 1);
		if ((end - from) / SR_PAGE < pages)
			pages = (u32)((end - from) / SR_PAGE);
	}
	/* Of sp's page, only what lies above sp (to the next 8 bytes down):
	 * the copy starts there. */
	u64 lo = regs->sp & ~7ull;
	u32 first = SR_PAGE - (u32)(lo & (SR_PAGE - 1)); /* 8 .. SR_PAGE */
	u32 zero = 0;
	struct stack_page *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!sc)
		return 0;
	struct bpf_dynptr dp;
	if (bpf_ringbuf_reserve_dynptr(&rb, sizeof(struct sr_stack) + first + (pages - 1) * SR_PAGE,
				       0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		count(SR_STAT_DROPPED);
		return 0;
	}
	struct sr_stack *e = bpf_dynptr_data(&dp, 0, sizeof(*e));
	if (!e) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		return 0;
	}
	hdr(&e->h, SR_STACK, sizeof(*e));
	e->h.time = t;
	e->regs[0] = regs->ip;
	e->regs[1] = regs->sp;
	e->regs[2] = regs->bp;
	e->regs[3] = regs->bx;
	e->regs[4] = regs->r12;
	e->regs[5] = regs->r13;
	e->regs[6] = regs->r14;
	e->regs[7] = regs->r15;
	e->regs[8] = regs->ax;
	e->regs[9] = regs->cx;
	e->regs[10] = regs->dx;
	e->regs[11] = regs->si;
	e->regs[12] = regs->di;
	e->regs[13] = regs->r8;
	e->regs[14] = regs->r9;
	e->regs[15] = regs->r10;
	e->regs[16] = regs->r11;
	e->regs[17] = regs->flags;
	/* Whole pages, from the one sp is in up to `pages`: a page is there
	 * or not.  One that is not, below others that are, is a hole (a page
	 * a deep frame reserved and never wrote, or one swapped out): the
	 * copy goes on past it, as the frames above it are still there to
	 * unwind.  It ends after the last page that is there (the top of the
	 * stack). */
	u64 holes = 0, size = 0;
	if (first > SR_PAGE)
		first = SR_PAGE;
	if (first < 8)
		first = 8;
	if (bpf_probe_read_user(sc->b, first, (void *)lo) ||
	    bpf_dynptr_write(&dp, sizeof(*e), sc->b, first, 0))
		holes |= 1;
	else
		size = first;
	for (u32 i = 1; i < SR_STACK_MAX / SR_PAGE + 1; i++) {
		if (i >= pages)
			break;
		void *d = bpf_dynptr_data(&dp, sizeof(*e) + first + (i - 1) * SR_PAGE, SR_PAGE);
		if (!d || bpf_probe_read_user(d, SR_PAGE, (void *)(from + i * SR_PAGE))) {
			holes |= 1ull << i;
			continue;
		}
		size = first + i * SR_PAGE;
	}
	e->base = lo;
	e->size = size;
	/* (holes: of the pages from sp's, those below the last one copied) */
	e->holes = size ? holes & ((1ull << ((lo + size - from + SR_PAGE - 1) / SR_PAGE)) - 1) : 0;
	if (!size)
		count(SR_STAT_NOSTACK);
	e->h.size = sizeof(*e) + size;
	bpf_ringbuf_submit_dynptr(&dp, wake());
	return t;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_enter, struct pt_regs *regs, long id)
{
	u32 nr = (u32)id, *op;
	if (id < 0 || nr >= SR_MAX_NR)
		return 0;
	int clone = (int)id == nr_clone || (int)id == nr_clone3 || (int)id == nr_vfork;
	op = bpf_map_lookup_elem(&opmap, &nr);
	if (!clone && (!op || !*op))
		return 0;
	if (!traced())
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct pending *p = task_pend(t);
	if (!p)
		return 0;
	if (clone) {
		/* For sched_process_fork: is the child a vfork? */
		u64 flags = regs->di;
		if ((int)id == nr_vfork)
			flags = SR_CLONE_VM | SR_CLONE_VFORK;
		else if ((int)id == nr_clone3 && bpf_probe_read_user(&flags, sizeof(flags), (void *)regs->di))
			flags = 0;
		p->clone_flags = flags;
		return 0;
	}
	/* (the kernel's faults since the task's last record: not the call's) */
	gup(t, p, 0, 0);
	p->args[0] = regs->di;
	p->args[1] = regs->si;
	p->args[2] = regs->dx;
	p->args[3] = regs->r10;
	p->args[4] = regs->r8;
	p->args[5] = regs->r9;
	p->op = *op;
	p->active = 1;
	p->lock_ok = 0;
	p->file = 0;
	if (*op == SR_OP_MMAP && !(p->args[3] & SR_MAP_ANONYMOUS) && (s64)p->args[4] >= 0) {
		/* The file behind the fd now: it may be closed before the
		 * recorder looks (open, mmap, close). */
		struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
		unsigned int max = BPF_CORE_READ(fdt, max_fds);
		struct file **fda = BPF_CORE_READ(fdt, fd);
		u64 fd = p->args[4];
		struct file *f = 0;
		if (fd < max)
			bpf_probe_read_kernel(&f, sizeof(f), &fda[fd]);
		p->file = (u64)f;
	}
	/* The call's time starts after the stack copy, which is vmrec's
	 * cost, not the call's. */
	p->t_stack = stack_bytes ? stack_copy(regs, p, bpf_ktime_get_ns()) : 0;
	p->off_ns = p->t_out = 0;
	p->vcsw = p->ivcsw = 0;
	p->t_enter = bpf_ktime_get_ns();
	return 0;
}

/* A traced task inside a recorded call leaves or gets a CPU: the call's
 * time off CPU, and why it left (blocked, as on mmap_lock, or preempted),
 * counted as the kernel counts nvcsw and nivcsw.  (Every switch of the
 * machine passes here: a task without storage costs one lookup.) */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	u64 now = 0;
	struct pending *p = bpf_task_storage_get(&pend, prev, 0, 0);
	if (p && p->active) {
		now = bpf_ktime_get_ns();
		p->t_out = now;
		if (!preempt && prev_state)
			p->vcsw++;
		else
			p->ivcsw++;
	}
	p = bpf_task_storage_get(&pend, next, 0, 0);
	if (p && p->active && p->t_out) {
		if (!now)
			now = bpf_ktime_get_ns();
		/* (the entry time is read after the switch that may precede
		 * it: never more than the call's own time) */
		u64 from = p->t_out > p->t_enter ? p->t_out : p->t_enter;
		if (now > from)
			p->off_ns += now - from;
		p->t_out = 0;
	}
	return 0;
}

struct vma_ctx {
	u64 file;
};

static long vma_file(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	((struct vma_ctx *)data)->file = (u64)BPF_CORE_READ(vma, vm_file);
	return 0;
}

/* Per-CPU scratch for a path's names (the ring record is filled from it
 * once the walk is done). */
struct names {
	char comp[SR_PATH_SLOTS][SR_NAME_LEN];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct names);
} scratch SEC(".maps");

struct walk {
	struct dentry *d;
	struct mount *mnt;
	u32 n;
};

/* One step of a path walk, from the leaf up: a name, or a mount crossed.
 * Under bpf_loop, so that the verifier sees the step once, not each of
 * its iterations. */
static long walk_step(u32 i, void *ctx)
{
	struct walk *w = ctx;
	/* (Locals: CO-RE relocates accesses through kernel types only.) */
	struct dentry *d = w->d;
	struct mount *mnt = w->mnt;
	u32 zero = 0;
	/* (through the mount: a relocation of struct vfsmount's own would
	 * share a slot of the kernel's cache of CO-RE candidates with
	 * struct super_block's, and each load would look both up again in
	 * all of the kernel's types) */
	struct dentry *root = BPF_CORE_READ(mnt, mnt.mnt_root);
	if (d == root) {
		struct mount *pm = BPF_CORE_READ(mnt, mnt_parent);
		if (pm == mnt)
			return 1; /* the root of the namespace */
		w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
		w->mnt = pm;
		return 0;
	}
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	if (d == parent)
		return 1;
	if (w->n >= SR_PATH_SLOTS) {
		w->n = SR_PATH_SLOTS + 1; /* too deep: cut */
		return 1;
	}
	struct names *nm = bpf_map_lookup_elem(&scratch, &zero);
	if (!nm)
		return 1;
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	bpf_probe_read_kernel_str(nm->comp[w->n & (SR_PATH_SLOTS - 1)], SR_NAME_LEN, name);
	w->n++;
	w->d = parent;
	return 0;
}

/* The path of f into comp (leaf first); returns the number of names (more
 * than SR_PATH_SLOTS: cut). */
static __always_inline u32 file_path(struct file *f, char (*comp)[SR_NAME_LEN])
{
	u32 zero = 0;
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	struct vfsmount *vm = BPF_CORE_READ(f, f_path.mnt);
	struct walk w = { .d = d, .mnt = (void *)vm - bpf_core_field_offset(struct mount, mnt) };
	bpf_loop(2 * SR_PATH_SLOTS, walk_step, &w, 0);
	struct names *nm = bpf_map_lookup_elem(&scratch, &zero);
	if (!nm)
		return SR_PATH_SLOTS + 1;
	bpf_probe_read_kernel(comp, sizeof(nm->comp), nm->comp);
	return w.n;
}

/* The file's identity and its path, from the leaf up, across mounts. */
static __always_inline void file_identity(struct sr_file *e, struct file *f)
{
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	e->ino = BPF_CORE_READ(ino, i_ino);
	e->size = BPF_CORE_READ(ino, i_size);
	e->dev = BPF_CORE_READ(ino, i_sb, s_dev);
	e->f_flags = BPF_CORE_READ(f, f_flags);
	e->i_mode = BPF_CORE_READ(ino, i_mode);
	e->ncomp = file_path(f, e->comp);
}

/* The call's record, with the faults the kernel took during it through
 * get_user_pages (those of a populating call). */
static __always_inline void emit_call(struct task_struct *t, struct pending *p, s64 ret,
				      u32 no_result)
{
	u32 gmin, gmaj;
	gup_take(t, p, 0, 0, &gmin, &gmaj);
	struct sr_call *e = reserve(sizeof(*e));
	if (!e)
		return;
	hdr(&e->h, SR_CALL, sizeof(*e));
	e->op = p->op;
	e->lock_ok = p->lock_ok | (no_result << 1);
	e->ret = ret;
	for (int i = 0; i < 6; i++)
		e->args[i] = p->args[i];
	e->t_enter = p->t_enter;
	e->t_stack = p->t_stack;
	e->lock_seq = p->lock_seq;
	e->off_ns = p->off_ns;
	e->vcsw = p->vcsw;
	e->ivcsw = p->ivcsw;
	e->gup_min = gmin;
	e->gup_maj = gmaj;
	bpf_ringbuf_submit(e, wake());
}

/* A task's own counters (what getrusage(RUSAGE_THREAD) reads). */
static __always_inline void task_counters(struct task_struct *t, struct sr_counters *c)
{
	c->minflt = t->min_flt;
	c->majflt = t->maj_flt;
	c->nvcsw = t->nvcsw;
	c->nivcsw = t->nivcsw;
	c->utime = t->utime;
	c->stime = t->stime;
	c->rtime = t->se.sum_exec_runtime;
}

/* The file of the mapping a call made (before its SR_CALL, which comes
 * right after it in the task's records): that of the VMA at addr or,
 * when the VMA cannot be looked at (bpf_find_vma only trylocks
 * mmap_lock), the fd's at entry. */
static __always_inline void emit_file(struct task_struct *t, struct pending *p, u64 addr)
{
	struct sr_file *fe = reserve(sizeof(*fe));
	if (!fe)
		return;
	hdr(&fe->h, SR_FILE, sizeof(*fe));
	fe->addr = addr;
	struct vma_ctx c = {0};
	struct file *f = 0;
	if (!bpf_find_vma(t, addr, vma_file, &c, 0) && c.file)
		f = (struct file *)c.file;
	else
		f = (struct file *)p->file;
	if (!f) {
		count(SR_STAT_NOFILE);
		bpf_ringbuf_discard(fe, 0);
		return;
	}
	file_identity(fe, f);
	bpf_ringbuf_submit(fe, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pending *p = bpf_task_storage_get(&pend, t, 0, 0);
	if (!p || !p->active)
		return 0;
	p->active = 0;
	if (((p->op == SR_OP_MMAP && p->file) || p->op == SR_OP_SHMAT) && !(ret < 0 && ret > -4096))
		emit_file(t, p, (u64)ret);
	emit_call(t, p, ret, 0);
	return 0;
}

SEC("tp_btf/mmap_lock_acquire_returned")
int BPF_PROG(on_lock, struct mm_struct *mm, bool write, bool success)
{
	if (!want_lock || !write || !success)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct pending *p = bpf_task_storage_get(&pend, t, 0, 0);
	if (!p || !p->active || p->lock_ok)
		return 0;
	/* Under the write lock: holders of one mm take numbers in the
	 * order they held it. */
	p->lock_seq = __sync_fetch_and_add(&lock_counter, 1);
	p->lock_ok = 1;
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	u32 ptgid = parent->tgid, ctgid = child->tgid, one = 1;
	if (!traced_tgid(ptgid))
		return 0;
	if (ctgid != ptgid)
		bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
	if (want_faults || stack_bytes) {
		struct pending *c = bpf_task_storage_get(&pend, child, 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
		/* Its counters start at 0 (copy_process): all its faults are
		 * to be told. */
		if (c && want_faults)
			c->acct_ok = 1;
		/* The top of its stack: where its first sp is, on a stack of
		 * its own (a thread's); else it goes on on its parent's. */
		if (c && stack_bytes) {
			struct pt_regs *cr = (struct pt_regs *)bpf_task_pt_regs(child);
			struct pt_regs *pr = (struct pt_regs *)bpf_task_pt_regs(parent);
			struct pending *pp = bpf_task_storage_get(&pend, parent, 0, 0);
			u64 csp = 0, psp = 0;
			bpf_probe_read_kernel(&csp, sizeof(csp), &cr->sp);
			bpf_probe_read_kernel(&psp, sizeof(psp), &pr->sp);
			c->stack_top = csp != psp ? csp : pp ? pp->stack_top : 0;
		}
	}
	struct sr_fork *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	hdr(&e->h, SR_FORK, sizeof(*e));
	e->child_tid = child->pid;
	e->child_tgid = ctgid;
	e->same_mm = BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm);
	struct pending *p = bpf_task_storage_get(&pend, parent, 0, 0);
	e->vfork = p && (p->clone_flags & SR_CLONE_VFORK) != 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 u64 addr) __ksym __weak;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym __weak;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym __weak;

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	if (!traced())
		return 0;
	/* The kernel's faults up to here (the arguments it wrote into the
	 * new image's stack): before the exec's records. */
	struct pending *fp = task_pend(task);
	if (fp)
		gup(task, fp, 0, 0);
	/* The new image's stack: its top is where its arguments start. */
	if (fp && stack_bytes)
		fp->stack_top = BPF_CORE_READ(task, mm, start_stack);
	/* The new image's mappings, before its first instruction: the MAPS
	 * snapshot, without a stop.  (The loop keeps no state from one VMA
	 * to the next, so that the verifier sees its body once.) */
	u32 complete = 0;
	if (vma_iter) {
		struct bpf_iter_task_vma it;
		struct vm_area_struct *v;
		struct mm_struct *mm = BPF_CORE_READ(task, mm);
		u64 start_stack = BPF_CORE_READ(mm, start_stack);
		u64 start_brk = BPF_CORE_READ(mm, start_brk), brk = BPF_CORE_READ(mm, brk);
		complete = 1;
		bpf_iter_task_vma_new(&it, task, 0);
		while ((v = bpf_iter_task_vma_next(&it))) {
			struct sr_vma *ve = reserve(sizeof(*ve));
			if (!ve) {
				complete = 0;
				break;
			}
			hdr(&ve->h, SR_VMA, sizeof(*ve));
			ve->start = v->vm_start;
			ve->end = v->vm_end;
			ve->pgoff = v->vm_pgoff;
			ve->flags = v->vm_flags;
			struct file *f = BPF_CORE_READ(v, vm_file);
			ve->ino = f ? BPF_CORE_READ(f, f_inode, i_ino) : 0;
			ve->dev = f ? BPF_CORE_READ(f, f_inode, i_sb, s_dev) : 0;
			ve->special = ve->start <= start_stack && start_stack < ve->end ? 1
				      : !f && ve->start <= brk && ve->end >= start_brk && brk > start_brk ? 2
				      : 0;
			ve->name[0] = 0;
			if (!f && (ve->flags & SR_VM_DONTEXPAND)) {
				/* vdso, vvar: a vm_special_mapping, whose first
				 * member is its name. */
				const char *name = 0;
				bpf_probe_read_kernel(&name, sizeof(name), v->vm_private_data);
				if (name && bpf_probe_read_kernel_str(ve->name, sizeof(ve->name), name) > 0)
					ve->special = 3;
			}
			ve->file = (u64)f;
			bpf_ringbuf_submit(ve, BPF_RB_NO_WAKEUP);
		}
		bpf_iter_task_vma_destroy(&it);
	}
	struct sr_exec *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	hdr(&e->h, SR_EXEC, sizeof(*e));
	e->old_tid = old_pid;
	e->nvmas = 0; /* (counted by the reader) */
	e->complete = complete;
	/* The executable's path (a path walk per VMA would cost the verifier
	 * dearly; the reader finds the interpreter's from the executable). */
	struct file *exe = BPF_CORE_READ(bprm, file);
	e->file = (u64)exe;
	/* The process's counters up to here: the exec has waited until every
	 * other thread was released into the signal_struct's sums (de_thread),
	 * so these and the exec'ing task's own are all of it. */
	struct signal_struct *sig = BPF_CORE_READ(task, signal);
	task_counters(task, &e->group);
	e->group.minflt += BPF_CORE_READ(sig, min_flt);
	e->group.majflt += BPF_CORE_READ(sig, maj_flt);
	e->group.nvcsw += BPF_CORE_READ(sig, nvcsw);
	e->group.nivcsw += BPF_CORE_READ(sig, nivcsw);
	e->group.utime += BPF_CORE_READ(sig, utime);
	e->group.stime += BPF_CORE_READ(sig, stime);
	e->group.rtime += BPF_CORE_READ(sig, sum_sched_runtime);
	e->ncomp = file_path(exe, e->comp);
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), bprm->filename);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_task_exit, struct task_struct *task, bool group_dead)
{
	u32 tgid = task->tgid;
	if (!traced_tgid(tgid))
		return 0;
	/* A call the task never returned from (killed inside it). */
	struct pending *p = bpf_task_storage_get(&pend, task, 0, 0);
	if (p && p->active) {
		p->active = 0;
		emit_call(task, p, 0, 1);
	}
	if (p)
		gup(task, p, 0, 0);
	struct sr_exit *e = reserve(sizeof(*e));
	if (e) {
		hdr(&e->h, SR_EXIT, sizeof(*e));
		e->exit_code = task->exit_code;
		e->group_dead = group_dead;
		/* Its own counters, final but for what the kernel does for it
		 * on its way out (clearing its tid word, its last switch). */
		task_counters(task, &e->cnt);
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	}
	if (group_dead)
		bpf_map_delete_elem(&tgids, &tgid);
	return 0;
}

/* Page faults.  The trace has the faults the kernel counts in the task's
 * min_flt and maj_flt (mm/memory.c, mm_account_fault), and only those, so
 * that its count is the kernel's.  The fault tracepoints fire at every
 * fault exception, also for those the kernel does not count:
 *  - a bad access (a PROT_NONE page, as a garbage collector's barrier
 *    takes on purpose; an address with no mapping), which never gets to
 *    handle_mm_fault;
 *  - a fault that failed (VM_FAULT_ERROR: SIGBUS past the end of a file,
 *    out of memory);
 *  - a fault whose handling dropped its lock to wait (VM_FAULT_RETRY) and
 *    then found a signal pending: the kernel goes back to user space
 *    without counting it, and the instruction faults again.  (A retry in
 *    the kernel fires no tracepoint again: it is one exception.)
 * Where the kernel counts a fault with the exception's registers, it also
 * counts the perf software event PAGE_FAULTS_MIN or _MAJ: a program on
 * those (on_counted, on every CPU) writes the record, from what the
 * tracepoint kept in the task's storage (where, the instruction,
 * read/write/exec, when).  An exception that is never counted is replaced
 * by the task's next one, and never written.
 *
 * The kernel also counts faults it takes itself, through get_user_pages
 * (no registers, no event): to populate a mapping (MAP_POPULATE, mlock,
 * MADV_POPULATE_*), to pin a buffer, to write a new image's arguments, to
 * finish what a copy with page faults disabled could not.  No tracepoint
 * says which page; the task's counters say how many.  So the records of a
 * task account for its counters, and what they grew by besides is told
 * as faults of the kernel's: in a recorded call's record, those it took
 * (emit_call); in records of their own (gup()) those outside one, at the
 * task's next counted fault, recorded call, exec or exit.  (A counted
 * fault whose event the program missed, on a CPU that came online after
 * the start, is told so too: the count stays the kernel's.) */

static __always_inline int fault(unsigned long address, struct pt_regs *regs,
				 unsigned long error_code)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pending *p = bpf_task_storage_get(&pend, t, 0, 0);
	if (!p) {
		if (!traced() || !(p = task_pend(t)))
			return 0;
	}
	p->f_addr = address;
	p->f_ip = regs->ip;
	p->f_err = error_code;
	p->f_time = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return fault(address, regs, error_code);
}

/* Faults the kernel takes on the program's memory for it: read() into a
 * fresh buffer, a signal's frame.  The program's own rusage counts them
 * as it counts its own, and a replay touch redoes them.  Not the kernel's
 * faults on its own (upper-half) addresses, nor those with page faults
 * disabled (a copy that may not sleep: ours of the stacks, the kernel's
 * atomic copies), which never get to handle_mm_fault: where the kernel
 * then faults the page in, by a fault of its own or through
 * get_user_pages, that is the fault it counts. */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(on_kfault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	if ((long)address < 0 || bpf_get_current_task_btf()->pagefault_disabled)
		return 0;
	return fault(address, regs, error_code);
}

/* The kernel counted a fault of the current task with the exception's
 * registers (the perf software event PAGE_FAULTS_MIN, cookie 0, or
 * PAGE_FAULTS_MAJ, cookie 1, of this CPU; ctx->addr the faulting
 * address).  Every counted fault of the machine passes here: a task
 * without storage costs one lookup. */
SEC("perf_event")
int on_counted(struct bpf_perf_event_data *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pending *p = bpf_task_storage_get(&pend, t, 0, 0);
	if (!p)
		return 0; /* (not traced: its tracepoint made none) */
	u32 major = bpf_get_attach_cookie(ctx) != 0;
	u64 addr = ctx->addr, taken = p->f_time;
	/* (inside a recorded call, the kernel's own faults are the call's:
	 * its record tells them) */
	if (!p->active)
		gup(t, p, !major, major);
	if (major)
		p->acct_maj++;
	else
		p->acct_min++;
	p->f_time = 0;
	struct sr_fault *e = reserve(sizeof(*e));
	if (!e)
		return 0;
	hdr(&e->h, SR_FAULT, sizeof(*e));
	e->addr = addr;
	e->flags = major ? SR_FAULT_MAJOR : 0;
	e->count = e->count_maj = 0;
	if (taken && (p->f_addr ^ addr) < SR_PAGE) {
		e->h.time = taken;
		e->ip = p->f_ip;
		e->error_code = p->f_err;
	} else {
		/* (not seen: the kernel handles one fault of a task at a
		 * time, and its tracepoint comes first) */
		e->ip = ctx->regs.ip;
		e->error_code = 0;
		e->flags |= SR_FAULT_NOERR;
	}
	bpf_ringbuf_submit(e, wake());
	return 0;
}
