/*
 * stacks.h - user call stacks of ptrace-stopped tasks (libunwind-ptrace),
 * interned into STACK events and symbolized into STRING/SYMBOL events when
 * recording ends, so that a trace names functions on any machine.
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

/* Task tid exited or was detached: drop its unwinding state.  Unknown tids
 * are ignored. */
void vmr_stacks_task_gone(struct vmr_stacks *s, pid_t tid);

/* exec, or code unmapped, in process pid (its thread group id): forget the
 * cached unwind rules, module images and mappings of that process.  Ips
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
	uint64_t stacks;	 /* distinct stacks (STACK events written) */
	uint64_t ips;		 /* distinct ips */
	uint64_t modules;	 /* distinct module files seen mapped */
	uint64_t maps_reads;	 /* /proc/PID/maps reads */
	uint64_t mem_reads;	 /* tracee memory reads (process_vm_readv) */
};
void vmr_stacks_get_stats(const struct vmr_stacks *s,
			  struct vmr_stacks_stats *st);

#endif /* VMREC_STACKS_H */
