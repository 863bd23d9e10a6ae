/*
 * stacks.c - call stacks of ptrace-stopped tasks, interned and symbolized.
 *
 * Unwinding uses libunwind (remote address spaces) with these changes to
 * libunwind-ptrace's defaults, all for speed, since a stack is captured at
 * every traced syscall:
 *  - one address space per traced process with UNW_CACHE_GLOBAL and a
 *    larger cache, so a call site's unwind rules are looked up only the
 *    first time it is seen;
 *  - our own find_proc_info: the module holding an ip comes from a cached
 *    copy of /proc/PID/maps and the location of its .eh_frame_hdr table is
 *    read once per module file (ehframe.c); libunwind-ptrace instead
 *    rereads /proc/PID/maps and maps the whole module file every time the
 *    module changes from one frame to the next (and aborts the program on
 *    a table encoding it does not know).  It remains the fallback for code
 *    outside any readable file;
 *  - registers come from one PTRACE_GETREGS per capture instead of one
 *    PTRACE_PEEKUSER per register (x86-64);
 *  - tracee memory is read 4 KiB at a time with process_vm_readv into a
 *    small cache valid for one capture, instead of one PTRACE_PEEKDATA per
 *    word.  libunwind-ptrace calls our access_mem both with our argument
 *    and, from inside _UPT_find_proc_info, with its own UPT handle, so the
 *    capture in progress is found through a thread-local pointer.
 *
 * Symbolization: at the first sight of an ip we note its module (path, dev,
 * inode from the per-process copy of /proc/PID/maps) and file offset; at
 * finish each module's ELF symbols are read once (symbolize.c).
 */
#include "stacks.h"
#include "ehframe.h"
#include "symbolize.h"
#include "u64map.h"
#include "rec_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libunwind-ptrace.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#define DEBUG_ROOT "/usr/lib/debug"
#define UNW_CACHE_ENTRIES 1024 /* unwind rules cached per process */
#define MC_SLOTS 16	       /* memory cache: 16 blocks of 4 KiB */
#define MC_BLOCK 4096u

/* ---- state -------------------------------------------------------------- */
struct smap { /* one executable mapping of a process */
	uint64_t start, end, off;
	uint32_t module; /* VMT_NONE for anonymous code */
};

struct sproc {
	pid_t tgid;
	unsigned ntasks;
	uint32_t gen; /* bumped by invalidate: UPT handles are rebuilt */
	unw_addr_space_t as;
	struct smap *maps;
	size_t nmaps, capmaps;
	int maps_valid;
};

struct stask {
	pid_t tid;
	uint32_t proc;
	uint32_t gen;
	void *upt;
};

struct sstack {
	size_t off; /* into ips[] */
	uint32_t depth;
	uint64_t hash;
};

struct vmr_stacks {
	unsigned max_depth;
	unw_accessors_t acc;
	struct vmr_stacks_stats st;

	struct sproc **procs; /* by trace process index */
	size_t nprocs;
	struct stask **tasks;
	size_t ntasks, captasks;
	struct u64map task_by_tid;

	/* interned stacks */
	uint64_t *ips;
	size_t nips, capips;
	struct sstack *stacks;
	size_t nstacks, capstacks;
	uint32_t *stab; /* id + 1, 0 = empty */
	size_t stabcap;

	struct vmr_syms *syms; /* where each distinct ip lives */
	struct vmr_maps mtext;	/* scratch for read_maps */
	struct ehf_module *umods; /* unwind tables, by module index */
	size_t numods;

	/* the capture in progress */
	pid_t cur_tid;
	uint64_t *frame; /* max_depth ips */
	int regs_ok;
	int maps_reread; /* this capture reread maps for an unknown ip */
#ifdef __x86_64__
	struct user_regs_struct regs;
#endif
	int no_pvr; /* process_vm_readv refused: use PTRACE_PEEKDATA */
	uint32_t mgen;
	uint64_t mc_addr[MC_SLOTS];
	uint32_t mc_gen[MC_SLOTS];
	unsigned char mc_data[MC_SLOTS][MC_BLOCK];
};

static __thread struct vmr_stacks *cur_stacks;

/* ---- libunwind accessors ------------------------------------------------ */
static int read_direct(struct vmr_stacks *s, uint64_t addr, unw_word_t *val)
{
	if (!s->no_pvr) {
		struct iovec l = { val, sizeof(*val) };
		struct iovec r = { (void *)(uintptr_t)addr, sizeof(*val) };
		ssize_t n = process_vm_readv(s->cur_tid, &l, 1, &r, 1, 0);
		s->st.mem_reads++;
		if (n == (ssize_t)sizeof(*val))
			return 0;
		if (n < 0 && (errno == EPERM || errno == ENOSYS))
			s->no_pvr = 1;
		else
			return -UNW_EINVAL;
	}
	errno = 0;
	long w = ptrace(PTRACE_PEEKDATA, s->cur_tid, (void *)(uintptr_t)addr, 0);
	if (w == -1 && errno)
		return -UNW_EINVAL;
	*val = (unw_word_t)w;
	return 0;
}

