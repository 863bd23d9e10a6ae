/*
 * test_render.c - names, flag tables, text/JSON rendering, struct vmt_buf
 * and the symbol table of libvmtrace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "tgen.h"
#include "vmtrace.h"
#include "vmtutil.h"

/* ---- helpers ------------------------------------------------------------ */

/* Also into a buffer with a memo (vmt_buf_memoize), twice: made, then
 * copied from the memo. */
static void check_text(const struct vmt_event *ev, const char *want)
{
	struct vmt_buf b = {0}, m = {0};

	vmt_render_text(&b, ev);
	assert_false(b.oom);
	assert_non_null(b.data);
	assert_string_equal(b.data, want);
	vmt_buf_free(&b);
	assert_int_equal(vmt_buf_memoize(&m), 0);
	for (int i = 0; i < 2; i++) {
		vmt_buf_reset(&m);
		vmt_render_text(&m, ev);
		assert_string_equal(m.data, want);
	}
	vmt_buf_free(&m);
}

static void check_json(const struct vmt_event *ev, const char *want)
{
	struct vmt_buf b = {0};

	vmt_render_json(&b, ev);
	assert_false(b.oom);
	assert_non_null(b.data);
	assert_string_equal(b.data, want);
	vmt_buf_free(&b);
}

static void check_flags(const struct vmt_flag_name *t, uint64_t v,
			const char *zero, const char *want)
{
	struct vmt_buf b = {0};

	vmt_render_flags(&b, t, v, zero);
	assert_string_equal(b.data, want);
	vmt_buf_free(&b);
}

static void check_json_str(const char *in, const char *want)
{
	struct vmt_buf b = {0};

	vmt_buf_json_str(&b, in);
	assert_string_equal(b.data, want);
	vmt_buf_free(&b);
}

#define A 0x7f3a2c000000ull

/* ---- names -------------------------------------------------------------- */

static int seccomp_at_least(unsigned major, unsigned minor)
{
	const struct scmp_version *v = seccomp_version();

	return v->major > major || (v->major == major && v->minor >= minor);
}

static void test_op_table(void **state)
{
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		const struct vmt_op_info *oi = vmt_op_info(op);
		int addr_ret = op == VMT_OP_MMAP || op == VMT_OP_MREMAP ||
			       op == VMT_OP_BRK || op == VMT_OP_SHMAT;

		assert_non_null(oi);
		assert_non_null(oi->name);
		assert_non_null(oi->sysname);
		assert_true(oi->nargs <= VMT_MAX_ARGS);
		for (uint32_t i = 0; i < oi->nargs; i++)
			assert_true(oi->arg[i] >= VMT_ARG_ADDR &&
				    oi->arg[i] <= VMT_ARG_SHMFLG);
		assert_int_equal(oi->ret, addr_ret ? VMT_RET_ADDR : VMT_RET_INT);
		assert_string_equal(vmt_op_name(op), oi->name);
		assert_int_equal(vmt_op_from_name(oi->name), op);
		/* The recorder builds its seccomp filter from sysname.
		 * libseccomp learnt mseal in 2.6.0 (older ones resolve it
		 * to nothing; the recorder then needs its number, 462). */
		if (op == VMT_OP_MSEAL && !seccomp_at_least(2, 6))
			continue;
		assert_true(seccomp_syscall_resolve_name_arch(
				    SCMP_ARCH_X86_64, oi->sysname) >= 0);
		assert_true(seccomp_syscall_resolve_name_arch(
				    SCMP_ARCH_AARCH64, oi->sysname) >= 0);
	}
	assert_null(vmt_op_info(0));
	assert_null(vmt_op_info(VMT_OP__COUNT));
	assert_null(vmt_op_info(UINT32_MAX));
	assert_null(vmt_op_name(VMT_OP__COUNT));
	assert_int_equal(vmt_op_from_name("mmap2"), 0);
	assert_int_equal(vmt_op_from_name(NULL), 0);
	assert_int_equal(vmt_op_info(VMT_OP_MMAP)->nargs, 6);
	assert_int_equal(vmt_op_info(VMT_OP_MREMAP)->nargs, 5);
	assert_int_equal(vmt_op_info(VMT_OP_PROCESS_MADVISE)->nargs, 5);
	assert_int_equal(vmt_op_info(VMT_OP_MUNLOCKALL)->nargs, 0);
	assert_string_equal(vmt_op_info(VMT_OP_MSEAL)->sysname, "mseal");
	assert_string_equal(vmt_op_info(VMT_OP_PKEY_MPROTECT)->sysname,
			    "pkey_mprotect");
}

static void test_kind_names(void **state)
{
	static const char *const names[] = {
		NULL, "syscall", "map_file", "thread_start", "thread_exit",
		"process_start", "exec", "process_exit", "maps", "touch",
		"fault", "stack", "symbol", "string", "lost", "counters",
	};

	assert_int_equal(sizeof(names) / sizeof(names[0]), VMT_EV__COUNT);
	for (uint32_t k = 1; k < VMT_EV__COUNT; k++) {
		assert_string_equal(vmt_kind_name(k), names[k]);
		assert_int_equal(vmt_kind_from_name(names[k]), k);
	}
	assert_null(vmt_kind_name(0));
	assert_null(vmt_kind_name(VMT_EV__COUNT));
	assert_int_equal(vmt_kind_from_name("SYSCALL"), 0);
	assert_int_equal(vmt_kind_from_name(NULL), 0);
}

