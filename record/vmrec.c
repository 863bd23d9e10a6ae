/*
 * vmrec.c - record the memory-management system calls of a program.
 * Parses the command line, opens the output and hands over to
 * vmr_record() (record/record.c).  See man/vmrec.1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "recorder.h"

static void notice(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "vmrec: %s\n", msg);
}

/* The name of an attached process (for the default output name). */
static void comm_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "pid%d", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n/")] = '\0';
	fclose(f);
	if (!buf[0])
		snprintf(buf, len, "pid%d", (int)pid);
}

int main(int argc, char **argv)
{
	struct vmr_opts o;
	struct vmr_summary sum;
	struct vmt_header h;
	char err[4608], out[4096], comm[64];
	const char *name;
	int fd, e;

	if (vmr_parse_args(argc, argv, getenv("VMREC_BACKEND"), &o, err, sizeof(err))) {
		fprintf(stderr, "vmrec: %s\nTry 'vmrec --help' for more information.\n", err);
		return 2;
	}
	if (o.action == VMR_HELP) {
		fputs(vmr_usage(), stdout);
		return fflush(stdout) || ferror(stdout) ? 1 : 0;
	}
	if (o.action == VMR_SHOW_VERSION) {
		printf("vmrec %s\n", VMR_VERSION);
		return fflush(stdout) || ferror(stdout) ? 1 : 0;
	}
	if (o.attach_pid) {
		comm_of(o.attach_pid, comm, sizeof(comm));
		name = comm;
	} else {
		name = o.cmd_argv[0];
	}
	fd = vmr_open_output(o.output, o.force, name, out, sizeof(out));
	if (fd < 0) {
		if (fd == -EEXIST && o.output)
			fprintf(stderr, "vmrec: cannot open '%s': %s (use --force to overwrite)\n",
				out, strerror(-fd));
		else
			fprintf(stderr, "vmrec: cannot open '%s': %s\n", out, strerror(-fd));
		return 1;
	}

	vmt_header_from_host(&h);
	h.recorder = "vmrec " VMR_VERSION;
	h.argc = o.attach_pid ? 0 : (uint32_t)o.cmd_argc;
	h.argv = o.attach_pid ? NULL : (const char *const *)o.cmd_argv;

	e = vmr_record(&o, fd, &h, notice, NULL, &sum, err, sizeof(err));
	if (close(fd) < 0 && !e) {
		e = -errno;
		snprintf(err, sizeof(err), "cannot write '%s': %s", out, strerror(-e));
		sum.exit_code = 1;
	}
	if (e) {
		fprintf(stderr, "vmrec: %s\n", err);
		/* Nothing was recorded (the program never ran, or the trace is
		 * unusable): do not leave a file that looks like a trace. */
		if (sum.events == 0)
			unlink(out);
		return sum.exit_code;
	}
	if (!o.quiet) {
		double ratio = sum.file_bytes ? (double)sum.raw_bytes / (double)sum.file_bytes : 0;
		fprintf(stderr,
			"vmrec: %llu events, %u thread%s, %u process%s, %llu bytes (ratio %.1f), %llu lost -> %s\n",
			(unsigned long long)sum.events, sum.threads,
			sum.threads == 1 ? "" : "s", sum.procs,
			sum.procs == 1 ? "" : "es",
			(unsigned long long)sum.file_bytes, ratio,
			(unsigned long long)sum.lost, out);
		if (sum.stack_captures) {
			fprintf(stderr, "vmrec: %llu distinct stacks; of %llu calls, %llu without a stack, "
				"%llu with only the innermost frame\n",
				(unsigned long long)sum.stacks, (unsigned long long)sum.stack_captures,
				(unsigned long long)sum.stack_failed,
				(unsigned long long)sum.stack_shallow);
			if (sum.stack_skipped)
				fprintf(stderr, "vmrec: %llu of the calls without a stack came while "
					"vmrec was far behind (see --stack-copy)\n",
					(unsigned long long)sum.stack_skipped);
		}
	}
	return sum.exit_code;
}
