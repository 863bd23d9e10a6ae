/*
 * keeper.c - a launched program does not outlive a vmrec that dies.
 *
 * Under ptrace the kernel does this (PTRACE_O_EXITKILL).  A backend that
 * does not stop the program (stream) forks a keeper before the program
 * starts: a small process that waits on a pipe whose write end only vmrec
 * holds.  When vmrec ends its recording it writes one byte and the keeper
 * exits.  End of file without that byte means vmrec died (SIGKILL, a
 * crash): the keeper then kills every process its backend's list names,
 * until the list is empty, and exits.  It holds what it inherited (the
 * stream backend's programs stay attached, so a process forked after
 * vmrec died still joins the list), none of vmrec's standard streams, and
 * no end of the launched program's start pipe.  A backend may also leave
 * it the last release of what it holds (vmr_keeper_release): the stream
 * backend's links are detached in the keeper's exit, not in vmrec's, and
 * that exit waits for vmrec's (the end of file once vmrec is gone), so
 * that the detach, which patches the kernel's text for 8-30 ms, does not
 * compete with vmrec's last steps for the CPUs.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "keeper_int.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

enum { KEEP_PIDS = 1024, KEEP_ROUNDS = 500 /* of 10 ms */ };

/* SIGKILL to pid, through a pidfd where the kernel has them, taken only
 * while the list still names pid: a pid the list names is either its
 * process, alive (so not reused), or a newer member. */
static void kill_member(const struct vmr_keeper_list *l, pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		if (errno == ENOSYS && l->member(l->ctx, pid))
			kill(pid, SIGKILL);
		return;
	}
	if (l->member(l->ctx, pid))
		syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
	close(fd);
}

static void keeper_main(int rfd, const struct vmr_keeper_list *l)
{
	char c;
	ssize_t n;

	setsid(); /* out of vmrec's process group and its terminal's signals */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	while ((n = read(rfd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 1) {
		/* vmrec ended its recording: gone once it has exited. */
		while ((n = read(rfd, &c, 1)) > 0 || (n < 0 && errno == EINTR))
			;
		_exit(0);
	}
	pid_t pids[KEEP_PIDS];
	for (int round = 0; round < KEEP_ROUNDS; round++) {
		int k = l->list(l->ctx, pids, KEEP_PIDS);
		if (k <= 0)
			break;
		for (int i = 0; i < k; i++)
			kill_member(l, pids[i]);
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	_exit(0);
}

int vmr_keeper_start(struct vmr_keeper *k, const struct vmr_keeper_list *l, const int *close_fds,
		     int nclose)
{
	int p[2];

	k->wfd = -1;
	k->pid = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		close(p[1]);
		for (int i = 0; i < nclose; i++)
			if (close_fds[i] >= 0)
				close(close_fds[i]);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int fd = 0; fd < 3 && null >= 0; fd++)
			dup2(null, fd);
		keeper_main(p[0], l);
	}
	close(p[0]);
	k->wfd = p[1];
	k->pid = pid;
	return 0;
}

/* "d": the keeper exits at the end of file, without killing. */
static void say_done(struct vmr_keeper *k)
{
	ssize_t n;
	while ((n = write(k->wfd, "d", 1)) < 0 && errno == EINTR)
		;
}

void vmr_keeper_release(struct vmr_keeper *k)
{
	if (k->wfd < 0)
		return;
	say_done(k);
	/* (the pipe stays open: the end of file is vmrec's exit) */
	k->wfd = -1;
}

void vmr_keeper_done(struct vmr_keeper *k)
{
	if (k->wfd < 0)
		return;
	say_done(k);
	close(k->wfd);
	k->wfd = -1;
	while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
		;
	k->pid = -1;
}
