/*
 * inject.c - the inproc backend's runtime into the program: its image
 * (vmrec-inproc.rt, next to vmrec or in its lib dir), the seccomp filter,
 * the launch, and the exec stop.
 *
 * The filter, installed by the launched child just before its exec and
 * inherited by everything after, traps (SECCOMP_RET_TRAP) the recorded
 * calls and those the runtime must see (the clone family, exec, exit,
 * signal actions and masks), unless they come from the runtime's own two
 * syscall instructions; an mmap with the runtime's offset tag passes from
 * anywhere (the first mapping of the runtime into an image is made before
 * the runtime is there).
 *
 * At every exec the new image is stopped (the thread was seized when it
 * asked, ptrace, PTRACE_O_TRACEEXEC) before its first instruction, ld.so's
 * included: vmrec makes it map the runtime at IP_BASE (a syscall
 * instruction written over its entry for two calls, then put back),
 * writes the runtime's code and parameters into it through
 * /proc/PID/mem, has it call the runtime's init (which returns to an
 * int3), restores its registers and detaches.  Nothing else stops the
 * program.  An exec that fails is announced too: the thread is then
 * stopped (PTRACE_INTERRUPT) to be detached.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "inproc_int.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

#define IMG_NAME "vmrec-inproc.rt"

/* ---- the image ---------------------------------------------------------- */

static int read_whole(const char *path, unsigned char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (off_t)IP_IMAGE_MAX) {
		close(fd);
		return -EINVAL;
	}
	unsigned char *b = malloc((size_t)st.st_size);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	size_t have = 0;
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, b + have, (size_t)st.st_size - have);
		if (n <= 0) {
			free(b);
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		have += (size_t)n;
	}
	close(fd);
	*out = b;
	*len = have;
	return 0;
}

/* The image's file: beside vmrec, or in its lib dir. */
static int find_img(char *path, size_t len)
{
	char self[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -ENOENT;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	static const char *const where[] = { "%s/" IMG_NAME, "%s/../lib/vmrec/" IMG_NAME };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(path, len, where[i], self);
		if (access(path, R_OK) == 0)
			return 0;
	}
	snprintf(path, len, "%s/" IMG_NAME, self);
	return -ENOENT;
}

int ip_img_load(struct ip_img *img, char *why, size_t len)
{
	int e = find_img(img->path, sizeof(img->path));
	if (e) {
		snprintf(why, len, "its runtime '%s' (or '../lib/vmrec/" IMG_NAME "' beside vmrec) "
			 "is not there", img->path);
		return e;
	}
	if ((e = read_whole(img->path, &img->file, &img->size))) {
		snprintf(why, len, "cannot read '%s': %s", img->path, strerror(-e));
		return e;
	}
	const Elf64_Ehdr *eh = (const void *)img->file;
	if (img->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_machine != EM_X86_64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > img->size)
		goto bad;
	const Elf64_Phdr *ph = (const void *)(img->file + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (img->nseg == 4 || ph[i].p_offset + ph[i].p_filesz > img->size ||
		    ph[i].p_vaddr < IP_BASE || ph[i].p_vaddr + ph[i].p_memsz > IP_BASE + IP_IMAGE_MAX ||
		    ph[i].p_filesz > ph[i].p_memsz || (ph[i].p_vaddr & 4095) != (ph[i].p_offset & 4095))
			goto bad;
		struct ip_seg *s = &img->seg[img->nseg++];
		s->vaddr = ph[i].p_vaddr;
		s->memsz = ph[i].p_memsz;
		s->filesz = ph[i].p_filesz;
		s->off = ph[i].p_offset;
		s->prot = ((ph[i].p_flags & PF_R) ? PROT_READ : 0) | ((ph[i].p_flags & PF_W) ? PROT_WRITE : 0) |
			  ((ph[i].p_flags & PF_X) ? PROT_EXEC : 0);
	}
	/* The header is the first segment's start. */
	if (!img->nseg || img->seg[0].vaddr != IP_BASE || img->seg[0].filesz < sizeof(img->hdr))
		goto bad;
	memcpy(&img->hdr, img->file + img->seg[0].off, sizeof(img->hdr));
	if (img->hdr.magic != IP_IMAGE_MAGIC || img->hdr.version != IP_VERSION ||
	    img->hdr.size != sizeof(img->hdr))
		goto bad;
	return 0;
bad:
	snprintf(why, len, "'%s' is not the runtime of this vmrec (" VMR_VERSION ")", img->path);
	free(img->file);
	img->file = NULL;
	return -EINVAL;
}

