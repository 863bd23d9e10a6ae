/*
 * recording_int.h - the state of one recording (struct vmr_rec), whichever
 * backend makes it: the backend, the writer, the tasks and processes,
 * touches, stacks and fault samples; and the functions of the files that
 * share it.  Internal to record/.  Both backends record through the same
 * files beneath them.  Each uses only those below it:
 *   record.c    the choice of backend, set-up, the trace's end, the summary
 *   tracer.c    the ptrace backend: the wait loop and the dispatch of stops
 *   stream.c    the stream backend: its BPF programs and their ring
 *               (stream_int.h), the launch, the draining
 *   streamev.c  the stream backend's records into events
 *   tasks.c     threads, processes, exec, exits
 *   syscalls.c  the traced calls
 *   touch.c     TOUCH events (and the pagemap reading beneath them)
 *   emit.c      events into the writer, notices, fault samples merged
 *   signals.c   the stop signals and the tick
 */
#ifndef VMREC_RECORDING_INT_H
#define VMREC_RECORDING_INT_H

#include <limits.h>
#include <signal.h>
#include <sys/time.h>
#include "recorder.h"
#include "record_int.h"

#include "stacks.h"
#include "faults.h"
#include "vmtutil.h"

/* A System V segment attached with shmat, for shmdt's MAP_FILE. */
struct vmr_shm {
	uint64_t addr;
	struct vmt_map_file id;
	char path[32];
};

struct vmr_proc {
	pid_t pid;	 /* thread group id (for /proc paths) */
	uint32_t index;	 /* dense trace index */
	uint32_t ntasks; /* tasks of this process in the table */
	uint32_t nlive;	 /* of those, not yet at PTRACE_EVENT_EXIT */
	int pagemap_fd;	 /* -1 until needed; closed at exec (it pins the mm) */
	int borrowed_mm; /* vfork child before exec: memory is the parent's */
	int exit_scanned;
	int leader_status, have_leader_status, last_status;
	uint64_t brk_cur; /* last brk result, 0 if unknown */
	struct vmr_shm *shm;
	uint32_t nshm;
	size_t shmcap;
	struct vmr_code code; /* executable ranges (for the stack cache) */
	/* The kernel's counters (COUNTERS events): the sum of its threads'
	 * as they ended (cnt_missing: threads without them), and the
	 * process's own from wait4 where the backend has them (have_final). */
	struct vmt_counters cnt_sum;
	uint32_t cnt_missing;
	int childless;	 /* ptrace: /proc said at its last exit stop that it
			    waited for no child (wait4's rusage is its own) */
	int have_final;
	struct vmt_counters cnt_final;
};

/* Task flags */
#define T_IN_SC 0x01	   /* a traced call is between entry and exit */
#define T_HAVE_FILE 0x02   /* t->file describes the call in progress */
#define T_EXITING 0x04	   /* reached PTRACE_EVENT_EXIT (or killed by exec) */
#define T_PRESTART 0x08	   /* launched child before its exec: not recorded */
#define T_DETACHING 0x10   /* -p: detach at the next stop */
#define T_SYSCALL_MODE 0x20 /* resume with PTRACE_SYSCALL (no filter) */
#define T_EXIT_DONE 0x80   /* THREAD_EXIT written */

struct vmr_task {
	pid_t tid;
	uint32_t thread;
	struct vmr_proc *proc;
	unsigned flags;
	struct vmt_event sc;	  /* the call in progress (T_IN_SC) */
	struct vmt_map_file file; /* its file (T_HAVE_FILE) */
	char *path;		  /* PATH_MAX buffer for file.path, lazily */
	/* stream: the stack of the call entered at stack_t (id + 1; 0 none) */
	uint32_t stack;
	uint64_t stack_t;
	/* The kernel's counters of the task at its exit (have_cnt: read),
	 * the times the recorder stopped it (ptrace), and the faults the
	 * recorder took in it (the inproc runtime's, on its own memory). */
	struct vmt_counters cnt;
	int have_cnt;
	uint64_t stops, own_flt;
};

struct vmr_orphan {
	pid_t tid;
	int status;
};

struct vmr_rec;

/* A way of recording: ptrace (tracer.c) or stream (stream.c). */
struct vmr_backend {
	const char *name; /* as in --backend and the trace header */
	/* 0 when it can record with o on this machine; else -errno and why
	 * not (a clause, e.g. "needs root: CAP_BPF and CAP_PERFMON"). */
	int (*probe)(struct vmr_rec *r, char *why, size_t len);
	/* Launch or attach, and record until the program ends (or a stop
	 * signal, vmr_stop_signal()).  0, or -errno with err set and
	 * r->exit_code vmrec's status. */
	int (*run)(struct vmr_rec *r, char *err, size_t errlen);
	/* Free what probe and run kept (may be NULL). */
	void (*done)(struct vmr_rec *r);
};
struct stream;
struct inproc;
extern const struct vmr_backend vmr_backend_ptrace; /* tracer.c */
extern const struct vmr_backend vmr_backend_stream; /* stream.c */
extern const struct vmr_backend vmr_backend_inproc; /* inproc.c */

