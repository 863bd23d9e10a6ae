/*
 * stream.c - the stream backend: the kernel writes the recorded calls,
 * the tasks' births, execs and deaths and the page faults of the traced
 * process tree into one BPF ring buffer (bpf/stream.bpf.c), and vmrec
 * drains it, so the program is never stopped.  What the records become
 * in the trace: streamev.c.
 *
 * Set-up: the programs are loaded (the probe, which is how auto learns
 * that the kernel allows them), the child is forked and waits, its pid
 * goes into the set of traced thread groups, the programs are attached,
 * and the child execs.  Records of the child before its exec are not
 * recorded, as with ptrace.
 *
 * Draining: the BPF side wakes vmrec only when a quarter of the ring is
 * waiting (a wake-up per record would cost more than the record), and the
 * loop also wakes on its own every 50 ms, so records never wait longer.
 * Records the ring had no room for are counted by the BPF side and become
 * LOST events.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "stream_int.h"
#include "tpfind.h"
#include "record_int.h"

/* libbpf's messages: kept (the last few lines) to explain a failed load. */
static char lib_msg[1024];

static int lib_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	char line[256];
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	size_t have = strlen(lib_msg);
	if (n > 0 && have + strlen(line) + 1 > sizeof(lib_msg))
		have = 0; /* keep the latest */
	snprintf(lib_msg + have, sizeof(lib_msg) - have, "%s", line);
	return n;
}

/* Set rodata variable `name` of the object before it loads. */
static int set_rodata(struct bpf_object *obj, const char *name, const void *val, size_t len)
{
	struct bpf_map *map;
	const struct btf *btf = bpf_object__btf(obj);

	bpf_object__for_each_map(map, obj) {
		const char *mn = bpf_map__name(map);
		size_t ml = strlen(mn);
		if (ml < 7 || strcmp(mn + ml - 7, ".rodata"))
			continue;
		int id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
		if (id < 0)
			return -ENOENT;
		const struct btf_type *sec = btf__type_by_id(btf, (__u32)id);
		const struct btf_var_secinfo *v = btf_var_secinfos(sec);
		for (unsigned i = 0; i < btf_vlen(sec); i++, v++) {
			const struct btf_type *var = btf__type_by_id(btf, v->type);
			if (strcmp(btf__name_by_offset(btf, var->name_off), name))
				continue;
			size_t size;
			const void *cur = bpf_map__initial_value(map, &size);
			if (!cur || v->offset + len > size || v->size != len)
				return -EINVAL;
			unsigned char buf[4096];
			if (size > sizeof(buf))
				return -E2BIG;
			memcpy(buf, cur, size);
			memcpy(buf + v->offset, val, len);
			return bpf_map__set_initial_value(map, buf, size);
		}
		return -ENOENT;
	}
	return -ENOENT;
}

static int set_u32(struct bpf_object *obj, const char *name, uint32_t v)
{
	return set_rodata(obj, name, &v, sizeof(v));
}

static int set_u64(struct bpf_object *obj, const char *name, uint64_t v)
{
	return set_rodata(obj, name, &v, sizeof(v));
}

/* The syscall numbers of this architecture that create tasks. */
static int nr_of(const char *name)
{
	static const struct {
		const char *name;
		int nr;
	} tab[] = {
#if defined(__x86_64__)
		{ "clone", 56 }, { "vfork", 58 }, { "clone3", 435 },
#elif defined(__aarch64__)
		{ "clone", 220 }, { "clone3", 435 },
#endif
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(tab[i].name, name))
			return tab[i].nr;
	return -1;
}

