/*
 * exec.c - one replay run: the shared result area, the run process, and
 * turning what its threads reported into an rp_run_result.
 *
 * Each run is a fresh process (forked from here) so that runs are
 * independent: nothing replayed (mappings, seals, locks) survives a run,
 * a trace that makes the replay trap cannot take this process down, and
 * --compare can alternate between two traces.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "exec_int.h"
#include "runfiles_int.h"

static volatile pid_t current_run;

/* For a signal handler of the program: kill the run in progress. */
void rp_abort_current(void)
{
	pid_t p = current_run;
	if (p > 0)
		kill(-p, SIGKILL);
}

static size_t align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

static void render_div(const struct rp_divrec *d, struct rp_divergence *out)
{
	out->event = d->event;
	out->thread = d->thread;
	out->recorded = d->recorded;
	out->replayed = d->replayed;
	snprintf(out->text, sizeof(out->text), "%s", d->text);
}

/* Keep the RP_DIV_SHOWN earliest divergences in k[0..*n), sorted by event. */
static void keep_earliest(struct rp_divrec *k, uint32_t *n, const struct rp_divrec *d)
{
	uint32_t i = *n;
	if (i == RP_DIV_SHOWN) {
		if (d->event >= k[i - 1].event)
			return;
		i--;
	} else {
		(*n)++;
	}
	for (; i > 0 && k[i - 1].event > d->event; i--)
		k[i] = k[i - 1];
	k[i] = *d;
}

static int collect(struct rp_rt *rt, struct rp_run_result *res)
{
	const rp_trace *t = rt->t;
	uint32_t nth = 0;
	uint64_t end = 0;
	struct rp_divrec divs[RP_DIV_SHOWN];
	uint32_t ndivs = 0;

	memset(res, 0, sizeof(*res));
	/* (only the slots of threads the trace has: the others' pages were
	 * never touched) */
	uint32_t K = rt->opt.scale, nt = t->nthreads < rt->tcap ? t->nthreads : rt->tcap;
	for (uint32_t c = 0; c < K; c++)
		for (uint32_t i = 0; i < nt; i++)
			nth += rt->slot[c * rt->tcap + i].ran;
	res->threads = calloc(nth ? nth : 1, sizeof(*res->threads));
	if (!res->threads)
		return -ENOMEM;
	for (uint32_t c = 0; c < K; c++)
	for (uint32_t tid = 0; tid < nt; tid++) {
		uint32_t s = c * rt->tcap + tid;
		const struct rp_slot *o = &rt->slot[s];
		if (!o->ran)
			continue;
		struct rp_thread_result *tr = &res->threads[res->nthreads++];
		tr->thread = t->threads[tid].rec;
		tr->proc = t->procs[t->threads[tid].proc].rec;
		tr->copy = c;
		tr->elems = o->elems;
		tr->minor_faults = o->minflt;
		tr->major_faults = o->majflt;
		tr->voluntary_cs = o->nvcsw;
		tr->involuntary_cs = o->nivcsw;
		tr->user_ns = o->user_ns;
		tr->sys_ns = o->sys_ns;
		tr->wait_ns = o->wait_ns;
		tr->waits = o->waits;
		tr->wakes = o->wakes;
		tr->busy_ns = o->end_ns > o->start_ns ? o->end_ns - o->start_ns : 0;
		tr->watched = o->watched;
		tr->call_off_cpu_ns = o->call_off_cpu_ns;
		tr->call_vcsw = o->call_vcsw;
		tr->call_ivcsw = o->call_ivcsw;
		memcpy(tr->kind_faults, o->kind_faults, sizeof(tr->kind_faults));
		tr->fault_samples = o->fault_samples;
		tr->fault_samples_lost = o->fault_lost;
		if (o->end_ns > end)
			end = o->end_ns;
		res->rusage_minor += o->minflt;
		res->rusage_major += o->majflt;
		res->voluntary_cs += o->nvcsw;
		res->involuntary_cs += o->nivcsw;
		res->wait_ns += o->wait_ns;
		res->load_wait_ns += o->load_wait_ns;
		res->touched_pages += o->touched;
		res->touch_faults += o->touch_faults;
		res->fallbacks += o->fallbacks;
		res->skipped += o->skipped;
		res->events += o->syscalls;
		res->divergences += o->ndiv;
		for (unsigned op = 0; op < VMT_OP__COUNT; op++)
			res->div_by_op[op] += o->div_by_op[op];
		for (uint64_t i = 0; i < o->ndiv && i < RP_DIV_SHOWN; i++)
			keep_earliest(divs, &ndivs, &o->div[i]);
	}
	res->wall_ns = end > rt->sh->t_start ? end - rt->sh->t_start : 0;
	res->start_ns = rt->sh->t_start;
	res->perf_ok = rt->sh->perf_ok;
	res->perf_minor = rt->sh->perf_minor;
	res->perf_major = rt->sh->perf_major;
	res->perf_cs = rt->sh->perf_cs;
	/* The replayed program's figures are its threads' own; the rest of
	 * the tree's is vmreplay's set-up around them. */
	res->minor_faults = res->rusage_minor;
	res->major_faults = res->rusage_major;
#define SETUP(tree, own) (rt->sh->tree > (own) ? rt->sh->tree - (own) : 0)
	res->setup_minor = SETUP(tree_minor, res->rusage_minor);
	res->setup_major = SETUP(tree_major, res->rusage_major);
	res->setup_vcsw = SETUP(tree_vcsw, res->voluntary_cs);
	res->setup_ivcsw = SETUP(tree_ivcsw, res->involuntary_cs);
#undef SETUP
	res->peak_vmas = rt->sh->peak_vmas;
	for (uint32_t i = 0; i < ndivs; i++)
		render_div(&divs[i], &res->div[res->ndiv_shown++]);
	/* Per-op latency: every slot's histogram of that op, in op clock
	 * ticks, converted with the ticks the run counted per nanosecond. */
	double ns_per_tick = 1.0;
	if (rt->tsc && rt->sh->tick_end > rt->sh->tick_start && rt->sh->t_end > rt->sh->t_start)
		ns_per_tick = (double)(rt->sh->t_end - rt->sh->t_start) /
			      (double)(rt->sh->tick_end - rt->sh->tick_start);
#define NS(ticks) ((uint64_t)((double)(ticks) * ns_per_tick + 0.5))
	struct rp_hist *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++) {
		if (!(t->ops_used_mask & (1u << op)))
			continue;
		memset(h, 0, sizeof(*h));
		for (uint32_t c = 0; c < K; c++)
			for (uint32_t i = 0; i < nt; i++)
				rp_hist_merge(h, &rt->hist[(size_t)(c * rt->tcap + i) * rt->nused + op]);
		struct rp_op_result *r = &res->ops[op];
		r->count = h->count;
		r->errors = h->errors;
		r->mean_ns = h->count ? NS(h->sum) / h->count : 0;
		r->p50_ns = NS(rp_hist_quantile(h, 0.50));
		r->p90_ns = NS(rp_hist_quantile(h, 0.90));
		r->p99_ns = NS(rp_hist_quantile(h, 0.99));
		r->max_ns = NS(h->max);
	}
