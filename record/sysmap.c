/*
 * sysmap.c - one table drives both the seccomp filter and the decoding of
 * stops: every op of vmt_op_info() is resolved by its kernel syscall name
 * with libseccomp, and the resulting numbers are the filter's rules and the
 * tracer's nr -> op map.
 */
#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <unistd.h>
#include "record_int.h"

/* Syscalls newer than the libseccomp this may be built with.  These numbers
 * come from the unified syscall table (same on every architecture that
 * uses it, x86_64 and arm64 included). */
static const struct {
	const char *name;
	int nr;
} newer[] = {
	{ "mseal", 462 },
};

static int resolve(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr >= 0)
		return nr;
#if defined(__x86_64__) || defined(__aarch64__)
	for (size_t i = 0; i < sizeof(newer) / sizeof(newer[0]); i++)
		if (!strcmp(newer[i].name, name))
			return newer[i].nr;
#endif
	return -1;
}

int vmr_sysmap_init(struct vmr_sysmap *m)
{
	memset(m, 0, sizeof(*m));
	m->arch = seccomp_arch_native();
	for (uint32_t op = 0; op < VMT_OP__COUNT; op++) {
		const struct vmt_op_info *oi = vmt_op_info(op);
		int nr = oi && oi->sysname ? resolve(oi->sysname) : -1;

		m->nr_of_op[op] = -1;
		if (nr < 0 || nr >= VMR_MAX_NR)
			continue; /* this arch lacks the call */
		m->nr_of_op[op] = nr;
		m->op_of_nr[nr] = (uint8_t)op;
	}
	return m->nr_of_op[VMT_OP_MMAP] >= 0 ? 0 : -ENOENT;
}

/* The 32-bit personality of this arch, whose calls we cannot decode but
 * must not miss silently: they are traced and counted as lost. */
static uint32_t compat_arch(void)
{
#if defined(__x86_64__)
	return SCMP_ARCH_X86;
#elif defined(__aarch64__)
	return SCMP_ARCH_ARM;
#else
	return 0;
#endif
}

/* A filter with SCMP_ACT_TRACE for the ops of m on one arch (the native one
 * when compat == 0) and ALLOW for everything else.  Two filters rather than
 * one two-arch filter: libseccomp refuses, for every arch, a rule whose
 * number it cannot translate (mseal in older libseccomp), and a native-only
 * filter takes any number. */
static int load_one(const struct vmr_sysmap *m, uint32_t compat)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int err = 0;

	if (!ctx)
		return -ENOMEM;
	/* Calls of other ABIs pass this filter; the other one sees them. */
	seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW);
	/* As root no-new-privs is not needed; leaving it off keeps setuid
	 * programs behaving as they would without vmrec. */
	if (geteuid() == 0)
		seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (compat) {
		if (seccomp_arch_add(ctx, compat) ||
		    seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE)) {
			seccomp_release(ctx);
			return 0; /* no compat support: nothing to catch */
		}
	}
	for (uint32_t op = 1; op < VMT_OP__COUNT && !err; op++) {
		int nr = m->nr_of_op[op];
		if (nr < 0)
			continue;
		/* Native numbers; libseccomp translates them by name for a
		 * compat filter (and fails for calls it cannot translate). */
		err = seccomp_rule_add(ctx, SCMP_ACT_TRACE(op), nr, 0);
		if (compat && err)
			err = 0;
	}
	if (!err && compat)
		/* 32-bit mmap goes through mmap2, which has no native number
		 * (libseccomp gives it a pseudo number). */
		seccomp_rule_add(ctx, SCMP_ACT_TRACE(VMT_OP_MMAP),
				 seccomp_syscall_resolve_name("mmap2"), 0);
	if (!err)
		err = seccomp_load(ctx);
	seccomp_release(ctx);
	return err;
}

int vmr_filter_load(const struct vmr_sysmap *m)
{
	int err = load_one(m, 0);

	if (!err && compat_arch())
		err = load_one(m, compat_arch());
	return err;
}
