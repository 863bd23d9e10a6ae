/*
 * streamload.c - loading the stream backend's programs in the kernel,
 * without parsing the kernel's BTF here.
 *
 * libbpf's own load (bpf_object__load) reads and indexes the whole of
 * /sys/kernel/btf/vmlinux (5.5 MB, some 150,000 types) to resolve the
 * programs' CO-RE relocations, their tracepoints and kfuncs: 100-400 ms
 * of vmrec's start, the most of it, on a machine whose page faults are
 * slow.  The kernel has that BTF parsed already.  So vmrec has libbpf
 * write a loader program instead (bpf_object__gen_loader, what bpftool's
 * light skeletons use): a BPF_PROG_TYPE_SYSCALL program that creates the
 * maps, finds the kernel's types, tracepoints and kfuncs by name in the
 * kernel's own BTF, and loads the programs with their CO-RE relocations
 * for the kernel to apply.  It runs once (BPF_PROG_RUN) and hands back
 * the descriptors.
 *
 * When that fails (a kernel without BPF_PROG_TYPE_SYSCALL, 5.14, or one
 * that refuses a program), stream.c loads the object again the usual way,
 * which also explains a refusal.
 */
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/skel_internal.h>
#include <linux/perf_event.h>
#include "stream_int.h"

/* The configured object's maps and programs to be loaded, counted. */
static void count(struct bpf_object *obj, int *nmaps, int *nprogs)
{
	struct bpf_map *m;
	struct bpf_program *p;

	*nmaps = *nprogs = 0;
	bpf_object__for_each_map(m, obj)
		(*nmaps)++;
	bpf_object__for_each_program(p, obj)
		if (bpf_program__autoload(p))
			(*nprogs)++;
}

int stream_load_fast(struct stream *s)
{
	struct gen_loader_opts gen = { .sz = sizeof(gen) };
	int nmaps, nprogs, e;

	count(s->obj, &nmaps, &nprogs);
	if (nmaps > STREAM_MAX_MAPS || nprogs > STREAM_MAX_PROGS)
		return -E2BIG;
	if ((e = bpf_object__gen_loader(s->obj, &gen)) || (e = bpf_object__load(s->obj)))
		return e < 0 ? e : -EINVAL;
	/* The loader's context: its header, then a slot per map (the map's
	 * descriptor comes back in it) and one per program, in the object's
	 * order (of the programs, those it loads). */
	size_t sz = sizeof(struct bpf_loader_ctx) + (size_t)nmaps * sizeof(struct bpf_map_desc) +
		    (size_t)nprogs * sizeof(struct bpf_prog_desc);
	struct bpf_loader_ctx *ctx = calloc(1, sz);
	if (!ctx)
		return -ENOMEM;
	ctx->sz = (__u32)sz;
	struct bpf_load_and_run_opts run = {
		.ctx = ctx,
		.data = gen.data,
		.insns = gen.insns,
		.data_sz = gen.data_sz,
		.insns_sz = gen.insns_sz,
	};
	e = bpf_load_and_run(&run);
	if (e) {
		free(ctx);
		return e < 0 ? e : -EINVAL;
	}
	const struct bpf_map_desc *md = (const void *)(ctx + 1);
	const struct bpf_prog_desc *pd = (const void *)(md + nmaps);
	for (int i = 0; i < nmaps; i++)
		s->map_fd[i] = md[i].map_fd;
	for (int i = 0; i < nprogs; i++)
		s->prog_fd[i] = pd[i].prog_fd;
	s->nmaps = nmaps;
	s->nprogs = nprogs;
	s->own_fds = 1;
	free(ctx);
	/* (a descriptor the loader did not fill is 0: the load failed) */
	for (int i = 0; i < nmaps; i++)
		if (s->map_fd[i] <= 0)
			return -EINVAL;
	for (int i = 0; i < nprogs; i++)
		if (s->prog_fd[i] <= 0)
			return -EINVAL;
	return 0;
}

int stream_take_fds(struct stream *s)
{
	struct bpf_map *m;
	struct bpf_program *p;

	s->nmaps = s->nprogs = 0;
	s->own_fds = 0; /* (libbpf's: bpf_object__close closes them) */
	bpf_object__for_each_map(m, s->obj) {
		if (s->nmaps == STREAM_MAX_MAPS)
			return -E2BIG;
		s->map_fd[s->nmaps++] = bpf_map__fd(m);
	}
	bpf_object__for_each_program(p, s->obj) {
		if (!bpf_program__autoload(p))
			continue;
		if (s->nprogs == STREAM_MAX_PROGS)
			return -E2BIG;
		s->prog_fd[s->nprogs++] = bpf_program__fd(p);
	}
	return 0;
}

