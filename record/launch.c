/*
 * launch.c - start the program under the recorder.
 *
 * The child blocks on a pipe until the parent is ready (it has
 * PTRACE_SEIZEd the child, or put it in the stream backend's set), then
 * loads the seccomp filter (ptrace) and execs.  (A pipe rather than raise(SIGSTOP):
 * the child never enters a group-stop, so no SIGCONT has to be sent and no
 * job-control state leaks to the program or to the shell.)  A second,
 * close-on-exec pipe carries a failure report ("F" or "E" + errno) back
 * when the filter cannot be loaded or exec fails; a successful exec closes
 * it silently.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>
#include "record_int.h"

struct report {
	char stage;
	int err;
};

static const struct vmr_launch_how *launch_how; /* (the child's copy) */

static void child(int go, int rep, char *const argv[],
		  const struct vmr_sysmap *m, const sigset_t *mask)
{
	struct report r = { 0, 0 };
	char c;
	ssize_t n;

	do
		n = read(go, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127); /* the recorder went away */
	close(go);
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (launch_how) {
		/* (it returns only on failure) */
		r.err = -launch_how->run(launch_how->ctx, argv, &r.stage);
		int code = r.stage == VMR_LAUNCH_EXEC && r.err != ENOENT ? 126 : 127;
		if (write(rep, &r, sizeof(r)) != (ssize_t)sizeof(r))
			code = 127;
		if (launch_how->exit)
			launch_how->exit(launch_how->ctx, code);
		_exit(code);
	}
	r.err = m ? -vmr_filter_load(m) : 0;
	if (r.err) {
		r.stage = VMR_LAUNCH_FILTER;
	} else {
		execvp(argv[0], argv);
		r.stage = VMR_LAUNCH_EXEC;
		r.err = errno;
	}
	if (write(rep, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(127);
	/* Like a shell: 127 when the command was not found, else 126. */
	_exit(r.stage == VMR_LAUNCH_EXEC && r.err != ENOENT ? 126 : 127);
}

int vmr_launch_held(char *const argv[], const struct vmr_sysmap *m, const sigset_t *child_mask,
		    pid_t *pid, int *gofd, int *errfd)
{
	int go[2], rep[2], err;
	pid_t p;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(rep, O_CLOEXEC) < 0) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		return err;
	}
	p = fork();
	if (p < 0) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		close(rep[0]);
		close(rep[1]);
		return err;
	}
	if (p == 0) {
		close(go[1]);
		close(rep[0]);
		child(go[0], rep[1], argv, m, child_mask);
	}
	close(go[0]);
	close(rep[1]);
	*pid = p;
	*gofd = go[1];
	*errfd = rep[0];
	return 0;
}

int vmr_launch_held_how(char *const argv[], const struct vmr_launch_how *how,
			const sigset_t *child_mask, pid_t *pid, int *gofd, int *errfd)
{
	launch_how = how;
	int e = vmr_launch_held(argv, NULL, child_mask, pid, gofd, errfd);
	launch_how = NULL;
	return e;
}

int vmr_launch_go(int gofd)
{
	int err = write(gofd, "g", 1) == 1 ? 0 : -errno;
	close(gofd);
	return err;
}

void vmr_launch_cancel(pid_t pid, int gofd, int errfd)
{
	close(gofd); /* the child reads EOF and exits */
	close(errfd);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

int vmr_launch(char *const argv[], const struct vmr_sysmap *m,
	       unsigned long ptrace_opts, const sigset_t *child_mask,
	       pid_t *pid, int *errfd)
{
	int go, err;
	pid_t p;

	if ((err = vmr_launch_held(argv, m, child_mask, &p, &go, errfd)))
		return err;
	if (ptrace(PTRACE_SEIZE, p, 0, ptrace_opts) < 0) {
		err = -errno;
		vmr_launch_cancel(p, go, *errfd);
		return err;
	}
	if ((err = vmr_launch_go(go))) {
		kill(p, SIGKILL);
		close(*errfd);
		return err;
	}
	*pid = p;
	return 0;
}

int vmr_launch_explain(int errfd, const char *cmd, int *exit_code, char *err, size_t errlen)
{
	int stage = 0, e = 0;

	*exit_code = 127;
	if (vmr_launch_failure(errfd, &stage, &e) < 0) {
		snprintf(err, errlen, "cannot trace '%s': it died before exec", cmd);
		return -ECHILD;
	}
	if (stage == VMR_LAUNCH_FILTER) {
		snprintf(err, errlen, "cannot trace '%s': cannot load the seccomp filter: %s",
			 cmd, strerror(e));
		*exit_code = 1;
	} else if (e == ENOENT && !strchr(cmd, '/')) {
		snprintf(err, errlen, "cannot trace '%s': command not found", cmd);
	} else {
		snprintf(err, errlen, "cannot trace '%s': %s", cmd, strerror(e));
		if (e != ENOENT)
			*exit_code = 126;
	}
	return -e;
}

int vmr_launch_failure(int errfd, int *stage, int *err)
{
	struct report r;
	ssize_t n;

	fcntl(errfd, F_SETFL, O_NONBLOCK);
	do
		n = read(errfd, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(r))
		return -ENOENT;
	*stage = r.stage;
	*err = r.err;
	return 0;
}
