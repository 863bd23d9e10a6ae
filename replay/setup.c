/*
 * setup.c - what a run needs before (and at exec, during) the replay:
 * scratch files, stand-ins for the mappings of a MAPS snapshot, the brk
 * reservation; and the run process's fatal-error path.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "execint.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008u
#endif


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
void rt_child_ended(struct rp_rt *rt, int st)
{
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return;
	if (claim_error(rt, -EIO))
		rt_status_msg(rt->sh->msg, sizeof(rt->sh->msg), st);
	end_run(rt);
}

static struct rp_rt *watch_rt;

static void on_child(int sig)
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

/*
 * Read the scratch files once, so that their pages are in the page cache
 * as the recorded files' pages were: faults on them are then minor, with
 * fault-around, instead of major.  Page by page, without readahead: the
 * cache then holds single pages, as it does for a file written or read a
 * page at a time (a database), and a fault maps the pages around it
 * (fault-around), as natively; read in large blocks, the cache would hold
 * large folios, which a fault maps whole, and the replay would take fewer
 * faults than the program did.  Bounded, as it costs memory.
 */
static void warm_cache(struct rp_rt *rt)
{
	static char buf[4096];
	uint64_t budget = 256ull << 20;
	for (uint32_t i = 0; i < rt->t->nfiles && budget; i++) {
		if (rt->fd_rw[i] < 0 || rt->t->files[i].shm)
			continue;
		uint64_t size = rt->t->files[i].size;
		posix_fadvise(rt->fd_rd[i], 0, 0, POSIX_FADV_RANDOM);
		for (uint64_t off = 0; off < size && budget; off += sizeof(buf)) {
			ssize_t r = pread(rt->fd_rd[i], buf, sizeof(buf), (off_t)off);
			if (r <= 0)
				break;
			budget -= budget > (uint64_t)r ? (uint64_t)r : budget;
		}
	}
}

/* The recorded file, read-only, where it is still the file that was
 * mapped: the same inode and size (a file replaced under its path, as
 * package upgrades and compilers do, has another inode).  The device
 * number is not compared: it changes across boots (device-mapper numbers
 * its devices as they come up) and in containers.  -1 if not. */
static int open_original(const struct rp_file *f)
{
	struct stat st;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->rec_size ||
	    (f->ino && (uint64_t)st.st_ino != f->ino)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Scratch files: created in a private directory, sized (sparse), opened
 * read-only and read-write, then unlinked at once with their directory, so
 * nothing is left behind whatever happens to the run.  --files=original
 * opens the recorded file read-only (only for files no mapping could
 * write: see finish() in trace.c).  A SysV shared memory segment gets a
 * memfd of its size instead, opened read-write and (through /proc)
 * read-only.
 */
int rt_open_files(struct rp_rt *rt)
{
	const rp_trace *t = rt->t;
	char dir[4096], name[4200];
	int made = 0;

	if (!t->nfiles)
		return 0;
	rt->fd_rd = malloc(t->nfiles * sizeof(int));
	rt->fd_rw = malloc(t->nfiles * sizeof(int));
	if (!rt->fd_rd || !rt->fd_rw)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nfiles; i++)
		rt->fd_rd[i] = rt->fd_rw[i] = -1;
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp || strlen(tmp) > 3000)
		tmp = "/tmp";
	snprintf(dir, sizeof(dir), "%s/vmreplay.XXXXXX", tmp);
	for (uint32_t i = 0; i < t->nfiles; i++) {
		const struct rp_file *f = &t->files[i];
		if (f->zero)
			continue;
		if (f->shm) {
			/* A SysV segment's pages are shmem, zero until written:
			 * so are a memfd's. */
			int fd = memfd_create("vmreplay-shm", MFD_CLOEXEC);
			if (fd < 0 && errno == EACCES) /* vm.memfd_noexec=2 */
				fd = memfd_create("vmreplay-shm", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
			if (fd < 0)
				goto fail;
			rt->fd_rw[i] = fd;
			if (ftruncate(fd, (off_t)f->size) < 0)
				goto fail;
			/* A read-only handle for SHM_RDONLY attaches: a mapping
			 * of it can never be made writable. */
			if (f->shm_ro) {
				snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
				rt->fd_rd[i] = open(name, O_RDONLY | O_CLOEXEC);
				if (rt->fd_rd[i] < 0)
					goto fail;
			}
			continue;
		}
		if (f->original && (rt->fd_rd[i] = open_original(f)) >= 0)
			continue;
		if (!made) {
			if (!mkdtemp(dir))
				return -errno;
			made = 1;
		}
		snprintf(name, sizeof(name), "%s/%u", dir, i);
		int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			goto fail;
		rt->fd_rw[i] = fd;
		rt->fd_rd[i] = open(name, O_RDONLY | O_CLOEXEC);
		unlink(name);
		if (rt->fd_rd[i] < 0 || ftruncate(fd, (off_t)f->size) < 0)
			goto fail;
	}
	if (made)
		rmdir(dir);
	warm_cache(rt);
	return 0;
fail:;
	int err = -errno;
	if (made) {
		for (uint32_t i = 0; i < t->nfiles; i++) {
			snprintf(name, sizeof(name), "%s/%u", dir, i);
			unlink(name);
		}
		rmdir(dir);
	}
	return err;
}

