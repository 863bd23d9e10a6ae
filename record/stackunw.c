/*
 * stackunw.c - unwinding a stack with libunwind's remote address spaces.
 *
 * These change libunwind-ptrace's defaults, all for speed, since a stack
 * is captured at every traced call:
 *  - one address space with a cache of unwind rules, so a call site's
 *    rules are looked up only the first time it is seen (and again after
 *    a capture of another process: the cache is flushed when the process
 *    changes).  (The cache takes a lock that masks signals, two system
 *    calls per step; UNW_CACHE_PER_THREAD would avoid it, but Debian's
 *    libunwind makes that the global cache, and UNW_CACHE_NONE is five
 *    times slower.);
 *  - a memo of copies' unwinds: what one read of the registers and the
 *    copy, checked word by word against the next copy of the same site,
 *    gives its stack without unwinding it (a loop's call site, at every
 *    iteration);
 *  - our own find_proc_info: the module holding an ip comes from a cached
 *    copy of /proc/PID/maps and the location of its .eh_frame_hdr table is
 *    read once per module file (ehframe.c); libunwind-ptrace instead
 *    rereads /proc/PID/maps and maps the whole module file every time the
 *    module changes from one frame to the next (and aborts the program on
 *    a table encoding it does not know).  It remains the fallback, for a
 *    stopped task, for code outside any readable file;
 *  - registers come from the caller (one PTRACE_GETREGS, or the copy the
 *    kernel made at the call) instead of one PTRACE_PEEKUSER each;
 *  - memory is read 4 KiB at a time into a small cache valid for one
 *    capture, instead of one PTRACE_PEEKDATA per word: from the stopped
 *    task with process_vm_readv, or, for a stack copied at the call while
 *    the program ran on, from the copy and from the module files mapped
 *    (their unwind tables).  Anything else of a running program has
 *    changed since, so such a stack ends where its copy does.
 *    libunwind-ptrace calls our access_mem both with our argument and,
 *    from inside _UPT_find_proc_info, with its own UPT handle, so the
 *    capture in progress is found through a thread-local pointer.
 */
#include "stacks_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define UNW_CACHE_ENTRIES 1024 /* unwind rules cached per process */

static __thread struct vmr_stacks *cur_stacks;

/* ---- module files ---------------------------------------------------------- */

/* The file mapped at m in p, open read-only: through /proc/PID/map_files
 * (the very file mapped, even if deleted or replaced since), else its path
 * under /proc/PID/root, else its path, when that is still the same inode.
 * -1 when none can be opened. */
static int module_open(struct vmr_stacks *s, const struct sproc *p, const struct smap *m)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)p->tgid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *mpath;
	uint64_t dev, ino;
	struct stat st;
	if (vmr_syms_module_info(s->syms, m->module, &mpath, &dev, &ino))
		return fd;
	/* (A copy is unwound after its call: by then another file may be
	 * mapped there, or the pid be another process's.) */
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != dev || st.st_ino != ino)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0 || mpath[0] != '/')
		return fd;
	for (int i = 0; i < 2 && fd < 0; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "/proc/%d/root%s", (int)p->tgid, mpath);
		else
			snprintf(path, sizeof(path), "%s", mpath);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != dev || st.st_ino != ino)) {
			close(fd); /* another file by now */
			fd = -1;
		}
	}
	return fd;
}

/* The file of module m, kept open for reads; -1 when it cannot be. */
static int module_fd(struct vmr_stacks *s, const struct sproc *p, const struct smap *m)
{
	if (vmt_grow(&s->mfiles, &s->nmfiles, (size_t)m->module + 1, sizeof(*s->mfiles)))
		return -1;
	struct mfile *f = &s->mfiles[m->module];
	if (f->state == 0) {
		f->state = -1;
		if (s->files_open < STK_MAX_FILES && (f->fd = module_open(s, p, m)) >= 0) {
			f->state = 1;
			s->files_open++;
		}
	}
	return f->state == 1 ? f->fd : -1;
}

