/*
 * selfmon.c - a replay thread watching itself through perf, for the
 * fidelity section (vmreplay(1), FIDELITY): where its page faults are (a
 * sample of every minor and major fault with its address, told apart by
 * the kind of mapping the address is in) and what its replayed calls
 * waited for (the thread's switch records: each time it left its CPU
 * and came back, and whether it was preempted).
 *
 * What this costs the loop is what it must not distort: per replayed
 * call, two loads of the perf page's update count (it moves only when
 * the thread is switched out or in, so an unchanged count says the call
 * never left the CPU); only a call that did leave is noted, with its
 * times; the ring of samples is read when it fills up or the thread
 * ends, never per fault.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "exec_int.h"
#include "selfmon.h"

/* Sample layout: PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR,
 * in the order the kernel writes them (identifier first). */
struct fault_sample {
	struct perf_event_header h;
	uint64_t id, time, addr;
};
/* A switch record's sample_id (sample_id_all): time, then identifier. */
struct switch_rec {
	struct perf_event_header h;
	uint64_t time, id;
};

static int open_one(uint64_t config, int group, int cs)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = config;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
	a.sample_id_all = 1;
	a.context_switch = (unsigned)cs;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC; /* the clock of vmt_now_ns() */
	a.exclude_hv = 1;
	/* The thread reads the ring itself: no wake-ups. */
	a.watermark = 1;
	a.wakeup_watermark = 1u << 31;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		/* perf_event_paranoid 2: the thread's own user-mode events only
		 * (its faults are taken in user mode, but for the kernel's
		 * copies into its memory). */
		a.exclude_kernel = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
	}
	return fd;
}

/* Memory for a replay thread, from mmap rather than malloc: a replay
 * process is forked from a threaded one, where an allocator lock another
 * thread held at the fork would be held for ever (ASan's allocator is
 * not reset at fork, as glibc's is).  Zeroed; NULL on failure. */