/* A PROT_NONE reservation of size bytes for a region; with exact
 * placement, at the recorded address if free (copy 0 only). */
uint64_t rt_reserve(struct rp_rt *rt, uint64_t rec_start, uint64_t size, uint32_t copy, int *fallback)
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
	p = mmap(NULL, size, PROT_NONE, fl, -1, 0);
	return p == MAP_FAILED ? 0 : (uint64_t)p;
}

int rt_setup_plan(struct rp_rt *rt, uint32_t copy, uint32_t plan)
{
	const rp_trace *t = rt->t;
	const struct rp_plan *pl = &t->plans[plan];
	uint64_t *base = rt->base + (size_t)copy * t->nregions;
	uint64_t mask = rt->page - 1;
	int fb = 0;

	for (uint32_t i = 0; i < pl->nstandin;) {
		const struct rp_standin *s0 = &t->standins[pl->standin0 + i];
		const struct rp_region *rg = &t->regions[s0->region];
		uint32_t j = i;
		while (j < pl->nstandin && t->standins[pl->standin0 + j].region == s0->region)
			j++;
		if (rg->needed && rg->size) {
			uint64_t b = rt_reserve(rt, rg->rec_start, (rg->size + mask) & ~mask, copy, &fb);
			if (!b)
				return -ENOMEM;
			for (uint32_t k = i; k < j; k++) {
				const struct rp_standin *s = &t->standins[pl->standin0 + k];
				int flags = MAP_FIXED | (s->shared ? MAP_SHARED : MAP_PRIVATE);
				int fd = -1;
				uint64_t off = 0;
				if (s->file != RP_VOID && !t->files[s->file].zero) {
					/* only scratch files have a writable handle */
					fd = (s->shared && (s->prot & PROT_WRITE) && rt->fd_rw[s->file] >= 0)
						     ? rt->fd_rw[s->file] : rt->fd_rd[s->file];
					off = s->file_off;
				}
				if (fd < 0)
					flags |= MAP_ANONYMOUS;
				/* A stand-in that cannot be made stays PROT_NONE;
				 * touches there are caught and counted. */
				mmap((void *)(b + s->off), s->len, (int)s->prot, flags, fd, (off_t)off);
			}
			base[s0->region] = b;
		}
		i = j;
	}
	if (pl->brk_region != RP_VOID && t->regions[pl->brk_region].needed) {
		const struct rp_region *rg = &t->regions[pl->brk_region];
		uint64_t size = (rg->size + mask) & ~mask;
		if (size < rt->page)
			size = rt->page;
		uint64_t b = rt_reserve(rt, rg->rec_start, size, copy, &fb);
		if (!b)
			return -ENOMEM;
		uint64_t init = (rg->brk_init + mask) & ~mask;
		if (init > size)
			init = size;
		if (init)
			mmap((void *)b, init, PROT_READ | PROT_WRITE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		base[pl->brk_region] = b;
	}
	return fb;
}

/* VMAs of this process: lines of /proc/self/maps. */
uint64_t rt_count_vmas(void)
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