static void test_errno_names(void **state)
{
	assert_string_equal(vmt_errno_name(12), "ENOMEM");
	assert_string_equal(vmt_errno_name(-12), "ENOMEM");
	assert_string_equal(vmt_errno_name(22), "EINVAL");
	assert_string_equal(vmt_errno_name(26), "ETXTBSY");
	assert_string_equal(vmt_errno_name(75), "EOVERFLOW");
	assert_string_equal(vmt_errno_name(133), "EHWPOISON");
	assert_string_equal(vmt_errno_name(512), "ERESTARTSYS");
	assert_string_equal(vmt_errno_text(12), "Cannot allocate memory");
	for (int e = 1; e <= 133; e++)
		if (e != 41 && e != 58) {
			assert_non_null(vmt_errno_name(e));
			assert_non_null(vmt_errno_text(e));
		}
	assert_null(vmt_errno_name(0));
	assert_null(vmt_errno_name(134));
	assert_null(vmt_errno_name(4095));
	assert_null(vmt_errno_name(-2147483647 - 1));
}

static void test_flags(void **state)
{
	check_flags(vmt_prot_names, 0, "PROT_NONE", "PROT_NONE");
	check_flags(vmt_prot_names, 0, NULL, "0");
	check_flags(vmt_prot_names, 7, NULL, "PROT_READ|PROT_WRITE|PROT_EXEC");
	check_flags(vmt_prot_names, 0x101, NULL, "PROT_READ|0x100");
	check_flags(vmt_prot_names, 0x01000003, NULL,
		    "PROT_READ|PROT_WRITE|PROT_GROWSDOWN");
	check_flags(vmt_mcl_names, 0x17, NULL,
		    "MCL_CURRENT|MCL_FUTURE|MCL_ONFAULT|0x10");
	check_flags(vmt_madv_names, 4, NULL, "MADV_DONTNEED");
	check_flags(vmt_madv_names, 0, NULL, "MADV_NORMAL");
	check_flags(vmt_madv_names, 102, NULL, "MADV_GUARD_INSTALL");
	check_flags(vmt_madv_names, 999, NULL, "999");
	check_flags(vmt_map_type_names, 3, NULL, "MAP_SHARED_VALIDATE");
	check_flags(vmt_shm_names, 010000 | 040000, NULL,
		    "SHM_RDONLY|SHM_REMAP");
	/* MAP_*: type first, then bits, then the hugetlb size field. */
	check_flags(vmt_map_flag_names, 0x22, NULL,
		    "MAP_PRIVATE|MAP_ANONYMOUS");
	check_flags(vmt_map_flag_names, 0x3 | 0x80000, NULL,
		    "MAP_SHARED_VALIDATE|MAP_SYNC");
	check_flags(vmt_map_flag_names, 0x22 | 0x40000 | (21ull << 26), NULL,
		    "MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB|MAP_HUGE_2MB");
	check_flags(vmt_map_flag_names, 0x21 | 0x40000 | (30ull << 26), NULL,
		    "MAP_SHARED|MAP_ANONYMOUS|MAP_HUGETLB|MAP_HUGE_1GB");
	check_flags(vmt_map_flag_names, 0x22 | 0x40000 | (16ull << 26), NULL,
		    "MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB|MAP_HUGE_64KB");
	check_flags(vmt_map_flag_names, 0x22 | 0x40000 | (40ull << 26), NULL,
		    "MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB|MAP_HUGE_1024GB");
	check_flags(vmt_map_flag_names, 0x22 | 0x40000 | (63ull << 26), NULL,
		    "MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB|63<<MAP_HUGE_SHIFT");
	check_flags(vmt_map_flag_names, 0x22 | 0x4000000, NULL,
		    "MAP_PRIVATE|MAP_ANONYMOUS|MAP_UNINITIALIZED");
	check_flags(vmt_map_flag_names, 0x12 | 0x100000 | 0x20000, NULL,
		    "MAP_PRIVATE|MAP_FIXED|MAP_STACK|MAP_FIXED_NOREPLACE");
	check_flags(vmt_map_flag_names, 0x24, NULL, "MAP_ANONYMOUS|0x4");
	check_flags(vmt_map_flag_names, 0x2 | 0x200, NULL, "MAP_PRIVATE|0x200");
	check_flags(vmt_map_flag_names, 0, NULL, "0");
}

/* ---- syscall text ------------------------------------------------------- */

static void test_every_op_renders(void **state)
{
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		const struct vmt_op_info *oi = vmt_op_info(op);
		uint64_t args[VMT_MAX_ARGS] = {A, 4096, 1, 2, 3, 4};
		struct vmt_event ev = tg_ev_sc(0, 0, op, 0, oi->nargs, args);
		struct vmt_buf b = {0};
		size_t n = strlen(oi->name);

		vmt_render_text(&b, &ev);
		assert_non_null(b.data);
		assert_memory_equal(b.data, oi->name, n);
		assert_int_equal(b.data[n], '(');
		assert_non_null(strstr(b.data, ") = 0"));
		vmt_buf_reset(&b);
		ev.u.sc.result = -22;
		vmt_render_text(&b, &ev);
		assert_non_null(strstr(b.data, ") = -1 EINVAL (Invalid argument)"));
		vmt_buf_reset(&b);
		vmt_render_json(&b, &ev);
		assert_non_null(strstr(b.data, "\"errno\":\"EINVAL\""));
		assert_int_equal(b.data[b.len - 1], '}');
		vmt_buf_free(&b);
	}
}