void ip_img_free(struct ip_img *img)
{
	free(img->file);
	img->file = NULL;
}

static uint64_t pg_down(uint64_t a)
{
	return a & ~4095ull;
}

static uint64_t pg_up(uint64_t a)
{
	return (a + 4095) & ~4095ull;
}

int ip_img_map_self(struct ip_img *img)
{
	for (int i = 0; i < img->nseg; i++) {
		const struct ip_seg *s = &img->seg[i];
		uint64_t a = pg_down(s->vaddr), len = pg_up(s->vaddr + s->memsz) - a;
		void *m = mmap((void *)a, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (m == MAP_FAILED)
			return -errno;
		if (m != (void *)a) {
			munmap(m, len);
			return -EEXIST;
		}
		memcpy((void *)s->vaddr, img->file + s->off, s->filesz);
		if (mprotect(m, len, s->prot) < 0)
			return -errno;
	}
	return 0;
}

/* ---- the filter ---------------------------------------------------------- */

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + (i)*8)
#define ARG_HI(i) (offsetof(struct seccomp_data, args) + (i)*8 + 4)

struct bpf_out {
	struct sock_filter *p;
	size_t n, cap;
	int err;
};

static void op(struct bpf_out *o, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
	if (vmt_grow(&o->p, &o->cap, o->n + 1, sizeof(*o->p))) {
		o->err = -ENOMEM;
		return;
	}
	o->p[o->n++] = (struct sock_filter){ code, jt, jf, k };
}

/* Calls the runtime handles itself, trapped like the recorded ones;
 * arg >= 0: only when that argument is nonzero (a signal mask given), or,
 * for arch_prctl, ARCH_SET_GS. */
static const struct {
	int nr, arg;
} special[] = {
	{ 56, -1 }, { 57, -1 }, { 58, -1 }, { 435, -1 },     /* clone fork vfork clone3 */
	{ 59, -1 }, { 322, -1 }, { 60, -1 }, { 231, -1 },    /* execve execveat exit exit_group */
	{ 61, -1 }, { 247, -1 },			      /* wait4 waitid */
	{ 13, -1 }, { 14, -1 }, { 130, -1 },		      /* rt_sigaction rt_sigprocmask sigsuspend */
	{ 271, 3 }, { 270, 5 }, { 281, 4 }, { 441, 4 },       /* ppoll pselect6 epoll_pwait(2) */
	{ 158, 0 },					      /* arch_prctl */
};

