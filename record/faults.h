/*
 * faults.h - capture of user page faults with perf_event_open, one ring
 * per traced task, merged in time order into FAULT events.
 *
 * The faults are those the kernel counts in the task's rusage with the
 * faulting registers: the software events PAGE_FAULTS_MIN and _MAJ, which
 * give the address and ip.  Where it can be sampled (root), the
 * exceptions:page_fault_user tracepoint gives each one's access type (the
 * hardware error code: read/write/exec); elsewhere (a normal user, other
 * architectures) the events give none (FAULT.access = 0, unless the
 * access function decodes it) and cover user mode only.  The faults the
 * kernel takes through get_user_pages fire no event and are not recorded.
 * The kernel writes samples to a ring buffer per task; the recorder drains
 * them at its ptrace stops, so nothing here blocks or needs a wake-up.
 *
 * All timestamps are CLOCK_MONOTONIC ns.  One thread must make all calls.
 */
#ifndef VMREC_FAULTS_H
#define VMREC_FAULTS_H

#include "vmtrace.h"
#include <sys/types.h>

struct vmr_faults;

/* *why: NULL, or a static sentence about a fallback, e.g.
 * "exceptions:page_fault_user tracepoint not available: using the software
 * page-fault events (no access type)": the counted faults' events alone.
 * NULL + *err on failure (e.g. perf_event_paranoid: -EACCES/-EPERM;
 * -ENOSYS without perf events).
 * Probes the kernel once by opening (and closing) an event on the caller. */
struct vmr_faults *vmr_faults_new(int *err, const char **why);

/* Choices for tests and tuning; vmr_faults_new() is all defaults. */
enum vmr_fault_source {
	VMR_FAULTS_AUTO = 0,	   /* tracepoint, else software events alone */
	VMR_FAULTS_TRACEPOINT = 1, /* tracepoint (fail without it) */
	VMR_FAULTS_SOFTWARE = 2,   /* the counted faults' software events alone */
};
struct vmr_faults_opts {
	uint32_t source;     /* enum vmr_fault_source */
	uint32_t ring_pages; /* data pages per task ring, a power of two;
				0: 256 for the first 16 tasks, 64 up to 256
				tasks, 16 after (halved while the kernel
				refuses the memory) */
};
/* vmr_faults_new with options (opts may be NULL). */
struct vmr_faults *vmr_faults_new_opts(const struct vmr_faults_opts *opts,
				       int *err, const char **why);

/* Start sampling the page faults of task tid (trace thread index `thread`,
 * process index `proc`).  The event is enabled at once, so with tid stopped
 * (at creation, or before exec) it counts from tid's next instruction.
 * Returns 0, -EEXIST if tid is already added, or -errno of perf_event_open
 * / mmap (e.g. -ESRCH when tid is gone, -EMFILE). */
int vmr_faults_add_task(struct vmr_faults *f, pid_t tid, uint32_t thread,
			uint32_t proc);

/* Tree mode: the page faults of pid and of every task it creates, from
 * pid's next exec on (inherited events, one ring per CPU), so that no task
 * runs unsampled before the recorder learns of it.  who() names the
 * trace thread and process of a sample's tid at drain time (0; or 1 for a
 * sample to leave out and count, of a task it does not know; or -1 for
 * one to leave out silently: the recorder's own memory at addr, a task not
 * recorded yet); vmr_faults_add_task does nothing
 * after this.  Returns 0 or -errno (e.g. -EBUSY if tasks were added). */
typedef int (*vmr_faults_who_fn)(void *ctx, pid_t tid, uint64_t addr, uint32_t *thread,
				 uint32_t *proc);
int vmr_faults_add_tree(struct vmr_faults *f, pid_t pid, vmr_faults_who_fn who, void *ctx);
/* Samples left out because who() did not know their task. */
uint64_t vmr_faults_unknown(const struct vmr_faults *f);

/* The access type of a fault the event gives none for (the software
 * event): fn gets the process, the faulting instruction's address, the
 * data address and the sampled rsi, rdi, rsp (NULL if missing) and returns
 * VMT_FAULT_* or 0.  Before vmr_faults_add_tree / _add_task. */
typedef uint32_t (*vmr_faults_access_fn)(void *ctx, pid_t pid, uint64_t ip, uint64_t addr,
					 const uint64_t *si_di_sp);
void vmr_faults_set_access(struct vmr_faults *f, vmr_faults_access_fn fn, void *ctx);
/* Before process pid's memory goes (its exit, its exec): give the access
 * function each of its samples not yet drained, while it can still read
 * their instructions (it caches them), so that a process that ends
 * before the next drain still has its faults' access types. */
void vmr_faults_read_code(struct vmr_faults *f, pid_t pid);

/* Stop sampling tid.  Its samples not yet drained are kept and appended by
 * the next vmr_faults_drain (so nothing recorded before an exit is lost).
 * Unknown tids are ignored. */
void vmr_faults_remove_task(struct vmr_faults *f, pid_t tid);

/* Append FAULT events with time <= up_to_ns (all if UINT64_MAX), in time
 * order across tasks, and LOST events for samples the kernel dropped.
 * Returns the number of events appended, or -err. */
int vmr_faults_drain(struct vmr_faults *f, vmt_writer *w, uint64_t up_to_ns);

/* Total samples the kernel reported lost so far. */
uint64_t vmr_faults_lost(const struct vmr_faults *f);

/* Stop sampling every task and free everything.  Undrained samples are
 * dropped.  NULL is fine. */
void vmr_faults_free(struct vmr_faults *f);

#endif /* VMREC_FAULTS_H */
