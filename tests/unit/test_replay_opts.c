/*
 * test_replay_opts.c - vmreplay's command line (replay/opts.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "replay.h"
#include "rewrite.h"

#define ARGV(...) ((char *[]){ "vmreplay", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "vmreplay", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(a, env, err, ...) \
	rp_parse_args(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (env), (a), (err), sizeof(err))

static void test_defaults(void **state)
{
	struct rp_args a;
	struct rp_options d;
	char err[256];

	rp_options_default(&d);
	assert_int_equal(PARSE(&a, NULL, err, "t.zst"), 0);
	assert_int_equal(a.action, RP_ACTION_RUN);
	assert_int_equal(a.mode, RP_MODE_REPLAY);
	assert_string_equal(a.trace, "t.zst");
	assert_null(a.json);
	assert_null(a.rules);
	assert_int_equal(a.repeat, 1);
	assert_int_equal(a.quiet, 0);
	assert_int_equal(a.progress, -1);
	assert_int_equal(a.o.order, d.order);
	assert_int_equal(a.o.placement, d.placement);
	assert_int_equal(a.o.files, d.files);
	assert_int_equal(a.o.clock, RP_CLOCK_AUTO);
	assert_int_equal(a.o.scale, 1);
	assert_true(a.o.speed == 0);
	assert_int_equal(a.o.max_memory, 0);
}

static void test_every_option(void **state)
{
	struct rp_args a;
	char err[256];

	assert_int_equal(PARSE(&a, "monotonic", err, "--order=strict", "--placement=exact",
			       "--speed=2.5", "--scale=3", "--repeat=7", "--json=r.json",
			       "--files=original", "--max-memory=2GiB", "-q", "--no-progress",
			       "--window=16M", "--no-watch", "t.zst"), 0);
	assert_int_equal(a.o.window, 16u << 20);
	assert_int_equal(a.o.no_watch, 1);
	assert_int_equal(a.o.order, RP_ORDER_STRICT);
	assert_int_equal(a.o.placement, RP_PLACE_EXACT);
	assert_true(a.o.speed == 2.5);
	assert_int_equal(a.o.scale, 3);
	assert_int_equal(a.repeat, 7);
	assert_string_equal(a.json, "r.json");
	assert_int_equal(a.o.files, RP_FILES_ORIGINAL);
	assert_int_equal(a.o.max_memory, 2ull << 30);
	assert_int_equal(a.quiet, 1);
	assert_int_equal(a.progress, 0);
	assert_int_equal(a.o.clock, RP_CLOCK_MONOTONIC);
	assert_int_equal(PARSE(&a, "", err, "--order", "free", "--speed", "max", "--progress",
			       "--max-memory=512k", "t.zst"), 0);
	assert_int_equal(a.o.order, RP_ORDER_FREE);
	assert_true(a.o.speed == 0);
	assert_int_equal(a.progress, 1);
	assert_int_equal(a.o.max_memory, 512u << 10);
	assert_int_equal(a.o.clock, RP_CLOCK_AUTO); /* an empty variable is unset */
}

static void test_modes(void **state)
{
	struct rp_args a;
	char err[256];

	assert_int_equal(PARSE(&a, NULL, err, "--rewrite", "t.zst"), 0);
	assert_int_equal(a.mode, RP_MODE_REWRITE);
	assert_string_equal(a.rules, VAN_REWRITE_DEFAULT);
	assert_int_equal(a.repeat, 1);
	assert_int_equal(PARSE(&a, NULL, err, "--compare=populate", "t.zst"), 0);
	assert_int_equal(a.mode, RP_MODE_COMPARE);
	assert_string_equal(a.rules, "populate");
	assert_int_equal(a.repeat, 5); /* --compare's default */
	assert_int_equal(PARSE(&a, NULL, err, "--compare", "--repeat=2", "t.zst"), 0);
	assert_int_equal(a.repeat, 2);
	assert_int_equal(PARSE(&a, NULL, err, "--help", "--bogus"), 0);
	assert_int_equal(a.action, RP_ACTION_HELP);
	assert_int_equal(PARSE(&a, NULL, err, "--version"), 0);
	assert_int_equal(a.action, RP_ACTION_VERSION);
}

