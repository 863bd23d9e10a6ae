/*
 * guest.c - the guest's /init under vmreplay --kernel (vm.h): the static
 * vmreplay itself, started by the kernel as PID 1 of an initramfs.  It
 * mounts what a replay needs, runs the replay as a child with the
 * host's command line, forwards its output over the results port
 * (ttyS1) as it comes, then the --json file and the exit status, and
 * powers off.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "vm_int.h"

#define HEARTBEAT_MS 2000
#define MAX_ARGS 256

static int port = -1; /* ttyS1 */

static void put(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

static void frame(char type, const void *body, size_t len)
{
	char h[32];
	if (port < 0)
		return;
	put(port, h, rp_frame_header(h, sizeof(h), type, len));
	put(port, body, len);
	put(port, "\n", 1);
}

static void frame_str(char type, const char *s)
{
	frame(type, s, strlen(s));
}

/* A line on the console too: the host shows the console of a guest that
 * died. */
static void say(const char *what)
{
	int fd = open("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		put(fd, "vmreplay-init: ", 15);
		put(fd, what, strlen(what));
		put(fd, "\n", 1);
		close(fd);
	}
}

static void power_off(void)
{
	if (port >= 0)
		tcdrain(port);
	sync();
	reboot(RB_POWER_OFF);
	for (;;) /* PID 1 must not return: the kernel would panic */
		pause();
}

/* The replay cannot run: say why (frame M, no X) and power off. */
static void give_up(const char *what)
{
	char m[256];
	snprintf(m, sizeof(m), "%s: %s", what, strerror(errno));
	say(m);
	frame_str('M', m);
	power_off();
}

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char *b = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (b && n < (size_t)st.st_size) {
		ssize_t r = read(fd, b + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (b)
		b[n] = 0;
	*len = n;
	return b;
}

/* Split NUL-separated strings into v (at most max - 1), NULL-terminated. */
static size_t split(char *b, size_t len, char **v, size_t max)
{
	size_t n = 0;
	for (char *p = b; p < b + len && n + 1 < max; p += strlen(p) + 1)
		v[n++] = p;
	v[n] = NULL;
	return n;
}

/* ---- the mm settings asked for ----------------------------------------------- */

/* Write each "PATH=VALUE" of the NUL-separated list (the host's
 * --vm-sysctl and the recorded settings) to its file; a frame W for
 * each that cannot be set, "PATH=VALUE: why". */
static void set_files(char *list, size_t len)
{
	for (char *p = list; p < list + len; p += strlen(p) + 1) {
		char *eq = strchr(p, '=');
		if (!eq || p[0] != '/')
			continue;
		*eq = 0;
		int fd = open(p, O_WRONLY | O_CLOEXEC), e = 0;
		size_t vl = strlen(eq + 1);
		if (fd < 0) {
			e = errno;
		} else {
			/* sysfs and procfs take the value in one write */
			ssize_t w = write(fd, eq + 1, vl);
			if (w < 0)
				e = errno;
			else if ((size_t)w != vl)
				e = EIO;
			if (close(fd) < 0 && !e)
				e = errno;
		}
		char m[600];
		if (e) {
			snprintf(m, sizeof(m), "%s=%s: %s", p, eq + 1, strerror(e));
			frame_str('W', m);
		}
		*eq = '=';
	}
}

/* ---- what else ran in the guest ------------------------------------------------- */

/* CPU time of every task now (ns; from schedstat where the kernel has
 * it, else from the clock ticks of stat), by pid. */
struct tasks {
	int *pid;
	uint64_t *ns;
	size_t n, cap;
};

/* The start of a procfs file (whose size stat does not give) into b;
 * its length, or -1. */
static ssize_t read_proc(const char *path, char *b, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, b, n - 1) : -1;
	if (fd >= 0)
		close(fd);
	b[r > 0 ? r : 0] = 0;
	return r;
}

static uint64_t task_ns(const char *pid)
{
	char path[64], b[512];
	snprintf(path, sizeof(path), "/proc/%s/schedstat", pid);
	if (read_proc(path, b, sizeof(b)) > 0)
		return strtoull(b, NULL, 10);
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (read_proc(path, b, sizeof(b)) <= 0)
		return 0;
	/* after "(comm)": state, then fields 4..; utime and stime are 14, 15 */
	char *q = strrchr(b, ')');
	unsigned long long ut = 0, st = 0;
	if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			 &st) != 2)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	return (ut + st) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
}

