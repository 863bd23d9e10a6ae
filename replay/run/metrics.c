/*
 * metrics.c - latency histograms, perf software counters, medians.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "exec_int.h"

/* ---- histogram ---------------------------------------------------------- */

/* Largest value that falls in bucket idx. */
static uint64_t bucket_top(unsigned idx)
{
	if (idx < 16)
		return idx;
	unsigned e = (idx - 16) / RP_HIST_SUB + 4, sub = (idx - 16) % RP_HIST_SUB;
	return (((uint64_t)RP_HIST_SUB + sub + 1) << (e - 4)) - 1;
}

uint64_t rp_hist_quantile(const struct rp_hist *h, double q)
{
	if (!h->count)
		return 0;
	uint64_t want = (uint64_t)(q * (double)h->count + 0.999999);
	if (want < 1)
		want = 1;
	if (want > h->count)
		want = h->count;
	uint64_t seen = 0;
	for (unsigned i = 0; i < RP_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			if (i == RP_HIST_BUCKETS - 1) /* everything beyond */
				return h->max;
			uint64_t top = bucket_top(i);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

void rp_hist_merge(struct rp_hist *dst, const struct rp_hist *src)
{
	dst->count += src->count;
	dst->errors += src->errors;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
	for (unsigned i = 0; i < RP_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
}

/* ---- the op clock -------------------------------------------------------- */

/* The TSC is a usable op clock when the kernel chose it as its
 * clocksource: then it runs at a constant rate and in step on every CPU. */
int rp_tsc_usable(void)
{
#if defined(__x86_64__)
	int tscmode = 0; /* a sandbox may make rdtsc trap */
	if (prctl(PR_GET_TSC, &tscmode, 0, 0, 0) == 0 && tscmode == PR_TSC_SIGSEGV)
		return 0;
	char cs[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return 0;
	int ok = fgets(cs, sizeof(cs), f) && strcmp(cs, "tsc\n") == 0;
	fclose(f);
	return ok;
#else
	return 0;
#endif
}

/* A reading of the op clock and of CLOCK_MONOTONIC at one moment: the
 * monotonic read bracketed by two ticks, the tightest of a few tries (a
 * preemption between the two reads would skew every latency of the
 * run). */
void rp_clock_pair(int tsc, uint64_t *tick, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t a = rp_ticks(tsc), n = vmt_now_ns(), b = rp_ticks(tsc);
		if (b - a < best) {
			best = b - a;
			*tick = a + (b - a) / 2;
			*ns = n;
		}
		if (!tsc)
			break;
	}
}

/* ---- perf software counters --------------------------------------------- */

/* Minor faults, major faults, context switches of this process and every
 * thread and process it creates from now on (inherit), opened disabled. */
int rp_perf_open(int fds[3])
{
	static const uint64_t cfg[3] = {PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
					PERF_COUNT_SW_CONTEXT_SWITCHES};
	for (int i = 0; i < 3; i++) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof(a));
		a.type = PERF_TYPE_SOFTWARE;
		a.size = sizeof(a);
		a.config = cfg[i];
		a.disabled = 1;
		a.inherit = 1;
		a.exclude_hv = 1;
		fds[i] = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fds[i] < 0) {
			int err = -errno;
			while (i-- > 0) {
				close(fds[i]);
				fds[i] = -1;
			}
			return err;
		}
	}
	return 0;
}

void rp_perf_enable(int fds[3], int on)
{
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			ioctl(fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

int rp_perf_read(int fds[3], uint64_t out[3])
{
	for (int i = 0; i < 3; i++) {
		uint64_t v;
		if (fds[i] < 0 || read(fds[i], &v, sizeof(v)) != (ssize_t)sizeof(v))
			return -EIO;
		out[i] = v;
	}
	return 0;
}

/* ---- reclaim --------------------------------------------------------------- */

void rp_reclaim_read(struct rp_reclaim *r)
{
	memset(r, 0, sizeof(*r));
	FILE *f = fopen("/proc/vmstat", "re");
	if (!f)
		return;
	char key[64];
	unsigned long long v;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, "workingset_refault_anon"))
			r->refault_anon = v;
		else if (!strcmp(key, "workingset_refault_file"))
			r->refault_file = v;
		else if (!strcmp(key, "pswpin"))
			r->pswpin = v;
		else if (!strcmp(key, "pswpout"))
			r->pswpout = v;
		else if (!strcmp(key, "pgmajfault"))
			r->pgmajfault = v;
		/* by who reclaimed (kswapd, direct, khugepaged, proactive):
		 * the by-type ones (_anon, _file) count the same pages again */
		else if (!strncmp(key, "pgsteal_", 8) && strcmp(key + 8, "anon") && strcmp(key + 8, "file"))
			r->pgsteal += v;
		else if (!strncmp(key, "pgscan_", 7) && strcmp(key + 7, "anon") && strcmp(key + 7, "file") &&
			 strcmp(key + 7, "direct_throttle"))
			r->pgscan += v;
	}
	fclose(f);
	r->ok = 1;
	/* A DAMON pageout scheme (kdamond running one) pages out what it
	 * finds cold, whoever it belongs to. */
	char path[128], buf[32];
	for (int k = 0; k < 16 && !r->damon_pageout; k++) {
		snprintf(path, sizeof(path), "/sys/kernel/mm/damon/admin/kdamonds/%d/state", k);
		FILE *s = fopen(path, "re");
		if (!s)
			break;
		int on = fgets(buf, sizeof(buf), s) && !strncmp(buf, "on", 2);
		fclose(s);
		for (int j = 0; on && j < 16 && !r->damon_pageout; j++) {
			snprintf(path, sizeof(path),
				 "/sys/kernel/mm/damon/admin/kdamonds/%d/contexts/0/schemes/%d/action", k, j);
			FILE *a = fopen(path, "re");
			if (!a)
				break;
			r->damon_pageout = fgets(buf, sizeof(buf), a) && !strncmp(buf, "pageout", 7);
			fclose(a);
		}
	}
}

