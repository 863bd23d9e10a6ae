/*
 * counters.c - the kernel's own counters of the recorded tasks and
 * processes (COUNTERS events, vmtrace(5)): faults, context switches and
 * CPU time, read from /proc (the ptrace backend) or given by the BPF side
 * (the stream backend), in the units getrusage(2) reports, so that a
 * replay's getrusage can be held against them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "record_int.h"

void vmr_cnt_adjust(uint64_t utime, uint64_t stime, uint64_t rtime, uint64_t *ut, uint64_t *st)
{
	/* As the kernel's cputime_adjust(): the exact runtime, split in the
	 * proportion of the tick-sampled user and system times (which alone
	 * miss whatever ran between ticks). */
	if (!stime || !rtime) {
		*ut = rtime;
		*st = 0;
	} else if (!utime) {
		*ut = 0;
		*st = rtime;
	} else {
		unsigned __int128 s = (unsigned __int128)rtime * stime / ((unsigned __int128)utime + stime);
		*st = (uint64_t)s;
		*ut = rtime - *st;
	}
}

void vmr_cnt_add(struct vmt_counters *a, const struct vmt_counters *b)
{
	a->minflt += b->minflt;
	a->majflt += b->majflt;
	a->nvcsw += b->nvcsw;
	a->nivcsw += b->nivcsw;
	a->utime_ns += b->utime_ns;
	a->stime_ns += b->stime_ns;
	a->stops += b->stops;
	a->own_flt += b->own_flt;
	a->flags |= b->flags & VMT_CNT_TICKS;
}

void vmr_cnt_sub(struct vmt_counters *a, const struct vmt_counters *b)
{
#define SUB(f) a->f = a->f > b->f ? a->f - b->f : 0;
	SUB(minflt) SUB(majflt) SUB(nvcsw) SUB(nivcsw) SUB(utime_ns) SUB(stime_ns) SUB(stops)
	SUB(own_flt)
#undef SUB
}

void vmr_cnt_from_rusage(const struct rusage *ru, struct vmt_counters *c)
{
	memset(c, 0, sizeof(*c));
	c->minflt = (uint64_t)ru->ru_minflt;
	c->majflt = (uint64_t)ru->ru_majflt;
	c->nvcsw = (uint64_t)ru->ru_nvcsw;
	c->nivcsw = (uint64_t)ru->ru_nivcsw;
	c->utime_ns = (uint64_t)ru->ru_utime.tv_sec * 1000000000u + (uint64_t)ru->ru_utime.tv_usec * 1000u;
	c->stime_ns = (uint64_t)ru->ru_stime.tv_sec * 1000000000u + (uint64_t)ru->ru_stime.tv_usec * 1000u;
}

static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n, got = 0;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			got = -errno;
			break;
		}
		got += n;
	}
	close(fd);
	if (got >= 0)
		buf[got] = 0;
	return got;
}

/* Fields 10 to 17 of a /proc stat line: minflt cminflt majflt cmajflt
 * utime stime cutime cstime (after the command name, which may hold
 * anything but ends at the last ')').  Returns 0 or -EINVAL. */
static int stat_fields(const char *buf, unsigned long long v[8])
{
	const char *p = strrchr(buf, ')');
	char state;
	long long skip[5];
	if (!p || sscanf(p + 1, " %c %lld %lld %lld %lld %lld %*u %llu %llu %llu %llu %llu %llu %llu %llu",
			 &state, &skip[0], &skip[1], &skip[2], &skip[3], &skip[4], &v[0], &v[1],
			 &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 14)
		return -EINVAL;
	return 0;
}

static uint64_t ticks_ns(unsigned long long ticks)
{
	static long hz;
	if (!hz)
		hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	return (uint64_t)ticks * (1000000000u / (uint64_t)hz);
}

/* "voluntary_ctxt_switches:" and "nonvoluntary_ctxt_switches:" of a
 * /proc status file. */
static int status_switches(const char *path, uint64_t *vol, uint64_t *invol)
{
	char buf[4096];
	if (slurp(path, buf, sizeof(buf)) < 0)
		return -errno;
	const char *v = strstr(buf, "\nvoluntary_ctxt_switches:");
	const char *iv = strstr(buf, "\nnonvoluntary_ctxt_switches:");
	if (!v || !iv)
		return -EINVAL;
	*vol = strtoull(v + 25, NULL, 10);
	*invol = strtoull(iv + 28, NULL, 10);
	return 0;
}

int vmr_cnt_read_task(pid_t pid, pid_t tid, struct vmt_counters *c)
{
	char path[64], buf[1024];
	unsigned long long v[8];

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (slurp(path, buf, sizeof(buf)) < 0)
		return -errno;
	if (stat_fields(buf, v))
		return -EINVAL;
	c->minflt = v[0];
	c->majflt = v[2];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	int e = status_switches(path, &c->nvcsw, &c->nivcsw);
	if (e)
		return e;
	/* The exact runtime, where the kernel keeps schedule statistics,
	 * split as stat's (adjusted, tick-resolution) times split it. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	unsigned long long rtime;
	if (slurp(path, buf, sizeof(buf)) > 0 && sscanf(buf, "%llu", &rtime) == 1) {
		vmr_cnt_adjust(v[4], v[5], rtime, &c->utime_ns, &c->stime_ns);
	} else {
		c->utime_ns = ticks_ns(v[4]);
		c->stime_ns = ticks_ns(v[5]);
		c->flags |= VMT_CNT_TICKS;
	}
	return 0;
}

int vmr_cnt_read_proc(pid_t pid, struct vmt_counters *self, struct vmt_counters *children)
{
	char path[64], buf[1024];
	unsigned long long v[8];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (slurp(path, buf, sizeof(buf)) < 0)
		return -errno;
	if (stat_fields(buf, v))
		return -EINVAL;
	if (self) {
		memset(self, 0, sizeof(*self));
		self->minflt = v[0];
		self->majflt = v[2];
		self->utime_ns = ticks_ns(v[4]);
		self->stime_ns = ticks_ns(v[5]);
		self->flags = VMT_CNT_TICKS;
	}
	if (children) {
		memset(children, 0, sizeof(*children));
		children->minflt = v[1];
		children->majflt = v[3];
		children->utime_ns = ticks_ns(v[6]);
		children->stime_ns = ticks_ns(v[7]);
		children->flags = VMT_CNT_TICKS;
	}
	return 0;
}
