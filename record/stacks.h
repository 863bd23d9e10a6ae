/*
 * stacks.h - user call stacks, of ptrace-stopped tasks or from a copy of
 * the registers and the top of the stack the kernel made at a call (the
 * stream backend), unwound with libunwind, interned into STACK events and
 * symbolized into STRING/SYMBOL events when recording ends, so that a
 * trace names functions on any machine.
 *
 * Cost model: unwinding state is cached per process (one libunwind address
 * space with a global cache of unwind rules, a copy of /proc/PID/maps),
 * per module file (where its .eh_frame_hdr table is) and per task (one UPT
 * handle), so a call site seen before costs one PTRACE_GETREGS and a few
 * process_vm_readv calls.  Each distinct ip is placed in its module (path
 * and file offset) the first time it is seen; each module file's ELF
 * symbols are read once, at finish.
 *
 * The tracer must call these functions from one thread.  Only this module
 * writes STRING events (their ids are dense from 0 within a trace).  A
 * SYMBOL describes an ip for the whole trace: should one ip hold different
 * code in two processes, the first placement wins.
 */
#ifndef VMREC_STACKS_H
#define VMREC_STACKS_H

#include "vmtrace.h"
#include <sys/types.h>

struct vmr_stacks;

/* A stack collector that keeps at most max_depth frames per stack (1 ..
 * VMT_MAX_STACK_DEPTH).  Returns NULL and sets *err (-EINVAL for a bad
 * depth, -ENOMEM) on failure. */
struct vmr_stacks *vmr_stacks_new(unsigned max_depth, int *err);

/* Unwind stopped (ptrace-stopped) task tid (trace thread index `thread`,
 * process index `proc`); intern the stack; if new, append a STACK event
 * (ts) to w. *stack_id = id, or VMT_NONE when unwinding failed (not an
 * error).  A stack whose unwinding fails part way keeps the frames found
 * so far.  The first capture of a task reads its thread group id from
 * /proc.  Returns 0 or -err (writer error, or -ENOMEM). */
int vmr_stacks_capture(struct vmr_stacks *s, vmt_writer *w, pid_t tid,
		       uint32_t thread, uint32_t proc, uint64_t ts,
		       uint32_t *stack_id);

/* Registers of a copy, numbered as libunwind numbers them on x86-64. */
enum vmr_reg {
	VMR_REG_AX, VMR_REG_DX, VMR_REG_CX, VMR_REG_BX, VMR_REG_SI, VMR_REG_DI,
	VMR_REG_BP, VMR_REG_SP, VMR_REG_R8, VMR_REG_R9, VMR_REG_R10, VMR_REG_R11,
	VMR_REG_R12, VMR_REG_R13, VMR_REG_R14, VMR_REG_R15, VMR_REG_IP, VMR_NREGS
};

/* What the kernel copied at a call's entry: the user registers, and
 * `size` bytes of stack from address `base` (at most the stack pointer). */
struct vmr_stack_copy {
	uint64_t regs[VMR_NREGS];
	const void *data;
	uint64_t base, size;
	/* bit i: the page at (base & ~4095) + i * 4096 could not be read:
	 * its bytes in data say nothing */
	uint64_t holes;
};

/* Unwind a copy taken in thread group tgid (trace thread `thread`,
 * process `proc`) while the program ran on; intern the stack; if new,
 * append its STACK event (ts) to w.  *stack_id = id, or VMT_NONE when
 * unwinding failed (not an error).  Memory outside the copy is read only
 * where a module file is mapped (unwind tables, read from the file), so a
 * stack deeper than the copy ends where the copy does, and so does one
 * through code of no file (JIT).  Which file is mapped where is what the
 * trace says (vmr_stacks_copy_maps() and the calls since), since /proc
 * shows the process as it is now, perhaps exec'd or gone; a process with
 * no exec seen reads /proc at its first stack.  Returns 0 or -err (writer
 * error, or -ENOMEM). */
int vmr_stacks_capture_copy(struct vmr_stacks *s, vmt_writer *w, pid_t tgid, uint32_t thread,
			    uint32_t proc, uint64_t ts, const struct vmr_stack_copy *c,
			    uint32_t *stack_id);

/* The mappings of process proc (thread group tgid) for copies, in the
 * trace's order: the n entries of its MAPS at an exec (e NULL: unknown,
 * read /proc when needed); a successful mmap of [start, end) (f NULL for
 * anonymous memory); munmap; mremap; a fork (the child's mappings are its
 * parent's); the process has ended.  Out of memory, a process falls back
 * to /proc. */
void vmr_stacks_copy_maps(struct vmr_stacks *s, uint32_t proc, pid_t tgid,
			  const struct vmt_map_entry *e, uint32_t n);
void vmr_stacks_copy_map(struct vmr_stacks *s, uint32_t proc, uint64_t start, uint64_t end,
			 uint64_t off, int exec, const struct vmt_map_file *f);
void vmr_stacks_copy_unmap(struct vmr_stacks *s, uint32_t proc, uint64_t start, uint64_t end);
void vmr_stacks_copy_move(struct vmr_stacks *s, uint32_t proc, uint64_t old, uint64_t oldlen,
			  uint64_t new, uint64_t newlen);
void vmr_stacks_copy_fork(struct vmr_stacks *s, uint32_t parent, uint32_t child, pid_t tgid);
void vmr_stacks_copy_gone(struct vmr_stacks *s, uint32_t proc);

/* Task tid exited or was detached: drop its unwinding state.  Unknown tids
 * are ignored. */
void vmr_stacks_task_gone(struct vmr_stacks *s, pid_t tid);

/* ptrace backend: exec, or code unmapped, in process pid (its thread
 * group id): forget the cached unwind rules, module images and mappings of
 * that process.  Ips
 * already placed in modules keep their placement (a trace symbolizes an ip
 * once). */
void vmr_stacks_invalidate(struct vmr_stacks *s, pid_t pid);

/* Append STRING and SYMBOL events for every distinct ip seen (thread 0, proc
 * 0, ts given): module path, function name (from the module's .symtab, its
 * separate debug file found by build id, or .dynsym) and offset (ip minus
 * function start; or, with no function, ip minus the module's load base,
 * i.e. the file offset).  Reads each module file once.  Returns 0 or -err
 * (writer error, -ENOMEM); unreadable or foreign module files only leave
 * their ips without function names. */
int vmr_stacks_finish(struct vmr_stacks *s, vmt_writer *w, uint64_t ts);

/* Free everything (UPT handles, address spaces, tables).  NULL is fine. */
void vmr_stacks_free(struct vmr_stacks *s);

/* Counters for --stats style reports and tests. */
struct vmr_stacks_stats {
	uint64_t captures;	 /* calls of vmr_stacks_capture */
	uint64_t failed;	 /* captures that gave VMT_NONE */
	uint64_t shallow;	 /* copies unwound no further than the call */
	uint64_t cut;		 /* copies whose unwind went on above their end */
	uint64_t stacks;	 /* distinct stacks (STACK events written) */
	uint64_t ips;		 /* distinct ips */
	uint64_t modules;	 /* distinct module files seen mapped */
	uint64_t maps_reads;	 /* /proc/PID/maps reads */
	uint64_t mem_reads;	 /* tracee memory reads (process_vm_readv) */
	uint64_t memo_hits;	 /* copies whose stack an earlier unwind gave */
};
void vmr_stacks_get_stats(const struct vmr_stacks *s,
			  struct vmr_stacks_stats *st);

#endif /* VMREC_STACKS_H */
