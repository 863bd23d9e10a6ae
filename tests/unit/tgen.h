/*
 * tgen.h - the unit tests' toolkit: one way to make events and traces,
 * used by the tests/unit/test_*.c and by tests/data/mkrandom.c.  It needs
 * libvmtrace only (no cmocka, no replayer); on an error it prints why and
 * aborts, which fails the test that hit it.
 *
 *   shorthands  PAGE, MiB, the prot and flag combinations of recorded calls
 *               (RW, PRIV_ANON, ... from the LX_* values of linux_abi.h),
 *               FD_NONE, the rewrite tests' ranges R1 and R2
 *   events      tg_ev_<kind>() and TG_SC() return one event; their arguments
 *               are always (proc, thread) first, then the fields in the
 *               order of the kind's struct in vmtrace.h.  The event happens
 *               at TG_EV_NS; a SYSCALL returns 500 ns later, from no stack
 *               (tg_with_stack() gives it one)
 *   traces      struct tg_trace, a trace being written into a memfd, a
 *               temporary file or any fd: tg_put() appends an event 1000 ns
 *               after the last one; TG_PUT_SC(), tg_proc(), tg_touch(), ...
 *               append one event with the details (os ids, ip, dev) a test
 *               need not choose
 *   random      tg_event(): seeded random valid events of every kind;
 *               tg_event_equal()
 *   files       memfds, whole-file reads, event counts
 *
 * rprun.h adds what the replay tests need: replay runs, the synthetic
 * process a replayed trace starts with and the addresses of its mappings.
 */
#ifndef VMT_TGEN_H
#define VMT_TGEN_H

#include <stddef.h>
#include <stdint.h>
#include "linux_abi.h"
#include "vmtrace.h"

/* ---- shorthands --------------------------------------------------------- */

#define PAGE 4096ull /* the traces' page size (and the test machines') */
#define MiB (1ull << 20)
#define RW ((uint64_t)(LX_PROT_READ | LX_PROT_WRITE))
#define PRIV_ANON ((uint64_t)(LX_MAP_PRIVATE | LX_MAP_ANONYMOUS))
#define PRIV_ANON_FIXED (PRIV_ANON | LX_MAP_FIXED)
#define SHARED_ANON ((uint64_t)(LX_MAP_SHARED | LX_MAP_ANONYMOUS))
#define FD_NONE ((uint64_t)-1) /* mmap's fd argument of an anonymous mapping */
/* The ranges of the rewrite tests (test_rewrite.c, test_rewrite_stream.c). */
#define R1 0x100000ull
#define R2 0x200000ull

/* tg_header()'s start_mono_ns: time 0 of the traces it heads. */
#define TG_START_NS 1000000000ull

/* ---- events ------------------------------------------------------------- */

#define TG_EV_NS 1000ull /* the time of an event made by tg_ev_*() */

/* A SYSCALL of op by thread `thread` of process `proc` with result and the
 * nargs arguments args[] (the op's own number: it aborts otherwise, for an
 * op vmt_op_info() knows). */
struct vmt_event tg_ev_sc(uint32_t proc, uint32_t thread, uint32_t op, int64_t result,
			  uint32_t nargs, const uint64_t *args);
/* TG_SC(proc, thread, op, result, arg...): tg_ev_sc() of the arguments
 * listed. */
#define TG_NARGS(...) ((uint32_t)(sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t)))
#define TG_SC(proc, thread, op, result, ...) \
	tg_ev_sc(proc, thread, op, result, TG_NARGS(__VA_ARGS__), (const uint64_t[]){ __VA_ARGS__ })

/* ev, a SYSCALL, called from the STACK event `stack`. */
struct vmt_event tg_with_stack(struct vmt_event ev, uint32_t stack);

struct vmt_event tg_ev_file(uint32_t proc, uint32_t thread, const char *path, uint64_t dev,
			    uint64_t ino, uint64_t size, uint32_t open_flags, uint32_t mode);
struct vmt_event tg_ev_thread_start(uint32_t proc, uint32_t thread, uint32_t parent_thread,
				    int32_t os_tid);
struct vmt_event tg_ev_thread_exit(uint32_t proc, uint32_t thread, int32_t status);
struct vmt_event tg_ev_process_start(uint32_t proc, uint32_t thread, uint32_t parent_proc,
				     int32_t os_pid, uint32_t how);
struct vmt_event tg_ev_exec(uint32_t proc, uint32_t thread, const char *path);
struct vmt_event tg_ev_process_exit(uint32_t proc, uint32_t thread, int32_t status);
struct vmt_event tg_ev_maps(uint32_t proc, uint32_t thread, uint32_t count,
			    const struct vmt_map_entry *entries);
struct vmt_event tg_ev_touch(uint32_t proc, uint32_t thread, uint64_t start, uint64_t npages,
			     uint32_t reason, uint32_t nruns, const struct vmt_touch_run *runs);
struct vmt_event tg_ev_fault(uint32_t proc, uint32_t thread, uint64_t addr, uint64_t ip,
			     uint32_t access);
struct vmt_event tg_ev_lost(uint32_t proc, uint32_t thread, uint64_t count, uint32_t what);
/* The kinds that belong to the trace, not to a thread (proc and thread 0). */
struct vmt_event tg_ev_stack(uint32_t id, uint32_t depth, const uint64_t *ips);
struct vmt_event tg_ev_symbol(uint64_t ip, uint32_t module, uint32_t function, uint64_t offset);
struct vmt_event tg_ev_string(uint32_t id, const char *str);

/* ---- traces ------------------------------------------------------------- */

