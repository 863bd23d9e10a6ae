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
#include "vmtutil.h"

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

/* The trace header: this machine, vmrec, and the command line (of the
 * attached program, as it was at the attach, with -p). */
static void fill_header(struct vmt_header *h, const struct vmr_opts *o)
{
	vmt_header_from_host(h);
	h->recorder = "vmrec " VMR_VERSION;
	h->argc = (uint32_t)o->cmd_argc;
	h->argv = (const char *const *)o->cmd_argv;
	if (o->attach_pid) {
		static char line[16384];
		static const char *words[512];
		int n = vmr_proc_cmdline(o->attach_pid, line, sizeof(line), words, 512);
		h->argc = n > 0 ? (uint32_t)n : 0;
		h->argv = n > 0 ? words : NULL;
	}
}

/* A write error, said when it happened (the recording stopped there):
 * what of the trace is kept. */
static void say_write_error(const struct vmr_opts *o, struct vmr_output *out,
			    const struct vmr_summary *sum)
{
	char kept[160];
	if (sum->written_events == 0 && vmr_output_discard(out) == 1)
		snprintf(kept, sizeof(kept), "no trace kept");
	else if (sum->written_events == 0)
		snprintf(kept, sizeof(kept), "nothing of the trace was written");
	else
		snprintf(kept, sizeof(kept), "the trace keeps its first %llu events",
			 (unsigned long long)sum->written_events);
	fprintf(stderr, "vmrec: cannot write '%s': %s; %s%s\n", out->path,
		vmt_strerror(sum->write_error),
		!sum->write_error_stopped ? ""
		: o->attach_pid		  ? "recording stopped (the program runs on), "
					  : "recording stopped and the program killed, ",
		kept);
}

/* The summary lines at the end of a recording (not with -q). */
static void print_summary(const struct vmr_summary *sum, const char *path)
{
	double ratio = sum->file_bytes ? (double)sum->raw_bytes / (double)sum->file_bytes : 0;
	fprintf(stderr,
		"vmrec: %llu events, %u thread%s, %u process%s, %llu bytes (ratio %.1f), %llu lost -> %s\n",
		(unsigned long long)sum->events, sum->threads,
		sum->threads == 1 ? "" : "s", sum->procs,
		sum->procs == 1 ? "" : "es",
		(unsigned long long)sum->file_bytes, ratio,
		(unsigned long long)sum->lost, path);
	if (!sum->stack_captures)
		return;
	fprintf(stderr, "vmrec: %llu distinct stacks; of %llu calls, %llu without a stack, "
		"%llu with only the innermost frame\n",
		(unsigned long long)sum->stacks, (unsigned long long)sum->stack_captures,
		(unsigned long long)sum->stack_failed,
		(unsigned long long)sum->stack_shallow);
	if (sum->stack_skipped)
		fprintf(stderr, "vmrec: %llu of the calls without a stack came while "
			"vmrec was far behind (see --stack-copy)\n",
			(unsigned long long)sum->stack_skipped);
	if (sum->stack_cut)
		fprintf(stderr, "vmrec: %llu of the stacks end where the stack copy "
			"did, short of the top (see --stack-copy)\n",
			(unsigned long long)sum->stack_cut);
}

int main(int argc, char **argv)
{
	struct vmr_opts o;
	struct vmr_summary sum;
	struct vmt_header h;
	struct vmr_output out;
	char err[4608], comm[64];
	const char *name;
	int fd, e;

	if (vmr_parse_args(argc, argv, getenv("VMREC_BACKEND"), &o, err, sizeof(err))) {
		fprintf(stderr, "vmrec: %s\nTry 'vmrec --help' for more information.\n", err);
		return 2;
	}
	if (o.action == VMR_HELP) {
		fputs(vmr_usage(), stdout);
		return vmt_stdout_finish("vmrec", 0, 1);
	}
	if (o.action == VMR_SHOW_VERSION) {
		printf("vmrec %s\n", VMR_VERSION);
		return vmt_stdout_finish("vmrec", 0, 1);
	}
	if (o.attach_pid) {
		comm_of(o.attach_pid, comm, sizeof(comm));
		name = comm;
	} else {
		name = o.cmd_argv[0];
	}
	fd = vmr_output_open(&out, o.output, o.force, name);
	if (fd < 0) {
		if (fd == -EEXIST && o.output)
			fprintf(stderr, "vmrec: cannot open '%s': %s (use --force to overwrite)\n",
				out.path, strerror(-fd));
		else
			fprintf(stderr, "vmrec: cannot open '%s': %s\n", out.path, strerror(-fd));
		return 1;
	}

	fill_header(&h, &o);
	o.exits = 1;

	e = vmr_record(&o, fd, &h, notice, NULL, &sum, err, sizeof(err));
	if (close(fd) < 0 && !e) {
		e = sum.write_error = -errno;
		sum.written_events = 0; /* (what reached the file is not known) */
		sum.exit_code = 1;
	}
	if (e && sum.write_error) {
		say_write_error(&o, &out, &sum);
		return sum.exit_code;
	}
	if (e) {
		fprintf(stderr, "vmrec: %s\n", err);
		/* Nothing was recorded (the program never ran): do not leave a
		 * file that looks like a trace, if it is ours to remove. */
		if (sum.events == 0)
			vmr_output_discard(&out);
		return sum.exit_code;
	}
	if (!o.quiet)
		print_summary(&sum, out.path);
	return sum.exit_code;
}
