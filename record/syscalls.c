/*
 * syscalls.c - one traced call: what is read at its entry stop (file
 * identity, page states of a range about to be discarded, call stack),
 * what is written at its exit stop, and the little per-process state the
 * next calls need (brk, System V attachments, code ranges).
 *
 * Events of a call: TOUCH and STACK are appended at the entry stop (a TOUCH
 * is "the state just before the next SYSCALL of this thread"; a STACK only
 * has to precede its first use).  MAP_FILE and SYSCALL are appended
 * together at the exit stop, so a MAP_FILE is always immediately followed
 * by its SYSCALL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <fcntl.h>
#include "recording_int.h"

#include "linux_abi.h"

/* [addr, addr+len) as a range, or 0 if empty or wrapping. */
static int range_of(uint64_t addr, uint64_t len, uint64_t *end)
{
	if (!len || addr + len < addr)
		return 0;
	*end = addr + len;
	return 1;
}

/* Pages that a call may take away (vmt_sc_discards), or, for MADV_COLD
 * and MADV_PAGEOUT, out of memory, or whose access an mprotect takes away
 * (to PROT_NONE or read-only): their states before the call.  Pages
 * touched before an mprotect(PROT_NONE) and discarded after it (a JIT's
 * or a garbage collector's uncommit: node takes 40% of its faults on
 * them) would otherwise be seen only at the discard, where the replay
 * can no longer touch them. */
static void touch_before(struct vmr_rec *r, struct vmr_task *t, uint32_t op,
			 const uint64_t *a, uint64_t ts)
{
	struct vmt_syscall sc = {.op = op, .nargs = VMT_MAX_ARGS};
	struct vmt_range rg[2];
	uint64_t pm = r->page_size - 1;

	memcpy(sc.args, a, sizeof(sc.args));
	if ((op == VMT_OP_MPROTECT || op == VMT_OP_PKEY_MPROTECT) && !(a[2] & LX_PROT_WRITE)) {
		uint64_t e;
		if (!(a[0] & pm) && range_of(a[0], (a[1] + pm) & ~pm, &e))
			vmr_touch_range(r, t, a[0], e, VMT_TOUCH_BEFORE_OP, ts);
		return;
	}
	if (!vmt_sc_discards(&sc) &&
	    !(op == VMT_OP_MADVISE && (a[2] == LX_MADV_COLD || a[2] == LX_MADV_PAGEOUT)))
		return;
	switch (op) {
	case VMT_OP_MREMAP:
		/* Without a move, a shrink drops the tail only. */
		if (!(a[3] & (LX_MREMAP_MAYMOVE | LX_MREMAP_FIXED))) {
			uint64_t e;
			if (range_of(a[0], a[1], &e))
				vmr_touch_range(r, t, a[0] + ((a[2] + pm) & ~pm), e,
						VMT_TOUCH_BEFORE_OP, ts);
			return;
		}
		break;
	case VMT_OP_BRK: {
		uint64_t cur = t->proc->brk_cur;
		if (!a[0] || !cur || a[0] >= cur)
			return;
		vmr_touch_range(r, t, (a[0] + pm) & ~pm, (cur + pm) & ~pm,
				VMT_TOUCH_BEFORE_OP, ts);
		return;
	}
	case VMT_OP_SHMDT:
		return; /* (the exit scan sees what a segment held) */
	default:
		break;
	}
	uint64_t e; /* (a wrapping range fails: nothing to see) */
	if (range_of(a[0], a[1], &e) && vmt_sc_ranges(&sc, r->page_size, rg) > 0)
		vmr_touch_range(r, t, rg[0].start, rg[0].end, VMT_TOUCH_BEFORE_OP, ts);
}

static int same_ipc_ns(pid_t tid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)tid);
	if (stat(path, &a) < 0 || stat("/proc/self/ns/ipc", &b) < 0)
		return 1; /* cannot tell: assume the common case */
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* t->path, allocated on first use; NULL when out of memory. */
char *vmr_task_path(struct vmr_task *t)
{
	if (!t->path)
		t->path = malloc(PATH_MAX);
	return t->path;
}

/* shmat: the segment's size from IPC_STAT (the tracer runs as root, so it
 * may stat any segment of its IPC namespace). */
