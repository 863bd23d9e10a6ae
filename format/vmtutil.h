/*
 * vmtutil.h - the helpers libvmtrace shares with the project's other
 * libraries (vmrec's, vmreplay's, the analyses' and vmtrace's): error
 * messages, arrays, file reads, symbol names, the clock, text appends
 * (numbers, JSON, quoting) to a vmt_buf, this machine's mm settings, a
 * hash table, a range set.  Not part of libvmtrace's interface, which is
 * vmtrace.h (the event model, the writer and reader, names, rendering)
 * and does not include this header; these may change with their users.
 * Library conventions as in vmtrace.h: no printing, 0 or a negative
 * errno.
 */
#ifndef VMTUTIL_H
#define VMTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "vmtrace.h"

/* Print fmt's message into err[0..errlen) (nothing when err is NULL or
 * errlen 0) and return rc: `return vmt_errf(err, errlen, -EINVAL, ...)`
 * is how a function with an error buffer fails. */
int vmt_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Make room for at least `need` elements of elem bytes in the array whose
 * pointer is at arrp (a T **) and whose capacity is *cap: the capacity
 * doubles, from 16, until it holds need, and the new elements are zeroed.
 * Returns 0, or -ENOMEM (no memory, or a size past SIZE_MAX) with the
 * array and *cap unchanged. */
int vmt_grow(void *arrp, size_t *cap, size_t need, size_t elem);
/* The end of a command's output: stdout flushed and checked.  rc, or
 * fail_rc after one line "PROG: cannot write output: why" (none for a
 * reader that went away, EPIPE). */
int vmt_stdout_finish(const char *prog, int rc, int fail_rc);

/* All len bytes of fd at offset off into buf, however many reads that
 * takes (EINTR retried).  Returns 0, -errno, or -ENODATA when the file
 * ends first. */
int vmt_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* A mangled C++ or Rust symbol name ("_ZN2os18pd_uncommit_memoryEPcmb")
 * demangled ("os::pd_uncommit_memory(char*, unsigned long, bool)"), in
 * memory the caller frees; NULL when name is not a mangled name (or out
 * of memory).  Symbol tables (vmt_symtab) keep names demangled. */
char *vmt_demangle(const char *name);

/* Bytes for people, into out[0..n): "512 bytes", "64.0 MiB" (KiB to PiB,
 * one decimal).  Returns out. */
const char *vmt_format_bytes(char *out, size_t n, uint64_t v);

/* CLOCK_MONOTONIC in ns: the clock of trace timestamps.  Inline: the
 * replay loop reads it. */
static inline uint64_t vmt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- text appends (buf.c) ------------------------------------------------
 * The vmt_buf (vmtrace.h) appends of the renderers and the commands. */

/* The appends of renderers that write millions of fields (vsnprintf and
 * strlen were most of an export's time): n bytes of s, one byte, a
 * string literal without strlen, and numbers as "%" PRIu64, "%" PRId64
 * and "%#" PRIx64 print them (0 as "0"), without printf. */
void vmt_buf_grow_add(struct vmt_buf *b, const char *s, size_t n);
static inline void vmt_buf_add(struct vmt_buf *b, const char *s, size_t n)
{
	/* The common case inline: room for s and the NUL. */
	if (b->data && !b->oom && b->cap - b->len > n) {
		memcpy(b->data + b->len, s, n);
		b->len += n;
		b->data[b->len] = '\0';
	} else {
		vmt_buf_grow_add(b, s, n);
	}
}
static inline void vmt_buf_putc(struct vmt_buf *b, char c)
{
	vmt_buf_add(b, &c, 1);
}
#define VMT_BUF_LIT(b, s) vmt_buf_add((b), "" s, sizeof(s) - 1)
/*
 * A buffer's memo (vmt_buf_memoize): an export writes the same addresses
 * again and again (an mmap's address and its result, the faults at it,
 * the ip of the faulting instruction) and a few flag texts millions of
 * times (PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS); a
 * copy costs a fifth of making the digits and a tenth of walking the
 * names again.  Direct-mapped by a multiplicative hash.  Kept with the
 * buffer, not per thread: thread-local arrays would enlarge every thread
 * of every program linked with the library, the replay's threads too,
 * whose faults are what a replay measures.
 */
struct vmt_memo_num {
	uint64_t v;
	char d[20];
	uint32_t n; /* 0: empty */
};
struct vmt_memo_arg {
	uint64_t v;
	uint32_t type; /* 0: empty */
	uint32_t n;
	char text[48];
};
struct vmt_buf_memo {
	struct vmt_memo_num num[64];
	/* the digits but the last eight of the last time made (hi: its
	 * value / 10^8) */
	struct {
		uint64_t hi;
		uint32_t n; /* 0: none (they are 1..12) */
		char d[12];
	} top;
	struct vmt_memo_arg arg[32];
};
void vmt_buf_u64_slow(struct vmt_buf *b, uint64_t v);
/* Small numbers (most fields but times and addresses) inline; the rest
 * from their digits, or from a memo of the recent ones (buf.c). */