static void test_syscall_text(void **state)
{
	struct vmt_event ev;

	ev = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, 0, 4096, 3, 0x22, FD_NONE, 0);
	check_text(&ev, "mmap(NULL, 4096, PROT_READ|PROT_WRITE, "
			"MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f3a2c000000");
	ev = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, 0, 8192, 5, 0x802, 3, 0x2000);
	check_text(&ev, "mmap(NULL, 8192, PROT_READ|PROT_EXEC, "
			"MAP_PRIVATE|MAP_DENYWRITE, 3, 0x2000) = 0x7f3a2c000000");
	ev = TG_SC(0, 0, VMT_OP_MMAP, -12, 0, 1ull << 40, 3, 0x22, FD_NONE, 0);
	check_text(&ev, "mmap(NULL, 1099511627776, PROT_READ|PROT_WRITE, "
			"MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = -1 ENOMEM "
			"(Cannot allocate memory)");
	ev = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, A, 4096, 0, 0x32, FD_NONE, 0);
	check_text(&ev, "mmap(0x7f3a2c000000, 4096, PROT_NONE, "
			"MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = "
			"0x7f3a2c000000");
	ev = TG_SC(0, 0, VMT_OP_MUNMAP, 0, A, 4096);
	check_text(&ev, "munmap(0x7f3a2c000000, 4096) = 0");
	ev = TG_SC(0, 0, VMT_OP_MUNMAP, -22, A + 1, 4096);
	check_text(&ev, "munmap(0x7f3a2c000001, 4096) = -1 EINVAL "
			"(Invalid argument)");
	ev = TG_SC(0, 0, VMT_OP_MPROTECT, 0, A, 4096, 0);
	check_text(&ev, "mprotect(0x7f3a2c000000, 4096, PROT_NONE) = 0");
	ev = TG_SC(0, 0, VMT_OP_MPROTECT, 0, A, 4096, 0x101);
	check_text(&ev, "mprotect(0x7f3a2c000000, 4096, PROT_READ|0x100) = 0");
	ev = TG_SC(0, 0, VMT_OP_PKEY_MPROTECT, 0, A, 4096, 1, 2);
	check_text(&ev, "pkey_mprotect(0x7f3a2c000000, 4096, PROT_READ, 2) = 0");
	ev = TG_SC(0, 0, VMT_OP_MADVISE, 0, A, 8192, 4);
	check_text(&ev, "madvise(0x7f3a2c000000, 8192, MADV_DONTNEED) = 0");
	ev = TG_SC(0, 0, VMT_OP_MADVISE, -22, A, 8192, 77);
	check_text(&ev, "madvise(0x7f3a2c000000, 8192, 77) = -1 EINVAL "
			"(Invalid argument)");
	ev = TG_SC(0, 0, VMT_OP_PROCESS_MADVISE, 8192, 3, 0x7ffd1000, 2, 20, 0);
	check_text(&ev, "process_madvise(3, 0x7ffd1000, 2, MADV_COLD, 0) = 8192");
	ev = TG_SC(0, 0, VMT_OP_MREMAP, (int64_t)(A + 0x1000000), A, 4096, 8192, 3,
		   A + 0x1000000);
	check_text(&ev, "mremap(0x7f3a2c000000, 4096, 8192, "
			"MREMAP_MAYMOVE|MREMAP_FIXED, 0x7f3a2d000000) = "
			"0x7f3a2d000000");
	ev = TG_SC(0, 0, VMT_OP_MLOCK, -1, A, 4096);
	check_text(&ev, "mlock(0x7f3a2c000000, 4096) = -1 EPERM "
			"(Operation not permitted)");
	ev = TG_SC(0, 0, VMT_OP_MLOCK2, 0, A, 4096, 1);
	check_text(&ev, "mlock2(0x7f3a2c000000, 4096, MLOCK_ONFAULT) = 0");
	ev = TG_SC(0, 0, VMT_OP_MUNLOCK, 0, A, 4096);
	check_text(&ev, "munlock(0x7f3a2c000000, 4096) = 0");
	ev = TG_SC(0, 0, VMT_OP_MLOCKALL, 0, 3);
	check_text(&ev, "mlockall(MCL_CURRENT|MCL_FUTURE) = 0");
	ev = tg_ev_sc(0, 0, VMT_OP_MUNLOCKALL, 0, 0, NULL);
	check_text(&ev, "munlockall() = 0");
	ev = TG_SC(0, 0, VMT_OP_BRK, 0x55d0c0a4e000, 0);
	check_text(&ev, "brk(NULL) = 0x55d0c0a4e000");
	ev = TG_SC(0, 0, VMT_OP_BRK, 0x55d0c0a6f000, 0x55d0c0a6f000);
	check_text(&ev, "brk(0x55d0c0a6f000) = 0x55d0c0a6f000");
	ev = TG_SC(0, 0, VMT_OP_MSYNC, 0, A, 4096, 6);
	check_text(&ev, "msync(0x7f3a2c000000, 4096, MS_INVALIDATE|MS_SYNC) = 0");
	ev = TG_SC(0, 0, VMT_OP_MINCORE, 0, A, 4096, 0x7ffd2000);
	check_text(&ev, "mincore(0x7f3a2c000000, 4096, 0x7ffd2000) = 0");
	ev = TG_SC(0, 0, VMT_OP_REMAP_FILE_PAGES, 0, A, 8192, 0, 3, 0);
	check_text(&ev, "remap_file_pages(0x7f3a2c000000, 8192, PROT_NONE, 3, "
			"0) = 0");
	ev = TG_SC(0, 0, VMT_OP_SHMAT, (int64_t)A, 5, 0, 010000);
	check_text(&ev, "shmat(5, NULL, SHM_RDONLY) = 0x7f3a2c000000");
	ev = TG_SC(0, 0, VMT_OP_SHMDT, 0, A);
	check_text(&ev, "shmdt(0x7f3a2c000000) = 0");
	ev = TG_SC(0, 0, VMT_OP_MSEAL, -38, A, 4096, 0);
	check_text(&ev, "mseal(0x7f3a2c000000, 4096, 0) = -1 ENOSYS "
			"(Function not implemented)");
}