static void stream_free(struct stream *s, int handed_off)
{
	if (!s)
		return;
	if (handed_off) {
		/* The ring's unmapping and the rest are the exit's (the
		 * sharer's); the keeper must still hear that all went well. */
		stream_arm_release(s);
		vmr_keeper_release(&s->keeper);
		return;
	}
	/* The keeper holds the links too: closed here first, they are
	 * detached in the keeper's exit, not in vmrec's. */
	for (int i = 0; i < s->nlinks; i++)
		close(s->link_fd[i]);
	free(s->link_fd);
	stream_arm_release(s);
	vmr_keeper_release(&s->keeper);
	if (s->root_pidfd >= 0)
		close(s->root_pidfd);
	if (s->ep >= 0)
		close(s->ep);
	ring_buffer__free(s->rb);
	stream_close_fds(s);
	bpf_object__close(s->obj);
	stream_window_free(s);
	free(s);
}

/* Linux major.minor at least maj.min? */
static int kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;
	if (uname(&u) || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return 0;
	return a > maj || (a == maj && b >= min);
}

/* The kernel's pid_max: no more thread groups than that can live at once
 * (0: not known). */
static uint32_t pid_max(void)
{
	unsigned v = 0;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Open the embedded object and set it up for this recording's options
 * (for either load). */
static int open_obj(struct vmr_rec *r, struct stream *s, char *why, size_t len)
{
	const struct vmr_opts *o = r->o;
	int e;

	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "vmrec");
	s->obj = bpf_object__open_mem(vmr_bpf_obj, (size_t)(vmr_bpf_obj_end - vmr_bpf_obj), &oo);
	if (!s->obj) {
		e = -errno;
		snprintf(why, len, "cannot open the BPF programs: %s", strerror(-e));
		return e;
	}
	s->ring_bytes = (uint64_t)o->ring_mib << 20;
	int touch = o->touch != VMR_TOUCH_NONE;
	/* With stacks the recorder unwinds each copy while the program runs
	 * on, and needs the process still there to read its mappings: it is
	 * woken sooner. */
	uint64_t wake = o->stack_depth ? STREAM_STACK_WAKE : s->ring_bytes / 4;
	if ((e = set_u32(s->obj, "want_faults", touch)) ||
	    (e = set_u32(s->obj, "stack_bytes", o->stack_depth ? o->stack_copy : 0)) ||
	    (e = set_u64(s->obj, "wake_bytes", wake < s->ring_bytes / 4 ? wake : s->ring_bytes / 4)) ||
	    (e = set_u64(s->obj, "flow_bytes", s->ring_bytes / 2)) ||
	    (e = set_u64(s->obj, "stack_room", s->ring_bytes / 4 * 3)) ||
	    (e = set_rodata(s->obj, "nr_clone", &(int){ nr_of("clone") }, sizeof(int))) ||
	    (e = set_rodata(s->obj, "nr_clone3", &(int){ nr_of("clone3") }, sizeof(int))) ||
	    (e = set_rodata(s->obj, "nr_vfork", &(int){ nr_of("vfork") }, sizeof(int))) ||
	    (e = set_u32(s->obj, "vma_iter", kernel_at_least(6, 7)))) {
		snprintf(why, len, "cannot configure the BPF programs: %s", strerror(-e));
		return e;
	}
	struct bpf_map *rb = bpf_object__find_map_by_name(s->obj, "rb");
	struct bpf_map *tgids = bpf_object__find_map_by_name(s->obj, "tgids");
	struct bpf_program *fault = bpf_object__find_program_by_name(s->obj, "on_fault");
	struct bpf_program *counted = bpf_object__find_program_by_name(s->obj, "on_counted");
	if (!rb || !tgids || !fault || !counted ||
	    bpf_map__set_max_entries(rb, (uint32_t)s->ring_bytes)) {
		snprintf(why, len, "the BPF object lacks its ring or programs");
		return -EINVAL;
	}
	/* The set of traced thread groups need not be larger than the
	 * number of pids: the kernel allocates and initializes a bucket per
	 * element at its creation (65,536 of them: 2-5 ms of the start). */
	uint32_t most = pid_max();
	if (most && most < bpf_map__max_entries(tgids) && bpf_map__set_max_entries(tgids, most)) {
		snprintf(why, len, "cannot size the set of traced processes");
		return -EINVAL;
	}
	/* (the faults' programs, and their perf events, cost nothing when
	 * faults are not recorded) */
	if (!touch) {
		bpf_program__set_autoload(fault, false);
		bpf_program__set_autoload(counted, false);
	}
	/* x86 has a tracepoint for faults taken in kernel mode; elsewhere
	 * those faults are not recorded. */
	struct bpf_program *kfault = bpf_object__find_program_by_name(s->obj, "on_kfault");
	if (kfault && (!touch || !s->have_kfault))
		bpf_program__set_autoload(kfault, false);
	return 0;
}