#undef NS
	free(h);
	return 0;
}

/* Until the run process ends (a pidfd becomes readable), report progress
 * every quarter of a second, starting with 0: a new run.  Without pidfds
 * (before Linux 5.3), only that first report. */
static void wait_showing_progress(pid_t pid, const rp_trace *t, const struct rp_options *o)
{
	uint64_t start = vmt_now_ns(), rec = t->last_ts - t->first_ts;
	o->progress(o->progress_arg, RP_PROGRESS_RUN, 0, rec);
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	for (;;) {
		int n = poll(&p, 1, 250);
		if (n > 0 || (n < 0 && errno != EINTR))
			break;
		o->progress(o->progress_arg, RP_PROGRESS_RUN, vmt_now_ns() - start, rec);
	}
	close(fd);
}

/* ---- the load beside a run -------------------------------------------- */

/* A run whose trace is loaded as it goes: the load runs on a thread of
 * this process, writing the arena the replay processes read. */
struct feeder {
	struct rp_rt *rt;
	rp_trace *t;
	struct rp_runfiles *files;
	pid_t run;
	volatile int stop; /* the run failed: stop loading */
	volatile int over; /* the run ended well: load the rest, never wait */
	int rc;
	/* This process's CPU time (the load's: its other threads sleep)
	 * from the load's start to the run's end. */
	uint64_t cpu0, cpu_ns;
	pthread_t th;
};

static int feed_sync(void *arg)
{
	struct feeder *f = arg;
	return rp_files_sync(f->files);
}

