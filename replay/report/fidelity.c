/*
 * fidelity.c - every replay states its own error (vmreplay(1), FIDELITY):
 * the replay threads' own counters held against those the kernel counted
 * for the recorded run (COUNTERS events): faults, context switches, the
 * time its calls spent off CPU and, at --speed=1, its wall time; for the
 * whole trace, each process and each thread; one verdict; a warning that
 * names the process and the kind of mapping where faults differ; and what
 * reclaim did meanwhile.
 *
 * Both sides count the same thing: a thread's own faults and switches,
 * from its start (the recording: its creation; the replay: its stream's
 * first element) to its end.  The recorded side loses what the program
 * did not do itself: the root process's launch (its counters at the
 * first exec) and, for switches, the recorder's own stops.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "fidelity.h"
#include "vmtutil.h"

static const char *const kind_name[RP_FK__COUNT] = {
	[RP_FK_ANON] = "anonymous", [RP_FK_PFILE] = "private file",
	[RP_FK_SFILE] = "shared file", [RP_FK_SHM] = "shared memory",
	[RP_FK_STACK] = "stack", [RP_FK_HEAP] = "heap",
	[RP_FK_OTHER] = "no replayed",
};
static const char *const kind_key[RP_FK__COUNT] = {
	[RP_FK_ANON] = "anonymous", [RP_FK_PFILE] = "private_file", [RP_FK_SFILE] = "shared_file",
	[RP_FK_SHM] = "shared_memory", [RP_FK_STACK] = "stack", [RP_FK_HEAP] = "heap",
	[RP_FK_OTHER] = "other",
};
static const char *const num_name[RP_FID__N] = {
	"minor faults", "major faults", "voluntary cs", "involuntary cs", "off-cpu in calls",
};
static const char *const num_key[RP_FID__N] = {
	"minor_faults", "major_faults", "voluntary_cs", "involuntary_cs", "off_cpu_in_calls_ns",
};

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* ---- the recorded side ------------------------------------------------------ */

/* The recorded values of local thread tid, the program's own. */
static void rec_thread(const rp_trace *t, uint32_t tid, struct rp_fid_row *row)
{
	const struct rp_rec_counts *r = &t->rec_threads[tid];
	uint32_t p = t->threads[tid].proc;
	const struct rp_rec_counts *pr = &t->rec_procs[p];
	/* the root's launch: in the thread that exec'd */
	int root = t->procs[p].parent == RP_VOID && t->procs[p].first_thread == tid;
	if (r->have) {
		row->n[RP_FID_MINFLT].recorded = sub0(r->minflt, root ? pr->base_minflt : 0);
		row->n[RP_FID_MAJFLT].recorded = sub0(r->majflt, root ? pr->base_majflt : 0);
		row->n[RP_FID_VCS].recorded = sub0(sub0(r->nvcsw, root ? pr->base_nvcsw : 0),
						   sub0(r->stops, root ? pr->base_stops : 0));
		row->n[RP_FID_IVCS].recorded = sub0(r->nivcsw, root ? pr->base_nivcsw : 0);
		for (int k = RP_FID_MINFLT; k <= RP_FID_IVCS; k++)
			row->n[k].have = 1;
	}
	/* Waits were measured where every call has them (a stream recording). */
	if (r->calls_waits && r->calls_waits == r->calls) {
		row->n[RP_FID_OFFCPU].recorded = r->call_off_cpu_ns;
		row->n[RP_FID_OFFCPU].have = 1;
	}
}