static void test_syscall_edge_cases(void **state)
{
	struct vmt_event ev;
	struct vmt_buf b = {0};

	ev = TG_SC(0, 0, VMT_OP_MUNMAP, 0, A, 4096);
	ev.u.sc.flags = VMT_SC_NO_RESULT;
	check_text(&ev, "munmap(0x7f3a2c000000, 4096) = ?");
	ev = TG_SC(0, 0, VMT_OP_MUNMAP, -600, A, 4096);
	check_text(&ev, "munmap(0x7f3a2c000000, 4096) = -1 ERRNO_600 "
			"(Unknown error 600)");
	ev = TG_SC(0, 0, VMT_OP_MUNMAP, -512, A, 4096);
	check_text(&ev, "munmap(0x7f3a2c000000, 4096) = -1 ERESTARTSYS "
			"(To be restarted if SA_RESTART is set)");
	/* An op from a newer version: raw arguments in hex. */
	ev = tg_ev_sc(0, 0, 99, 5, 2, (uint64_t[]){1, 0x20});
	check_text(&ev, "op99(0x1, 0x20) = 5");
	/* A fd is an int: the kernel ignores the upper half. */
	ev = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, 0, 4096, 1, 0x1,
		   0xffffffffull, 0);
	check_text(&ev, "mmap(NULL, 4096, PROT_READ, MAP_SHARED, -1, 0) = "
			"0x7f3a2c000000");
	/* vmt_render_args alone. */
	ev = TG_SC(0, 0, VMT_OP_MPROTECT, 0, A, 4096, 3);
	vmt_render_args(&b, &ev.u.sc);
	assert_string_equal(b.data, "0x7f3a2c000000, 4096, PROT_READ|PROT_WRITE");
	vmt_buf_free(&b);
}

/* ---- other kinds -------------------------------------------------------- */

