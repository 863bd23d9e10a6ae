/*
 * rt_main.c - the inproc runtime's set-up in a new image, its threads'
 * rings, and the recorded calls themselves (rt_call: the fast path of
 * patched call sites and the SIGSYS handler both end here).
 *
 * A ring is written only by its thread, and by signal handlers that
 * interrupt it (a handler may make recorded calls while the thread is in
 * the runtime): space is reserved with a compare-and-swap, a record is
 * committed by writing its header word last, and vmrec reads committed
 * records in order and zeroes them again.  A thread whose ring is full
 * waits for vmrec (nothing is dropped), except a nested writer, which
 * counts what it drops: its outer record, reserved and not yet committed,
 * may be what vmrec waits for.
 *
 * The order of the trace across threads comes from the calls' times.  So
 * that vmrec never takes a call as complete before one that started
 * earlier is known, a thread marks its ring busy (1) before it reads the
 * clock for a call, then stores the entry time there, and clears it once
 * the call's record is committed.
 */
#include "rt.h"

struct ip_params rt_params __attribute__((section(".data"))) = { .magic = 0 };
struct rt_proc rt_p;
long rt_init(struct ip_params *p);
long rt_fast(const uint64_t *v);

/* The header vmrec reads at IP_BASE. */
__attribute__((section(".ip_header"), used)) const struct ip_image rt_image = {
	.magic = IP_IMAGE_MAGIC,
	.version = IP_VERSION,
	.size = sizeof(struct ip_image),
	.gate_ip = (uint64_t)rt_gate_ip,
	.clone_ip = (uint64_t)rt_clone_ip,
	.gate = (uint64_t)rt_gate,
	.init = (uint64_t)rt_init,
	.trap_ret = (uint64_t)rt_trap_ret,
	.params = (uint64_t)&rt_params,
};

/* ---- time ------------------------------------------------------------ */

struct elf_ehdr {
	unsigned char ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff, shoff;
	uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf_shdr {
	uint32_t name, type;
	uint64_t flags, addr, offset, size;
	uint32_t link, info;
	uint64_t addralign, entsize;
};
struct elf_sym {
	uint32_t name;
	unsigned char info, other;
	uint16_t shndx;
	uint64_t value, size;
};

/* A function of the vDSO by name (its section headers are mapped). */
static void *vdso_sym(uint64_t base, const char *name)
{
	const struct elf_ehdr *e = (const void *)base;
	if (!base || memcmp(e->ident, "\177ELF", 4) || e->shentsize != sizeof(struct elf_shdr))
		return 0;
	const struct elf_shdr *sh = (const void *)(base + e->shoff);
	for (int i = 0; i < e->shnum; i++) {
		if (sh[i].type != 11 /* SHT_DYNSYM */ || sh[i].link >= e->shnum)
			continue;
		const struct elf_sym *s = (const void *)(base + sh[i].offset);
		const char *str = (const char *)(base + sh[sh[i].link].offset);
		for (uint64_t k = 0; k < sh[i].size / sizeof(*s); k++)
			if (s[k].shndx && !rt_strcmp(str + s[k].name, name))
				return (void *)(base + s[k].value);
	}
	return 0;
}

uint64_t rt_now(void)
{
	struct rt_timespec ts;
	if (!rt_p.vclock || rt_p.vclock(1 /* CLOCK_MONOTONIC */, &ts))
		rt_sys2(228 /* clock_gettime */, 1, (long)&ts);
	return (uint64_t)ts.sec * 1000000000ull + (uint64_t)ts.nsec;
}

/* ---- rings ----------------------------------------------------------- */

static struct ip_shared *shm(void)
{
	return rt_p.shm;
}

void rt_kick(void)
{
	struct ip_shared *h = shm();
	__atomic_fetch_add(&h->doorbell, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&h->sleeping, __ATOMIC_ACQUIRE))
		rt_futex_wake(&h->doorbell);
}

