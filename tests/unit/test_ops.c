/*
 * test_ops.c - the op table's range descriptors (format/ops.c): that they
 * agree with the argument lists, and what vmt_sc_ranges and
 * vmt_sc_discards make of real calls.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "linux_abi.h"
#include "vmtrace.h"

#define PG 4096ull
#define A 0x7f0000001000ull

static struct vmt_syscall call(uint32_t op, int64_t result, uint64_t a0, uint64_t a1,
			       uint64_t a2, uint64_t a3, uint64_t a4)
{
	struct vmt_syscall sc = {.op = op, .nargs = VMT_MAX_ARGS, .result = result,
				 .args = {a0, a1, a2, a3, a4, 0}};
	return sc;
}

/* Every op's descriptor points at arguments of the right kinds. */
static void test_table_consistent(void **state)
{
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		const struct vmt_op_info *oi = vmt_op_info(op);
		assert_non_null(oi);
		if (oi->addr_arg != VMT_NO_ARG) {
			assert_true(oi->addr_arg < oi->nargs);
			assert_int_equal(oi->arg[oi->addr_arg], VMT_ARG_ADDR);
		}
		if (oi->len_arg != VMT_NO_ARG) {
			assert_true(oi->len_arg < oi->nargs);
			assert_int_equal(oi->arg[oi->len_arg], VMT_ARG_LEN);
		}
		if (oi->range == VMT_RANGE_ARGS || oi->range == VMT_RANGE_MAP) {
			assert_int_not_equal(oi->addr_arg, VMT_NO_ARG);
			assert_int_not_equal(oi->len_arg, VMT_NO_ARG);
		}
		/* Only ops that name a range can discard it. */
		if (oi->effects & VMT_OPE_DISCARD)
			assert_int_not_equal(oi->range, VMT_RANGE_NONE);
		assert_false((oi->effects & VMT_OPE_QUERY) && (oi->effects & VMT_OPE_LAYOUT));
	}
	assert_null(vmt_op_info(0));
	assert_null(vmt_op_info(VMT_OP__COUNT));
}

static void test_ranges(void **state)
{
	struct vmt_range r[2];
	struct vmt_syscall sc;

	/* A plain range op: the end rounded up to a page. */
	sc = call(VMT_OP_MPROTECT, 0, A, 100, LX_PROT_READ, 0, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 1);
	assert_int_equal(r[0].start, A);
	assert_int_equal(r[0].end, A + PG);

	/* mlock rounds the start down. */
	sc = call(VMT_OP_MLOCK, 0, A + 10, PG, 0, 0, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 1);
	assert_int_equal(r[0].start, A);
	assert_int_equal(r[0].end, A + 2 * PG);

	/* mmap: at the result, or at the address with MAP_FIXED; a failed
	 * hint-less mmap names no range. */
	sc = call(VMT_OP_MMAP, (int64_t)A, 0, 2 * PG, LX_PROT_READ, LX_MAP_PRIVATE | LX_MAP_ANONYMOUS, -1);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 1);
	assert_int_equal(r[0].start, A);
	assert_int_equal(r[0].end, A + 2 * PG);
	sc.result = -12;
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 0);
	sc.args[0] = A + PG;
	sc.args[3] |= LX_MAP_FIXED;
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 1);
	assert_int_equal(r[0].start, A + PG);

	/* mremap: the old range and the new one. */
	sc = call(VMT_OP_MREMAP, (int64_t)(A + 16 * PG), A, PG, 3 * PG, LX_MREMAP_MAYMOVE, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 2);
	assert_int_equal(r[0].end, A + PG);
	assert_int_equal(r[1].start, A + 16 * PG);
	assert_int_equal(r[1].end, A + 19 * PG);
	sc.result = -12;
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 1);

	/* The whole address space; no range at all. */
	sc = call(VMT_OP_MLOCKALL, 0, LX_MCL_CURRENT, 0, 0, 0, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), -1);
	sc = call(VMT_OP_BRK, (int64_t)A, A, 0, 0, 0, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 0);
	sc = call(VMT_OP_PROCESS_MADVISE, 0, 3, A, 1, LX_MADV_DONTNEED, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 0);

	/* A range that wraps is clamped at the top of the address space. */
	sc = call(VMT_OP_MUNMAP, 0, ~0ull - PG, 4 * PG, 0, 0, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 1);
	assert_true(r[0].end >= r[0].start);

	/* An unknown op names nothing. */
	sc = call(VMT_OP__COUNT, 0, A, PG, 0, 0, 0);
	assert_int_equal(vmt_sc_ranges(&sc, PG, r), 0);
}

static void test_discards(void **state)
{
	struct vmt_syscall sc;

	sc = call(VMT_OP_MUNMAP, 0, A, PG, 0, 0, 0);
	assert_true(vmt_sc_discards(&sc));
	sc = call(VMT_OP_MMAP, (int64_t)A, A, PG, 0, LX_MAP_PRIVATE | LX_MAP_ANONYMOUS | LX_MAP_FIXED, -1);
	assert_true(vmt_sc_discards(&sc));
	sc.args[3] = LX_MAP_PRIVATE | LX_MAP_ANONYMOUS | LX_MAP_FIXED_NOREPLACE;
	assert_false(vmt_sc_discards(&sc));
	sc.args[3] = LX_MAP_PRIVATE | LX_MAP_ANONYMOUS;
	assert_false(vmt_sc_discards(&sc));
	for (uint64_t adv = 0; adv < 128; adv++) {
		sc = call(VMT_OP_MADVISE, 0, A, PG, adv, 0, 0);
		int want = adv == LX_MADV_DONTNEED || adv == LX_MADV_FREE || adv == LX_MADV_REMOVE ||
			   adv == LX_MADV_DONTNEED_LOCKED;
		assert_int_equal(vmt_sc_discards(&sc), want);
		assert_int_equal(vmt_madv_discards(adv), want);
	}
	/* mremap: a growth in place keeps its pages; a shrink or a move
	 * takes them from the old addresses. */
	sc = call(VMT_OP_MREMAP, (int64_t)A, A, PG, 2 * PG, 0, 0);
	assert_false(vmt_sc_discards(&sc));
	sc.args[2] = 0;
	assert_true(vmt_sc_discards(&sc));
	sc = call(VMT_OP_MREMAP, (int64_t)A, A, PG, 2 * PG, LX_MREMAP_MAYMOVE, 0);
	assert_true(vmt_sc_discards(&sc));
	sc = call(VMT_OP_MPROTECT, 0, A, PG, LX_PROT_NONE, 0, 0);
	assert_false(vmt_sc_discards(&sc));
	sc = call(VMT_OP_MLOCK, 0, A, PG, 0, 0, 0);
	assert_false(vmt_sc_discards(&sc));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_consistent),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_discards),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
