/*
 * stacks.c - call stacks, interned and symbolized: of ptrace-stopped tasks,
 * and from the copies the stream backend's kernel side makes at a call.
 *
 * Unwinding is stackunw.c's.  Symbolization: at the first sight of an ip
 * we note its module (path, dev, inode from the per-process copy of
 * /proc/PID/maps) and file offset; at finish each module's ELF symbols are
 * read once (symbolize.c).
 */
#include "stacks_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#define DEBUG_ROOT "/usr/lib/debug"

/* ---- processes and tasks of the ptrace backend -------------------------- */
static struct sproc *proc_get(struct vmr_stacks *s, uint32_t idx, pid_t tgid,
			      int *err)
{
	if (idx >= VMT_MAX_THREADS) {
		*err = -EINVAL;
		return NULL;
	}
	if (vmt_grow(&s->procs, &s->nprocs, (size_t)idx + 1, sizeof(*s->procs))) {
		*err = -ENOMEM;
		return NULL;
	}
	if (s->procs[idx])
		return s->procs[idx];
	struct sproc *p = stk_proc_new(s, tgid);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	s->procs[idx] = p;
	return p;
}

static struct stask *task_get(struct vmr_stacks *s, pid_t tid, uint32_t proc,
			      int *err)
{
	*err = 0;
	const uint64_t *i = vmt_htab_get(&s->task_by_tid, (uint64_t)tid, 0);
	if (i) {
		if (s->tasks[*i]->proc == proc)
			return s->tasks[*i];
		/* The tid now belongs to another process (reused without a
		 * task_gone): start afresh. */
		vmr_stacks_task_gone(s, tid);
	}
	pid_t tgid, ppid;
	if (vmr_task_ids(tid, &tgid, &ppid) || tgid <= 0)
		return NULL; /* gone: the capture fails, not the recording */
	struct sproc *p = proc_get(s, proc, tgid, err);
	if (!p)
		return NULL;
	struct stask *t = NULL;
	if (vmt_grow(&s->tasks, &s->captasks, s->ntasks + 1, sizeof(*s->tasks)) ||
	    !(t = calloc(1, sizeof(*t)))) {
		*err = -ENOMEM;
		return NULL;
	}
	if (vmt_htab_set(&s->task_by_tid, (uint64_t)tid, 0, s->ntasks)) {
		free(t);
		*err = -ENOMEM;
		return NULL;
	}
	t->tid = tid;
	t->proc = proc;
	t->gen = p->gen - 1; /* forces the UPT handle to be made */
	s->tasks[s->ntasks++] = t;
	p->ntasks++;
	return t;
}

void vmr_stacks_task_gone(struct vmr_stacks *s, pid_t tid)
{
	const uint64_t *slot = s ? vmt_htab_get(&s->task_by_tid, (uint64_t)tid, 0) : NULL;
	if (!slot)
		return;
	size_t i = (size_t)*slot;
	struct stask *t = s->tasks[i];
	vmt_htab_del(&s->task_by_tid, (uint64_t)tid, 0);
	s->tasks[i] = s->tasks[--s->ntasks];
	if (i < s->ntasks) /* (a slot that exists: no allocation) */
		*vmt_htab_get(&s->task_by_tid, (uint64_t)s->tasks[i]->tid, 0) = i;
	if (t->upt)
		_UPT_destroy(t->upt);
	struct sproc *p = t->proc < s->nprocs ? s->procs[t->proc] : NULL;
	if (p && --p->ntasks == 0) {
		/* The last task of the process: its caches go with it. */
		stk_proc_free(p);
		s->procs[t->proc] = NULL;
	}
	free(t);
}

void vmr_stacks_invalidate(struct vmr_stacks *s, pid_t pid)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nprocs; i++) {
		struct sproc *p = s->procs[i];
		if (p && p->tgid == pid)
			stk_proc_flush(s, p);
	}
}

/* ---- interning ---------------------------------------------------------- */
static uint64_t stack_hash(const uint64_t *ips, uint32_t depth)
{
	uint64_t h = depth;
	for (uint32_t i = 0; i < depth; i++)
		h = vmt_mix64(h ^ ips[i]) + i;
	return h;
}

static int stab_grow(struct vmr_stacks *s)
{
	size_t cap = s->stabcap ? s->stabcap * 2 : 256;
	uint32_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t id = 0; id < s->nstacks; id++) {
		size_t j = s->stacks[id].hash & (cap - 1);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = (uint32_t)id + 1;
	}
	free(s->stab);
	s->stab = t;
	s->stabcap = cap;
	return 0;
}

