/*
 * test_inproc_filter.c - the inproc backend's seccomp filter
 * (record/inject.c), run by a small interpreter of the classic BPF it is
 * made of, on the calls it must trap and those it must let through.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "inproc_int.h"

#define GATE 0x3f5ec0000059ull
#define CLONE 0x3f5ec00000deull

/* The filter's verdict on d (only the instructions it uses). */
static uint32_t run(const struct sock_filter *p, size_t n, const struct seccomp_data *d)
{
	uint32_t a = 0;
	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &p[pc];
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			assert_true(f->k + 4 <= sizeof(*d));
			memcpy(&a, (const char *)d + f->k, 4);
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == f->k ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JA:
			pc += f->k;
			break;
		case BPF_RET | BPF_K:
			return f->k;
		default:
			fail_msg("instruction %zu: unknown code %#x", pc, f->code);
		}
		assert_true(pc + 1 <= n);
	}
	fail_msg("the filter runs off its end");
	return 0;
}

static struct inproc ip;
static struct vmr_sysmap sys;

static int setup(void **state)
{
	(void)state;
	memset(&ip, 0, sizeof(ip));
	ip.img.hdr.gate_ip = GATE;
	ip.img.hdr.clone_ip = CLONE;
	assert_int_equal(vmr_sysmap_init(&sys), 0);
	assert_int_equal(ip_filter_build(&ip, &sys), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(ip.filter);
	return 0;
}

static uint32_t verdict(int nr, uint64_t ipaddr, const uint64_t *args)
{
	struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = ipaddr };
	if (args)
		memcpy(d.args, args, sizeof(d.args));
	return run(ip.filter, ip.sock_filter_len, &d);
}

#define TRAP (SECCOMP_RET_TRAP | IP_TRAP_DATA)
#define ALLOW SECCOMP_RET_ALLOW

static void test_recorded_calls_trap_elsewhere(void **state)
{
	(void)state;
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		int nr = sys.nr_of_op[op];
		if (nr < 0)
			continue;
		uint64_t a[6] = { 0 };
		if (verdict(nr, 0x7f0000001234, a) != TRAP)
			fail_msg("op %u (nr %d) not trapped", op, nr);
		if (verdict(nr, GATE, a) != ALLOW)
			fail_msg("op %u (nr %d) from the gate not allowed", op, nr);
		/* the clone instruction is allowed everything the gate is */
		if (verdict(nr, CLONE, a) != ALLOW)
			fail_msg("op %u (nr %d) from the clone site not allowed", op, nr);
		/* an address with the gate's low half but another high one */
		if (verdict(nr, GATE ^ (1ull << 40), a) != TRAP)
			fail_msg("op %u (nr %d): only the low half of the ip checked", op, nr);
	}
}

static void test_runtime_calls(void **state)
{
	(void)state;
	static const int always[] = { SYS_clone, SYS_clone3, SYS_fork, SYS_vfork, SYS_execve,
				      SYS_execveat, SYS_exit, SYS_exit_group, SYS_wait4, SYS_waitid,
				      SYS_rt_sigaction, SYS_rt_sigprocmask, SYS_rt_sigsuspend };
	uint64_t a[6] = { 0 };
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
		assert_int_equal(verdict(always[i], 0x400000, a), TRAP);
		assert_int_equal(verdict(always[i], GATE, a), ALLOW);
	}
	/* others pass */
	assert_int_equal(verdict(SYS_read, 0x400000, a), ALLOW);
	assert_int_equal(verdict(SYS_getpid, 0x400000, a), ALLOW);
	assert_int_equal(verdict(SYS_rt_sigreturn, 0x400000, a), ALLOW);
}

static void test_conditional_calls(void **state)
{
	(void)state;
	uint64_t a[6] = { 0 };
	/* waits with a temporary mask: only when a mask is given */
	assert_int_equal(verdict(SYS_ppoll, 0x400000, a), ALLOW);
	a[3] = 0x7ffd00001000;
	assert_int_equal(verdict(SYS_ppoll, 0x400000, a), TRAP);
	a[3] = 1ull << 40; /* (the high half alone) */
	assert_int_equal(verdict(SYS_ppoll, 0x400000, a), TRAP);
	memset(a, 0, sizeof(a));
	assert_int_equal(verdict(SYS_epoll_pwait, 0x400000, a), ALLOW);
	a[4] = 0x1000;
	assert_int_equal(verdict(SYS_epoll_pwait, 0x400000, a), TRAP);
	memset(a, 0, sizeof(a));
	a[5] = 0x1000;
	assert_int_equal(verdict(SYS_pselect6, 0x400000, a), TRAP);
	/* arch_prctl: ARCH_SET_GS only */
	memset(a, 0, sizeof(a));
	a[0] = 0x1001;
	assert_int_equal(verdict(SYS_arch_prctl, 0x400000, a), TRAP);
	a[0] = 0x1002; /* ARCH_SET_FS */
	assert_int_equal(verdict(SYS_arch_prctl, 0x400000, a), ALLOW);
	a[0] = 0x1001 | (1ull << 32);
	assert_int_equal(verdict(SYS_arch_prctl, 0x400000, a), ALLOW);
}

static void test_runtime_mappings_pass(void **state)
{
	(void)state;
	uint64_t a[6] = { 0, 4096, 3, 0x22, (uint64_t)-1, IP_MAGIC_OFF };
	assert_int_equal(verdict(SYS_mmap, 0x7f0000001000, a), ALLOW);
	a[5] = IP_MAGIC_OFF + 4096;
	assert_int_equal(verdict(SYS_mmap, 0x7f0000001000, a), TRAP);
	a[5] = IP_MAGIC_OFF & 0xffffffffull; /* (the low half alone) */
	assert_int_equal(verdict(SYS_mmap, 0x7f0000001000, a), TRAP);
	/* the tag means nothing to other calls */
	a[5] = IP_MAGIC_OFF;
	assert_int_equal(verdict(SYS_munmap, 0x7f0000001000, a), TRAP);
}

static void test_other_abis_pass(void **state)
{
	(void)state;
	struct seccomp_data d = { .nr = 90 /* i386 mmap */, .arch = AUDIT_ARCH_I386,
				  .instruction_pointer = 0x8048000 };
	assert_int_equal(run(ip.filter, ip.sock_filter_len, &d), ALLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_calls_trap_elsewhere),
		cmocka_unit_test(test_runtime_calls),
		cmocka_unit_test(test_conditional_calls),
		cmocka_unit_test(test_runtime_mappings_pass),
		cmocka_unit_test(test_other_abis_pass),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