static int acc_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
		   int write, void *arg)
{
	struct vmr_stacks *s = cur_stacks;
	if (write || !s)
		return -UNW_EINVAL; /* unwinding never writes */
	uint64_t blk = addr & ~(uint64_t)(MC_BLOCK - 1);
	if (s->no_pvr || addr - blk > MC_BLOCK - sizeof(*val))
		return read_direct(s, addr, val);
	unsigned slot = (unsigned)(blk / MC_BLOCK) % MC_SLOTS;
	if (s->mc_addr[slot] != blk || s->mc_gen[slot] != s->mgen) {
		struct iovec l = { s->mc_data[slot], MC_BLOCK };
		struct iovec r = { (void *)(uintptr_t)blk, MC_BLOCK };
		ssize_t n = process_vm_readv(s->cur_tid, &l, 1, &r, 1, 0);
		s->st.mem_reads++;
		if (n != (ssize_t)MC_BLOCK) {
			/* A block at the edge of a mapping: read the word. */
			s->mc_gen[slot] = s->mgen - 1;
			return read_direct(s, addr, val);
		}
		s->mc_addr[slot] = blk;
		s->mc_gen[slot] = s->mgen;
	}
	memcpy(val, s->mc_data[slot] + (addr - blk), sizeof(*val));
	return 0;
}

static int acc_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
		   int write, void *arg)
{
	struct stask *t = arg;
#ifdef __x86_64__
	struct vmr_stacks *s = cur_stacks;
	if (!write && s && s->regs_ok && reg >= 0 && reg <= UNW_X86_64_RIP) {
		const struct user_regs_struct *r = &s->regs;
		static const size_t off[] = {
			[UNW_X86_64_RAX] = offsetof(struct user_regs_struct, rax),
			[UNW_X86_64_RDX] = offsetof(struct user_regs_struct, rdx),
			[UNW_X86_64_RCX] = offsetof(struct user_regs_struct, rcx),
			[UNW_X86_64_RBX] = offsetof(struct user_regs_struct, rbx),
			[UNW_X86_64_RSI] = offsetof(struct user_regs_struct, rsi),
			[UNW_X86_64_RDI] = offsetof(struct user_regs_struct, rdi),
			[UNW_X86_64_RBP] = offsetof(struct user_regs_struct, rbp),
			[UNW_X86_64_RSP] = offsetof(struct user_regs_struct, rsp),
			[UNW_X86_64_R8] = offsetof(struct user_regs_struct, r8),
			[UNW_X86_64_R9] = offsetof(struct user_regs_struct, r9),
			[UNW_X86_64_R10] = offsetof(struct user_regs_struct, r10),
			[UNW_X86_64_R11] = offsetof(struct user_regs_struct, r11),
			[UNW_X86_64_R12] = offsetof(struct user_regs_struct, r12),
			[UNW_X86_64_R13] = offsetof(struct user_regs_struct, r13),
			[UNW_X86_64_R14] = offsetof(struct user_regs_struct, r14),
			[UNW_X86_64_R15] = offsetof(struct user_regs_struct, r15),
			[UNW_X86_64_RIP] = offsetof(struct user_regs_struct, rip),
		};
		unsigned long long v;
		memcpy(&v, (const char *)r + off[reg], sizeof(v));
		*val = (unw_word_t)v;
		return 0;
	}
#endif
	return _UPT_access_reg(as, reg, val, write, t->upt);
}

static int find_proc_info(struct vmr_stacks *s, struct stask *t,
			  unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need);

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip,
			      unw_proc_info_t *pi, int need, void *arg)
{
	return find_proc_info(cur_stacks, arg, as, ip, pi, need);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi,
				void *arg)
{
	_UPT_put_unwind_info(as, pi, ((struct stask *)arg)->upt);
}

static int acc_dyn_list(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	return _UPT_get_dyn_info_list_addr(as, addr, ((struct stask *)arg)->upt);
}

static int acc_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
		     int write, void *arg)
{
	return _UPT_access_fpreg(as, reg, val, write, ((struct stask *)arg)->upt);
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL; /* we never resume through libunwind */
}

static int acc_proc_name(unw_addr_space_t as, unw_word_t ip, char *buf,
			 size_t len, unw_word_t *off, void *arg)
{
	return _UPT_get_proc_name(as, ip, buf, len, off,
				  ((struct stask *)arg)->upt);
}

