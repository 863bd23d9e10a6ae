/*
 * vm.c - vmreplay --kernel, the host side (vm.h): the initramfs, qemu with
 * its two serial ports, the deadlines, and what a guest that died said.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "vm_int.h"

/* The guest must say hello (its /init is running) within this long of
 * qemu's start: KVM boots in about a second, TCG in a few.  Where KVM does
 * not work (nested in some virtual machines) the boot hangs silently in
 * the firmware: a kernel that has printed nothing (its banner comes first)
 * after KVM_LIFE_S is taken for that. */
#define HELLO_KVM_S 15
#define HELLO_TCG_S 120
#define KVM_LIFE_S 5
/* Under TCG the banner comes after a second or two: a kernel silent
 * this long does not boot (a damaged image that hangs early). */
#define TCG_LIFE_S 30
/* After the hello, a guest silent this long (it sends a heartbeat every
 * 2 s) is taken for hung. */
#define SILENCE_S 60
/* After the exit status, qemu has this long to power off. */
#define POWEROFF_S 10

static const char *accel_name(int a)
{
	return a == RP_VM_KVM ? "kvm" : "tcg";
}

static void size_text(char *buf, size_t n, uint64_t v)
{
	if (v >= 1ull << 30 && !(v & ((1ull << 30) - 1)))
		snprintf(buf, n, "%" PRIu64 "G", v >> 30);
	else
		snprintf(buf, n, "%" PRIu64 "M", (v + (1u << 20) - 1) >> 20);
}

/* ---- the initramfs ------------------------------------------------------------ */

static int memfile(void)
{
	int fd = memfd_create("vmreplay-initramfs", MFD_CLOEXEC);
	if (fd < 0) {
		const char *d = getenv("TMPDIR");
		fd = open(d && *d ? d : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	}
	return fd;
}

/* The NUL-separated strings of v[0..n). */
static void put_list(struct rp_cpio *cp, const char *path, char *const *v, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	char *b = malloc(len ? len : 1), *p = b;
	if (!b) {
		if (!cp->err)
			cp->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]) + 1;
		memcpy(p, v[i], l);
		p += l;
	}
	rp_cpio_data(cp, path, 0644, b, len);
	free(b);
}

/* The guest's tree: /init, devices, mount points, the trace at gpath, the
 * replay's command line (argv[1..], the trace named tname), cwd, env. */
static int initramfs(const struct rp_vm_config *c, const char *cwd, const char *gpath,
		     const char *tname, int fd, uint64_t *size, char *msg, size_t msglen)
{
	struct rp_cpio cp;
	rp_cpio_init(&cp, fd);
	static const char *const dirs[] = { "dev", "proc", "sys", "tmp", RP_VM_DIR };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		rp_cpio_dir(&cp, dirs[i]);
	/* Devices as entries: no mknod, no root needed; devtmpfs, where the
	 * kernel has it, replaces them. */
	rp_cpio_chardev(&cp, "dev/console", 5, 1, 0600);
	rp_cpio_chardev(&cp, "dev/ttyS0", 4, 64, 0600);
	rp_cpio_chardev(&cp, "dev/ttyS1", 4, 65, 0600);
	rp_cpio_chardev(&cp, "dev/null", 1, 3, 0666);
	rp_cpio_file(&cp, "init", 0755, c->guest);
	if (cp.err) {
		rp_cpio_finish(&cp);
		return vmt_errf(msg, msglen, cp.err, "'%s': %s", c->guest, strerror(-cp.err));
	}
	rp_cpio_parents(&cp, cwd);
	rp_cpio_dir(&cp, cwd);
	rp_cpio_parents(&cp, gpath);
	rp_cpio_file(&cp, gpath, 0644, c->trace);
	if (cp.err) {
		rp_cpio_finish(&cp);
		return vmt_errf(msg, msglen, cp.err, "'%s': %s", c->trace, strerror(-cp.err));
	}
	size_t argc = 0;
	while (c->argv[argc])
		argc++;
	char **args = calloc(argc + 1, sizeof(*args));
	if (!args) {
		rp_cpio_finish(&cp);
		return vmt_errf(msg, msglen, -ENOMEM, "out of memory");
	}
	for (size_t i = 1; i < argc; i++)
		args[i - 1] = i + 1 == argc ? (char *)tname : c->argv[i];
	put_list(&cp, RP_VM_DIR "/args", args, argc ? argc - 1 : 0);
	free(args);
	rp_cpio_data(&cp, RP_VM_DIR "/cwd", 0644, cwd, strlen(cwd));
	char env[256] = "";
	char *envp[1] = { env };
	if (c->clock)
		snprintf(env, sizeof(env), "VMREPLAY_CLOCK=%s", c->clock);
	put_list(&cp, RP_VM_DIR "/env", envp, c->clock ? 1 : 0);
	size_t ns = 0;
	while (c->sysctl && c->sysctl[ns])
		ns++;
	put_list(&cp, RP_VM_DIR "/sysctl", c->sysctl, ns);
	*size = cp.off;
	int rc = rp_cpio_finish(&cp);
	if (rc < 0)
		return vmt_errf(msg, msglen, rc, "cannot write the initramfs: %s", strerror(-rc));
	*size = cp.off;
	return 0;
}