/* Each bad command line: -EINVAL and the reason vmreplay prints. */
static void test_errors(void **state)
{
	static const struct {
		char *arg;
		const char *want;
	} bad[] = {
		{"--order=random", "--order: 'random' is not resource, strict or free"},
		{"--placement=near", "--placement: 'near' is not kernel or exact"},
		{"--speed=0", "--speed: '0' is not max or a factor from 1e-06 to 1e+09"},
		{"--speed=fast", "--speed: 'fast' is not max or a factor from 1e-06 to 1e+09"},
		{"--speed=1e-300", "--speed: '1e-300' is not max or a factor from 1e-06 to 1e+09"},
		{"--speed=2e9", "--speed: '2e9' is not max or a factor from 1e-06 to 1e+09"},
		{"--scale=0", "--scale: '0' is not a number from 1 to 1024"},
		{"--scale=1025", "--scale: '1025' is not a number from 1 to 1024"},
		{"--repeat=-1", "--repeat: '-1' is not a number from 1 to 1000"},
		{"--files=all", "--files: 'all' is not scratch or original"},
		{"--max-memory=10X", "--max-memory: '10X' is not a size"},
		{"--window=1K", "--window: '1K' is not a size of at least 4K"},
		{"--max-memory=99999999999T", "--max-memory: '99999999999T' is not a size"},
		{"--rewrite=bogus", NULL},
		{"--bogus", "unrecognized option '--bogus'"},
		{"-x", "invalid option -- 'x'"},
	};
	struct rp_args a;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(PARSE(&a, NULL, err, bad[i].arg, "t.zst"), -EINVAL);
		if (bad[i].want)
			assert_string_equal(err, bad[i].want);
		else
			assert_non_null(strstr(err, "unknown rewrite rule 'bogus'"));
	}
	assert_int_equal(PARSE(&a, NULL, err, "--json"), -EINVAL);
	assert_string_equal(err, "option '--json' requires an argument");
	assert_int_equal(PARSE(&a, NULL, err, "-q"), -EINVAL);
	assert_string_equal(err, "no trace given");
	assert_int_equal(PARSE(&a, NULL, err, "a.zst", "b.zst"), -EINVAL);
	assert_string_equal(err, "unexpected argument 'b.zst'");
	assert_int_equal(PARSE(&a, NULL, err, "--rewrite", "--compare", "t.zst"), -EINVAL);
	assert_non_null(strstr(err, "cannot be combined"));
	assert_int_equal(PARSE(&a, "sundial", err, "t.zst"), -EINVAL);
	assert_string_equal(err, "VMREPLAY_CLOCK: 'sundial' is not monotonic");
}