/* handoff.c: clone the process that releases vmrec's memory and
 * descriptors after vmrec's exit; 0 or -errno (-ENOSYS: not here). */
int vmr_exit_handoff(void);

struct vmr_rec {
	const struct vmr_opts *o;
	const struct vmr_backend *backend;
	struct stream *stream; /* the stream backend's state */
	struct inproc *inproc; /* the inproc backend's */
	int touch;	/* enum vmr_touch_mode in use (never auto) */
	vmt_writer *w;
	int out_fd; /* the trace's descriptor (the writer's; not ours to close) */
	int werr; /* first writer error: recording goes on, the trace is bad */
	int exit_code;	/* when run fails: vmrec's status */
	int stopped_by; /* the stop signal that ended the recording, or 0 */
	int stop_werr;	/* ... or 1: a write error ended it */
	/* 1: what the exit releases is left to it (vmr_exit_handoff): the
	 * backend's done frees only what must be said or written. */
	int handed_off;
	struct vmr_sysmap sys;
	int attach;
	unsigned page_shift;
	uint64_t page_size;

	/* tid -> task (its pointer): (tid, 0) -> struct vmr_task *; a walk
	 * over them goes through vmr_task_slot() */
	struct vmt_htab tasks;
	uint32_t next_thread, next_proc;

	struct vmr_orphan *orph; /* stops of tasks whose creator's event has
				    not been seen yet */
	uint32_t norph;
	size_t orphcap;

	struct vmr_maps maps;
	struct vmr_pagemap pm;
	struct vmr_runs runs;
	struct vmr_present *present; /* exit scans: present ranges (grown) */
	size_t present_cap;
	struct vmt_event touch_ev; /* thread/proc/ts/reason for runs emits */

	struct vmr_stacks *stacks;
	struct vmr_faults *faults;
	struct vmr_codecache *code; /* fault access types from instructions */
	uint64_t lost;
	uint64_t stack_skipped; /* stream: stacks left out, the ring 3/4 full */

	int root_exec_seen;
	int have_root_status, root_status;
	int errfd;
	vmr_notice_fn notice;
	void *notice_ctx;
	char exe[PATH_MAX];
};

/* inproc.c: what the command is, for the choice of backend: 1 (and why,
 * e.g. "'/bin/su' is set-user-ID") when it is set-user-ID, set-group-ID
 * or has file capabilities, or is statically linked (a script: its
 * interpreter); 0 otherwise or when it cannot tell. */
int vmr_cmd_setid(const char *cmd, char *why, size_t len);
int vmr_cmd_static(const char *cmd, char *why, size_t len);

/* signals.c */
#define VMR_NSTOP 3
struct saved_signals {
	struct sigaction stop[VMR_NSTOP], alrm;
	struct itimerval timer;
};
/* Handle the stop signals and the tick's SIGALRM; restore the old ones
 * (and the old timer). */
void vmr_signals_install(struct saved_signals *sv);
/* Start the 50 ms tick (once the backend is set up). */
void vmr_ticks_start(void);
void vmr_signals_restore(const struct saved_signals *sv);
int vmr_stop_signal(void); /* SIGINT/SIGTERM/SIGHUP received, or 0 */
int vmr_tick_take(void);   /* 1 (once) when the 50 ms tick is due */

/* emit.c: the event layer */
int vmr_emit(struct vmr_rec *r, const struct vmt_event *ev);
/* n events that could not be recorded, at ts: a LOST event of task t (NULL:
 * of none, thread and process 0), counted in r->lost. */
