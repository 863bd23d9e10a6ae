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
#include "vmtutil.h"

static const char usage_text[] =
"usage: vmreplay TRACE [OPTION...]\n"
"Re-execute the memory-management calls of a vmrec trace on this machine, with\n"
"one replay thread per recorded thread and one replay process per recorded\n"
"process, and measure faults, context switches, per-op latency and divergences.\n"
"\n"
"  --rewrite[=RULES]   replay the trace as rewritten by RULES (comma-separated,\n"
"                      applied in order; default " VAN_REWRITE_DEFAULT "), and print how\n"
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
"  --speed=max|FACTOR  max (default): no pauses; FACTOR (1e-6 to 1e9): keep the\n"
"                      recorded gaps between ops, divided by FACTOR\n"
"  --scale=K           run K copies of the trace at once (default 1)\n"
"  --repeat=N          replay N times; report each run and the median\n"
"                      (with --compare: N runs of each side; default 1, and 5\n"
"                      with --compare, --kernel or --host)\n"
"  --json=FILE         also write the results as JSON to FILE (with --compare:\n"
"                      keys baseline, rewritten, rules and ratio); with several\n"
"                      kernels, --json=DIR/: one file per kernel in DIR,\n"
"                      named for its kernel release (host.json for --host)\n"
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
"  --window=SIZE       memory for the loaded trace (default: 1/16 of physical\n"
"                      memory, 48M to 1G): a trace that needs more is loaded\n"
"                      as it is replayed, and again for each run (its load\n"
"                      then shares the machine with the replay); one that\n"
"                      fits is loaded once, before the run\n"
"  --no-watch          the replay threads do not watch their own faults and\n"
"                      waits (perf samples): the fidelity section then cannot\n"
"                      say in which mappings faults differ, nor how long the\n"
"                      replayed calls were off CPU\n"
"  --progress          show progress on standard error (loading, then each run),\n"
"                      also when it is not a terminal\n"
"  --no-progress       never show progress (default: shown on a terminal,\n"
"                      unless -q)\n"
"  -q, --quiet         print only the totals line and the fidelity verdict\n"
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
"                      Given several times (up to 8), the replay runs on each\n"
"                      kernel in turn, and one table compares them\n"
"  --host              with --kernel: replay on this machine too, as the\n"
"                      column where --host stands among the --kernel options\n"
"                      (the first column is the base of the ratios)\n"
"  --vm-jobs=N         run N guests at once (default 1: one after another; the\n"
"                      guests then share this machine's CPUs, and say so)\n"
"  --vm-cpus=N         the guest's CPUs (default: as many as this machine's)\n"
"  --vm-memory=SIZE    the guest's memory (default: sized from what the replay\n"
"                      needs; at least 128M), the same for every kernel\n"
"  --vm-sysctl=KEY=VALUE\n"
"                      set KEY in the guest before the replay: thp,\n"
"                      thp_defrag, thp_shmem, overcommit or faultaround\n"
"                      (default: as recorded; an empty VALUE keeps the\n"
"                      guest kernel's own), a sysctl (vm.max_map_count) or a\n"
"                      file under /proc/sys or /sys; may repeat\n"
"  --vm-cmdline=ARGS   add ARGS to the guest kernel's command line (e.g.\n"
"                      transparent_hugepage=never); may repeat\n"
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

static int pick(const char *arg, const char *const *names, int *out)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(arg, names[i])) {
			*out = i;
			return 0;
		}
	return -1;
}