static void test_kernel(void **state)
{
	struct rp_args a;
	char err[256];

	assert_int_equal(PARSE(&a, NULL, err, "t.zst"), 0);
	assert_null(a.kernel);
	assert_int_equal(a.vm_cpus, 0);
	assert_int_equal(a.vm_memory, 0); /* sized from the trace */
	assert_int_equal(a.nkernels, 0);
	assert_int_equal(a.host, 0);
	assert_int_equal(a.repeat, 1);
	assert_int_equal(a.vm_accel, RP_VM_AUTO);
	assert_int_equal(a.vm_timeout, RP_VM_TIMEOUT_DEFAULT);
	assert_null(a.vm_console);
	assert_int_equal(PARSE(&a, NULL, err, "--kernel=/boot/vmlinuz", "--vm-cpus=4",
			       "--vm-memory=512M", "--vm-accel=tcg", "--vm-timeout=30",
			       "--vm-console=c.txt", "t.zst"), 0);
	assert_string_equal(a.kernel, "/boot/vmlinuz");
	assert_int_equal(a.vm_cpus, 4);
	assert_int_equal(a.vm_memory, 512u << 20);
	assert_int_equal(a.vm_accel, RP_VM_TCG);
	assert_int_equal(a.vm_timeout, 30);
	assert_string_equal(a.vm_console, "c.txt");
	assert_int_equal(PARSE(&a, NULL, err, "--kernel", "k", "--vm-accel=kvm", "t.zst"), 0);
	assert_int_equal(a.vm_accel, RP_VM_KVM);
	/* A guest's results are for comparing: enough runs to tell. */
	assert_int_equal(a.repeat, RP_KERNEL_REPEAT_DEFAULT);
	assert_int_equal(a.vm_jobs, 1);
	assert_false(a.json_dir);

	static const struct {
		char *arg;
		const char *want;
	} bad[] = {
		{"--vm-cpus=0", "--vm-cpus: '0' is not a number from 1 to 64"},
		{"--vm-cpus=65", "--vm-cpus: '65' is not a number from 1 to 64"},
		{"--vm-memory=64M", "--vm-memory: '64M' is too little for the guest's kernel (at least 128M)"},
		{"--vm-memory=lots", "--vm-memory: 'lots' is not a size"},
		{"--vm-accel=hvf", "--vm-accel: 'hvf' is not auto, kvm or tcg"},
		{"--vm-timeout=0", "--vm-timeout: '0' is not a number of seconds from 1 to 86400"},
		{"--kernel=", "--kernel: no image given"},
		{"--files=original", "--files=original cannot be used with --kernel: the guest has the"
				     " trace, not the recorded files"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(PARSE(&a, NULL, err, "--kernel=k", bad[i].arg, "t.zst"), -EINVAL);
		assert_string_equal(err, bad[i].want);
	}
	/* Several kernels and this machine, in the order given. */
	assert_int_equal(PARSE(&a, NULL, err, "--kernel=a", "--host", "--kernel=b", "--vm-jobs=2",
			       "--json=out/", "t.zst"), 0);
	assert_int_equal(a.nkernels, 2);
	assert_string_equal(a.kernels[0], "a");
	assert_string_equal(a.kernels[1], "b");
	assert_string_equal(a.kernel, "a");
	assert_true(a.host);
	assert_int_equal(a.host_pos, 1);
	assert_int_equal(a.vm_jobs, 2);
	assert_true(a.json_dir);
	assert_int_equal(a.repeat, RP_KERNEL_REPEAT_DEFAULT);
	assert_int_equal(PARSE(&a, NULL, err, "--host", "--kernel=a", "--repeat=3", "t.zst"), 0);
	assert_int_equal(a.host_pos, 0);
	assert_int_equal(a.repeat, 3);
	assert_int_equal(PARSE(&a, NULL, err, "--kernel=a", "--kernel=b", "--json=x.json", "t.zst"),
			 -EINVAL);
	assert_string_equal(err, "--json: with several kernels, name a directory for their results"
				 " files: --json=DIR/");
	assert_int_equal(PARSE(&a, NULL, err, "--kernel=a", "--host", "--compare", "t.zst"), -EINVAL);
	assert_non_null(strstr(err, "--compare cannot be used with several kernels"));
	assert_int_equal(PARSE(&a, NULL, err, "--host", "t.zst"), -EINVAL);
	assert_string_equal(err, "--host needs --kernel: without one the replay runs on this"
				 " machine anyway");
	char *nine[12] = { "vmreplay" };
	for (int i = 1; i <= 9; i++)
		nine[i] = "--kernel=k";
	nine[10] = "t.zst";
	assert_int_equal(rp_parse_args(11, nine, NULL, &a, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--kernel: at most 8 kernels");

	/* The guest's settings: recorded keys, sysctls, files; zeropage not. */
	assert_int_equal(PARSE(&a, NULL, err, "--kernel=a", "--vm-sysctl=thp=never",
			       "--vm-sysctl=vm.max_map_count=70000", "--vm-sysctl=thp_defrag=",
			       "--vm-cmdline=mitigations=off", "--vm-cmdline=quiet", "t.zst"), 0);
	assert_int_equal(a.nsysctl, 3);
	assert_string_equal(a.vm_sysctl[1], "vm.max_map_count=70000");
	assert_string_equal(a.vm_cmdline, "mitigations=off quiet");
	char path[256];
	static const struct {
		const char *setting, *path;
	} paths[] = {
		{"thp=never", "/sys/kernel/mm/transparent_hugepage/enabled"},
		{"thp_shmem=advise", "/sys/kernel/mm/transparent_hugepage/shmem_enabled"},
		{"overcommit=2", "/proc/sys/vm/overcommit_memory"},
		{"faultaround=4096", "/sys/kernel/debug/fault_around_bytes"},
		{"vm.max_map_count=1", "/proc/sys/vm/max_map_count"},
		{"/sys/kernel/mm/ksm/run=0", "/sys/kernel/mm/ksm/run"},
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(rp_vm_sysctl_path(paths[i].setting, path, sizeof(path), err,
						   sizeof(err)), 0);
		assert_string_equal(path, paths[i].path);
	}
	static const struct {
		char *arg;
		const char *want;
	} badsys[] = {
		{"--vm-sysctl=zeropage=0", "--vm-sysctl: zeropage cannot be set: whether a kernel"
					   " maps the zero page is a boot parameter of some"
					   " hypervisors' guests (PVM's pvm_no_zero_page), not a"
					   " setting"},
		{"--vm-sysctl=thp", "--vm-sysctl: 'thp' is not KEY=VALUE"},
		{"--vm-sysctl=/etc/passwd=x", "--vm-sysctl: '/etc/passwd' is not a file under"
					      " /proc/sys or /sys"},
		{"--vm-sysctl=/sys/../etc/x=1", "--vm-sysctl: '/sys/../etc/x' is not a file under"
						" /proc/sys or /sys"},
		{"--vm-sysctl=hugepages=1", "--vm-sysctl: 'hugepages' is not thp, thp_defrag,"
					    " thp_shmem, overcommit, faultaround, a sysctl name"
					    " (vm.max_map_count) or a path under /proc/sys or /sys"},
		{"--vm-sysctl=vm.a b=1", "--vm-sysctl: 'vm.a b' is not a setting name"},
		{"--vm-jobs=0", "--vm-jobs: '0' is not a number from 1 to 8"},
	};
	for (size_t i = 0; i < sizeof(badsys) / sizeof(badsys[0]); i++) {
		err[0] = 0;
		assert_int_equal(PARSE(&a, NULL, err, "--kernel=k", badsys[i].arg, "t.zst"), -EINVAL);
		assert_string_equal(err, badsys[i].want);
	}

	/* The --vm-* options mean nothing without a guest. */
	assert_int_equal(PARSE(&a, NULL, err, "--vm-cpus=2", "t.zst"), -EINVAL);
	assert_string_equal(err, "--vm-cpus needs --kernel");
	assert_int_equal(PARSE(&a, NULL, err, "--vm-console=x", "t.zst"), -EINVAL);
	assert_string_equal(err, "--vm-console needs --kernel");
	assert_int_equal(PARSE(&a, NULL, err, "--vm-sysctl=thp=never", "t.zst"), -EINVAL);
	assert_string_equal(err, "--vm-sysctl needs --kernel");
	assert_int_equal(PARSE(&a, NULL, err, "--vm-jobs=2", "t.zst"), -EINVAL);
	assert_string_equal(err, "--vm-jobs needs --kernel");
}

/* The guest's command line parses back into the same replay. */
static void test_guest_args(void **state)
{
	struct rp_args a, g;
	char err[256], buf[4096], *argv[64];

	assert_int_equal(PARSE(&a, "monotonic", err, "--kernel=k", "--vm-cpus=2", "--order=free",
			       "--placement=exact", "--speed=0.125", "--scale=3", "--repeat=4",
			       "--max-memory=1G", "--compare=populate", "-q", "--json=out.json",
			       "-odd.zst"), -EINVAL); /* a trace named like an option */
	assert_int_equal(PARSE(&a, "monotonic", err, "--kernel=k", "--vm-cpus=2", "--order=free",
			       "--placement=exact", "--speed=0.125", "--scale=3", "--repeat=4",
			       "--max-memory=1G", "--compare=populate", "-q", "--json=out.json",
			       "--window=8M", "--no-watch", "--", "-odd.zst"), 0);
	int n = rp_guest_args(&a, a.trace, "/.vmreplay/results.json", 1, argv, 64, buf, sizeof(buf));
	assert_true(n > 0);
	assert_null(argv[n]);
	assert_string_equal(argv[0], "vmreplay");
	assert_string_equal(argv[n - 1], "-odd.zst");
	assert_string_equal(argv[n - 2], "--");
	for (int i = 0; i < n; i++) {
		assert_null(strstr(argv[i], "--kernel"));
		assert_null(strstr(argv[i], "--vm-"));
	}
	assert_int_equal(rp_parse_args(n, argv, "monotonic", &g, err, sizeof(err)), 0);
	assert_null(g.kernel);
	assert_string_equal(g.trace, "-odd.zst");
	assert_string_equal(g.json, "/.vmreplay/results.json");
	assert_int_equal(g.mode, RP_MODE_COMPARE);
	assert_string_equal(g.rules, "populate");
	assert_int_equal(g.repeat, 4);
	assert_int_equal(g.quiet, 1);
	assert_int_equal(g.progress, 1);
	assert_int_equal(g.o.order, RP_ORDER_FREE);
	assert_int_equal(g.o.placement, RP_PLACE_EXACT);
	assert_true(g.o.speed == 0.125);
	assert_int_equal(g.o.scale, 3);
	assert_int_equal(g.o.max_memory, 1ull << 30);
	assert_int_equal(g.o.window, 8u << 20);
	assert_int_equal(g.o.no_watch, 1);

	/* Defaults stay defaults; no JSON asked, none passed. */
	assert_int_equal(PARSE(&a, NULL, err, "--kernel=k", "--rewrite", "t.zst"), 0);
	n = rp_guest_args(&a, a.trace, NULL, 0, argv, 64, buf, sizeof(buf));
	assert_int_equal(rp_parse_args(n, argv, NULL, &g, err, sizeof(err)), 0);
	assert_null(g.json);
	assert_int_equal(g.progress, 0);
	assert_int_equal(g.mode, RP_MODE_REWRITE);
	assert_string_equal(g.rules, VAN_REWRITE_DEFAULT);
	assert_int_equal(g.o.max_memory, 0);
	assert_true(g.o.speed == 0);
	/* (the host's default for a guest, passed on: not the guest's own) */
	assert_int_equal(g.repeat, RP_KERNEL_REPEAT_DEFAULT);
	/* Too small a buffer, too few pointers. */
	assert_int_equal(rp_guest_args(&a, a.trace, NULL, 0, argv, 64, buf, 20), -ENOSPC);
	assert_int_equal(rp_guest_args(&a, a.trace, NULL, 0, argv, 3, buf, sizeof(buf)), -ENOSPC);
}

static void test_usage_names_every_option(void **state)
{
	static const char *const names[] = {"--rewrite", "--compare", "--order", "--placement",
					    "--speed", "--scale", "--repeat", "--json", "--files",
					    "--max-memory", "--progress", "--no-progress", "--quiet",
					    "--help", "--version", "--kernel=IMAGE", "--vm-cpus",
					    "--vm-memory", "--vm-accel", "--vm-timeout",
					    "--vm-console", "--host", "--vm-jobs", "--vm-sysctl",
					    "--vm-cmdline", "--window", "--truncated"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_non_null(strstr(rp_usage(), names[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_option),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_guest_args),
		cmocka_unit_test(test_usage_names_every_option),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
