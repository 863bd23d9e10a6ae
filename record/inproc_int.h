/*
 * inproc_int.h - what the inproc backend's files share (vmrec's side; the
 * runtime's is record/inproc/).  Internal to record/.
 *   inproc.c    the backend: probe, launch, the loop, the end
 *   inject.c    the runtime's image, the seccomp filter, and the exec
 *               stop that puts the runtime into every new image
 *   inprocev.c  the rings drained, merged in time order, made events
 *   inproccnt.c the kernel's counters of the tasks (COUNTERS events)
 *   inprocq.c   the queues both put records into, and the processes
 */
#ifndef VMREC_INPROC_INT_H
#define VMREC_INPROC_INT_H

#include "recording_int.h"
#include "keeper_int.h"
#include "vmtutil.h"
#include "inproc/ipshm.h"

/* The runtime's file, read into memory. */
struct ip_img {
	unsigned char *file;
	size_t size;
	struct ip_seg {
		uint64_t vaddr, memsz, filesz, off;
		int prot;
	} seg[4];
	int nseg;
	struct ip_image hdr;
	char path[PATH_MAX];
};

/* One ring's records, copied out of the shared file, in ring order,
 * each behind a struct ipq_hdr, until they become events. */
struct ipq_hdr {
	uint64_t key;  /* its place in the trace: its time, never below the
			  ring's previous record's */
	uint64_t done; /* when it was complete (a call's exit) */
	uint32_t len;  /* of the record that follows */
	uint32_t pad;
};

struct ipq {
	unsigned char *buf;
	size_t head, tail, cap;
	uint64_t key;	   /* of the last record queued */
	uint32_t gen;	   /* the slot's generation being read */
	int active;	   /* the slot is this queue's (LIVE, or ending) */
	int ending;	   /* its thread is ending or gone: its busy mark is
			      not waited for, its tid not looked up */
	int dead;	   /* its thread can write no more (its process is
			      gone, or an exec ended it) */
	int copied;	   /* a drain began after the thread's last write (the
			      slot was DONE, or dead): the ring holds nothing
			      more, and the slot is freed once this is empty */
	pid_t tid, pid;	   /* from its START record */
	uint64_t idle_at;  /* a lower bound of the next call's time */
	struct vmr_task *t; /* bound at the START record's turn */
};

/* A process of the recording, by pid (a thread group). */
struct ipp {
	pid_t pid;
	int pidfd;	/* -1: none (gone before it could be opened) */
	int gone;	/* vmrec saw it end (its end is queued) */
	int dead;	/* its end is in the trace */
	int have_status, status; /* wait status, when known */
	uint64_t dead_at;	/* when its pidfd first said it ended, or 0 */
	uint64_t reaped_at;	/* when its parent reaped it (a REAP record), or 0 */
	uint64_t (*own)[2]; /* ranges the runtime mapped for itself */
	size_t nown, owncap;
};

/* A thread seized around its exec. */
struct ipx {
	pid_t tid;
	int slot; /* its ring */
	int pending_sig; /* a signal that came while stopped, to deliver */
};

#define IP_VMREC_Q IP_NSLOTS /* the queue of vmrec's own records */

/* Records only vmrec makes (into its queue or a ring's). */
enum {
	IPR_X_EXEC = 100, /* an exec happened: struct ipx_exec + maps text */
	IPR_X_DEAD,	  /* a process ended without saying: struct ipx_dead */
	IPR_X_CNT,	  /* a thread's counters, read before its end: struct ipx_cnt */
};
struct ipx_exec {
	struct ip_rec h;
	int32_t tid, former; /* the tid after the exec, and before */
	uint32_t pathlen, mapslen; /* bytes of path (NUL incl.) and maps text that follow */
	uint32_t have_cnt, pad;	   /* cnt: read at the exec stop (vmr_cnt_read_group) */
	struct vmt_counters cnt;
};
struct ipx_dead {
	struct ip_rec h;
	int32_t pid, status; /* wait status */
	uint32_t have;	     /* IPE_THREAD: .thread, its leader's; IPE_PROCESS: .proc */
	uint32_t proc_group; /* .proc is vmr_cnt_read_group's (its ended threads'
				switches to add), not wait4's */
	struct vmt_counters thread, proc;
};
struct ipx_cnt {
	struct ip_rec h;
	int32_t tid, pad;
	struct vmt_counters cnt;
};

struct inproc {
	struct ip_img img;
	int img_mapped;	 /* the image is mapped in vmrec (for the launch's gate) */
	int shm_fd;
	void *shm;
	struct ip_shared *hdr;
	struct ipq q[IP_NSLOTS + 1];
	int *act; /* queues with records */
	size_t nact;
	struct ipp *procs;
	size_t nprocs, capprocs;
	struct ipx *seized;
	size_t nseized, capseized;
	struct vmr_keeper keeper;
	pid_t root;
	int root_reaped, root_status;
	uint32_t live_procs;
	uint64_t lost_told, shm_lost_told;
	uint64_t sock_filter_len;
	void *filter; /* struct sock_filter[] */
	char why_static[160];
};