static void files_close(struct vmr_stacks *s)
{
	for (size_t i = 0; i < s->nmfiles; i++)
		if (s->mfiles[i].state == 1)
			close(s->mfiles[i].fd);
	free(s->mfiles);
	s->mfiles = NULL;
	s->nmfiles = 0;
	s->files_open = 0;
}

/* ---- libunwind accessors ------------------------------------------------ */

/* A read the unwinding of a copy depends on. */
static void rlog(struct vmr_stacks *s, uint32_t reg, uint64_t addr, uint64_t val)
{
	if (!s->rlog_on)
		return;
	if (s->nrlog == STK_MEMO_READS) {
		s->rlog_full = 1;
		return;
	}
	s->rlog[s->nrlog++] = (struct umread){ reg, addr, val };
}

/* One word of a stopped task. */
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

/* Memory of a copy's process outside the copy: only where a module file
 * is mapped (its unwind tables), read from the file, 4 KiB blocks at a
 * time into the cache where the mapping holds the whole block. */
static int read_mapped(struct vmr_stacks *s, uint64_t addr, unw_word_t *val)
{
	const struct smap *m = s->cur_p ? stk_find_map(s->cur_p, addr, 0) : NULL;
	int fd = m && m->module != VMT_NONE ? module_fd(s, s->cur_p, m) : -1;
	if (fd < 0 || addr + sizeof(*val) > m->end)
		return -UNW_EINVAL;
	uint64_t blk = addr & ~(uint64_t)(STK_MC_BLOCK - 1);
	unsigned slot = (unsigned)(blk / STK_MC_BLOCK) % STK_MC_SLOTS;
	if (s->mc_addr[slot] == blk && s->mc_gen[slot] == s->mgen &&
	    addr - blk <= STK_MC_BLOCK - sizeof(*val)) {
		memcpy(val, s->mc_data[slot] + (addr - blk), sizeof(*val));
		return 0;
	}
	s->st.mem_reads++;
	if (blk >= m->start && blk + STK_MC_BLOCK <= m->end &&
	    addr - blk <= STK_MC_BLOCK - sizeof(*val) &&
	    vmt_pread_full(fd, s->mc_data[slot], STK_MC_BLOCK, blk - m->start + m->off) == 0) {
		s->mc_addr[slot] = blk;
		s->mc_gen[slot] = s->mgen;
		memcpy(val, s->mc_data[slot] + (addr - blk), sizeof(*val));
		return 0;
	}
	return vmt_pread_full(fd, val, sizeof(*val), addr - m->start + m->off) ? -UNW_EINVAL : 0;
}