int ip_filter_build(struct inproc *ip, const struct vmr_sysmap *sys)
{
	struct bpf_out o = { 0 };
	uint64_t gate = ip->img.hdr.gate_ip, clone = ip->img.hdr.clone_ip;
	int nrs[VMT_OP__COUNT + 32], kinds[VMT_OP__COUNT + 32], n = 0;

	for (uint32_t k = 1; k < VMT_OP__COUNT; k++)
		if (sys->nr_of_op[k] >= 0) {
			nrs[n] = sys->nr_of_op[k];
			kinds[n++] = k == VMT_OP_MMAP ? -2 : -1;
		}
	for (size_t k = 0; k < sizeof(special) / sizeof(special[0]); k++) {
		nrs[n] = special[k].nr;
		kinds[n++] = special[k].arg;
	}
	/* Other ABIs are not recorded (vmrec(1), NOTES). */
	op(&o, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0);
	op(&o, BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	op(&o, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	/* A chain of tests, each jumping to its call's block, placed after
	 * the chain: [test, ja] per number, then ALLOW. */
	size_t chain = o.n + 1, blocks = chain + 2 * (size_t)n + 1;
	op(&o, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
	/* block sizes: the ip check is shared (at `check`) */
	size_t at = blocks, bstart[VMT_OP__COUNT + 32];
	for (int i = 0; i < n; i++) {
		bstart[i] = at;
		at += kinds[i] == -1 ? 1 : 6;
	}
	size_t check = at;
	for (int i = 0; i < n; i++) {
		op(&o, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nrs[i], 0, 1);
		op(&o, BPF_JMP | BPF_JA, (uint32_t)(bstart[i] - (o.n + 1)), 0, 0);
	}
	op(&o, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	for (int i = 0; i < n; i++) {
		if (kinds[i] == -1) {
			op(&o, BPF_JMP | BPF_JA, (uint32_t)(check - (o.n + 1)), 0, 0);
			continue;
		}
		int a = kinds[i] == -2 ? 5 : kinds[i];
		op(&o, BPF_LD | BPF_W | BPF_ABS, ARG_LO(a), 0, 0);
		if (kinds[i] == -2) { /* mmap: the runtime's tag passes */
			op(&o, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)IP_MAGIC_OFF, 0, 3);
			op(&o, BPF_LD | BPF_W | BPF_ABS, ARG_HI(a), 0, 0);
			op(&o, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(IP_MAGIC_OFF >> 32), 0, 1);
		} else if (nrs[i] == 158) { /* arch_prctl: ARCH_SET_GS only */
			op(&o, BPF_JMP | BPF_JEQ | BPF_K, 0x1001, 0, 2);
			op(&o, BPF_LD | BPF_W | BPF_ABS, ARG_HI(a), 0, 0);
			op(&o, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
		} else { /* only with a mask: the argument nonzero */
			op(&o, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3);
			op(&o, BPF_LD | BPF_W | BPF_ABS, ARG_HI(a), 0, 0);
			op(&o, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
		}
		op(&o, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
		op(&o, BPF_JMP | BPF_JA, (uint32_t)(check - (o.n + 1)), 0, 0);
	}
	if (o.n != check)
		o.err = o.err ? o.err : -EINVAL;
	/* check: from the runtime's instructions, allowed; else trapped */
	op(&o, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4, 0, 0);
	op(&o, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(gate >> 32), 1, 0);
	op(&o, BPF_RET | BPF_K, SECCOMP_RET_TRAP | IP_TRAP_DATA, 0, 0);
	op(&o, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer), 0, 0);
	op(&o, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)gate, 2, 0);
	op(&o, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)clone, 1, 0);
	op(&o, BPF_RET | BPF_K, SECCOMP_RET_TRAP | IP_TRAP_DATA, 0, 0);
	op(&o, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	if (o.err) {
		free(o.p);
		return o.err;
	}
	ip->filter = o.p;
	ip->sock_filter_len = o.n;
	return 0;
}

/* ---- the launch ------------------------------------------------------------ */

extern char **environ;

/* execvp's search, done before the filter (nothing may be allocated
 * after it: the child has no runtime to handle a trapped call). */
static int resolve(const char *name, char *out, size_t len)
{
	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return 0;
	}
	const char *path = getenv("PATH");
	int e = -ENOENT;
	if (!path || !*path)
		path = "/usr/local/bin:/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *q = strchr(p, ':');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		snprintf(out, len, "%.*s%s%s", (int)n, p, n ? "/" : "", name);
		if (access(out, X_OK) == 0)
			return 0;
		if (errno == EACCES)
			e = -EACCES;
		if (!q)
			break;
		p = q;
	}
	return e;
}

int ip_launch_run(const void *ctx, char *const argv[], char *stage)
{
	const struct inproc *ip = ctx;
	static char path[PATH_MAX];
	long (*gate)(long, long, long, long, long, long, long) = (void *)ip->img.hdr.gate;
	int argc = 0;

	*stage = VMR_LAUNCH_EXEC;
	int e = resolve(argv[0], path, sizeof(path));
	if (e)
		return e;
	while (argv[argc])
		argc++;
	/* (a file without #! is run by /bin/sh, as execvp does) */
	char **sh = calloc((size_t)argc + 2, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	sh[0] = (char *)"/bin/sh";
	sh[1] = path;
	for (int i = 1; i < argc; i++)
		sh[i + 1] = argv[i];
	*stage = VMR_LAUNCH_FILTER;
	if (geteuid() != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	struct sock_fprog prog = { (unsigned short)ip->sock_filter_len, ip->filter };
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	*stage = VMR_LAUNCH_EXEC;
	long r = gate(SYS_execve, (long)path, (long)argv, (long)environ, 0, 0, 0);
	if (r == -ENOEXEC)
		r = gate(SYS_execve, (long)sh[0], (long)sh, (long)environ, 0, 0, 0);
	return (int)r;
}

void ip_launch_exit(const void *ctx, int code)
{
	const struct inproc *ip = ctx;
	long (*gate)(long, long, long, long, long, long, long) = (void *)ip->img.hdr.gate;
	/* (the filter traps exit_group from anywhere else) */
	gate(SYS_exit_group, code, 0, 0, 0, 0, 0);
}

/* ---- seized threads ---------------------------------------------------------- */

struct ipx *ip_seized(struct inproc *ip, pid_t tid)
{
	for (size_t i = 0; i < ip->nseized; i++)
		if (ip->seized[i].tid == tid)
			return &ip->seized[i];
	return NULL;
}

void ip_seized_drop(struct inproc *ip, struct ipx *x)
{
	*x = ip->seized[--ip->nseized];
}

int ip_seize(struct inproc *ip, pid_t tid, int slot)
{
	if (ptrace(PTRACE_SEIZE, tid, 0,
		   PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD) < 0)
		return -errno;
	if (vmt_grow(&ip->seized, &ip->capseized, ip->nseized + 1, sizeof(*ip->seized))) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -ENOMEM;
	}
	ip->seized[ip->nseized++] = (struct ipx){ tid, slot, 0 };
	return 0;
}

/* Let go of a seized thread that is running: stop it, detach. */
static void let_go(struct inproc *ip, struct ipx *x)
{
	pid_t tid = x->tid;
	int pending = x->pending_sig;
	ip_seized_drop(ip, x);
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return;
	for (;;) {
		int st;
		pid_t p = waitpid(tid, &st, __WALL);
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 || !WIFSTOPPED(st))
			return;
		int ev = (unsigned)st >> 16;
		if (ev == PTRACE_EVENT_STOP)
			break;
		if (ev == 0 && !pending)
			pending = WSTOPSIG(st);
		ptrace(PTRACE_CONT, tid, 0, 0);
	}
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)pending);
}

