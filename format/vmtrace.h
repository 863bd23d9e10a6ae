/*
 * vmtrace.h - libvmtrace: the event model, trace writer and reader, name
 * tables and strace-style rendering of vmrec traces.
 *
 * The on-disk layout is specified in man/vmtrace.5.  In short: a trace is a
 * header (zstd skippable frame), a sequence of chunks (a small skippable
 * frame describing the chunk, then one independent zstd frame holding its
 * events), and a footer (skippable frame).  `zstd -d` decodes the event
 * bytes of every chunk and ignores the rest.
 *
 * Conventions: functions return 0 (or a count) on success and a negative
 * value on failure: -errno for system errors, or one of VMT_E_* below for
 * trace-content errors.  No function prints or exits.  Handles are opaque;
 * every *_free() accepts NULL.
 *
 * Pointers inside an event returned by the reader (strings, arrays) stay
 * valid until the next call to vmt_reader_next() or vmt_reader_free().
 */
#ifndef VMTRACE_H
#define VMTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Format version written by this library.  A reader accepts any file with
 * the same major version; it refuses a newer major version. */
#define VMT_FORMAT_MAJOR 1
#define VMT_FORMAT_MINOR 4

/* ---- Event kinds (values are on-disk; never renumber) ------------------ */
enum vmt_kind {
	VMT_EV_SYSCALL = 1,
	VMT_EV_MAP_FILE = 2,
	VMT_EV_THREAD_START = 3,
	VMT_EV_THREAD_EXIT = 4,
	VMT_EV_PROCESS_START = 5,
	VMT_EV_EXEC = 6,
	VMT_EV_PROCESS_EXIT = 7,
	VMT_EV_MAPS = 8,
	VMT_EV_TOUCH = 9,
	VMT_EV_FAULT = 10,
	VMT_EV_STACK = 11,
	VMT_EV_SYMBOL = 12,
	VMT_EV_STRING = 13,
	VMT_EV_LOST = 14,
	VMT_EV_COUNTERS = 15, /* 1.2 */
	VMT_EV__COUNT /* one past the largest kind this version knows */
};

/* ---- Operations (values are on-disk; never renumber) ------------------- */
enum vmt_op {
	VMT_OP_MMAP = 1,
	VMT_OP_MUNMAP = 2,
	VMT_OP_MPROTECT = 3,
	VMT_OP_PKEY_MPROTECT = 4,
	VMT_OP_MADVISE = 5,
	VMT_OP_PROCESS_MADVISE = 6,
	VMT_OP_MLOCK = 7,
	VMT_OP_MLOCK2 = 8,
	VMT_OP_MUNLOCK = 9,
	VMT_OP_MLOCKALL = 10,
	VMT_OP_MUNLOCKALL = 11,
	VMT_OP_MREMAP = 12,
	VMT_OP_BRK = 13,
	VMT_OP_MSYNC = 14,
	VMT_OP_MINCORE = 15,
	VMT_OP_REMAP_FILE_PAGES = 16,
	VMT_OP_SHMAT = 17,
	VMT_OP_SHMDT = 18,
	VMT_OP_MSEAL = 19,
	VMT_OP__COUNT /* one past the largest op this version knows */
};

#define VMT_MAX_ARGS 6
#define VMT_NONE UINT32_MAX /* "no thread/process/stack" */

/* Limits a reader enforces (and a writer respects). */
#define VMT_MAX_THREADS (1u << 22)
#define VMT_MAX_STACK_DEPTH 1024u
#define VMT_MAX_CHUNK_BYTES (16u << 20) /* uncompressed bytes of one chunk */
#define VMT_MAX_STRING 65535u		/* bytes of one string */
#define VMT_MAX_MAPS_ENTRIES (1u << 20) /* entries of one MAPS event */
#define VMT_MAX_TOUCH_RUNS (1u << 20)	/* runs of one TOUCH event: a writer
					   splits larger bitmaps */

/* Addresses at and above this are outside any user address space (the
 * largest, with 5-level page tables, is 2^56 bytes): a consumer of traces
 * may take a call that succeeded on a range reaching past it as one no
 * kernel could have made. */
#define VMT_ADDR_LIMIT (1ull << 57)

/* ---- Event payloads ----------------------------------------------------- */

