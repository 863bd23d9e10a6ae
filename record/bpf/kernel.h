/*
 * kernel.h - the kernel types the stream backend's BPF programs read, as
 * much of each as they use.  preserve_access_index makes every field
 * access a CO-RE relocation: libbpf resolves it against the running
 * kernel's BTF when the programs load, so these declarations need not
 * match any kernel's layout, only its field names.
 */
#ifndef VMREC_BPF_KERNEL_H
#define VMREC_BPF_KERNEL_H

/* The uapi integer names libbpf's headers use, and the kernel's. */
typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
typedef _Bool bool;
typedef int pid_t;
typedef u32 dev_t;
typedef s64 loff_t;

#define CORE __attribute__((preserve_access_index))

/* x86-64's layout, which is ABI (<asm/ptrace.h>): not relocated.  (A
 * relocation of its own would share a slot of the kernel's cache of CO-RE
 * candidates with struct linux_binprm's, and each load would look both
 * up again in all of the kernel's types.) */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di,
		orig_ax, ip, cs, flags, sp, ss;
};

struct qstr {
	const unsigned char *name;
} CORE;

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
} CORE;

struct vfsmount {
	struct dentry *mnt_root;
} CORE;

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
} CORE;

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} CORE;

struct super_block {
	dev_t s_dev;
} CORE;

struct inode {
	unsigned short i_mode;
	unsigned long i_ino;
	loff_t i_size;
	struct super_block *i_sb;
} CORE;

struct file {
	struct path f_path;
	struct inode *f_inode;
	unsigned int f_flags;
} CORE;

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} CORE;

struct files_struct {
	struct fdtable *fdt;
} CORE;

struct mm_struct {
	unsigned long start_brk, brk, start_stack;
} CORE;

struct vm_area_struct {
	unsigned long vm_start, vm_end;
	struct mm_struct *vm_mm;
	unsigned long vm_flags;
	unsigned long vm_pgoff;
	struct file *vm_file;
	void *vm_private_data;
} CORE;

struct sched_entity {
	u64 sum_exec_runtime;
} CORE;

struct signal_struct {
	u64 utime, stime, sum_sched_runtime;
	unsigned long nvcsw, nivcsw, min_flt, maj_flt;
} CORE;

struct task_struct {
	pid_t pid, tgid;
	struct mm_struct *mm;
	struct files_struct *files;
	int exit_code;
	void *vfork_done;
	int pagefault_disabled;
	struct sched_entity se;
	struct signal_struct *signal;
	u64 utime, stime;
	unsigned long nvcsw, nivcsw, min_flt, maj_flt;
} CORE;

struct linux_binprm {
	struct file *file;
	const char *filename;
} CORE;

/* The context of a program on a perf event (the uapi's
 * struct bpf_perf_event_data: its layout is the kernel's ABI, and the
 * verifier rewrites the accesses). */
struct bpf_perf_event_data {
	struct {
		unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di,
			orig_ax, ip, cs, flags, sp, ss;
	} regs;
	u64 sample_period;
	u64 addr;
};

/* The open-coded VMA iterator's state (its kfuncs are declared by the
 * program): an opaque 8 bytes, as the kernel defines it. */
struct bpf_iter_task_vma {
	u64 __opaque[1];
} __attribute__((aligned(8)));

struct bpf_dynptr {
	u64 __opaque[2];
} __attribute__((aligned(8)));

/* The uapi values the programs use. */
enum {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_LOCAL_STORAGE_GET_F_CREATE (1ULL << 0)
#define BPF_RB_NO_WAKEUP (1ULL << 0)
#define BPF_RB_FORCE_WAKEUP (1ULL << 1)
#define BPF_RB_AVAIL_DATA 0

#endif