void ip_exec_request(struct vmr_rec *r, struct inproc *ip, int slot, pid_t tid, int failed)
{
	struct ip_slot *s = ip_slot_at(ip->shm, (uint32_t)slot);
	uint32_t reply = 1;
	if (!failed) {
		int e = ip_seize(ip, tid, slot);
		if (e) {
			vmr_notice(r, "cannot follow the exec of thread %d: ptrace: %s; the exec fails "
				   "with EPERM", (int)tid, strerror(-e));
			reply = 2;
		}
	} else {
		struct ipx *x = ip_seized(ip, tid);
		if (x)
			let_go(ip, x);
	}
	__atomic_store_n(&s->reply, reply, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->reply, 1 /* FUTEX_WAKE */, 1 << 30, NULL, NULL, 0);
}

/* ---- the exec stop ----------------------------------------------------------- */

/* Wait for tid's next stop; a signal on its way is kept in *pending (to
 * be delivered at the detach) and the thread resumed.  The stop's
 * status, or -ESRCH if it died. */
static int next_stop(pid_t tid, int *pending)
{
	for (;;) {
		int st;
		pid_t p = waitpid(tid, &st, __WALL);
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return -ESRCH;
		int sig = WSTOPSIG(st), event = (unsigned)st >> 16;
		if ((sig == SIGTRAP || sig == (SIGTRAP | 0x80)) && event == 0)
			return st;
		if (event == 0 && sig != SIGTRAP) {
			if (!*pending)
				*pending = sig;
			ptrace(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		/* a group-stop or an interrupt: on */
		ptrace(PTRACE_CONT, tid, 0, 0);
	}
}

/* Run one call in tid: registers w (from the exec stop) with the syscall
 * instruction at `at` (followed by an int3).  The call's result, or
 * -ESRCH. */
static long remote_call(pid_t tid, const struct user_regs_struct *saved, uint64_t at, long nr,
			const long *a, int *pending)
{
	struct user_regs_struct w = *saved;
	w.rip = at;
	w.rax = (uint64_t)nr;
	w.orig_rax = (uint64_t)-1;
	w.rdi = (uint64_t)a[0];
	w.rsi = (uint64_t)a[1];
	w.rdx = (uint64_t)a[2];
	w.r10 = (uint64_t)a[3];
	w.r8 = (uint64_t)a[4];
	w.r9 = (uint64_t)a[5];
	if (ptrace(PTRACE_SETREGS, tid, 0, &w) < 0 || ptrace(PTRACE_CONT, tid, 0, 0) < 0)
		return -errno;
	if (next_stop(tid, pending) < 0)
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, tid, 0, &w) < 0)
		return -errno;
	if (w.rip != at + 3)
		return -EFAULT; /* not our int3 */
	return (long)w.rax;
}