/* The id of the stack, *is_new set when it was added.  -ENOMEM. */
static int64_t intern(struct vmr_stacks *s, const uint64_t *ips,
		      uint32_t depth, int *is_new)
{
	uint64_t h = stack_hash(ips, depth);
	*is_new = 0;
	if ((s->nstacks + 1) * 2 > s->stabcap && stab_grow(s))
		return -ENOMEM;
	size_t j = h & (s->stabcap - 1);
	for (; s->stab[j]; j = (j + 1) & (s->stabcap - 1)) {
		const struct sstack *k = &s->stacks[s->stab[j] - 1];
		if (k->hash == h && k->depth == depth &&
		    !memcmp(s->ips + k->off, ips, depth * sizeof(*ips)))
			return s->stab[j] - 1;
	}
	if (s->nstacks >= UINT32_MAX - 1)
		return -ENOMEM;
	if (vmt_grow(&s->ips, &s->capips, s->nips + depth, sizeof(*s->ips)) ||
	    vmt_grow(&s->stacks, &s->capstacks, s->nstacks + 1, sizeof(*s->stacks)))
		return -ENOMEM;
	memcpy(s->ips + s->nips, ips, depth * sizeof(*ips));
	s->stacks[s->nstacks] = (struct sstack){ s->nips, depth, h };
	s->nips += depth;
	s->stab[j] = (uint32_t)s->nstacks + 1;
	*is_new = 1;
	s->st.stacks++;
	return (int64_t)s->nstacks++;
}

/* Note module and file offset of every ip of a new stack not seen before. */
static int place_ips(struct vmr_stacks *s, struct sproc *p, const uint64_t *ips,
		     uint32_t depth)
{
	for (uint32_t i = 0; i < depth; i++) {
		if (vmr_syms_has(s->syms, ips[i]))
			continue;
		int err;
		const struct smap *m = stk_find_code(s, p, ips[i], &err);
		if (err == -ENOMEM)
			return err;
		if (m)
			err = vmr_syms_add(s->syms, ips[i], m->module,
					   ips[i] - m->start + m->off);
		else
			err = vmr_syms_add(s->syms, ips[i], VMT_NONE, ips[i]);
		if (err)
			return err;
	}
	return 0;
}

/* ---- public API --------------------------------------------------------- */
struct vmr_stacks *vmr_stacks_new(unsigned max_depth, int *err)
{
	if (max_depth < 1 || max_depth > VMT_MAX_STACK_DEPTH) {
		*err = -EINVAL;
		return NULL;
	}
	struct vmr_stacks *s = calloc(1, sizeof(*s));
	if (!s || !(s->frame = calloc(max_depth, sizeof(*s->frame))) ||
	    !(s->syms = vmr_syms_new())) {
		if (s)
			free(s->frame);
		free(s);
		*err = -ENOMEM;
		return NULL;
	}
	s->max_depth = max_depth;
	if (stk_init(s)) {
		vmr_stacks_free(s);
		*err = -ENOMEM;
		return NULL;
	}
	s->mgen = 1;
	return s;
}

/* The registers of stopped task tid into s->ureg. */
static void get_regs(struct vmr_stacks *s, pid_t tid)
{
	s->regs_ok = 0;
#ifdef __x86_64__
	struct user_regs_struct r;
	if (ptrace(PTRACE_GETREGS, tid, 0, &r))
		return;
	uint64_t *u = s->ureg;
	u[UNW_X86_64_RAX] = r.rax, u[UNW_X86_64_RDX] = r.rdx, u[UNW_X86_64_RCX] = r.rcx;
	u[UNW_X86_64_RBX] = r.rbx, u[UNW_X86_64_RSI] = r.rsi, u[UNW_X86_64_RDI] = r.rdi;
	u[UNW_X86_64_RBP] = r.rbp, u[UNW_X86_64_RSP] = r.rsp, u[UNW_X86_64_R8] = r.r8;
	u[UNW_X86_64_R9] = r.r9, u[UNW_X86_64_R10] = r.r10, u[UNW_X86_64_R11] = r.r11;
	u[UNW_X86_64_R12] = r.r12, u[UNW_X86_64_R13] = r.r13, u[UNW_X86_64_R14] = r.r14;
	u[UNW_X86_64_R15] = r.r15, u[UNW_X86_64_RIP] = r.rip;
	s->regs_ok = 1;
#endif
}

