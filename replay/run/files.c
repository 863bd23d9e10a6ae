/*
 * files.c - the files of one run, made by the process that runs the load
 * (the replay processes open them through /proc/PID/fd, setup.c): sparse
 * scratch files of the size the trace maps, memfds for SysV segments, or
 * the recorded file itself (--files=original).  Made as the elements
 * that map them are published, and grown as larger offsets are.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "runfiles_int.h"
#include "vmtutil.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008u
#endif

/*
 * A scratch file's page cache holds what the recorded file's held when
 * the program touched it: faults on it are then minor, with fault-around,
 * where the program's were, and major where the program's were.  The
 * fault-around windows the trace touches are read first, each whole
 * (rp_file.warm), then the rest of the file within a bound (rf->warm, as
 * it costs memory: what the trace maps beyond its touches, that calls
 * such as MAP_POPULATE read); the windows where the program took a major
 * fault (rp_file.cold) are never read, and dropped if they were.
 * Page by page, without readahead: the cache then holds single pages, as
 * it does for a file written or read a page at a time (a database), and a
 * fault maps the pages around it (fault-around), as natively; read in
 * large blocks, the cache would hold large folios, which a fault maps
 * whole, and the replay would take fewer faults than the program did.
 */
static int cold(const struct rp_file *f, uint64_t w)
{
	return w / 64 < f->capcold && (f->cold[w / 64] >> (w % 64) & 1);
}

static void read_pages(int fd, uint64_t from, uint64_t to, uint64_t *budget)
{
	static char buf[4096];
	for (uint64_t off = from; off < to && (!budget || *budget); off += sizeof(buf)) {
		ssize_t r = pread(fd, buf, sizeof(buf), (off_t)off);
		if (r <= 0)
			break;
		if (budget)
			*budget -= *budget > (uint64_t)r ? (uint64_t)r : *budget;
	}
}

/* The rest of the file, [from, to), within the bound, but its cold
 * windows. */
static void warm_rest(struct rp_runfiles *rf, const struct rp_file *f, int fd, uint64_t from,
		      uint64_t to)
{
	for (uint64_t a = from; a < to && rf->warm;) {
		uint64_t w = a / RP_WARM_WINDOW, end = (w + 1) * RP_WARM_WINDOW;
		end = end < to ? end : to;
		if (!cold(f, w))
			read_pages(fd, a, end, &rf->warm);
		a = end;
	}
}

/* The windows marked since the last time: those the trace touches
 * filled, those where the program faulted major dropped. */
static int warm_marked(struct rp_runfiles *rf, uint32_t i)
{
	const struct rp_file *f = &rf->t->files[i];
	typeof(*rf->fd) *d = &rf->fd[i];
	if (vmt_grow(&d->warmed, &d->capwarmed, f->capwarm, sizeof(*d->warmed)) ||
	    vmt_grow(&d->dropped, &d->capdropped, f->capcold, sizeof(*d->dropped)))
		return -ENOMEM;
	for (size_t k = 0; k < f->capcold; k++)
		for (uint64_t m = f->cold[k] & ~d->dropped[k]; m; m &= m - 1) {
			uint64_t w = k * 64 + (uint64_t)__builtin_ctzll(m);
			posix_fadvise(d->rd, (off_t)(w * RP_WARM_WINDOW), RP_WARM_WINDOW,
				      POSIX_FADV_DONTNEED);
			d->dropped[k] |= 1ull << (w % 64);
		}
	for (size_t k = 0; k < f->capwarm; k++)
		for (uint64_t m = f->warm[k] & ~d->warmed[k]; m; m &= m - 1) {
			uint64_t w = k * 64 + (uint64_t)__builtin_ctzll(m), a = w * RP_WARM_WINDOW;
			if (!cold(f, w) && a < d->size)
				read_pages(d->rd, a, a + RP_WARM_WINDOW < d->size
						     ? a + RP_WARM_WINDOW : d->size, NULL);
			d->warmed[k] |= 1ull << (w % 64);
		}
	return 0;
}

