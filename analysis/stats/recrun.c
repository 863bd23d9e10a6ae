/*
 * recrun.c - see recrun.h.
 *
 * Per process, by its recorded index (a hash: indices come from the file),
 * the fields below; then the sum over the processes that have counters,
 * their own or all their threads'.
 */
#include <errno.h>
#include <string.h>
#include "recrun.h"
#include "vmtutil.h"

enum {
	F_SEEN, F_ROOT, F_HAVE, F_MIN, F_MAJ, F_VCS, F_IVCS, F_STOPS, /* PROCESS counters */
	F_THREADS, F_TCOUNTED, T_MIN, T_MAJ, T_VCS, T_IVCS, T_STOPS, /* its threads' */
	F_EXEC, B_MIN, B_MAJ, B_VCS, B_IVCS, B_STOPS,		    /* the root's launch */
};

static int add(struct vmt_htab *t, uint32_t proc, int field, uint64_t v)
{
	uint64_t *p = vmt_htab_put(t, proc, (uint64_t)field, NULL);
	if (!p)
		return -ENOMEM;
	*p += v;
	return 0;
}

static int set(struct vmt_htab *t, uint32_t proc, int field, uint64_t v)
{
	uint64_t *p = vmt_htab_put(t, proc, (uint64_t)field, NULL);
	if (!p)
		return -ENOMEM;
	*p = v;
	return 0;
}

static uint64_t get(const struct vmt_htab *t, uint64_t proc, int field)
{
	const uint64_t *p = vmt_htab_get(t, proc, (uint64_t)field);
	return p ? *p : 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static int counters(struct vmt_htab *t, const struct vmt_event *ev)
{
	const struct vmt_counters *c = &ev->u.counters;
	int rc = 0;
	switch (c->scope) {
	case VMT_CNT_PROCESS:
		rc = set(t, ev->proc, F_HAVE, 1) ?: set(t, ev->proc, F_MIN, vmt_counters_minflt(c)) ?:
		     set(t, ev->proc, F_MAJ, c->majflt) ?: set(t, ev->proc, F_VCS, c->nvcsw) ?:
		     set(t, ev->proc, F_IVCS, c->nivcsw) ?: set(t, ev->proc, F_STOPS, c->stops);
		break;
	case VMT_CNT_THREAD:
		rc = add(t, ev->proc, F_TCOUNTED, 1) ?: add(t, ev->proc, T_MIN, vmt_counters_minflt(c)) ?:
		     add(t, ev->proc, T_MAJ, c->majflt) ?: add(t, ev->proc, T_VCS, c->nvcsw) ?:
		     add(t, ev->proc, T_IVCS, c->nivcsw) ?: add(t, ev->proc, T_STOPS, c->stops);
		break;
	case VMT_CNT_EXEC:
		/* A root's first exec starts the recording. */
		if (get(t, ev->proc, F_EXEC))
			break;
		rc = set(t, ev->proc, F_EXEC, 1);
		if (!rc && get(t, ev->proc, F_ROOT))
			rc = set(t, ev->proc, B_MIN, vmt_counters_minflt(c)) ?: set(t, ev->proc, B_MAJ, c->majflt) ?:
			     set(t, ev->proc, B_VCS, c->nvcsw) ?: set(t, ev->proc, B_IVCS, c->nivcsw) ?:
			     set(t, ev->proc, B_STOPS, c->stops);
		break;
	}
	return rc;
}

int van_recrun_read(vmt_reader *r, struct van_recrun *out)
{
	struct vmt_htab t;
	struct vmt_event ev;
	uint64_t first = 0, last = 0, calls = 0, waits = 0;
	int rc, seen = 0;

	memset(out, 0, sizeof(*out));
	out->minor = vmt_reader_header(r)->minor;
	vmt_htab_init(&t);
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		if (!seen || ev.ts_ns < first)
			first = ev.ts_ns;
		if (ev.ts_ns > last)
			last = ev.ts_ns;
		seen = 1;
		int e = 0;
		switch (ev.kind) {
		case VMT_EV_PROCESS_START:
			e = set(&t, ev.proc, F_SEEN, 1) ?:
			    set(&t, ev.proc, F_ROOT, ev.u.process_start.parent_proc == VMT_NONE);
			break;
		case VMT_EV_THREAD_START:
			e = set(&t, ev.proc, F_SEEN, 1) ?: add(&t, ev.proc, F_THREADS, 1);
			break;
		case VMT_EV_COUNTERS:
			out->counters++;
			e = counters(&t, &ev);
			break;
		case VMT_EV_SYSCALL:
			if (ev.u.sc.flags & VMT_SC_NO_RESULT)
				break;
			calls++;
			if (ev.u.sc.waits) {
				waits++;
				out->off_cpu_ns += ev.u.sc.off_cpu_ns;
			}
			break;
		}
		if (e) {
			vmt_htab_free(&t);
			return e;
		}
	}
	if (rc < 0) {
		vmt_htab_free(&t);
		return rc;
	}
	out->span_ns = last - first;
	out->have_off_cpu = calls && waits == calls;
	for (size_t i = 0; i < t.cap; i++) {
		const struct vmt_htab_ent *x = &t.e[i];
		if (!x->used || x->b != F_SEEN)
			continue;
		uint64_t p = x->a;
		out->procs++;
		uint64_t mi, ma, v, iv, st;
		if (get(&t, p, F_HAVE)) {
			mi = get(&t, p, F_MIN), ma = get(&t, p, F_MAJ);
			v = get(&t, p, F_VCS), iv = get(&t, p, F_IVCS), st = get(&t, p, F_STOPS);
		} else if (get(&t, p, F_THREADS) && get(&t, p, F_TCOUNTED) == get(&t, p, F_THREADS)) {
			mi = get(&t, p, T_MIN), ma = get(&t, p, T_MAJ);
			v = get(&t, p, T_VCS), iv = get(&t, p, T_IVCS), st = get(&t, p, T_STOPS);
		} else {
			out->procs_missing++;
			continue;
		}
		out->minflt += sub0(mi, get(&t, p, B_MIN));
		out->majflt += sub0(ma, get(&t, p, B_MAJ));
		out->vcs += sub0(sub0(v, get(&t, p, B_VCS)), sub0(st, get(&t, p, B_STOPS)));
		out->ivcs += sub0(iv, get(&t, p, B_IVCS));
	}
	vmt_htab_free(&t);
	return 0;
}
