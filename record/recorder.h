/*
 * recorder.h - libvmrecord: the recorder behind vmrec(1).
 *
 * vmrec.c parses the command line with vmr_parse_args(), opens the output
 * with vmr_output_open() and runs vmr_record().  Everything that can be
 * tested without a tracee (option parsing, output naming, /proc/PID/maps
 * parsing, touch run-length encoding) is reachable from here or from
 * record_int.h.
 *
 * Library conventions of the project apply: no printing, no exit; errors
 * are negative errno values plus, where a caller needs to explain, a
 * message copied into a caller buffer.
 */
#ifndef VMREC_RECORDER_H
#define VMREC_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "vmtrace.h"

#define VMR_VERSION "0.1"
#define VMR_DEFAULT_STACK_DEPTH 32u
/* --stack-copy: bytes of stack the stream backend copies at each call. */
#define VMR_DEFAULT_STACK_COPY 8192u
#define VMR_MIN_STACK_COPY 512u
#define VMR_MAX_STACK_COPY 16384u

enum vmr_touch_mode {
	VMR_TOUCH_RESIDENT = 0, /* pagemap before discarding ops and at exit */
	VMR_TOUCH_FAULTS = 1,	/* every user page fault */
	VMR_TOUCH_NONE = 2,	/* syscalls only */
	VMR_TOUCH_AUTO = 3,	/* faults where they can be sampled, else
				   resident (the default) */
};

enum vmr_backend_choice {
	VMR_BACKEND_AUTO = 0, /* stream where the kernel allows it, else inproc
				 for a dynamically linked program, else ptrace */
	VMR_BACKEND_STREAM,   /* the kernel writes the calls into a ring (BPF) */
	VMR_BACKEND_PTRACE,   /* ptrace + seccomp: a stop at every call */
	VMR_BACKEND_INPROC,   /* the program logs its calls itself (no privilege) */
};

/* --ring-size: the stream backend's ring buffer, MiB (a power of two).
 * With --stacks, whose records carry a stack copy, no larger: vmrec keeps
 * up with the copies (a burst of two threads at full speed left 0.1% of
 * its calls without a stack), and a larger ring is written through more
 * pages, each a TLB miss (64 MiB made the seed-000 loop 1.50x native
 * against 1.22x for 16 MiB, here, in a VM where those cost dearly). */
#define VMR_DEFAULT_RING_MIB 16u
#define VMR_DEFAULT_RING_MIB_STACKS 16u
#define VMR_MAX_RING_MIB 1024u

enum vmr_action {
	VMR_RUN = 0,	 /* record (launch or attach) */
	VMR_HELP = 1,	 /* print vmr_usage() to stdout, exit 0 */
	VMR_SHOW_VERSION = 2, /* print the version, exit 0 */
};

struct vmr_opts {
	int action;		/* enum vmr_action */
	const char *output;	/* -o FILE, or NULL for the default name */
	int force;		/* --force: overwrite FILE */
	int quiet;		/* -q */
	unsigned stack_depth;	/* 0: no stacks; else --stacks=DEPTH */
	int touch;		/* enum vmr_touch_mode */
	int backend;		/* enum vmr_backend_choice */
	unsigned ring_mib;	/* --ring-size, or the default */
	int ring_given;		/* --ring-size was given */
	unsigned stack_copy;	/* --stack-copy (bytes) */
	pid_t attach_pid;	/* -p PID, or 0 */
	int same_cpu;		/* --same-cpu: vmrec and the program on one CPU */
	int cmd_argc;		/* launch mode: CMD [ARG...] */
	/* (Not an option.)  1: the process exits right after vmr_record(),
	 * which may then leave what the exit releases to a process that
	 * outlives it a moment (handoff.c). */
	int exits;
	char **cmd_argv;	/* NULL-terminated (points into argv) */
};

/* Parse vmrec's command line.  Options stop at "--" or at the first
 * non-option (so `vmrec ls -l` records `ls -l`).  backend_env, the value
 * of VMREC_BACKEND (NULL when unset), is the default of --backend.
 * Returns 0, or -EINVAL with a one-line reason (no "vmrec:" prefix) in
 * err[0..errlen). */
int vmr_parse_args(int argc, char **argv, const char *backend_env, struct vmr_opts *o,
		   char *err, size_t errlen);

/* The --help text (static). */
const char *vmr_usage(void);