/* Where the trace goes in the guest, and the name the guest replay gives
 * it: the name as given when it leads there in the guest's tree (built
 * from the host's absolute paths, so the reports name the trace as
 * here), else its absolute path. */
static int trace_place(const char *trace, const char *cwd, char *gpath, size_t glen,
		       const char **tname, char *msg, size_t msglen)
{
	struct stat a, b;
	if (stat(trace, &a) < 0)
		return vmt_errf(msg, msglen, -errno, "'%s': %s", trace, strerror(errno));
	if (!S_ISREG(a.st_mode))
		return vmt_errf(msg, msglen, -EINVAL, "'%s': not a regular file", trace);
	*tname = trace;
	int plain = strstr(trace, "/./") == NULL && strstr(trace, "/../") == NULL &&
		    strncmp(trace, "./", 2) != 0 && strncmp(trace, "../", 3) != 0;
	if (rp_vm_guest_path(cwd, trace, gpath, glen) < 0)
		return vmt_errf(msg, msglen, -ENAMETOOLONG,
				"'%s': %s", trace, strerror(ENAMETOOLONG));
	if (!plain || stat(gpath, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		/* Symbolic links or dots on the way: the real path. */
		char *real = realpath(trace, NULL);
		if (!real)
			return vmt_errf(msg, msglen, -errno, "'%s': %s", trace, strerror(errno));
		snprintf(gpath, glen, "%s", real);
		free(real);
		*tname = gpath;
	}
	static const char *const taken[] = { RP_VM_DIR "/", "/dev/", "/proc/", "/sys/" };
	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++)
		if (strncmp(gpath, taken[i], strlen(taken[i])) == 0 || strcmp(gpath, "/init") == 0)
			return vmt_errf(msg, msglen, -EINVAL,
					"'%s': the guest needs the path '%s' for"
					" itself: copy the trace elsewhere", trace, gpath);
	return 0;
}

/* ---- one boot ----------------------------------------------------------------- */

enum { BOOT_OK, BOOT_NOHELLO, BOOT_FAILED };

struct boot {
	const struct rp_vm_config *c;
	struct rp_vm_result *r;
	const char *qemu;
	int accel;
	uint64_t start, last_frame;
	uint64_t deadline; /* of all attempts (--vm-timeout) */
	int hello, up, done;
	int console_seen; /* the kernel (or qemu) has printed something */
	int got_release, got_cpus;
	char guest_msg[256];
	/* The console, line by line: what explains a guest that died. */
	char line[512];
	size_t line_len;
	char panic[256], oom[256], qemu_err[256], last[256];
};

static void event(struct boot *b, int what)
{
	if (!b->c->event)
		return;
	struct rp_vm_status s = { what, b->accel, vmt_now_ns() - b->start, b->r->release,
				  b->r->cpus };
	b->c->event(b->c->event_arg, &s);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the program sees its own write errors later */
		p += w;
		n -= (size_t)w;
	}
}

