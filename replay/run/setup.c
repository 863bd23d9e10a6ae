/*
 * setup.c - what a replay process needs before (and at exec, during) the
 * replay: its handles of the run's files, stand-ins for the mappings of a
 * MAPS snapshot, the brk reservation, a forked replay process's page
 * tables; and the run's fatal-error path.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "exec_int.h"


/* The run's error slot: the first error wins (true: write its message);
 * the others die quietly. */
static int claim_error(struct rp_rt *rt, int err)
{
	int zero = 0;
	return __atomic_compare_exchange_n(&rt->sh->error, &zero, err < 0 ? err : -EIO, 0,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* The whole run goes (its processes are one process group, made in
 * rp_child_main): a replay process that died alone would leave the others
 * waiting for its threads' progress forever.  Async-signal-safe. */
static void __attribute__((noreturn)) end_run(struct rp_rt *rt)
{
	if (rt->run_pgid > 0)
		kill(-rt->run_pgid, SIGKILL);
	_exit(3);
}

void rt_fatal(struct rp_rt *rt, int err, const char *fmt, ...)
{
	if (claim_error(rt, err)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(rt->sh->msg, sizeof(rt->sh->msg), fmt, ap);
		va_end(ap);
	}
	end_run(rt);
}

/* "a replay process was killed by signal N" / "... failed (status N)" for a
 * wait status, without stdio (a signal handler writes it too). */
void rt_status_msg(char *buf, size_t size, int st)
{
	const char *head = WIFSIGNALED(st) ? "a replay process was killed by signal "
					   : "a replay process failed (status ";
	unsigned v = WIFSIGNALED(st) ? (unsigned)WTERMSIG(st) : (unsigned)WEXITSTATUS(st);
	char num[12];
	int n = 0;
	do
		num[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < (int)sizeof(num));
	size_t k = 0;
	for (; *head && k + 1 < size; head++)
		buf[k++] = *head;
	while (n && k + 1 < size)
		buf[k++] = num[--n];
	if (!WIFSIGNALED(st) && k + 1 < size)
		buf[k++] = ')';
	if (size)
		buf[k] = 0;
}

/* A replay process that ended other than by finishing its streams ends
 * the run, as rt_fatal does: the others may be waiting for its threads'
 * progress.  (One that called rt_fatal has recorded its message and
 * killed the run already.)  Async-signal-safe. */
RP_RUN_CODE void rt_child_ended(struct rp_rt *rt, int st)
{
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return;
	if (claim_error(rt, -EIO))
		rt_status_msg(rt->sh->msg, sizeof(rt->sh->msg), st);
	end_run(rt);
}

static struct rp_rt *watch_rt;

RP_RUN_CODE static void on_child(int sig)
{
	int saved = errno, st;
	(void)sig;
	while (waitpid(-1, &st, WNOHANG | __WALL) > 0)
		rt_child_ended(watch_rt, st);
	errno = saved;
}

/* Every replay process (forks inherit it) reaps its children as they end
 * and ends the run when one was killed or failed. */
void rt_watch_children(struct rp_rt *rt)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_child;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	watch_rt = rt;
	sigaction(SIGCHLD, &sa, NULL);
}

/* A PROT_NONE reservation of size bytes for a region; with exact
 * placement, at the recorded address if free (copy 0 only).  Placed by
 * the kernel, it keeps the recorded address's offset in a 2 MiB block,
 * as new file mappings do (ops.c, file_hint): a read fault on a file maps
 * the cached pages of its 64 KiB block of addresses (fault-around), so the
 * program and libraries an exec or the first snapshot maps take the
 * faults they took only where they lie as they did modulo 64 KiB (cc1,
 * exec'd by gcc: 10% fewer in its own text). */
RP_RUN_CODE uint64_t rt_reserve(struct rp_rt *rt, uint64_t rec_start, uint64_t size, uint32_t copy, int *fallback)
{
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	void *p;
	if (rt->opt.placement == RP_PLACE_EXACT) {
		if (copy == 0 && rec_start >= rt->void_len && rec_start) {
			p = mmap((void *)rec_start, size, PROT_NONE, fl | MAP_FIXED_NOREPLACE, -1, 0);
			if (p != MAP_FAILED && (uint64_t)p == rec_start)
				return (uint64_t)p;
			if (p != MAP_FAILED)
				munmap(p, size);
		}
		if (fallback)
			*fallback = 1;
	}
	const uint64_t block = 2ull << 20;
	if (size > UINT64_MAX - block)
		return 0;
	p = mmap(NULL, size + block, PROT_NONE, fl, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	uint64_t a = (uint64_t)p + ((rec_start - (uint64_t)p) & (block - 1));
	if (a > (uint64_t)p)
		munmap(p, a - (uint64_t)p);
	munmap((void *)(a + size), (uint64_t)p + block - a);
	return a;
}

/* "/proc/PID/fd/FD" into buf, without stdio (in a replay process, every
 * page of libc code it runs for the first time is a fault the replay
 * counts). */
RP_RUN_CODE static void proc_fd_path(char *buf, int pid, int fd)
{
	const char *head = "/proc/";
	char num[12];
	size_t k = 0;
	int v[2] = {pid, fd};
	while (*head)
		buf[k++] = *head++;
	for (int i = 0; i < 2; i++) {
		int n = 0;
		unsigned x = (unsigned)v[i];
		do
			num[n++] = (char)('0' + x % 10);
		while ((x /= 10) && n < (int)sizeof(num));
		while (n)
			buf[k++] = num[--n];
		if (!i) {
			memcpy(buf + k, "/fd/", 4);
			k += 4;
		}
	}
	buf[k] = 0;
}

RP_RUN_CODE int rt_file_fd(struct rp_rt *rt, uint32_t idx, int rw)
{
	const struct rp_fsh *f = &rt->arena->files[idx];
	int32_t have = __atomic_load_n(rw ? &f->rw : &f->rd, __ATOMIC_ACQUIRE);
	/* Made before the run began: this process has the descriptor. */
	if (idx < rt->nfiles_inherited || have <= 0)
		return have - 1;
	int *c = rw ? &rt->fdc_rw[idx] : &rt->fdc_rd[idx];
	int have_fd = __atomic_load_n(c, __ATOMIC_ACQUIRE);
	if (have_fd)
		return have_fd - 1;
	/* Made by the load as the run went on: opened through the loader's. */
	char name[64];
	proc_fd_path(name, (int)rt->arena->pid, have - 1);
	int fd = open(name, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOCTTY), none = 0;
	/* (another thread of the process may have opened it meanwhile) */
	if (!__atomic_compare_exchange_n(c, &none, fd + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		if (fd >= 0)
			close(fd);
		return none - 1;
	}
	return fd;
}

RP_RUN_CODE int rt_setup_plan(struct rp_rt *rt, uint32_t copy, const struct rp_xplan *x)
{
	uint64_t *base = rt->base + (size_t)copy * rt->rcap;
	uint64_t mask = rt->page - 1;
	int fb = 0;

	for (uint32_t i = 0; i < x->nstandin;) {
		const struct rp_xstandin *s0 = &x->st[i];
		uint32_t j = i;
		while (j < x->nstandin && x->st[j].s.region == s0->s.region)
			j++;
		if (s0->map && s0->rsize) {
			uint64_t b = rt_reserve(rt, s0->rec_start, (s0->rsize + mask) & ~mask, copy, &fb);
			if (!b)
				return -ENOMEM;
			for (uint32_t k = i; k < j; k++) {
				const struct rp_standin *s = &x->st[k].s;
				int flags = MAP_FIXED | (s->shared ? MAP_SHARED : MAP_PRIVATE);
				int fd = -1;
				uint64_t off = 0;
				if (s->file != RP_VOID && !rt->arena->files[s->file].zero) {
					/* only scratch files have a writable handle */
					fd = (s->shared && (s->prot & PROT_WRITE)) ? rt_file_fd(rt, s->file, 1) : -1;
					if (fd < 0)
						fd = rt_file_fd(rt, s->file, 0);
					off = s->file_off;
				}
				if (fd < 0)
					flags |= MAP_ANONYMOUS;
				/* A stand-in that cannot be made stays PROT_NONE;
				 * touches there are caught and counted. */
				mmap((void *)(b + s->off), s->len, (int)s->prot, flags, fd, (off_t)off);
			}
			base[s0->s.region] = b;
		}
		i = j;
	}
	if (x->brk_region != RP_VOID && x->brk_map) {
		uint64_t size = (x->brk_size + mask) & ~mask;
		if (size < rt->page)
			size = rt->page;
		uint64_t b = rt_reserve(rt, x->brk_rec_start, size, copy, &fb);
		if (!b)
			return -ENOMEM;
		uint64_t init = (x->brk_init + mask) & ~mask;
		if (init > size)
			init = size;
		if (init)
			mmap((void *)b, init, PROT_READ | PROT_WRITE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		base[x->brk_region] = b;
	}
	return fb;
}

/* Page tables for [p, p + len) (MADV_POPULATE_*, Linux 5.14; elsewhere
 * nothing), before the thread counts its faults (run_stream).  perf's
 * fault events do not fire for them; getrusage counts them, one per
 * page, in the process's and the tree's totals: they are among the
 * set-up's faults that the report names apart. */
static void populate(const void *p, size_t len, size_t ps, int write)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1), end = (uintptr_t)p + len;
	if (len)
		madvise((void *)a, end - a, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
}

static int populate_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	size_t ps = *(const size_t *)arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			populate((const void *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, ps, 0);
	}
	return 0;
}

/* A forked replay process inherits no page tables of shared memory and
 * of code (fork leaves them to faults): those of what it reads and writes
 * of the run's, and of the replayer's and libc's code, here, uncounted.
 * (Its private memory it shares copy-on-write, as the recorded child did
 * its parent's.) */
RP_RUN_CODE void rt_populate_child(struct rp_rt *rt, struct rp_wctx *w)
{
	const rp_trace *t = rt->t;
	const struct rp_arena *a = rt->arena;
	size_t ps = rt->page;
	dl_iterate_phdr(populate_code, &ps);
	populate(rt->sh, sizeof(*rt->sh), ps, 1);
	populate(w->ctl, t->nthreads * sizeof(*w->ctl), ps, 1);
	populate(w->out, sizeof(*w->out), ps, 1);
	for (unsigned op = 1; op < VMT_OP__COUNT; op++)
		if (t->ops_used_mask & (1u << op))
			populate(&w->hist[op], sizeof(w->hist[op]), ps, 1);
	if (!a->shared)
		return;
	populate(a->threads, t->nthreads * sizeof(*a->threads), ps, 1);
	populate(a->proc_rec, t->nprocs * sizeof(*a->proc_rec), ps, 0);
	populate(a->files, t->nfiles * sizeof(*a->files), ps, 0);
	populate((const char *)a + a->pool0, __atomic_load_n(&a->bump, __ATOMIC_RELAXED) - a->pool0,
		 ps, 0);
}

void rp_render_elem(const rp_trace *t, uint32_t thread, uint32_t proc, const struct rp_elem *e,
		    char *text, size_t len)
{
	struct vmt_event ev;
	struct vmt_buf b = {0};
	/* shmat and shmdt replay as mmap and munmap of the segment's stand-in
	 * (sim.c) and carry those arguments: shown as what was replayed. */
	uint32_t op = e->op == VMT_OP_SHMAT ? VMT_OP_MMAP : e->op == VMT_OP_SHMDT ? VMT_OP_MUNMAP : e->op;
	const struct vmt_op_info *oi = vmt_op_info(op);

	memset(&ev, 0, sizeof(ev));
	ev.kind = VMT_EV_SYSCALL;
	ev.thread = thread;
	ev.proc = proc;
	ev.ts_ns = t->first_ts + e->ts;
	ev.u.sc.op = op;
	ev.u.sc.nargs = oi ? oi->nargs : VMT_MAX_ARGS;
	memcpy(ev.u.sc.args, e->args, sizeof(e->args));
	ev.u.sc.result = e->result;
	ev.u.sc.exit_ns = ev.ts_ns;
	ev.u.sc.stack_id = VMT_NONE;
	vmt_render_text(&b, &ev);
	const char *as = op == e->op ? "" : e->op == VMT_OP_SHMAT ? "shmat as " : "shmdt as ";
	snprintf(text, len, "%s%s", as, b.len ? b.data : "?");
	vmt_buf_free(&b);
}

/* VMAs of this process: lines of /proc/self/maps. */
RP_RUN_CODE uint64_t rt_count_vmas(void)
{
	char buf[4096];
	uint64_t n = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	}
	close(fd);
	return n;
}