/* Flags of a SYSCALL event. */
#define VMT_SC_NO_RESULT 0x1u /* no exit stop was seen (task died/detached);
				 result and exit_ns are meaningless */
#define VMT_SC_REWRITTEN 0x2u /* produced by a rewrite rule; result not
				 comparable with a recording */

struct vmt_syscall {
	uint32_t op;	    /* enum vmt_op */
	uint32_t nargs;	    /* number of args[] that are meaningful (<= 6) */
	uint64_t args[VMT_MAX_ARGS]; /* raw register values, recording arch */
	int64_t result;	    /* return value, or -errno */
	uint64_t exit_ns;   /* monotonic ns at the exit stop (>= event ts) */
	uint32_t stack_id;  /* VMT_NONE, or the id of an earlier STACK event */
	uint32_t flags;	    /* VMT_SC_* */
	/* What the call waited for (1.2, where the recorder measured it:
	 * the stream backend).  waits 0: not measured, the rest is 0. */
	uint32_t waits;
	uint32_t vcsw;	     /* voluntary context switches inside the call
				(it blocked: mmap_lock, I/O, reclaim) */
	uint32_t ivcsw;	     /* involuntary ones (it was preempted) */
	uint64_t off_cpu_ns; /* time off CPU between entry and exit
				(<= exit_ns - ts_ns) */
};

/* Identity of the file behind a file-backed mmap.  It describes the next
 * SYSCALL event of the same thread (written immediately before it). */
struct vmt_map_file {
	const char *path; /* NUL-terminated; "" when unknown */
	uint64_t dev;	  /* st_dev as a userland dev_t (makedev()) */
	uint64_t ino;
	uint64_t size;	  /* st_size at the entry stop */
	uint32_t open_flags; /* the fd's O_* flags (from /proc/PID/fdinfo) */
	uint32_t mode;	  /* st_mode */
};

struct vmt_thread_start {
	uint32_t parent_thread; /* creating thread, or VMT_NONE */
	int32_t os_tid;		/* tid on the recording machine */
};

struct vmt_thread_exit {
	int32_t status; /* exit code, or 128+signal when killed */
};

enum vmt_proc_kind {
	VMT_PROC_ROOT = 0,   /* the launched program */
	VMT_PROC_FORK = 1,
	VMT_PROC_VFORK = 2,
	VMT_PROC_CLONE = 3,  /* clone() without CLONE_VM */
	VMT_PROC_ATTACH = 4, /* attached with -p */
};

/* A new address space.  The event's `proc` is the new process; its
 * `thread` is the new process's first thread (whose THREAD_START follows). */
struct vmt_process_start {
	uint32_t parent_proc; /* VMT_NONE for a root */
	int32_t os_pid;
	uint32_t how; /* enum vmt_proc_kind */
};

struct vmt_exec {
	const char *path; /* program path after exec */
};

struct vmt_process_exit {
	int32_t status; /* raw wait status (WIFEXITED etc. apply) */
};

/* One mapping of a MAPS snapshot (as /proc/PID/maps shows it). */
#define VMT_PROT_R 0x1u
#define VMT_PROT_W 0x2u
#define VMT_PROT_X 0x4u
#define VMT_MAPS_SHARED 0x8u /* 's' instead of 'p' */
struct vmt_map_entry {
	uint64_t start, end; /* [start, end), page aligned, start < end */
	uint64_t offset;
	uint64_t dev; /* makedev(major, minor) */
	uint64_t ino;
	uint32_t perms; /* VMT_PROT_* | VMT_MAPS_SHARED */
	const char *path; /* "" for anonymous, "[heap]", "[stack]", ... */
};

struct vmt_maps {
	uint32_t count;
	const struct vmt_map_entry *entries; /* sorted, non-overlapping */
};

/* Page states in a TOUCH bitmap. */
enum vmt_page_state {
	VMT_PAGE_ABSENT = 0,  /* not present (never touched, or discarded) */
	VMT_PAGE_PRESENT = 1, /* present; whether written is unknown */
	VMT_PAGE_READ = 2,    /* present, only read (e.g. the zero page) */
	VMT_PAGE_WRITTEN = 3, /* present and written */
};

struct vmt_touch_run {
	uint64_t pages; /* >= 1 */
	uint32_t state; /* enum vmt_page_state */
};