/* ---- processes, tasks, maps --------------------------------------------- */
static void proc_free(struct sproc *p)
{
	if (!p)
		return;
	if (p->as)
		unw_destroy_addr_space(p->as);
	free(p->maps);
	free(p);
}

/* Read the executable mappings of p from /proc/TGID/maps (the recorder's
 * parser, into the scratch copy s->mtext). */
static int read_maps(struct vmr_stacks *s, struct sproc *p)
{
	p->nmaps = 0;
	p->maps_valid = 0;
	int err = vmr_maps_read(&s->mtext, p->tgid);
	if (err)
		return err;
	s->st.maps_reads++;
	for (uint32_t i = 0; i < s->mtext.n; i++) {
		const struct vmt_map_entry *e = &s->mtext.e[i];
		if (!(e->perms & VMT_PROT_X))
			continue;
		uint32_t mod = VMT_NONE;
		if (*e->path) {
			mod = vmr_syms_module(s->syms, e->path, e->dev, e->ino);
			if (mod == VMT_NONE)
				return -ENOMEM;
		}
		if (vmt_grow(&p->maps, &p->capmaps, p->nmaps + 1, sizeof(*p->maps)))
			return -ENOMEM;
		p->maps[p->nmaps++] = (struct smap){ e->start, e->end, e->offset, mod };
	}
	p->maps_valid = 1; /* maps is sorted by address */
	return 0;
}

static const struct smap *find_map(const struct sproc *p, uint64_t ip)
{
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].end <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nmaps && p->maps[lo].start <= ip ? &p->maps[lo] : NULL;
}

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
	struct sproc *p = calloc(1, sizeof(*p));
	if (!p || !(p->as = unw_create_addr_space(&s->acc, 0))) {
		free(p);
		*err = -ENOMEM;
		return NULL;
	}
	unw_set_caching_policy(p->as, UNW_CACHE_GLOBAL);
	unw_set_cache_size(p->as, UNW_CACHE_ENTRIES, 0);
	p->tgid = tgid;
	s->procs[idx] = p;
	return p;
}

static struct stask *task_get(struct vmr_stacks *s, pid_t tid, uint32_t proc,
			      int *err)
{
	uint32_t i;
	*err = 0;
	if (u64map_get(&s->task_by_tid, (uint64_t)tid, &i)) {
		if (s->tasks[i]->proc == proc)
			return s->tasks[i];
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
	if (u64map_put(&s->task_by_tid, (uint64_t)tid, (uint32_t)s->ntasks)) {
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
	uint32_t i;
	if (!s || !u64map_get(&s->task_by_tid, (uint64_t)tid, &i))
		return;
	struct stask *t = s->tasks[i];
	u64map_del(&s->task_by_tid, (uint64_t)tid);
	s->tasks[i] = s->tasks[--s->ntasks];
	if (i < s->ntasks)
		u64map_put(&s->task_by_tid, (uint64_t)s->tasks[i]->tid, i);
	if (t->upt)
		_UPT_destroy(t->upt);
	struct sproc *p = t->proc < s->nprocs ? s->procs[t->proc] : NULL;
	if (p && --p->ntasks == 0) {
		/* The last task of the process: its caches go with it. */
		proc_free(p);
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
		if (!p || p->tgid != pid)
			continue;
		p->gen++;
		p->maps_valid = 0;
		unw_flush_cache(p->as, 0, 0);
	}
}

/* ---- unwind tables ------------------------------------------------------ */
/* libunwind's search of a remote .eh_frame_hdr table: exported by
 * libunwind (libunwind-ptrace itself calls it) though not in its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as,
					      unw_word_t ip,
					      unw_dyn_info_t *di,
					      unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* The unwind-table location of the module mapped at m, read once per
 * module file: through /proc/PID/map_files (the very file mapped, even if
 * deleted or replaced since), else the path under /proc/PID/root. */
static const struct ehf_module *module_unwind(struct vmr_stacks *s,
					      const struct sproc *p,
					      const struct smap *m)
{
	if (vmt_grow(&s->umods, &s->numods, (size_t)m->module + 1, sizeof(*s->umods)))
		return NULL;
	struct ehf_module *u = &s->umods[m->module];
	if (u->state != EHF_UNKNOWN)
		return u;
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx",
		 (int)p->tgid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *mpath;
	uint64_t dev, ino;
	if (fd < 0 && vmr_syms_module_info(s->syms, m->module, &mpath, &dev,
					   &ino) == 0 && mpath[0] == '/') {
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)p->tgid,
			 mpath);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) < 0 ||
				(st.st_dev == dev && st.st_ino != ino))) {
			close(fd); /* another file by now */
			fd = -1;
		}
	}
	if (fd < 0) {
		u->state = EHF_NONE;
		return u;
	}
	ehf_load(u, fd);
	close(fd);
	return u;
}

