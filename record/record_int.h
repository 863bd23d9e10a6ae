/*
 * record_int.h - the modules of libvmrecord that the tracer loop is built
 * from.  Internal to record/ and its unit tests; not a stable interface.
 */
#ifndef VMREC_RECORD_INT_H
#define VMREC_RECORD_INT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include "vmtrace.h"
#include "vmtutil.h"

/* ---- code ranges (code.c) ---------------------------------------------- */

/* The executable ranges of a process.  A zeroed struct is empty. */
struct vmr_code {
	struct vmt_rset r;
	int lost; /* a range could not be kept: any removal may hit code */
};

/* Note [start, end) as code.  Returns 0, or -ENOMEM: then the set is
 * marked lost, so that vmr_code_remove answers 1 until a reset. */
int vmr_code_add(struct vmr_code *c, uint64_t start, uint64_t end);
/* [start, end) goes away, and with it every code range it overlaps, as a
 * whole.  Returns 1 if it held code (or the set is lost): the cached
 * unwind information of the process may be stale. */
int vmr_code_remove(struct vmr_code *c, uint64_t start, uint64_t end);
/* Empty the set (at exec, or before a maps snapshot refills it). */
void vmr_code_reset(struct vmr_code *c);
/* to = a copy of from (a forked child).  Returns 0 or -ENOMEM (to is then
 * marked lost). */
int vmr_code_copy(struct vmr_code *to, const struct vmr_code *from);
void vmr_code_free(struct vmr_code *c);

/* ---- /proc/PID/maps (maps.c) ------------------------------------------- */

/* A parsed maps text.  Entries point into `text`, which the parser
 * modifies in place (paths get NUL-terminated). */
struct vmr_maps {
	char *text;
	size_t len, cap;
	struct vmt_map_entry *e;
	uint32_t n;
	size_t ecap;
};

/* Parse text[0..len) (it must be m->text, len = m->len, with room for one
 * more byte) into m->e.  Returns 0, -EINVAL for a malformed line or
 * unsorted/overlapping entries, -ENOMEM. */
int vmr_maps_parse(struct vmr_maps *m);

/* Read /proc/<pid>/maps into m and parse it.  Returns 0 or -errno. */
int vmr_maps_read(struct vmr_maps *m, pid_t pid);

void vmr_maps_free(struct vmr_maps *m);

/* Read a whole (small, /proc) file into *buf (grown as needed, always
 * NUL-terminated).  Returns the length or -errno. */
ssize_t vmr_read_file(const char *path, char **buf, size_t *cap);

/* ---- touch run-length encoding (touch.c) -------------------------------- */

/* Called with each finished TOUCH range: first page address, runs, total
 * pages.  Returns 0 or -err (which stops the scan). */
typedef int (*vmr_runs_emit_fn)(void *ctx, uint64_t start,
				const struct vmt_touch_run *runs,
				uint32_t nruns, uint64_t npages);

/* Builds the runs of one TOUCH event from page states added in address
 * order.  Absent pages before the first and after the last present page
 * are dropped (a TOUCH covers present pages only at its edges); a range
 * needing more than `max` runs is cut into several emits. */
struct vmr_runs {
	uint64_t start;	 /* address of the first page of runs[0] */
	uint64_t cursor; /* address after the last page added */
	uint64_t npages;
	struct vmt_touch_run *runs;
	uint32_t n, max;
	size_t cap;
	unsigned page_shift;
	vmr_runs_emit_fn emit;
	void *ctx;
};

/* max: runs per emit (0: 65536). */
void vmr_runs_init(struct vmr_runs *r, unsigned page_shift, uint32_t max,
		   vmr_runs_emit_fn emit, void *ctx);
void vmr_runs_free(struct vmr_runs *r);
/* Forget buffered runs (start a new range). */
void vmr_runs_begin(struct vmr_runs *r);
/* npages pages at addr (page aligned, >= the end of the previous add) are in
 * `state`.  VMT_PAGE_ABSENT adds nothing.  Returns 0 or -err. */
int vmr_runs_add(struct vmr_runs *r, uint64_t addr, uint64_t npages,
		 uint32_t state);