static void test_other_kinds_text(void **state)
{
	static const struct vmt_touch_run runs[] = {
		{3, VMT_PAGE_WRITTEN}, {11, VMT_PAGE_ABSENT}, {2, VMT_PAGE_READ},
	};
	static const uint64_t ips[] = {0x401234, 0x401300};
	static const struct vmt_map_entry ents[2];
	struct vmt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = VMT_EV_THREAD_START;
	ev.u.thread_start.parent_thread = 0;
	ev.u.thread_start.os_tid = 1234;
	check_text(&ev, "+++ thread_start tid=1234 parent=0 +++");
	ev.u.thread_start.parent_thread = VMT_NONE;
	check_text(&ev, "+++ thread_start tid=1234 parent=none +++");

	ev.kind = VMT_EV_THREAD_EXIT;
	ev.u.thread_exit.status = 0;
	check_text(&ev, "+++ thread_exit status=0 +++");

	ev.kind = VMT_EV_PROCESS_START;
	ev.u.process_start = (struct vmt_process_start){0, 1234, VMT_PROC_FORK};
	check_text(&ev, "+++ process_start pid=1234 parent=0 fork +++");
	ev.u.process_start = (struct vmt_process_start){VMT_NONE, 77,
							VMT_PROC_ROOT};
	check_text(&ev, "+++ process_start pid=77 parent=none root +++");

	ev.kind = VMT_EV_EXEC;
	ev.u.exec.path = "/bin/ls";
	check_text(&ev, "+++ exec \"/bin/ls\" +++");

	ev.kind = VMT_EV_PROCESS_EXIT;
	ev.u.process_exit.status = 0;
	check_text(&ev, "+++ process_exit status=0 (exited 0) +++");
	ev.u.process_exit.status = 3 << 8;
	check_text(&ev, "+++ process_exit status=768 (exited 3) +++");
	ev.u.process_exit.status = 11;
	check_text(&ev, "+++ process_exit status=11 (killed by SIGSEGV) +++");
	ev.u.process_exit.status = 0x80 | 6;
	check_text(&ev, "+++ process_exit status=134 (killed by SIGABRT, "
			"core dumped) +++");

	ev.kind = VMT_EV_MAP_FILE;
	ev.u.file = (struct vmt_map_file){"/usr/lib/x.so", (8 << 8) | 1, 1234,
					  4096, 02000000, 0100644};
	check_text(&ev, "map_file(\"/usr/lib/x.so\", dev=8:1, ino=1234, "
			"size=4096, flags=O_RDONLY|O_CLOEXEC)");
	/* makedev(259, 300): minor above 255 spills into bits 20.. */
	ev.u.file.open_flags = 2 | 0100000;
	ev.u.file.dev = (259 << 8) | (300 & 0xff) | ((300 & ~0xff) << 12);
	check_text(&ev, "map_file(\"/usr/lib/x.so\", dev=259:300, ino=1234, "
			"size=4096, flags=O_RDWR|O_LARGEFILE)");

	ev.kind = VMT_EV_MAPS;
	ev.u.maps = (struct vmt_maps){23, ents};
	check_text(&ev, "maps(23 mappings)");

	ev.kind = VMT_EV_TOUCH;
	ev.u.touch = (struct vmt_touch){0x7f0000000000, 16, VMT_TOUCH_BEFORE_OP,
					3, runs};
	check_text(&ev, "touch(0x7f0000000000, 16 pages: 3 written, 2 read, "
			"11 absent, before op)");
	ev.u.touch.reason = VMT_TOUCH_EXIT;
	ev.u.touch.nruns = 1;
	ev.u.touch.npages = 3;
	check_text(&ev, "touch(0x7f0000000000, 3 pages: 3 written, exit)");

	ev.kind = VMT_EV_FAULT;
	ev.u.fault = (struct vmt_fault){0x7f0000001000, 0x401234,
					VMT_FAULT_WRITE, 0};
	check_text(&ev, "fault(0x7f0000001000, write, ip=0x401234)");
	ev.u.fault.access = 0;
	check_text(&ev, "fault(0x7f0000001000, unknown, ip=0x401234)");
	ev.u.fault.access = VMT_FAULT_READ;
	ev.u.fault.flags = VMT_FLT_MAJOR;
	check_text(&ev, "fault(0x7f0000001000, read, ip=0x401234, major)");
	ev.u.fault = (struct vmt_fault){0, 0, 0, VMT_FLT_GUP | VMT_FLT_CALL | VMT_FLT_MAJOR};
	check_text(&ev, "fault(0, unknown, ip=0, major|gup|call)");

	ev.kind = VMT_EV_STACK;
	ev.u.stack = (struct vmt_stack){3, 2, ips};
	check_text(&ev, "stack #3 [0x401234 0x401300]");

	ev.kind = VMT_EV_SYMBOL;
	ev.u.symbol = (struct vmt_symbol){0x401234, 2, 5, 0x12};
	check_text(&ev, "symbol 0x401234 = string#5+0x12 in string#2");

	ev.kind = VMT_EV_STRING;
	ev.u.string = (struct vmt_string){5, "main"};
	check_text(&ev, "string #5 \"main\"");
	ev.u.string.str = "a\"b\n\x1b";
	check_text(&ev, "string #5 \"a\\\"b\\n\\x1b\"");

	ev.kind = VMT_EV_LOST;
	ev.u.lost = (struct vmt_lost){12, VMT_LOST_FAULTS};
	check_text(&ev, "lost(12 faults)");
}

/* ---- JSON --------------------------------------------------------------- */