/* Local process p: its own counters, else its threads' if all have them. */
static void rec_proc(const rp_trace *t, uint32_t p, struct rp_fid_row *row,
		     const struct rp_fid_row *threads)
{
	const struct rp_rec_counts *r = &t->rec_procs[p];
	int root = t->procs[p].parent == RP_VOID;
	uint32_t nth = 0, nhave = 0, noff = 0;
	uint64_t sum[RP_FID__N] = {0};
	for (uint32_t tid = 0; tid < t->nthreads; tid++) {
		if (t->threads[tid].proc != p)
			continue;
		nth++;
		nhave += threads[tid].n[RP_FID_MINFLT].have;
		noff += threads[tid].n[RP_FID_OFFCPU].have;
		for (int k = 0; k < RP_FID__N; k++)
			sum[k] += threads[tid].n[k].recorded;
	}
	if (r->have) {
		row->n[RP_FID_MINFLT].recorded = sub0(r->minflt, root ? r->base_minflt : 0);
		row->n[RP_FID_MAJFLT].recorded = sub0(r->majflt, root ? r->base_majflt : 0);
		row->n[RP_FID_VCS].recorded = sub0(sub0(r->nvcsw, root ? r->base_nvcsw : 0),
						   sub0(r->stops, root ? r->base_stops : 0));
		row->n[RP_FID_IVCS].recorded = sub0(r->nivcsw, root ? r->base_nivcsw : 0);
	} else if (nth && nhave == nth) {
		for (int k = RP_FID_MINFLT; k <= RP_FID_IVCS; k++)
			row->n[k].recorded = sum[k];
	}
	for (int k = RP_FID_MINFLT; k <= RP_FID_IVCS; k++)
		row->n[k].have = r->have || (nth && nhave == nth);
	if (nth && noff == nth) {
		row->n[RP_FID_OFFCPU].recorded = sum[RP_FID_OFFCPU];
		row->n[RP_FID_OFFCPU].have = 1;
	}
	uint64_t any = 0;
	for (int k = 0; k < RP_FK__COUNT; k++)
		any += row->rec_kind[k] = r->faults[k];
	row->kinds_rec = any != 0;
	row->os_pid = r->os_pid;
	row->path = r->path;
}

/* ---- judging ------------------------------------------------------------------ */

static void judge(struct rp_fid_num *x, double tol, uint64_t floor)
{
	uint64_t d = x->replay > x->recorded ? x->replay - x->recorded : x->recorded - x->replay;
	x->judged = 1;
	x->ok = d <= floor || (double)d <= tol * (double)x->recorded;
}

static void judge_row(struct rp_fid_row *row, int speed1)
{
	for (int k = 0; k < RP_FID__N; k++)
		if (!row->n[k].have)
			row->n[k].judged = row->n[k].ok = 0;
	if (row->n[RP_FID_MINFLT].have)
		judge(&row->n[RP_FID_MINFLT], RP_FID_FAULTS_TOL, RP_FID_FAULTS_FLOOR);
	if (row->n[RP_FID_MAJFLT].have)
		judge(&row->n[RP_FID_MAJFLT], RP_FID_FAULTS_TOL, RP_FID_FAULTS_FLOOR);
	/* Switches and waits follow the timing: at --speed=max the calls
	 * run back to back, and they are not expected to match. */
	if (!speed1)
		return;
	if (row->n[RP_FID_VCS].have)
		judge(&row->n[RP_FID_VCS], RP_FID_CS_TOL, RP_FID_CS_FLOOR);
	if (row->n[RP_FID_IVCS].have)
		judge(&row->n[RP_FID_IVCS], RP_FID_CS_TOL, RP_FID_CS_FLOOR);
	if (row->n[RP_FID_OFFCPU].have)
		judge(&row->n[RP_FID_OFFCPU], RP_FID_OFFCPU_TOL, RP_FID_OFFCPU_FLOOR);
}

static void ratio(char *out, size_t len, const struct rp_fid_num *x)
{
	if (!x->have)
		snprintf(out, len, "-");
	else if (!x->recorded)
		snprintf(out, len, x->replay ? "inf" : "1.000");
	else
		snprintf(out, len, "%.3f", (double)x->replay / (double)x->recorded);
}

/* The kind of mapping where the row's faults differ most, into out. */
static void where(const struct rp_fid_row *row, int no_watch, char *out, size_t len)
{
	if (!row->kinds_rec) {
		snprintf(out, len, "the trace has no fault addresses to tell where (--touch=faults records them)");
		return;
	}
	if (!row->kinds_rep) {
		snprintf(out, len, no_watch ? "the replay did not sample its own faults (--no-watch)"
			 : "the replay's own fault addresses could not be sampled here (perf)");
		return;
	}
	int best = -1;
	uint64_t bd = 0;
	for (int k = 0; k < RP_FK__COUNT; k++) {
		uint64_t a = row->rep_kind[k], b = row->rec_kind[k];
		uint64_t d = a > b ? a - b : b - a;
		if (best < 0 || d > bd) {
			best = k;
			bd = d;
		}
	}
	if (best == RP_FK_OTHER)
		snprintf(out, len, "most of the difference outside the replayed mappings: vmreplay's own "
			 "memory (replayed %" PRIu64 " faults there; recorded %" PRIu64 " outside the trace's "
			 "mappings)", row->rep_kind[best], row->rec_kind[best]);
	else
		snprintf(out, len, "most of the difference in %s mappings (replayed %" PRIu64
			 ", recorded %" PRIu64 " faults there)", kind_name[best], row->rep_kind[best],
			 row->rec_kind[best]);
}

