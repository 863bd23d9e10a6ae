/*
 * opts.c - vmrec's command line: parsing, --help text, and the options
 * string stored in the trace header.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "recorder.h"
#include "vmtutil.h"

static const char usage_text[] =
	"usage: vmrec [OPTIONS] [--] CMD [ARG...]\n"
	"       vmrec [OPTIONS] -p PID\n"
	"\n"
	"Run CMD (or attach to process PID) and record every memory-management\n"
	"system call of all its threads and child processes (mmap, munmap,\n"
	"mprotect, madvise, mlock, mremap, brk, ...) into a vmtrace file.\n"
	"\n"
	"Options:\n"
	"  -o, --output=FILE   write the trace to FILE (default: CMD.vmtrace.zst,\n"
	"                      then CMD.1.vmtrace.zst, ...; never overwritten)\n"
	"      --force         overwrite FILE if it exists\n"
	"  -q, --quiet         no summary line at the end\n"
	"      --stacks[=DEPTH]  record the user call stack of every call\n"
	"                      (at most DEPTH frames, default 32)\n"
	"      --stack-copy=BYTES  with the stream backend, the bytes of stack\n"
	"                      copied at each call to unwind (512 to 16384,\n"
	"                      default 8192): deeper stacks need more\n"
	"      --backend=NAME  how to record: auto (default: stream where the\n"
	"                      kernel allows it, else inproc for a dynamically\n"
	"                      linked CMD, else ptrace), stream (the kernel writes\n"
	"                      the calls into a ring buffer, through BPF; needs\n"
	"                      root), inproc (the program logs its own calls, in\n"
	"                      memory shared with vmrec; no privilege needed),\n"
	"                      ptrace (a stop at every recorded call); the\n"
	"                      default is VMREC_BACKEND when it is set\n"
	"      --touch=MODE    page-touch capture: faults (every user page fault;\n"
	"                      the default where faults can be sampled), resident\n"
	"                      (pages present before each discarding call and at\n"
	"                      exit; ptrace and inproc), none\n"
	"      --ring-size=MiB the stream backend's ring buffer (a power of two,\n"
	"                      default 16): larger rings lose nothing in longer\n"
	"                      bursts\n"
	"  -p, --pid=PID       attach to the running process PID (all its\n"
	"                      threads; with ptrace slower: no seccomp filter)\n"
	"      --same-cpu      run vmrec and CMD on one CPU: traced calls cost\n"
	"                      about 40% less with ptrace, but CMD sees a single CPU\n"
	"  -h, --help          show this help and exit\n"
	"      --version       show the version and exit\n"
	"\n"
	"Exit status: that of CMD (128+N if it was killed by signal N); 127 if\n"
	"CMD cannot be run; 2 for a usage error; 1 if recording failed.\n"
	"See vmrec(1).\n";

const char *vmr_usage(void)
{
	return usage_text;
}

/* A decimal number in [lo, hi] with nothing after it. */
static int parse_uint(const char *s, unsigned long lo, unsigned long hi,
		      unsigned long *v)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	unsigned long x = strtoul(s, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

enum { OPT_FORCE = 256, OPT_STACKS, OPT_TOUCH, OPT_VERSION, OPT_SAME_CPU, OPT_BACKEND,
       OPT_RING, OPT_STACK_COPY };

/* The --backend names, in the order of enum vmr_backend_choice. */
static const char *const backend_names[] = { "auto", "stream", "ptrace", "inproc" };

/* A --backend value; -1 if unknown. */
static int backend_of(const char *name)
{
	for (int i = 0; i < (int)(sizeof(backend_names) / sizeof(backend_names[0])); i++)
		if (!strcmp(name, backend_names[i]))
			return i;
	return -1;
}

/* Take in option c of getopt_long (its value in optarg): 0, 1 for an
 * option that ends the parsing (--help, --version), or -EINVAL with the
 * message in err. */
static int take_option(int c, char **argv, struct vmr_opts *o, char *err, size_t errlen)
{
	unsigned long v;

	switch (c) {
	case 'o':
		if (!*optarg)
			return vmt_errf(err, errlen, -EINVAL, "-o: empty file name");
		o->output = optarg;
		return 0;
	case OPT_FORCE:
		o->force = 1;
		return 0;
	case 'q':
		o->quiet = 1;
		return 0;
	case OPT_STACKS:
		if (!optarg)
			o->stack_depth = VMR_DEFAULT_STACK_DEPTH;
		else if (parse_uint(optarg, 1, VMT_MAX_STACK_DEPTH, &v))
			return vmt_errf(err, errlen, -EINVAL,
					"--stacks: depth must be a number from 1 to %u, not '%s'",
					VMT_MAX_STACK_DEPTH, optarg);
		else
			o->stack_depth = (unsigned)v;
		return 0;
	case OPT_TOUCH:
		if (!strcmp(optarg, "resident"))
			o->touch = VMR_TOUCH_RESIDENT;
		else if (!strcmp(optarg, "faults"))
			o->touch = VMR_TOUCH_FAULTS;
		else if (!strcmp(optarg, "none"))
			o->touch = VMR_TOUCH_NONE;
		else
			return vmt_errf(err, errlen, -EINVAL,
					"--touch: unknown mode '%s' (use resident, faults or none)",
					optarg);
		return 0;
	case OPT_BACKEND:
		if ((o->backend = backend_of(optarg)) < 0)
			return vmt_errf(err, errlen, -EINVAL,
					"--backend: unknown backend '%s' (use auto, stream, inproc or ptrace)",
					optarg);
		return 0;
	case OPT_RING:
		if (parse_uint(optarg, 1, VMR_MAX_RING_MIB, &v) || (v & (v - 1)))
			return vmt_errf(err, errlen, -EINVAL,
					"--ring-size: '%s' is not a power of two from 1 to %u (MiB)",
					optarg, VMR_MAX_RING_MIB);
		o->ring_mib = (unsigned)v;
		return 0;
	case OPT_STACK_COPY:
		if (parse_uint(optarg, VMR_MIN_STACK_COPY, VMR_MAX_STACK_COPY, &v) || (v & 7))
			return vmt_errf(err, errlen, -EINVAL,
					"--stack-copy: '%s' is not a multiple of 8 from %u to %u (bytes)",
					optarg, VMR_MIN_STACK_COPY, VMR_MAX_STACK_COPY);
		o->stack_copy = (unsigned)v;
		return 0;
	case 'p':
		if (parse_uint(optarg, 1, 0x3fffffff, &v))
			return vmt_errf(err, errlen, -EINVAL, "-p: invalid process id '%s'", optarg);
		o->attach_pid = (pid_t)v;
		return 0;
	case OPT_SAME_CPU:
		o->same_cpu = 1;
		return 0;
	case 'h':
		o->action = VMR_HELP;
		return 1;
	case OPT_VERSION:
		o->action = VMR_SHOW_VERSION;
		return 1;
	case ':':
		return vmt_errf(err, errlen, -EINVAL, "option '%s' needs an argument",
				argv[optind - 1]);
	default:
		if (optopt && optopt < 256)
			return vmt_errf(err, errlen, -EINVAL, "unknown option '-%c'", optopt);
		return vmt_errf(err, errlen, -EINVAL, "unknown option '%s'", argv[optind - 1]);
	}
}

/* The options that do not go together, once all are parsed; the ring's
 * default size.  0 or -EINVAL with the message in err. */
static int check_options(struct vmr_opts *o, char *err, size_t errlen)
{
	/* (the stream backend's options: an error with the other one named) */
	int other = o->backend == VMR_BACKEND_PTRACE || o->backend == VMR_BACKEND_INPROC;
	if (other && o->ring_mib)
		return vmt_errf(err, errlen, -EINVAL,
				"--ring-size is for the stream backend, not --backend=%s",
				backend_names[o->backend]);
	if (other && o->stack_copy != VMR_DEFAULT_STACK_COPY)
		return vmt_errf(err, errlen, -EINVAL,
				"--stack-copy is for the stream backend, not --backend=%s",
				backend_names[o->backend]);
	o->ring_given = o->ring_mib != 0;
	if (!o->ring_mib)
		o->ring_mib = o->stack_depth ? VMR_DEFAULT_RING_MIB_STACKS : VMR_DEFAULT_RING_MIB;
	if (o->attach_pid && o->same_cpu)
		return vmt_errf(err, errlen, -EINVAL,
				"--same-cpu cannot be used with -p (it would move the running program)");
	if (o->attach_pid && o->cmd_argc > 0)
		return vmt_errf(err, errlen, -EINVAL, "-p PID cannot be combined with a command");
	if (o->touch == VMR_TOUCH_RESIDENT && o->backend == VMR_BACKEND_STREAM)
		return vmt_errf(err, errlen, -EINVAL,
				"--touch=resident needs --backend=ptrace or inproc (the stream "
				"backend never stops the program to read its pages)");
	if (!o->attach_pid && o->cmd_argc == 0)
		return vmt_errf(err, errlen, -EINVAL,
				"no command given (usage: vmrec [OPTIONS] -- CMD [ARG...] or vmrec -p PID)");
	return 0;
}

int vmr_parse_args(int argc, char **argv, const char *backend_env, struct vmr_opts *o,
		   char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "stacks", optional_argument, NULL, OPT_STACKS },
		{ "touch", required_argument, NULL, OPT_TOUCH },
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "same-cpu", no_argument, NULL, OPT_SAME_CPU },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "ring-size", required_argument, NULL, OPT_RING },
		{ "stack-copy", required_argument, NULL, OPT_STACK_COPY },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	memset(o, 0, sizeof(*o));
	o->touch = VMR_TOUCH_AUTO;
	o->backend = VMR_BACKEND_AUTO;
	o->stack_copy = VMR_DEFAULT_STACK_COPY;
	if (backend_env && *backend_env && (o->backend = backend_of(backend_env)) < 0)
		return vmt_errf(err, errlen, -EINVAL,
				"VMREC_BACKEND: unknown backend '%s' (use auto, stream, inproc or ptrace)",
				backend_env);
	if (err && errlen)
		err[0] = '\0';
	/* getopt keeps global state: optind = 0 makes GNU getopt start over,
	 * so the parser can be called more than once (tests do). */
	optind = 0;
	opterr = 0;
	/* '+': stop at the first non-option, which is CMD. */
	while ((c = getopt_long(argc, argv, "+:o:qp:h", longopts, NULL)) != -1)
		if ((rc = take_option(c, argv, o, err, errlen)))
			return rc < 0 ? rc : 0;
	o->cmd_argc = argc - optind;
	o->cmd_argv = argv + optind;
	return check_options(o, err, errlen);
}

void vmr_options_string(const struct vmr_opts *o, const char *backend, int touch, char *buf,
			size_t len)
{
	static const char *const touch_names[] = { "resident", "faults", "none" };
	int n;

	if (!len)
		return;
	n = snprintf(buf, len, "backend=%s touch=%s", backend,
		     touch >= 0 && touch <= 2 ? touch_names[touch] : "?");
	if (o->stack_depth && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " stacks=%u", o->stack_depth);
	if (o->stack_depth && !strcmp(backend, "stream") && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " stack-copy=%u", o->stack_copy);
	if (o->same_cpu && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " same-cpu");
	if (o->attach_pid && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " attach=%d", (int)o->attach_pid);
}