/* vmrec died: no record will be read again.  The program goes with it,
 * as it would under ptrace. */
static void vmrec_gone(void)
{
	rt_sys2(NR_kill, rt_p.pid, RT_SIGKILL);
}

/* Wait until s has room for `need` more bytes at `pos`. */
static void wait_room(struct ip_slot *s, uint64_t pos, uint64_t need)
{
	for (;;) {
		uint32_t seen = __atomic_load_n(&s->space, __ATOMIC_ACQUIRE);
		if (pos + need - __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) <= IP_RING_SIZE)
			return;
		if (__atomic_load_n(&shm()->dead, __ATOMIC_RELAXED))
			vmrec_gone();
		__atomic_store_n(&s->waiting, 1, __ATOMIC_SEQ_CST);
		rt_kick();
		/* (vmrec gone: its keeper says so, dead above) */
		rt_futex_wait(&s->space, seen, 20000000);
	}
}

int rt_put(struct rt_thread *t, uint32_t kind, void *rec, uint32_t len)
{
	struct ip_slot *s = t ? t->slot : 0;
	if (!s) {
		__atomic_fetch_add(&shm()->lost, 1, __ATOMIC_RELAXED);
		return -1;
	}
	unsigned char *ring = ip_ring_of(s);
	uint64_t pos, need, off;
	for (;;) {
		pos = __atomic_load_n(&s->resv, __ATOMIC_RELAXED);
		off = pos & (IP_RING_SIZE - 1);
		need = off + len > IP_RING_SIZE ? IP_RING_SIZE - off + len : len;
		if (pos + need - __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) > IP_RING_SIZE) {
			if (t->depth > 1) {
				__atomic_fetch_add(&s->lost, 1, __ATOMIC_RELAXED);
				return -1;
			}
			wait_room(s, pos, need);
			continue;
		}
		if (__atomic_compare_exchange_n(&s->resv, &pos, pos + need, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			break;
	}
	if (need != len) { /* fill the ring's end, then start over */
		struct ip_rec *pad = (struct ip_rec *)(ring + off);
		__atomic_store_n(&pad->word, IP_REC_WORD(IPR_PAD, IP_RING_SIZE - off), __ATOMIC_RELEASE);
		off = 0;
	}
	memcpy(ring + off + 4, (unsigned char *)rec + 4, len - 4);
	__atomic_store_n((uint32_t *)(ring + off), IP_REC_WORD(kind, len), __ATOMIC_RELEASE);
	/* A quarter full: vmrec drains now rather than at its next tick. */
	uint64_t used = pos + need - __atomic_load_n(&s->tail, __ATOMIC_RELAXED);
	if (used > IP_RING_SIZE / 4 && !__atomic_load_n(&s->kicked, __ATOMIC_RELAXED)) {
		__atomic_store_n(&s->kicked, 1, __ATOMIC_RELAXED);
		rt_kick();
	}
	return 0;
}

void rt_put_ready(struct rt_thread *t, uint32_t len)
{
	struct ip_slot *s = t ? t->slot : 0;
	if (!s)
		return;
	unsigned char *ring = ip_ring_of(s);
	uint64_t ps = rt_params.page_size ? rt_params.page_size : 4096;
	uint64_t off = __atomic_load_n(&s->resv, __ATOMIC_RELAXED) & (IP_RING_SIZE - 1);
	uint64_t end = off + len;
	if (end > IP_RING_SIZE) { /* the PAD record's word, then from the start */
		__atomic_fetch_or((uint32_t *)(void *)(ring + off), 0, __ATOMIC_RELAXED);
		off = 0;
		end = len;
	}
	/* (a write that changes nothing, to words vmrec may be reading) */
	for (uint64_t p = off & ~(ps - 1); p < end; p += ps)
		__atomic_fetch_or((uint32_t *)(void *)(ring + (p < off ? off & ~7ull : p)), 0,
				  __ATOMIC_RELAXED);
}

void rt_note(struct rt_thread *t, const char *text)
{
	struct {
		struct ip_rec h;
		char text[200];
	} n;
	size_t k = rt_strlen(text);
	if (k > sizeof(n.text) - 1)
		k = sizeof(n.text) - 1;
	memset(&n, 0, sizeof(n));
	memcpy(n.text, text, k);
	n.h.t = rt_now();
	rt_put(t, IPR_NOTE, &n, (uint32_t)((sizeof(n.h) + k + 1 + 7) & ~7u));
}

/* ---- threads --------------------------------------------------------- */

static struct rt_thread blocks[RT_MAX_THREADS];

void rt_set_gs(struct rt_thread *t)
{
	rt_sys2(NR_arch_prctl, RT_ARCH_SET_GS, (long)t);
}

/* A free slot for tid, claimed; NULL when every slot is taken. */
static struct ip_slot *claim_slot(int32_t tid, int32_t pid)
{
	struct ip_shared *h = shm();
	uint32_t n = h->nslots, start = ((uint32_t)tid * 2654435761u) % n;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (start + k) % n;
		struct ip_slot *s = ip_slot_at(h, i);
		uint32_t free_state = IP_SLOT_FREE;
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != IP_SLOT_FREE)
			continue;
		/* The bit before the claim: a thread killed right after it
		 * must not leave a LIVE slot that vmrec never looks at (a bit
		 * on a FREE slot costs a look).  And before the START
		 * record's time is read: a pass that does not see the bit
		 * began before it. */
		__atomic_fetch_or(&h->used[i / 64], 1ull << (i % 64), __ATOMIC_SEQ_CST);
		/* (tid and pid only once it is ours: a thread that loses the
		 * slot to another must not leave its pid in it.  A FREE slot
		 * has pid 0, so until then vmrec takes it for no process's.) */
		if (__atomic_compare_exchange_n(&s->state, &free_state, IP_SLOT_LIVE, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_store_n(&s->tid, tid, __ATOMIC_RELAXED);
			__atomic_store_n(&s->pid, pid, __ATOMIC_RELEASE);
			__atomic_fetch_add(&s->gen, 1, __ATOMIC_RELEASE);
			return s;
		}
	}
	return 0;
}