enum vmt_touch_reason {
	VMT_TOUCH_BEFORE_OP = 0, /* state just before the next SYSCALL of this
				    thread (a discarding op) */
	VMT_TOUCH_EXIT = 1,	 /* state at process exit */
	VMT_TOUCH_SNAPSHOT = 2,	 /* other */
};

struct vmt_touch {
	uint64_t start;	 /* first page's address (page aligned) */
	uint64_t npages; /* sum of runs[].pages */
	uint32_t reason; /* enum vmt_touch_reason */
	uint32_t nruns;
	const struct vmt_touch_run *runs;
};

#define VMT_FAULT_READ 0x1u
#define VMT_FAULT_WRITE 0x2u
#define VMT_FAULT_EXEC 0x4u
/* What the kernel made of a fault (1.3; 0 in older traces and where the
 * recorder could not tell). */
#define VMT_FLT_MAJOR 0x1u /* counted as a major fault (majflt) */
#define VMT_FLT_GUP 0x2u   /* no instruction took it: the kernel faulted a page
			      in itself (get_user_pages), which page is not
			      known (addr and ip 0, access 0) */
#define VMT_FLT_CALL 0x4u  /* ... during the recorded call that follows it
			      in the thread (MAP_POPULATE, mlock,
			      MADV_POPULATE_*), which a replay repeats */
#define VMT_FLT__ALL 0x7u
struct vmt_fault {
	uint64_t addr;
	uint64_t ip;
	uint32_t access; /* VMT_FAULT_*; 0 when the kernel did not say */
	uint32_t flags;	 /* VMT_FLT_* */
};

/* Is the fault a touch of a known page of its process (what a replay
 * redoes, what the analyses take for a use of the page)?  Not one the
 * kernel took through get_user_pages, whose page is not known (for a
 * recorded call, a replay of the call takes it again). */
static inline int vmt_fault_touches(const struct vmt_fault *f)
{
	return !(f->flags & VMT_FLT_GUP);
}

/* An interned call stack.  Stack ids are dense from 0 in order of first
 * appearance; a SYSCALL refers to a stack id that appeared earlier. */
struct vmt_stack {
	uint32_t id;
	uint32_t depth;	    /* <= VMT_MAX_STACK_DEPTH */
	const uint64_t *ips; /* innermost first */
};

/* Symbolization of one ip (written when recording ends). */
struct vmt_symbol {
	uint64_t ip;
	uint32_t module; /* STRING id of the module path, or VMT_NONE */
	uint32_t function; /* STRING id of the function name, or VMT_NONE */
	uint64_t offset; /* ip - function start (or - module base if no
			    function) */
};

/* An interned string (used by SYMBOL).  Ids are dense from 0. */
struct vmt_string {
	uint32_t id;
	const char *str;
};

enum vmt_lost_what {
	VMT_LOST_FAULTS = 1, /* fault samples dropped by the kernel ring */
	VMT_LOST_EVENTS = 2, /* other events the recorder could not capture */
};

struct vmt_lost {
	uint64_t count;
	uint32_t what; /* enum vmt_lost_what */
};

/* The kernel's own counters of a thread or a process (1.2): what a
 * replay is judged against (vmreplay(1), FIDELITY).  A COUNTERS event of
 * scope THREAD comes right before its thread's THREAD_EXIT, one of scope
 * PROCESS right before its process's PROCESS_EXIT, one of scope EXEC
 * right before an EXEC (the root process's first: the exec that started
 * the recording, whose counts are of the recorder's launch, not of the
 * program). */
enum vmt_counters_scope {
	VMT_CNT_THREAD = 0,  /* the thread, from its creation to its exit */
	VMT_CNT_PROCESS = 1, /* every thread the process ever had, to its exit */
	VMT_CNT_EXEC = 2,    /* every thread the process had until this exec */
};
#define VMT_CNT_TICKS 0x1u /* utime_ns and stime_ns are only as fine as
			      the kernel's clock ticks (/proc) */
#define VMT_CNT_SUM 0x2u   /* PROCESS: the sum of its threads' THREAD
			      counters, not the kernel's count for the
			      process as a whole */