static void test_json_escaping(void **state)
{
	check_json_str("plain", "\"plain\"");
	check_json_str("", "\"\"");
	check_json_str(NULL, "null");
	check_json_str("q\"b\\s/", "\"q\\\"b\\\\s/\"");
	check_json_str("\b\f\n\r\t\x01\x1f\x7f",
		       "\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"");
	/* Valid UTF-8 passes through; stray bytes become \u00XX. */
	check_json_str("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		       "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	check_json_str("a\xff" "b", "\"a\\u00ffb\"");
	check_json_str("x\xc3", "\"x\\u00c3\"");		/* truncated */
	check_json_str("\xc0\xaf", "\"\\u00c0\\u00af\"");	/* overlong */
	check_json_str("\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\""); /* surrogate */
	check_json_str("\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\"");
}

/* Bytes that a JSON string would need escaped, or that are not plain
 * printable ASCII: none may be in what is put without escaping. */
static int plain(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f || *s == '"' || *s == '\\')
			return 0;
	return 1;
}

/* A JSON text whose strings all are plain: each string is followed by
 * what may follow one (a stray quote in a name would not be). */
static int json_plain(const char *j)
{
	for (const char *p = j; *p; p++) {
		if (*p != '"')
			continue;
		const char *q = strchr(p + 1, '"');
		if (!q || !strchr(":,}]", q[1]))
			return 0;
		for (const char *c = p + 1; c < q; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f || *c == '\\')
				return 0;
		p = q;
	}
	return 1;
}

/* vmt_buf_json_name and the unescaped text of the kinds without pointers
 * (vmtutil.h) rest on this: every built-in name, and the text and JSON
 * of every such event, are plain ASCII, whatever its numbers. */
static void test_plain_text(void **state)
{
	(void)state;
	for (uint32_t op = 0; op < VMT_OP__COUNT + 2; op++)
		assert_true(!vmt_op_name(op) || plain(vmt_op_name(op)));
	for (uint32_t k = 0; k < VMT_EV__COUNT + 2; k++)
		assert_true(!vmt_kind_name(k) || plain(vmt_kind_name(k)));
	for (int e = 1; e < 4096; e++)
		assert_true(!vmt_errno_name(e) || plain(vmt_errno_name(e)));
	struct vmt_buf b = {0};
	for (uint32_t op = 0; op < VMT_OP__COUNT + 2; op++) {
		for (int pat = 0; pat < 64 + 4; pat++) {
			uint64_t args[VMT_MAX_ARGS];
			for (int i = 0; i < VMT_MAX_ARGS; i++)
				args[i] = pat < 64 ? 1ull << ((pat + 7 * i) % 64)
					: pat == 64 ? 0 : pat == 65 ? ~0ull
					: (uint64_t)(-(int64_t)(i + 1));
			int64_t result = pat < 64 ? -(int64_t)pat * 3 : pat == 66 ? (int64_t)A : 0;
			const struct vmt_op_info *oi = vmt_op_info(op);
			struct vmt_event ev = tg_ev_sc(0, 0, op, result,
						       oi ? oi->nargs : VMT_MAX_ARGS, args);
			if (pat == 67)
				ev.u.sc.flags |= VMT_SC_NO_RESULT;
			vmt_buf_reset(&b);
			vmt_render_text(&b, &ev);
			assert_true(plain(b.data));
			vmt_buf_reset(&b);
			vmt_render_args(&b, &ev.u.sc);
			assert_true(!b.len || plain(b.data));
			vmt_buf_reset(&b);
			vmt_render_json(&b, &ev);
			assert_true(json_plain(b.data));
		}
	}
	/* the other kinds without pointers, their enums past the known */
	for (uint32_t k = 0; k < VMT_EV__COUNT + 2; k++) {
		/* (a TOUCH without runs: its reason is a name) */
		if (k == VMT_EV_SYSCALL || (vmt_kind_has_pointers(k) && k != VMT_EV_TOUCH))
			continue;
		for (uint32_t v = 0; v < 40; v++) {
			struct vmt_event ev;
			memset(&ev, 0, sizeof(ev));
			ev.kind = k;
			memset(&ev.u, (int)v, sizeof(ev.u));
			if (k == VMT_EV_PROCESS_START)
				ev.u.process_start.how = v;
			else if (k == VMT_EV_LOST)
				ev.u.lost.what = v;
			else if (k == VMT_EV_FAULT)
				ev.u.fault.access = v, ev.u.fault.flags = v;
			else if (k == VMT_EV_TOUCH)
				ev.u.touch.reason = v, ev.u.touch.runs = NULL, ev.u.touch.nruns = 0;
			vmt_buf_reset(&b);
			vmt_render_text(&b, &ev);
			assert_true(plain(b.data));
			vmt_buf_reset(&b);
			vmt_render_json(&b, &ev);
			assert_true(json_plain(b.data));
		}
	}
	vmt_buf_free(&b);
}

static void test_json_syscall(void **state)
{
	struct vmt_event ev;

	ev = TG_SC(0, 0, VMT_OP_MMAP, (int64_t)A, 0, 4096, 3, 0x22, FD_NONE, 0);
	ev.thread = 2;
	ev.proc = 1;
	check_json(&ev,
		   "{\"kind\":\"syscall\",\"ts_ns\":1000,\"thread\":2,\"proc\":1,"
		   "\"op\":\"mmap\",\"args\":[0,4096,3,34,18446744073709551615,0],"
		   "\"result\":139887823028224,\"exit_ns\":1500,\"stack\":null,"
		   "\"flags\":0,\"text\":\"mmap(NULL, 4096, PROT_READ|PROT_WRITE, "
		   "MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f3a2c000000\"}");
	ev = TG_SC(0, 0, VMT_OP_MUNMAP, -22, 4097, 4096);
	ev.u.sc.stack_id = 7;
	check_json(&ev,
		   "{\"kind\":\"syscall\",\"ts_ns\":1000,\"thread\":0,\"proc\":0,"
		   "\"op\":\"munmap\",\"args\":[4097,4096],\"result\":-22,"
		   "\"exit_ns\":1500,\"stack\":7,\"flags\":0,\"errno\":\"EINVAL\","
		   "\"text\":\"munmap(0x1001, 4096) = -1 EINVAL (Invalid argument)\"}");
	ev.u.sc.flags = VMT_SC_NO_RESULT;
	check_json(&ev,
		   "{\"kind\":\"syscall\",\"ts_ns\":1000,\"thread\":0,\"proc\":0,"
		   "\"op\":\"munmap\",\"args\":[4097,4096],\"result\":null,"
		   "\"exit_ns\":null,\"stack\":7,\"flags\":1,"
		   "\"text\":\"munmap(0x1001, 4096) = ?\"}");
}

static void test_json_other_kinds(void **state)
{
	static const struct vmt_map_entry ents[] = {
		{0x400000, 0x401000, 0, (8 << 8) | 1, 42, VMT_PROT_R | VMT_PROT_X,
		 "/bin/x\"y"},
		{0x7ffd0000, 0x7ffd2000, 0, 0, 0,
		 VMT_PROT_R | VMT_PROT_W | VMT_MAPS_SHARED, ""},
	};
	static const struct vmt_touch_run runs[] = {
		{3, VMT_PAGE_WRITTEN}, {13, VMT_PAGE_ABSENT},
	};
	static const uint64_t ips[] = {0x401234, UINT64_MAX};
	struct vmt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = UINT64_MAX;
	ev.kind = VMT_EV_MAPS;
	ev.u.maps = (struct vmt_maps){2, ents};
	check_json(&ev,
		   "{\"kind\":\"maps\",\"ts_ns\":18446744073709551615,\"thread\":0,"
		   "\"proc\":0,\"count\":2,\"entries\":["
		   "{\"start\":4194304,\"end\":4198400,\"perms\":\"r-xp\","
		   "\"offset\":0,\"dev\":2049,\"ino\":42,\"path\":\"/bin/x\\\"y\"},"
		   "{\"start\":2147287040,\"end\":2147295232,\"perms\":\"rw-s\","
		   "\"offset\":0,\"dev\":0,\"ino\":0,\"path\":\"\"}]}");

	ev.ts_ns = 5;
	ev.kind = VMT_EV_TOUCH;
	ev.u.touch = (struct vmt_touch){0x7f0000000000, 16, VMT_TOUCH_BEFORE_OP,
					2, runs};
	check_json(&ev,
		   "{\"kind\":\"touch\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"start\":139637976727552,\"npages\":16,\"reason\":\"before_op\","
		   "\"runs\":[[3,3],[13,0]]}");

	/* a fault's flags: a key each, there when set */
	ev.kind = VMT_EV_FAULT;
	ev.u.fault = (struct vmt_fault){4096, 16, VMT_FAULT_WRITE, 0};
	check_json(&ev,
		   "{\"kind\":\"fault\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"addr\":4096,\"ip\":16,\"access\":2}");
	ev.u.fault = (struct vmt_fault){0, 0, 0, VMT_FLT_MAJOR | VMT_FLT_GUP | VMT_FLT_CALL};
	check_json(&ev,
		   "{\"kind\":\"fault\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"addr\":0,\"ip\":0,\"access\":0,\"major\":true,\"gup\":true,\"call\":true}");

	ev.kind = VMT_EV_STACK;
	ev.u.stack = (struct vmt_stack){0, 2, ips};
	check_json(&ev,
		   "{\"kind\":\"stack\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"id\":0,\"depth\":2,\"ips\":[4198964,18446744073709551615]}");

	ev.kind = VMT_EV_PROCESS_EXIT;
	ev.u.process_exit.status = 9;
	check_json(&ev,
		   "{\"kind\":\"process_exit\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"status\":9,\"exit_code\":null,\"signal\":9}");

	ev.kind = VMT_EV_THREAD_START;
	ev.u.thread_start = (struct vmt_thread_start){VMT_NONE, 99};
	check_json(&ev,
		   "{\"kind\":\"thread_start\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"parent_thread\":null,\"os_tid\":99}");

	ev.kind = VMT_EV_STRING;
	ev.u.string = (struct vmt_string){1, "tab\there"};
	check_json(&ev,
		   "{\"kind\":\"string\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"id\":1,\"str\":\"tab\\there\"}");

	ev.kind = VMT_EV_LOST;
	ev.u.lost = (struct vmt_lost){12, VMT_LOST_EVENTS};
	check_json(&ev,
		   "{\"kind\":\"lost\",\"ts_ns\":5,\"thread\":0,\"proc\":0,"
		   "\"count\":12,\"what\":\"events\"}");

	/* Every kind produces one object, also a kind from a newer version. */
	for (uint32_t k = 1; k <= VMT_EV__COUNT; k++) {
		struct vmt_buf b = {0};

		memset(&ev, 0, sizeof(ev));
		ev.kind = k;
		vmt_render_json(&b, &ev);
		assert_int_equal(b.data[0], '{');
		assert_int_equal(b.data[b.len - 1], '}');
		vmt_buf_reset(&b);
		vmt_render_text(&b, &ev);
		assert_true(b.len > 0);
		vmt_buf_free(&b);
	}
}

/* ---- vmt_buf ------------------------------------------------------------ */

static void test_buf(void **state)
{
	struct vmt_buf b = {0};
	char big[10001];

	vmt_buf_puts(&b, "");
	vmt_buf_printf(&b, "%d-%s", 42, "x");
	assert_string_equal(b.data, "42-x");
	assert_int_equal(b.len, 4);
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 10; i++)
		vmt_buf_printf(&b, "%s", big);
	assert_int_equal(b.len, 4 + 100000);
	assert_int_equal(strlen(b.data), b.len);
	assert_true(b.cap > b.len);
	vmt_buf_reset(&b);
	assert_int_equal(b.len, 0);
	vmt_buf_puts(&b, "again");
	assert_string_equal(b.data, "again");
	/* After an allocation failure appends are dropped, not half done. */
	b.oom = 1;
	vmt_buf_puts(&b, "lost");
	vmt_buf_printf(&b, "%s", "lost");
	vmt_buf_json_str(&b, "lost");
	assert_string_equal(b.data, "again");
	vmt_buf_reset(&b);
	assert_false(b.oom);
	vmt_buf_free(&b);
	assert_null(b.data);
	vmt_buf_free(&b);
	vmt_buf_free(NULL);
}