static int on_frame(void *arg, char type, const char *body, size_t len)
{
	struct boot *b = arg;
	b->last_frame = vmt_now_ns();
	switch (type) {
	case 'H':
		if (!b->hello)
			b->r->boot_ns = b->last_frame - b->start;
		b->hello = 1;
		break;
	case 'U':
		snprintf(b->r->release, sizeof(b->r->release), "%.*s", (int)len, body);
		b->got_release = 1;
		break;
	case 'N':
		b->r->cpus = (unsigned)strtoul(body, NULL, 10);
		b->got_cpus = 1;
		break;
	case 'O':
	case 'E':
		event(b, RP_VM_OUTPUT);
		write_all(type == 'O' ? b->c->out_fd : b->c->err_fd, body, len);
		break;
	case 'M':
		snprintf(b->guest_msg, sizeof(b->guest_msg), "%.*s", (int)len, body);
		break;
	case 'W': {
		size_t u = strlen(b->r->unset);
		snprintf(b->r->unset + u, sizeof(b->r->unset) - u, "%s%.*s", u ? "; " : "",
			 (int)(len < 300 ? len : 300), body);
		break;
	}
	case 'Q': {
		char q[256];
		unsigned long long o, e, c, r;
		snprintf(q, sizeof(q), "%.*s", (int)len, body);
		if (sscanf(q, "others_ns=%llu elapsed_ns=%llu cpus=%llu replay_cpu_ns=%llu", &o, &e,
			   &c, &r) == 4) {
			b->r->have_noise = 1;
			b->r->others_ns = o;
			b->r->elapsed_ns = e;
			b->r->noise_cpus = c < 4096 ? (unsigned)c : 0;
			b->r->replay_cpu_ns = r;
		}
		break;
	}
	case 'J':
		free(b->r->json);
		b->r->json = malloc(len + 1);
		if (!b->r->json)
			return -ENOMEM;
		memcpy(b->r->json, body, len + 1);
		b->r->json_len = len;
		break;
	case 'X':
		b->r->status = atoi(body);
		b->done = 1;
		break;
	default: /* 'T', and what a later guest may add */
		break;
	}
	if (b->got_release && b->got_cpus && !b->up) {
		b->up = 1;
		event(b, RP_VM_UP);
	}
	return 0;
}

static void console_line(struct boot *b)
{
	char *l = b->line;
	b->line[b->line_len] = 0;
	b->line_len = 0;
	l[strcspn(l, "\r")] = 0;
	/* "[    1.234567] message": the message. */
	if (l[0] == '[') {
		char *e = strstr(l, "] ");
		if (e && e - l < 20)
			l = e + 2;
	}
	if (!*l)
		return;
	const char *base = strrchr(b->qemu, '/') ? strrchr(b->qemu, '/') + 1 : b->qemu;
	if (!b->panic[0] && strstr(l, "Kernel panic - not syncing"))
		snprintf(b->panic, sizeof(b->panic), "%.200s", strstr(l, "Kernel panic"));
	else if (!b->oom[0] && (strstr(l, "Out of memory: Killed process") ||
				strstr(l, "Out of memory and no killable processes")))
		snprintf(b->oom, sizeof(b->oom), "%.200s", strstr(l, "Out of memory"));
	else if (!b->qemu_err[0] && strncmp(l, base, strlen(base)) == 0 && l[strlen(base)] == ':')
		snprintf(b->qemu_err, sizeof(b->qemu_err), "%.200s", l);
	if (strncmp(l, "---[ end Kernel panic", 21) != 0)
		snprintf(b->last, sizeof(b->last), "%.200s", l);
}

static void on_console(struct boot *b, const char *p, size_t n)
{
	b->console_seen = 1;
	if (b->c->console_fd >= 0)
		write_all(b->c->console_fd, p, n);
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			console_line(b);
		} else if (b->line_len + 1 < sizeof(b->line)) {
			b->line[b->line_len++] = p[i];
		}
	}
}

/* Why the guest ended without its results, from what it and the console
 * said. */
static int died(struct boot *b, const char *how, int with_last, char *msg, size_t msglen)
{
	char mem[32];
	size_text(mem, sizeof(mem), b->c->memory);
	if (b->oom[0])
		return vmt_errf(msg, msglen, -EIO,
				"the guest ran out of memory (%s; give it more with"
				" --vm-memory): %s", mem, b->oom);
	if (b->panic[0])
		return vmt_errf(msg, msglen, -EIO, "the guest kernel panicked: %s", b->panic);
	if (b->guest_msg[0])
		return vmt_errf(msg, msglen, -EIO, "the guest could not run the replay: %s",
				b->guest_msg);
	if (b->qemu_err[0])
		return vmt_errf(msg, msglen, -EIO, "qemu failed: %s", b->qemu_err);
	if (b->last[0] && with_last)
		return vmt_errf(msg, msglen, -EIO, "%s; its console's last line: %s", how, b->last);
	return vmt_errf(msg, msglen, -EIO, "%s", how);
}