static inline void vmt_buf_u64(struct vmt_buf *b, uint64_t v)
{
	if (v < 100 && b->data && !b->oom && b->cap - b->len > 2) {
		char *p = b->data + b->len;
		if (v < 10) {
			p[0] = (char)('0' + v);
			b->len += 1;
		} else {
			p[0] = (char)('0' + v / 10);
			p[1] = (char)('0' + v % 10);
			b->len += 2;
		}
		b->data[b->len] = '\0';
	} else {
		vmt_buf_u64_slow(b, v);
	}
}
void vmt_buf_i64(struct vmt_buf *b, int64_t v);
void vmt_buf_hex(struct vmt_buf *b, uint64_t v);
/* Append s as a JSON string literal (with quotes and escapes); NULL as
 * null. */
void vmt_buf_json_str(struct vmt_buf *b, const char *s);
/* Append a built-in name (an op, kind, errno or flag name of the
 * project's tables) as a JSON string, without looking for what to escape:
 * those names are plain printable ASCII, which test_render checks. */
static inline void vmt_buf_json_name(struct vmt_buf *b, const char *s)
{
	vmt_buf_putc(b, '"');
	vmt_buf_puts(b, s);
	vmt_buf_putc(b, '"');
}
/* The text of an event whose kind has no pointers (vmt_kind_has_pointers)
 * is made of its numbers and built-in names only, so it needs no escapes
 * either (test_render checks that too): such text is closed with a '"'.
 * Make b's text from offset `from` on, a '"' the caller appended and the
 * raw text it rendered after it, the JSON string vmt_buf_json_str would
 * have appended: text rendered in place needs no scratch buffer and, as
 * it almost never needs escapes, no second copy. */
void vmt_buf_json_close(struct vmt_buf *b, size_t from);
/* Append v as a JSON number: an integer when it is one, null when it is
 * not finite. */
void vmt_buf_json_num(struct vmt_buf *b, double v);
/* Append s as a C-style quoted string for text output: quotes, backslash,
 * control characters and invalid UTF-8 bytes escaped ("\n", "\x1b");
 * NULL renders as NULL. */
void vmt_buf_quote(struct vmt_buf *b, const char *s);
/* Append the words argv[0..argc) separated by spaces, each quoted as a
 * POSIX shell would need to read it back: bare when it holds only
 * letters, digits and _@%+=:,./-, else in single quotes (a ' as '\''),
 * and in bash's $'...' with escapes when it holds control characters. */
void vmt_buf_shell_words(struct vmt_buf *b, const char *const *argv, uint32_t argc);

/* ---- this machine's mm settings (host.c) ---------------------------------
 * What vmrec writes into a trace's OPTIONS (vmtrace.5) and vmreplay
 * compares a replay's machine with, or sets a guest to. */

/* Does this kernel map the shared zero page on the first read of private
 * anonymous memory?  1 if it does (the later write faults again, to copy
 * it), 0 if the read already allocates a private page (kernels booted
 * with the zero page disabled, e.g. PVM guests' pvm_no_zero_page=1),
 * -1 if it cannot tell.  Measured once, by this thread's own minor
 * faults on a few fresh pages; the answer is cached. */
int vmt_host_zero_page(void);

/* Append to the NUL-terminated string buf (of size len) this machine's
 * memory-management settings that change how many faults a program
 * takes or what its calls return, as space-separated "key=value" words
 * (vmtrace.5, OPTIONS): "overcommit=N" (vm.overcommit_memory),
 * "zeropage=0|1" (vmt_host_zero_page), "thp=MODE" and "thp_defrag=MODE"
 * (the selected word of /sys/kernel/mm/transparent_hugepage/enabled and
 * defrag), "thp_shmem=MODE", and "faultaround=BYTES" where debugfs shows
 * it.  A setting this machine does not expose is left out; the string
 * is cut at a word boundary if buf is too small. */
void vmt_host_mm_words(char *buf, size_t len);

/* The keys of vmt_host_mm_words, in its order: the i-th, or NULL past
 * the last. */
const char *vmt_mm_key(size_t i);

/* The file of procfs or sysfs whose content sets the setting `key` of
 * vmt_host_mm_words (a THP mode is written as its word, e.g. "madvise"),
 * or NULL: an unknown key, or one no file sets ("zeropage", a boot
 * parameter of some hypervisors' guests). */
