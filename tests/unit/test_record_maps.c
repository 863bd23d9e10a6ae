/*
 * test_record_maps.c - /proc/PID/maps parsing (record/maps.c), checked
 * against hand-written lines and against this process's own mappings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "record_int.h"

static int parse(struct vmr_maps *m, const char *text)
{
	size_t n = strlen(text);

	free(m->text);
	m->text = malloc(n + 1);
	memcpy(m->text, text, n + 1);
	m->len = n;
	m->cap = n + 1;
	return vmr_maps_parse(m);
}

static void test_fields(void **state)
{
	struct vmr_maps m = { 0 };

	(void)state;
	assert_int_equal(parse(&m,
		"55c8936dc000-55c8936de000 r--p 00000000 fe:00 247498                     /usr/bin/head\n"
		"55c8936de000-55c8936e4000 r-xp 00002000 fe:01 247498                     /usr/bin/head\n"
		"7f4954466000-7f4954479000 rw-p 00000000 00:00 0 \n"
		"7f4954479000-7f495449f000 rw-s 001cf000 103:1a 332835                     /dev/shm/a file (deleted)\n"
		"7ffe6a41c000-7ffe6a43d000 rw-p 00000000 00:00 0                          [stack]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"),
		0);
	assert_int_equal(m.n, 6);
	assert_int_equal(m.e[0].start, 0x55c8936dc000ull);
	assert_int_equal(m.e[0].end, 0x55c8936de000ull);
	assert_int_equal(m.e[0].perms, VMT_PROT_R);
	assert_int_equal(m.e[0].offset, 0);
	assert_int_equal(m.e[0].dev, makedev(0xfe, 0));
	assert_int_equal(m.e[0].ino, 247498);
	assert_string_equal(m.e[0].path, "/usr/bin/head");
	assert_int_equal(m.e[1].perms, VMT_PROT_R | VMT_PROT_X);
	assert_int_equal(m.e[1].offset, 0x2000);
	assert_int_equal(m.e[1].dev, makedev(0xfe, 1));
	assert_int_equal(m.e[2].perms, VMT_PROT_R | VMT_PROT_W);
	assert_string_equal(m.e[2].path, "");
	assert_int_equal(m.e[2].ino, 0);
	assert_int_equal(m.e[3].perms, VMT_PROT_R | VMT_PROT_W | VMT_MAPS_SHARED);
	assert_int_equal(m.e[3].dev, makedev(0x103, 0x1a));
	assert_string_equal(m.e[3].path, "/dev/shm/a file (deleted)");
	assert_string_equal(m.e[4].path, "[stack]");
	assert_int_equal(m.e[5].start, 0xffffffffff600000ull);
	assert_int_equal(m.e[5].perms, VMT_PROT_X);
	vmr_maps_free(&m);
}

static void test_no_final_newline_and_empty(void **state)
{
	struct vmr_maps m = { 0 };

	(void)state;
	assert_int_equal(parse(&m, "1000-2000 ---p 00000000 00:00 0"), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.e[0].perms, 0);
	assert_string_equal(m.e[0].path, "");
	assert_int_equal(parse(&m, ""), 0);
	assert_int_equal(m.n, 0);
	vmr_maps_free(&m);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"1000-2000 r--p 0 00:00 0 x\nzzzz\n",
		"1000 r--p 00000000 00:00 0\n",
		"2000-1000 r--p 00000000 00:00 0\n",		/* start >= end */
		"1000-2000 rwzp 00000000 00:00 0\n",
		"1000-2000 rw-q 00000000 00:00 0\n",
		"1000-2000 rw-p 00000000 0000 0\n",
		"1000-2000 rw-p 00000000 00:00 x\n",
		"1000-2000 rw-p 00000000 00:00 12x\n",
		"1000-3000 rw-p 0 00:00 0\n2000-4000 rw-p 0 00:00 0\n", /* overlap */
		"11112222333344445-2000 r--p 0 00:00 0\n",	/* 17 digits */
		"1000-2000 r-",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vmr_maps m = { 0 };
		if (parse(&m, bad[i]) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		vmr_maps_free(&m);
	}
}

/* Our own maps: a mapping we make must be found with its exact bounds and
 * protection, and the whole table must be sorted. */
static void test_self(void **state)
{
	struct vmr_maps m = { 0 };
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 3 * (size_t)ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int found = 0, stack = 0;

	(void)state;
	assert_true(p != MAP_FAILED);
	/* Split it: the middle page gets other rights. */
	assert_int_equal(mprotect(p + ps, (size_t)ps, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(vmr_maps_read(&m, getpid()), 0);
	assert_true(m.n > 5);
	for (uint32_t i = 0; i < m.n; i++) {
		if (i)
			assert_true(m.e[i].start >= m.e[i - 1].end);
		if (m.e[i].start == (uintptr_t)p + (uintptr_t)ps) {
			assert_int_equal(m.e[i].end, (uintptr_t)p + 2 * (uintptr_t)ps);
			assert_int_equal(m.e[i].perms, VMT_PROT_R | VMT_PROT_W);
			assert_int_equal(m.e[i - 1].start, (uintptr_t)p);
			assert_int_equal(m.e[i - 1].perms, VMT_PROT_R);
			found = 1;
		}
		if (!strcmp(m.e[i].path, "[stack]"))
			stack = 1;
	}
	assert_true(found);
	assert_true(stack);
	munmap(p, 3 * (size_t)ps);
	assert_int_equal(vmr_maps_read(&m, 0x3fffffff), -ENOENT);
	vmr_maps_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_no_final_newline_and_empty),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