static void shm_identity(struct vmr_task *t, int shmid, uint64_t shmflg)
{
	struct shmid_ds ds;

	if (!vmr_task_path(t))
		return;
	memset(&t->file, 0, sizeof(t->file));
	snprintf(t->path, PATH_MAX, "shm:%d", shmid);
	t->file.path = t->path;
	t->file.ino = (uint64_t)(uint32_t)shmid;
	t->file.open_flags = (shmflg & LX_SHM_RDONLY) ? O_RDONLY : O_RDWR;
	if (same_ipc_ns(t->tid) && shmctl(shmid, IPC_STAT, &ds) == 0) {
		t->file.size = ds.shm_segsz;
		t->file.mode = ds.shm_perm.mode & 0777;
	}
	t->flags |= T_HAVE_FILE;
}

void vmr_sc_entry(struct vmr_rec *r, struct vmr_task *t, uint32_t op,
		  const uint64_t *args, uint64_t ts)
{
	struct vmt_event *ev = &t->sc;
	const struct vmt_op_info *oi = vmt_op_info(op);

	ev->kind = VMT_EV_SYSCALL;
	ev->thread = t->thread;
	ev->proc = t->proc->index;
	ev->ts_ns = ts;
	ev->u.sc.op = op;
	ev->u.sc.nargs = oi ? oi->nargs : VMT_MAX_ARGS;
	memcpy(ev->u.sc.args, args, sizeof(ev->u.sc.args));
	ev->u.sc.result = 0;
	ev->u.sc.exit_ns = 0;
	ev->u.sc.stack_id = VMT_NONE;
	ev->u.sc.flags = 0;
	t->flags &= ~T_HAVE_FILE;
	t->flags |= T_IN_SC;

	if (r->faults)
		vmr_drain_faults(r, ts);
	if (op == VMT_OP_MMAP && !(args[3] & LX_MAP_ANONYMOUS) &&
	    (int)args[4] >= 0) {
		if (vmr_task_path(t)) {
			/* An fd that does not exist makes mmap fail with EBADF;
			 * the call is recorded without MAP_FILE then. */
			if (vmr_fd_identity(t->tid, (int)args[4], t->path,
					    PATH_MAX, &t->file) == 0)
				t->flags |= T_HAVE_FILE;
		}
	} else if (op == VMT_OP_SHMAT) {
		shm_identity(t, (int)args[0], args[2]);
	} else if (op == VMT_OP_SHMDT) {
		struct vmr_proc *p = t->proc;
		for (uint32_t i = 0; i < p->nshm; i++) {
			if (p->shm[i].addr == args[0]) {
				if (!vmr_task_path(t))
					break;
				t->file = p->shm[i].id;
				snprintf(t->path, PATH_MAX, "%s", p->shm[i].path);
				t->file.path = t->path;
				t->flags |= T_HAVE_FILE;
				break;
			}
		}
	}
	if (r->touch == VMR_TOUCH_RESIDENT && !t->proc->borrowed_mm)
		touch_before(r, t, op, args, ts);
	if (r->stacks) {
		int err = vmr_stacks_capture(r->stacks, r->w, t->tid, t->thread,
					     t->proc->index, ts,
					     &ev->u.sc.stack_id);
		if (err && !r->werr)
			r->werr = err;
	}
}

static void emit_call(struct vmr_rec *r, struct vmr_task *t)
{
	if (t->flags & T_HAVE_FILE) {
		struct vmt_event fe = {
			.kind = VMT_EV_MAP_FILE,
			.thread = t->sc.thread,
			.proc = t->sc.proc,
			.ts_ns = t->sc.ts_ns,
		};
		fe.u.file = t->file;
		vmr_emit(r, &fe);
	}
	vmr_emit(r, &t->sc);
	t->flags &= ~(T_IN_SC | T_HAVE_FILE);
}

void vmr_sc_abandon(struct vmr_rec *r, struct vmr_task *t)
{
	if (!(t->flags & T_IN_SC))
		return;
	t->sc.u.sc.flags |= VMT_SC_NO_RESULT;
	t->sc.u.sc.result = 0;
	t->sc.u.sc.exit_ns = t->sc.ts_ns;
	emit_call(r, t);
}

