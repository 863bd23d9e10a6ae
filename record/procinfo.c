/*
 * procinfo.c - facts about a stopped tracee read from /proc: the file
 * behind an fd, the program path, thread group ids.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "record_int.h"
#include <elf.h>
#include <limits.h>

/* Read a small /proc file into buf (NUL-terminated).  Returns length or
 * -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

int vmr_proc_cmdline(pid_t pid, char *buf, size_t len, const char **argv, uint32_t max)
{
	char path[64];
	if (len < 2 || !max)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ssize_t n = read_small(path, buf, len);
	if (n < 0)
		return (int)n;
	/* (a process that rewrote its arguments may end without a NUL:
	 * read_small ended buf with one) */
	uint32_t argc = 0;
	for (ssize_t i = 0; i < n && argc < max; i += (ssize_t)strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	return (int)argc;
}

/* The "flags:" value of /proc/tid/fdinfo/fd (octal), or -errno. */
static long fdinfo_flags(pid_t tid, int fd)
{
	char path[64], buf[512], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)tid, fd);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	p = strstr(buf, "flags:");
	if (!p)
		return -EINVAL;
	return strtol(p + 6, NULL, 8);
}

int vmr_fd_identity(pid_t tid, int fd, char *path, size_t pathlen,
		    struct vmt_map_file *out)
{
	char link[64];
	struct stat st;
	ssize_t n;
	long fl;

	memset(out, 0, sizeof(*out));
	out->path = path;
	path[0] = '\0';
	snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, fd);
	/* stat through the magic link: the open file itself, even if it was
	 * renamed or deleted since. */
	if (stat(link, &st) < 0)
		return -errno;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	out->size = (uint64_t)st.st_size;
	out->mode = st.st_mode;
	n = readlink(link, path, pathlen - 1);
	path[n > 0 ? n : 0] = '\0';
	fl = fdinfo_flags(tid, fd);
	if (fl >= 0)
		out->open_flags = (uint32_t)fl;
	return 0;
}

void vmr_exe_path(pid_t pid, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

int vmr_task_ids(pid_t tid, pid_t *tgid, pid_t *ppid)
{
	char path[64], buf[2048], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strstr(buf, "\nTgid:");
	if (!p)
		return -EINVAL;
	*tgid = (pid_t)strtol(p + 6, NULL, 10);
	p = strstr(buf, "\nPPid:");
	if (!p)
		return -EINVAL;
	*ppid = (pid_t)strtol(p + 6, NULL, 10);
	return 0;
}

int vmr_elf_interp(const char *exe, uint64_t dev, uint64_t ino, char *out, size_t len)
{
	Elf64_Ehdr eh;
	int fd = open(exe, O_RDONLY | O_CLOEXEC), err = -ENOENT;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
		goto out;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		char name[PATH_MAX];
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			break;
		if (ph.p_type != PT_INTERP || ph.p_filesz < 2 || ph.p_filesz >= sizeof(name))
			continue;
		if (pread(fd, name, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
			break;
		name[ph.p_filesz - 1] = 0;
		char real[PATH_MAX];
		if (!realpath(name, real) || stat(real, &st) || (uint64_t)st.st_dev != dev ||
		    (uint64_t)st.st_ino != ino)
			break;
		snprintf(out, len, "%s", real);
		err = 0;
		break;
	}
out:
	close(fd);
	return err;
}