static void tasks_read(struct tasks *t)
{
	t->n = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (t->n == t->cap) {
			size_t nc = t->cap ? 2 * t->cap : 256;
			int *p = realloc(t->pid, nc * sizeof(*p));
			uint64_t *q = p ? realloc(t->ns, nc * sizeof(*q)) : NULL;
			if (p)
				t->pid = p;
			if (!q)
				break;
			t->ns = q;
			t->cap = nc;
		}
		t->pid[t->n] = atoi(de->d_name);
		t->ns[t->n++] = task_ns(de->d_name);
	}
	if (d)
		closedir(d);
}

/* Interrupt time of all CPUs now (ns): irq and softirq of /proc/stat. */
static uint64_t irq_ns(void)
{
	char s[512];
	unsigned long long v[7] = { 0 };
	if (read_proc("/proc/stat", s, sizeof(s)) <= 0)
		return 0;
	int k = sscanf(s, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		       &v[4], &v[5], &v[6]);
	long hz = sysconf(_SC_CLK_TCK);
	return k == 7 ? (v[5] + v[6]) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100)) : 0;
}

/* The CPU time the tasks of before that still run took since (the
 * kernel threads, this /init), plus the interrupts': what else ran in
 * the guest during the replay, whose tasks all came later. */
static uint64_t others_ns(const struct tasks *before, uint64_t irq_before)
{
	struct tasks after = { 0 };
	uint64_t sum = 0;
	tasks_read(&after);
	for (size_t i = 0; i < after.n; i++)
		for (size_t j = 0; j < before->n; j++)
			if (before->pid[j] == after.pid[i]) {
				if (after.ns[i] > before->ns[j])
					sum += after.ns[i] - before->ns[j];
				break;
			}
	free(after.pid);
	free(after.ns);
	uint64_t irq = irq_ns();
	return sum + (irq > irq_before ? irq - irq_before : 0);
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int rp_guest_is_init(int argc, char **argv)
{
	return getpid() == 1 && argc >= 1 && strcmp(argv[0], "/init") == 0;
}

/* The results port (the second serial line) opened raw, and the first
 * frames: the protocol's version, the kernel release, the CPU count. */
static void open_port(void)
{
	/* devtmpfs where the kernel has it; else the archive's own nodes. */
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	port = open("/dev/ttyS1", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (port < 0) {
		say("cannot open the results port /dev/ttyS1");
		power_off();
	}
	struct termios tio;
	if (tcgetattr(port, &tio) == 0) {
		cfmakeraw(&tio); /* no "\n" -> "\r\n", no echo */
		tcsetattr(port, TCSANOW, &tio);
	}
	frame_str('H', "1");
	struct utsname u;
	frame_str('U', uname(&u) == 0 ? u.release : "");
	char nb[32];
	snprintf(nb, sizeof(nb), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	frame_str('N', nb);
}

/* /proc, /sys (and debugfs where there is one) mounted, and the host's
 * settings for this guest (sysctl: the recording's mm settings) set. */
static void set_up_system(void)
{
	if (mount("proc", "/proc", "proc", 0, NULL) < 0)
		give_up("mount /proc");
	if (mount("sysfs", "/sys", "sysfs", 0, NULL) < 0)
		give_up("mount /sys");
	/* the fault-around size is there (kernels with debugfs) */
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	chmod("/tmp", 01777);
	size_t slen;
	char *sysctl = slurp(RP_VM_DIR "/sysctl", &slen);
	if (sysctl)
		set_files(sysctl, slen);
}

/* The replay's command line and environment, as the host gave them. */
static char *replay_argv[MAX_ARGS + 2], *replay_envv[16];

/* The host's arguments, environment and working directory for the
 * replay, read (into replay_argv and replay_envv) and gone into. */
static void read_invocation(void)
{
	size_t alen, clen, elen;
	char *args = slurp(RP_VM_DIR "/args", &alen), *cwd = slurp(RP_VM_DIR "/cwd", &clen);
	char *env = slurp(RP_VM_DIR "/env", &elen);
	if (!args || !cwd || !env)
		give_up("read " RP_VM_DIR);
	replay_argv[0] = "vmreplay";
	split(args, alen, replay_argv + 1, MAX_ARGS);
	split(env, elen, replay_envv, sizeof(replay_envv) / sizeof(replay_envv[0]));
	if (chdir(cwd) < 0)
		give_up("chdir to the host's working directory");
}

/* The replay started as an ordinary vmreplay (read_invocation's), its
 * standard output and error into po[1] and pe[1].  Returns its pid. */
static pid_t start_replay(const int po[2], const int pe[2])
{
	pid_t pid = fork();
	if (pid < 0)
		give_up("fork");
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(126);
		clearenv();
		setenv("PATH", "/", 1);
		setenv("HOME", "/", 1);
		setenv("TMPDIR", "/tmp", 1);
		for (size_t i = 0; replay_envv[i]; i++)
			putenv(replay_envv[i]);
		execv("/init", replay_argv); /* not PID 1: an ordinary vmreplay */
		_exit(127);
	}
	return pid;
}

/* The replay's output (fd out) and errors (fd err) framed onto the port
 * until both end, with a heartbeat frame every HEARTBEAT_MS. */
static void relay(int out, int err)
{
	struct pollfd pf[2] = { { out, POLLIN, 0 }, { err, POLLIN, 0 } };
	int open_fds = 2;
	uint64_t beat = now_ms();
	static char buf[16384];
	while (open_fds) {
		int r = poll(pf, 2, HEARTBEAT_MS);
		if (now_ms() - beat >= HEARTBEAT_MS) {
			beat = now_ms();
			frame_str('T', "");
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(pf[i].fd, buf, sizeof(buf));
			if (n > 0) {
				frame(i ? 'E' : 'O', buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
			}
		}
	}
}

/* The last frames: what else ran meanwhile (since `before`, irq0 and t0)
 * against what the guest's CPUs could run, the results file, and the
 * replay's exit code. */
static void report_end(int code, const struct tasks *before, uint64_t irq0, uint64_t t0)
{
	uint64_t other = others_ns(before, irq0), el = now_ms() - t0;
	struct rusage ru;
	uint64_t rcpu = 0;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		rcpu = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
		       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
	char q[200];
	snprintf(q, sizeof(q), "others_ns=%" PRIu64 " elapsed_ns=%" PRIu64 " cpus=%ld replay_cpu_ns=%"
		 PRIu64, other, el * (uint64_t)1000000, sysconf(_SC_NPROCESSORS_ONLN), rcpu);
	frame_str('Q', q);
	size_t jlen;
	char *json = slurp(RP_VM_GUEST_JSON, &jlen);
	if (json)
		frame('J', json, jlen);
	char nb[32];
	snprintf(nb, sizeof(nb), "%d", code);
	frame_str('X', nb);
}

int rp_guest_main(void)
{
	open_port();
	set_up_system();
	read_invocation();
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		give_up("pipe");
	static struct tasks before;
	tasks_read(&before);
	uint64_t irq0 = irq_ns(), t0 = now_ms();
	pid_t pid = start_replay(po, pe);
	close(po[1]);
	close(pe[1]);
	relay(po[0], pe[0]);
	/* PID 1 adopts every orphan: reap until the replay itself. */
	int st = 0;
	pid_t w;
	while ((w = wait(&st)) != pid)
		if (w < 0 && errno != EINTR)
			break;
	report_end(w != pid ? 127 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), &before,
		   irq0, t0);
	power_off();
	return 0;
}
