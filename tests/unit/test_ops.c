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

#include "tgen.h"
#include "vmtrace.h"

#define A 0x7f0000001000ull

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
	sc = TG_SC(0, 0, VMT_OP_MPROTECT, 0, A, 100, LX_PROT_READ).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 1);
	assert_int_equal(r[0].start, A);
	assert_int_equal(r[0].end, A + PAGE);

	/* mlock rounds the start down. */
	sc = TG_SC(0, 0, VMT_OP_MLOCK, 0, A + 10, PAGE).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 1);
	assert_int_equal(r[0].start, A);
	assert_int_equal(r[0].end, A + 2 * PAGE);

	/* mmap: at the result, or at the address with MAP_FIXED; a failed
	 * hint-less mmap names no range. */
	sc = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, 0, 2 * PAGE, LX_PROT_READ,
		   LX_MAP_PRIVATE | LX_MAP_ANONYMOUS, FD_NONE, 0).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 1);
	assert_int_equal(r[0].start, A);
	assert_int_equal(r[0].end, A + 2 * PAGE);
	sc.result = -12;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 0);
	sc.args[0] = A + PAGE;
	sc.args[3] |= LX_MAP_FIXED;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 1);
	assert_int_equal(r[0].start, A + PAGE);

	/* mremap: the old range and the new one. */
	sc = TG_SC(0, 0, VMT_OP_MREMAP, (int64_t)(A + 16 * PAGE), A, PAGE, 3 * PAGE,
		   LX_MREMAP_MAYMOVE, 0).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 2);
	assert_int_equal(r[0].end, A + PAGE);
	assert_int_equal(r[1].start, A + 16 * PAGE);
	assert_int_equal(r[1].end, A + 19 * PAGE);
	sc.result = -12;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 1);

	/* The whole address space; no range at all. */
	sc = TG_SC(0, 0, VMT_OP_MLOCKALL, 0, LX_MCL_CURRENT).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), -1);
	sc = TG_SC(0, 0, VMT_OP_BRK, (int64_t)A, A).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 0);
	sc = TG_SC(0, 0, VMT_OP_PROCESS_MADVISE, 0, 3, A, 1, LX_MADV_DONTNEED, 0).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 0);

	/* A range that wraps is clamped at the top of the address space. */
	sc = TG_SC(0, 0, VMT_OP_MUNMAP, 0, ~0ull - PAGE, 4 * PAGE).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 1);
	assert_true(r[0].end >= r[0].start);

	/* An unknown op names nothing. */
	sc = tg_ev_sc(0, 0, VMT_OP__COUNT, 0, 2, (uint64_t[]){ A, PAGE }).u.sc;
	assert_int_equal(vmt_sc_ranges(&sc, PAGE, r), 0);
}

static void test_discards(void **state)
{
	struct vmt_syscall sc;

	sc = TG_SC(0, 0, VMT_OP_MUNMAP, 0, A, PAGE).u.sc;
	assert_true(vmt_sc_discards(&sc));
	sc = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, A, PAGE, 0,
		   LX_MAP_PRIVATE | LX_MAP_ANONYMOUS | LX_MAP_FIXED, FD_NONE, 0).u.sc;
	assert_true(vmt_sc_discards(&sc));
	sc.args[3] = LX_MAP_PRIVATE | LX_MAP_ANONYMOUS | LX_MAP_FIXED_NOREPLACE;
	assert_false(vmt_sc_discards(&sc));
	sc.args[3] = LX_MAP_PRIVATE | LX_MAP_ANONYMOUS;
	assert_false(vmt_sc_discards(&sc));
	for (uint64_t adv = 0; adv < 128; adv++) {
		sc = TG_SC(0, 0, VMT_OP_MADVISE, 0, A, PAGE, adv).u.sc;
		int want = adv == LX_MADV_DONTNEED || adv == LX_MADV_FREE || adv == LX_MADV_REMOVE ||
			   adv == LX_MADV_DONTNEED_LOCKED;
		assert_int_equal(vmt_sc_discards(&sc), want);
		assert_int_equal(vmt_madv_discards(adv), want);
	}
	/* mremap: a growth in place keeps its pages; a shrink or a move
	 * takes them from the old addresses. */
	sc = TG_SC(0, 0, VMT_OP_MREMAP, (int64_t)A, A, PAGE, 2 * PAGE, 0, 0).u.sc;
	assert_false(vmt_sc_discards(&sc));
	sc.args[2] = 0;
	assert_true(vmt_sc_discards(&sc));
	sc = TG_SC(0, 0, VMT_OP_MREMAP, (int64_t)A, A, PAGE, 2 * PAGE, LX_MREMAP_MAYMOVE, 0).u.sc;
	assert_true(vmt_sc_discards(&sc));
	sc = TG_SC(0, 0, VMT_OP_MPROTECT, 0, A, PAGE, LX_PROT_NONE).u.sc;
	assert_false(vmt_sc_discards(&sc));
	sc = TG_SC(0, 0, VMT_OP_MLOCK, 0, A, PAGE).u.sc;
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
