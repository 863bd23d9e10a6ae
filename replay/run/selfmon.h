/*
 * selfmon.h - a replay thread watching itself through perf (selfmon.c):
 * its faults by kind of mapping, its replayed calls' time off CPU and
 * switches.  Internal to replay/run/.
 */
#ifndef VMREPLAY_SELFMON_H
#define VMREPLAY_SELFMON_H

#include <stdint.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include "model.h"

/* Op-clock ticks to CLOCK_MONOTONIC ns: ns0 + (tick - tick0) * per_tick
 * (per_tick 0: the ticks are ns). */
struct rp_tick_ns {
	uint64_t tick0, ns0;
	double per_tick;
};
uint64_t rp_tick_to_ns(const struct rp_tick_ns *cv, uint64_t tick);

/* Where addresses of one replay process are: its regions' and stand-ins'
 * ranges at their current bases, sorted. */
struct rp_frange {
	uint64_t start, end, maxend;
	uint32_t region, kind;
};
struct rp_fclass {
	struct rp_frange *r;
	size_t n, cap;
	/* set: build from these before the next lookup (rp_fclass_defer) */
	const rp_trace *t;
	const uint64_t *base;
};
/* Room in c for the ranges of t's regions and stand-ins (written: its
 * pages faulted in now).  0 or -ENOMEM. */
int rp_fclass_init(struct rp_fclass *c, const rp_trace *t);
/* Fill c from the trace's regions (as this process's copy of the loaded
 * trace has them) and base, the region bases of one copy, within its room
 * (a region beyond it: its addresses count as vmreplay's own). */
void rp_fclass_build(struct rp_fclass *c, const rp_trace *t, const uint64_t *base);
/* rp_fclass_build at the next lookup, if there is one: a drain with no
 * fault sample (most, in a program of many short threads) sorts nothing. */
void rp_fclass_defer(struct rp_fclass *c, const rp_trace *t, const uint64_t *base);
/* The enum rp_fkind of the replayed mapping holding addr (RP_FK_OTHER:
 * none: vmreplay's own memory). */
uint32_t rp_fclass_kind(struct rp_fclass *c, uint64_t addr);
void rp_fclass_free(struct rp_fclass *c);

struct rp_selfmon {
	int fd, fd_maj;	    /* minor and major faults (one ring: fd's), -1 */
	uint64_t id_min, id_maj;
	volatile struct perf_event_mmap_page *pc;
	unsigned char *data;
	size_t map_len, data_size;
	uint32_t seq;	    /* pc->lock as last read */
	/* Calls that left the CPU: their op-clock times, until a drain. */
	struct { uint64_t t0, t1; } *sw;
	uint32_t nsw, capsw, swi;
	uint64_t sw_dropped;
	uint64_t out_ns;    /* the last switch out not yet matched */
	int out_preempt;
	/* What the drains found. */
	uint64_t minor[RP_FK__COUNT], major[RP_FK__COUNT];
	uint64_t samples, lost, throttled;
	uint64_t off_cpu_ns, vcsw, ivcsw; /* inside the noted calls */
	/* Stretches of vmreplay's own work inside the thread's counted
	 * stretch (CLOCK_MONOTONIC ns), the newest RP_SELFMON_OWN: a minor
	 * fault in its own memory (kind other) there is its set-up, counted
	 * in own_minor and not in minor[]. */
	struct { uint64_t t0, t1; } own[8];
	uint32_t nown;
	uint64_t own_minor;
};
#define RP_SELFMON_OWN 8u

/* Watch this thread: fault samples and switch records into one ring of
 * ring_pages pages (a power of two; smaller if the locked-memory limit
 * wants), with room for RP_SELFMON_CALLS noted calls between drains
 * (taken, and written, now: nothing is allocated later, where it would
 * fault in the thread's counted stretch).  0, or -errno: then m->pc is
 * NULL and the rest does nothing. */
#define RP_SELFMON_CALLS 4096u
int rp_selfmon_open(struct rp_selfmon *m, uint32_t ring_pages);
void rp_selfmon_close(struct rp_selfmon *m);

/* The perf page's update count: it moves when the thread leaves or gets
 * a CPU (0 when not watching).  Read around each replayed call. */
static inline uint32_t rp_selfmon_seq(const struct rp_selfmon *m)
{
	return m->pc ? __atomic_load_n(&m->pc->lock, __ATOMIC_ACQUIRE) : 0;
}
/* A call [t0, t1] (op-clock ticks) whose reads of the count differed. */
void rp_selfmon_switched(struct rp_selfmon *m, uint64_t t0, uint64_t t1);
/* vmreplay's own work went on from t0 to t1 (CLOCK_MONOTONIC ns): a fork
 * in another thread of the process and what this one wrote again of its
 * own after it, a drain, an exec's new stand-ins.  Its faults in its own
 * memory then, drained by one of the next two drains, are set-up. */
void rp_selfmon_own(struct rp_selfmon *m, uint64_t t0, uint64_t t1);
/* Is the ring half full, or are many calls noted: time to drain? */
int rp_selfmon_due(const struct rp_selfmon *m);
/* Read the ring: samples by kind (c), switches into the noted calls'
 * waits (cv converts their times). */
void rp_selfmon_drain(struct rp_selfmon *m, struct rp_fclass *c, const struct rp_tick_ns *cv);

/* A replay thread's self-watch (watch.c): its perf ring and where the
 * addresses of its process are. */
struct rp_watch {
	struct rp_selfmon m;
	struct rp_fclass c;
};

#endif
