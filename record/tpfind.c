/*
 * tpfind.c - tracepoint id and raw-record layout from tracefs.
 *
 * Tracepoint ids are assigned at boot and only tracefs tells them.  Many
 * systems (this VM among them) do not mount tracefs; mounting it for the
 * whole system would be a visible change, so when it is absent we mount it
 * in a private mount namespace of a throw-away child, which reads the two
 * small files and sends them back through a pipe.
 */
#include "tpfind.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORMAT_MAX 16384

/* Read a whole small file into buf (NUL-terminated).  Bytes or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

static int parse_id(const char *s, uint32_t *id)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || v == 0 || v > UINT32_MAX)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

int tp_parse_format(const char *text, struct tp_info *out)
{
	out->nfields = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		const char *f = strstr(l, "field:");
		const char *eol = strchr(l, '\n');
		if (!f || (eol && f > eol))
			continue;
		const char *semi = strchr(f, ';');
		const char *o = strstr(f, "offset:"), *z = strstr(f, "size:");
		if (!semi || !o || !z || (eol && (o > eol || z > eol)))
			return -EINVAL;
		/* The name is the last identifier of the declaration, before
		 * any array brackets: "unsigned long address;". */
		const char *e = semi;
		const char *br = memchr(f, '[', (size_t)(semi - f));
		if (br)
			e = br;
		while (e > f && isspace((unsigned char)e[-1]))
			e--;
		const char *b = e;
		while (b > f && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
			b--;
		if (b == e || (size_t)(e - b) >= sizeof(out->fields[0].name))
			return -EINVAL;
		char *end;
		unsigned long off = strtoul(o + 7, &end, 10);
		unsigned long size = strtoul(z + 5, &end, 10);
		if (off > 65535 || size == 0 || size > 65535)
			return -EINVAL;
		if (out->nfields < TP_MAX_FIELDS) {
			struct tp_field *d = &out->fields[out->nfields++];
			memcpy(d->name, b, (size_t)(e - b));
			d->name[e - b] = '\0';
			d->offset = (uint32_t)off;
			d->size = (uint32_t)size;
		}
	}
	return out->nfields ? 0 : -EINVAL;
}

const struct tp_field *tp_field(const struct tp_info *tp, const char *name)
{
	for (unsigned i = 0; i < tp->nfields; i++)
		if (!strcmp(tp->fields[i].name, name))
			return &tp->fields[i];
	return NULL;
}

static int parse_both(const char *idtext, const char *fmt, struct tp_info *out)
{
	int err = parse_id(idtext, &out->id);
	return err ? err : tp_parse_format(fmt, out);
}

static int from_root(const char *root, const char *sys, const char *name,
		     struct tp_info *out)
{
	char path[512], idtext[32], *fmt;
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, sys, name);
	ssize_t n = read_small(path, idtext, sizeof(idtext));
	if (n < 0)
		return (int)n;
	if (!(fmt = malloc(FORMAT_MAX)))
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", root, sys, name);
	n = read_small(path, fmt, FORMAT_MAX);
	int err = n < 0 ? (int)n : parse_both(idtext, fmt, out);
	free(fmt);
	return err;
}

/* The child: mount tracefs privately, send "ID\0FORMAT" down fd, exit with
 * 0 or an errno.  Only system calls here (we may be a fork of a threaded
 * program). */
static void __attribute__((noreturn))
private_reader(int fd, const char *mnt, const char *idpath, const char *fmtpath)
{
	static char buf[FORMAT_MAX + 64];
	if (unshare(CLONE_NEWNS) < 0)
		_exit(errno);
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tracefs", mnt, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		_exit(errno);
	size_t used = 0;
	const char *paths[2] = { idpath, fmtpath };
	for (int i = 0; i < 2; i++) {
		int f = open(paths[i], O_RDONLY | O_CLOEXEC);
		if (f < 0)
			_exit(errno);
		ssize_t r;
		while (used < sizeof(buf) - 1 &&
		       (r = read(f, buf + used, sizeof(buf) - 1 - used)) != 0) {
			if (r < 0) {
				if (errno == EINTR)
					continue;
				_exit(errno);
			}
			used += (size_t)r;
		}
		close(f);
		if (i == 0 && used < sizeof(buf) - 1)
			buf[used++] = '\0';
	}
	for (size_t off = 0; off < used;) {
		ssize_t w = write(fd, buf + off, used - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(EIO);
		off += (size_t)w;
	}
	_exit(0);
}

static int from_private_mount(const char *sys, const char *name,
			      struct tp_info *out)
{
	static const char mnt[] = "/sys/kernel/tracing";
	char idpath[512], fmtpath[512];
	snprintf(idpath, sizeof(idpath), "%s/events/%s/%s/id", mnt, sys, name);
	snprintf(fmtpath, sizeof(fmtpath), "%s/events/%s/%s/format", mnt, sys,
		 name);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		close(p[0]);
		private_reader(p[1], mnt, idpath, fmtpath);
	}
	close(p[1]);
	char *buf = malloc(FORMAT_MAX + 64);
	size_t used = 0;
	int err = buf ? 0 : -ENOMEM;
	for (;;) {
		char sink[256];
		char *dst = buf && used < FORMAT_MAX + 63 ? buf + used : sink;
		size_t room = dst == sink ? sizeof(sink) : FORMAT_MAX + 63 - used;
		ssize_t r = read(p[0], dst, room);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (dst != sink)
			used += (size_t)r;
	}
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			st = -1;
			break;
		}
	if (!err) {
		if (st == -1 || !WIFEXITED(st))
			err = -ECHILD;
		else if (WEXITSTATUS(st))
			err = -WEXITSTATUS(st);
	}
	if (!err) {
		buf[used] = '\0';
		size_t idlen = strnlen(buf, used);
		err = idlen < used ? parse_both(buf, buf + idlen + 1, out)
				   : -EINVAL;
	}
	free(buf);
	return err;
}

int tp_find(const char *sys, const char *name, struct tp_info *out)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		int err = from_root(roots[i], sys, name, out);
		if (err != -ENOENT)
			return err;
		char ev[64];
		struct stat st;
		snprintf(ev, sizeof(ev), "%s/events", roots[i]);
		if (stat(ev, &st) == 0)
			return -ENOENT; /* tracefs is there; the event is not */
	}
	return from_private_mount(sys, name, out);
}
