/*
 * inproc.c - the inproc backend: the recorded calls are logged by the
 * program itself, by a runtime vmrec puts into each of its images, into
 * rings in memory shared with vmrec; vmrec drains them (inprocev.c).  No
 * privilege is needed, and nothing stops the program at a call: a call
 * site the runtime has patched calls it directly, any other call traps
 * (SIGSYS) into it.  The program is stopped only at its execs, briefly,
 * to give the new image its runtime (inject.c).
 *
 * Set-up: the shared file, the filter, the runtime mapped into vmrec
 * itself (the launched child execs through its gate), the launch held
 * until the child is seized, fault sampling of the child's whole tree
 * (inherited events), the keeper, go.  vmrec is the child subreaper of
 * everything the program starts, so that a process whose parent ended
 * is still its descendant (ptrace may seize it at its exec) and its exit
 * status is vmrec's to read.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "inproc_int.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/* The kernel's pidfd_info (Linux 6.15), up to its exit code. */
struct ip_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
#define IP_PIDFD_GET_INFO _IOWR(0xFF, 11, struct ip_pidfd_info)
#define IP_PIDFD_INFO_EXIT (1ull << 3)

/* ---- probe --------------------------------------------------------------- */

static int ptrace_scope(void)
{
	char buf[16] = "";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : 0;
}

static int inproc_probe(struct vmr_rec *r, char *why, size_t len)
{
	const struct vmr_opts *o = r->o;
#if !defined(__x86_64__)
	snprintf(why, len, "the inproc backend records x86-64 only");
	return -EOPNOTSUPP;
#endif
	if (o->attach_pid) {
		snprintf(why, len, "a running program (-p) cannot be given the in-process recorder");
		return -EOPNOTSUPP;
	}
	if (o->stack_depth) {
		snprintf(why, len, "--stacks is not supported by the inproc backend");
		return -EOPNOTSUPP;
	}
	if (o->same_cpu) {
		snprintf(why, len, "--same-cpu is for ptrace's round trips");
		return -EOPNOTSUPP;
	}
	if (ptrace_scope() >= 2) {
		snprintf(why, len, "it stops each new image at its exec with ptrace, which "
			 "kernel.yama.ptrace_scope=%d forbids", ptrace_scope());
		return -EPERM;
	}
	struct inproc *ip = calloc(1, sizeof(*ip));
	if (!ip)
		return -ENOMEM;
	ip->shm_fd = -1;
	ip->keeper.wfd = ip->keeper.pid = -1;
	int e = ip_img_load(&ip->img, why, len);
	if (e) {
		free(ip);
		return e;
	}
	char kind[200];
	if (o->cmd_argc && vmr_cmd_setid(o->cmd_argv[0], kind, sizeof(kind)) && geteuid() != 0) {
		snprintf(why, len, "%s: it would run without its privileges", kind);
		ip_img_free(&ip->img);
		free(ip);
		return -EPERM;
	}
	r->inproc = ip;
	return 0;
}

/* ---- set-up ------------------------------------------------------------------- */