static void warn_row(struct rp_fidelity *f, const struct rp_fid_row *row, const char *who)
{
	if (f->nwarn >= RP_FID_MAX_WARN)
		return;
	const struct rp_fid_num *mi = &row->n[RP_FID_MINFLT], *ma = &row->n[RP_FID_MAJFLT];
	char w[200], what[96];
	if (mi->judged && !mi->ok) {
		where(row, f->no_watch, w, sizeof(w));
		snprintf(what, sizeof(what), "%" PRIu64 " minor faults, recorded %" PRIu64, mi->replay,
			 mi->recorded);
	} else {
		/* (where all faults differ most says nothing of the major ones) */
		snprintf(w, sizeof(w), "major faults follow the page cache (vmreplay(1), FIDELITY)");
		snprintf(what, sizeof(what), "%" PRIu64 " major faults, recorded %" PRIu64, ma->replay,
			 ma->recorded);
	}
	snprintf(f->warn[f->nwarn++], sizeof(f->warn[0]), "%s replayed %s: %s", who, what, w);
}

static void reclaim_line(struct rp_fidelity *f, const struct rp_run_result *r)
{
	const struct rp_reclaim *c = &r->reclaim;
	f->rc = *c;
	f->reclaim[0] = 0;
	if (!c->ok)
		return;
	uint64_t did = c->refault_anon + c->refault_file + c->pgsteal + c->pswpin + c->pswpout;
	const struct rp_fid_num *ma = &f->total.n[RP_FID_MAJFLT];
	int more_major = ma->have && ma->replay > ma->recorded;
	if (!did && !(c->damon_pageout && more_major))
		return;
	char maj[96] = "";
	if (ma->have)
		snprintf(maj, sizeof(maj), "; the replay took %" PRIu64 " major faults (recorded %" PRIu64 ")",
			 ma->replay, ma->recorded);
	snprintf(f->reclaim, sizeof(f->reclaim),
		 "reclaim during the replay (the whole machine): %" PRIu64 " file and %" PRIu64
		 " anonymous refaults, %" PRIu64 " pages reclaimed, %" PRIu64 " swapped in, %" PRIu64
		 " out%s%s", c->refault_file, c->refault_anon, c->pgsteal, c->pswpin, c->pswpout,
		 c->damon_pageout ? "; DAMON pageout is on (kdamond): it can turn minor faults into major ones"
				  : "", maj);
}

/* ---- the whole ------------------------------------------------------------------ */

struct recmap {
	uint32_t rec, local;
};

/* A trace loaded as the replay ran: the load shared the machine with
 * the replay threads, and where they caught up with it they waited for
 * it.  Their figures leave the waits out (their time, switches and
 * faults are set-up), not what being late did to the calls after each:
 * the line says so, that the figures are never silently the load's. */
static void load_line(struct rp_fidelity *f, const rp_trace *t, const struct rp_run_result *r)
{
	f->load[0] = 0;
	f->streamed = t->streamed || !t->complete;
	f->load_cpu_ns = r->load_cpu_ns;
	f->load_wait_ns = r->load_wait_ns;
	f->late = r->load_wait_ns != 0;
	if (!f->streamed && !f->late)
		return;
	char w[32];
	vmt_format_bytes(w, sizeof(w), t->window);
	if (f->late)
		snprintf(f->load, sizeof(f->load),
			 "the replay ran late for its load: its threads waited %.1f ms in all for the "
			 "trace to load (longer than --window=%s; the load took %.1f ms of CPU beside "
			 "them); the figures leave the waits out, not what they did to the calls "
			 "around them",
			 (double)r->load_wait_ns / 1e6, w, (double)r->load_cpu_ns / 1e6);
	else
		snprintf(f->load, sizeof(f->load),
			 "loaded as it ran (longer than --window=%s): the load took %.1f ms of CPU "
			 "beside the replay threads, which never waited for it",
			 w, (double)r->load_cpu_ns / 1e6);
}