int stream_map_fd(const struct stream *s, const char *name)
{
	struct bpf_map *m;
	int i = 0;

	bpf_object__for_each_map(m, s->obj) {
		if (i >= s->nmaps)
			break;
		if (!strcmp(bpf_map__name(m), name))
			return s->map_fd[i];
		i++;
	}
	return -ENOENT;
}

void stream_close_fds(struct stream *s)
{
	if (!s->own_fds)
		return;
	for (int i = 0; i < s->nprogs; i++)
		if (s->prog_fd[i] > 0)
			close(s->prog_fd[i]);
	for (int i = 0; i < s->nmaps; i++)
		if (s->map_fd[i] > 0)
			close(s->map_fd[i]);
	s->nprogs = s->nmaps = 0;
}

/* ---- mmap_lock's tracepoint, switched on ahead ---------------------------- */

/* (The bpf system call itself: libbpf's wrappers keep state of their own
 * that the loading thread uses meanwhile.) */
static int sys_bpf(int cmd, union bpf_attr *a)
{
	return (int)syscall(SYS_bpf, cmd, a, sizeof(*a));
}

/* A perf software event of the kernel's counted faults (major or minor)
 * on one CPU, every task's, to sample at each; -errno when it cannot be
 * opened (-ENODEV: the CPU is offline). */
static int counted_event(int cpu, int major)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = major ? PERF_COUNT_SW_PAGE_FAULTS_MAJ : PERF_COUNT_SW_PAGE_FAULTS_MIN;
	a.sample_period = 1;
	long fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

/* The counted-fault events of every CPU into s->counted. */
static int open_counted(struct stream *s)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int online = 0;

	if (ncpu < 1 || ncpu > 4096)
		ncpu = ncpu < 1 ? 1 : 4096;
	if (!(s->counted = malloc(2 * (size_t)ncpu * sizeof(*s->counted))))
		return -ENOMEM;
	for (int i = 0; i < 2 * ncpu; i++) {
		int fd = counted_event(i / 2, i & 1);
		if (fd < 0 && fd != -ENODEV)
			return fd;
		s->counted[s->ncounted++] = fd < 0 ? -1 : fd;
		online += fd >= 0;
	}
	return online ? 0 : -ENODEV;
}

/* STREAM_LOCK_TP on (s->arm_link), with a program that does nothing. */
static void arm_lock_tp(struct stream *s)
{
	/* r0 = 0; exit: a raw tracepoint program, which needs no BTF. */
	const struct bpf_insn nop[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
	a.insns = (uint64_t)(uintptr_t)nop;
	a.insn_cnt = 2;
	a.license = (uint64_t)(uintptr_t)"GPL";
	int prog = sys_bpf(BPF_PROG_LOAD, &a);
	if (prog < 0)
		return;
	memset(&a, 0, sizeof(a));
	a.raw_tracepoint.name = (uint64_t)(uintptr_t)STREAM_LOCK_TP;
	a.raw_tracepoint.prog_fd = (uint32_t)prog;
	s->arm_link = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
	close(prog); /* (the link holds it) */
}

static void *arm_main(void *arg)
{
	struct stream *s = arg;
	/* (the events first: the probe waits for them, not for the rest) */
	if (s->arm_counted)
		s->counted_err = open_counted(s);
	sem_post(&s->counted_ready);
	arm_lock_tp(s);
	return NULL;
}

void stream_arm_start(struct stream *s)
{
	sigset_t all, old;

	s->arm_link = -1;
	s->counted = NULL;
	s->ncounted = s->counted_err = 0;
	sem_init(&s->counted_ready, 0, 0);
	/* (every signal is the main thread's: the tick, a stop) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	s->arming = pthread_create(&s->arm, NULL, arm_main, s) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->arming && s->arm_counted)
		s->counted_err = open_counted(s);
}

int stream_arm_counted(struct stream *s)
{
	if (s->arming)
		while (sem_wait(&s->counted_ready) && errno == EINTR)
			;
	return s->counted_err;
}

void stream_arm_wait(struct stream *s)
{
	if (!s->arming)
		return;
	pthread_join(s->arm, NULL);
	s->arming = 0;
}

void stream_arm_release(struct stream *s)
{
	stream_arm_wait(s);
	if (s->arm_link >= 0)
		close(s->arm_link);
	s->arm_link = -1;
	for (int i = 0; i < s->ncounted; i++)
		if (s->counted[i] >= 0)
			close(s->counted[i]);
	free(s->counted);
	s->counted = NULL;
	s->ncounted = 0;
}