void rp_reclaim_delta(const struct rp_reclaim *b, const struct rp_reclaim *a, struct rp_reclaim *d)
{
	memset(d, 0, sizeof(*d));
	if (!a->ok || !b->ok)
		return;
	d->ok = 1;
	d->damon_pageout = a->damon_pageout || b->damon_pageout;
#define D(f) d->f = a->f > b->f ? a->f - b->f : 0;
	D(refault_anon) D(refault_file) D(pgsteal) D(pgscan) D(pswpin) D(pswpout) D(pgmajfault)
#undef D
}

/* ---- medians ------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median_of(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

#define RUN_FIELD(f) offsetof(struct rp_run_result, f),
static const size_t run_fields[] = {
	RP_RUN_NUMBERS(RUN_FIELD)
	RUN_FIELD(perf_minor) RUN_FIELD(perf_major) RUN_FIELD(perf_cs)
	RUN_FIELD(rusage_minor) RUN_FIELD(rusage_major)
	RUN_FIELD(setup_minor) RUN_FIELD(setup_major) RUN_FIELD(setup_vcsw) RUN_FIELD(setup_ivcsw)
};
#define OP_FIELD(f) offsetof(struct rp_op_result, f),
static const size_t op_fields[] = { RP_OP_NUMBERS(OP_FIELD) };

int rp_run_median(const struct rp_run_result *runs, unsigned n, struct rp_run_result *med)
{
	memset(med, 0, sizeof(*med));
	if (!n)
		return -EINVAL;
	uint64_t *v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t f = 0; f < sizeof(run_fields) / sizeof(run_fields[0]); f++) {
		for (unsigned i = 0; i < n; i++)
			v[i] = *(const uint64_t *)((const char *)&runs[i] + run_fields[f]);
		*(uint64_t *)((char *)med + run_fields[f]) = median_of(v, n);
	}
	for (unsigned op = 0; op < VMT_OP__COUNT; op++) {
		for (size_t f = 0; f < sizeof(op_fields) / sizeof(op_fields[0]); f++) {
			for (unsigned i = 0; i < n; i++)
				v[i] = *(const uint64_t *)((const char *)&runs[i].ops[op] + op_fields[f]);
			*(uint64_t *)((char *)&med->ops[op] + op_fields[f]) = median_of(v, n);
		}
		for (unsigned i = 0; i < n; i++)
			v[i] = runs[i].div_by_op[op];
		med->div_by_op[op] = median_of(v, n);
	}
	/* Threads and divergence details: those of the median-wall run. */
	for (unsigned i = 0; i < n; i++)
		v[i] = runs[i].wall_ns;
	uint64_t mw = median_of(v, n);
	unsigned pick = 0;
	uint64_t best = UINT64_MAX;
	for (unsigned i = 0; i < n; i++) {
		uint64_t d = runs[i].wall_ns > mw ? runs[i].wall_ns - mw : mw - runs[i].wall_ns;
		if (d < best) {
			best = d;
			pick = i;
		}
	}
	free(v);
	med->perf_ok = runs[pick].perf_ok;
	med->ndiv_shown = runs[pick].ndiv_shown;
	memcpy(med->div, runs[pick].div, sizeof(med->div));
	med->reclaim = runs[pick].reclaim;
	med->nthreads = runs[pick].nthreads;
	if (med->nthreads) {
		med->threads = malloc(med->nthreads * sizeof(*med->threads));
		if (!med->threads) {
			med->nthreads = 0;
			return -ENOMEM;
		}
		memcpy(med->threads, runs[pick].threads, med->nthreads * sizeof(*med->threads));
	}
	return 0;
}

void rp_run_result_free(struct rp_run_result *r)
{
	if (!r)
		return;
	free(r->threads);
	r->threads = NULL;
	r->nthreads = 0;
}