void rt_thread_ring(struct rt_thread *t, int32_t parent, uint32_t how)
{
	t->slot = claim_slot(t->tid, t->pid);
	if (!t->slot) {
		__atomic_fetch_add(&shm()->lost, 1, __ATOMIC_RELAXED);
		return;
	}
	struct ip_start st = { .tid = t->tid, .pid = t->pid, .parent_tid = parent, .how = how };
	/* (after the claim: vmrec takes rings it finds from the time it
	 * looked for them on, so a ring's times start after its claim) */
	st.h.t = rt_now();
	rt_put(t, IPR_START, &st, sizeof(st));
	rt_kick();
}

struct rt_thread *rt_thread_new(int32_t tid, int32_t pid, int32_t parent, uint32_t how)
{
	struct rt_thread *t = 0;
	for (int i = 0; i < RT_MAX_THREADS; i++) {
		uint32_t zero = 0;
		if (__atomic_compare_exchange_n(&blocks[i].used, &zero, 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			t = &blocks[i];
			break;
		}
	}
	if (!t)
		return 0;
	/* (not a memset: `used` must stay set, another thread may look) */
	t->slot = 0;
	t->depth = 0;
	t->vchild = 0;
	t->vfork_scratch = 0;
	t->self = t;
	t->magic = RT_THREAD_MAGIC;
	t->tid = tid;
	t->pid = pid;
	/* (vfork_stack is kept: a block's stack is its own) */
	rt_thread_ring(t, parent, how);
	return t;
}

void rt_thread_free(struct rt_thread *t)
{
	__atomic_store_n(&t->used, 0, __ATOMIC_RELEASE);
}

int rt_guarded(uint64_t a, uint64_t len)
{
	uint64_t e = a + len < a ? ~0ull : a + len;
	if (a < IP_END && e > IP_BASE)
		return 1;
	uint32_t n = rt_p.nown < 64 ? rt_p.nown : 64;
	for (uint32_t i = 0; i < n; i++)
		if (a < rt_p.own[i][1] && e > rt_p.own[i][0])
			return 1;
	return 0;
}

/* ---- the calls ------------------------------------------------------- */

#define MAP_SHARED_ 0x01
#define MAP_FIXED_ 0x10
#define MAP_ANON_ 0x20
#define MREMAP_FIXED_ 2
#define MAP_FIXED_NOREPLACE_ 0x100000

/* Would the call take away or change the runtime's own memory? */
static int hits_runtime(long nr, const uint64_t *a)
{
	switch (nr) {
	case NR_munmap:
	case NR_mprotect:
	case 329: /* pkey_mprotect */
	case NR_madvise:
		return rt_guarded(a[0], a[1]);
	case NR_mmap:
		return (a[3] & MAP_FIXED_) && rt_guarded(a[0], a[1]);
	case NR_mremap:
		return rt_guarded(a[0], a[1]) || ((a[3] & MREMAP_FIXED_) && rt_guarded(a[4], a[2]));
	default:
		return 0;
	}
}

struct call_rec {
	struct ip_call c;
	struct ip_file f;
	char path[1024]; /* (longer paths are cut) */
};

/* The identity of the file open on fd, into r (path after it). */
static uint32_t file_of(int fd, struct call_rec *r)
{
	struct {
		uint64_t dev, ino, nlink;
		uint32_t mode, uid, gid, pad;
		uint64_t rdev;
		int64_t size;
		char rest[96];
	} st;
	if (rt_sys2(NR_fstat, fd, (long)&st) < 0)
		return 0;
	r->f.dev = st.dev;
	r->f.ino = st.ino;
	r->f.size = (uint64_t)st.size;
	r->f.mode = st.mode;
	long fl = rt_sys2(NR_fcntl, fd, 3 /* F_GETFL */);
	long fd_fl = rt_sys2(NR_fcntl, fd, 1 /* F_GETFD */);
	r->f.open_flags = (uint32_t)(fl < 0 ? 0 : fl) | (fd_fl > 0 && (fd_fl & 1) ? 02000000u : 0);
	char link[40] = "/proc/self/fd/";
	rt_utoa(link + 14, (uint64_t)fd);
	long n = rt_sys3(NR_readlink, (long)link, (long)r->path, sizeof(r->path) - 1);
	if (n < 0)
		n = 0;
	r->path[n] = 0;
	uint32_t plen = (uint32_t)((n + 1 + 7) & ~7);
	memset(r->path + n, 0, plen - (uint32_t)n);
	r->f.pathlen = plen;
	return (uint32_t)sizeof(r->f) + plen;
}

long rt_call(struct rt_thread *t, long nr, const uint64_t *a)
{
	struct ip_slot *s = t->slot;
	int mine = 0;
	struct call_rec r;
	uint32_t extra = 0;

	t->depth++;
	r.c.h.t = rt_busy_begin(s, &mine);
	r.c.h.aux = (uint32_t)nr;
	r.c.flags = 0;
	r.c.pad = 0;
	for (int i = 0; i < 6; i++)
		r.c.args[i] = a[i];
	if (nr == NR_mmap && !(a[3] & MAP_ANON_) && (int)a[4] >= 0 && (extra = file_of((int)a[4], &r)))
		r.c.flags |= IPC_FILE;
	if (rt_params.flags & IP_F_RESIDENT)
		rt_touch_before(t, nr, a);
	long ret;
	if (hits_runtime(nr, a))
		ret = nr == NR_mmap ? -RT_ENOMEM : -RT_EINVAL;
	else
		ret = rt_gate(nr, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4], (long)a[5]);
	r.c.ret = ret;
	r.c.t_exit = rt_now();
	if (nr == NR_brk && (rt_params.flags & IP_F_RESIDENT))
		rt_touch_brk((uint64_t)ret);
	if (s)
		rt_put(t, IPR_CALL, &r, (uint32_t)sizeof(r.c) + extra);
	else
		__atomic_fetch_add(&shm()->lost, 1, __ATOMIC_RELAXED);
	rt_busy_end(s, mine);
	t->depth--;
	return ret;
}