/* The settings of this machine that change a replay's faults (THP
 * modes, overcommit, the zero page, fault-around), where they are not
 * the recording's: the replay is then not of the recorded conditions. */
static void mm_line(struct rp_fidelity *f, const rp_trace *t)
{
	char here[512] = "", rec[256], *save = NULL;
	size_t used = 0;
	f->mm[0] = 0;
	if (!t->rec_mm || !*t->rec_mm)
		return;
	vmt_host_mm_words(here, sizeof(here));
	for (char *w = strtok_r(here, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');
		if (!eq)
			continue;
		*eq = 0;
		if (!vmt_options_get(t->rec_mm, w, rec, sizeof(rec)) || !strcmp(rec, eq + 1))
			continue;
		int n = snprintf(f->mm + used, sizeof(f->mm) - used, "%s%s=%s (recorded %s)",
				 used ? ", " : "", w, eq + 1, rec);
		if (n < 0 || (size_t)n >= sizeof(f->mm) - used) {
			f->mm[used] = 0; /* (no half of one) */
			break;
		}
		used += (size_t)n;
	}
}

static int cmp_rec(const void *a, const void *b)
{
	const struct recmap *x = a, *y = b;
	return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static uint32_t local_of(const struct recmap *m, uint32_t n, uint32_t rec)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m[mid].rec < rec)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && m[lo].rec == rec ? m[lo].local : RP_VOID;
}

/* The replay's side of each thread: the first copy's threads (each copy
 * replays the whole trace), found by their recorded index through tm
 * (sorted by it); and their faults by kind, into their process's. */
static void replay_threads(struct rp_fidelity *f, const rp_trace *t, const struct rp_run_result *r,
			   const struct recmap *tm)
{
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct rp_thread_result *x = &r->threads[i];
		uint32_t tid = x->copy == 0 ? local_of(tm, t->nthreads, x->thread) : RP_VOID;
		if (tid == RP_VOID)
			continue;
		struct rp_fid_row *row = &f->threads[tid];
		row->n[RP_FID_MINFLT].replay = x->minor_faults;
		row->n[RP_FID_MAJFLT].replay = x->major_faults;
		row->n[RP_FID_VCS].replay = x->voluntary_cs;
		row->n[RP_FID_IVCS].replay = x->involuntary_cs;
		row->n[RP_FID_OFFCPU].replay = x->call_off_cpu_ns;
		if (!x->watched)
			row->n[RP_FID_OFFCPU].have = 0;
		/* its faults by kind, into its process's (scaled up for the
		 * samples the kernel did not give) */
		struct rp_fid_row *pr = &f->procs[t->threads[tid].proc];
		if (x->watched && x->fault_samples) {
			double up = (double)(x->fault_samples + x->fault_samples_lost) / (double)x->fault_samples;
			for (int k = 0; k < RP_FK__COUNT; k++)
				pr->rep_kind[k] += (uint64_t)((double)x->kind_faults[k] * up + 0.5);
			pr->kinds_rep = 1;
		}
	}
}

/* Each process's row (recorded, and its threads' replayed values), and
 * the whole trace's: the sum of the processes that have counters. */
static void sum_procs(struct rp_fidelity *f, const rp_trace *t)
{
	for (uint32_t p = 0; p < t->nprocs; p++) {
		struct rp_fid_row *row = &f->procs[p];
		row->rec = t->procs[p].rec;
		rec_proc(t, p, row, f->threads);
		for (uint32_t tid = 0; tid < t->nthreads; tid++)
			if (t->threads[tid].proc == p)
				for (int k = 0; k < RP_FID__N; k++)
					row->n[k].replay += f->threads[tid].n[k].replay;
		if (!row->n[RP_FID_MINFLT].have) {
			f->missing++;
			continue;
		}
		for (int k = 0; k < RP_FID__N; k++) {
			f->total.n[k].replay += row->n[k].replay;
			f->total.n[k].recorded += row->n[k].recorded;
		}
		for (int k = 0; k < RP_FK__COUNT; k++) {
			f->total.rec_kind[k] += row->rec_kind[k];
			f->total.rep_kind[k] += row->rep_kind[k];
		}
		f->total.kinds_rec |= row->kinds_rec;
		f->total.kinds_rep |= row->kinds_rep;
	}
	uint32_t counted = t->nprocs - f->missing, off = 0;
	for (uint32_t p = 0; p < t->nprocs; p++)
		off += f->procs[p].n[RP_FID_MINFLT].have && f->procs[p].n[RP_FID_OFFCPU].have;
	for (int k = RP_FID_MINFLT; k <= RP_FID_IVCS; k++)
		f->total.n[k].have = counted > 0;
	f->total.n[RP_FID_OFFCPU].have = counted && off == counted;
}