/* Code in [s, e) goes away: the stack module's cached unwind information
 * for the process may be stale. */
static void code_remove(struct vmr_rec *r, struct vmr_proc *p, uint64_t s,
			uint64_t e)
{
	if (vmr_code_remove(&p->code, s, e) && r->stacks)
		vmr_stacks_invalidate(r->stacks, p->pid);
}

static void track(struct vmr_rec *r, struct vmr_task *t, uint32_t op,
		  const uint64_t *a, int64_t rv)
{
	struct vmr_proc *p = t->proc;

	if (vmt_is_errno(rv))
		return; /* failed calls change nothing */
	switch (op) {
	case VMT_OP_BRK:
		p->brk_cur = (uint64_t)rv;
		break;
	case VMT_OP_SHMAT:
		if (vmt_grow(&p->shm, &p->shmcap, p->nshm + 1, sizeof(*p->shm)))
			break; /* (shmdt is then recorded without its file) */
		p->shm[p->nshm].addr = (uint64_t)rv;
		p->shm[p->nshm].id = t->file;
		snprintf(p->shm[p->nshm].path, sizeof(p->shm[p->nshm].path), "%s",
			 t->file.path ? t->file.path : "");
		p->nshm++;
		break;
	case VMT_OP_SHMDT:
		for (uint32_t i = 0; i < p->nshm; i++)
			if (p->shm[i].addr == a[0]) {
				p->shm[i] = p->shm[--p->nshm];
				break;
			}
		break;
	default:
		break;
	}
	if (!r->stacks)
		return;
	/* Code ranges for the stack cache: a call that changes the layout
	 * ends the code in its ranges, one that maps or makes executable
	 * memory starts some. */
	const struct vmt_op_info *oi = vmt_op_info(op);
	struct vmt_syscall sc = {.op = op, .nargs = VMT_MAX_ARGS, .result = rv};
	struct vmt_range rg[2];
	memcpy(sc.args, a, sizeof(sc.args));
	int n = vmt_sc_ranges(&sc, r->page_size, rg);
	if (!oi || n <= 0)
		return;
	if (oi->effects & VMT_OPE_LAYOUT)
		for (int k = 0; k < n; k++)
			code_remove(r, p, rg[k].start, rg[k].end);
	if (oi->arg[2] == VMT_ARG_PROT && (a[2] & LX_PROT_EXEC))
		vmr_code_add(&p->code, rg[0].start, rg[0].end); /* (lost on failure) */
}

void vmr_sc_exit(struct vmr_rec *r, struct vmr_task *t, int64_t rval,
		 uint64_t ts)
{
	t->sc.u.sc.result = rval;
	t->sc.u.sc.exit_ns = ts;
	track(r, t, t->sc.u.sc.op, t->sc.u.sc.args, rval);
	emit_call(r, t);
}

void vmr_sc_record(struct vmr_rec *r, struct vmr_task *t, const struct vmt_syscall *sc,
		   uint64_t t_enter)
{
	struct vmt_event *ev = &t->sc;
	const struct vmt_op_info *oi = vmt_op_info(sc->op);

	ev->kind = VMT_EV_SYSCALL;
	ev->thread = t->thread;
	ev->proc = t->proc->index;
	ev->ts_ns = t_enter;
	ev->u.sc = *sc;
	ev->u.sc.nargs = oi ? oi->nargs : VMT_MAX_ARGS;
	t->flags |= T_IN_SC;
	if (sc->op == VMT_OP_SHMDT && !(t->flags & T_HAVE_FILE)) {
		struct vmr_proc *p = t->proc;
		for (uint32_t i = 0; i < p->nshm; i++)
			if (p->shm[i].addr == sc->args[0] && vmr_task_path(t)) {
				t->file = p->shm[i].id;
				snprintf(t->path, PATH_MAX, "%s", p->shm[i].path);
				t->file.path = t->path;
				t->flags |= T_HAVE_FILE;
				break;
			}
	}
	if (!(sc->flags & VMT_SC_NO_RESULT))
		track(r, t, sc->op, sc->args, sc->result);
	emit_call(r, t);
}