/* The id of stack ips[depth], and when new its STACK event appended to w. */
static int add_stack(struct vmr_stacks *s, vmt_writer *w, const uint64_t *ips, uint32_t depth,
		     uint32_t thread, uint32_t proc, uint64_t ts, uint32_t *stack_id)
{
	int is_new;
	int64_t id = intern(s, ips, depth, &is_new);
	if (id < 0)
		return (int)id;
	if (is_new) {
		struct vmt_event ev = { .kind = VMT_EV_STACK, .thread = thread, .proc = proc,
					.ts_ns = ts };
		ev.u.stack.id = (uint32_t)id;
		ev.u.stack.depth = depth;
		ev.u.stack.ips = s->ips + s->stacks[id].off;
		int err = vmt_writer_append(w, &ev);
		if (err)
			return err;
	}
	*stack_id = (uint32_t)id;
	return 0;
}

int vmr_stacks_capture(struct vmr_stacks *s, vmt_writer *w, pid_t tid,
		       uint32_t thread, uint32_t proc, uint64_t ts,
		       uint32_t *stack_id)
{
	int err;
	*stack_id = VMT_NONE;
	s->st.captures++;
	struct stask *t = task_get(s, tid, proc, &err);
	if (!t) {
		s->st.failed++;
		return err == -ENOMEM ? err : 0;
	}
	struct sproc *p = s->procs[t->proc];
	if (t->gen != p->gen) {
		/* New task, or its process exec'd/unmapped code: libunwind's
		 * per-handle module image may be stale. */
		if (t->upt)
			_UPT_destroy(t->upt);
		if (!(t->upt = _UPT_create(tid)))
			return -ENOMEM;
		t->gen = p->gen;
	}
	get_regs(s, tid);
	s->copy = NULL;
	uint32_t depth = stk_unwind(s, p, t);
	if (depth == 0) {
		s->st.failed++;
		return 0;
	}
	if (depth == 1)
		s->st.shallow++;
	if ((err = place_ips(s, p, s->frame, depth)))
		return err;
	return add_stack(s, w, s->frame, depth, thread, proc, ts, stack_id);
}

/* ---- stacks from copies ------------------------------------------------- */
/*
 * A copy is unwound after the fact, when /proc shows the process as it is
 * now, perhaps exec'd or gone.  So a copy's process is "modelled": its
 * file mappings are those the trace says it has, from its exec's MAPS and
 * the calls since (vmr_stacks_copy_*), never reread.  A process whose
 * exec was not seen (attached to, adopted) reads /proc once instead.
 */

/* The copy process of trace process proc, made when new. */
static struct sproc *cproc(struct vmr_stacks *s, uint32_t proc, pid_t tgid)
{
	int err;
	return proc_get(s, proc, tgid, &err);
}

static struct sproc *cproc_find(struct vmr_stacks *s, uint32_t proc)
{
	return s && proc < s->nprocs ? s->procs[proc] : NULL;
}

/* Remove [start, end) from p's mappings, cutting those it overlaps.
 * 1 if that changed them, 0 if none overlapped, -ENOMEM (p left as it
 * was). */
static int maps_cut(struct sproc *p, uint64_t start, uint64_t end)
{
	if (vmt_grow(&p->maps, &p->capmaps, p->nmaps + 1, sizeof(*p->maps)))
		return -ENOMEM;
	struct smap *m = p->maps;
	for (size_t i = 0; i < p->nmaps; i++)
		if (m[i].start < start && m[i].end > end) {
			/* The cut is inside one mapping (the only one it
			 * overlaps): it becomes two. */
			memmove(&m[i + 2], &m[i + 1], (p->nmaps - i - 1) * sizeof(*m));
			m[i + 1] = m[i];
			m[i].end = start;
			m[i + 1].off += end - m[i + 1].start;
			m[i + 1].start = end;
			p->nmaps++;
			return 1;
		}
	size_t n = 0, was = p->nmaps;
	int changed = 0;
	for (size_t i = 0; i < p->nmaps; i++) {
		struct smap x = m[i];
		if (x.start < end && start < x.end) {
			changed = 1;
			if (x.start < start) {
				x.end = start;
			} else if (x.end > end) {
				x.off += end - x.start;
				x.start = end;
			} else {
				continue;
			}
		}
		m[n++] = x;
	}
	p->nmaps = n;
	return changed || n != was;
}

/* Put x into p's mappings (sorted; where maps_cut made room). */
static int maps_insert(struct sproc *p, const struct smap *x)
{
	if (vmt_grow(&p->maps, &p->capmaps, p->nmaps + 1, sizeof(*p->maps)))
		return -ENOMEM;
	size_t i = p->nmaps;
	while (i > 0 && p->maps[i - 1].start >= x->end)
		i--;
	memmove(&p->maps[i + 1], &p->maps[i], (p->nmaps - i) * sizeof(*p->maps));
	p->maps[i] = *x;
	p->nmaps++;
	return 0;
}