void vmr_emit_lost(struct vmr_rec *r, const struct vmr_task *t, uint64_t n, uint64_t ts);
void vmr_notice(struct vmr_rec *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vmr_drain_faults(struct vmr_rec *r, uint64_t up_to);
void vmr_tick(struct vmr_rec *r); /* drain fault samples, flush old events */
void vmr_tick_upto(struct vmr_rec *r, uint64_t up_to); /* ... samples up to then */

/* tasks.c: what both backends use */
struct vmr_proc *vmr_proc_fork(struct vmr_rec *r, struct vmr_proc *parent, pid_t pid);
void vmr_proc_free(struct vmr_proc *p);
/* The MAPS event of t's process from n entries; notes code and brk. */
int vmr_maps_emit(struct vmr_rec *r, struct vmr_task *t, const struct vmt_map_entry *e,
		  uint32_t n, uint64_t ts);
/* An exec by t at ts, of the program at path: the recording's start when
 * t is the launched command's (before its exec), else the end of the
 * other tasks of its process and of what was known of the old image;
 * then the COUNTERS of the process up to the exec (c, when the backend
 * has them: its scope and stops are set here) and the EXEC event.  (The
 * caller emits the new image's MAPS.) */
void vmr_exec_start(struct vmr_rec *r, struct vmr_task *t, const char *path,
		    const struct vmt_counters *c, uint64_t ts);
/* The counters of process pid when only its thread tid is left (stopped
 * at an exec, or a zombie): faults and CPU time of the whole process from
 * /proc (VMT_CNT_TICKS), context switches, which /proc counts per thread
 * only, of tid alone.  0 or -errno. */
int vmr_cnt_read_group(pid_t pid, pid_t tid, struct vmt_counters *c);
/* ... and, once p's other threads have ended (their THREAD counters
 * summed), their switches added. */
void vmr_cnt_group_end(const struct vmr_proc *p, struct vmt_counters *c);
/* THREAD_EXIT of t (once), after its COUNTERS when t->have_cnt. */
void vmr_thread_exit(struct vmr_rec *r, struct vmr_task *t, int status, uint64_t ts);
/* t has ended with wait status `status`: its THREAD_EXIT, and its
 * process's PROCESS_EXIT (and the end of the process) if it was the last;
 * t is freed.  Returns 1 when the process ended. */
int vmr_task_end(struct vmr_rec *r, struct vmr_task *t, int status, uint64_t ts);
/* t is no longer recorded (fault sampling, stack state). */
void vmr_task_gone(struct vmr_rec *r, struct vmr_task *t);
/* The tid table, new processes, their start and MAPS events. */
struct vmr_task *vmr_task_find(struct vmr_rec *r, pid_t tid);
/* The task in slot i of the tid table (i < r->tasks.cap), or NULL: a
 * walk over every task, in no particular order. */
static inline struct vmr_task *vmr_task_slot(const struct vmr_rec *r, size_t i)
{
	return r->tasks.e[i].used ? (struct vmr_task *)(uintptr_t)r->tasks.e[i].v : NULL;
}
/* A task of the process whose pid is pid, or NULL. */
struct vmr_task *vmr_task_of_pid(struct vmr_rec *r, pid_t pid);
struct vmr_task *vmr_task_add(struct vmr_rec *r, pid_t tid, struct vmr_proc *p);
/* t is known by tid from now on (a thread that exec'd took its leader's). */
void vmr_task_retid(struct vmr_rec *r, struct vmr_task *t, pid_t tid);
void vmr_task_remove(struct vmr_rec *r, struct vmr_task *t);
struct vmr_proc *vmr_proc_new(struct vmr_rec *r, pid_t pid);
void vmr_start_events(struct vmr_rec *r, struct vmr_task *t,
		      uint32_t parent_thread, uint32_t parent_proc,
		      uint32_t how, uint64_t ts);
int vmr_maps_event(struct vmr_rec *r, struct vmr_task *t, uint64_t ts);
void vmr_free_tables(struct vmr_rec *r);

/* tasks.c: the ptrace backend's stops (resuming, clones, execs, exits,
 * tasks seen before their creator's event) */
void vmr_resume(struct vmr_rec *r, struct vmr_task *t, int sig);
void vmr_on_clone(struct vmr_rec *r, struct vmr_task *parent, int event);
struct vmr_task *vmr_on_exec(struct vmr_rec *r, pid_t tid);
void vmr_on_exit_event(struct vmr_rec *r, struct vmr_task *t);
/* t was reaped with wait status `status` and wait4's rusage ru (NULL:
 * none). */
void vmr_on_reaped(struct vmr_rec *r, struct vmr_task *t, int status, const struct rusage *ru);
void vmr_detached(struct vmr_rec *r, struct vmr_task *t);
void vmr_orphan_add(struct vmr_rec *r, pid_t tid, int status);
void vmr_orphan_drop(struct vmr_rec *r, pid_t tid);
void vmr_orphans_adopt(struct vmr_rec *r, pid_t dying);

/* syscalls.c */
void vmr_sc_entry(struct vmr_rec *r, struct vmr_task *t, uint32_t op,
		  const uint64_t *args, uint64_t ts);
void vmr_sc_exit(struct vmr_rec *r, struct vmr_task *t, int64_t rval,
		 uint64_t ts);
void vmr_sc_abandon(struct vmr_rec *r, struct vmr_task *t);
/* A call seen whole (the stream backend): sc with its result, exit time
 * and stack id, entered at t_enter.  A file-backed mmap or a shmat has
 * its identity in t->file (T_HAVE_FILE) already. */
void vmr_sc_record(struct vmr_rec *r, struct vmr_task *t, const struct vmt_syscall *sc,
		   uint64_t t_enter);
/* t->path, a PATH_MAX buffer allocated on first use; NULL without memory. */
char *vmr_task_path(struct vmr_task *t);

/* touch.c: TOUCH events */
/* The pagemap of t's process, opened on first use.  fd or -errno. */
int vmr_pagemap_fd(struct vmr_rec *r, struct vmr_task *t);
/* Start a TOUCH bitmap of task t in r->runs (vmr_runs_add, then
 * vmr_runs_end writes it). */
void vmr_touch_begin(struct vmr_rec *r, struct vmr_task *t, uint32_t reason,
		     uint64_t ts);
/* A TOUCH of the present pages of [start, end).  0 or -err. */
int vmr_touch_range(struct vmr_rec *r, struct vmr_task *t, uint64_t start,
		    uint64_t end, uint32_t reason, uint64_t ts);
/* The TOUCH events of every mapping of t's process, at its exit. */
void vmr_touch_exit(struct vmr_rec *r, struct vmr_task *t);

#endif /* VMREC_RECORDING_INT_H */
