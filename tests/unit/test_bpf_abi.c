/*
 * test_bpf_abi.c - the values the stream backend's BPF programs test
 * (record/bpf/records.h: they cannot include format/) are the format's
 * and Linux's: the op numbers are vmtrace.h's, the mmap and clone flags
 * linux_abi.h's and the C library's, and the record kinds fit the
 * header's field.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "bpf/records.h"
#include "linux_abi.h"
#include "vmtrace.h"

static void test_ops(void **state)
{
	(void)state;
	assert_int_equal(SR_OP_MMAP, VMT_OP_MMAP);
	assert_int_equal(SR_OP_SHMAT, VMT_OP_SHMAT);
	assert_string_equal(vmt_op_name(SR_OP_MMAP), "mmap");
	assert_string_equal(vmt_op_name(SR_OP_SHMAT), "shmat");
}

static void test_flags(void **state)
{
	(void)state;
	assert_int_equal(SR_MAP_ANONYMOUS, LX_MAP_ANONYMOUS);
	assert_int_equal(SR_MAP_ANONYMOUS, MAP_ANONYMOUS);
	assert_int_equal(SR_CLONE_VM, CLONE_VM);
	assert_int_equal(SR_CLONE_VFORK, CLONE_VFORK);
}

static void test_records(void **state)
{
	(void)state;
	/* kinds fit sr_hdr.kind, sizes its size field */
	assert_true(SR_STACK < 1u << (8 * sizeof(((struct sr_hdr *)0)->kind)));
	assert_true(sizeof(struct sr_call) < 1u << (8 * sizeof(((struct sr_hdr *)0)->size)));
	assert_int_equal(offsetof(struct sr_call, h), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
