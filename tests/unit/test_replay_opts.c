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
			       "t.zst"), 0);
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
	assert_string_equal(a.rules, VMT_REWRITE_DEFAULT);
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
		{"--speed=0", "--speed: '0' is not max or a positive factor"},
		{"--speed=fast", "--speed: 'fast' is not max or a positive factor"},
		{"--scale=0", "--scale: '0' is not a number from 1 to 1024"},
		{"--scale=1025", "--scale: '1025' is not a number from 1 to 1024"},
		{"--repeat=-1", "--repeat: '-1' is not a number from 1 to 1000"},
		{"--files=all", "--files: 'all' is not scratch or original"},
		{"--max-memory=10X", "--max-memory: '10X' is not a size"},
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

static void test_usage_names_every_option(void **state)
{
	static const char *const names[] = {"--rewrite", "--compare", "--order", "--placement",
					    "--speed", "--scale", "--repeat", "--json", "--files",
					    "--max-memory", "--progress", "--no-progress", "--quiet",
					    "--help", "--version"};
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
		cmocka_unit_test(test_usage_names_every_option),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