struct vmt_counters {
	uint32_t scope;		/* enum vmt_counters_scope */
	uint32_t flags;		/* VMT_CNT_* */
	uint64_t minflt, majflt; /* page faults (getrusage ru_minflt, ru_majflt) */
	uint64_t nvcsw, nivcsw; /* context switches (ru_nvcsw, ru_nivcsw) */
	uint64_t utime_ns, stime_ns; /* CPU time in user and kernel mode */
	uint64_t stops;		/* times the recorder stopped it (ptrace):
				   each stop is one of the voluntary switches */
	uint64_t own_flt;	/* (1.4) of minflt, the faults the recorder
				   itself took in it (the inproc backend's
				   runtime, on its own memory) */
};

/* The program's own minor faults: minflt but the recorder's (own_flt),
 * which a replay does not make. */
static inline uint64_t vmt_counters_minflt(const struct vmt_counters *c)
{
	return c->minflt > c->own_flt ? c->minflt - c->own_flt : 0;
}

/* One event.  `thread` and `proc` are small dense indices assigned by the
 * recorder (the OS ids are in THREAD_START/PROCESS_START). */
struct vmt_event {
	uint32_t kind;	 /* enum vmt_kind */
	uint32_t thread; /* < VMT_MAX_THREADS */
	uint32_t proc;	 /* < VMT_MAX_THREADS */
	uint64_t ts_ns;	 /* CLOCK_MONOTONIC ns (entry time for SYSCALL) */
	union {
		struct vmt_syscall sc;
		struct vmt_map_file file;
		struct vmt_thread_start thread_start;
		struct vmt_thread_exit thread_exit;
		struct vmt_process_start process_start;
		struct vmt_exec exec;
		struct vmt_process_exit process_exit;
		struct vmt_maps maps;
		struct vmt_touch touch;
		struct vmt_fault fault;
		struct vmt_stack stack;
		struct vmt_symbol symbol;
		struct vmt_string string;
		struct vmt_lost lost;
		struct vmt_counters counters;
	} u;
};

/* Whether events of this kind point to memory of the reader's (strings,
 * arrays: valid until the reader's next event), which a copy of the
 * event does not carry along. */
static inline int vmt_kind_has_pointers(uint32_t kind)
{
	switch (kind) {
	case VMT_EV_MAP_FILE:
	case VMT_EV_EXEC:
	case VMT_EV_STRING:
	case VMT_EV_STACK:
	case VMT_EV_TOUCH:
	case VMT_EV_MAPS:
		return 1;
	default:
		return 0;
	}
}

/* ---- Trace header ------------------------------------------------------- */
struct vmt_header {
	uint16_t major, minor;	 /* filled by the reader; ignored by writer */
	const char *arch;	 /* "x86_64", "aarch64", ... */
	uint32_t page_size;
	const char *kernel;	 /* uname -r */
	const char *hostname;
	uint32_t argc;		 /* recorded command line */
	const char *const *argv;
	const char *options;	 /* recording options, e.g. "touch=resident" */
	const char *recorder;	 /* e.g. "vmrec 0.1" */
	const char *backend;	 /* what recorded: "stream", "ptrace" (a 1.0
				    trace by vmrec: "ptrace"; else "") */
	const char *touch;	 /* the touch source: "faults", "resident",
				    "none" (1.0: from the options; else "") */
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at start */
	uint64_t start_mono_ns;	    /* CLOCK_MONOTONIC at start (time 0) */
};

/* Fill arch, page size, kernel release, host name and start times of *h
 * from this machine.  Strings point to static storage. */
void vmt_header_from_host(struct vmt_header *h);

/* The value of the "key=value" word named key in a space-separated word
 * list such as the header's OPTIONS: copied into val (of size vlen,
 * truncated, NUL-terminated) and 1 returned; 0 when there is no such
 * word (val is then ""). */
int vmt_options_get(const char *options, const char *key, char *val, size_t vlen);

/* Whether the recording kernel of the trace with header h mapped the
 * zero page on a first read (the "zeropage=" word): 1 or 0, and 1 when
 * the trace does not say (traces before the word, and kernels before it
 * could be turned off, did). */
int vmt_header_zero_page(const struct vmt_header *h);

/* ---- Footer (summary) --------------------------------------------------- */
struct vmt_chunk_info {
	uint64_t offset;      /* file offset of the chunk's descriptor frame */
	uint64_t first_event; /* ordinal of its first event */
	uint32_t events;
	uint64_t first_ts_ns; /* ts of its first event */
};