/* The descriptor of the shared file that thread tid's process kept open
 * across its exec (a runtime of an image before made it), or -1. */
static int kept_fd(const struct inproc *ip, pid_t tid)
{
	struct stat shm, st;
	char path[64];
	if (fstat(ip->shm_fd, &shm) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)tid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int found = -1;
	struct dirent *de;
	while (found < 0 && (de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end || fd < 0 || fd > INT_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%ld", (int)tid, fd);
		if (stat(path, &st) == 0 && st.st_dev == shm.st_dev && st.st_ino == shm.st_ino)
			found = (int)fd;
	}
	closedir(d);
	return found;
}

static uint64_t vdso_of(pid_t tid)
{
	char path[64];
	uint64_t v[2], base = 0;
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, v, sizeof(v)) == (ssize_t)sizeof(v) && v[0])
		if (v[0] == AT_SYSINFO_EHDR)
			base = v[1];
	close(fd);
	return base;
}

/* The runtime's segments mapped into the stopped thread tid, by calls it
 * makes from its entry at saved.rip (patched to "syscall; int3" for the
 * time, then restored).  0 or -errno, with the message in err. */
static long map_segments(pid_t tid, const struct ip_img *img, const struct user_regs_struct *saved,
			 int *pending, char *err, size_t errlen)
{
	uint64_t at = saved->rip;
	long e = 0;
	errno = 0;
	long word = ptrace(PTRACE_PEEKTEXT, tid, (void *)at, 0);
	if (errno) {
		e = -errno;
		snprintf(err, errlen, "cannot read its entry: %s", strerror(errno));
		return e;
	}
	/* syscall; int3 */
	long patched = (long)(((uint64_t)word & ~0xffffffull) | 0xcc050full);
	if (ptrace(PTRACE_POKETEXT, tid, (void *)at, (void *)patched) < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot write its entry: %s", strerror(errno));
		return e;
	}
	for (int i = 0; i < img->nseg && !e; i++) {
		const struct ip_seg *s = &img->seg[i];
		uint64_t a0 = pg_down(s->vaddr);
		long a[6] = { (long)a0, (long)(pg_up(s->vaddr + s->memsz) - a0), s->prot,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, (long)IP_MAGIC_OFF };
		long m = remote_call(tid, saved, at, SYS_mmap, a, pending);
		if (m != (long)a0) {
			e = m < 0 ? m : -EEXIST;
			snprintf(err, errlen, "cannot map the runtime at %#llx: %s",
				 (unsigned long long)a0, strerror((int)-e));
		}
	}
	ptrace(PTRACE_POKETEXT, tid, (void *)at, (void *)word);
	return e;
}

/* The runtime's contents and its parameters written through memfd (the
 * thread's /proc/PID/mem).  0 or -EIO, with the message in err. */
