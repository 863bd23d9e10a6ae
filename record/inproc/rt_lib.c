/*
 * rt_lib.c - the little of a C library the inproc runtime needs (it links
 * none: the program's libc may be anywhere in its own state, and its
 * system call wrappers are what the filter traps).
 */
#include "rt.h"

void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *a = d;
	const unsigned char *b = s;
	while (n--)
		*a++ = *b++;
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	unsigned char *a = d;
	const unsigned char *b = s;
	if (a < b) {
		while (n--)
			*a++ = *b++;
	} else {
		while (n--)
			a[n] = b[n];
	}
	return d;
}

void *memset(void *d, int c, size_t n)
{
	unsigned char *a = d;
	while (n--)
		*a++ = (unsigned char)c;
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t rt_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int rt_strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int rt_utoa(char *b, uint64_t v)
{
	char t[24];
	int n = 0, k = 0;
	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		b[k++] = t[--n];
	b[k] = 0;
	return k;
}

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1

long rt_futex_wait(uint32_t *w, uint32_t val, long ns)
{
	struct rt_timespec ts = { ns / 1000000000, ns % 1000000000 };
	return rt_gate(NR_futex, (long)w, FUTEX_WAIT, val, ns ? (long)&ts : 0, 0, 0);
}

long rt_futex_wake(uint32_t *w)
{
	return rt_gate(NR_futex, (long)w, FUTEX_WAKE, 1 << 30, 0, 0, 0);
}

long rt_own_map(uint64_t addr, uint64_t len, int prot, int flags)
{
	long r = rt_gate(NR_mmap, (long)addr, (long)len, prot, flags, -1, (long)IP_MAGIC_OFF);
	if (r < 0 && r > -4096)
		return r;
	/* (a range the program must not unmap or map over) */
	uint32_t i = __atomic_fetch_add(&rt_p.nown, 1, __ATOMIC_RELAXED);
	if (i < sizeof(rt_p.own) / sizeof(rt_p.own[0])) {
		rt_p.own[i][0] = (uint64_t)r;
		rt_p.own[i][1] = (uint64_t)r + len;
	}
	struct rt_thread *t = rt_me();
	if (t && t->slot) {
		struct ip_own o = { .start = (uint64_t)r, .end = (uint64_t)r + len };
		o.h.t = rt_now();
		rt_put(t, IPR_OWN, &o, sizeof(o));
	}
	return r;
}

/* ---- /proc/self/maps ---------------------------------------------------- */

static uint64_t hex(const char **p)
{
	uint64_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

static int parse_line(char *line, struct rt_map *m)
{
	const char *p = line;
	m->start = hex(&p);
	if (*p++ != '-')
		return -1;
	m->end = hex(&p);
	if (*p++ != ' ')
		return -1;
	for (int i = 0; i < 4; i++)
		m->perms[i] = *p ? *p++ : '-';
	m->perms[4] = 0;
	p++;
	m->off = hex(&p);
	p++;
	hex(&p);
	p++;
	hex(&p);
	while (*p == ' ')
		p++;
	m->ino = 0;
	while (*p >= '0' && *p <= '9')
		m->ino = m->ino * 10 + (uint64_t)(*p++ - '0');
	while (*p == ' ')
		p++;
	m->path = p;
	return 0;
}

int rt_maps_each(int (*fn)(void *ctx, const struct rt_map *m), void *ctx)
{
	static char buf[8192];
	long fd = rt_sys3(NR_open, (long)"/proc/self/maps", 02000000 /* O_CLOEXEC */, 0);
	long have = 0;
	int stop = 0;
	if (fd < 0)
		return (int)fd;
	while (!stop) {
		long n = rt_sys3(NR_read, fd, (long)(buf + have), (long)(sizeof(buf) - 1 - (uint64_t)have));
		if (n <= 0)
			break;
		have += n;
		buf[have] = 0;
		char *line = buf;
		for (char *p = buf; *p && !stop; p++) {
			if (*p != '\n')
				continue;
			*p = 0;
			struct rt_map m;
			if (parse_line(line, &m) == 0)
				stop = fn(ctx, &m);
			line = p + 1;
		}
		have -= line - buf;
		memmove(buf, line, (uint64_t)have);
		if (have >= (long)sizeof(buf) - 1)
			have = 0; /* (a line longer than the buffer: dropped) */
	}
	rt_sys1(NR_close, fd);
	return 0;
}