/* A layout change of an unmodelled process: reread at the next need when
 * it touches what was read. */
static void unmodelled_change(struct vmr_stacks *s, struct sproc *p, uint64_t start,
			      uint64_t end)
{
	for (size_t i = 0; p->maps_valid && i < p->nmaps; i++)
		if (p->maps[i].start < end && start < p->maps[i].end) {
			stk_proc_flush(s, p);
			return;
		}
}

void vmr_stacks_copy_maps(struct vmr_stacks *s, uint32_t proc, pid_t tgid,
			  const struct vmt_map_entry *e, uint32_t n)
{
	struct sproc *p = s ? cproc(s, proc, tgid) : NULL;
	if (!p)
		return;
	stk_proc_flush(s, p);
	p->tgid = tgid;
	p->nmaps = 0;
	p->modelled = e != NULL;
	p->maps_valid = p->modelled;
	for (uint32_t i = 0; e && i < n; i++) {
		if (e[i].path[0] != '/')
			continue;
		uint32_t mod = vmr_syms_module(s->syms, e[i].path, e[i].dev, e[i].ino);
		struct smap x = { e[i].start, e[i].end, e[i].offset, mod,
				  !!(e[i].perms & VMT_PROT_X) };
		if (mod == VMT_NONE || maps_insert(p, &x))
			p->modelled = p->maps_valid = 0; /* (out of memory: /proc) */
	}
}

void vmr_stacks_copy_map(struct vmr_stacks *s, uint32_t proc, uint64_t start, uint64_t end,
			 uint64_t off, int exec, const struct vmt_map_file *f)
{
	struct sproc *p = cproc_find(s, proc);
	if (!p)
		return;
	if (!p->modelled) {
		unmodelled_change(s, p, start, end);
		return;
	}
	uint32_t mod = f && f->path[0] == '/' ? vmr_syms_module(s->syms, f->path, f->dev, f->ino)
					      : VMT_NONE;
	struct smap x = { start, end, off, mod, exec };
	int cut = maps_cut(p, start, end);
	if (cut < 0 || (f && (mod == VMT_NONE || maps_insert(p, &x))))
		p->modelled = p->maps_valid = 0;
	if (cut || f)
		stk_proc_flush(s, p); /* (not for an anonymous mapping: no code) */
}

void vmr_stacks_copy_unmap(struct vmr_stacks *s, uint32_t proc, uint64_t start, uint64_t end)
{
	struct sproc *p = cproc_find(s, proc);
	if (!p)
		return;
	if (!p->modelled) {
		unmodelled_change(s, p, start, end);
		return;
	}
	int cut = maps_cut(p, start, end);
	if (cut < 0)
		p->modelled = p->maps_valid = 0;
	if (cut)
		stk_proc_flush(s, p);
}

void vmr_stacks_copy_move(struct vmr_stacks *s, uint32_t proc, uint64_t old, uint64_t oldlen,
			  uint64_t new, uint64_t newlen)
{
	struct sproc *p = cproc_find(s, proc);
	if (!p)
		return;
	if (!p->modelled) {
		unmodelled_change(s, p, old, old + oldlen);
		unmodelled_change(s, p, new, new + newlen);
		return;
	}
	/* What moves: the part of the old range the new one keeps; a grown
	 * mapping grows its last file mapping if that reached the old end. */
	uint64_t keep = oldlen < newlen ? oldlen : newlen;
	struct smap *moved = NULL;
	size_t nmoved = 0, capmoved = 0;
	int bad = maps_cut(p, old + keep, old + oldlen) < 0;
	for (size_t i = 0; !bad && i < p->nmaps; i++) {
		const struct smap *m = &p->maps[i];
		if (m->end <= old || m->start >= old + keep)
			continue;
		struct smap x = *m;
		if (x.start < old) {
			x.off += old - x.start;
			x.start = old;
		}
		if (x.end > old + keep)
			x.end = old + keep;
		if (x.end == old + keep && newlen > oldlen)
			x.end += newlen - oldlen;
		x.start = x.start - old + new;
		x.end = x.end - old + new;
		if (vmt_grow(&moved, &capmoved, nmoved + 1, sizeof(*moved)))
			bad = 1;
		else
			moved[nmoved++] = x;
	}
	bad = bad || maps_cut(p, old, old + keep) < 0 || maps_cut(p, new, new + newlen) < 0;
	for (size_t i = 0; !bad && i < nmoved; i++)
		bad = maps_insert(p, &moved[i]) != 0;
	free(moved);
	if (bad)
		p->modelled = p->maps_valid = 0;
	stk_proc_flush(s, p);
}