static void *fork_safe_alloc(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void fork_safe_free(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

int rp_selfmon_open(struct rp_selfmon *m, uint32_t ring_pages)
{
	memset(m, 0, sizeof(*m));
	m->fd = m->fd_maj = -1;
	m->sw = fork_safe_alloc(RP_SELFMON_CALLS * sizeof(*m->sw));
	if (!m->sw)
		return -ENOMEM;
	m->capsw = RP_SELFMON_CALLS;
	long ps = sysconf(_SC_PAGESIZE);
	/* (written now: their first writes would be faults of the thread's
	 * counted stretch) */
	for (size_t i = 0; i < m->capsw; i += (size_t)ps / sizeof(*m->sw))
		__atomic_store_n(&m->sw[i].t0, 0, __ATOMIC_RELAXED);
	m->fd = open_one(PERF_COUNT_SW_PAGE_FAULTS_MIN, -1, 1);
	if (m->fd < 0) {
		int e = -errno;
		rp_selfmon_close(m);
		return e;
	}
	void *p = MAP_FAILED;
	/* A smaller ring where the locked-memory limit refuses one this size
	 * (perf_event_mlock_kb, for users without CAP_IPC_LOCK). */
	for (; ring_pages >= 2 && p == MAP_FAILED; ring_pages /= 2) {
		m->map_len = (size_t)(ring_pages + 1) * (size_t)ps;
		p = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
		if (p != MAP_FAILED)
			break;
	}
	if (p == MAP_FAILED) {
		int e = -errno;
		rp_selfmon_close(m);
		return e;
	}
	m->pc = p;
	m->data = (unsigned char *)p + ps;
	m->data_size = m->map_len - (size_t)ps;
	m->fd_maj = open_one(PERF_COUNT_SW_PAGE_FAULTS_MAJ, -1, 0);
	if (m->fd_maj >= 0 && ioctl(m->fd_maj, PERF_EVENT_IOC_SET_OUTPUT, m->fd) < 0) {
		close(m->fd_maj);
		m->fd_maj = -1;
	}
	ioctl(m->fd, PERF_EVENT_IOC_ID, &m->id_min);
	if (m->fd_maj >= 0)
		ioctl(m->fd_maj, PERF_EVENT_IOC_ID, &m->id_maj);
	m->seq = rp_selfmon_seq(m);
	/* The ring's tail written (the drains write it), then the samples so
	 * far, of this set-up, dropped: the thread's count starts after. */
	__atomic_store_n(&m->pc->data_tail, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&m->pc->data_tail, __atomic_load_n(&m->pc->data_head, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	return 0;
}

void rp_selfmon_close(struct rp_selfmon *m)
{
	if (m->pc)
		munmap((void *)m->pc, m->map_len);
	if (m->fd_maj >= 0)
		close(m->fd_maj);
	if (m->fd >= 0)
		close(m->fd);
	fork_safe_free(m->sw, RP_SELFMON_CALLS * sizeof(*m->sw));
	m->pc = NULL;
	m->sw = NULL;
	m->fd = m->fd_maj = -1;
}

void rp_selfmon_switched(struct rp_selfmon *m, uint64_t t0, uint64_t t1)
{
	if (m->nsw == m->capsw) {
		m->sw_dropped++; /* (drains come at 3/4) */
		return;
	}
	m->sw[m->nsw].t0 = t0;
	m->sw[m->nsw].t1 = t1;
	m->nsw++;
}

/* ---- where an address is -------------------------------------------------- */

/* Heapsort by start: in place (glibc's qsort may allocate, and a fault
 * of the replayer's own there would count in the thread's faults). */
static void sift(struct rp_frange *r, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && r[c + 1].start > r[c].start)
			c++;
		if (r[i].start >= r[c].start)
			return;
		struct rp_frange x = r[i];
		r[i] = r[c];
		r[c] = x;
		i = c;
	}
}

static void sort_ranges(struct rp_frange *r, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(r, i, n);
	for (size_t k = n; k-- > 1;) {
		struct rp_frange x = r[0];
		r[0] = r[k];
		r[k] = x;
		sift(r, 0, k);
	}
}

int rp_fclass_init(struct rp_fclass *c, const rp_trace *t)
{
	memset(c, 0, sizeof(*c));
	size_t n = (size_t)t->nregions + t->nstandins;
	if (!n)
		return 0;
	c->r = fork_safe_alloc(n * sizeof(*c->r));
	if (!c->r)
		return -ENOMEM;
	c->cap = n;
	return 0;
}

void rp_fclass_build(struct rp_fclass *c, const rp_trace *t, const uint64_t *base)
{
	uint32_t nr = t->nregions;
	c->n = 0;
	for (uint32_t r = 0; r < nr && c->n < c->cap; r++)
		if (base[r] && t->regions[r].kind != RG_SNAP)
			c->r[c->n++] = (struct rp_frange){ .start = base[r],
							   .end = base[r] + t->regions[r].size,
							   .region = r, .kind = t->regions[r].fkind };
	for (uint32_t s = 0; s < t->nstandins && c->n < c->cap; s++) {
		const struct rp_standin *st = &t->standins[s];
		if (st->region < nr && base[st->region])
			c->r[c->n++] = (struct rp_frange){ .start = base[st->region] + st->off,
							   .end = base[st->region] + st->off + st->len,
							   .region = st->region, .kind = st->fkind };
	}
	sort_ranges(c->r, c->n);
	/* maxend[i]: the largest end of ranges 0..i, so that a lookup knows
	 * how far back an overlapping (older, stale) range may reach. */
	uint64_t mx = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (c->r[i].end > mx)
			mx = c->r[i].end;
		c->r[i].maxend = mx;
	}
}

void rp_fclass_defer(struct rp_fclass *c, const rp_trace *t, const uint64_t *base)
{
	c->t = t;
	c->base = base;
}

uint32_t rp_fclass_kind(struct rp_fclass *c, uint64_t addr)
{
	if (c->t) {
		rp_fclass_build(c, c->t, c->base);
		c->t = NULL;
	}
	size_t lo = 0, hi = c->n;
	while (lo < hi) { /* the first range starting after addr */
		size_t mid = lo + (hi - lo) / 2;
		if (c->r[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Of the ranges holding addr, the newest region's (a region that
	 * went away keeps its base until another takes its place). */
	uint32_t best = RP_VOID, kind = RP_FK_OTHER;
	for (size_t i = lo, steps = 0; i-- > 0 && c->r[i].maxend > addr && steps < 64; steps++)
		if (addr < c->r[i].end && (best == RP_VOID || c->r[i].region > best)) {
			best = c->r[i].region;
			kind = c->r[i].kind;
		}
	return kind;
}

void rp_fclass_free(struct rp_fclass *c)
{
	fork_safe_free(c->r, c->cap * sizeof(*c->r));
	c->r = NULL;
	c->n = c->cap = 0;
}

/* ---- the ring ------------------------------------------------------------- */

void rp_selfmon_own(struct rp_selfmon *m, uint64_t t0, uint64_t t1)
{
	if (!m->pc)
		return;
	/* (a stretch that joins the newest widens it) */
	if (m->nown && m->own[(m->nown - 1) % RP_SELFMON_OWN].t1 >= t0) {
		m->own[(m->nown - 1) % RP_SELFMON_OWN].t1 = t1;
		return;
	}
	m->own[m->nown % RP_SELFMON_OWN].t0 = t0;
	m->own[m->nown % RP_SELFMON_OWN].t1 = t1;
	m->nown++;
}

/* Is addr in c's own table?  Its pages are first written by a drain (a
 * drain's own work, set-up), and where the process's mappings come and
 * go, a stale replayed range can hold the table's address: a fault there
 * would pass for the replay's. */
static int in_fclass(const struct rp_fclass *c, uint64_t addr)
{
	uint64_t a = (uint64_t)(uintptr_t)c->r;
	return c->r && addr >= a && addr - a < c->cap * sizeof(*c->r);
}

/* Is time t inside one of the noted stretches of vmreplay's own work? */
static int in_own(const struct rp_selfmon *m, uint64_t t)
{
	uint32_t n = m->nown < RP_SELFMON_OWN ? m->nown : RP_SELFMON_OWN;
	for (uint32_t i = 0; i < n; i++)
		if (t >= m->own[i].t0 && t <= m->own[i].t1)
			return 1;
	return 0;
}

int rp_selfmon_due(const struct rp_selfmon *m)
{
	if (!m->pc)
		return 0;
	uint64_t head = __atomic_load_n(&m->pc->data_head, __ATOMIC_ACQUIRE);
	return head - m->pc->data_tail > m->data_size / 2 || m->nsw >= m->capsw / 4 * 3;
}

/* The switch that left the CPU at `out` and came back at `in` (ns), for
 * the noted calls (time ordered): its share of the one it happened in. */
static void attribute(struct rp_selfmon *m, const struct rp_tick_ns *cv, uint64_t out,
		      uint64_t in, int preempt)
{
	while (m->swi < m->nsw) {
		uint64_t t0 = rp_tick_to_ns(cv, m->sw[m->swi].t0);
		uint64_t t1 = rp_tick_to_ns(cv, m->sw[m->swi].t1);
		if (out > t1) {
			m->swi++;
			continue;
		}
		if (out + 2000 < t0) /* (clock reads apart: 2 us of slack) */
			return;
		uint64_t end = in < t1 ? in : t1;
		if (end > out)
			m->off_cpu_ns += end - out;
		if (preempt)
			m->ivcsw++;
		else
			m->vcsw++;
		return;
	}
}

void rp_selfmon_drain(struct rp_selfmon *m, struct rp_fclass *c, const struct rp_tick_ns *cv)
{
	if (!m->pc)
		return;
	volatile struct perf_event_mmap_page *pc = m->pc;
	uint64_t head = __atomic_load_n(&pc->data_head, __ATOMIC_ACQUIRE), tail = pc->data_tail;
	uint64_t mask = m->data_size - 1;
	m->swi = 0;
	while (tail < head) {
		struct perf_event_header h;
		unsigned char rec[64];
		for (size_t i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = m->data[(tail + i) & mask];
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		size_t n = h.size < sizeof(rec) ? h.size : sizeof(rec);
		for (size_t i = 0; i < n; i++)
			rec[i] = m->data[(tail + i) & mask];
		tail += h.size;
		if (h.type == PERF_RECORD_SAMPLE && n >= sizeof(struct fault_sample)) {
			struct fault_sample s;
			memcpy(&s, rec, sizeof(s));
			uint32_t k = rp_fclass_kind(c, s.addr);
			if (s.id == m->id_maj && m->fd_maj >= 0)
				m->major[k]++;
			else if ((k == RP_FK_OTHER && in_own(m, s.time)) || in_fclass(c, s.addr))
				m->own_minor++;
			else
				m->minor[k]++;
			m->samples++;
		} else if (h.type == PERF_RECORD_THROTTLE) {
			m->throttled++; /* (samples the kernel did not take) */
		} else if (h.type == PERF_RECORD_LOST && n >= sizeof(h) + 16) {
			uint64_t lost;
			memcpy(&lost, rec + sizeof(h) + 8, sizeof(lost));
			m->lost += lost;
		} else if (h.type == PERF_RECORD_SWITCH && n >= sizeof(struct switch_rec)) {
			struct switch_rec s;
			memcpy(&s, rec, sizeof(s));
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
				m->out_ns = s.time;
				m->out_preempt = (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
			} else if (m->out_ns) {
				attribute(m, cv, m->out_ns, s.time, m->out_preempt);
				m->out_ns = 0;
			}
		}
	}
	__atomic_store_n(&pc->data_tail, tail, __ATOMIC_RELEASE);
	/* Every noted call has ended and its switches are read: the thread
	 * runs (a switch still open would be one out of this drain's own
	 * time, outside any call). */
	m->nsw = m->swi = 0;
}

uint64_t rp_tick_to_ns(const struct rp_tick_ns *cv, uint64_t tick)
{
	if (!cv->per_tick)
		return tick;
	double d = ((double)tick - (double)cv->tick0) * cv->per_tick;
	return (uint64_t)((double)cv->ns0 + d);
}