struct tg_trace {
	vmt_writer *w;
	int fd;
	char path[32];	     /* tg_trace_file()'s file, else "" */
	uint64_t now;	     /* the time of the last event (at first: of the start) */
	uint64_t count;	     /* events appended: the index of the next */
	struct vmt_header h; /* the trace's header */
};

/* A trace with header h in fd; times from h->start_mono_ns. */
void tg_trace_open(struct tg_trace *t, int fd, const struct vmt_header *h);
/* A trace with tg_header()'s header (with `options` unless NULL) in a new
 * memfd called name. */
void tg_trace_memfd(struct tg_trace *t, const char *name, const char *options);
/* A trace with this host's header (vmt_header_from_host: a replayable one)
 * in a new temporary file, t->path; times from 1000 ns. */
void tg_trace_file(struct tg_trace *t);

/* Append ev 1000 ns after the last event (t->now), a SYSCALL returning
 * 500 ns after its entry; returns its index in the trace. */
uint64_t tg_put(struct tg_trace *t, struct vmt_event ev);
/* The same at time ts (t->now unchanged). */
uint64_t tg_put_at(struct tg_trace *t, struct vmt_event ev, uint64_t ts);
/* TG_PUT_SC(t, proc, thread, op, result, arg...): tg_put() of TG_SC(). */
#define TG_PUT_SC(t, proc, thread, op, result, ...) \
	tg_put(t, TG_SC(proc, thread, op, result, __VA_ARGS__))

/* One event of a kind, appended with tg_put().  The defaults: os_pid 1000
 * + proc, os_tid 2000 + thread, exit status 0. */
/* PROCESS_START of proc (parent_proc VMT_NONE: a root, else a fork) and
 * THREAD_START of its first thread (created by parent_thread, or
 * VMT_NONE). */
void tg_proc(struct tg_trace *t, uint32_t proc, uint32_t thread, uint32_t parent_proc,
	     uint32_t parent_thread);
/* The same, started as `how` (VMT_PROC_*). */
void tg_proc_how(struct tg_trace *t, uint32_t proc, uint32_t thread, uint32_t parent_proc,
		 uint32_t parent_thread, uint32_t how);
void tg_thread(struct tg_trace *t, uint32_t proc, uint32_t thread, uint32_t parent_thread);
void tg_thread_exit(struct tg_trace *t, uint32_t proc, uint32_t thread);
void tg_proc_exit(struct tg_trace *t, uint32_t proc, uint32_t thread);
void tg_exec(struct tg_trace *t, uint32_t proc, uint32_t thread, const char *path);
/* MAPS of n mappings {start, end, perms, path}: offset 0, the files (a path
 * starting with '/') on dev 0x801 with inodes from 4242. */
struct tg_map {
	uint64_t start, end;
	uint32_t perms; /* VMT_PROT_* | VMT_MAPS_SHARED */
	const char *path; /* NULL: anonymous */
};
void tg_maps(struct tg_trace *t, uint32_t proc, uint32_t thread, const struct tg_map *m,
	     uint32_t n);
/* MAP_FILE of a regular file (mode 0644) on dev 0x801. */
void tg_file(struct tg_trace *t, uint32_t proc, uint32_t thread, const char *path, uint64_t ino,
	     uint64_t size, uint32_t open_flags);
/* TOUCH of npages pages at start, all in `state`, before the next op. */
void tg_touch(struct tg_trace *t, uint32_t proc, uint32_t thread, uint64_t start,
	      uint64_t npages, uint32_t state);
/* FAULT at addr from ip 0x401000. */
void tg_fault(struct tg_trace *t, uint32_t proc, uint32_t thread, uint64_t addr,
	      uint32_t access);

/* Finish the trace and free its writer; a file trace's fd is closed (it is
 * read by t->path), any other is rewound to be read. */
void tg_finish(struct tg_trace *t);
/* Delete tg_trace_file()'s file. */
void tg_remove(struct tg_trace *t);

/* A writer of a trace with this host's header into a new memfd called name
 * (*fd), for code under test that writes the events itself. */
vmt_writer *tg_memfd_writer(const char *name, int *fd);

/* A fixed header for reproducible traces (start_mono_ns TG_START_NS). */
void tg_header(struct vmt_header *h);

/* ---- random events ------------------------------------------------------ */

/* xorshift64* generator: deterministic for a seed. */
uint64_t tg_rand(uint64_t *state);

/* Storage that keeps a generated event's strings and arrays alive. */
struct tg_store {
	char str[4][64];
	struct vmt_map_entry maps[8];
	struct vmt_touch_run runs[16];
	uint64_t ips[32];
};

/* Fill *ev with a random valid event of `kind` (0: random kind). */
void tg_event(uint64_t *rng, uint32_t kind, struct vmt_event *ev, struct tg_store *st);

/* 1 if a and b are equal in every field the format keeps. */
int tg_event_equal(const struct vmt_event *a, const struct vmt_event *b);

/* ---- files -------------------------------------------------------------- */

/* An anonymous memory file (memfd); aborts on failure. */
int tg_memfd(const char *name);

/* Read fd's whole contents from offset 0; *len set; malloc'd. */
uint8_t *tg_slurp(int fd, size_t *len);

/* A memfd holding buf[0..len). */
int tg_memfd_with(const uint8_t *buf, size_t len);

/* Read every event of the trace in fd (from offset 0): returns the reader's
 * final code (0 clean end, <0 error) and the number of events in *n. */
int tg_count_events(int fd, uint64_t *n, char *msg, size_t msglen);

#endif