/* Every row judged, and the wall time: first to last element, against
 * the recording's span (judged at --speed=1). */
static void judge_all(struct rp_fidelity *f, const rp_trace *t, const struct rp_run_result *r)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		judge_row(&f->threads[i], f->speed1);
	for (uint32_t p = 0; p < t->nprocs; p++)
		judge_row(&f->procs[p], f->speed1);
	judge_row(&f->total, f->speed1);
	f->wall.replay = r->wall_ns;
	f->wall.recorded = t->last_ts > t->first_ts ? t->last_ts - t->first_ts : 0;
	f->wall.have = 1;
	if (f->speed1)
		judge(&f->wall, RP_FID_WALL_TOL, RP_FID_WALL_FLOOR);
}

/* The verdict line: each ratio, then within or outside tolerance (and
 * which were outside); sets f->ok. */
static void verdict(struct rp_fidelity *f)
{
	f->ok = 1;
	size_t n = 0;
	char bad[160] = "";
	size_t nb = 0;
	for (int k = 0; k < RP_FID__N; k++) {
		const struct rp_fid_num *x = &f->total.n[k];
		char q[32];
		ratio(q, sizeof(q), x);
		n += (size_t)snprintf(f->verdict + n, n < sizeof(f->verdict) ? sizeof(f->verdict) - n : 0,
				      "%s%s %s%s", k ? ", " : "", num_name[k], q,
				      x->have && !x->judged ? " (not judged)" : "");
		if (x->judged && !x->ok) {
			f->ok = 0;
			nb += (size_t)snprintf(bad + nb, nb < sizeof(bad) ? sizeof(bad) - nb : 0, "%s%s",
					       nb ? ", " : "", num_name[k]);
		}
	}
	char q[32];
	ratio(q, sizeof(q), &f->wall);
	if (f->speed1) {
		n += (size_t)snprintf(f->verdict + n, n < sizeof(f->verdict) ? sizeof(f->verdict) - n : 0,
				      ", wall %s", q);
		if (!f->wall.ok) {
			f->ok = 0;
			nb += (size_t)snprintf(bad + nb, nb < sizeof(bad) ? sizeof(bad) - nb : 0, "%swall",
					       nb ? ", " : "");
		}
	}
	if (n < sizeof(f->verdict))
		snprintf(f->verdict + n, sizeof(f->verdict) - n, f->ok ? ": within tolerance"
			 : ": outside tolerance: %s", bad);
}

/* A warning for each process whose faults are outside tolerance, or one
 * for the whole trace when none alone is (none for a rewritten trace). */
static void warn_faults(struct rp_fidelity *f, const rp_trace *t)
{
	for (uint32_t p = 0; p < t->nprocs && !f->rewritten; p++) {
		const struct rp_fid_row *row = &f->procs[p];
		const struct rp_fid_num *mi = &row->n[RP_FID_MINFLT], *ma = &row->n[RP_FID_MAJFLT];
		if ((mi->judged && !mi->ok) || (ma->judged && !ma->ok)) {
			char who[200];
			snprintf(who, sizeof(who), "process %u (pid %d, %s)", row->rec, (int)row->os_pid,
				 row->path && row->path[0] ? row->path : "?");
			warn_row(f, row, who);
		}
	}
	const struct rp_fid_num *mi = &f->total.n[RP_FID_MINFLT], *ma = &f->total.n[RP_FID_MAJFLT];
	if (!f->nwarn && !f->rewritten && ((mi->judged && !mi->ok) || (ma->judged && !ma->ok)))
		warn_row(f, &f->total, "the trace (no process alone)");
}