void vmr_stacks_copy_fork(struct vmr_stacks *s, uint32_t parent, uint32_t child, pid_t tgid)
{
	struct sproc *pp = cproc_find(s, parent), *c;
	if (!pp || !(c = cproc(s, child, tgid)))
		return;
	c->nmaps = 0;
	c->modelled = c->maps_valid = 0;
	if (!pp->modelled || vmt_grow(&c->maps, &c->capmaps, pp->nmaps, sizeof(*c->maps)))
		return;
	memcpy(c->maps, pp->maps, pp->nmaps * sizeof(*c->maps));
	c->nmaps = pp->nmaps;
	c->modelled = c->maps_valid = 1;
}

void vmr_stacks_copy_gone(struct vmr_stacks *s, uint32_t proc)
{
	struct sproc *p = cproc_find(s, proc);
	if (p && !p->ntasks) {
		stk_proc_free(p);
		s->procs[proc] = NULL;
	}
}

_Static_assert((int)VMR_NREGS == STK_NREGS && (int)VMR_REG_SP == (int)UNW_X86_64_RSP &&
	       (int)VMR_REG_IP == (int)UNW_X86_64_RIP && (int)VMR_REG_R15 == (int)UNW_X86_64_R15,
	       "vmr_reg numbers libunwind's x86-64 registers");

int vmr_stacks_capture_copy(struct vmr_stacks *s, vmt_writer *w, pid_t tgid, uint32_t thread,
			    uint32_t proc, uint64_t ts, const struct vmr_stack_copy *c,
			    uint32_t *stack_id)
{
	*stack_id = VMT_NONE;
	s->st.captures++;
	int err;
	struct sproc *p = proc_get(s, proc, tgid, &err);
	if (!p)
		return err;
	struct stask t = { .tid = tgid, .proc = proc };
	memcpy(s->ureg, c->regs, sizeof(s->ureg));
	s->regs_ok = 1;
	s->copy = c->data;
	s->copy_lo = c->base;
	s->copy_len = c->size;
	s->copy_holes = c->holes;
	uint32_t id, depth;
	int cut;
	if (!s->memo)
		s->memo = calloc(STK_MEMO_SLOTS, sizeof(*s->memo)); /* (NULL: none) */
	if (stk_memo_find(s, p, &id, &depth, &cut)) {
		s->copy = NULL;
		s->st.memo_hits++;
		s->st.shallow += depth == 1;
		s->st.cut += (unsigned)cut;
		*stack_id = id;
		return 0;
	}
	depth = stk_unwind(s, p, &t);
	if (depth == 0) {
		s->copy = NULL;
		s->st.failed++;
		return 0;
	}
	cut = s->past_copy && depth < s->max_depth;
	s->st.shallow += depth == 1;
	s->st.cut += (unsigned)cut;
	err = place_ips(s, p, s->frame, depth);
	if (!err)
		err = add_stack(s, w, s->frame, depth, thread, proc, ts, stack_id);
	if (!err)
		stk_memo_put(s, p, *stack_id, depth, cut);
	s->copy = NULL;
	return err;
}

int vmr_stacks_finish(struct vmr_stacks *s, vmt_writer *w, uint64_t ts)
{
	return vmr_syms_write(s->syms, w, ts, DEBUG_ROOT);
}

void vmr_stacks_get_stats(const struct vmr_stacks *s,
			  struct vmr_stacks_stats *st)
{
	*st = s->st;
	vmr_syms_counts(s->syms, &st->ips, &st->modules);
}

void vmr_stacks_free(struct vmr_stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ntasks; i++) {
		if (s->tasks[i]->upt)
			_UPT_destroy(s->tasks[i]->upt);
		free(s->tasks[i]);
	}
	for (size_t i = 0; i < s->nprocs; i++)
		stk_proc_free(s->procs[i]);
	stk_fini(s);
	stk_memo_free(s);
	free(s->tasks);
	free(s->procs);
	vmt_htab_free(&s->task_by_tid);
	vmr_syms_free(s->syms);
	vmr_maps_free(&s->mtext);
	free(s->ips);
	free(s->stacks);
	free(s->stab);
	free(s->umods);
	free(s->frame);
	free(s);
}