struct vmt_footer {
	uint64_t events;
	uint64_t by_kind[VMT_EV__COUNT];
	uint64_t op_count[VMT_OP__COUNT];
	uint64_t op_errors[VMT_OP__COUNT];
	uint32_t threads;     /* largest thread index + 1 */
	uint32_t procs;	      /* largest proc index + 1 */
	uint64_t first_ts_ns, last_ts_ns;
	uint64_t raw_bytes;   /* uncompressed event bytes */
	uint32_t nchunks;
	const struct vmt_chunk_info *chunks;
};

/* ---- Errors ------------------------------------------------------------- */
enum vmt_error {
	VMT_E_TRUNC = -1000,   /* file ends inside a chunk, or without footer */
	VMT_E_CORRUPT = -1001, /* a field is invalid or inconsistent */
	VMT_E_MAGIC = -1002,   /* not a vmtrace file */
	VMT_E_VERSION = -1003, /* newer major version */
	VMT_E_LIMIT = -1004,   /* a length or count exceeds a format limit */
	VMT_E_STATE = -1005,   /* API misuse (e.g. append after finish) */
};

/* 1 if a syscall result is -errno: the kernel's IS_ERR_VALUE() range
 * [-4095, -1].  Anything else, including addresses that look negative, is
 * a success. */
static inline int vmt_is_errno(int64_t result)
{
	return result < 0 && result >= -4095;
}

/* Human-readable text for a VMT_E_* code or a negative errno. */
const char *vmt_strerror(int err);

/* ---- Writer ------------------------------------------------------------- */
typedef struct vmt_writer vmt_writer;

struct vmt_writer_opts {
	size_t chunk_bytes; /* flush when this many event bytes are buffered
			       (0: default 256 KiB) */
	uint32_t flush_ms;  /* flush when the oldest buffered event was
			       appended this long ago (0: default 100) */
	int level;	    /* zstd level (0: default 3) */
};

/* Start a trace on fd (which the writer does not close), writing the
 * header at once.  opts may be NULL.  Returns NULL and sets *err (negative)
 * on failure. */
vmt_writer *vmt_writer_create(int fd, const struct vmt_header *h,
			      const struct vmt_writer_opts *opts, int *err);

/* Append one event.  Validates it (same rules as the reader) and returns
 * -EINVAL/VMT_E_LIMIT for an invalid one.  May write a chunk (by size, or
 * by time: see flush_ms).  Returns 0 or a negative error; after a write
 * error every later call returns the same error. */
int vmt_writer_append(vmt_writer *w, const struct vmt_event *ev);

/* Write the buffered events as a chunk if the oldest of them is older than
 * flush_ms.  Call it periodically when no events arrive.  Returns 0/-err. */
int vmt_writer_tick(vmt_writer *w);

/* Write the buffered events as a chunk now.  Returns 0 or -err. */
int vmt_writer_flush(vmt_writer *w);

/* Flush, then write the footer.  No event may be appended after.  Returns
 * 0 or -err. */
int vmt_writer_finish(vmt_writer *w);

struct vmt_writer_stats {
	uint64_t events;
	uint64_t raw_bytes;	/* uncompressed event bytes */
	uint64_t file_bytes;	/* bytes written to the file so far */
	uint32_t chunks;
	uint64_t written_events; /* events of the chunks written whole: what
				    a reader finds after a write error */
};
void vmt_writer_get_stats(const vmt_writer *w, struct vmt_writer_stats *st);

/* Free the writer.  Buffered events are NOT written unless flushed or
 * finished before (so a caller that wants them calls finish first). */
void vmt_writer_free(vmt_writer *w);

/* ---- Reader ------------------------------------------------------------- */
typedef struct vmt_reader vmt_reader;

/* Open a trace on fd (not closed by the reader) and read its header.
 * Returns NULL and sets *err on failure; then, if errmsg is not NULL, a
 * message (with byte offset) is copied to errmsg[0..errlen). */
vmt_reader *vmt_reader_open_fd(int fd, int *err, char *errmsg, size_t errlen);

/* The trace header (valid for the reader's lifetime). */
const struct vmt_header *vmt_reader_header(const vmt_reader *r);

