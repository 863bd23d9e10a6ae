/*
 * opts.c - vmreplay's command line: the options into struct rp_args, and
 * the --help text.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rewrite.h"
#include "replay.h"

static const char usage_text[] =
"usage: vmreplay TRACE [OPTION...]\n"
"Re-execute the memory-management calls of a vmrec trace on this machine, with\n"
"one replay thread per recorded thread and one replay process per recorded\n"
"process, and measure faults, context switches, per-op latency and divergences.\n"
"\n"
"  --rewrite[=RULES]   replay the trace as rewritten by RULES (comma-separated,\n"
"                      applied in order; default " VMT_REWRITE_DEFAULT "), and print how\n"
"                      often each rule applied\n"
"  --compare[=RULES]   replay the trace as recorded and as rewritten by RULES\n"
"                      alternately (A B A B ..., --repeat times, default 5) and\n"
"                      print one table: each metric's two medians, their ratio,\n"
"                      each side's min-max and whether the ranges are apart\n"
"  --order=resource|strict|free\n"
"                      resource (default): ops on overlapping ranges keep their\n"
"                      recorded order across threads, others run concurrently;\n"
"                      strict: the recorded total order; free: per-thread order\n"
"  --placement=kernel|exact\n"
"                      kernel (default): this kernel places new mappings;\n"
"                      exact: at the recorded addresses where free\n"
"  --speed=max|FACTOR  max (default): no pauses; FACTOR: keep the recorded gaps\n"
"                      between ops, divided by FACTOR\n"
"  --scale=K           run K copies of the trace at once (default 1)\n"
"  --repeat=N          replay N times; report each run and the median\n"
"                      (with --compare: N runs of each side)\n"
"  --json=FILE         also write the results as JSON to FILE (with --compare:\n"
"                      keys baseline, rewritten, rules and ratio)\n"
"  --files=scratch|original\n"
"                      scratch (default): file mappings map sparse scratch files\n"
"                      of the recorded size; original: the recorded file,\n"
"                      read-only, when it exists with the recorded size\n"
"  --max-memory=SIZE   refuse traces needing more (bytes; suffixes K M G T;\n"
"                      default: half of physical memory)\n"
"  --truncated=refuse|replay\n"
"                      a trace cut short (its recorder killed): refuse it\n"
"                      (default), or replay it up to its last complete chunk,\n"
"                      ending there the threads still alive, and report the cut\n"
"  --window=SIZE       memory for the loaded trace (default 48M): a trace that\n"
"                      needs more is loaded as it is replayed, and again for\n"
"                      each run; one that fits is loaded once\n"
"  --progress          show progress on standard error (loading, then each run),\n"
"                      also when it is not a terminal\n"
"  --no-progress       never show progress (default: shown on a terminal,\n"
"                      unless -q)\n"
"  -q, --quiet         print only the totals line\n"
"  -h, --help          this text\n"
"      --version       print the version\n"
"\n"
"Another kernel:\n"
"  --kernel=IMAGE      boot the kernel IMAGE (a bzImage, e.g. Debian's\n"
"                      /boot/vmlinuz-*) under qemu-system-x86_64 with an\n"
"                      initramfs holding a static vmreplay and the trace, run\n"
"                      the replay there with the other options and print its\n"
"                      results here, with the guest's kernel release, CPUs and\n"
"                      accelerator (under TCG times are emulated: compare\n"
"                      counts and ratios, not times)\n"
"  --vm-cpus=N         the guest's CPUs (default: as many as this machine's)\n"
"  --vm-memory=SIZE    the guest's memory (default 1G; at least 128M)\n"
"  --vm-accel=auto|kvm|tcg\n"
"                      auto (default): KVM if /dev/kvm is usable and the guest\n"
"                      boots with it, else TCG (emulation)\n"
"  --vm-timeout=SECONDS\n"
"                      end the guest if it has not finished after SECONDS\n"
"                      (default 600)\n"
"  --vm-console=FILE   write the guest's serial console (kernel messages) to\n"
"                      FILE\n"
"\n"
"Exit status: 0 replayed (divergences are reported, not an error); 1 the replay\n"
"failed; 2 usage error or a trace that cannot be replayed.\n"
"\n"
"Rewrite rules:\n";

const char *rp_usage(void)
{
	return usage_text;
}

static int parse_u64(const char *s, uint64_t *out, int sizes)
{
	char *end;
	if (!*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (sizes && *end) {
		int shift = 0;
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return -1;
		}
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
		if (v > (UINT64_MAX >> shift))
			return -1;
		v <<= shift;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int pick(const char *arg, const char *const *names, int *out)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(arg, names[i])) {
			*out = i;
			return 0;
		}
	return -1;
}

int rp_parse_args(int argc, char **argv, const char *clock_env, struct rp_args *a,
		  char *err, size_t errlen)
{
	enum {
		OPT_REWRITE = 256, OPT_COMPARE, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_KERNEL,
		OPT_VM_CPUS, OPT_VM_MEMORY, OPT_VM_ACCEL, OPT_VM_TIMEOUT, OPT_VM_CONSOLE,
		OPT_TRUNCATED,
		OPT_WINDOW,
	};
	static const struct option longopts[] = {
		{"order", required_argument, NULL, 'o'},
		{"placement", required_argument, NULL, 'p'},
		{"speed", required_argument, NULL, 's'},
		{"scale", required_argument, NULL, 'k'},
		{"repeat", required_argument, NULL, 'r'},
		{"json", required_argument, NULL, 'j'},
		{"files", required_argument, NULL, 'f'},
		{"max-memory", required_argument, NULL, 'm'},
		{"truncated", required_argument, NULL, OPT_TRUNCATED},
		{"window", required_argument, NULL, OPT_WINDOW},
		{"rewrite", optional_argument, NULL, OPT_REWRITE},
		{"compare", optional_argument, NULL, OPT_COMPARE},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
		{"kernel", required_argument, NULL, OPT_KERNEL},
		{"vm-cpus", required_argument, NULL, OPT_VM_CPUS},
		{"vm-memory", required_argument, NULL, OPT_VM_MEMORY},
		{"vm-accel", required_argument, NULL, OPT_VM_ACCEL},
		{"vm-timeout", required_argument, NULL, OPT_VM_TIMEOUT},
		{"vm-console", required_argument, NULL, OPT_VM_CONSOLE},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	/* In the order of the enums. */
	static const char *const orders[] = {"resource", "strict", "free", NULL};
	static const char *const placements[] = {"kernel", "exact", NULL};
	static const char *const files[] = {"scratch", "original", NULL};
	static const char *const accels[] = {"auto", "kvm", "tcg", NULL};
	static const char *const truncs[] = {"refuse", "replay", NULL};
	const char *vm_opt = NULL; /* a --vm-* option given */
	char msg[256];
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	rp_options_default(&a->o);
	a->progress = -1;
	a->vm_memory = RP_VM_MEMORY_DEFAULT;
	a->vm_timeout = RP_VM_TIMEOUT_DEFAULT;
	optind = 0; /* (reset getopt: the library may parse more than once) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (pick(optarg, orders, &a->o.order))
				return fail(err, errlen, "--order: '%s' is not resource, strict or free",
					    optarg);
			break;
		case 'p':
			if (pick(optarg, placements, &a->o.placement))
				return fail(err, errlen, "--placement: '%s' is not kernel or exact", optarg);
			break;
		case 's':
			if (!strcmp(optarg, "max")) {
				a->o.speed = 0;
			} else {
				char *end;
				errno = 0;
				double d = strtod(optarg, &end);
				if (errno || *end || !(d > 0) || d > 1e9)
					return fail(err, errlen, "--speed: '%s' is not max or a positive factor",
						    optarg);
				a->o.speed = d;
			}
			break;
		case 'k':
			if (parse_u64(optarg, &v, 0) || v < 1 || v > 1024)
				return fail(err, errlen, "--scale: '%s' is not a number from 1 to 1024", optarg);
			a->o.scale = (uint32_t)v;
			break;
		case 'r':
			if (parse_u64(optarg, &v, 0) || v < 1 || v > 1000)
				return fail(err, errlen, "--repeat: '%s' is not a number from 1 to 1000", optarg);
			a->repeat = (unsigned)v;
			break;
		case 'j':
			a->json = optarg;
			break;
		case 'f':
			if (pick(optarg, files, &a->o.files))
				return fail(err, errlen, "--files: '%s' is not scratch or original", optarg);
			break;
		case 'm':
			if (parse_u64(optarg, &v, 1) || v == 0)
				return fail(err, errlen, "--max-memory: '%s' is not a size", optarg);
			a->o.max_memory = v;
			break;
		case OPT_WINDOW:
			if (parse_u64(optarg, &v, 1) || v < RP_WINDOW_MIN)
				return fail(err, errlen, "--window: '%s' is not a size of at least 4K", optarg);
			a->o.window = v;
			break;
		case OPT_TRUNCATED:
			if (pick(optarg, truncs, &a->o.truncated))
				return fail(err, errlen, "--truncated: '%s' is not refuse or replay", optarg);
			break;
		case OPT_REWRITE:
		case OPT_COMPARE: {
			int mode = c == OPT_REWRITE ? RP_MODE_REWRITE : RP_MODE_COMPARE;
			/* Both at once would be ambiguous (compare the rewritten
			 * trace with what?): --compare=RULES already replays the
			 * rewritten side. */
			if (a->mode && a->mode != mode)
				return fail(err, errlen, "--rewrite and --compare cannot be combined;"
					    " --compare=RULES replays the trace rewritten by RULES"
					    " against the original");
			a->mode = mode;
			a->rules = optarg && *optarg ? optarg : VMT_REWRITE_DEFAULT;
			if (vmt_rewrite_check(a->rules, msg, sizeof(msg)) < 0)
				return fail(err, errlen, "--%s: %s", c == OPT_REWRITE ? "rewrite" : "compare",
					    msg);
			break;
		}
		case OPT_PROGRESS:
		case OPT_NO_PROGRESS:
			a->progress = c == OPT_PROGRESS;
			break;
		case OPT_KERNEL:
			if (!*optarg)
				return fail(err, errlen, "--kernel: no image given");
			a->kernel = optarg;
			break;
		case OPT_VM_CPUS:
			vm_opt = "--vm-cpus";
			if (parse_u64(optarg, &v, 0) || v < 1 || v > RP_VM_CPUS_MAX)
				return fail(err, errlen, "--vm-cpus: '%s' is not a number from 1 to %d",
					    optarg, RP_VM_CPUS_MAX);
			a->vm_cpus = (unsigned)v;
			break;
		case OPT_VM_MEMORY:
			vm_opt = "--vm-memory";
			if (parse_u64(optarg, &v, 1) || v > (1ull << 40))
				return fail(err, errlen, "--vm-memory: '%s' is not a size", optarg);
			if (v < RP_VM_MEMORY_MIN)
				return fail(err, errlen, "--vm-memory: '%s' is too little for the guest's"
					    " kernel (at least 128M)", optarg);
			a->vm_memory = v;
			break;
		case OPT_VM_ACCEL:
			vm_opt = "--vm-accel";
			if (pick(optarg, accels, &a->vm_accel))
				return fail(err, errlen, "--vm-accel: '%s' is not auto, kvm or tcg", optarg);
			break;
		case OPT_VM_TIMEOUT:
			vm_opt = "--vm-timeout";
			if (parse_u64(optarg, &v, 0) || v < 1 || v > 86400)
				return fail(err, errlen, "--vm-timeout: '%s' is not a number of seconds"
					    " from 1 to 86400", optarg);
			a->vm_timeout = (unsigned)v;
			break;
		case OPT_VM_CONSOLE:
			vm_opt = "--vm-console";
			a->vm_console = optarg;
			break;
		case 'q':
			a->quiet = 1;
			break;
		case 'h':
			a->action = RP_ACTION_HELP;
			return 0;
		case 'V':
			a->action = RP_ACTION_VERSION;
			return 0;
		case ':':
			return fail(err, errlen, "option '%s' requires an argument", argv[optind - 1]);
		default:
			if (optopt)
				return fail(err, errlen, "invalid option -- '%c'", optopt);
			return fail(err, errlen, "unrecognized option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return fail(err, errlen, "no trace given");
	if (optind + 1 < argc)
		return fail(err, errlen, "unexpected argument '%s'", argv[optind + 1]);
	if (clock_env && *clock_env) {
		if (strcmp(clock_env, "monotonic"))
			return fail(err, errlen, "VMREPLAY_CLOCK: '%s' is not monotonic", clock_env);
		a->o.clock = RP_CLOCK_MONOTONIC;
	}
	if (vm_opt && !a->kernel)
		return fail(err, errlen, "%s needs --kernel", vm_opt);
	if (a->kernel && a->o.files == RP_FILES_ORIGINAL)
		return fail(err, errlen, "--files=original cannot be used with --kernel: the guest"
			    " has the trace, not the recorded files");
	a->trace = argv[optind];
	if (!a->repeat)
		a->repeat = a->mode == RP_MODE_COMPARE ? 5 : 1;
	return 0;
}