/* The options as recorded in the trace header, with the backend and touch
 * source the recording uses, e.g. "backend=stream touch=faults stacks=32"
 * (written to buf, always NUL-terminated). */
void vmr_options_string(const struct vmr_opts *o, const char *backend, int touch, char *buf,
			size_t len);

/* The trace file, and whether vmrec made it (and so may remove it). */
struct vmr_output {
	int fd;		      /* O_CLOEXEC; -1 when not open */
	char path[4096];      /* the name used */
	int created;	      /* a regular file made in this run */
	dev_t dev;	      /* ... and its identity, to remove only it */
	ino_t ino;
};

/* Open the trace file.  With path != NULL: create it; when it exists,
 * -EEXIST unless force, and with force a regular file (or one a symlink
 * leads to) is replaced by a new one renamed over it at once, anything
 * else (a device, a FIFO) is opened for writing as it is (-EISDIR for a
 * directory).  With path == NULL: create "<base>.vmtrace.zst" in the
 * current directory, else "<base>.1.vmtrace.zst", ".2", ... never
 * replacing an existing file (base: the basename of `name`).  Fills *out
 * (out->path even on failure) and returns the fd or -errno. */
int vmr_output_open(struct vmr_output *out, const char *path, int force, const char *name);

/* Remove the trace file if, and only if, this run created it as a regular
 * file and its name still leads to that file.  Returns 1 if removed, 0 if
 * left alone, -errno if unlink failed. */
int vmr_output_discard(struct vmr_output *out);

/* The command line of process pid (/proc/pid/cmdline), for the header of
 * a trace made by attaching: its words point into buf[0..len) (the last
 * cut where buf ends), at most max of them into argv.  Returns their
 * count, 0 when there are none (a kernel thread, a zombie), or -errno. */
int vmr_proc_cmdline(pid_t pid, char *buf, size_t len, const char **argv, uint32_t max);

/* What vmr_record() reports back. */
struct vmr_summary {
	int exit_code;		/* vmrec's exit status: the root's exit code,
				   128+N for signal N; after SIGINT/SIGTERM to
				   vmrec, 128+that signal; 0 after a detach */
	int stopped_by;		/* signal that stopped recording, or 0 */
	uint64_t events;
	uint32_t threads, procs;
	uint64_t raw_bytes, file_bytes;
	uint64_t lost;		/* events that could not be captured */
	/* --stacks: captures tried, those that gave no stack, those that
	 * gave only the innermost frame, distinct stacks, and (stream) those
	 * not even tried because vmrec had fallen behind (in the first two) */
	uint64_t stack_captures, stack_failed, stack_shallow, stacks, stack_skipped;
	uint64_t stack_cut; /* stream: stacks cut where the copy ended */
	const char *backend;	/* "stream", "inproc" or "ptrace" */
	const char *touch;	/* the touch source: "faults", "resident", "none" */
	int write_error;	/* -errno of the first write of the trace that
				   failed, or 0 */
	int write_error_stopped; /* 1 if it stopped the recording (else it
				    came at the end) */
	uint64_t written_events; /* events in the file's whole chunks: all of
				    them, or after a write error what is kept */
};

/* Notices for the user (fallbacks, warnings) go through this callback;
 * the library never prints.  May be NULL. */
typedef void (*vmr_notice_fn)(void *ctx, const char *msg);

/*
 * Record: launch o->cmd_argv (or attach to o->attach_pid) and write the
 * trace to out_fd (owned by the caller; not closed).  `h` is the header
 * to write (argv filled by the caller; the options, backend and touch
 * source are the recording's own).  For the duration of the
 * call SIGINT, SIGTERM and SIGHUP end the recording (see vmrec(1)) and
 * SIGALRM drives a 50 ms timer; the previous dispositions are restored
 * before returning.
 *
 * Returns 0 when a trace was written (even if the program failed: see
 * sum->exit_code), or a negative error with a message (without "vmrec:")
 * in err[0..errlen), e.g. "cannot trace 'foo': command not found"; then
 * sum->exit_code holds the status vmrec should exit with (127 for a
 * command that could not be run, 1 otherwise).  A trace that cannot be
 * written (sum->write_error) stops the recording when it happens: a
 * launched program is killed, an attached one left to run on.
 */
int vmr_record(const struct vmr_opts *o, int out_fd,
	       const struct vmt_header *h, vmr_notice_fn notice,
	       void *notice_ctx, struct vmr_summary *sum, char *err,
	       size_t errlen);

#endif /* VMREC_RECORDER_H */
