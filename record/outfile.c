/*
 * outfile.c - where the trace goes.  The default name is derived from the
 * command and never replaces an existing file: each candidate is created
 * with O_EXCL, so two recorders started at once in one directory cannot
 * pick the same name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "recorder.h"

#define MAX_SUFFIX 9999

static int create(const char *path, int force)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
	int fd;

	do
		fd = open(path, flags, 0666);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

int vmr_open_output(const char *path, int force, const char *name,
		    char *used, size_t usedlen)
{
	char buf[4096];
	const char *base;
	int fd;

	if (path) {
		fd = create(path, force);
		if (used && usedlen)
			snprintf(used, usedlen, "%s", path);
		return fd;
	}
	base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	if (!base || !*base || !strcmp(base, ".") || !strcmp(base, ".."))
		base = "vmrec";
	for (int i = 0; i <= MAX_SUFFIX; i++) {
		int n = i ? snprintf(buf, sizeof(buf), "%s.%d.vmtrace.zst", base, i)
			  : snprintf(buf, sizeof(buf), "%s.vmtrace.zst", base);
		if (n < 0 || (size_t)n >= sizeof(buf))
			return -ENAMETOOLONG;
		fd = create(buf, 0);
		if (fd >= 0 || fd != -EEXIST) {
			if (used && usedlen)
				snprintf(used, usedlen, "%s", buf);
			return fd;
		}
	}
	return -EEXIST;
}