int rp_fidelity(const rp_trace *t, const struct rp_options *o, const struct rp_run_result *r,
		struct rp_fidelity *f)
{
	memset(f, 0, sizeof(*f));
	f->speed1 = o->speed == 1.0;
	if (!t->rec_counters) {
		snprintf(f->why_not, sizeof(f->why_not), t->rec_minor < 2
			 ? "the trace holds no counters of its recorded run (format 1.%u: recorded "
			   "before vmrec kept them)"
			 : "the trace holds no counters of its recorded run (format 1.%u)",
			 (unsigned)t->rec_minor);
		reclaim_line(f, r);
		mm_line(f, t);
		load_line(f, t, r);
		return 0;
	}
	f->have = 1;
	f->rewritten = t->rec_rewritten;
	f->no_watch = o->no_watch;
	f->threads = calloc(t->nthreads ? t->nthreads : 1, sizeof(*f->threads));
	f->procs = calloc(t->nprocs ? t->nprocs : 1, sizeof(*f->procs));
	struct recmap *tm = calloc(t->nthreads ? t->nthreads : 1, sizeof(*tm));
	if (!f->threads || !f->procs || !tm) {
		free(tm);
		rp_fidelity_free(f);
		return -ENOMEM;
	}
	f->nthreads = t->nthreads;
	f->nprocs = t->nprocs;
	for (uint32_t i = 0; i < t->nthreads; i++) {
		tm[i] = (struct recmap){t->threads[i].rec, i};
		f->threads[i].rec = t->threads[i].rec;
		f->threads[i].proc = t->procs[t->threads[i].proc].rec;
		rec_thread(t, i, &f->threads[i]);
	}
	qsort(tm, t->nthreads, sizeof(*tm), cmp_rec);
	replay_threads(f, t, r, tm);
	free(tm);
	sum_procs(f, t);
	judge_all(f, t, r);
	verdict(f);
	warn_faults(f, t);
	reclaim_line(f, r);
	mm_line(f, t);
	load_line(f, t, r);
	return 0;
}

void rp_fidelity_free(struct rp_fidelity *f)
{
	free(f->procs);
	free(f->threads);
	f->procs = f->threads = NULL;
	f->nprocs = f->nthreads = 0;
}

/* ---- printing ------------------------------------------------------------------ */

static void cell(FILE *out, const struct rp_fid_num *x, int ns)
{
	char q[32];
	ratio(q, sizeof(q), x);
	if (!x->have) {
		fprintf(out, " %22s", "-");
		return;
	}
	char v[48];
	if (ns)
		snprintf(v, sizeof(v), "%.1f/%.1f ms", (double)x->replay / 1e6, (double)x->recorded / 1e6);
	else
		snprintf(v, sizeof(v), "%" PRIu64 "/%" PRIu64, x->replay, x->recorded);
	fprintf(out, " %15s %5.5s%s", v, q, x->judged ? (x->ok ? " " : "!") : "*");
}

static void row_line(FILE *out, const char *label, const struct rp_fid_row *row)
{
	fprintf(out, "  %-12s", label);
	for (int k = 0; k < RP_FID__N; k++)
		cell(out, &row->n[k], k == RP_FID_OFFCPU);
	fputc('\n', out);
}