static int acc_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
		   void *arg)
{
	struct vmr_stacks *s = cur_stacks;
	if (write || !s)
		return -UNW_EINVAL; /* unwinding never writes */
	if (s->copy) {
		if (addr >= s->copy_lo && addr - s->copy_lo <= s->copy_len &&
		    s->copy_len - (addr - s->copy_lo) >= sizeof(*val)) {
			/* (a page the copy could not read: nothing to say) */
			uint64_t o = addr - s->copy_lo, pg = s->copy_lo & ~4095ull;
			if (s->copy_holes & (1ull << ((addr - pg) / 4096 % 64) |
					     1ull << ((addr + 7 - pg) / 4096 % 64)))
				return -UNW_EINVAL;
			memcpy(val, s->copy + o, sizeof(*val));
			rlog(s, STK_NREGS, addr, *val);
			return 0;
		}
		int e = read_mapped(s, addr, val);
		/* (just above the copy, in no file: the stack went on) */
		if (e && addr >= s->copy_lo + s->copy_len &&
		    addr - (s->copy_lo + s->copy_len) < STK_PAST_COPY)
			s->past_copy = 1;
		return e;
	}
	uint64_t blk = addr & ~(uint64_t)(STK_MC_BLOCK - 1);
	if (s->no_pvr || addr - blk > STK_MC_BLOCK - sizeof(*val))
		return read_direct(s, addr, val);
	unsigned slot = (unsigned)(blk / STK_MC_BLOCK) % STK_MC_SLOTS;
	if (s->mc_addr[slot] != blk || s->mc_gen[slot] != s->mgen) {
		struct iovec l = { s->mc_data[slot], STK_MC_BLOCK };
		struct iovec r = { (void *)(uintptr_t)blk, STK_MC_BLOCK };
		ssize_t n = process_vm_readv(s->cur_tid, &l, 1, &r, 1, 0);
		s->st.mem_reads++;
		if (n != (ssize_t)STK_MC_BLOCK) {
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

static int acc_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
		   void *arg)
{
	struct stask *t = arg;
	struct vmr_stacks *s = cur_stacks;
	if (!write && s && s->regs_ok && reg >= 0 && reg < STK_NREGS) {
		*val = (unw_word_t)s->ureg[reg];
		rlog(s, (uint32_t)reg, 0, *val);
		return 0;
	}
	return t->upt ? _UPT_access_reg(as, reg, val, write, t->upt) : -UNW_EBADREG;
}

static int find_proc_info(struct vmr_stacks *s, struct stask *t, unw_addr_space_t as,
			  unw_word_t ip, unw_proc_info_t *pi, int need);

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need, void *arg)
{
	return find_proc_info(cur_stacks, arg, as, ip, pi, need);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/* (what dwarf_search_unwind_table allocated; the handle is unused) */
	_UPT_put_unwind_info(as, pi, ((struct stask *)arg)->upt);
}

static int acc_dyn_list(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	struct stask *t = arg;
	return t->upt ? _UPT_get_dyn_info_list_addr(as, addr, t->upt) : -UNW_ENOINFO;
}

static int acc_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
		     void *arg)
{
	struct stask *t = arg;
	return t->upt ? _UPT_access_fpreg(as, reg, val, write, t->upt) : -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL; /* we never resume through libunwind */
}

static int acc_proc_name(unw_addr_space_t as, unw_word_t ip, char *buf, size_t len,
			 unw_word_t *off, void *arg)
{
	struct stask *t = arg;
	return t->upt ? _UPT_get_proc_name(as, ip, buf, len, off, t->upt) : -UNW_ENOINFO;
}

/* ---- processes and their maps ----------------------------------------- */

int stk_init(struct vmr_stacks *s)
{
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
	if (!(s->as = unw_create_addr_space(&s->acc, 0)))
		return -ENOMEM;
	unw_set_caching_policy(s->as, UNW_CACHE_GLOBAL);
	unw_set_cache_size(s->as, UNW_CACHE_ENTRIES, 0);
	return 0;
}

void stk_fini(struct vmr_stacks *s)
{
	if (s->as)
		unw_destroy_addr_space(s->as);
	files_close(s);
}

struct sproc *stk_proc_new(struct vmr_stacks *s, pid_t tgid)
{
	struct sproc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tgid = tgid;
	p->serial = ++s->proc_serial;
	return p;
}

void stk_proc_free(struct sproc *p)
{
	if (!p)
		return;
	free(p->maps);
	free(p);
}

void stk_proc_flush(struct vmr_stacks *s, struct sproc *p)
{
	p->gen++;
	if (!p->modelled)
		p->maps_valid = 0;
	if (s->rules_of == p->serial)
		s->rules_of = 0; /* flushed at its next capture */
}

/* The executable and the file-backed mappings of p from /proc/TGID/maps
 * (the recorder's parser, into the scratch copy s->mtext). */
/* A digest of p's mappings, to tell whether a reread changed them. */
static uint64_t maps_digest(const struct sproc *p)
{
	uint64_t h = p->nmaps;
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct smap *m = &p->maps[i];
		h = (h ^ m->start) * 0x100000001b3ull;
		h = (h ^ m->end) * 0x100000001b3ull;
		h = (h ^ (m->off + ((uint64_t)m->module << 1) + (uint64_t)m->exec)) * 0x100000001b3ull;
	}
	return h;
}

