/*
 * matrix.h - vmreplay --kernel=A --kernel=B ... [--host]: one trace
 * replayed with the same options on several kernels (each in a qemu
 * guest of the same CPUs and memory, set to the recording's mm settings)
 * and on this machine, one results file per kernel, and the table that
 * compares them (analysis/stats/rtable.h; vmreplay(1), SEVERAL KERNELS).
 *
 * rp_matrix_prepare checks what can be checked before anything boots
 * (the trace, loaded here, and each image) and decides what every guest
 * gets: its memory, sized from what the replay needs; its CPUs; the
 * files its /init writes (the recorded THP, overcommit and fault-around
 * settings, and --vm-sysctl); its kernel command line.  A single
 * --kernel uses the same (rp_matrix_vm_config) and prints the guest's
 * output as it comes.
 *
 * Conventions as in replay.h: 0 or a negative errno, a message buffer,
 * no printing (progress goes to the event function), no exits.
 */
#ifndef VMREPLAY_MATRIX_H
#define VMREPLAY_MATRIX_H

#include <stddef.h>
#include <stdint.h>
#include "replay.h"
#include "vm.h"

/* What rp_matrix_run reports as it goes, from the thread running the
 * target (with --vm-jobs, several at once: the function must be
 * thread-safe). */
enum rp_mx_what {
	RP_MX_START = 1, /* a target starts */
	RP_MX_VM,	 /* its guest's progress (vm) */
	RP_MX_RUN,	 /* the host replay's progress: run `done` of `total` */
	RP_MX_DONE,	 /* it ended: ok, or error */
};
struct rp_mx_status {
	int what;
	size_t target;
	const char *name;		/* the target's name */
	const struct rp_vm_status *vm;	/* RP_MX_VM */
	uint64_t done, total;		/* RP_MX_RUN */
	int ok;				/* RP_MX_DONE */
	const char *error;		/* RP_MX_DONE, !ok */
	uint64_t elapsed_ns;		/* RP_MX_DONE */
};
typedef void (*rp_mx_event_fn)(void *arg, const struct rp_mx_status *s);

struct rp_mx_target {
	const char *image;	/* NULL: this machine (--host) */
	char name[80];		/* its results file's name without .json: the
				   image's release (its boot header), or "host" */
	char version[160];	/* the image's version string */
	uint64_t need;		/* the kernel's own memory at boot */
	/* The outcome. */
	int done, ok;
	int input_error;	/* the image or the trace is at fault (alone: exit 2) */
	char error[1024];	/* !ok: why, one line */
	char *json;		/* its results file: the results with "vm" and
				   "matrix" added, or {"error": ...} */
	size_t json_len;
	char *report;		/* the report vmreplay prints for it alone */
	size_t report_len;
	char release[65];	/* the kernel it ran on ("" unknown) */
	int accel;		/* a guest's: RP_VM_KVM or RP_VM_TCG */
	uint64_t elapsed_ns;
	double host_noise_pct;	/* others' CPU on this machine meanwhile, or -1 */
};

struct rp_matrix {
	const struct rp_args *a;
	rp_trace *trace;	/* loaded here (for --host, and the sizing), or NULL */
	struct rp_trace_info info;
	char guest[4096];	/* the static vmreplay */
	const char *qemu;	/* its name or path */
	unsigned cpus;		/* every guest's, and the host replay's */
	uint64_t memory;	/* every guest's */
	uint64_t max_memory;	/* the replay's --max-memory, here and in guests */
	int sized;		/* memory was sized from the trace */
	char *sysctl[RP_VM_SYSCTL_MAX + 8 + 1]; /* "PATH=VALUE", NULL-ended */
	char asked[512];	/* the mm settings asked, "thp=madvise ..." */
	char recorded[512];	/* the recording's */
	size_t n;
	struct rp_mx_target t[RP_KERNELS_MAX + 1]; /* in column order */
	char notes[4][256];	/* what the program should say before the runs */
	size_t nnotes;
	rp_mx_event_fn event;
	void *event_arg;
};

/* Prepare the targets of the command line a (with --kernel) in *m: the
 * trace loaded here when --host or the sizing needs it (its header read
 * in any case), the images checked (one that is not a bootable kernel
 * fails its own target only), the guests' memory, CPUs and settings.
 * guest: the static vmreplay (rp_vm_find_guest).  Returns 0, or <0 with
 * msg when nothing can run: a bad trace (-EINVAL and the VMT_E_* codes:
 * exit 2), a resource (-E2BIG, -ENOMEM: exit 1). */
int rp_matrix_prepare(struct rp_matrix *m, const struct rp_args *a, const char *guest,
		      char *msg, size_t msglen);

/* The guest configuration of target i (a kernel), for rp_vm_run: argv
 * points into buf/argv (the guest replay's command line, with json as
 * its --json when not NULL, progress as rp_guest_args); its output to
 * out_fd and err_fd.  Returns 0, or -ENOSPC (too long a command line). */
int rp_matrix_vm_config(const struct rp_matrix *m, size_t i, const char *json, int progress,
			int out_fd, int err_fd, char **argv, size_t argmax, char *buf,
			size_t buflen, struct rp_vm_config *c);

/* Run every target: this machine's first and alone, then the guests,
 * --vm-jobs at once.  Each target's outcome in m->t[i] (a failed one
 * keeps the others').  Returns the number that failed, or -ENOMEM. */
int rp_matrix_run(struct rp_matrix *m);

/* The table of the targets' results (rtable.h) as text, into out.
 * Returns 0, or -ENOMEM; -EINVAL with msg if a result does not read
 * back (a guest's JSON that is not a result). */
int rp_matrix_table(const struct rp_matrix *m, struct vmt_buf *out, char *msg, size_t msglen);

/* Write each target's results file, DIR/NAME.json (DIR made if missing),
 * and its report beside it as DIR/NAME.txt.  Returns 0 or <0 with msg. */
int rp_matrix_write(const struct rp_matrix *m, const char *dir, char *msg, size_t msglen);

void rp_matrix_free(struct rp_matrix *m);

#endif