static long write_runtime(const struct vmr_rec *r, const struct inproc *ip, pid_t tid, int memfd,
			  char *err, size_t errlen)
{
	const struct ip_img *img = &ip->img;
	for (int i = 0; i < img->nseg; i++) {
		const struct ip_seg *s = &img->seg[i];
		if (pwrite(memfd, img->file + s->off, s->filesz, (off_t)s->vaddr) != (ssize_t)s->filesz) {
			snprintf(err, errlen, "cannot write the runtime: %s", strerror(errno));
			return -EIO;
		}
	}
	struct ip_params pa;
	memset(&pa, 0, sizeof(pa));
	pa.magic = IP_IMAGE_MAGIC;
	pa.vmrec_pid = getpid();
	pa.shm_fd = ip->shm_fd;
	pa.shm_kept = kept_fd(ip, tid);
	pa.shm_size = IP_SHM_SIZE;
	pa.vdso = vdso_of(tid);
	pa.flags = (r->touch == VMR_TOUCH_RESIDENT ? IP_F_RESIDENT : 0) |
		   (getenv("VMREC_INPROC_NOPATCH") ? IP_F_NOPATCH : 0) | (r->code ? IP_F_CODE : 0);
	pa.page_size = (uint32_t)r->page_size;
	for (int nr = 0; nr < IP_MAX_NR && nr < VMR_MAX_NR; nr++)
		pa.op_of_nr[nr] = r->sys.op_of_nr[nr];
	if (pwrite(memfd, &pa, sizeof(pa), (off_t)img->hdr.params) != (ssize_t)sizeof(pa)) {
		snprintf(err, errlen, "cannot write the runtime's parameters: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

/* The runtime's init(params) run in thread tid, on a stack below its own,
 * returning to the runtime's int3; then the registers of the exec back,
 * but for the thread block's GS the runtime set.  0 or -errno, with the
 * message in err. */
static long run_init(pid_t tid, const struct ip_img *img, int memfd,
		     struct user_regs_struct *saved, int *pending, char *err, size_t errlen)
{
	struct user_regs_struct w = *saved;
	long e;
	w.rsp = ((saved->rsp - 2048) & ~15ull) - 8;
	if (pwrite(memfd, &img->hdr.trap_ret, 8, (off_t)w.rsp) != 8) {
		snprintf(err, errlen, "cannot write its stack: %s", strerror(errno));
		return -EIO;
	}
	w.rip = img->hdr.init;
	w.rdi = img->hdr.params;
	w.orig_rax = (uint64_t)-1;
	w.rax = 0;
	if (ptrace(PTRACE_SETREGS, tid, 0, &w) < 0 || ptrace(PTRACE_CONT, tid, 0, 0) < 0 ||
	    next_stop(tid, pending) < 0 || ptrace(PTRACE_GETREGS, tid, 0, &w) < 0) {
		snprintf(err, errlen, "it died in the runtime's set-up");
		return -ESRCH;
	}
	if (w.rip != img->hdr.trap_ret + 1) {
		snprintf(err, errlen, "the runtime's set-up stopped at %#llx",
			 (unsigned long long)w.rip);
		return -EFAULT;
	}
	if ((long)w.rax < 0) {
		e = (long)w.rax;
		snprintf(err, errlen, "the runtime's set-up failed: %s", strerror((int)-e));
		return e;
	}
	saved->gs_base = w.gs_base;
	saved->gs = w.gs;
	if (ptrace(PTRACE_SETREGS, tid, 0, saved) < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot restore its registers: %s", strerror(errno));
		return e;
	}
	return 0;
}

int ip_inject(struct vmr_rec *r, struct inproc *ip, pid_t tid, int pending, char *err,
	      size_t errlen)
{
	const struct ip_img *img = &ip->img;
	struct user_regs_struct saved;
	int memfd = -1;
	long e = 0;

	/* The exec stop is inside execve, which sets rax as it returns:
	 * first to its syscall-exit stop, where registers are the thread's. */
	if (ptrace(PTRACE_SYSCALL, tid, 0, 0) < 0 || next_stop(tid, &pending) < 0) {
		e = -ESRCH;
		snprintf(err, errlen, "it died at its exec");
		goto out;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &saved) < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot read its registers: %s", strerror(errno));
		goto out;
	}
	if ((e = map_segments(tid, img, &saved, &pending, err, errlen)))
		goto out;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
	if ((memfd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!(e = write_runtime(r, ip, tid, memfd, err, errlen)))
		e = run_init(tid, img, memfd, &saved, &pending, err, errlen);
out:
	if (memfd >= 0)
		close(memfd);
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)pending);
	return (int)e;
}