static void kill_qemu(pid_t pid)
{
	kill(-pid, SIGKILL); /* its session, whatever it forked */
	kill(pid, SIGKILL);
}

static pid_t spawn(char **argv, int initrd, int res_w, int con_w, char *msg, size_t msglen)
{
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0)
		return vmt_errf(msg, msglen, -errno, "pipe: %s", strerror(errno));
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(ep[0]), close(ep[1]);
		return vmt_errf(msg, msglen, -e, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		/* Its own session, so that the kill reaches all of it; dead with
		 * vmreplay, however vmreplay ends. */
		setsid();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int nul = open("/dev/null", O_RDONLY);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(con_w, 1) < 0 || dup2(con_w, 2) < 0 ||
		    fcntl(initrd, F_SETFD, 0) < 0 || fcntl(res_w, F_SETFD, 0) < 0) {
			int e = errno;
			ssize_t w = write(ep[1], &e, sizeof(e));
			(void)w;
			_exit(127);
		}
		execv(argv[0], argv);
		int e = errno;
		ssize_t w = write(ep[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(ep[1]);
	int e = 0;
	ssize_t n;
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		return vmt_errf(msg, msglen, -e, "cannot run '%s': %s", argv[0], strerror(e));
	}
	return pid;
}

/* Start qemu on initrd, its console and results ports on two pipes whose
 * read ends are *con_r and *res_r; its pid, or -1 with the message. */
