/*
 * records.h - the records the stream backend's BPF programs (stream.bpf.c)
 * write into their ring buffer, and the settings the recorder gives them.
 * Shared by the BPF side and the recorder (record/stream_int.h, for stream.c
 * and streamev.c); fixed-size integers only.
 *
 * Every record starts with struct sr_hdr; `size` is the record's length
 * in bytes.  Times are bpf_ktime_get_ns(): CLOCK_MONOTONIC, the clock of
 * the trace.
 */
#ifndef VMREC_BPF_RECORDS_H
#define VMREC_BPF_RECORDS_H

/* The values of the recorder's format and of Linux that the BPF side
 * tests (it cannot include format/); tests/unit/test_bpf_abi.c checks
 * them against VMT_OP_*, format/linux_abi.h and the C library's. */
#define SR_OP_MMAP 1u		/* VMT_OP_MMAP */
#define SR_OP_SHMAT 17u		/* VMT_OP_SHMAT */
#define SR_MAP_ANONYMOUS 0x20u	/* LX_MAP_ANONYMOUS */
#define SR_CLONE_VM 0x100u	/* CLONE_VM */
#define SR_CLONE_VFORK 0x4000u	/* CLONE_VFORK */
#define SR_VM_DONTEXPAND 0x40000u /* the kernel's VM_DONTEXPAND */

enum sr_kind {
	SR_CALL = 1, /* a recorded call, written at its exit */
	SR_FILE,     /* the file behind the mapping an mmap/shmat made (or
			the segment a shmdt detaches), after its SR_CALL */
	SR_FORK,     /* a new task of a traced process */
	SR_EXEC,     /* an exec, after the SR_VMA records of the new image */
	SR_VMA,	     /* one mapping of a new image, at its exec */
	SR_EXIT,     /* a task of a traced process exits */
	SR_FAULT,    /* a user page fault */
	SR_STACK,    /* registers and a copy of the user stack, at a call's
			entry, before its SR_CALL; time: the entry, as
			the SR_CALL's t_enter */
};

struct sr_hdr {
	unsigned short kind;
	unsigned short size;
	unsigned int tid, tgid;
	unsigned int pad;
	unsigned long long time;
};

/* SR_CALL: time is the exit time. */
struct sr_call {
	struct sr_hdr h;
	unsigned int op;	   /* enum vmt_op */
	unsigned int lock_ok;	   /* lock_seq is valid */
	long long ret;
	unsigned long long args[6];
	unsigned long long t_enter;
	unsigned long long lock_seq; /* order of its first mmap_lock write
					acquisition among recorded calls */
	unsigned long long t_stack;  /* time of its SR_STACK, 0: none */
	/* Its waits (sched_switch while it was inside): time off CPU, and
	 * the times it left the CPU, blocked and preempted. */
	unsigned long long off_ns;
	unsigned int vcsw, ivcsw;
	/* The faults the kernel took during it through get_user_pages
	 * (counted in the task's min_flt, maj_flt; no page known). */
	unsigned int gup_min, gup_maj;
};

/* A task's own counters, as getrusage(RUSAGE_THREAD) reads them (utime,
 * stime: the tick-sampled split that rtime, the exact CPU time, is
 * divided by). */
struct sr_counters {
	unsigned long long minflt, majflt, nvcsw, nivcsw;
	unsigned long long utime, stime, rtime;
};

#define SR_PATH_SLOTS 16
#define SR_NAME_LEN 64

/* SR_FILE: path components are leaf first; ncomp > SR_PATH_SLOTS means
 * the path was longer than what was kept. */
struct sr_file {
	struct sr_hdr h;
	unsigned long long addr; /* start of the mapping (mmap's result) */
	unsigned long long ino, size;
	unsigned int dev;	 /* the kernel's dev_t: major << 20 | minor */
	unsigned int f_flags;	 /* the open file's flags */
	unsigned int i_mode;
	unsigned int ncomp;
	char comp[SR_PATH_SLOTS][SR_NAME_LEN];
};

