/*
 * guest.c - the guest's /init under vmreplay --kernel (vm.h): the static
 * vmreplay itself, started by the kernel as PID 1 of an initramfs.  It
 * mounts what a replay needs, runs the replay as a child with the
 * host's command line, forwards its output over the results port
 * (ttyS1) as it comes, then the --json file and the exit status, and
 * powers off.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
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

int rp_guest_main(void)
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

	if (mount("proc", "/proc", "proc", 0, NULL) < 0)
		give_up("mount /proc");
	if (mount("sysfs", "/sys", "sysfs", 0, NULL) < 0)
		give_up("mount /sys");
	chmod("/tmp", 01777);

	size_t alen, clen, elen;
	char *args = slurp(RP_VM_DIR "/args", &alen), *cwd = slurp(RP_VM_DIR "/cwd", &clen);
	char *env = slurp(RP_VM_DIR "/env", &elen);
	if (!args || !cwd || !env)
		give_up("read " RP_VM_DIR);
	static char *argv[MAX_ARGS + 2], *envv[16];
	argv[0] = "vmreplay";
	split(args, alen, argv + 1, MAX_ARGS);
	split(env, elen, envv, sizeof(envv) / sizeof(envv[0]));
	if (chdir(cwd) < 0)
		give_up("chdir to the host's working directory");

	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		give_up("pipe");
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
		for (size_t i = 0; envv[i]; i++)
			putenv(envv[i]);
		execv("/init", argv); /* not PID 1: an ordinary vmreplay */
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);

	struct pollfd pf[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
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
	/* PID 1 adopts every orphan: reap until the replay itself. */
	int st = 0;
	pid_t w;
	while ((w = wait(&st)) != pid)
		if (w < 0 && errno != EINTR)
			break;
	int code = w != pid ? 127 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	size_t jlen;
	char *json = slurp(RP_VM_GUEST_JSON, &jlen);
	if (json)
		frame('J', json, jlen);
	snprintf(nb, sizeof(nb), "%d", code);
	frame_str('X', nb);
	power_off();
	return 0;
}