/* libbpf's own load, which parses the kernel's BTF here: when the
 * loader program could not do it, and to say why the kernel refuses. */
static int load_slow(struct vmr_rec *r, struct stream *s, char *why, size_t len)
{
	int e;

	bpf_object__close(s->obj);
	s->obj = NULL;
	lib_msg[0] = 0;
	if ((e = open_obj(r, s, why, len)))
		return e;
	if ((e = bpf_object__load(s->obj))) {
		char *nl = strrchr(lib_msg, '\n');
		if (nl && nl == lib_msg + strlen(lib_msg) - 1)
			*nl = 0;
		const char *last = strrchr(lib_msg, '\n') ? strrchr(lib_msg, '\n') + 1 : lib_msg;
		/* The verifier's refusal is EACCES too: root lacks no right. */
		int denied = (e == -EPERM || e == -EACCES) && geteuid() != 0;
		snprintf(why, len, "the kernel refused the BPF programs (%s)%s%.160s",
			 denied ? "needs root: CAP_BPF and CAP_PERFMON" : strerror(-e),
			 lib_msg[0] && !denied ? ": " : "", denied ? "" : last);
		return e;
	}
	if ((e = stream_take_fds(s))) {
		snprintf(why, len, "the BPF object has too many maps or programs");
		return e;
	}
	return 0;
}

static int stream_probe(struct vmr_rec *r, char *why, size_t len)
{
	const struct vmr_opts *o = r->o;
	struct stream *s;
	struct tp_info ktp;
	int e;

#if !defined(__x86_64__)
	snprintf(why, len, "the stream backend records x86-64 only");
	return -EOPNOTSUPP;
#endif
	if (o->same_cpu) {
		snprintf(why, len, "--same-cpu is for ptrace's round trips");
		return -EOPNOTSUPP;
	}
	if (o->touch == VMR_TOUCH_RESIDENT) {
		snprintf(why, len, "--touch=resident reads the pages of a stopped program");
		return -EOPNOTSUPP;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(why, len, "the kernel has no BTF (/sys/kernel/btf/vmlinux)");
		return -EOPNOTSUPP;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->keeper.wfd = s->keeper.pid = -1;
	s->ep = s->root_pidfd = -1;
	/* (the faults the kernel counts are told by its perf events) */
	s->arm_counted = o->touch != VMR_TOUCH_NONE;
	stream_arm_start(s);
	s->have_kfault = tp_find("exceptions", "page_fault_kernel", &ktp) == 0;
	libbpf_set_print(lib_print);
	lib_msg[0] = 0;
	if ((e = open_obj(r, s, why, len))) {
		stream_free(s, 0);
		return e;
	}
	if (stream_load_fast(s)) {
		stream_close_fds(s);
		if ((e = load_slow(r, s, why, len))) {
			stream_free(s, 0);
			return e;
		}
	}
	if ((e = stream_arm_counted(s))) {
		if (e == -ENODEV)
			snprintf(why, len, "cannot count page faults: no CPU is online");
		else
			snprintf(why, len, "cannot count page faults with perf events: %s",
				 strerror(-e));
		stream_free(s, 0);
		return e;
	}
	s->tgids_fd = stream_map_fd(s, "tgids");
	s->stats_fd = stream_map_fd(s, "stats");
	s->waiting_fd = stream_map_fd(s, "waiting");
	int opmap = stream_map_fd(s, "opmap");
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		int nr = r->sys.nr_of_op[op];
		if (nr >= 0 && nr < SR_MAX_NR)
			bpf_map_update_elem(opmap, &(uint32_t){ (uint32_t)nr }, &op, BPF_ANY);
	}
	s->ncpus = libbpf_num_possible_cpus();
	/* [vsyscall] is the kernel's, the same in every process: as /proc
	 * lists it here. */
	struct vmr_maps self = {0};
	if (vmr_maps_read(&self, getpid()) == 0)
		for (uint32_t i = 0; i < self.n; i++)
			if (!strcmp(self.e[i].path, "[vsyscall]")) {
				s->vsyscall = self.e[i];
				s->vsyscall.path = "[vsyscall]";
			}
	vmr_maps_free(&self);
	r->stream = s;
	return 0;
}