/* Emit what is buffered (if any page is present).  Returns 0 or -err. */
int vmr_runs_end(struct vmr_runs *r);

/* Page-state reader for /proc/PID/pagemap: the PAGEMAP_SCAN ioctl where
 * the kernel has it (6.7+), else pread of pagemap entries. */
struct vmr_pagemap {
	int scan;	   /* 1: PAGEMAP_SCAN works (probed at init), 0: pread */
	uint64_t zero_pfn; /* pfn of the zero page (fallback), 0 if unknown */
	void *vec;	   /* ioctl result buffer */
	uint64_t *ent;	   /* pread buffer */
	uint64_t fallback_cap; /* pages per range the fallback reads */
	uint64_t truncated;    /* ranges the fallback cut at fallback_cap */
};

int vmr_pagemap_init(struct vmr_pagemap *pm);
void vmr_pagemap_free(struct vmr_pagemap *pm);
/* Add the states of the pages in [start, end) of the process whose
 * pagemap is open on fd to r (no begin/end: callers bracket).  Returns 0
 * or -err. */
int vmr_pagemap_scan(struct vmr_pagemap *pm, int fd, uint64_t start,
		     uint64_t end, struct vmr_runs *r);

/* A range of present pages in one state. */
struct vmr_present {
	uint64_t start, end;
	uint32_t state; /* enum vmt_page_state */
};

/* Every present range of [start, end) in address order, in one pass over
 * the address space (PAGEMAP_SCAN only: holes between mappings cost
 * nothing).  *v is grown with realloc (*cap its size).  Returns the number
 * of ranges, -EOPNOTSUPP without PAGEMAP_SCAN, or -errno. */
long vmr_pagemap_collect(struct vmr_pagemap *pm, int fd, uint64_t start,
			 uint64_t end, struct vmr_present **v, size_t *cap);

/* ---- syscall numbers and the seccomp filter (sysmap.c) ------------------ */

#define VMR_MAX_NR 1024

struct vmr_sysmap {
	uint32_t arch;		       /* AUDIT_ARCH_* of this machine */
	uint8_t op_of_nr[VMR_MAX_NR];  /* 0: not an op */
	int nr_of_op[VMT_OP__COUNT];   /* -1: the arch lacks the op */
};

/* Resolve every op's syscall name (vmt_op_info) on this arch.  Returns 0,
 * or -ENOENT if not even mmap resolves. */
int vmr_sysmap_init(struct vmr_sysmap *m);

/* The op of syscall nr on arch, or 0. */
static inline uint32_t vmr_sysmap_op(const struct vmr_sysmap *m,
				     uint32_t arch, uint64_t nr)
{
	return arch == m->arch && nr < VMR_MAX_NR ? m->op_of_nr[nr] : 0;
}

/* In the child: load a filter that returns SECCOMP_RET_TRACE for the ops
 * of m (and for the same calls of the 32-bit compat arch, which the tracer
 * counts as lost) and allows everything else.  Returns 0 or -errno. */
int vmr_filter_load(const struct vmr_sysmap *m);

/* ---- launching (launch.c) ----------------------------------------------- */

/*
 * Fork a child that waits until the parent has seized it with
 * ptrace_opts, then loads the filter and execvp()s argv.  *pid gets the
 * child; *errfd a pipe that reports a failure before exec (see
 * vmr_launch_failure).  child_mask: the signal mask the program starts
 * with.  Returns 0 or -errno (the child is reaped on failure).
 */
int vmr_launch(char *const argv[], const struct vmr_sysmap *m,
	       unsigned long ptrace_opts, const sigset_t *child_mask,
	       pid_t *pid, int *errfd);

/* The same in two steps, without ptrace: fork a child (loading filter m
 * unless NULL) that waits for vmr_launch_go(*gofd) before it execs argv;
 * vmr_launch_cancel() ends it instead.  Returns 0 or -errno. */
int vmr_launch_held(char *const argv[], const struct vmr_sysmap *m, const sigset_t *child_mask,
		    pid_t *pid, int *gofd, int *errfd);