/* ---- symtab ------------------------------------------------------------- */

static void check_ip(const vmt_symtab *t, uint64_t ip, const char *want)
{
	struct vmt_buf b = {0};

	vmt_symtab_render_ip(t, &b, ip);
	assert_string_equal(b.data, want);
	vmt_buf_free(&b);
}

static void test_symtab_ids(void **state)
{
	vmt_symtab *t = vmt_symtab_new();
	uint64_t ips[3] = {0x401234, 0x401300, 0x7f0000001234};
	uint64_t *many = calloc(VMT_MAX_STACK_DEPTH + 1, sizeof(*many));
	const uint64_t *got;
	uint32_t depth;
	struct vmt_event ev;

	assert_non_null(t);
	assert_non_null(many);
	ev = tg_ev_string(0, "main");
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	ev = tg_ev_string(2, "gap");
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_string(0, "again");
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_string(4000000000u, "hostile");
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_string(VMT_NONE, "none");
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_string(1, NULL);
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_string(1, "/usr/lib/libc.so.6");
	assert_int_equal(vmt_symtab_add(t, &ev), 0);

	ev = tg_ev_stack(0, 3, ips);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	ev = tg_ev_stack(5, 3, ips);
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_stack(UINT32_MAX - 1, 3, ips);
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_stack(1, VMT_MAX_STACK_DEPTH + 1, many);
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_stack(1, 2, NULL);
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);
	ev = tg_ev_stack(1, VMT_MAX_STACK_DEPTH, many);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	ev = tg_ev_stack(2, 0, NULL);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);

	/* Stacks are copies. */
	ips[0] = 0;
	got = vmt_symtab_stack(t, 0, &depth);
	assert_non_null(got);
	assert_int_equal(depth, 3);
	assert_int_equal(got[0], 0x401234);
	assert_int_equal(got[2], 0x7f0000001234);
	got = vmt_symtab_stack(t, 1, &depth);
	assert_int_equal(depth, VMT_MAX_STACK_DEPTH);
	assert_non_null(vmt_symtab_stack(t, 2, &depth));
	assert_int_equal(depth, 0);
	assert_null(vmt_symtab_stack(t, 3, &depth));
	assert_int_equal(depth, 0);
	assert_null(vmt_symtab_stack(t, VMT_NONE, &depth));

	/* Symbols: known strings, forward references, garbage ids. */
	ev = tg_ev_symbol(0x401234, 1, 0, 0x12);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	ev = tg_ev_symbol(0x401300, VMT_NONE, 0, 0);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	ev = tg_ev_symbol(0x7f0000001234, 1, VMT_NONE, 0x1234);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	ev = tg_ev_symbol(0x500000, 9, 8, 0);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	ev = tg_ev_symbol(0x600000, 3000000000u, VMT_NONE, 0);
	assert_int_equal(vmt_symtab_add(t, &ev), VMT_E_CORRUPT);

	check_ip(t, 0x401234, "main+0x12 (libc.so.6)");
	check_ip(t, 0x401300, "main");
	check_ip(t, 0x7f0000001234, "0x7f0000001234 (libc.so.6+0x1234)");
	check_ip(t, 0x500000, "0x500000");
	check_ip(t, 0x999999, "0x999999");
	assert_string_equal(vmt_symtab_function(t, 0x401234), "main");
	assert_null(vmt_symtab_function(t, 0x7f0000001234));
	assert_null(vmt_symtab_function(t, 0x999999));

	/* Other kinds are ignored. */
	ev = TG_SC(0, 0, VMT_OP_MUNMAP, 0, A, 4096);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);

	free(many);
	vmt_symtab_free(t);
	vmt_symtab_free(NULL);
}