static int add_link(struct stream *s, int l)
{
	if (vmt_grow(&s->link_fd, &s->caplinks, (size_t)s->nlinks + 1, sizeof(*s->link_fd))) {
		close(l);
		return -ENOMEM;
	}
	s->link_fd[s->nlinks++] = l;
	return 0;
}

/* on_counted on the counted-fault events of every CPU (cookie 1: the
 * major one), each held by its link. */
static int attach_counted(struct stream *s, int prog, char *err, size_t errlen)
{
	/* (opened while the programs loaded: stream_arm_start) */
	for (int i = 0; i < s->ncounted; i++) {
		int fd = s->counted[i], e;
		if (fd < 0)
			continue;
		LIBBPF_OPTS(bpf_link_create_opts, lo, .perf_event.bpf_cookie = (__u64)(i & 1));
		int l = bpf_link_create(prog, fd, BPF_PERF_EVENT, &lo);
		e = l < 0 ? -errno : add_link(s, l);
		close(fd);
		s->counted[i] = -1;
		if (e) {
			snprintf(err, errlen, "cannot attach on_counted: %s", strerror(-e));
			return e;
		}
	}
	return 0;
}

static int attach_links(struct vmr_rec *r, struct stream *s, char *err, size_t errlen)
{
	struct bpf_program *p;

	int k = 0, e;

	/* (Every other program is a BTF-typed tracepoint's: a link of the
	 * tracepoint the kernel found for it at load.) */
	bpf_object__for_each_program(p, s->obj) {
		if (!bpf_program__autoload(p))
			continue;
		if (k == s->nprogs)
			break;
		int prog = s->prog_fd[k++];
		if (bpf_program__type(p) == BPF_PROG_TYPE_PERF_EVENT) {
			if ((e = attach_counted(s, prog, err, errlen)))
				return e;
			continue;
		}
		int l = bpf_link_create(prog, 0, bpf_program__expected_attach_type(p), NULL);
		if (l < 0 || (e = add_link(s, l))) {
			e = l < 0 ? -errno : e;
			snprintf(err, errlen, "cannot attach %s: %s", bpf_program__name(p),
				 strerror(-e));
			return e;
		}
	}
	return 0;
}

/* The ring, mapped here (after the keeper's fork, which then need not
 * copy the mapping's page tables; and after the launched program's
 * start: the kernel writes the ring whether vmrec has it mapped or not,
 * and mapping its 32 MiB takes 1-2 ms), and the loop's epoll set. */
static int open_ring(struct vmr_rec *r, struct stream *s, char *err, size_t errlen)
{
	s->rb = ring_buffer__new(stream_map_fd(s, "rb"), stream_record, r, NULL);
	if (!s->rb) {
		int e = -errno;
		snprintf(err, errlen, "cannot read the BPF ring buffer: %s", strerror(-e));
		return e;
	}
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (s->ep < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(s->rb), &ev)) {
		int e = -errno;
		snprintf(err, errlen, "cannot wait for the BPF ring buffer: %s", strerror(-e));
		return e;
	}
	return 0;
}

/* The launched program's exit wakes the loop (without a pidfd, a
 * kernel before 5.3, the loop's timeout does). */
