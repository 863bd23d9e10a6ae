/*
 * vmtutil.h - the helpers libvmtrace shares with the project's other
 * libraries (vmrec's, vmreplay's, the analyses' and vmtrace's): error
 * messages, arrays, file reads, symbol names, a hash table, a range set.
 * Not part of libvmtrace's interface, which is vmtrace.h and does not
 * include this header; these may change with their users.  Library
 * conventions as in vmtrace.h: no printing, 0 or a negative errno.
 */
#ifndef VMTUTIL_H
#define VMTUTIL_H

#include <stddef.h>
#include <stdint.h>

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

/* ---- the hash table (htab.c) ---------------------------------------------
 * From a pair of 64-bit keys to a 64-bit value: pages or ranges per process
 * (lint), call sites (the analyses), tasks by tid and ips (vmrec).  The one
 * other hash map, the trace codec's per-thread state (format/codec.h), stays
 * apart: it is looked up once per event and reset once per chunk, so it
 * keeps direct slots for small thread indices and resets by generation. */
struct vmt_htab_ent {
	uint64_t a, b; /* the key */
	uint64_t v;
	uint64_t used; /* 0: empty slot */
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
 * (replay/load/addrmap.h), stays apart: it merges the neighbours that
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