/* Decode ahead on a second thread: reading, decompressing, decoding and
 * validating the events then run beside the caller's own work on them,
 * with memory still bounded (a few batches of events).  The events, their
 * order, errors and messages are the same as without; so are the other
 * functions' results, which describe the caller's position (the event
 * last returned), not the thread's.  Call it before the first
 * vmt_reader_next().  Only for regular files (vmt_reader_free() waits for
 * the thread, which must not wait on a pipe).  Returns 0, or -ENOTSUP
 * (not a regular file), -EINVAL (events already read) or -errno (no
 * thread): the reader then works as before. */
int vmt_reader_prefetch(vmt_reader *r);
/* With vmt_reader_prefetch, on: the decoding thread is made to wait (and
 * is waiting, or has exited, when this returns) until
 * vmt_reader_hold(r, 0): a process forks so with no thread inside the
 * allocator.  Without it, nothing. */
void vmt_reader_hold(vmt_reader *r, int on);

/* Read the next event into *ev.  Returns 1 for an event, 0 at the clean end
 * of the trace (footer read and consistent), or a negative error; after an
 * error the reader stays in that error. */
int vmt_reader_next(vmt_reader *r, struct vmt_event *ev);
/* The same without a copy: *ev points to the reader's event, valid (with
 * what it points to) until the next call to either or vmt_reader_free(). */
int vmt_reader_next_ref(vmt_reader *r, const struct vmt_event **ev);

/* The message of the last error: what was wrong and at which byte offset,
 * e.g. "truncated at byte 1234: chunk needs 5000 bytes, 3000 left". */
const char *vmt_reader_errmsg(const vmt_reader *r);

/* The footer, once vmt_reader_next() has returned 0; else NULL. */
const struct vmt_footer *vmt_reader_footer(const vmt_reader *r);

/* Ordinal of the next event (= events returned so far), and the file
 * offset of the chunk being read. */
uint64_t vmt_reader_event_index(const vmt_reader *r);
uint64_t vmt_reader_offset(const vmt_reader *r);

void vmt_reader_free(vmt_reader *r);

/* Validate one event against the format rules (used by writer and reader).
 * Returns 0, or VMT_E_CORRUPT/VMT_E_LIMIT; *why (if not NULL) names the
 * field. */
int vmt_event_check(const struct vmt_event *ev, const char **why);

/* ---- Names -------------------------------------------------------------- */

/* Kinds of syscall arguments, for decoding and rendering. */
enum vmt_arg_type {
	VMT_ARG_ADDR = 1, /* an address in the tracee (hex, NULL) */
	VMT_ARG_LEN,	  /* a byte count (decimal) */
	VMT_ARG_PROT,	  /* PROT_* */
	VMT_ARG_MAP_FLAGS, /* MAP_* */
	VMT_ARG_FD,	  /* int fd */
	VMT_ARG_OFF,	  /* file offset (hex) */
	VMT_ARG_MADV,	  /* MADV_* */
	VMT_ARG_MLOCK2,	  /* MLOCK_* */
	VMT_ARG_MCL,	  /* MCL_* */
	VMT_ARG_MREMAP,	  /* MREMAP_* */
	VMT_ARG_MS,	  /* MS_* */
	VMT_ARG_INT,	  /* a signed int */
	VMT_ARG_HEX,	  /* an unsigned value shown in hex */
	VMT_ARG_SHMFLG,	  /* SHM_* for shmat */
};

enum vmt_ret_type {
	VMT_RET_INT = 1,  /* int result: 0 or -errno */
	VMT_RET_ADDR,	  /* address result (mmap, mremap, brk, shmat) */
};

/* The part of the address space an op acts on (vmt_op_info.range). */
enum vmt_op_range {
	VMT_RANGE_NONE = 0, /* none recorded (process_madvise: the iovecs
			       are not in the trace) */
	VMT_RANGE_ARGS,	    /* [args[addr_arg], + args[len_arg]) */
	VMT_RANGE_MAP,	    /* mmap: args[len_arg] bytes at the result (at
			       args[addr_arg] with MAP_FIXED or
			       MAP_FIXED_NOREPLACE) */
	VMT_RANGE_REMAP,    /* mremap: the old range [args[0], + args[1]) and
			       args[2] bytes at the result (or at args[4]
			       with MREMAP_FIXED) */
	VMT_RANGE_BREAK,    /* brk: between the program break and args[0] */
	VMT_RANGE_SEGMENT,  /* shmat, shmdt: an attached segment, whose size
			       the call does not give */
	VMT_RANGE_ALL,	    /* mlockall, munlockall: the whole address space */
};