void rp_fidelity_text(FILE *out, const struct rp_fidelity *f, int quiet)
{
	if (!f->have) {
		fprintf(out, "fidelity: %s\n", f->why_not);
		if (f->reclaim[0])
			fprintf(out, "%s\n", f->reclaim);
		if (f->mm[0])
			fprintf(out, "settings: not the recording's: %s\n", f->mm);
		if (f->load[0])
			fprintf(out, "load: %s\n", f->load);
		return;
	}
	if (!quiet) {
		fprintf(out, "\nfidelity, replay/recorded (vmreplay(1), FIDELITY; ! outside tolerance, "
			     "* not judged%s):\n", f->speed1 ? "" : ": switches and waits at --speed=1 only");
		fprintf(out, "  %-12s", "");
		for (int k = 0; k < RP_FID__N; k++)
			fprintf(out, " %22s", num_name[k]);
		fputc('\n', out);
		row_line(out, "all", &f->total);
		for (uint32_t p = 0; f->nprocs > 1 && p < f->nprocs && p < 32; p++) {
			char label[24];
			snprintf(label, sizeof(label), "process %u", f->procs[p].rec);
			row_line(out, label, &f->procs[p]);
		}
		if (f->nprocs > 32)
			fprintf(out, "  (%u more processes in the JSON)\n", f->nprocs - 32);
		if (f->missing)
			fprintf(out, "  (%u process%s without counters left out)\n", f->missing,
				f->missing == 1 ? "" : "es");
		if (f->speed1) {
			char q[32];
			ratio(q, sizeof(q), &f->wall);
			fprintf(out, "  wall %.3f/%.3f ms %s%s\n", (double)f->wall.replay / 1e6,
				(double)f->wall.recorded / 1e6, q, f->wall.ok ? "" : "!");
		}
	}
	if (f->rewritten)
		fprintf(out, "fidelity of the rewritten trace, against the original's recording (the "
			     "differences are also the rewrite's): %s\n", f->verdict);
	else
		fprintf(out, "fidelity: %s\n", f->verdict);
	for (uint32_t i = 0; i < f->nwarn; i++)
		fprintf(out, "warning: %s\n", f->warn[i]);
	if (f->reclaim[0])
		fprintf(out, "%s\n", f->reclaim);
	if (f->mm[0])
		fprintf(out, "settings: not the recording's: %s; faults may differ for that alone\n",
			f->mm);
	if (f->load[0])
		fprintf(out, "load: %s\n", f->load);
}

static void json_num(struct vmt_buf *b, const char *key, const struct rp_fid_num *x)
{
	vmt_buf_printf(b, "\"%s\":", key);
	if (!x->have) {
		vmt_buf_puts(b, "null");
		return;
	}
	vmt_buf_printf(b, "{\"replay\":%" PRIu64 ",\"recorded\":%" PRIu64 ",\"ratio\":", x->replay,
		       x->recorded);
	if (x->recorded)
		vmt_buf_printf(b, "%.6f", (double)x->replay / (double)x->recorded);
	else
		vmt_buf_puts(b, x->replay ? "null" : "1");
	vmt_buf_printf(b, ",\"judged\":%s,\"ok\":%s}", x->judged ? "true" : "false",
		       x->judged ? (x->ok ? "true" : "false") : "null");
}

static void json_row(struct vmt_buf *b, const struct rp_fid_row *row, int kind)
{
	vmt_buf_puts(b, "{");
	if (kind == 1) {
		vmt_buf_printf(b, "\"proc\":%u,\"pid\":%d,\"path\":", row->rec, (int)row->os_pid);
		vmt_buf_json_str(b, row->path ? row->path : "");
		vmt_buf_puts(b, ",");
	}
	if (kind == 2)
		vmt_buf_printf(b, "\"thread\":%u,\"proc\":%u,", row->rec, row->proc);
	for (int k = 0; k < RP_FID__N; k++) {
		json_num(b, num_key[k], &row->n[k]);
		vmt_buf_puts(b, ",");
	}
	vmt_buf_puts(b, "\"fault_kinds\":");
	if (kind == 2 || (!row->kinds_rec && !row->kinds_rep)) {
		vmt_buf_puts(b, "null}");
		return;
	}
	vmt_buf_puts(b, "{");
	for (int k = 0; k < RP_FK__COUNT; k++) {
		vmt_buf_printf(b, "%s\"%s\":{\"replay\":", k ? "," : "", kind_key[k]);
		if (row->kinds_rep)
			vmt_buf_printf(b, "%" PRIu64, row->rep_kind[k]);
		else
			vmt_buf_puts(b, "null");
		vmt_buf_puts(b, ",\"recorded\":");
		if (row->kinds_rec)
			vmt_buf_printf(b, "%" PRIu64, row->rec_kind[k]);
		else
			vmt_buf_puts(b, "null");
		vmt_buf_puts(b, "}");
	}
	vmt_buf_puts(b, "}}");
}