struct sr_fork {
	struct sr_hdr h;	      /* tid/tgid: the parent */
	unsigned int child_tid, child_tgid;
	unsigned int same_mm;	      /* CLONE_VM */
	unsigned int vfork;	      /* CLONE_VFORK */
};

/* SR_VMA: vm_flags bits VM_READ 1, VM_WRITE 2, VM_EXEC 4, VM_SHARED 8.
 * `file` tells which file a VMA maps (the SR_EXEC names the executable's
 * and its interpreter's). */
struct sr_vma {
	struct sr_hdr h;
	unsigned long long start, end, pgoff, flags;
	unsigned long long ino;
	unsigned long long file; /* the struct file *, as a tag (0: none) */
	unsigned int dev;
	unsigned int special;	 /* 1 stack, 2 heap, 3 a special mapping
				    (name: [vdso], [vvar], ...), 0 other */
	char name[32];		 /* special == 3: its name */
};

struct sr_exec {
	struct sr_hdr h;
	unsigned int old_tid;  /* the tid that called exec */
	unsigned int nvmas;    /* SR_VMA records just before (0 when the
				  iterator is missing) */
	unsigned int complete; /* every mapping was sent */
	unsigned int ncomp;    /* the path of the executed file, as SR_FILE */
	char comp[SR_PATH_SLOTS][SR_NAME_LEN];
	unsigned long long file; /* the executable's tag, as in SR_VMA */
	/* The process's counters up to the exec: its signal_struct's (the
	 * threads gone, which the exec waited for) and the exec'ing task's. */
	struct sr_counters group;
	char filename[256];    /* the name exec was given */
};

struct sr_exit {
	struct sr_hdr h;
	int exit_code;	      /* the task's exit code (wait status form) */
	unsigned int group_dead; /* the last task of its thread group */
	struct sr_counters cnt; /* the task's own, at its exit */
};

/* SR_FAULT: faults the kernel counted (min_flt or maj_flt of the task),
 * written once it did.  One fault exception: h.time when it was taken,
 * error_code the x86 hardware's (SR_FAULT_NOERR: not known), major with
 * SR_FAULT_MAJOR.  Or (SR_FAULT_GUP) the faults the kernel took itself,
 * through get_user_pages, outside a recorded call, since the task's last
 * record: `count` minor and `count_maj` major, no address, no ip. */
#define SR_FAULT_MAJOR 0x1u /* counted in maj_flt */
#define SR_FAULT_GUP 0x2u   /* taken by the kernel, page unknown */
#define SR_FAULT_NOERR 0x4u /* error_code is not known */
struct sr_fault {
	struct sr_hdr h;
	unsigned long long addr, ip, error_code;
	unsigned int flags; /* SR_FAULT_* */
	unsigned int count, count_maj; /* SR_FAULT_GUP */
	unsigned int pad;
};

#define SR_STACK_MAX 16384 /* bytes above sp: the copy goes on to the end
			      of a page */
#define SR_PAGE 4096
#define SR_NREGS 18 /* x86-64: ip sp bp bx r12 r13 r14 r15 ax cx dx si di
		       r8 r9 r10 r11 flags */
/* SR_STACK: h.time is the t_stack of the call it belongs to. */
struct sr_stack {
	struct sr_hdr h;
	unsigned long long regs[SR_NREGS];
	unsigned long long base; /* the address of data[0]: sp, rounded down
				    to 8 */
	unsigned long long size; /* bytes of stack that follow */
	/* Bit i: the page at (base & ~(SR_PAGE - 1)) + i * SR_PAGE could not
	 * be read (never touched, or not in memory), and its bytes in data
	 * are zeros that say nothing. */
	unsigned long long holes;
	unsigned char data[];
};

/* Counters of the per-CPU array `stats`. */
enum sr_stat {
	SR_STAT_DROPPED = 0, /* records the ring had no room for */
	SR_STAT_NOFILE,	     /* file mmaps whose file could not be read */
	SR_STAT_NOSTACK,     /* stacks that could not be copied */
	SR_STAT_STACKSKIP,   /* stacks left out: the ring was 3/4 full */
	SR_STAT__COUNT,
};

#define SR_MAX_NR 1024 /* syscall numbers the op map covers */

#endif
