/*
 * test_record_opts.c - vmrec's command line (record/opts.c) and output
 * naming (record/outfile.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder.h"

#define ARGV(...) ((char *[]){ "vmrec", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "vmrec", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(o, err, ...) \
	vmr_parse_args(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), NULL, (o), (err), sizeof(err))
#define PARSE_ENV(env, o, err, ...) \
	vmr_parse_args(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (env), (o), (err), sizeof(err))

static void test_defaults_and_command(void **state)
{
	struct vmr_opts o;
	char err[256];

	(void)state;
	assert_int_equal(PARSE(&o, err, "--", "ls", "-l"), 0);
	assert_int_equal(o.action, VMR_RUN);
	assert_null(o.output);
	assert_int_equal(o.force, 0);
	assert_int_equal(o.quiet, 0);
	assert_int_equal(o.stack_depth, 0);
	assert_int_equal(o.touch, VMR_TOUCH_AUTO);
	assert_int_equal(o.backend, VMR_BACKEND_AUTO);
	assert_int_equal(o.ring_mib, VMR_DEFAULT_RING_MIB);
	assert_int_equal(o.attach_pid, 0);
	assert_int_equal(o.cmd_argc, 2);
	assert_string_equal(o.cmd_argv[0], "ls");
	assert_string_equal(o.cmd_argv[1], "-l");
	assert_null(o.cmd_argv[2]);
}

static void test_command_options_are_not_ours(void **state)
{
	struct vmr_opts o;
	char err[256];

	(void)state;
	/* Without "--", parsing stops at the command: its -q is its own. */
	assert_int_equal(PARSE(&o, err, "-o", "x.zst", "prog", "-q", "--force"), 0);
	assert_string_equal(o.output, "x.zst");
	assert_int_equal(o.quiet, 0);
	assert_int_equal(o.force, 0);
	assert_int_equal(o.cmd_argc, 3);
	assert_string_equal(o.cmd_argv[0], "prog");
}