/* What an op may do (vmt_op_info.effects). */
#define VMT_OPE_LAYOUT 0x1u  /* create, move or remove mappings */
#define VMT_OPE_DISCARD 0x2u /* drop page contents (vmt_sc_discards says
				whether a given call does) */
#define VMT_OPE_QUERY 0x4u   /* change no mapping (msync, mincore) */
#define VMT_OPE_ROUNDS 0x8u  /* round an unaligned start down to a page
				rather than fail (mlock, munlock, ...) */

#define VMT_NO_ARG 0xffu /* vmt_op_info.addr_arg/len_arg: none */

struct vmt_op_info {
	const char *name;    /* normalized op name, e.g. "mmap" */
	const char *sysname; /* kernel syscall name (libseccomp), e.g. "mmap" */
	uint32_t nargs;
	uint8_t arg[VMT_MAX_ARGS]; /* enum vmt_arg_type */
	uint8_t ret;		   /* enum vmt_ret_type */
	uint8_t range;		   /* enum vmt_op_range */
	uint8_t addr_arg, len_arg; /* argument indexes, or VMT_NO_ARG */
	uint8_t effects;	   /* VMT_OPE_* */
};

/* Table entry of an op, or NULL for an unknown op. */
const struct vmt_op_info *vmt_op_info(uint32_t op);

/* An address range [start, end). */
struct vmt_range {
	uint64_t start, end;
};

/* Whether madvise `advice` drops the contents of the pages it covers
 * (MADV_DONTNEED, MADV_FREE, MADV_REMOVE, MADV_DONTNEED_LOCKED). */
int vmt_madv_discards(uint64_t advice);

/* Whether call sc, as made, may drop the contents of pages of its range:
 * munmap, mmap with MAP_FIXED, madvise with discarding advice, mremap
 * (shrunk or moved), brk (lowered), shmdt.  From the arguments alone: a
 * result only says whether it did. */
int vmt_sc_discards(const struct vmt_syscall *sc);

/* The ranges call sc reads or changes, each end rounded up to a page of
 * page_size bytes (a power of two) and clamped at the top of the address
 * space: up to two ranges into r, returning their number; 0 when the call
 * names no range (brk, process_madvise, or a failed mmap without an
 * address); -1 when it may act on the whole address space (mlockall,
 * munlockall, shmat with SHM_REMAP).  Ranges that depend on the result
 * (mmap without MAP_FIXED, mremap, shmat) are taken only from a
 * successful call. */
int vmt_sc_ranges(const struct vmt_syscall *sc, uint64_t page_size,
		  struct vmt_range r[2]);
/* Op name, or NULL.  vmt_op_from_name returns the op or 0 if unknown. */
const char *vmt_op_name(uint32_t op);
uint32_t vmt_op_from_name(const char *name);
/* Kind name ("syscall", "map_file", ...) or NULL for an unknown kind. */
const char *vmt_kind_name(uint32_t kind);
uint32_t vmt_kind_from_name(const char *name);

/* Flag name tables: value/name pairs, terminated by {0, NULL}. */
struct vmt_flag_name {
	uint64_t value;
	const char *name;
};
extern const struct vmt_flag_name vmt_prot_names[];
extern const struct vmt_flag_name vmt_map_flag_names[];
extern const struct vmt_flag_name vmt_map_type_names[]; /* MAP_TYPE field */
extern const struct vmt_flag_name vmt_madv_names[];	/* values, not bits */
extern const struct vmt_flag_name vmt_mlock2_names[];
extern const struct vmt_flag_name vmt_mcl_names[];
extern const struct vmt_flag_name vmt_mremap_names[];
extern const struct vmt_flag_name vmt_ms_names[];
extern const struct vmt_flag_name vmt_shm_names[];