int vmr_launch_go(int gofd);
/* The same, with the child's last steps its own: run(ctx, argv, &stage)
 * is called in the child once it may go (its signal mask restored); it
 * execs, or returns -errno with *stage VMR_LAUNCH_FILTER or
 * VMR_LAUNCH_EXEC. */
struct vmr_launch_how {
	int (*run)(const void *ctx, char *const argv[], char *stage);
	void (*exit)(const void *ctx, int code); /* instead of _exit (may be NULL) */
	const void *ctx;
};
int vmr_launch_held_how(char *const argv[], const struct vmr_launch_how *how,
			const sigset_t *child_mask, pid_t *pid, int *gofd, int *errfd);
void vmr_launch_cancel(pid_t pid, int gofd, int errfd);

enum { VMR_LAUNCH_FILTER = 'F', VMR_LAUNCH_EXEC = 'E' };
/* After the child died before exec: what failed (VMR_LAUNCH_*) and the
 * errno.  Returns 0 if the child reported something, -ENOENT if not. */
int vmr_launch_failure(int errfd, int *stage, int *err);
/* The same, as vmrec says it: the message for command cmd into err and
 * the exit status (127 not found, 126 not runnable, 1 no filter) into
 * *exit_code.  Returns -errno. */
int vmr_launch_explain(int errfd, const char *cmd, int *exit_code, char *err, size_t errlen);

/* ---- the stream backend's BPF object (bpfobj.c) ------------------------ */

extern const unsigned char vmr_bpf_obj[], vmr_bpf_obj_end[];

/* ---- the kernel's counters (counters.c) --------------------------------- */

struct rusage;
/* The kernel's split of a task's exact runtime rtime (ns) into user and
 * system time, in the proportion of its tick-sampled utime and stime (as
 * getrusage reports them: cputime_adjust). */
void vmr_cnt_adjust(uint64_t utime, uint64_t stime, uint64_t rtime, uint64_t *ut, uint64_t *st);
/* a += b (counts and times; TICKS is kept), a -= b (each at least 0). */
void vmr_cnt_add(struct vmt_counters *a, const struct vmt_counters *b);
void vmr_cnt_sub(struct vmt_counters *a, const struct vmt_counters *b);
/* *c = the counters of a getrusage/wait4 result (scope and flags 0). */
void vmr_cnt_from_rusage(const struct rusage *ru, struct vmt_counters *c);
/* Task tid of process pid, from /proc/pid/task/tid/{stat,status,schedstat}
 * (TICKS when schedstat is missing).  Returns 0 or -errno. */
int vmr_cnt_read_task(pid_t pid, pid_t tid, struct vmt_counters *c);
/* Process pid as a whole (its live threads and those gone) from
 * /proc/pid/stat: faults and CPU time (TICKS) of the process itself and
 * of the children it waited for (context switches 0: /proc has no group
 * count of them).  Either pointer may be NULL.  Returns 0 or -errno. */
int vmr_cnt_read_proc(pid_t pid, struct vmt_counters *self, struct vmt_counters *children);

/* ---- /proc helpers (procinfo.c) ----------------------------------------- */

/* Identity of the file open on fd `fd` of task tid: path (readlink of
 * /proc/tid/fd/N, "" if unreadable) into path[0..pathlen), dev, ino,
 * size and mode (stat through the link) and the open flags (fdinfo).
 * Fields that cannot be read stay 0.  Returns 0, or -errno if the fd does
 * not exist. */
int vmr_fd_identity(pid_t tid, int fd, char *path, size_t pathlen,
		    struct vmt_map_file *out);

/* The ELF interpreter of executable exe (its PT_INTERP, resolved) into
 * out, if it is the file (dev, ino).  Returns 0 or -errno. */
int vmr_elf_interp(const char *exe, uint64_t dev, uint64_t ino, char *out, size_t len);

/* readlink /proc/pid/exe into buf; "" on failure. */
void vmr_exe_path(pid_t pid, char *buf, size_t len);

/* Thread group id and parent pid of tid from /proc/tid/status. */
int vmr_task_ids(pid_t tid, pid_t *tgid, pid_t *ppid);

#endif /* VMREC_RECORD_INT_H */
