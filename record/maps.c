/*
 * maps.c - /proc/PID/maps into MAPS event entries, and small /proc file
 * reading.
 *
 * Line format (proc(5)):
 *   start-end perms offset major:minor inode [spaces path]
 * all numbers hex except inode (decimal).  The path runs to the end of the
 * line and may contain spaces (and " (deleted)").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "record_int.h"

ssize_t vmr_read_file(const char *path, char **buf, size_t *cap)
{
	size_t len = 0;
	int fd;

	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (*cap - len < 4097) {
			size_t ncap = *cap ? *cap * 2 : 16384;
			char *p = realloc(*buf, ncap);
			if (!p) {
				close(fd);
				return -ENOMEM;
			}
			*buf = p;
			*cap = ncap;
		}
		ssize_t r = read(fd, *buf + len, *cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	(*buf)[len] = '\0';
	return (ssize_t)len;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A hex number of 1..16 digits at *p, advancing it. */
static int get_hex(char **p, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0, d;

	while ((d = hexval((unsigned char)**p)) >= 0) {
		if (++n > 16)
			return -1;
		x = x << 4 | (uint64_t)d;
		(*p)++;
	}
	*v = x;
	return n ? 0 : -1;
}

static int get_dec(char **p, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;

	while (**p >= '0' && **p <= '9') {
		if (x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(**p - '0');
		(*p)++;
		n++;
	}
	*v = x;
	return n ? 0 : -1;
}

static int expect(char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

static int parse_line(char *p, char *eol, struct vmt_map_entry *e)
{
	uint64_t maj, min;

	if (get_hex(&p, &e->start) || expect(&p, '-') || get_hex(&p, &e->end) ||
	    expect(&p, ' '))
		return -1;
	if (eol - p < 5)
		return -1;
	e->perms = 0;
	if (p[0] == 'r')
		e->perms |= VMT_PROT_R;
	else if (p[0] != '-')
		return -1;
	if (p[1] == 'w')
		e->perms |= VMT_PROT_W;
	else if (p[1] != '-')
		return -1;
	if (p[2] == 'x')
		e->perms |= VMT_PROT_X;
	else if (p[2] != '-')
		return -1;
	if (p[3] == 's')
		e->perms |= VMT_MAPS_SHARED;
	else if (p[3] != 'p')
		return -1;
	p += 4;
	if (expect(&p, ' ') || get_hex(&p, &e->offset) || expect(&p, ' ') ||
	    get_hex(&p, &maj) || expect(&p, ':') || get_hex(&p, &min) ||
	    expect(&p, ' ') || get_dec(&p, &e->ino))
		return -1;
	if (maj > 0xfffff || min > 0xfffff)
		return -1;
	e->dev = makedev((unsigned)maj, (unsigned)min);
	if (p < eol && *p != ' ')
		return -1;
	while (p < eol && *p == ' ')
		p++;
	*eol = '\0';
	e->path = p;
	return 0;
}

int vmr_maps_parse(struct vmr_maps *m)
{
	char *p = m->text, *end = m->text + m->len;
	uint64_t prev_end = 0;

	m->n = 0;
	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end; /* last line without newline: text has room */
		if (eol == p) {
			p++;
			continue;
		}
		if (vmt_grow(&m->e, &m->ecap, (size_t)m->n + 1, sizeof(*m->e)))
			return -ENOMEM;
		struct vmt_map_entry *e = &m->e[m->n];
		if (parse_line(p, eol, e) || e->start >= e->end || e->start < prev_end)
			return -EINVAL;
		prev_end = e->end;
		m->n++;
		p = eol + 1;
	}
	return 0;
}

int vmr_maps_read(struct vmr_maps *m, pid_t pid)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	n = vmr_read_file(path, &m->text, &m->cap);
	if (n < 0)
		return (int)n;
	m->len = (size_t)n;
	return vmr_maps_parse(m);
}

void vmr_maps_free(struct vmr_maps *m)
{
	free(m->text);
	free(m->e);
	memset(m, 0, sizeof(*m));
}