int stk_read_maps(struct vmr_stacks *s, struct sproc *p)
{
	/* What was unwound with other mappings is not to be remembered as
	 * it is with these (the memo is keyed by gen). */
	uint64_t was = p->maps_valid ? maps_digest(p) : 0;
	int had = p->maps_valid;
	p->nmaps = 0;
	p->maps_valid = 0;
	int err = vmr_maps_read(&s->mtext, p->tgid);
	if (err) {
		p->gen++;
		return err;
	}
	s->st.maps_reads++;
	for (uint32_t i = 0; i < s->mtext.n; i++) {
		const struct vmt_map_entry *e = &s->mtext.e[i];
		int exec = !!(e->perms & VMT_PROT_X);
		if (!exec && e->path[0] != '/')
			continue;
		uint32_t mod = VMT_NONE;
		if (*e->path) {
			mod = vmr_syms_module(s->syms, e->path, e->dev, e->ino);
			if (mod == VMT_NONE) {
				p->gen++;
				return -ENOMEM;
			}
		}
		if (vmt_grow(&p->maps, &p->capmaps, p->nmaps + 1, sizeof(*p->maps))) {
			p->gen++;
			return -ENOMEM;
		}
		p->maps[p->nmaps++] = (struct smap){ e->start, e->end, e->offset, mod, exec };
	}
	p->maps_valid = 1; /* maps is sorted by address */
	if (!had || maps_digest(p) != was)
		p->gen++;
	return 0;
}

const struct smap *stk_find_map(const struct sproc *p, uint64_t addr, int code)
{
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= p->nmaps || p->maps[lo].start > addr || (code && !p->maps[lo].exec))
		return NULL;
	return &p->maps[lo];
}

const struct smap *stk_find_code(struct vmr_stacks *s, struct sproc *p, uint64_t ip, int *err)
{
	/* (A modelled process's mappings know no mprotect: any file mapping
	 * may hold code.) */
	*err = 0;
	if (!p->maps_valid)
		*err = stk_read_maps(s, p);
	const struct smap *m = stk_find_map(p, ip, !p->modelled);
	if (!m && !p->modelled && !s->maps_reread && *err != -ENOMEM) {
		s->maps_reread = 1; /* code mapped since (dlopen) */
		*err = stk_read_maps(s, p);
		m = stk_find_map(p, ip, 1);
	}
	return m;
}

/* ---- unwind tables ------------------------------------------------------ */
/* libunwind's search of a remote .eh_frame_hdr table: exported by
 * libunwind (libunwind-ptrace itself calls it) though not in its headers. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* The unwind-table location of the module mapped at m, read once per
 * module file. */
static const struct ehf_module *module_unwind(struct vmr_stacks *s, const struct sproc *p,
					      const struct smap *m)
{
	if (vmt_grow(&s->umods, &s->numods, (size_t)m->module + 1, sizeof(*s->umods)))
		return NULL;
	struct ehf_module *u = &s->umods[m->module];
	if (u->state != EHF_UNKNOWN)
		return u;
	int fd = module_open(s, p, m);
	if (fd < 0) {
		u->state = EHF_NONE;
		return u;
	}
	ehf_load(u, fd);
	close(fd);
	return u;
}

static int find_proc_info(struct vmr_stacks *s, struct stask *t, unw_addr_space_t as,
			  unw_word_t ip, unw_proc_info_t *pi, int need)
{
	struct sproc *p = s ? s->cur_p : NULL;
	int err;
	const struct smap *m = p ? stk_find_code(s, p, ip, &err) : NULL;
	const struct ehf_module *u = m && m->module != VMT_NONE ? module_unwind(s, p, m) : NULL;
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
	 * libunwind-ptrace try a stopped task (it also knows .debug_frame). */
	return t->upt ? _UPT_find_proc_info(as, ip, pi, need, t->upt) : -UNW_ENOINFO;
}

/* ---- unwinding ---------------------------------------------------------- */