/* errno name ("ENOMEM"), or NULL if unknown. */
const char *vmt_errno_name(int err);
/* errno description ("Cannot allocate memory") for err or -err, in the
 * recording ABI's numbering, or NULL if unknown.  Independent of the
 * build machine's libc, unlike strerror(). */
const char *vmt_errno_text(int err);

/* ---- Rendering ---------------------------------------------------------- */

/* A growable string, which the renderers below append to.  Functions
 * that append to it never fail visibly; on allocation failure `oom` is
 * set and the text is truncated (vmt_buf_write then refuses it). */
struct vmt_buf {
	char *data; /* NUL-terminated when len > 0 */
	size_t len, cap;
	int oom;
	/* Recent numbers' digits and flag texts, copied rather than made
	 * again (vmt_buf_memoize), or NULL.  The same text either way. */
	struct vmt_buf_memo *memo;
};
/* Give b a memo (for a buffer that takes millions of events' text, on
 * one thread at a time): 0, or -ENOMEM and b goes on without one.
 * vmt_buf_free frees it. */
int vmt_buf_memoize(struct vmt_buf *b);
void vmt_buf_printf(struct vmt_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vmt_buf_puts(struct vmt_buf *b, const char *s);
void vmt_buf_reset(struct vmt_buf *b); /* len = 0, keeps memory */
/* Write b to f: 0, -ENOMEM when an append failed (nothing is written: a
 * text with holes is no output), or -EIO when f took less. */
int vmt_buf_write(const struct vmt_buf *b, FILE *f);
void vmt_buf_free(struct vmt_buf *b);

/* Append `flags` rendered with table t ("PROT_READ|PROT_WRITE", unknown
 * bits as hex, 0 as `zero` when given, else "0"). */
void vmt_render_flags(struct vmt_buf *b, const struct vmt_flag_name *t,
		      uint64_t flags, const char *zero);

/* Append the strace-style text of an event, without time/thread prefix and
 * without newline, e.g.
 *   mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f3a2c000000
 *   munmap(0x7f3a2c000000, 4096) = -1 EINVAL (Invalid argument)
 * Non-syscall events render as "+++ thread_start parent=0 tid=1234 +++"
 * style lines. */
void vmt_render_text(struct vmt_buf *b, const struct vmt_event *ev);

/* Append the event as one JSON object (no newline).  Keys: "kind", "ts_ns",
 * "thread", "proc", then kind-specific keys (see man/vmtrace.1). */
void vmt_render_json(struct vmt_buf *b, const struct vmt_event *ev);

/* Append one mapping as a /proc/PID/maps line, without newline:
 * "7f3a2c000000-7f3a2c002000 rw-p 00000000 8:1 131 /usr/bin/app". */
void vmt_render_map_entry(struct vmt_buf *b, const struct vmt_map_entry *e);

/* Append an op's arguments only ("NULL, 4096, PROT_READ, ...") */
void vmt_render_args(struct vmt_buf *b, const struct vmt_syscall *sc);

/* ---- Symbol tables (for dump --stacks and analyses) --------------------- */
typedef struct vmt_symtab vmt_symtab;

/* An empty table.  NULL on allocation failure. */
vmt_symtab *vmt_symtab_new(void);
/* Take in a STACK, SYMBOL or STRING event (others are ignored).  Copies
 * what it keeps.  Returns 0 or -ENOMEM / VMT_E_CORRUPT (bad id). */
int vmt_symtab_add(vmt_symtab *t, const struct vmt_event *ev);
/* The ips of stack `id` (NULL if unknown); *depth set. */
const uint64_t *vmt_symtab_stack(const vmt_symtab *t, uint32_t id,
				 uint32_t *depth);
/* Append "func+0x12 (module)" or "0x401234" for ip. */
void vmt_symtab_render_ip(const vmt_symtab *t, struct vmt_buf *b, uint64_t ip);
/* The function name of ip, or NULL. */
const char *vmt_symtab_function(const vmt_symtab *t, uint64_t ip);
/* The module (file path) of ip, or NULL.  *offset (if not NULL) is set to
 * the SYMBOL's offset: from the function's start when the function is
 * known, else from the module's base. */
const char *vmt_symtab_module(const vmt_symtab *t, uint64_t ip, uint64_t *offset);
void vmt_symtab_free(vmt_symtab *t);

#ifdef __cplusplus
}
#endif
#endif /* VMTRACE_H */