const char *vmt_mm_path(const char *key);

/* ---- the hash table (htab.c) ---------------------------------------------
 * From a pair of 64-bit keys to a 64-bit value: pages or ranges per process
 * (lint), call sites (the analyses), symbols by ip (vmt_symtab), tasks by
 * tid and ips (vmrec).  The other hash maps stay apart for a reason each:
 * the trace codec's per-thread state (format/codec_int.h) is looked up once
 * per event and reset once per chunk, so it keeps direct slots for small
 * thread indices and resets by generation; and the tables keyed by
 * content of any length (vmrec's STRING ids and stack ids, the model's
 * interned names) compare the whole key where it is stored, which two
 * words cannot hold. */
struct vmt_htab_ent {
	uint64_t a, b; /* the key */
	uint64_t v;
	uint64_t used; /* 0: empty slot; else its key's hash (htab.c) */
};

/* A zeroed struct (or vmt_htab_init) is an empty table. */
struct vmt_htab {
	struct vmt_htab_ent *e;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

/* Initialise an empty table (no allocation until the first put). */
void vmt_htab_init(struct vmt_htab *t);
/* Free its memory; the table is then empty again. */
void vmt_htab_free(struct vmt_htab *t);

/* The value slot of (a, b), or NULL when absent. */
uint64_t *vmt_htab_get(const struct vmt_htab *t, uint64_t a, uint64_t b);

/* The value slot of (a, b), created with value 0 when absent (*created
 * says which, when not NULL).  NULL on allocation failure.  The slot is
 * valid until the next put. */
uint64_t *vmt_htab_put(struct vmt_htab *t, uint64_t a, uint64_t b, int *created);

/* Set (a, b) to v.  0 or -ENOMEM. */
int vmt_htab_set(struct vmt_htab *t, uint64_t a, uint64_t b, uint64_t v);

/* Remove (a, b); returns 1 if it was there. */
int vmt_htab_del(struct vmt_htab *t, uint64_t a, uint64_t b);

/* Remove every entry with a in [lo, hi) and b == key_b; returns how many.
 * Costs min(pages, capacity) probes: per key for small ranges, one sweep
 * of the table for large ones. `step` is the distance between possible
 * keys a (e.g. the page size). */
size_t vmt_htab_del_range(struct vmt_htab *t, uint64_t lo, uint64_t hi, uint64_t step,
			  uint64_t key_b);

/* Number of entries with a in [lo, hi) and b == key_b (same cost as
 * vmt_htab_del_range). */
size_t vmt_htab_count_range(const struct vmt_htab *t, uint64_t lo, uint64_t hi, uint64_t step,
			    uint64_t key_b);

/* A well-mixed 64-bit hash of x, for hashing keys of one's own. */
uint64_t vmt_mix64(uint64_t x);

/* ---- the range set (rset.c) ----------------------------------------------
 * Disjoint address ranges, each with a few values of its user's, kept
 * sorted: what the analyses follow through a trace (an uncommitted heap
 * range, a range a rewrite keeps read-write) and vmrec's code ranges of a
 * process.  The other range structure, vmreplay's address map
 * (replay/load/addrmap_int.h), stays apart: it merges the neighbours that
 * continue each other and carries offsets through splits, to translate
 * addresses, where the entries here keep their identity when cut. */
struct vmt_rset_ent {
	uint64_t start, end; /* [start, end), start < end */
	uint64_t seq;	     /* the user's: e.g. a held event's number */
	uint64_t index;	     /* the user's: e.g. an event's ordinal */
	uint32_t thread, prot, flags, stack;
};

/* A zeroed struct is an empty set. */
struct vmt_rset {
	struct vmt_rset_ent *e;
	size_t n, cap;
};

/* Free its memory; the set is then empty again. */
void vmt_rset_free(struct vmt_rset *s);

/* Index of the first entry that ends above a (s->n when there is none):
 * the entries overlapping [a, b) are those from there while start < b. */
size_t vmt_rset_first(const struct vmt_rset *s, uint64_t a);

/* 1 if an entry overlaps [a, b). */
int vmt_rset_overlaps(const struct vmt_rset *s, uint64_t a, uint64_t b);

/* Insert *x, which must overlap no entry.  0 or -ENOMEM. */
int vmt_rset_add(struct vmt_rset *s, const struct vmt_rset_ent *x);

/* Remove entry i. */
void vmt_rset_del(struct vmt_rset *s, size_t i);

/* Take [a, b) out of the set: entries inside go, entries across an end
 * are cut there (a cut entry keeps its values).  0 or -ENOMEM (an entry
 * split in two needs room). */
int vmt_rset_cut(struct vmt_rset *s, uint64_t a, uint64_t b);

#endif /* VMTUTIL_H */