static uint32_t feed_done(void *arg, uint32_t tid)
{
	struct feeder *f = arg;
	struct rp_rt *rt = f->rt;
	uint32_t d = UINT32_MAX;
	for (uint32_t c = 0; c < rt->opt.scale; c++) {
		uint32_t x = __atomic_load_n(&rt->ctl[c * rt->tcap + tid].done, __ATOMIC_ACQUIRE);
		if (x < d)
			d = x;
	}
	return d;
}

static int feed_wait(void *arg, int sleep)
{
	struct feeder *f = arg;
	if (f->stop || (sleep && f->over))
		return -ECANCELED;
	if (sleep) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* The load's threads (this one, and its reader's decoder: every thread
 * of this process but the main one, which only waits for the run) run
 * when a CPU has nothing else to run (SCHED_IDLE): the replay threads
 * never give a CPU up to the load, and it loads when they block, in
 * their calls or when they catch up with it (then their wait is the
 * load's, and said: the fidelity section).  on 0: as before. */
static void idle_load_threads(int on)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	pid_t main_tid = getpid();
	struct dirent *de;
	struct sched_param sp = {0};
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid > 0 && tid != main_tid)
			sched_setscheduler(tid, on ? SCHED_IDLE : SCHED_OTHER, &sp);
	}
	closedir(d);
}

