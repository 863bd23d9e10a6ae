/*
 * exec.c - one replay run: the shared result area, the run process, and
 * turning what its threads reported into an rp_run_result.
 *
 * Each run is a fresh process (forked from here) so that runs are
 * independent: nothing replayed (mappings, seals, locks) survives a run,
 * a trace that makes the replay trap cannot take this process down, and
 * --compare can alternate between two traces.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "execint.h"

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

static void render_div(const rp_trace *t, const struct rp_divrec *d, struct rp_divergence *out)
{
	const struct rp_thread *th = &t->threads[d->tid];
	const struct rp_elem *e = &th->elem[d->elem];
	struct vmt_event ev;
	struct vmt_buf b = {0};
	/* shmat and shmdt replay as mmap and munmap of the segment's stand-in
	 * (sim.c) and carry those arguments: shown as what was replayed. */
	uint32_t op = e->op == VMT_OP_SHMAT ? VMT_OP_MMAP : e->op == VMT_OP_SHMDT ? VMT_OP_MUNMAP : e->op;
	const struct vmt_op_info *oi = vmt_op_info(op);

	memset(&ev, 0, sizeof(ev));
	ev.kind = VMT_EV_SYSCALL;
	ev.thread = th->rec;
	ev.proc = t->procs[th->proc].rec;
	ev.ts_ns = t->first_ts + e->ts;
	ev.u.sc.op = op;
	ev.u.sc.nargs = oi ? oi->nargs : VMT_MAX_ARGS;
	memcpy(ev.u.sc.args, e->args, sizeof(e->args));
	ev.u.sc.result = e->result;
	ev.u.sc.exit_ns = ev.ts_ns;
	ev.u.sc.stack_id = VMT_NONE;
	vmt_render_text(&b, &ev);
	out->event = d->event;
	out->thread = th->rec;
	out->recorded = e->result;
	out->replayed = d->replayed;
	const char *as = op == e->op ? "" : e->op == VMT_OP_SHMAT ? "shmat as " : "shmdt as ";
	snprintf(out->text, sizeof(out->text), "%s%s", as, b.len ? b.data : "?");
	vmt_buf_free(&b);
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
	for (uint32_t s = 0; s < rt->nslots; s++)
		nth += rt->slot[s].ran;
	res->threads = calloc(nth ? nth : 1, sizeof(*res->threads));
	if (!res->threads)
		return -ENOMEM;
	for (uint32_t s = 0; s < rt->nslots; s++) {
		const struct rp_slot *o = &rt->slot[s];
		if (!o->ran)
			continue;
		uint32_t tid = s % t->nthreads;
		struct rp_thread_result *tr = &res->threads[res->nthreads++];
		tr->thread = t->threads[tid].rec;
		tr->proc = t->procs[t->threads[tid].proc].rec;
		tr->copy = s / t->nthreads;
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
		if (o->end_ns > end)
			end = o->end_ns;
		res->rusage_minor += o->minflt;
		res->rusage_major += o->majflt;
		res->voluntary_cs += o->nvcsw;
		res->involuntary_cs += o->nivcsw;
		res->wait_ns += o->wait_ns;
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
	res->minor_faults = res->perf_ok ? res->perf_minor : res->rusage_minor;
	res->major_faults = res->perf_ok ? res->perf_major : res->rusage_major;
	res->peak_vmas = rt->sh->peak_vmas;
	for (uint32_t i = 0; i < ndivs; i++)
		render_div(t, &divs[i], &res->div[res->ndiv_shown++]);
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
		for (uint32_t s = 0; s < rt->nslots; s++)
			rp_hist_merge(h, &rt->hist[(size_t)s * rt->nused + rt->hidx[op]]);
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

int rp_run(const rp_trace *t, const struct rp_options *o, struct rp_run_result *res, char *msg,
	   size_t msglen)
{
	struct rp_rt rt;
	char dummy[8];
	int rc = 0;

	if (!msg || !msglen) {
		msg = dummy;
		msglen = sizeof(dummy);
	}
	msg[0] = 0;
	memset(res, 0, sizeof(*res));
	memset(&rt, 0, sizeof(rt));
	rt.t = t;
	rt.opt = *o;
	rt.opt.order = t->opt.order;
	if (!rt.opt.scale)
		rt.opt.scale = 1;
	if (rt.opt.scale > 1024) {
		snprintf(msg, msglen, "--scale above 1024");
		return -EINVAL;
	}
	rt.page = t->page_size;
	rt.futex_private = t->nprocs == 1;
	rt.tsc = o->clock == RP_CLOCK_AUTO && rp_tsc_usable();
	rt.void_len = t->void_len;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++)
		if (t->ops_used_mask & (1u << op))
			rt.hidx[op] = (uint8_t)rt.nused++;
	if (!rt.nused)
		rt.nused = 1;
	uint64_t nslots = (uint64_t)t->nthreads * rt.opt.scale;
	if (nslots > (1u << 20)) {
		snprintf(msg, msglen, "%llu replay threads are too many", (unsigned long long)nslots);
		return -E2BIG;
	}
	rt.nslots = (uint32_t)nslots;
	size_t off_ctl = align64(sizeof(struct rp_shared));
	size_t off_slot = off_ctl + align64(nslots * sizeof(struct rp_ctl));
	size_t off_hist = off_slot + align64(nslots * sizeof(struct rp_slot));
	rt.area_len = off_hist + nslots * rt.nused * sizeof(struct rp_hist);
	rt.area = mmap(NULL, rt.area_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rt.area == MAP_FAILED) {
		rc = -errno;
		snprintf(msg, msglen, "cannot map the result area: %s", strerror(errno));
		return rc;
	}
	rt.sh = rt.area;
	rt.ctl = (struct rp_ctl *)((char *)rt.area + off_ctl);
	rt.slot = (struct rp_slot *)((char *)rt.area + off_slot);
	rt.hist = (struct rp_hist *)((char *)rt.area + off_hist);

	/* The run's lifeline: this process holds the only write end, so
	 * when it ends, however it ends, the run's whole process group is
	 * killed (rp_child_main), not only the run process (whose parent
	 * death signal ends it alone): replay processes it forked would
	 * otherwise wait forever for threads that are gone. */
	int life[2];
	if (pipe2(life, O_CLOEXEC) < 0) {
		rc = -errno;
		snprintf(msg, msglen, "cannot create a pipe: %s", strerror(errno));
		munmap(rt.area, rt.area_len);
		return rc;
	}
	rt.life_fd = life[0];
	fflush(NULL); /* nothing buffered gets written twice */
	pid_t pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(msg, msglen, "cannot fork the replay: %s", strerror(errno));
		close(life[0]);
		close(life[1]);
		munmap(rt.area, rt.area_len);
		return rc;
	}
	if (pid == 0) {
		close(life[1]);
		rp_child_main(&rt);
	}
	close(life[0]);
	setpgid(pid, pid);
	current_run = pid;
	int st;
	if (o->progress)
		wait_showing_progress(pid, t, o);
	/* Kill anything left of the run while its leader, a zombie not yet
	 * reaped, still holds the group's id (no other group can get it). */
	siginfo_t si;
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(life[1]);
	current_run = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (rt.sh->msg[0])
			snprintf(msg, msglen, "%s", rt.sh->msg);
		else if (WIFSIGNALED(st))
			snprintf(msg, msglen, "the replay process was killed by signal %d (%s)",
				 WTERMSIG(st), strsignal(WTERMSIG(st)));
		else
			snprintf(msg, msglen, "the replay process failed (status %d)", WEXITSTATUS(st));
		rc = rt.sh->error ? rt.sh->error : -EIO;
	} else {
		rc = collect(&rt, res);
		if (rc < 0)
			snprintf(msg, msglen, "out of memory");
	}
	munmap(rt.area, rt.area_len);
	return rc;
}