enum {
	OPT_REWRITE = 256, OPT_COMPARE, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_KERNEL,
	OPT_VM_CPUS, OPT_VM_MEMORY, OPT_VM_ACCEL, OPT_VM_TIMEOUT, OPT_VM_CONSOLE,
	OPT_TRUNCATED,
	OPT_WINDOW, OPT_HOST, OPT_VM_JOBS, OPT_VM_SYSCTL, OPT_VM_CMDLINE,
	OPT_NO_WATCH,
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
	{"no-watch", no_argument, NULL, OPT_NO_WATCH},
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
	{"host", no_argument, NULL, OPT_HOST},
	{"vm-jobs", required_argument, NULL, OPT_VM_JOBS},
	{"vm-sysctl", required_argument, NULL, OPT_VM_SYSCTL},
	{"vm-cmdline", required_argument, NULL, OPT_VM_CMDLINE},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* --speed: max, or a factor. */
static int parse_speed(const char *val, struct rp_options *o, char *err, size_t errlen)
{
	if (!strcmp(val, "max")) {
		o->speed = 0;
		return 0;
	}
	char *end;
	errno = 0;
	double d = strtod(val, &end);
	if (errno || *end || !(d >= RP_SPEED_MIN) || d > RP_SPEED_MAX)
		return vmt_errf(err, errlen, -EINVAL,
				"--speed: '%s' is not max or a factor from %g to %g",
				val, RP_SPEED_MIN, RP_SPEED_MAX);
	o->speed = d;
	return 0;
}

/* The options of the replay itself (struct rp_options, and how often and
 * where its results go). */
static int parse_replay_opt(int c, const char *val, struct rp_args *a,
			    char *err, size_t errlen)
{
	/* In the order of the enums. */
	static const char *const orders[] = {"resource", "strict", "free", NULL};
	static const char *const placements[] = {"kernel", "exact", NULL};
	static const char *const files[] = {"scratch", "original", NULL};
	static const char *const truncs[] = {"refuse", "replay", NULL};
	uint64_t v;

	switch (c) {
	case 'o':
		if (pick(val, orders, &a->o.order))
			return vmt_errf(err, errlen, -EINVAL,
					"--order: '%s' is not resource, strict or free",
					val);
		return 0;
	case 'p':
		if (pick(val, placements, &a->o.placement))
			return vmt_errf(err, errlen, -EINVAL,
					"--placement: '%s' is not kernel or exact", val);
		return 0;
	case 's':
		return parse_speed(val, &a->o, err, errlen);
	case 'k':
		if (parse_u64(val, &v, 0) || v < 1 || v > 1024)
			return vmt_errf(err, errlen, -EINVAL,
					"--scale: '%s' is not a number from 1 to 1024", val);
		a->o.scale = (uint32_t)v;
		return 0;
	case 'r':
		if (parse_u64(val, &v, 0) || v < 1 || v > 1000)
			return vmt_errf(err, errlen, -EINVAL,
					"--repeat: '%s' is not a number from 1 to 1000", val);
		a->repeat = (unsigned)v;
		return 0;
	case 'j':
		a->json = val;
		return 0;
	case 'f':
		if (pick(val, files, &a->o.files))
			return vmt_errf(err, errlen, -EINVAL,
					"--files: '%s' is not scratch or original", val);
		return 0;
	case 'm':
		if (parse_u64(val, &v, 1) || v == 0)
			return vmt_errf(err, errlen, -EINVAL,
					"--max-memory: '%s' is not a size", val);
		a->o.max_memory = v;
		return 0;
	case OPT_NO_WATCH:
		a->o.no_watch = 1;
		return 0;
	case OPT_WINDOW:
		if (parse_u64(val, &v, 1) || v < RP_WINDOW_MIN)
			return vmt_errf(err, errlen, -EINVAL,
					"--window: '%s' is not a size of at least 4K", val);
		a->o.window = v;
		return 0;
	default: /* OPT_TRUNCATED */
		if (pick(val, truncs, &a->o.truncated))
			return vmt_errf(err, errlen, -EINVAL,
					"--truncated: '%s' is not refuse or replay", val);
		return 0;
	}
}

/* --rewrite and --compare: the mode, and the rules. */
static int parse_mode_opt(int c, const char *val, struct rp_args *a,
			  char *err, size_t errlen)
{
	int mode = c == OPT_REWRITE ? RP_MODE_REWRITE : RP_MODE_COMPARE;
	char msg[256];

	/* Both at once would be ambiguous (compare the rewritten trace with
	 * what?): --compare=RULES already replays the rewritten side. */
	if (a->mode && a->mode != mode)
		return vmt_errf(err, errlen, -EINVAL, "--rewrite and --compare cannot be combined;"
				" --compare=RULES replays the trace rewritten by RULES"
				" against the original");
	a->mode = mode;
	a->rules = val && *val ? val : VAN_REWRITE_DEFAULT;
	if (van_rewrite_check(a->rules, msg, sizeof(msg)) < 0)
		return vmt_errf(err, errlen, -EINVAL,
				"--%s: %s", c == OPT_REWRITE ? "rewrite" : "compare",
				msg);
	return 0;
}

/* --kernel and the --vm-* options; *vm_opt names the last --vm-* given,
 * which needs --kernel. */
static int parse_vm_opt(int c, const char *val, struct rp_args *a,
			const char **vm_opt, char *err, size_t errlen)
{
	static const char *const accels[] = {"auto", "kvm", "tcg", NULL};
	uint64_t v;

	switch (c) {
	case OPT_KERNEL:
		if (!*val)
			return vmt_errf(err, errlen, -EINVAL, "--kernel: no image given");
		if (a->nkernels == RP_KERNELS_MAX)
			return vmt_errf(err, errlen, -EINVAL, "--kernel: at most %d kernels",
					RP_KERNELS_MAX);
		a->kernels[a->nkernels++] = val;
		a->kernel = a->kernels[0];
		return 0;
	case OPT_HOST:
		a->host = 1;
		a->host_pos = a->nkernels;
		return 0;
	case OPT_VM_JOBS:
		*vm_opt = "--vm-jobs";
		if (parse_u64(val, &v, 0) || v < 1 || v > RP_KERNELS_MAX)
			return vmt_errf(err, errlen, -EINVAL,
					"--vm-jobs: '%s' is not a number from 1 to %d", val,
					RP_KERNELS_MAX);
		a->vm_jobs = (unsigned)v;
		return 0;
	case OPT_VM_SYSCTL: {
		*vm_opt = "--vm-sysctl";
		char path[256];
		int rc = rp_vm_sysctl_path(val, path, sizeof(path), err, errlen);
		if (rc < 0)
			return rc;
		if (a->nsysctl == RP_VM_SYSCTL_MAX)
			return vmt_errf(err, errlen, -EINVAL, "--vm-sysctl: at most %d settings",
					RP_VM_SYSCTL_MAX);
		a->vm_sysctl[a->nsysctl++] = val;
		return 0;
	}
	case OPT_VM_CMDLINE: {
		*vm_opt = "--vm-cmdline";
		size_t n = strlen(a->vm_cmdline);
		if (strpbrk(val, "\n\r") || n + 1 + strlen(val) >= sizeof(a->vm_cmdline))
			return vmt_errf(err, errlen, -EINVAL, "--vm-cmdline: %s",
					strpbrk(val, "\n\r") ? "a line break in the command line"
							      : "too long");
		snprintf(a->vm_cmdline + n, sizeof(a->vm_cmdline) - n, "%s%s", n ? " " : "", val);
		return 0;
	}
	case OPT_VM_CPUS:
		*vm_opt = "--vm-cpus";
		if (parse_u64(val, &v, 0) || v < 1 || v > RP_VM_CPUS_MAX)
			return vmt_errf(err, errlen, -EINVAL,
					"--vm-cpus: '%s' is not a number from 1 to %d",
					val, RP_VM_CPUS_MAX);
		a->vm_cpus = (unsigned)v;
		return 0;
	case OPT_VM_MEMORY:
		*vm_opt = "--vm-memory";
		if (parse_u64(val, &v, 1) || v > (1ull << 40))
			return vmt_errf(err, errlen, -EINVAL,
					"--vm-memory: '%s' is not a size", val);
		if (v < RP_VM_MEMORY_MIN)
			return vmt_errf(err, errlen, -EINVAL,
					"--vm-memory: '%s' is too little for the guest's"
					" kernel (at least 128M)", val);
		a->vm_memory = v;
		return 0;
	case OPT_VM_ACCEL:
		*vm_opt = "--vm-accel";
		if (pick(val, accels, &a->vm_accel))
			return vmt_errf(err, errlen, -EINVAL,
					"--vm-accel: '%s' is not auto, kvm or tcg", val);
		return 0;
	case OPT_VM_TIMEOUT:
		*vm_opt = "--vm-timeout";
		if (parse_u64(val, &v, 0) || v < 1 || v > 86400)
			return vmt_errf(err, errlen, -EINVAL,
					"--vm-timeout: '%s' is not a number of seconds"
					" from 1 to 86400", val);
		a->vm_timeout = (unsigned)v;
		return 0;
	default: /* OPT_VM_CONSOLE */
		*vm_opt = "--vm-console";
		a->vm_console = val;
		return 0;
	}
}

/* After the options: the one operand, the environment, and the options
 * that exclude or need each other. */
static int check_args(int argc, char **argv, const char *clock_env, const char *vm_opt,
		      struct rp_args *a, char *err, size_t errlen)
{
	if (optind >= argc)
		return vmt_errf(err, errlen, -EINVAL, "no trace given");
	if (optind + 1 < argc)
		return vmt_errf(err, errlen, -EINVAL, "unexpected argument '%s'", argv[optind + 1]);
	if (clock_env && *clock_env) {
		if (strcmp(clock_env, "monotonic"))
			return vmt_errf(err, errlen, -EINVAL,
					"VMREPLAY_CLOCK: '%s' is not monotonic", clock_env);
		a->o.clock = RP_CLOCK_MONOTONIC;
	}
	if (vm_opt && !a->kernel)
		return vmt_errf(err, errlen, -EINVAL, "%s needs --kernel", vm_opt);
	if (a->host && !a->kernel)
		return vmt_errf(err, errlen, -EINVAL, "--host needs --kernel: without one the"
				" replay runs on this machine anyway");
	if (a->kernel && a->o.files == RP_FILES_ORIGINAL)
		return vmt_errf(err, errlen, -EINVAL,
				"--files=original cannot be used with --kernel: the guest"
				" has the trace, not the recorded files");
	unsigned targets = a->nkernels + (unsigned)a->host;
	if (targets > 1 && a->mode == RP_MODE_COMPARE)
		return vmt_errf(err, errlen, -EINVAL,
				"--compare cannot be used with several kernels: the table"
				" compares kernels; replay the rewritten trace on each with"
				" --rewrite");
	a->json_dir = a->json && *a->json && a->json[strlen(a->json) - 1] == '/';
	if (targets > 1 && a->json && !a->json_dir)
		return vmt_errf(err, errlen, -EINVAL,
				"--json: with several kernels, name a directory for their"
				" results files: --json=DIR/");
	if (!a->vm_jobs)
		a->vm_jobs = 1;
	a->trace = argv[optind];
	if (!a->repeat)
		a->repeat = a->mode == RP_MODE_COMPARE || a->kernel ? RP_KERNEL_REPEAT_DEFAULT : 1;
	return 0;
}

int rp_parse_args(int argc, char **argv, const char *clock_env, struct rp_args *a,
		  char *err, size_t errlen)
{
	const char *vm_opt = NULL; /* a --vm-* option given */
	int c, rc;

	memset(a, 0, sizeof(*a));
	rp_options_default(&a->o);
	a->progress = -1;
	a->vm_timeout = RP_VM_TIMEOUT_DEFAULT;
	optind = 0; /* (reset getopt: the library may parse more than once) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': case 'p': case 's': case 'k': case 'r': case 'j': case 'f': case 'm':
		case OPT_WINDOW: case OPT_TRUNCATED: case OPT_NO_WATCH:
			rc = parse_replay_opt(c, optarg, a, err, errlen);
			break;
		case OPT_REWRITE: case OPT_COMPARE:
			rc = parse_mode_opt(c, optarg, a, err, errlen);
			break;
		case OPT_KERNEL: case OPT_VM_CPUS: case OPT_VM_MEMORY: case OPT_VM_ACCEL:
		case OPT_VM_TIMEOUT: case OPT_VM_CONSOLE: case OPT_HOST: case OPT_VM_JOBS:
		case OPT_VM_SYSCTL: case OPT_VM_CMDLINE:
			rc = parse_vm_opt(c, optarg, a, &vm_opt, err, errlen);
			break;
		case OPT_PROGRESS:
		case OPT_NO_PROGRESS:
			a->progress = c == OPT_PROGRESS;
			rc = 0;
			break;
		case 'q':
			a->quiet = 1;
			rc = 0;
			break;
		case 'h':
			a->action = RP_ACTION_HELP;
			return 0;
		case 'V':
			a->action = RP_ACTION_VERSION;
			return 0;
		case ':':
			return vmt_errf(err, errlen, -EINVAL,
					"option '%s' requires an argument", argv[optind - 1]);
		default:
			if (optopt)
				return vmt_errf(err, errlen, -EINVAL,
						"invalid option -- '%c'", optopt);
			return vmt_errf(err, errlen, -EINVAL,
					"unrecognized option '%s'", argv[optind - 1]);
		}
		if (rc)
			return rc;
	}
	return check_args(argc, argv, clock_env, vm_opt, a, err, errlen);
}

/* ---- --vm-sysctl ------------------------------------------------------------ */

int rp_vm_sysctl_path(const char *setting, char *path, size_t pathlen, char *err,
		      size_t errlen)
{
	const char *eq = strchr(setting, '=');
	char key[200];
	if (!eq || eq == setting)
		return vmt_errf(err, errlen, -EINVAL, "--vm-sysctl: '%s' is not KEY=VALUE", setting);
	if ((size_t)(eq - setting) >= sizeof(key))
		return vmt_errf(err, errlen, -EINVAL, "--vm-sysctl: '%.40s...': too long a key",
				setting);
	snprintf(key, sizeof(key), "%.*s", (int)(eq - setting), setting);
	if (strpbrk(eq + 1, "\n"))
		return vmt_errf(err, errlen, -EINVAL, "--vm-sysctl: '%s': a line break in the value",
				key);
	if (!strcmp(key, "zeropage"))
		return vmt_errf(err, errlen, -EINVAL,
				"--vm-sysctl: zeropage cannot be set: whether a kernel maps"
				" the zero page is a boot parameter of some hypervisors'"
				" guests (PVM's pvm_no_zero_page), not a setting");
	const char *p = vmt_mm_path(key);
	if (p) {
		snprintf(path, pathlen, "%s", p);
		return 0;
	}
	/* A sysctl name, or a file of procfs or sysfs; no way out of them. */
	for (const char *c = key; *c; c++)
		if (!(*c == '_' || *c == '-' || *c == '.' || *c == '/' || *c == '+' ||
		      (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			return vmt_errf(err, errlen, -EINVAL, "--vm-sysctl: '%s' is not a setting"
					" name", key);
	if (key[0] == '/') {
		if (strstr(key, "/..") || strstr(key, "//") ||
		    (strncmp(key, "/proc/sys/", 10) && strncmp(key, "/sys/", 5)))
			return vmt_errf(err, errlen, -EINVAL, "--vm-sysctl: '%s' is not a file under"
					" /proc/sys or /sys", key);
		snprintf(path, pathlen, "%s", key);
		return 0;
	}
	if (!strchr(key, '.') || strchr(key, '/') || strstr(key, "..") || key[0] == '.' ||
	    key[strlen(key) - 1] == '.')
		return vmt_errf(err, errlen, -EINVAL,
				"--vm-sysctl: '%s' is not thp, thp_defrag, thp_shmem,"
				" overcommit, faultaround, a sysctl name (vm.max_map_count) or a"
				" path under /proc/sys or /sys", key);
	int n = snprintf(path, pathlen, "/proc/sys/%s", key);
	for (char *c = path + 10; n > 0 && *c; c++)
		if (*c == '.')
			*c = '/';
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
	if (o->no_watch)
		arg(&b, "--no-watch");
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