static pid_t start_qemu(struct boot *b, int initrd, int *con_r, int *res_r, char *msg,
			size_t msglen)
{
	const struct rp_vm_config *c = b->c;
	int con[2] = { -1, -1 }, res[2] = { -1, -1 };
	if (pipe2(con, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0) {
		int e = errno;
		if (con[0] >= 0)
			close(con[0]), close(con[1]);
		vmt_errf(msg, msglen, -e, "pipe: %s", strerror(e));
		return -1;
	}
	char smp[16], mem[32], initrd_path[32], res_opt[64], append[1200];
	snprintf(smp, sizeof(smp), "%u", c->cpus);
	snprintf(mem, sizeof(mem), "%" PRIu64 "M", c->memory >> 20);
	snprintf(initrd_path, sizeof(initrd_path), "/dev/fd/%d", initrd);
	snprintf(res_opt, sizeof(res_opt), "file,id=res,path=/dev/fd/%d", res[1]);
	/* loglevel=6: the kernel's notices (its banner first, some 20 lines)
	 * but not its chatter.  Under TCG with several CPUs the TSC fails the
	 * kernel's checks and it would keep time with the HPET, twice as slow
	 * to read. */
	snprintf(append, sizeof(append), "console=ttyS0 loglevel=6 panic=-1 rdinit=/init%s%s%.1000s",
		 b->accel == RP_VM_TCG && c->cpus > 1 ? " tsc=reliable" : "",
		 c->cmdline && *c->cmdline ? " " : "", c->cmdline ? c->cmdline : "");
	char *argv[] = {
		(char *)b->qemu, "-nodefaults", "-no-user-config",
		"-accel", (char *)accel_name(b->accel), "-cpu", b->accel == RP_VM_KVM ? "host" : "max",
		"-smp", smp, "-m", mem, "-kernel", (char *)c->image, "-initrd", initrd_path,
		"-append", append, "-display", "none", "-monitor", "none", "-no-reboot",
		"-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con",
		"-chardev", res_opt, "-serial", "chardev:res", NULL,
	};
	b->start = b->last_frame = vmt_now_ns();
	pid_t pid = spawn(argv, initrd, res[1], con[1], msg, msglen);
	close(con[1]);
	close(res[1]);
	if (pid < 0) {
		close(con[0]), close(res[0]);
		return -1;
	}
	*con_r = con[0];
	*res_r = res[0];
	return pid;
}

/* Read what poll found on the console (pf[0]) and the results port
 * (pf[1]), closing a port at its end; BOOT_FAILED on results that are
 * not, else -1. */
static int read_ports(struct boot *b, struct pollfd pf[2], int *open_fds,
		      struct rp_frame_reader *fr, char *msg, size_t msglen)
{
	char buf[65536];
	for (int i = 0; i < 2; i++) {
		if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		ssize_t n = read(pf[i].fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			pf[i].fd = -1;
			(*open_fds)--;
			continue;
		}
		if (i == 0) {
			on_console(b, buf, (size_t)n);
			continue;
		}
		int rc = rp_frame_feed(fr, buf, (size_t)n, on_frame, b);
		if (rc < 0) {
			vmt_errf(msg, msglen, rc, rc == -ENOMEM ? "out of memory"
				 : "the guest's results port sent bytes that are not"
				 " results (is IMAGE's second serial port ttyS1?)");
			return BOOT_FAILED;
		}
	}
	return -1;
}

/* The deadlines of a guest that has not sent its exit status yet, at
 * now: the outcome of a missed one, with the message, else -1. */
static int check_deadlines(struct boot *b, uint64_t now, uint64_t hello_limit, char *msg,
			   size_t msglen)
{
	const struct rp_vm_config *c = b->c;
	uint64_t t = now - b->start;
	char m[160];
	if (now > b->deadline) {
		snprintf(m, sizeof(m), "the guest did not finish within %u s (--vm-timeout);"
			 " it was ended", c->timeout_s);
		died(b, m, 0, msg, msglen);
		return BOOT_FAILED;
	}
	if (b->accel == RP_VM_KVM && !b->console_seen && !b->hello &&
	    t > KVM_LIFE_S * 1000000000ull) {
		vmt_errf(msg, msglen, -ETIMEDOUT, "the guest's kernel did not start within %d s"
			 " (kvm)", KVM_LIFE_S);
		return BOOT_NOHELLO;
	}
	if (b->accel == RP_VM_TCG && !b->console_seen && !b->hello &&
	    t > TCG_LIFE_S * 1000000000ull) {
		vmt_errf(msg, msglen, -ETIMEDOUT,
			 "the guest's kernel printed nothing in %d s (tcg):"
			 " is '%s' a kernel that boots?", TCG_LIFE_S, c->image);
		return BOOT_FAILED;
	}
	if (!b->hello && t > hello_limit) {
		snprintf(m, sizeof(m), "the guest did not start within %" PRIu64 " s (%s)",
			 hello_limit / 1000000000u, accel_name(b->accel));
		died(b, m, 1, msg, msglen);
		return BOOT_NOHELLO;
	}
	if (b->hello && now - b->last_frame > SILENCE_S * 1000000000ull) {
		snprintf(m, sizeof(m), "the guest stopped responding (nothing for %d s: its"
			 " kernel hung?); it was ended", SILENCE_S);
		died(b, m, 0, msg, msglen);
		return BOOT_FAILED;
	}
	return -1;
}

/* Follow the guest on its two ports until it has sent its exit status
 * and powered off (or POWEROFF_S passed), both ports closed, or a
 * deadline passed: the outcome then, or -1 when it ended by itself. */
static int watch_guest(struct boot *b, int con_r, int res_r, char *msg, size_t msglen)
{
	struct rp_frame_reader fr = { 0 };
	struct pollfd pf[2] = { { con_r, POLLIN, 0 }, { res_r, POLLIN, 0 } };
	uint64_t hello_limit = (b->accel == RP_VM_KVM ? HELLO_KVM_S : HELLO_TCG_S) * 1000000000ull;
	uint64_t done_at = 0, last_event = 0;
	int outcome = -1, open_fds = 2;
	while (open_fds && outcome < 0) {
		int pr = poll(pf, 2, 250);
		if (pr < 0 && errno != EINTR) {
			vmt_errf(msg, msglen, -errno, "poll: %s", strerror(errno));
			outcome = BOOT_FAILED;
			break;
		}
		if (pr > 0)
			outcome = read_ports(b, pf, &open_fds, &fr, msg, msglen);
		uint64_t now = vmt_now_ns();
		if (outcome >= 0)
			break;
		if (b->done && !done_at)
			done_at = now;
		if (done_at) {
			if (now - done_at > POWEROFF_S * 1000000000ull)
				break; /* the results are in; qemu is killed below */
			continue;
		}
		if (!b->up && now - last_event >= 250000000u) {
			last_event = now;
			event(b, RP_VM_BOOTING);
		}
		outcome = check_deadlines(b, now, hello_limit, msg, msglen);
	}
	rp_frame_reader_free(&fr);
	return outcome;
}

/* The outcome of a guest that ended by itself, with qemu's wait status
 * st: the results, or why there are none. */
static int ended_outcome(struct boot *b, int st, char *msg, size_t msglen)
{
	if (b->done)
		return BOOT_OK;
	char m[400], how[64];
	if (WIFEXITED(st))
		snprintf(how, sizeof(how), "qemu exited with status %d", WEXITSTATUS(st));
	else
		snprintf(how, sizeof(how), "qemu was killed by signal %d", WTERMSIG(st));
	if (!b->console_seen && !b->hello)
		snprintf(m, sizeof(m), "the guest ended before its kernel printed anything (%s):"
			 " is '%.200s' a kernel that boots?", how, b->c->image);
	else
		snprintf(m, sizeof(m), "the guest ended without results (%s)", how);
	died(b, m, 1, msg, msglen);
	return b->hello ? BOOT_FAILED : BOOT_NOHELLO;
}

/* One boot of the guest with b->accel: BOOT_OK with the results in b->r,
 * BOOT_NOHELLO when it never said hello (KVM may be what failed), or
 * BOOT_FAILED; the message in msg. */
static int boot(struct boot *b, int initrd, char *msg, size_t msglen)
{
	int con_r, res_r;
	pid_t pid = start_qemu(b, initrd, &con_r, &res_r, msg, msglen);
	if (pid < 0)
		return BOOT_FAILED;
	int outcome = watch_guest(b, con_r, res_r, msg, msglen);
	if (b->line_len)
		console_line(b);
	kill_qemu(pid);
	int st = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	b->r->qemu_cpu_ns += ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
				     1000000000ull +
			     ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
	close(con_r);
	close(res_r);
	b->r->total_ns = vmt_now_ns() - b->start;
	if (outcome >= 0)
		return outcome;
	return ended_outcome(b, st, msg, msglen);
}

/* ---- the whole ------------------------------------------------------------------- */

int rp_vm_run(const struct rp_vm_config *c, struct rp_vm_result *r, char *msg, size_t msglen)
{
	char qemu[4096], cwd[4096], gpath[4096];
	const char *tname = c->trace;
	struct rp_image_info img;
	memset(r, 0, sizeof(*r));
	r->input_error = 1;
	int rc = rp_image_check(c->image, &img, msg, msglen);
	if (rc < 0) {
		char why[256];
		snprintf(why, sizeof(why), "%s", msg);
		return vmt_errf(msg, msglen, rc, "--kernel: '%s': %s", c->image, why);
	}
	snprintf(r->version, sizeof(r->version), "%s", img.version);
	if (!getcwd(cwd, sizeof(cwd)))
		return vmt_errf(msg, msglen, -errno, "getcwd: %s", strerror(errno));
	if ((rc = trace_place(c->trace, cwd, gpath, sizeof(gpath), &tname, msg, msglen)) < 0)
		return rc;
	r->input_error = 0;

	int fd = memfile();
	if (fd < 0)
		return vmt_errf(msg, msglen, -errno,
				"cannot make the initramfs: %s", strerror(errno));
	uint64_t size = 0;
	if ((rc = initramfs(c, cwd, gpath, tname, fd, &size, msg, msglen)) < 0) {
		close(fd);
		return rc;
	}
	/* The kernel decompresses itself at pref_address and needs init_size
	 * there; the initramfs is in memory twice while it unpacks; the
	 * replay needs room of its own. */
	uint64_t need = img.pref_address + img.init_size + 2 * size + (32ull << 20);
	if (c->memory < need) {
		char have[32], want[32];
		size_text(have, sizeof(have), c->memory);
		size_text(want, sizeof(want), need);
		close(fd);
		r->input_error = 1;
		return vmt_errf(msg, msglen, -EINVAL,
				"--vm-memory=%s is too little for this kernel and"
				" a %.1f MiB initramfs: give at least %s", have, (double)size / (1 << 20),
				want);
	}
	/* What is wrong with the command line first, then what this machine
	 * lacks. */
	if ((rc = rp_vm_find_qemu(c->qemu, qemu, sizeof(qemu), msg, msglen)) < 0) {
		close(fd);
		return rc;
	}

	uint64_t deadline = vmt_now_ns() + (uint64_t)c->timeout_s * 1000000000ull;
	snprintf(r->qemu, sizeof(r->qemu), "%.500s", qemu);
	int accel = c->accel == RP_VM_KVM ? RP_VM_KVM : RP_VM_TCG;
	if (c->accel == RP_VM_AUTO || c->accel == RP_VM_KVM) {
		int kfd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		if (kfd >= 0) {
			close(kfd);
			accel = RP_VM_KVM;
		} else if (c->accel == RP_VM_KVM) {
			int e = errno;
			close(fd);
			return vmt_errf(msg, msglen, -e, "--vm-accel=kvm: cannot open /dev/kvm: %s",
					strerror(e));
		}
	}
	for (;;) {
		struct boot b = { .c = c, .r = r, .qemu = qemu, .accel = accel, .deadline = deadline };
		int out = boot(&b, fd, msg, msglen);
		if (out == BOOT_OK) {
			r->accel = accel;
			break;
		}
		if (out == BOOT_NOHELLO && accel == RP_VM_KVM && c->accel == RP_VM_AUTO) {
			if (c->event) {
				struct rp_vm_status s = { RP_VM_RETRY, accel, r->total_ns, NULL, 0 };
				c->event(c->event_arg, &s);
			}
			accel = RP_VM_TCG;
			free(r->json);
			r->json = NULL;
			continue;
		}
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

int rp_vm_image(const char *image, char *version, size_t vlen, uint64_t *need, char *msg,
		size_t msglen)
{
	struct rp_image_info img;
	int rc = rp_image_check(image, &img, msg, msglen);
	if (rc < 0) {
		char why[256];
		snprintf(why, sizeof(why), "%s", msg);
		return vmt_errf(msg, msglen, rc, "--kernel: '%s': %s", image, why);
	}
	snprintf(version, vlen, "%s", img.version);
	*need = img.pref_address + img.init_size;
	return 0;
}

void rp_vm_result_free(struct rp_vm_result *r)
{
	free(r->json);
	r->json = NULL;
}

int rp_vm_json(const struct rp_vm_config *c, const struct rp_vm_result *r, struct vmt_buf *out)
{
	vmt_buf_reset(out);
	size_t s = 0, e = r->json_len;
	while (s < e && strchr(" \t\r\n", r->json[s]))
		s++;
	while (e > s && strchr(" \t\r\n", r->json[e - 1]))
		e--;
	if (e - s < 2 || r->json[s] != '{' || r->json[e - 1] != '}')
		return -EINVAL;
	size_t body = e - 1;
	while (body > s && strchr(" \t\r\n", r->json[body - 1]))
		body--;
	vmt_buf_printf(out, "%.*s%s\"vm\":{\"image\":", (int)(body - s), r->json + s,
		       body - s > 1 ? "," : "");
	vmt_buf_json_str(out, c->image);
	vmt_buf_puts(out, ",\"image_version\":");
	vmt_buf_json_str(out, r->version);
	vmt_buf_printf(out, ",\"accel\":\"%s\",\"cpus\":%u,\"memory_bytes\":%" PRIu64 ",\"qemu\":",
		       accel_name(r->accel), c->cpus, c->memory);
	vmt_buf_json_str(out, r->qemu);
	vmt_buf_printf(out, ",\"boot_ns\":%" PRIu64 ",\"cmdline\":", r->boot_ns);
	vmt_buf_json_str(out, c->cmdline ? c->cmdline : "");
	vmt_buf_puts(out, ",\"sysctl\":[");
	for (size_t i = 0; c->sysctl && c->sysctl[i]; i++) {
		if (i)
			vmt_buf_puts(out, ",");
		vmt_buf_json_str(out, c->sysctl[i]);
	}
	vmt_buf_puts(out, "],\"mm_unset\":");
	if (r->unset[0])
		vmt_buf_json_str(out, r->unset);
	else
		vmt_buf_puts(out, "null");
	vmt_buf_puts(out, ",\"noise\":");
	uint64_t cap = r->elapsed_ns * (r->noise_cpus ? r->noise_cpus : 1);
	if (r->have_noise && cap)
		vmt_buf_printf(out, "{\"others_pct\":%.3f,\"others_ns\":%" PRIu64 ",\"elapsed_ns\":%"
			       PRIu64 ",\"cpus\":%u,\"replay_cpu_ns\":%" PRIu64 "}",
			       (double)r->others_ns * 100 / (double)cap, r->others_ns, r->elapsed_ns,
			       r->noise_cpus, r->replay_cpu_ns);
	else
		vmt_buf_puts(out, "null");
	vmt_buf_puts(out, "}}\n");
	return out->oom ? -ENOMEM : 0;
}