static void watch_root(struct stream *s, pid_t pid)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	s->root_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (s->root_pidfd >= 0 && epoll_ctl(s->ep, EPOLL_CTL_ADD, s->root_pidfd, &ev)) {
		close(s->root_pidfd);
		s->root_pidfd = -1;
	}
}

static void unwatch_root(struct stream *s)
{
	if (s->root_pidfd < 0)
		return;
	epoll_ctl(s->ep, EPOLL_CTL_DEL, s->root_pidfd, NULL);
	close(s->root_pidfd);
	s->root_pidfd = -1;
}

static int trace_tgid(struct stream *s, pid_t tgid)
{
	uint32_t key = (uint32_t)tgid, one = 1;
	return bpf_map_update_elem(s->tgids_fd, &key, &one, BPF_ANY) ? -errno : 0;
}

/* No thread group left in the kernel's set of traced ones? */
static int none_traced(const struct stream *s)
{
	uint32_t next;
	return bpf_map_get_next_key(s->tgids_fd, NULL, &next) < 0 && errno == ENOENT;
}

/* Stacks the kernel side left out because the ring was 3/4 full. */
static uint64_t stacks_skipped(const struct stream *s)
{
	uint64_t v[256], sum = 0;
	uint32_t key = SR_STAT_STACKSKIP;
	if (s->ncpus <= 0 || s->ncpus > 256 || bpf_map_lookup_elem(s->stats_fd, &key, v))
		return 0;
	for (int i = 0; i < s->ncpus; i++)
		sum += v[i];
	return sum;
}

/* Records the BPF side dropped, not reported yet: a LOST event. */
static void report_drops(struct vmr_rec *r, struct stream *s)
{
	uint64_t v[256], sum = 0;
	uint32_t key = SR_STAT_DROPPED;
	if (s->ncpus <= 0 || s->ncpus > 256 || bpf_map_lookup_elem(s->stats_fd, &key, v))
		return;
	for (int i = 0; i < s->ncpus; i++)
		sum += v[i];
	if (sum <= s->dropped_told)
		return;
	vmr_emit_lost(r, NULL, sum - s->dropped_told, s->last_ts);
	s->dropped_told = sum;
}

/* SIGINT/SIGTERM/SIGHUP: end the launched program (its tasks are killed;
 * their exits are recorded), or stop recording an attached one. */
static void begin_stop(struct vmr_rec *r, struct stream *s)
{
	for (size_t i = 0; i < r->tasks.cap; i++) {
		struct vmr_task *t = vmr_task_slot(r, i);
		if (!t)
			continue;
		if (r->attach) {
			uint32_t key = (uint32_t)t->proc->pid;
			bpf_map_delete_elem(s->tgids_fd, &key);
		} else {
			kill(t->tid, SIGKILL);
		}
	}
	s->stop_at = vmt_now_ns();
}

/* -p: trace every thread of the process from now on, without stopping it. */
static int attach_running(struct vmr_rec *r, struct stream *s, char *err, size_t errlen)
{
	pid_t pid = r->o->attach_pid;
	char path[64];
	int e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d) {
		e = errno;
		snprintf(err, errlen, "cannot attach to %d: %s", (int)pid,
			 e == ENOENT ? "no such process" : strerror(e));
		return -e;
	}
	struct vmr_proc *p = vmr_proc_new(r, pid);
	if (!p) {
		closedir(d);
		return -ENOMEM;
	}
	/* From here on every call of the thread group is recorded: new
	 * threads come with their SR_FORK. */
	if ((e = trace_tgid(s, pid))) {
		closedir(d);
		vmr_proc_free(p);
		snprintf(err, errlen, "cannot attach to %d: %s", (int)pid, strerror(-e));
		return e;
	}
	uint64_t ts = vmt_now_ns();
	struct vmr_task *lead = NULL;
	/* The leader first (it is thread 0 and starts the process). */
	struct vmr_task *t0 = vmr_task_add(r, pid, p);
	if (!t0) {
		closedir(d);
		return -ENOMEM;
	}
	vmr_start_events(r, t0, VMT_NONE, VMT_NONE, VMT_PROC_ATTACH, ts);
	lead = t0;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || vmr_task_find(r, tid))
			continue;
		struct vmr_task *t = vmr_task_add(r, tid, p);
		if (t)
			vmr_start_events(r, t, VMT_NONE, VMT_NONE, VMT_NONE, ts);
	}
	closedir(d);
	s->live_procs = 1;
	stream_arm_wait(s);
	if ((e = attach_links(r, s, err, errlen)) || (e = open_ring(r, s, err, errlen)))
		return e;
	stream_arm_release(s);
	vmr_maps_event(r, lead, ts);
	vmr_notice(r, "attached to %d without stopping it", (int)pid);
	return 0;
}