static void *feed_main(void *arg)
{
	struct feeder *f = arg;
	struct rp_load_hooks h = {feed_sync, feed_done, feed_wait, f};
	idle_load_threads(1);
	f->rc = rp_load_rest(f->t, &h);
	if (f->rc < 0 && !f->stop) {
		/* The trace is bad further on: the run ends with its message. */
		struct rp_shared *sh = f->rt->sh;
		int zero = 0;
		if (__atomic_compare_exchange_n(&sh->error, &zero, f->rc, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			snprintf(sh->msg, sizeof(sh->msg), "%s", rp_load_msg(f->t));
		kill(-f->run, SIGKILL);
		kill(f->run, SIGKILL);
	}
	return NULL;
}

/* The run's sizes: the options it runs with, and the threads and regions
 * its tables have room for.  A trace a run loaded as it went on is loaded
 * again first. */
static int size_run(rp_trace *t, const struct rp_options *o, struct rp_rt *rt, char *msg,
		    size_t msglen)
{
	int rc;

	rt->opt = *o;
	rt->opt.order = t->opt.order;
	if (!rt->opt.scale)
		rt->opt.scale = 1;
	if (rt->opt.scale > 1024) {
		snprintf(msg, msglen, "--scale above 1024");
		return -EINVAL;
	}
	uint32_t K = rt->opt.scale;
	/* Streamed, the run's tables have room for what the load may still
	 * bring; the load refuses more. */
	const uint32_t stream_tcap = RP_TCAP / K, stream_rcap = (1u << 29) / K;
	if (t->streamed) {
		t->thread_cap = stream_tcap;
		t->region_cap = stream_rcap;
		if ((rc = rp_load_again(t, msg, msglen)) < 0)
			return rc;
	}
	int streaming = !t->complete;
	t->arena->pid = (int32_t)getpid(); /* whose descriptors they open */
	rt->t = t;
	rt->arena = t->arena;
	rt->page = t->page_size;
	rt->futex_private = t->complete && t->nprocs == 1;
	rt->tsc = o->clock == RP_CLOCK_AUTO && rp_tsc_usable();
	rt->void_len = t->void_len;
	rt->nused = VMT_OP__COUNT;
	rt->tcap = streaming ? stream_tcap : t->nthreads;
	rt->rcap = streaming ? stream_rcap : t->nregions + 1;
	if (t->nthreads > rt->tcap) {
		snprintf(msg, msglen, "more than %u threads with --scale=%u", rt->tcap, K);
		return -E2BIG;
	}
	uint64_t nslots = (uint64_t)rt->tcap * K;
	if (nslots > (1u << 20)) {
		snprintf(msg, msglen, "%llu replay threads are too many", (unsigned long long)nslots);
		return -E2BIG;
	}
	t->region_cap = streaming ? rt->rcap : 0;
	t->thread_cap = streaming ? rt->tcap : 0;
	rt->nslots = (uint32_t)nslots;
	return 0;
}

/* The layout of the shared result area: struct rp_shared, then per slot
 * its control word, its results and its histograms, each part 64-byte
 * aligned. */
static int map_result_area(struct rp_rt *rt, char *msg, size_t msglen)
{
	size_t off_ctl = align64(sizeof(struct rp_shared));
	size_t off_slot = off_ctl + align64(rt->nslots * sizeof(struct rp_ctl));
	size_t off_hist = off_slot + align64(rt->nslots * sizeof(struct rp_slot));
	rt->area_len = off_hist + (size_t)rt->nslots * rt->nused * sizeof(struct rp_hist);
	rt->area = mmap((void *)RP_HINT_RESULTS, rt->area_len, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rt->area == MAP_FAILED) {
		int rc = -errno;
		snprintf(msg, msglen, "cannot map the result area: %s", strerror(errno));
		return rc;
	}
	rt->sh = rt->area;
	rt->ctl = (struct rp_ctl *)((char *)rt->area + off_ctl);
	rt->slot = (struct rp_slot *)((char *)rt->area + off_slot);
	rt->hist = (struct rp_hist *)((char *)rt->area + off_hist);
	return 0;
}

/* Freeze the plan of each of the first nroot processes that is a root,
 * for the run process to start them from. */
static int freeze_root_plans(struct rp_rt *rt, rp_trace *t, uint32_t nroot, int streaming,
			     char *msg, size_t msglen)
{
	rt->root_plan = calloc(nroot + 1, sizeof(*rt->root_plan));
	if (!rt->root_plan) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t p = 0; p < nroot; p++) {
		if (t->procs[p].parent != RP_VOID || t->procs[p].plan == RP_VOID)
			continue;
		if (!(rt->root_plan[p] = malloc(rp_plan_frozen_size(t, t->procs[p].plan)))) {
			snprintf(msg, msglen, "out of memory");
			return -ENOMEM;
		}
		rp_plan_freeze(t, t->procs[p].plan, streaming, rt->root_plan[p]);
	}
	return 0;
}

/* Fork the run process, in a process group of its own; *life_w is the
 * write end of its lifeline.  The pid, or -errno. */
static pid_t start_run(struct rp_rt *rt, int *life_w, char *msg, size_t msglen)
{
	/* The run's lifeline: this process holds the only write end, so
	 * when it ends, however it ends, the run's whole process group is
	 * killed (rp_child_main), not only the run process (whose parent
	 * death signal ends it alone): replay processes it forked would
	 * otherwise wait forever for threads that are gone. */
	int life[2];
	if (pipe2(life, O_CLOEXEC) < 0) {
		int rc = -errno;
		snprintf(msg, msglen, "cannot create a pipe: %s", strerror(errno));
		return rc;
	}
	rt->life_fd = life[0];
	fflush(NULL); /* nothing buffered gets written twice */
	rp_load_hold(rt->t, 1); /* (a streamed load's decoder: see there) */
	pid_t pid = fork();
	if (pid != 0)
		rp_load_hold(rt->t, 0);
	if (pid < 0) {
		int rc = -errno;
		snprintf(msg, msglen, "cannot fork the replay: %s", strerror(errno));
		close(life[0]);
		close(life[1]);
		return rc;
	}
	if (pid == 0) {
		close(life[1]);
		rp_child_main(rt);
	}
	close(life[0]);
	setpgid(pid, pid);
	current_run = pid;
	*life_w = life[1];
	return pid;
}

static uint64_t self_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

/* Start the load beside run process pid; 1 if it runs, 0 if it could not
 * start (then the run is killed, and fails with the message). */
static int start_feeder(struct feeder *feed, struct rp_rt *rt, rp_trace *t,
			struct rp_runfiles *files, pid_t pid)
{
	feed->rt = rt;
	feed->t = t;
	feed->files = files;
	feed->run = pid;
	t->streamed = 1;
	feed->cpu0 = self_cpu_ns();
	int rc = pthread_create(&feed->th, NULL, feed_main, feed);
	if (rc == 0)
		return 1;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	snprintf(rt->sh->msg, sizeof(rt->sh->msg), "cannot start the load: %s", strerror(rc));
	rt->sh->error = -rc;
	return 0;
}

/* Wait for run process pid to end, then for the load beside it (when
 * streaming), and reap it; its wait status. */
static int wait_run(pid_t pid, const rp_trace *t, const struct rp_options *o,
		    struct feeder *feed, int streaming)
{
	int st;
	if (o->progress)
		wait_showing_progress(pid, t, o);
	/* Kill anything left of the run while its leader, a zombie not yet
	 * reaped, still holds the group's id (no other group can get it). */
	siginfo_t si;
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	kill(-pid, SIGKILL);
	if (streaming) {
		uint64_t cpu = self_cpu_ns();
		feed->cpu_ns = cpu > feed->cpu0 ? cpu - feed->cpu0 : 0;
		/* A run that ended well has executed every thread's end; the
		 * load may still be reading what follows (stack tables, the
		 * footer) and checks the end of the trace. */
		if (si.si_code == CLD_EXITED && si.si_status == 0)
			feed->over = 1;
		else
			feed->stop = 1;
		pthread_join(feed->th, NULL);
		idle_load_threads(0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

/* What the run's wait status, its load and its threads' reports say: the
 * results, or the error with its message. */
static int run_outcome(struct rp_rt *rt, const rp_trace *t, int st, int streaming,
		       const struct feeder *feed, struct rp_run_result *res, char *msg,
		       size_t msglen)
{
	int rc;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (rt->sh->msg[0])
			snprintf(msg, msglen, "%s", rt->sh->msg);
		else if (WIFSIGNALED(st))
			snprintf(msg, msglen, "the replay process was killed by signal %d (%s)",
				 WTERMSIG(st), strsignal(WTERMSIG(st)));
		else
			snprintf(msg, msglen, "the replay process failed (status %d)", WEXITSTATUS(st));
		rc = rt->sh->error ? rt->sh->error : -EIO;
	} else if (streaming && feed->rc < 0) {
		snprintf(msg, msglen, "%s", rt->sh->msg[0] ? rt->sh->msg : rp_load_msg(t));
		rc = feed->rc;
	} else {
		rc = collect(rt, res);
		if (rc < 0)
			snprintf(msg, msglen, "out of memory");
	}
	return rc;
}

int rp_run(rp_trace *t, const struct rp_options *o, struct rp_run_result *res, char *msg,
	   size_t msglen)
{
	struct rp_rt rt;
	struct rp_runfiles files;
	struct feeder feed;
	char dummy[8];
	int rc = 0;

	if (!msg || !msglen) {
		msg = dummy;
		msglen = sizeof(dummy);
	}
	msg[0] = 0;
	memset(res, 0, sizeof(*res));
	memset(&rt, 0, sizeof(rt));
	memset(&feed, 0, sizeof(feed));
	if ((rc = size_run(t, o, &rt, msg, msglen)) < 0)
		return rc;
	int streaming = !t->complete;
	if ((rc = map_result_area(&rt, msg, msglen)) < 0)
		return rc;
	rp_files_init(&files, t);
	uint32_t nroot = t->nprocs; /* (the load may bring more processes) */
	if ((rc = freeze_root_plans(&rt, t, nroot, streaming, msg, msglen)) < 0)
		goto out;
	if ((rc = rp_files_sync(&files)) < 0) {
		snprintf(msg, msglen, "cannot create scratch files: %s", strerror(-rc));
		goto out;
	}
	rt.nfiles_inherited = t->nfiles;

	int life_w = -1;
	/* What reclaim does on the machine meanwhile (the fidelity section
	 * says: it can make a replay's minor faults major). */
	struct rp_reclaim rc0, rc1;
	rp_reclaim_read(&rc0);
	pid_t pid = start_run(&rt, &life_w, msg, msglen);
	if (pid < 0) {
		rc = (int)pid;
		goto out;
	}
	if (streaming)
		streaming = start_feeder(&feed, &rt, t, &files, pid);
	int st = wait_run(pid, t, o, &feed, streaming);
	rp_reclaim_read(&rc1);
	close(life_w);
	current_run = 0;
	rc = run_outcome(&rt, t, st, streaming, &feed, res, msg, msglen);
	if (rc == 0)
		rp_reclaim_delta(&rc0, &rc1, &res->reclaim);
	if (rc == 0 && streaming)
		res->load_cpu_ns = feed.cpu_ns;
out:
	rp_files_close(&files);
	if (rt.root_plan)
		for (uint32_t p = 0; p < nroot; p++)
			free(rt.root_plan[p]);
	free(rt.root_plan);
	munmap(rt.area, rt.area_len);
	return rc;
}