static int shm_create(struct inproc *ip)
{
	int fd = (int)syscall(SYS_memfd_create, "vmrec-inproc", 1u /* MFD_CLOEXEC */);
	if (fd < 0)
		return -errno;
	/* The runtime maps it at the offset that tags its own mappings. */
	if (ftruncate(fd, (off_t)(IP_MAGIC_OFF + IP_SHM_SIZE)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	void *m = mmap(NULL, IP_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)IP_MAGIC_OFF);
	if (m == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	ip->shm_fd = fd;
	ip->shm = m;
	ip->hdr = m;
	ip->hdr->nslots = IP_NSLOTS;
	ip->hdr->slot_size = IP_SLOT_SIZE;
	ip->hdr->ring_size = IP_RING_SIZE;
	__atomic_store_n(&ip->hdr->magic, IP_SHM_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* The keeper's view (after vmrec died): the processes of live rings. */
static int keeper_list(void *ctx, pid_t *pids, int cap)
{
	struct inproc *ip = ctx;
	int n = 0;
	/* (every runtime that waits on vmrec from now on ends its process) */
	__atomic_store_n(&ip->hdr->dead, 1, __ATOMIC_RELEASE);
	if (ip->root > 0 && kill(ip->root, 0) == 0 && n < cap)
		pids[n++] = ip->root;
	for (uint32_t i = ip_next_used(ip->hdr, 0); i < IP_NSLOTS && n < cap;
	     i = ip_next_used(ip->hdr, i + 1)) {
		struct ip_slot *s = ip_slot_at(ip->shm, i);
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == IP_SLOT_LIVE && s->pid > 0 &&
		    kill(s->pid, 0) == 0)
			pids[n++] = s->pid;
	}
	return n;
}

static int keeper_member(void *ctx, pid_t pid)
{
	struct inproc *ip = ctx;
	if (pid == ip->root)
		return 1;
	for (uint32_t i = ip_next_used(ip->hdr, 0); i < IP_NSLOTS; i = ip_next_used(ip->hdr, i + 1)) {
		struct ip_slot *s = ip_slot_at(ip->shm, i);
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == IP_SLOT_LIVE && s->pid == pid)
			return 1;
	}
	return 0;
}

static void sigchld_nop(int sig)
{
	(void)sig; /* (it only wakes the wait on the doorbell) */
}

static int launch(struct vmr_rec *r, struct inproc *ip, char *err, size_t errlen)
{
	sigset_t mask;
	pid_t pid;
	int go, e;

	sigprocmask(SIG_SETMASK, NULL, &mask);
	const struct vmr_launch_how how = { ip_launch_run, ip_launch_exit, ip };
	if ((e = vmr_launch_held_how(r->o->cmd_argv, &how, &mask, &pid, &go, &r->errfd))) {
		snprintf(err, errlen, "cannot trace '%s': %s", r->o->cmd_argv[0], strerror(-e));
		return e;
	}
	struct vmr_proc *p = vmr_proc_new(r, pid);
	struct vmr_task *t = p ? vmr_task_add(r, pid, p) : NULL;
	struct ipp *pp = ip_proc(ip, pid);
	if (!t || !pp) {
		vmr_launch_cancel(pid, go, r->errfd);
		r->errfd = -1;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->flags |= T_PRESTART;
	ip->root = pid;
	ip->live_procs = 1;
	const struct vmr_keeper_list kl = { keeper_list, keeper_member, ip };
	const int close_fds[] = { go, r->errfd, r->out_fd };
	if ((e = ip_seize(ip, pid, -1))) {
		snprintf(err, errlen, "cannot trace '%s': ptrace: %s", r->o->cmd_argv[0], strerror(-e));
	} else if (r->faults && (e = vmr_faults_add_tree(r->faults, pid, ip_fault_who, r))) {
		snprintf(err, errlen, "cannot sample the page faults of '%s': %s", r->o->cmd_argv[0],
			 strerror(-e));
	} else if (!(e = vmr_keeper_start(&ip->keeper, &kl, close_fds, 3))) {
		e = vmr_launch_go(go);
		go = -1;
	}
	if (e) {
		if (!err[0])
			snprintf(err, errlen, "cannot start '%s': %s", r->o->cmd_argv[0], strerror(-e));
		if (go >= 0)
			close(go);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		return e;
	}
	return 0;
}

/* ---- execs ------------------------------------------------------------------------ */

static void on_exec_stop(struct vmr_rec *r, struct inproc *ip, pid_t tid)
{
	unsigned long former = (unsigned long)tid;
	ptrace(PTRACE_GETEVENTMSG, tid, 0, &former);
	struct ipx *x = ip_seized(ip, (pid_t)former);
	if (!x)
		x = ip_seized(ip, tid);
	int pending = x ? x->pending_sig : 0;
	if (x)
		ip_seized_drop(ip, x);
	/* What the old image wrote comes first. */
	(void)ip_pass(r, ip);
	char exe[PATH_MAX], err[256] = "";
	vmr_exe_path(tid, exe, sizeof(exe));
	char path[64], *maps = NULL;
	size_t cap = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	ssize_t ml = vmr_read_file(path, &maps, &cap);
	if (ml < 0)
		ml = 0;
	size_t pl = strlen(exe) + 1, len = sizeof(struct ipx_exec) + pl + (size_t)ml;
	unsigned char *rec = malloc(len);
	if (rec) {
		struct ipx_exec h = { .tid = tid, .former = (int32_t)former, .pathlen = (uint32_t)pl,
				      .mapslen = (uint32_t)ml };
		/* the process's counters up to the exec, as the ptrace
		 * backend reads them at its exec stop */
		h.have_cnt = vmr_cnt_read_group(tid, tid, &h.cnt) == 0;
		h.h.word = IP_REC_WORD(IPR_X_EXEC, 8);
		h.h.t = vmt_now_ns();
		memcpy(rec, &h, sizeof(h));
		memcpy(rec + sizeof(h), exe, pl);
		memcpy(rec + sizeof(h) + pl, maps, (size_t)ml);
		int qi = ip_queue_of(ip, (pid_t)former);
		if (ip_queue(ip, qi >= 0 ? qi : (int)IP_VMREC_Q, rec, (uint32_t)len, h.h.t, h.h.t) && !r->werr)
			r->werr = -ENOMEM;
		free(rec);
	}
	free(maps);
	/* the old image's rings are done (its other threads are gone) */
	ip_rings_dead(ip, tid);
	int e = ip_inject(r, ip, tid, pending, err, sizeof(err));
	if (e) {
		vmr_notice(r, "cannot put the in-process recorder into process %d ('%s'): %s; it is "
			   "killed", (int)tid, exe, err);
		kill(tid, SIGKILL);
	}
}

/* ---- processes ending ------------------------------------------------------------- */

/* p has ended (d: its counters, or NULL). */
static void gone(struct vmr_rec *r, struct inproc *ip, struct ipp *p, int status,
		 const struct ipx_dead *cnt)
{
	p->gone = 1;
	if (!p->have_status) {
		p->have_status = 1;
		p->status = status;
	}
	ip_rings_dead(ip, p->pid);
	struct ipx_dead d = { .pid = p->pid, .status = p->status };
	if (cnt) {
		d.have = cnt->have;
		d.proc_group = cnt->proc_group;
		d.thread = cnt->thread;
		d.proc = cnt->proc;
	}
	d.h.word = IP_REC_WORD(IPR_X_DEAD, sizeof(d));
	/* (its end is before its parent reaped it, and after all it did) */
	d.h.t = p->reaped_at ? p->reaped_at : vmt_now_ns();
	if (ip_queue(ip, IP_VMREC_Q, &d, sizeof(d), d.h.t, d.h.t) && !r->werr)
		r->werr = -ENOMEM;
}

static struct ipp *proc_find_live(struct inproc *ip, pid_t pid)
{
	for (size_t i = ip->nprocs; i-- > 0;)
		if (ip->procs[i].pid == pid && !ip->procs[i].gone)
			return &ip->procs[i];
	return NULL;
}

/* Children and seized threads: exec stops, signal stops, exits. */
static void reap(struct vmr_rec *r, struct inproc *ip)
{
	for (;;) {
		int st;
		struct rusage ru;
		struct ipx_dead cnt = { .pid = 0 };
		siginfo_t si;
		/* A process that ended: its zombie's counters first (a killed
		 * one's are nowhere else), then wait4's. */
		pid_t want = -1;
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 && si.si_pid > 0) {
			want = si.si_pid;
			/* (a tracee's stop is reported too) */
			if ((si.si_code == CLD_EXITED || si.si_code == CLD_KILLED ||
			     si.si_code == CLD_DUMPED) && proc_find_live(ip, want))
				ip_cnt_zombie(want, &cnt);
		}
		pid_t p = wait4(want, &st, WNOHANG | __WALL, &ru);
		if (p <= 0)
			return;
		if (WIFSTOPPED(st)) {
			int ev = (unsigned)st >> 16, sig = WSTOPSIG(st);
			struct ipx *x = ip_seized(ip, p);
			if (ev == PTRACE_EVENT_EXEC)
				on_exec_stop(r, ip, p);
			else if (ev == PTRACE_EVENT_STOP)
				ptrace(sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU
				       ? PTRACE_LISTEN : PTRACE_CONT, p, 0, 0);
			else if (ev == 0)
				ptrace(PTRACE_CONT, p, 0, (void *)(long)(x ? sig : sig));
			else
				ptrace(PTRACE_CONT, p, 0, 0);
			continue;
		}
		struct ipx *x = ip_seized(ip, p);
		if (x)
			ip_seized_drop(ip, x);
		if (p == ip->keeper.pid)
			continue;
		if (p == ip->root) {
			ip->root_reaped = 1;
			ip->root_status = st;
		}
		struct ipp *pp = proc_find_live(ip, p);
		if (pp && p == want) {
			ip_cnt_reaped(&cnt, &ru);
			gone(r, ip, pp, st, &cnt);
		} else if (pp) {
			gone(r, ip, pp, st, NULL);
		}
	}
}

/* Processes that are not vmrec's children: their pidfds. */
static void deaths(struct vmr_rec *r, struct inproc *ip)
{
	for (size_t i = 0; i < ip->nprocs; i++) {
		struct ipp *p = &ip->procs[i];
		if (p->gone)
			continue;
		int dead;
		if (p->pidfd >= 0) {
			struct pollfd pf = { p->pidfd, POLLIN, 0 };
			dead = poll(&pf, 1, 0) == 1;
		} else {
			dead = kill(p->pid, 0) < 0 && errno == ESRCH;
		}
		if (!dead)
			continue;
		struct ip_pidfd_info info = { .mask = IP_PIDFD_INFO_EXIT };
		if (!p->have_status && p->pidfd >= 0 && ioctl(p->pidfd, IP_PIDFD_GET_INFO, &info) == 0 &&
		    (info.mask & IP_PIDFD_INFO_EXIT)) {
			p->have_status = 1;
			p->status = info.exit_code;
		}
		/* Its status comes from its parent's wait (the runtime logs the
		 * children it reaps): a zombie is given a while for it, and
		 * one its parent reaped already a moment for the record of
		 * that (written right after the wait returned, and copied by
		 * the next pass). */
		uint64_t now = vmt_now_ns();
		if (!p->dead_at)
			p->dead_at = now;
		if (!p->have_status &&
		    now - p->dead_at < (kill(p->pid, 0) == 0 ? 2000000000ull : 100000000ull))
			continue;
		/* (its zombie, unless its parent reaped it already) */
		struct ipx_dead cnt = { .pid = 0 };
		ip_cnt_zombie(p->pid, &cnt);
		gone(r, ip, p, 0, &cnt);
	}
}

static int all_gone(const struct inproc *ip)
{
	for (size_t i = 0; i < ip->nprocs; i++)
		if (!ip->procs[i].gone)
			return 0;
	return 1;
}

static void begin_stop(struct inproc *ip)
{
	for (size_t i = 0; i < ip->nprocs; i++) {
		struct ipp *p = &ip->procs[i];
		if (p->gone)
			continue;
		if (p->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
		else
			kill(p->pid, SIGKILL);
	}
}

/* ---- the recording ------------------------------------------------------------------ */

static int inproc_run(struct vmr_rec *r, char *err, size_t errlen)
{
	struct inproc *ip = r->inproc;
	struct sigaction chld = { .sa_handler = sigchld_nop }, old_chld;
	int e, stopping = 0;
	uint64_t stop_at = 0;

	if ((e = shm_create(ip))) {
		snprintf(err, errlen, "cannot make the rings' shared file: %s", strerror(-e));
		return e;
	}
	if ((e = ip_filter_build(ip, &r->sys))) {
		snprintf(err, errlen, "cannot build the seccomp filter: %s", strerror(-e));
		return e;
	}
	if ((e = ip_img_map_self(&ip->img))) {
		snprintf(err, errlen, "cannot map the runtime '%s' at %#llx: %s", ip->img.path,
			 (unsigned long long)IP_BASE, strerror(-e));
		return e;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	sigemptyset(&chld.sa_mask);
	sigaction(SIGCHLD, &chld, &old_chld);
	if ((e = launch(r, ip, err, errlen))) {
		sigaction(SIGCHLD, &old_chld, NULL);
		return e;
	}
	uint32_t bell = __atomic_load_n(&ip->hdr->doorbell, __ATOMIC_ACQUIRE);
	for (;;) {
		uint64_t h = ip_pass(r, ip);
		reap(r, ip);
		deaths(r, ip);
		uint64_t upto = ip_emit(r, ip, h);
		vmr_tick_take();
		/* (fault samples in time order with the calls: up to the
		 * horizon, and never past a call still to be written) */
		vmr_tick_upto(r, upto);
		if ((vmr_stop_signal() || r->werr) && !stopping) {
			r->stop_werr = !vmr_stop_signal() && r->werr;
			stopping = 1;
			stop_at = vmt_now_ns();
			begin_stop(ip);
		}
		if (ip->root_reaped && (all_gone(ip) || !r->root_exec_seen))
			break;
		if (stopping && vmt_now_ns() - stop_at > 5000000000ull)
			break; /* (a task that does not die: give up waiting) */
		__atomic_store_n(&ip->hdr->sleeping, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&ip->hdr->doorbell, __ATOMIC_ACQUIRE) == bell) {
			struct timespec ts = { 0, 10000000 };
			syscall(SYS_futex, &ip->hdr->doorbell, 0 /* FUTEX_WAIT */, bell, &ts, NULL, 0);
		}
		__atomic_store_n(&ip->hdr->sleeping, 0, __ATOMIC_RELAXED);
		bell = __atomic_load_n(&ip->hdr->doorbell, __ATOMIC_ACQUIRE);
	}
	(void)ip_pass(r, ip);
	ip_emit(r, ip, UINT64_MAX);
	sigaction(SIGCHLD, &old_chld, NULL);
	if (stopping)
		r->stopped_by = vmr_stop_signal();
	if (!r->root_exec_seen)
		return vmr_launch_explain(r->errfd, r->o->cmd_argv[0], &r->exit_code, err, errlen);
	if (ip->root_reaped && !r->have_root_status) {
		r->have_root_status = 1;
		r->root_status = WIFEXITED(ip->root_status) ? WEXITSTATUS(ip->root_status)
							     : 128 + WTERMSIG(ip->root_status);
	}
	uint64_t unknown = vmr_faults_unknown(r->faults);
	if (unknown)
		vmr_notice(r, "%llu fault samples of tasks no longer recorded were left out",
			   (unsigned long long)unknown);
	return 0;
}

static void inproc_done(struct vmr_rec *r)
{
	struct inproc *ip = r->inproc;
	if (!ip)
		return;
	vmr_keeper_done(&ip->keeper);
	for (size_t i = 0; i < ip->nseized; i++)
		ptrace(PTRACE_DETACH, ip->seized[i].tid, 0, 0);
	free(ip->seized);
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	if (ip->shm)
		munmap(ip->shm, IP_SHM_SIZE);
	if (ip->shm_fd >= 0)
		close(ip->shm_fd);
	free(ip->filter);
	ip_ev_free(ip);
	ip_img_free(&ip->img);
	free(ip);
	r->inproc = NULL;
}

const struct vmr_backend vmr_backend_inproc = {
	.name = "inproc",
	.probe = inproc_probe,
	.run = inproc_run,
	.done = inproc_done,
};

/* ---- what the command is ---------------------------------------------------------- */

/* The file execvp would run for cmd into out; 0 or -errno. */
static int which(const char *cmd, char *out, size_t len)
{
	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return access(out, F_OK) ? -errno : 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *q = strchr(p, ':');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		snprintf(out, len, "%.*s%s%s", (int)n, p, n ? "/" : "", cmd);
		if (access(out, X_OK) == 0)
			return 0;
		if (!q)
			return -ENOENT;
		p = q;
	}
}

int vmr_cmd_setid(const char *cmd, char *why, size_t len)
{
	char path[PATH_MAX];
	struct stat st;
	if (which(cmd, path, sizeof(path)) || stat(path, &st))
		return 0;
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		snprintf(why, len, "'%s' is set-%s-ID", path, (st.st_mode & S_ISUID) ? "user" : "group");
		return 1;
	}
	if (getxattr(path, "security.capability", NULL, 0) > 0) {
		snprintf(why, len, "'%s' has file capabilities", path);
		return 1;
	}
	return 0;
}

int vmr_cmd_static(const char *cmd, char *why, size_t len)
{
	char path[PATH_MAX], buf[256];
	Elf64_Ehdr eh;
	if (which(cmd, path, sizeof(path)))
		return 0;
	for (int hops = 0; hops < 4; hops++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 2 && buf[0] == '#' && buf[1] == '!') {
			/* a script: its interpreter is what runs */
			close(fd);
			buf[n] = 0;
			char *s = buf + 2;
			while (*s == ' ' || *s == '\t')
				s++;
			size_t k = strcspn(s, " \t\n");
			s[k] = 0;
			snprintf(path, sizeof(path), "%s", s);
			continue;
		}
		int is_static = 0;
		if (n >= (ssize_t)sizeof(eh)) {
			memcpy(&eh, buf, sizeof(eh));
			if (!memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
			    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256) {
				is_static = 1;
				for (int i = 0; i < eh.e_phnum; i++) {
					Elf64_Phdr ph;
					if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
					    (ssize_t)sizeof(ph))
						break;
					if (ph.p_type == PT_INTERP)
						is_static = 0;
				}
			}
		}
		close(fd);
		if (is_static)
			snprintf(why, len, "'%s' is statically linked", path);
		return is_static;
	}
	return 0;
}