/* inject.c */
/* Read and check the runtime's file (next to vmrec, or in its lib dir).
 * 0, or -errno with why. */
int ip_img_load(struct ip_img *img, char *why, size_t len);
void ip_img_free(struct ip_img *img);
/* Map the image into vmrec itself (the launch child execs through its
 * gate).  0 or -errno. */
int ip_img_map_self(struct ip_img *img);
/* The filter for the op numbers of sys: into ip->filter. 0 or -ENOMEM. */
int ip_filter_build(struct inproc *ip, const struct vmr_sysmap *sys);
/* In the launch child: no new privileges (unless root), the filter, and
 * argv executed through the gate.  Returns -errno only on failure. */
int ip_launch_run(const void *ctx, char *const argv[], char *stage);
void ip_launch_exit(const void *ctx, int code);
/* At the exec stop of tid (seized): its image gets the runtime.  0, or
 * -errno with err set; the thread is detached either way (pending_sig
 * delivered). */
int ip_inject(struct vmr_rec *r, struct inproc *ip, pid_t tid, int pending_sig, char *err,
	      size_t errlen);

/* inprocev.c */
/* Copy what the rings hold into their queues, answering exec requests;
 * returns the horizon: the time before which every call is known. */
uint64_t ip_pass(struct vmr_rec *r, struct inproc *ip);
/* Queued records complete by `horizon` into events, in time order.
 * Returns the time up to which the trace is then complete (the horizon,
 * or the entry of a call queued but not complete by then): the fault
 * samples up to it may follow. */
uint64_t ip_emit(struct vmr_rec *r, struct inproc *ip, uint64_t horizon);
/* Queue one of vmrec's own records (q: a ring's queue or IP_VMREC_Q). */
int ip_queue(struct inproc *ip, int q, const void *rec, uint32_t len, uint64_t key,
	     uint64_t done);
/* The first record of queue q (NULL when empty), and its removal. */
struct ipq_hdr *ip_q_head(struct ipq *q);
void ip_q_pop(struct ipq *q);
/* The process pid (a new entry, with its pidfd, if unknown); NULL without memory. */
struct ipp *ip_proc(struct inproc *ip, pid_t pid);
/* The latest entry of process pid, ended or not; NULL if none. */
struct ipp *ip_proc_find(struct inproc *ip, pid_t pid);
/* The queue of thread tid's current ring, or -1. */
int ip_queue_of(struct inproc *ip, pid_t tid);
/* Process pid's threads can write no more (it is gone, or an exec
 * replaced its image): their rings are freed once drained. */
void ip_rings_dead(struct inproc *ip, pid_t pid);
/* For the fault samples: the task of tid, unless addr is the runtime's. */
int ip_fault_who(void *ctx, pid_t tid, uint64_t addr, uint32_t *thread, uint32_t *proc);
/* Free the queues and tables. */
void ip_ev_free(struct inproc *ip);

/* inproccnt.c */
/* Thread tid's (queue qi's) request before it ends its process pid's
 * other threads: their counters, read now, into IPX_CNT records of its
 * queue (before its exit or exec). */
void ip_cnt_others(struct vmr_rec *r, struct inproc *ip, int qi, pid_t pid, pid_t tid,
		   uint64_t ts);
/* A request of slot's thread (IPR_EXEC, IPR_ENDING, header h): the
 * counters of the threads it is to end, then vmrec's answer. */
void ip_request(struct vmr_rec *r, struct inproc *ip, int slot, const struct ip_rec *h);
/* The pages of slot's ring (and of the shared file's header) mapped in
 * process pid by vmrec's reads: their faults are then not the program's
 * (and so not in its counters). */
void ip_cnt_prefault(pid_t pid, int slot);
/* A thread's IPX_CNT record: its counters, for its THREAD_EXIT. */
void ip_cnt_take(struct vmr_rec *r, const struct ipx_cnt *x);
/* The counters of t's exit record, for its THREAD_EXIT and its
 * process's PROCESS_EXIT. */
void ip_cnt_exit(struct vmr_task *t, const struct ip_exit *x);
/* Process pid, a zombie: its leader's and its own counters into d. */
void ip_cnt_zombie(pid_t pid, struct ipx_dead *d);
/* ... reaped by vmrec with wait4's rusage ru: the process's own, final
 * count, when it waited for no child. */
void ip_cnt_reaped(struct ipx_dead *d, const struct rusage *ru);
/* A death's counters for the tasks of process p (lead: its leader's
 * task, or NULL), before they end. */
void ip_cnt_dead(struct vmr_proc *p, struct vmr_task *lead, const struct ipx_dead *d);

/* inject.c: threads seized around their execs */
/* Seize tid (whose ring is slot) to stop it at its exec.  0 or -errno. */
int ip_seize(struct inproc *ip, pid_t tid, int slot);
struct ipx *ip_seized(struct inproc *ip, pid_t tid);
void ip_seized_drop(struct inproc *ip, struct ipx *x);
/* A request of tid (slot s): seize it for its exec (failed 0), or let it
 * go after a failed one (failed 1); then the answer to the thread. */
void ip_exec_request(struct vmr_rec *r, struct inproc *ip, int slot, pid_t tid, int failed);

#endif