/* The keeper's view of the recording: the traced thread groups, from
 * the map the kernel side keeps (it adds forks, removes exits). */
static int keeper_list(void *ctx, pid_t *pids, int cap)
{
	const struct stream *s = ctx;
	uint32_t key, next;
	int n = 0;
	for (int e = bpf_map_get_next_key(s->tgids_fd, NULL, &next); !e && n < cap;
	     e = bpf_map_get_next_key(s->tgids_fd, &key, &next)) {
		pids[n++] = (pid_t)next;
		key = next;
	}
	return n;
}

static int keeper_member(void *ctx, pid_t pid)
{
	const struct stream *s = ctx;
	uint32_t key = (uint32_t)pid, v;
	return bpf_map_lookup_elem(s->tgids_fd, &key, &v) == 0;
}

static int launch(struct vmr_rec *r, struct stream *s, char *err, size_t errlen)
{
	sigset_t mask;
	pid_t pid;
	int go, e;

	sigprocmask(SIG_SETMASK, NULL, &mask);
	if ((e = vmr_launch_held(r->o->cmd_argv, NULL, &mask, &pid, &go, &r->errfd))) {
		snprintf(err, errlen, "cannot trace '%s': %s", r->o->cmd_argv[0], strerror(-e));
		return e;
	}
	struct vmr_proc *p = vmr_proc_new(r, pid);
	struct vmr_task *t = p ? vmr_task_add(r, pid, p) : NULL;
	if (!t) {
		vmr_launch_cancel(pid, go, r->errfd);
		r->errfd = -1;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->flags |= T_PRESTART;
	s->root = pid;
	s->live_procs = 1;
	/* The keeper comes once the map names the program and the programs
	 * are attached (it holds them, so that forks after vmrec's death are
	 * still named), and before the program runs. */
	const struct vmr_keeper_list kl = { keeper_list, keeper_member, s };
	stream_arm_wait(s);
	/* (the go pipe: a program that vmrec never started sees its end;
	 * the program that did nothing: not kept on by the keeper) */
	const int close_fds[] = { go, r->errfd, r->out_fd, s->arm_link };
	if ((e = trace_tgid(s, pid)) || (e = attach_links(r, s, err, errlen)) ||
	    (e = vmr_keeper_start(&s->keeper, &kl, close_fds, 4)) ||
	    (e = vmr_launch_go(go)) || (e = open_ring(r, s, err, errlen))) {
		if (!err[0])
			snprintf(err, errlen, "cannot start '%s': %s", r->o->cmd_argv[0],
				 strerror(-e));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return e;
	}
	watch_root(s, pid);
	stream_arm_release(s);
	return 0;
}

/* The launched child died before exec: say why. */
static int launch_failed(struct vmr_rec *r, char *err, size_t errlen)
{
	return vmr_launch_explain(r->errfd, r->o->cmd_argv[0], &r->exit_code, err, errlen);
}

/* Is a recorded task still there?  (Once records were lost, an exit may
 * have been among them.) */
static int any_task_alive(const struct vmr_rec *r)
{
	for (size_t i = 0; i < r->tasks.cap; i++) {
		const struct vmr_task *t = vmr_task_slot(r, i);
		if (t && (kill(t->tid, 0) == 0 || errno == EPERM))
			return 1;
	}
	return 0;
}

static int stream_run(struct vmr_rec *r, char *err, size_t errlen)
{
	struct stream *s = r->stream;
	int e, stopping = 0, root_status = 0, root_reaped = 0;
	uint64_t last_alive_check = 0;

	e = r->attach ? attach_running(r, s, err, errlen) : launch(r, s, err, errlen);
	if (e)
		return e;
	for (;;) {
		/* (a wake-up as soon as a batch waits, not one per record) */
		bpf_map_update_elem(s->waiting_fd, &(uint32_t){ 0 }, &(uint32_t){ 1 }, BPF_ANY);
		/* The launched program reaped, its exit may still be in the
		 * window: it is taken as soon as the window lets it go. */
		int ms = root_reaped && s->live_procs == 1 ? 1 + (int)(STREAM_WINDOW_NS / 1000000)
							   : STREAM_DRAIN_MS;
		struct epoll_event evs[2];
		int n = epoll_wait(s->ep, evs, 2, ms);
		if (n < 0 && errno != EINTR) {
			if (!r->werr)
				r->werr = -errno;
			break;
		}
		/* (Records below the wake-up mark wake nobody: they are taken
		 * on the timeout, so that they reach the file within 100 ms.) */
		n = ring_buffer__consume(s->rb);
		if (n < 0 && n != -EINTR && n != -EAGAIN) {
			if (!r->werr)
				r->werr = n;
			break;
		}
		stream_flush(r, s, 0);
		report_drops(r, s);
		vmr_tick_take();
		vmr_tick(r);
		/* (a trace that cannot be written ends the recording now) */
		if ((vmr_stop_signal() || r->werr) && !stopping) {
			r->stop_werr = !vmr_stop_signal() && r->werr;
			stopping = 1;
			begin_stop(r, s);
		}
		if (!r->attach && !root_reaped && waitpid(s->root, &root_status, WNOHANG) == s->root) {
			root_reaped = 1;
			unwatch_root(s);
		}
		/* The launched program reaped (its threads' records are all
		 * in the ring) and no traced process left (a process leaves
		 * the set after its last record): no record can come that
		 * should go before those in the window, so the window need
		 * not wait out its 2 ms to let them go. */
		if (root_reaped && s->live_procs > 0 && none_traced(s)) {
			while (ring_buffer__consume(s->rb) == -EAGAIN)
				;
			stream_flush(r, s, 1);
		}
		/* The end: every traced process has exited (and the launched
		 * one is reaped); attached: also when asked to stop. */
		if (s->live_procs == 0 && (r->attach || root_reaped))
			break;
		if (!r->root_exec_seen && root_reaped)
			break; /* it died before exec */
		if (root_reaped && s->dropped_told && vmt_now_ns() - last_alive_check > 100000000ull) {
			last_alive_check = vmt_now_ns();
			if (!any_task_alive(r))
				break; /* (their exits were lost) */
		}
		if (stopping && r->attach)
			break;
		if (stopping && vmt_now_ns() - s->stop_at > 5000000000ull)
			break; /* (a task that does not die: give up waiting) */
	}
	while (ring_buffer__consume(s->rb) == -EAGAIN)
		stream_flush(r, s, 0);
	stream_flush(r, s, 1);
	report_drops(r, s);
	r->stack_skipped = stacks_skipped(s);
	if (stopping)
		r->stopped_by = vmr_stop_signal();
	if (!r->attach && !r->root_exec_seen)
		return launch_failed(r, err, errlen);
	if (!r->attach && root_reaped && !r->have_root_status) {
		r->have_root_status = 1;
		r->root_status = WIFEXITED(root_status) ? WEXITSTATUS(root_status)
						       : 128 + WTERMSIG(root_status);
	}
	return 0;
}

static void stream_done(struct vmr_rec *r)
{
	stream_free(r->stream, r->handed_off);
	r->stream = NULL;
}

const struct vmr_backend vmr_backend_stream = {
	.name = "stream",
	.probe = stream_probe,
	.run = stream_run,
	.done = stream_done,
};
