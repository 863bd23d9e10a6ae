/*
 * outfile.c - where the trace goes, and what vmrec may remove again.
 *
 * The default name is derived from the command and never replaces an
 * existing file: each candidate is created with O_EXCL, so two recorders
 * started at once in one directory cannot pick the same name.
 *
 * vmrec removes only a regular file that it created itself in this run,
 * and only while the name still leads to that file.  --force over an
 * existing regular file creates a new file beside it and renames it over
 * the old one at once (so a recorder killed later still leaves its trace
 * under the name asked for, and a file that was only linked to that name
 * is not rewritten); over anything else (a device, a FIFO) it writes to
 * what is there, and never removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "recorder.h"

#define MAX_SUFFIX 9999

static int open_retry(const char *path, int flags)
{
	int fd;
	do
		fd = open(path, flags, 0666);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

static int created(struct vmr_output *out, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	out->fd = fd;
	out->created = 1;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	return fd;
}

/* --force over the regular file at path: a new file of ours in its place.
 * The new file is made beside it (same directory, so the rename stays on
 * one file system) and renamed over it before anything is written. */
static int replace_regular(struct vmr_output *out, const char *path)
{
	char tmp[PATH_MAX + 32];
	int fd = -EEXIST;
	for (int i = 0; i < 100 && fd == -EEXIST; i++) {
		const char *slash = strrchr(path, '/');
		int dirlen = slash ? (int)(slash - path + 1) : 0;
		int n = snprintf(tmp, sizeof(tmp), "%.*s.%s.vmrec-%d-%d", dirlen, path,
				 slash ? slash + 1 : path, (int)getpid(), i);
		if (n < 0 || (size_t)n >= sizeof(tmp))
			return -ENAMETOOLONG;
		fd = open_retry(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC);
	}
	if (fd < 0)
		return fd;
	if (rename(tmp, path) < 0) {
		int e = -errno;
		close(fd);
		unlink(tmp);
		return e;
	}
	return created(out, fd);
}

static int open_named(struct vmr_output *out, const char *path, int force)
{
	struct stat st;
	int fd = open_retry(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0)
		return created(out, fd);
	if (fd != -EEXIST || !force)
		return fd;
	/* It exists, and --force: what is it? */
	if (stat(path, &st) < 0)
		return -errno; /* (a dangling symlink: ENOENT) */
	if (S_ISREG(st.st_mode)) {
		/* through a symlink, the file it leads to is replaced */
		char real[PATH_MAX];
		if (!realpath(path, real))
			return -errno;
		return replace_regular(out, real);
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	/* a device, a FIFO, a socket: written to as it is, never removed */
	fd = open_retry(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0)
		out->fd = fd;
	return fd;
}

int vmr_output_open(struct vmr_output *out, const char *path, int force, const char *name)
{
	const char *base;
	int fd;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (path) {
		snprintf(out->path, sizeof(out->path), "%s", path);
		return open_named(out, path, force);
	}
	base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	if (!base || !*base || !strcmp(base, ".") || !strcmp(base, ".."))
		base = "vmrec";
	for (int i = 0; i <= MAX_SUFFIX; i++) {
		int n = i ? snprintf(out->path, sizeof(out->path), "%s.%d.vmtrace.zst", base, i)
			  : snprintf(out->path, sizeof(out->path), "%s.vmtrace.zst", base);
		if (n < 0 || (size_t)n >= sizeof(out->path))
			return -ENAMETOOLONG;
		fd = open_retry(out->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC);
		if (fd >= 0)
			return created(out, fd);
		if (fd != -EEXIST)
			return fd;
	}
	return -EEXIST;
}

int vmr_output_discard(struct vmr_output *out)
{
	struct stat st;
	if (!out->created)
		return 0;
	/* Only while the name still leads to the regular file we made. */
	if (lstat(out->path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != out->dev ||
	    st.st_ino != out->ino)
		return 0;
	if (unlink(out->path) < 0)
		return -errno;
	out->created = 0;
	return 1;
}