static void test_all_options(void **state)
{
	struct vmr_opts o;
	char err[256], s[128];

	(void)state;
	assert_int_equal(PARSE(&o, err, "--output=t.zst", "--force", "-q",
			       "--stacks=7", "--touch=none", "--", "a"), 0);
	assert_string_equal(o.output, "t.zst");
	assert_int_equal(o.force, 1);
	assert_int_equal(o.quiet, 1);
	assert_int_equal(o.stack_depth, 7);
	assert_int_equal(o.touch, VMR_TOUCH_NONE);
	vmr_options_string(&o, "stream", o.touch, s, sizeof(s));
	assert_string_equal(s, "backend=stream touch=none stacks=7 stack-copy=8192");
	/* The stack copy is the stream backend's; stacks get a larger ring. */
	assert_int_equal(o.stack_copy, VMR_DEFAULT_STACK_COPY);
	assert_int_equal(o.ring_mib, VMR_DEFAULT_RING_MIB_STACKS);
	assert_int_equal(o.ring_given, 0);
	assert_int_equal(PARSE(&o, err, "--stacks", "--stack-copy=512", "--ring-size=8", "a"), 0);
	assert_int_equal(o.stack_copy, 512);
	assert_int_equal(o.ring_mib, 8);
	assert_int_equal(o.ring_given, 1);
	vmr_options_string(&o, "stream", VMR_TOUCH_FAULTS, s, sizeof(s));
	assert_string_equal(s, "backend=stream touch=faults stacks=32 stack-copy=512");

	assert_int_equal(PARSE(&o, err, "--stacks", "--touch=faults", "b"), 0);
	assert_int_equal(o.stack_depth, VMR_DEFAULT_STACK_DEPTH);
	assert_int_equal(o.touch, VMR_TOUCH_FAULTS);
	vmr_options_string(&o, "ptrace", o.touch, s, sizeof(s));
	assert_string_equal(s, "backend=ptrace touch=faults stacks=32");

	assert_int_equal(PARSE(&o, err, "-p", "1234"), 0);
	assert_int_equal(o.attach_pid, 1234);
	assert_int_equal(o.cmd_argc, 0);
	vmr_options_string(&o, "ptrace", VMR_TOUCH_RESIDENT, s, sizeof(s));
	assert_string_equal(s, "backend=ptrace touch=resident attach=1234");

	assert_int_equal(PARSE(&o, err, "--same-cpu", "--", "c"), 0);
	assert_int_equal(o.same_cpu, 1);
	vmr_options_string(&o, "ptrace", VMR_TOUCH_RESIDENT, s, sizeof(s));
	assert_string_equal(s, "backend=ptrace touch=resident same-cpu");

	assert_int_equal(PARSE(&o, err, "--backend=stream", "--ring-size=64", "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_STREAM);
	assert_int_equal(o.ring_mib, 64);
	assert_int_equal(PARSE(&o, err, "--backend", "ptrace", "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_PTRACE);
	assert_int_equal(PARSE(&o, err, "--backend=auto", "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_AUTO);
	assert_int_equal(PARSE(&o, err, "--backend=inproc", "--touch=resident", "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_INPROC);
	assert_int_equal(o.touch, VMR_TOUCH_RESIDENT);
	assert_int_equal(PARSE_ENV("inproc", &o, err, "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_INPROC);
	/* VMREC_BACKEND is the default; the command line wins. */
	assert_int_equal(PARSE_ENV("ptrace", &o, err, "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_PTRACE);
	assert_int_equal(PARSE_ENV("ptrace", &o, err, "--backend=stream", "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_STREAM);
	assert_int_equal(PARSE_ENV("", &o, err, "c"), 0);
	assert_int_equal(o.backend, VMR_BACKEND_AUTO);

	assert_int_equal(PARSE(&o, err, "--pid=99", "--touch=resident"), 0);
	assert_int_equal(o.attach_pid, 99);

	assert_int_equal(PARSE(&o, err, "-h"), 0);
	assert_int_equal(o.action, VMR_HELP);
	assert_int_equal(PARSE(&o, err, "--version"), 0);
	assert_int_equal(o.action, VMR_SHOW_VERSION);
	/* Tiny buffers are always terminated. */
	vmr_options_string(&o, "stream", VMR_TOUCH_FAULTS, s, 5);
	assert_int_equal(strlen(s), 4);
}

static void expect_error(int rc, const char *err, const char *needle)
{
	assert_int_equal(rc, -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not mention '%s'", err, needle);
}

static void test_errors(void **state)
{
	struct vmr_opts o;
	char err[256];

	(void)state;
	expect_error(PARSE(&o, err, "--stacks=0", "x"), err, "--stacks");
	expect_error(PARSE(&o, err, "--backend=bpf", "x"), err, "unknown backend 'bpf'");
	expect_error(PARSE_ENV("bpf", &o, err, "c"), err, "VMREC_BACKEND: unknown backend 'bpf'");
	expect_error(PARSE(&o, err, "--ring-size=3", "x"), err, "power of two");
	expect_error(PARSE(&o, err, "--ring-size=2048", "x"), err, "--ring-size");
	expect_error(PARSE(&o, err, "--stack-copy=100", "x"), err, "--stack-copy: '100'");
	expect_error(PARSE(&o, err, "--stack-copy=1001", "x"), err, "multiple of 8");
	/* the stream backend's options, with the other backend asked for */
	expect_error(PARSE(&o, err, "--backend=ptrace", "--ring-size=8", "x"), err,
		     "--ring-size is for the stream backend");
	expect_error(PARSE_ENV("ptrace", &o, err, "--stack-copy=512", "x"), err,
		     "--stack-copy is for the stream backend");
	expect_error(PARSE(&o, err, "--backend=inproc", "--ring-size=8", "x"), err,
		     "--ring-size is for the stream backend, not --backend=inproc");
	expect_error(PARSE(&o, err, "--stack-copy=32768", "x"), err, "16384");
	expect_error(PARSE(&o, err, "--backend=stream", "--touch=resident", "x"), err,
		     "--touch=resident needs --backend=ptrace or inproc");
	expect_error(PARSE(&o, err, "--stacks=1025", "x"), err, "1025");
	expect_error(PARSE(&o, err, "--stacks=3x", "x"), err, "3x");
	expect_error(PARSE(&o, err, "--touch=some", "x"), err, "'some'");
	expect_error(PARSE(&o, err, "-p", "abc"), err, "'abc'");
	expect_error(PARSE(&o, err, "-p", "0"), err, "'0'");
	expect_error(PARSE(&o, err, "-p", "-5"), err, "'-5'");
	expect_error(PARSE(&o, err, "-p", "12", "--", "ls"), err, "cannot be combined");
	expect_error(PARSE(&o, err, "-p", "12", "--same-cpu"), err, "--same-cpu");
	expect_error(PARSE(&o, err, "-q"), err, "no command");
	expect_error(PARSE(&o, err, "--"), err, "no command");
	expect_error(PARSE(&o, err, "--frobnicate", "x"), err, "'--frobnicate'");
	expect_error(PARSE(&o, err, "-Z", "x"), err, "'-Z'");
}

static void test_error_then_ok(void **state)
{
	struct vmr_opts o;
	char err[256];

	(void)state;
	/* getopt's global state is reset between calls. */
	expect_error(PARSE(&o, err, "--touch=bad", "x"), err, "bad");
	assert_int_equal(PARSE(&o, err, "-q", "y"), 0);
	assert_string_equal(o.cmd_argv[0], "y");
	assert_int_equal(o.quiet, 1);
	assert_string_equal(err, "");
}

static void test_usage_mentions_every_option(void **state)
{
	const char *u = vmr_usage();
	const char *opts[] = { "--output", "--force", "--quiet", "--stacks",
			       "--touch", "--pid", "--help", "--version", "-o",
			       "-q", "-p", "-h", "--same-cpu" };

	(void)state;
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (!strstr(u, opts[i]))
			fail_msg("usage lacks %s", opts[i]);
}

/* ---- output names -------------------------------------------------------- */

static char dir[PATH_MAX];
static int old_cwd = -1;

static int setup_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/vmrec-test-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	old_cwd = open(".", O_RDONLY | O_DIRECTORY);
	return chdir(dir);
}

static int teardown_dir(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	if (old_cwd >= 0 && fchdir(old_cwd) == 0)
		close(old_cwd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* vmr_output_open, as vmr_open_output was: the fd, the name used. */
static int open_output(const char *path, int force, const char *name, char *used, size_t len,
		       struct vmr_output *out)
{
	int fd = vmr_output_open(out, path, force, name);
	snprintf(used, len, "%.255s", out->path);
	return fd;
}

static void test_default_names_never_overwrite(void **state)
{
	struct vmr_output out;
	char used[256];
	struct stat st;
	int fd;

	(void)state;
	fd = open_output(NULL, 0, "/usr/bin/prog", used, sizeof(used), &out);
	assert_true(fd >= 0);
	assert_string_equal(used, "prog.vmtrace.zst");
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	fd = open_output(NULL, 0, "prog", used, sizeof(used), &out);
	assert_true(fd >= 0);
	assert_string_equal(used, "prog.1.vmtrace.zst");
	close(fd);
	fd = open_output(NULL, 0, "./prog", used, sizeof(used), &out);
	assert_true(fd >= 0);
	assert_string_equal(used, "prog.2.vmtrace.zst");
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(out.created, 1);
	close(fd);
	/* The first file was not touched. */
	assert_int_equal(stat("prog.vmtrace.zst", &st), 0);
	assert_int_equal(st.st_size, 1);
	/* Odd command names still give a usable name. */
	fd = open_output(NULL, 0, "dir/", used, sizeof(used), &out);
	assert_true(fd >= 0);
	assert_string_equal(used, "vmrec.vmtrace.zst");
	close(fd);
}

static void test_explicit_name_and_force(void **state)
{
	struct vmr_output out;
	char used[256];
	struct stat st, old;
	int fd;

	(void)state;
	fd = open_output("out.zst", 0, "ignored", used, sizeof(used), &out);
	assert_true(fd >= 0);
	assert_string_equal(used, "out.zst");
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	assert_int_equal(open_output("out.zst", 0, "x", used, sizeof(used), &out), -EEXIST);
	/* --force replaces the file by a new one at once: a hard link to the
	 * old one keeps its content, and nothing of it is left under the name */
	assert_int_equal(link("out.zst", "keep.zst"), 0);
	assert_int_equal(stat("out.zst", &old), 0);
	fd = open_output("out.zst", 1, "x", used, sizeof(used), &out);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(stat("out.zst", &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_true(st.st_ino != old.st_ino);
	assert_int_equal(out.created, 1);
	assert_int_equal(stat("keep.zst", &st), 0);
	assert_int_equal(st.st_size, 3);
	/* ... and leaves no file of its own beside it */
	assert_int_equal(system("test $(ls -A | wc -l) -eq 2"), 0);
	/* through a symlink, the file it leads to */
	assert_int_equal(symlink("keep.zst", "link.zst"), 0);
	fd = open_output("link.zst", 1, "x", used, sizeof(used), &out);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "z", 1), 1);
	close(fd);
	assert_int_equal(lstat("link.zst", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat("keep.zst", &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(vmr_output_discard(&out), 0); /* the name is a symlink now */
	assert_int_equal(open_output("no/such/dir.zst", 0, "x", used, sizeof(used), &out),
			 -ENOENT);
	assert_int_equal(mkdir("d.zst", 0700), 0);
	assert_int_equal(open_output("d.zst", 1, "x", used, sizeof(used), &out), -EISDIR);
}

/* What vmrec may remove: only a regular file it made, while the name
 * still leads to it; never a device, a FIFO, or a file put there since. */
static void test_discard_only_ours(void **state)
{
	struct vmr_output out;
	char used[256];
	struct stat st;
	int fd;

	(void)state;
	fd = open_output("mine.zst", 0, "x", used, sizeof(used), &out);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vmr_output_discard(&out), 1);
	assert_int_equal(stat("mine.zst", &st), -1);
	/* replaced by another file meanwhile: left alone */
	fd = open_output("mine.zst", 0, "x", used, sizeof(used), &out);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rename("mine.zst", "moved.zst"), 0);
	assert_int_equal(close(open("mine.zst", O_CREAT | O_WRONLY, 0600)), 0);
	assert_int_equal(vmr_output_discard(&out), 0);
	assert_int_equal(stat("mine.zst", &st), 0);
	/* a FIFO, opened with --force (a reader waits on the other end) */
	assert_int_equal(mkfifo("fifo.zst", 0600), 0);
	int rfd = open("fifo.zst", O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	fd = open_output("fifo.zst", 1, "x", used, sizeof(used), &out);
	assert_true(fd >= 0);
	assert_int_equal(out.created, 0);
	close(fd);
	close(rfd);
	assert_int_equal(vmr_output_discard(&out), 0);
	assert_int_equal(lstat("fifo.zst", &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	/* a device */
	fd = open_output("/dev/null", 1, "x", used, sizeof(used), &out);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vmr_output_discard(&out), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_command),
		cmocka_unit_test(test_command_options_are_not_ours),
		cmocka_unit_test(test_all_options),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_error_then_ok),
		cmocka_unit_test(test_usage_mentions_every_option),
		cmocka_unit_test_setup_teardown(test_default_names_never_overwrite,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_explicit_name_and_force,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_discard_only_ours, setup_dir, teardown_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