/* From rt_fast_entry: v = { nr, a0..a5 }. */
long rt_fast(const uint64_t *v)
{
	long nr = (long)v[0];
	const uint64_t *a = v + 1;
	if (nr == NR_rt_sigprocmask)
		return rt_sigmask_call(a);
	if (nr >= 0 && nr < IP_MAX_NR && rt_params.op_of_nr[nr])
		return rt_call(rt_me(), nr, a);
	return rt_gate(nr, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4], (long)a[5]);
}

/* ---- set-up ------------------------------------------------------------ */

#define PROT_RW 3
#define MAP_SHARED_FIXED_NR (MAP_SHARED_ | MAP_FIXED_NOREPLACE_)

/* At an exec stop (vmrec calls it in the new image, before its first
 * instruction): the shared rings, the SIGSYS handler, the main thread's
 * block.  Returns 0 or -errno. */
long rt_init(struct ip_params *p)
{
	if (p != &rt_params || p->magic != IP_IMAGE_MAGIC)
		return -RT_EINVAL;
	rt_p.p = p;
	rt_p.pid = (int32_t)rt_sys0(NR_getpid);
	rt_p.vclock = (long (*)(int, struct rt_timespec *))vdso_sym(p->vdso, "__vdso_clock_gettime");
	/* The shared file: the descriptor an image before kept, or vmrec's,
	 * opened through /proc.  A process that changed its user since (su,
	 * setpriv, a server dropping root) may not open vmrec's (the kernel
	 * lets only who may trace vmrec look into its descriptors), and an
	 * unrelated user must not: so each process keeps one open across its
	 * execs (not close-on-exec, at IP_KEEP_FD or above, out of the way of
	 * the program's own), and its children inherit it. */
	long fd = p->shm_kept;
	if (fd < 0) {
		char path[64] = "/proc/";
		int k = 6;
		k += rt_utoa(path + k, (uint64_t)p->vmrec_pid);
		memcpy(path + k, "/fd/", 4);
		k += 4;
		rt_utoa(path + k, (uint64_t)p->shm_fd);
		fd = rt_sys3(NR_open, (long)path, 2 | 02000000 /* O_RDWR|O_CLOEXEC */, 0);
		if (fd < 0)
			return fd;
	}
	long m = rt_gate(NR_mmap, (long)IP_SHM_ADDR, (long)p->shm_size, PROT_RW,
			 MAP_SHARED_FIXED_NR, fd, (long)IP_MAGIC_OFF);
	if (p->shm_kept < 0) {
		/* (none above the program's limit of descriptors: the next
		 * exec opens vmrec's again) */
		rt_sys3(NR_fcntl, fd, 0 /* F_DUPFD */, IP_KEEP_FD);
		rt_sys1(NR_close, fd);
	}
	if (m < 0 && m > -4096)
		return m;
	rt_p.shm = (void *)m;
	if (shm()->magic != IP_SHM_MAGIC)
		return -RT_EINVAL;
	long e = rt_install_sigsys();
	if (e)
		return e;
	int32_t tid = (int32_t)rt_sys0(NR_gettid);
	struct rt_thread *t = rt_thread_new(tid, rt_p.pid, 0, IP_HOW_EXEC);
	if (!t)
		return -RT_ENOMEM;
	rt_set_gs(t);
	rt_p.nthreads = 1;
	uint64_t bit = RT_SIGBIT(RT_SIGSYS);
	rt_sys4(NR_rt_sigprocmask, 1 /* SIG_UNBLOCK */, (long)&bit, 0, 8);
	return 0;
}