uint32_t stk_unwind(struct vmr_stacks *s, struct sproc *p, struct stask *t)
{
	s->cur_tid = t->tid;
	s->cur_p = p;
	s->maps_reread = 0;
	/* The program ran since the last capture: what was read of its memory
	 * is stale.  Not what a copy's capture read from module files, which
	 * holds for as long as the same process keeps its mappings. */
	if (!s->copy || s->mc_proc != p->serial || s->mc_pgen != p->gen) {
		s->mgen++;
		s->mc_proc = p->serial;
		s->mc_pgen = p->gen;
	}
	if (!s->regs_ok)
		return 0;
	if (s->rules_of != p->serial) {
		unw_flush_cache(s->as, 0, 0);
		s->rules_of = p->serial;
	}
	unw_cursor_t c;
	uint32_t depth = 0;
	s->nrlog = 0;
	s->rlog_full = 0;
	s->past_copy = 0;
	s->rlog_on = s->copy && s->memo;
	uint32_t gen = p->gen;
	cur_stacks = s;
	if (unw_init_remote(&c, s->as, t) == 0) {
		while (depth < s->max_depth) {
			unw_word_t ip;
			if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
				break;
			s->frame[depth++] = ip;
			/* A copy's frame in code that is in no file known (JIT,
			 * unmapped since) ends its stack: without unwind tables
			 * libunwind would guess on from the frame pointer, and
			 * code without one (libc) makes the guess wrong. */
			int err;
			if (s->copy && !stk_find_code(s, p, ip, &err))
				break;
			if (unw_step(&c) <= 0)
				break;
		}
	}
	cur_stacks = NULL;
	s->cur_p = NULL;
	s->rlog_on = 0;
	if (p->gen != gen)
		s->rlog_full = 1; /* (the mappings changed under the unwind: no memo) */
	return depth;
}

/* ---- the memo of copies' unwinds ------------------------------------------ */

static struct umemo *memo_slot(struct vmr_stacks *s, const struct sproc *p)
{
	uint64_t h = p->serial * 0x9e3779b97f4a7c15ull ^ s->ureg[UNW_X86_64_RIP];
	h = (h ^ s->ureg[UNW_X86_64_RSP]) * 0xff51afd7ed558ccdull;
	return &s->memo[(h >> 40) % STK_MEMO_SLOTS];
}

int stk_memo_find(struct vmr_stacks *s, const struct sproc *p, uint32_t *id, uint32_t *depth,
		  int *cut)
{
	if (!s->memo || !s->copy)
		return 0;
	const struct umemo *m = memo_slot(s, p);
	if (!m->reads || m->serial != p->serial || m->gen != p->gen ||
	    m->ip != s->ureg[UNW_X86_64_RIP] || m->sp != s->ureg[UNW_X86_64_RSP] ||
	    m->lo != s->copy_lo || m->len != s->copy_len || m->holes != s->copy_holes)
		return 0;
	/* (The same copy bounds: every address read lies in or out of this
	 * copy as it did in that one.) */
	for (uint32_t i = 0; i < m->nreads; i++) {
		const struct umread *r = &m->reads[i];
		uint64_t v;
		if (r->reg < STK_NREGS)
			v = s->ureg[r->reg];
		else
			memcpy(&v, s->copy + (r->addr - s->copy_lo), sizeof(v));
		if (v != r->val)
			return 0;
	}
	*id = m->id;
	*depth = m->depth;
	*cut = (int)m->cut;
	return 1;
}

void stk_memo_put(struct vmr_stacks *s, const struct sproc *p, uint32_t id, uint32_t depth,
		  int cut)
{
	if (!s->memo || !s->copy || s->rlog_full)
		return;
	struct umemo *m = memo_slot(s, p);
	struct umread *reads = realloc(m->reads, (s->nrlog ? s->nrlog : 1) * sizeof(*reads));
	if (!reads)
		return; /* (the old entry stays, still right for its copy) */
	memcpy(reads, s->rlog, s->nrlog * sizeof(*reads));
	*m = (struct umemo){ p->serial, s->ureg[UNW_X86_64_RIP], s->ureg[UNW_X86_64_RSP],
			     s->copy_lo, s->copy_len, s->copy_holes, p->gen, id, depth, (uint32_t)cut,
			     s->nrlog, reads };
}

void stk_memo_free(struct vmr_stacks *s)
{
	for (size_t i = 0; s->memo && i < STK_MEMO_SLOTS; i++)
		free(s->memo[i].reads);
	free(s->memo);
	s->memo = NULL;
}