/* Kernel file systems, whose "regular" files are not files to map. */
static int pseudo_fs(long type)
{
	static const unsigned long kinds[] = {
		PROC_SUPER_MAGIC,  SYSFS_MAGIC,	   DEBUGFS_MAGIC,	TRACEFS_MAGIC,
		SECURITYFS_MAGIC,  CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, BPF_FS_MAGIC,
		PSTOREFS_MAGIC,	   EFIVARFS_MAGIC,    SELINUX_MAGIC,
		0x62656570 /* configfs */, 0x65735543 /* fusectl */,
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((unsigned long)type == kinds[i])
			return 1;
	return 0;
}

/* The recorded file, read-only, where it is still the file that was
 * mapped: a regular file of a real file system with the same inode and
 * size (a file replaced under its path, as package upgrades and compilers
 * do, has another inode).  A path from a trace is not trusted: it is
 * looked at before it is opened (a FIFO is never opened, so never waited
 * on), opened so that neither a last symlink, a FIFO nor a terminal can
 * act, and checked again on what was opened.  The device number is not
 * compared: it changes across boots (device-mapper numbers its devices as
 * they come up) and in containers.  Returns the fd, or -1 with *why. */
static int open_original(const struct rp_file *f, uint8_t *why)
{
	struct stat st;
	struct statfs sf;
	if (f->path[0] != '/')
		return *why = RP_ORIG_RELATIVE, -1;
	if (!f->ino)
		return *why = RP_ORIG_NO_INODE, -1;
	if (lstat(f->path, &st) < 0)
		return *why = RP_ORIG_MISSING, -1;
	if (!S_ISREG(st.st_mode))
		return *why = RP_ORIG_TYPE, -1;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return *why = RP_ORIG_MISSING, -1;
	*why = RP_ORIG_OK;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		*why = RP_ORIG_TYPE;
	else if (fstatfs(fd, &sf) < 0 || pseudo_fs((long)sf.f_type))
		*why = RP_ORIG_PSEUDO;
	else if ((uint64_t)st.st_ino != f->ino)
		*why = RP_ORIG_INODE;
	else if ((uint64_t)st.st_size != f->rec_size)
		*why = RP_ORIG_SIZE;
	if (*why) {
		close(fd);
		return -1;
	}
	return fd;
}


void rp_files_init(struct rp_runfiles *rf, rp_trace *t)
{
	memset(rf, 0, sizeof(*rf));
	rf->t = t;
	rf->warm = 256ull << 20;
}

/* A scratch file in a private directory, unlinked at once with the
 * directory (rp_files_sync), so nothing is left behind whatever happens
 * to the run. */
static int scratch(struct rp_runfiles *rf, uint32_t i, int *rd, int *rw)
{
	char name[4200];
	if (!rf->made) {
		const char *tmp = getenv("TMPDIR");
		if (!tmp || !*tmp || strlen(tmp) > 3000)
			tmp = "/tmp";
		snprintf(rf->dir, sizeof(rf->dir), "%s/vmreplay.XXXXXX", tmp);
		if (!mkdtemp(rf->dir))
			return -errno;
		rf->made = 1;
	}
	snprintf(name, sizeof(name), "%s/%u", rf->dir, i);
	*rw = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (*rw < 0)
		return -errno;
	*rd = open(name, O_RDONLY | O_CLOEXEC);
	int err = *rd < 0 ? -errno : 0;
	unlink(name);
	return err;
}

/* A SysV shared memory segment's pages are shmem, zero until written: so
 * are a memfd's; a read-only handle for SHM_RDONLY attaches, so that a
 * mapping of it can never be made writable (always: the first of them
 * may not be loaded yet). */
static int shm_file(int *rd, int *rw)
{
	char name[64];
	*rw = memfd_create("vmreplay-shm", MFD_CLOEXEC);
	if (*rw < 0 && errno == EACCES) /* vm.memfd_noexec=2 */
		*rw = memfd_create("vmreplay-shm", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
	if (*rw < 0)
		return -errno;
	snprintf(name, sizeof(name), "/proc/self/fd/%d", *rw);
	if ((*rd = open(name, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	return 0;
}

static int make(struct rp_runfiles *rf, uint32_t i)
{
	rp_trace *t = rf->t;
	struct rp_file *f = &t->files[i];
	struct rp_fsh *sh = &t->arena->files[i];
	int rd = -1, rw = -1, rc = 0;
	sh->zero = f->zero;
	sh->shm = f->shm;
	if (f->zero)
		goto done;
	if (f->shm) {
		rc = shm_file(&rd, &rw);
		goto done;
	}
	/* --files=original: only files no mapping could write (a file that
	 * a mapping published later could write, streamed, is mapped
	 * read-only all the same: that mapping then fails) */
	f->original = 0;
	if (t->opt.files == RP_FILES_ORIGINAL && f->rec_size) {
		if (f->shared_rw)
			f->not_original = RP_ORIG_WRITABLE;
		else
			f->original = (rd = open_original(f, &f->not_original)) >= 0;
	}
	if (f->original)
		goto done;
	rc = scratch(rf, i, &rd, &rw);
done:
	rf->fd[i].rd = rd;
	rf->fd[i].rw = rw;
	rf->fd[i].size = 0;
	rf->fd[i].warmed = rf->fd[i].dropped = NULL;
	rf->fd[i].capwarmed = rf->fd[i].capdropped = 0;
	if (rc < 0)
		return rc;
	if (rd >= 0)
		__atomic_store_n(&sh->rd, rd + 1, __ATOMIC_RELEASE);
	if (rw >= 0)
		__atomic_store_n(&sh->rw, rw + 1, __ATOMIC_RELEASE);
	return 0;
}

int rp_files_sync(struct rp_runfiles *rf)
{
	const rp_trace *t = rf->t;
	uint64_t mask = t->page_size - 1;
	int rc = 0;
	if (t->nfiles > rf->cap) {
		size_t cap = rf->cap ? rf->cap : 16;
		while (cap < t->nfiles)
			cap *= 2;
		void *p = realloc(rf->fd, cap * sizeof(*rf->fd));
		if (!p)
			return -ENOMEM;
		rf->fd = p;
		rf->cap = (uint32_t)cap;
	}
	for (; rf->n < t->nfiles; rf->n++)
		if ((rc = make(rf, rf->n)) < 0) {
			rf->n++;
			goto out;
		}
	/* Every file as large as the offsets mapped so far (the original
	 * is as it is). */
	for (uint32_t i = 0; i < rf->n; i++) {
		const struct rp_file *f = &t->files[i];
		uint64_t size = (f->size + mask) & ~mask;
		int fd = rf->fd[i].rw;
		if (fd < 0 || size <= rf->fd[i].size)
			continue;
		if (ftruncate(fd, (off_t)size) < 0) {
			rc = -errno;
			goto out;
		}
		uint64_t was = rf->fd[i].size;
		rf->fd[i].size = size;
		if (!f->shm) {
			posix_fadvise(rf->fd[i].rd, 0, 0, POSIX_FADV_RANDOM);
			warm_rest(rf, f, rf->fd[i].rd, was, size);
		}
	}
	for (uint32_t i = 0; i < rf->n; i++)
		if (rf->fd[i].rw >= 0 && !t->files[i].shm && (rc = warm_marked(rf, i)) < 0)
			goto out;
out:
	if (rf->made) {
		rmdir(rf->dir);
		rf->made = 0;
	}
	return rc;
}

void rp_files_close(struct rp_runfiles *rf)
{
	for (uint32_t i = 0; i < rf->n; i++) {
		struct rp_fsh *sh = &rf->t->arena->files[i];
		if (rf->fd[i].rd >= 0)
			close(rf->fd[i].rd);
		if (rf->fd[i].rw >= 0)
			close(rf->fd[i].rw);
		free(rf->fd[i].warmed);
		free(rf->fd[i].dropped);
		sh->rd = sh->rw = 0;
	}
	free(rf->fd);
	rf->fd = NULL;
	rf->n = rf->cap = 0;
}