static void test_symtab_growth(void **state)
{
	vmt_symtab *t = vmt_symtab_new();
	char name[32];
	struct vmt_event ev;

	assert_non_null(t);
	for (uint32_t i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ev = tg_ev_string(i, name);
		assert_int_equal(vmt_symtab_add(t, &ev), 0);
		ev = tg_ev_symbol(0x400000 + 16 * (uint64_t)i, VMT_NONE, i, i);
		assert_int_equal(vmt_symtab_add(t, &ev), 0);
	}
	for (uint32_t i = 0; i < 20000; i += 997) {
		snprintf(name, sizeof(name), "f%u", i);
		assert_string_equal(
			vmt_symtab_function(t, 0x400000 + 16 * (uint64_t)i),
			name);
	}
	/* A repeated ip replaces the earlier symbol. */
	ev = tg_ev_symbol(0x400000, VMT_NONE, 7, 0);
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	assert_string_equal(vmt_symtab_function(t, 0x400000), "f7");
	vmt_symtab_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_op_table),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_errno_names),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_every_op_renders),
		cmocka_unit_test(test_syscall_text),
		cmocka_unit_test(test_syscall_edge_cases),
		cmocka_unit_test(test_other_kinds_text),
		cmocka_unit_test(test_json_escaping),
		cmocka_unit_test(test_plain_text),
		cmocka_unit_test(test_json_syscall),
		cmocka_unit_test(test_json_other_kinds),
		cmocka_unit_test(test_buf),
		cmocka_unit_test(test_symtab_ids),
		cmocka_unit_test(test_symtab_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