/* ---- the replay's command line for a guest -------------------------------- */

struct argbuf {
	char **argv;
	size_t argc, max;
	char *buf;
	size_t used, size;
	int full;
};

static void arg(struct argbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(struct argbuf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->full || b->argc + 1 >= b->max) {
		b->full = 1;
		return;
	}
	va_start(ap, fmt);
	int n = vsnprintf(b->buf + b->used, b->size - b->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->size - b->used) {
		b->full = 1;
		return;
	}
	b->argv[b->argc++] = b->buf + b->used;
	b->used += (size_t)n + 1;
}

int rp_guest_args(const struct rp_args *a, const char *trace, const char *json, int progress,
		  char **argv, size_t max, char *buf, size_t bufsize)
{
	static const char *const orders[] = {"resource", "strict", "free"};
	static const char *const placements[] = {"kernel", "exact"};
	struct argbuf b = {argv, 0, max, buf, 0, bufsize, 0};
	const struct rp_options *o = &a->o;

	if (!max || !bufsize)
		return -ENOSPC;
	arg(&b, "vmreplay");
	arg(&b, "--order=%s", orders[o->order < 3 && o->order >= 0 ? o->order : 0]);
	arg(&b, "--placement=%s", placements[o->placement == RP_PLACE_EXACT]);
	if (o->speed > 0)
		arg(&b, "--speed=%.17g", o->speed);
	else
		arg(&b, "--speed=max");
	arg(&b, "--scale=%u", o->scale ? o->scale : 1);
	arg(&b, "--repeat=%u", a->repeat ? a->repeat : 1);
	if (o->max_memory)
		arg(&b, "--max-memory=%llu", (unsigned long long)o->max_memory);
	if (o->truncated == RP_TRUNC_REPLAY)
		arg(&b, "--truncated=replay");
	if (o->window)
		arg(&b, "--window=%llu", (unsigned long long)o->window);
	if (a->mode == RP_MODE_REWRITE)
		arg(&b, "--rewrite=%s", a->rules);
	else if (a->mode == RP_MODE_COMPARE)
		arg(&b, "--compare=%s", a->rules);
	if (a->quiet)
		arg(&b, "-q");
	if (json)
		arg(&b, "--json=%s", json);
	arg(&b, progress ? "--progress" : "--no-progress");
	arg(&b, "--");
	arg(&b, "%s", trace);
	if (b.full)
		return -ENOSPC;
	argv[b.argc] = NULL;
	return (int)b.argc;
}