static int find_proc_info(struct vmr_stacks *s, struct stask *t,
			  unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need)
{
	struct sproc *p = s && t->proc < s->nprocs ? s->procs[t->proc] : NULL;
	const struct smap *m = NULL;
	if (p) {
		if (!p->maps_valid)
			read_maps(s, p);
		m = find_map(p, ip);
		if (!m && !s->maps_reread) {
			s->maps_reread = 1; /* code mapped since (dlopen) */
			read_maps(s, p);
			m = find_map(p, ip);
		}
	}
	const struct ehf_module *u = m && m->module != VMT_NONE
				     ? module_unwind(s, p, m) : NULL;
	uint64_t bias;
	if (u && u->state == EHF_ODD)
		return -UNW_ENOINFO; /* (libunwind-ptrace would abort) */
	if (u && u->state == EHF_OK &&
	    ehf_bias(u, m->start, m->off, ip - m->start + m->off, &bias) == 0) {
		unw_dyn_info_t di;
		memset(&di, 0, sizeof(di));
		di.start_ip = m->start;
		di.end_ip = m->end;
		di.gp = u->gp + bias;
		di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
		di.u.rti.segbase = bias + u->hdr_vaddr;
		di.u.rti.table_data = bias + u->hdr_vaddr + u->table_off;
		di.u.rti.table_len = u->fde_count * 8 / sizeof(unw_word_t);
		return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need, t);
	}
	/* Anonymous code, a file we cannot open, no .eh_frame_hdr: let
	 * libunwind-ptrace try (it also knows .debug_frame). */
	return _UPT_find_proc_info(as, ip, pi, need, t->upt);
}

/* ---- interning ---------------------------------------------------------- */
static uint64_t stack_hash(const uint64_t *ips, uint32_t depth)
{
	uint64_t h = depth;
	for (uint32_t i = 0; i < depth; i++)
		h = u64map_mix(h ^ ips[i]) + i;
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
		int err = 0;
		if (!p->maps_valid)
			err = read_maps(s, p);
		const struct smap *m = find_map(p, ips[i]);
		if (!m && !s->maps_reread && err != -ENOMEM) {
			s->maps_reread = 1; /* code mapped since (dlopen) */
			err = read_maps(s, p);
			m = find_map(p, ips[i]);
		}
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
	s->acc = (unw_accessors_t){
		.find_proc_info = acc_find_proc_info,
		.put_unwind_info = acc_put_unwind_info,
		.get_dyn_info_list_addr = acc_dyn_list,
		.access_mem = acc_mem,
		.access_reg = acc_reg,
		.access_fpreg = acc_fpreg,
		.resume = acc_resume,
		.get_proc_name = acc_proc_name,
	};
	s->mgen = 1;
	return s;
}

/* Unwind t into s->frame; returns the depth (0 when it failed). */
static uint32_t unwind(struct vmr_stacks *s, struct sproc *p, struct stask *t)
{
	s->cur_tid = t->tid;
	s->maps_reread = 0;
	s->mgen++; /* the tracee ran since the last capture */
#ifdef __x86_64__
	s->regs_ok = ptrace(PTRACE_GETREGS, t->tid, 0, &s->regs) == 0;
	if (!s->regs_ok)
		return 0;
#endif
	unw_cursor_t c;
	uint32_t depth = 0;
	cur_stacks = s;
	if (unw_init_remote(&c, p->as, t) == 0) {
		while (depth < s->max_depth) {
			unw_word_t ip;
			if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
				break;
			s->frame[depth++] = ip;
			if (unw_step(&c) <= 0)
				break;
		}
	}
	cur_stacks = NULL;
	return depth;
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
	uint32_t depth = unwind(s, p, t);
	if (depth == 0) {
		s->st.failed++;
		return 0;
	}
	int is_new;
	int64_t id = intern(s, s->frame, depth, &is_new);
	if (id < 0)
		return (int)id;
	if (is_new) {
		if ((err = place_ips(s, p, s->frame, depth)))
			return err;
		struct vmt_event ev = { .kind = VMT_EV_STACK, .thread = thread,
					.proc = proc, .ts_ns = ts };
		ev.u.stack.id = (uint32_t)id;
		ev.u.stack.depth = depth;
		ev.u.stack.ips = s->frame;
		if ((err = vmt_writer_append(w, &ev)))
			return err;
	}
	*stack_id = (uint32_t)id;
	return 0;
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
		proc_free(s->procs[i]);
	free(s->tasks);
	free(s->procs);
	u64map_free(&s->task_by_tid);
	vmr_syms_free(s->syms);
	vmr_maps_free(&s->mtext);
	free(s->ips);
	free(s->stacks);
	free(s->stab);
	free(s->umods);
	free(s->frame);
	free(s);
}
