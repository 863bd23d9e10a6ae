/*
 * test_util.c - libvmtrace's small helpers (array growth, byte counts for
 * people) and the recorder's code ranges (record/code.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rec_internal.h"
#include "vmtrace.h"

static void test_grow(void **state)
{
	uint32_t *a = NULL;
	size_t cap = 0;

	assert_int_equal(vmt_grow(&a, &cap, 0, sizeof(*a)), 0);
	assert_null(a);
	assert_int_equal(vmt_grow(&a, &cap, 1, sizeof(*a)), 0);
	assert_int_equal(cap, 16);
	for (size_t i = 0; i < cap; i++)
		assert_int_equal(a[i], 0);
	a[3] = 7;
	assert_int_equal(vmt_grow(&a, &cap, 100, sizeof(*a)), 0);
	assert_int_equal(cap, 128);
	assert_int_equal(a[3], 7);
	for (size_t i = 16; i < cap; i++)
		assert_int_equal(a[i], 0); /* new elements are zeroed */
	/* A size past SIZE_MAX fails without touching the array. */
	uint32_t *keep = a;
	assert_int_equal(vmt_grow(&a, &cap, SIZE_MAX / 2, sizeof(*a)), -ENOMEM);
	assert_ptr_equal(a, keep);
	assert_int_equal(cap, 128);
	free(a);
}

static void test_format_bytes(void **state)
{
	char b[32];
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 0), "0 bytes");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 1023), "1023 bytes");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 1024), "1.0 KiB");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 64ull << 20), "64.0 MiB");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 3ull << 39), "1.5 TiB");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), UINT64_MAX), "16384.0 PiB");
	char small[4];
	vmt_format_bytes(small, sizeof(small), 12345); /* cut, terminated */
	assert_string_equal(small, "12.");
}

static void test_code_ranges(void **state)
{
	struct vmr_code c = {0};
	assert_int_equal(vmr_code_add(&c, 0x1000, 0x3000), 0);
	assert_int_equal(vmr_code_remove(&c, 0x4000, 0x5000), 0);
	assert_int_equal(vmr_code_remove(&c, 0x2000, 0x2001), 1);
	assert_int_equal(vmr_code_remove(&c, 0x1000, 0x3000), 0); /* gone */

	/* A range that could not be kept: any later removal may hit code,
	 * until a reset (the stack cache is then invalidated, not stale). */
	c.n = c.cap = SIZE_MAX / 2 + 1; /* the next growth overflows */
	struct vmr_range *keep = c.r;
	c.r = NULL;
	assert_int_equal(vmr_code_add(&c, 0x8000, 0x9000), -ENOMEM);
	c.n = c.cap = 0;
	c.r = keep;
	assert_int_equal(vmr_code_remove(&c, 0x100000, 0x200000), 1);
	struct vmr_code child = {0};
	assert_int_equal(vmr_code_copy(&child, &c), 0);
	assert_int_equal(vmr_code_remove(&child, 0x100000, 0x200000), 1);
	vmr_code_reset(&c);
	assert_int_equal(vmr_code_remove(&c, 0x100000, 0x200000), 0);
	vmr_code_free(&c);
	vmr_code_free(&child);
}

/* vmt_pread_full: every byte asked for, the end of the file said. */
static void test_pread_full(void **state)
{
	(void)state;
	int fd = memfd_create("pread", 0);
	assert_true(fd >= 0);
	char data[10000], buf[10000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	assert_int_equal(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
	assert_int_equal(vmt_pread_full(fd, buf, 6000, 4000), 0);
	assert_memory_equal(buf, data + 4000, 6000);
	assert_int_equal(vmt_pread_full(fd, buf, 10, 9995), -ENODATA);
	assert_int_equal(vmt_pread_full(fd, buf, 0, 20000), 0);
	close(fd);
	assert_int_equal(vmt_pread_full(fd, buf, 1, 0), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_format_bytes),
		cmocka_unit_test(test_pread_full),
		cmocka_unit_test(test_code_ranges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
