/*
 * test_insn.c - the access type of a fault from its instruction
 * (record/insn.c), on instructions as GNU as encodes them: the stores,
 * loads and read-modify-writes that take faults in real programs
 * (glibc's memset and memcpy use rep stos/movs, AVX and AVX-512 moves).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "insn_int.h"

/* Each instruction assembled as data, between two labels. */
#define INSN(name, text)                                                   \
	extern const unsigned char name[], name##_end[];                  \
	__asm__(".pushsection .rodata\n" #name ":\n\t" text "\n" #name "_end:\n.popsection")

INSN(st_mov, "movl %eax, (%rdi)");
INSN(st_mov64, "movq %rax, 8(%rdi,%rcx,8)");
INSN(st_imm, "movb $1, (%rdi)");
INSN(st_stos, "rep stosb");
INSN(st_avx, "vmovdqu %ymm0, (%rdi)");
INSN(st_avx512, "vmovdqu64 %zmm1, 64(%rdi)");
INSN(st_nt, "vmovntdq %ymm0, (%rdi)");
INSN(st_sse, "movups %xmm0, (%rdi)");
INSN(st_sse2, "movdqa %xmm0, (%rdi)");
INSN(st_movq, "movq %xmm0, (%rdi)");
INSN(st_fs, "movq %rax, %fs:0x28");
INSN(st_setcc, "sete (%rdi)");
INSN(st_fstp, "fstps (%rdi)");
INSN(rmw_add, "addl $1, (%rdi)");
INSN(rmw_lock, "lock cmpxchg %ecx, (%rdi)");
INSN(rmw_inc, "incb (%rdi)");
INSN(rmw_not, "notl (%rdi)");
INSN(rmw_xadd, "lock xaddq %rax, (%rdi)");
INSN(ld_mov, "movl (%rdi), %eax");
INSN(ld_cmp, "cmpl $1, (%rdi)");
INSN(ld_avx, "vmovdqu (%rdi), %ymm0");
INSN(ld_avx512, "vmovdqu64 (%rsi), %zmm1");
INSN(ld_sse, "movups (%rdi), %xmm0");
INSN(ld_mul, "mull (%rdi)");
INSN(ld_fld, "flds (%rdi)");
INSN(ld_pcmp, "vpcmpeqb (%rdi), %ymm0, %ymm1");
INSN(ld_movq, "movq (%rdi), %xmm0");
INSN(no_lea, "leaq 8(%rdi), %rax");
INSN(no_prefetch, "prefetcht0 (%rdi)");
INSN(two_movs, "rep movsb");
INSN(two_push, "pushq (%rdi)");
INSN(two_pop, "popq (%rdi)");
INSN(stack_push, "pushq %rbx");
INSN(stack_call, "call .+5");

static uint32_t access_of(const unsigned char *b, const unsigned char *e, uint64_t addr,
			  const uint64_t *regs)
{
	unsigned char buf[16] = { 0 };
	size_t n = (size_t)(e - b);
	memcpy(buf, b, n);
	/* (the rest of the 16 bytes is the next instruction's) */
	return vmr_insn_access(buf, sizeof(buf), 0x400000, addr, regs);
}

#define A(name, addr, regs) access_of(name, name##_end, (addr), (regs))

static void test_stores_are_writes(void **state)
{
	(void)state;
	const unsigned char *w[][2] = {
		{ st_mov, st_mov_end }, { st_mov64, st_mov64_end }, { st_imm, st_imm_end },
		{ st_stos, st_stos_end }, { st_avx, st_avx_end }, { st_avx512, st_avx512_end },
		{ st_nt, st_nt_end }, { st_sse, st_sse_end }, { st_sse2, st_sse2_end },
		{ st_movq, st_movq_end }, { st_fs, st_fs_end }, { st_setcc, st_setcc_end },
		{ st_fstp, st_fstp_end }, { rmw_add, rmw_add_end }, { rmw_lock, rmw_lock_end },
		{ rmw_inc, rmw_inc_end }, { rmw_not, rmw_not_end }, { rmw_xadd, rmw_xadd_end },
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		uint32_t a = access_of(w[i][0], w[i][1], 0x7f0000001000, NULL);
		if (a != VMT_FAULT_WRITE)
			fail_msg("store %zu: access %u, want write", i, a);
	}
}

static void test_loads_are_reads(void **state)
{
	(void)state;
	const unsigned char *r[][2] = {
		{ ld_mov, ld_mov_end }, { ld_cmp, ld_cmp_end }, { ld_avx, ld_avx_end },
		{ ld_avx512, ld_avx512_end }, { ld_sse, ld_sse_end }, { ld_mul, ld_mul_end },
		{ ld_fld, ld_fld_end }, { ld_pcmp, ld_pcmp_end }, { ld_movq, ld_movq_end },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		uint32_t a = access_of(r[i][0], r[i][1], 0x7f0000001000, NULL);
		if (a != VMT_FAULT_READ)
			fail_msg("load %zu: access %u, want read", i, a);
	}
}

static void test_no_memory_access(void **state)
{
	(void)state;
	assert_int_equal(A(no_lea, 0x7f0000001000, NULL), 0);
	assert_int_equal(A(no_prefetch, 0x7f0000001000, NULL), 0);
}

static void test_two_accesses(void **state)
{
	/* rsi, rdi, rsp */
	const uint64_t regs[3] = { 0x10000010, 0x20000020, 0x7ffd00001000 };
	(void)state;
	/* rep movs: the destination is rdi's, the source rsi's */
	assert_int_equal(A(two_movs, 0x20000040, regs), VMT_FAULT_WRITE);
	assert_int_equal(A(two_movs, 0x10000040, regs), VMT_FAULT_READ);
	assert_int_equal(A(two_movs, 0x10000040, NULL), 0);
	/* push of memory: reads its operand, writes the stack */
	assert_int_equal(A(two_push, 0x7ffd00000ff8, regs), VMT_FAULT_WRITE);
	assert_int_equal(A(two_push, 0x30000000, regs), VMT_FAULT_READ);
	/* pop to memory: reads the stack, writes its operand */
	assert_int_equal(A(two_pop, 0x7ffd00001000, regs), VMT_FAULT_READ);
	assert_int_equal(A(two_pop, 0x30000000, regs), VMT_FAULT_WRITE);
	assert_int_equal(A(stack_push, 0x7ffd00000ff8, regs), VMT_FAULT_WRITE);
	assert_int_equal(A(stack_call, 0x7ffd00000ff8, regs), VMT_FAULT_WRITE);
}

static void test_fetch_is_exec(void **state)
{
	(void)state;
	/* a fault on the instruction itself (or its tail on the next page) */
	assert_int_equal(A(ld_mov, 0x400000, NULL), VMT_FAULT_EXEC);
	assert_int_equal(A(ld_mov, 0x400001, NULL), VMT_FAULT_EXEC);
}

static void test_bad_bytes(void **state)
{
	(void)state;
	/* prefixes only, or a cut instruction: no answer, no overread */
	const unsigned char pre[4] = { 0x66, 0xf3, 0x48, 0x0f };
	assert_int_equal(vmr_insn_access(pre, sizeof(pre), 0x400000, 0x500000, NULL), 0);
	assert_int_equal(vmr_insn_access(pre, 0, 0x400000, 0x500000, NULL), 0);
	const unsigned char vex[2] = { 0xc5, 0xfe };
	assert_int_equal(vmr_insn_access(vex, sizeof(vex), 0x400000, 0x500000, NULL), 0);
	const unsigned char evex[5] = { 0x62, 0xf1, 0xfe, 0x48, 0x7f };
	assert_int_equal(vmr_insn_access(evex, sizeof(evex), 0x400000, 0x500000, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stores_are_writes),
		cmocka_unit_test(test_loads_are_reads),
		cmocka_unit_test(test_no_memory_access),
		cmocka_unit_test(test_two_accesses),
		cmocka_unit_test(test_fetch_is_exec),
		cmocka_unit_test(test_bad_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