void rp_fidelity_json(struct vmt_buf *b, const struct rp_fidelity *f)
{
	vmt_buf_printf(b, "{\"recorded\":%s", f->have ? "true" : "false");
	if (!f->have) {
		vmt_buf_puts(b, ",\"why\":");
		vmt_buf_json_str(b, f->why_not);
	} else {
		vmt_buf_printf(b, ",\"ok\":%s,\"speed1\":%s,\"rewritten\":%s,\"verdict\":",
			       f->ok ? "true" : "false", f->speed1 ? "true" : "false",
			       f->rewritten ? "true" : "false");
		vmt_buf_json_str(b, f->verdict);
		vmt_buf_printf(b, ",\"tolerances\":{\"faults\":%g,\"faults_floor\":%d,\"cs\":%g,"
				  "\"cs_floor\":%d,\"off_cpu\":%g,\"off_cpu_floor_ns\":%d,\"wall\":%g,"
				  "\"wall_floor_ns\":%d},",
			       RP_FID_FAULTS_TOL, RP_FID_FAULTS_FLOOR, RP_FID_CS_TOL, RP_FID_CS_FLOOR,
			       RP_FID_OFFCPU_TOL, RP_FID_OFFCPU_FLOOR, RP_FID_WALL_TOL, RP_FID_WALL_FLOOR);
		json_num(b, "wall_ns", &f->wall);
		vmt_buf_puts(b, ",\"total\":");
		json_row(b, &f->total, 0);
		vmt_buf_printf(b, ",\"missing_processes\":%u,\"processes\":[", f->missing);
		for (uint32_t p = 0; p < f->nprocs; p++) {
			if (p)
				vmt_buf_puts(b, ",");
			json_row(b, &f->procs[p], 1);
		}
		vmt_buf_puts(b, "],\"threads\":[");
		for (uint32_t i = 0; i < f->nthreads; i++) {
			if (i)
				vmt_buf_puts(b, ",");
			json_row(b, &f->threads[i], 2);
		}
		vmt_buf_puts(b, "],\"warnings\":[");
		for (uint32_t i = 0; i < f->nwarn; i++) {
			if (i)
				vmt_buf_puts(b, ",");
			vmt_buf_json_str(b, f->warn[i]);
		}
		vmt_buf_puts(b, "]");
	}
	/* What reclaim did (null: /proc/vmstat unread), and the line if it
	 * did anything. */
	const struct rp_reclaim *c = &f->rc;
	vmt_buf_puts(b, ",\"reclaim\":");
	if (c->ok)
		vmt_buf_printf(b, "{\"refault_file\":%" PRIu64 ",\"refault_anon\":%" PRIu64
				  ",\"pgsteal\":%" PRIu64 ",\"pgscan\":%" PRIu64 ",\"pswpin\":%" PRIu64
				  ",\"pswpout\":%" PRIu64 ",\"pgmajfault\":%" PRIu64 ",\"damon_pageout\":%s}",
			       c->refault_file, c->refault_anon, c->pgsteal, c->pgscan, c->pswpin,
			       c->pswpout, c->pgmajfault, c->damon_pageout ? "true" : "false");
	else
		vmt_buf_puts(b, "null");
	vmt_buf_puts(b, ",\"reclaim_text\":");
	if (f->reclaim[0])
		vmt_buf_json_str(b, f->reclaim);
	else
		vmt_buf_puts(b, "null");
	vmt_buf_puts(b, ",\"settings_differ\":");
	if (f->mm[0])
		vmt_buf_json_str(b, f->mm);
	else
		vmt_buf_puts(b, "null");
	vmt_buf_printf(b, ",\"load\":{\"streamed\":%s,\"late\":%s,\"wait_ns\":%" PRIu64
			  ",\"cpu_ns\":%" PRIu64 ",\"text\":",
		       f->streamed ? "true" : "false", f->late ? "true" : "false", f->load_wait_ns,
		       f->load_cpu_ns);
	if (f->load[0])
		vmt_buf_json_str(b, f->load);
	else
		vmt_buf_puts(b, "null");
	vmt_buf_puts(b, "}}");
}

int rp_fidelity_report(FILE *out, const rp_trace *t, const struct rp_options *o,
		       const struct rp_run_result *r, int quiet)
{
	struct rp_fidelity f;
	if (rp_fidelity(t, o, r, &f) < 0)
		return -ENOMEM;
	rp_fidelity_text(out, &f, quiet);
	rp_fidelity_free(&f);
	return 0;
}

int rp_fidelity_append(struct vmt_buf *b, const rp_trace *t, const struct rp_options *o,
		       const struct rp_run_result *r)
{
	struct rp_fidelity f;
	if (rp_fidelity(t, o, r, &f) < 0)
		return -ENOMEM;
	rp_fidelity_json(b, &f);
	rp_fidelity_free(&f);
	return 0;
}
