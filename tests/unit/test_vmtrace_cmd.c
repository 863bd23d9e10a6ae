/*
 * test_vmtrace_cmd.c - what the vmtrace commands share (vmtrace/input.c):
 * the check of standard output after a command.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "vmtutil.h"

/* Run vmt_stdout_finish("vmtrace", 0, 2) in a child whose stdout is `how`, with errno
 * set to `stale` before the call; returns its status, its stderr in err. */
static int finish_in_child(int broken, int stale, char *err, size_t len)
{
	char path[] = "/tmp/vmtrace-cmd-XXXXXX";
	int efd = mkstemp(path);
	assert_true(efd >= 0);
	unlink(path);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(efd, 2);
		if (broken) {
			/* A write fails (EBADF) and leaves the error flag; the
			 * later flush has nothing to write and succeeds. */
			if (!freopen("/dev/null", "r", stdout))
				_exit(99);
			fputs("lost", stdout);
			fflush(stdout);
		}
		errno = stale;
		_exit(vmt_stdout_finish("vmtrace", 0, 2));
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ssize_t n = pread(efd, err, len - 1, 0);
	err[n > 0 ? n : 0] = 0;
	close(efd);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_finish_stdout(void **state)
{
	char err[256];
	/* Nothing wrong: the command's status, no word. */
	assert_int_equal(finish_in_child(0, EPIPE, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	/* A failed write with a stale EPIPE in errno is still reported. */
	assert_int_equal(finish_in_child(1, EPIPE, err, sizeof(err)), 2);
	assert_string_equal(err, "vmtrace: cannot write output\n");
	/* ... and a stale errno is not given as its reason. */
	assert_int_equal(finish_in_child(1, ENOSPC, err, sizeof(err)), 2);
	assert_string_equal(err, "vmtrace: cannot write output\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finish_stdout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
