/*
 * codec_int.h - internal to libvmtrace: the byte-level encoding shared by the
 * writer and the reader.  The layout is specified in man/vmtrace.5; the
 * constants here are the normative values.
 */
#ifndef VMT_CODEC_H
#define VMT_CODEC_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "vmtrace.h"
#include "vmtutil.h"

/* zstd skippable-frame magics (0x184D2A50..0x184D2A5F are skippable). */
#define VMT_MAGIC_HEADER 0x184D2A5Au
#define VMT_MAGIC_CHUNK 0x184D2A5Bu
#define VMT_MAGIC_FOOTER 0x184D2A5Cu
#define VMT_ZSTD_MAGIC 0xFD2FB528u

#define VMT_HEADER_ID "VMTR"
#define VMT_CHUNK_ID "VMTC"
#define VMT_FOOTER_ID "VMTF"
#define VMT_CHUNK_DESC_SIZE 32u		/* content bytes of a chunk descriptor */
#define VMT_MAX_HEADER_SIZE (1u << 20)	/* content bytes of header frame */
#define VMT_MAX_FOOTER_SIZE (64u << 20) /* content bytes of footer frame */
#define VMT_MAX_ARGV 65536u
/* Largest accepted ratio of a chunk's raw size to its compressed size: a
 * chunk may claim at most 4096x (plus 64 KiB) its compressed bytes, so a
 * tiny hostile file cannot make the reader allocate 16 MiB. */
#define VMT_MAX_RATIO 4096u

/* Header field keys. */
enum {
	VMT_HK_ARCH = 1,
	VMT_HK_PAGE_SIZE = 2,
	VMT_HK_KERNEL = 3,
	VMT_HK_HOSTNAME = 4,
	VMT_HK_ARG = 5, /* repeated, in order */
	VMT_HK_OPTIONS = 6,
	VMT_HK_RECORDER = 7,
	VMT_HK_START_REALTIME = 8,
	VMT_HK_START_MONO = 9,
	VMT_HK_BACKEND = 10, /* 1.1 */
	VMT_HK_TOUCH = 11,   /* 1.1 */
};

/* Footer field keys. */
enum {
	VMT_FK_EVENTS = 1,
	VMT_FK_BY_KIND = 2,
	VMT_FK_OP_COUNT = 3,
	VMT_FK_OP_ERRORS = 4,
	VMT_FK_THREADS = 5,
	VMT_FK_PROCS = 6,
	VMT_FK_FIRST_TS = 7,
	VMT_FK_LAST_TS = 8,
	VMT_FK_RAW_BYTES = 9,
	VMT_FK_CHUNKS = 10,
};

/* SYSCALL address mask bit for the result. */
#define VMT_MASK_RESULT 0x40u

/* ---- little-endian fixed-width helpers ---------------------------------- */
static inline void vmt_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t vmt_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}
static inline void vmt_put_le64(uint8_t *p, uint64_t v)
{
	vmt_put_le32(p, (uint32_t)v);
	vmt_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t vmt_get_le64(const uint8_t *p)
{
	return (uint64_t)vmt_get_le32(p) | (uint64_t)vmt_get_le32(p + 4) << 32;
}

static inline uint64_t vmt_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t vmt_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* ---- a growable byte buffer (writer side) ------------------------------- */
struct vmt_bytes {
	uint8_t *p;
	size_t len, cap;
};
/* Make room for n more bytes.  Returns 0 or -ENOMEM. */
int vmt_bytes_reserve(struct vmt_bytes *b, size_t n);
void vmt_bytes_free(struct vmt_bytes *b);

/* Append a varint; the caller has reserved 10 bytes. */
static inline void vmt_put_varint(struct vmt_bytes *b, uint64_t v)
{
	uint8_t *p = b->p + b->len;
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	b->len = (size_t)(p - b->p);
}

/* ---- a bounded cursor (reader side) ------------------------------------- */
struct vmt_cursor {
	const uint8_t *p, *end;
	int bad; /* set when reading past end or an overlong varint */
};

static inline uint64_t vmt_get_varint_slow(struct vmt_cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (c->p < c->end) {
		uint8_t byte = *c->p++;
		if (shift == 63 && byte > 1) {
			c->bad = 1;
			return 0;
		}
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
		shift += 7;
		if (shift > 63) {
			c->bad = 1;
			return 0;
		}
	}
	c->bad = 1;
	return 0;
}

static inline uint64_t vmt_get_varint(struct vmt_cursor *c)
{
	/* Each length checks its own bytes: a record's last fields are
	 * near its end, and must not all take the slow loop. */
	const uint8_t *p = c->p;
	ptrdiff_t room = c->end - p;
	if (__builtin_expect(room >= 1, 1) && p[0] < 0x80) {
		c->p = p + 1;
		return p[0];
	}
	if (room >= 2 && p[1] < 0x80) {
		c->p = p + 2;
		return (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
	}
	if (room >= 3 && p[2] < 0x80) {
		c->p = p + 3;
		return (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7 |
		       (uint64_t)p[2] << 14;
	}
	return vmt_get_varint_slow(c);
}

/* ---- per-thread delta state, reset at every chunk -----------------------
 * A hash map of its own, not vmtutil.h's vmt_htab: it is looked up for
 * every event and reset at every chunk, so small thread indices get direct
 * slots and a reset bumps a generation instead of clearing the table. */
struct vmt_tstate {
	uint32_t thread; /* key; UINT32_MAX = empty slot */
	uint64_t ts, addr, ip;
};
#define VMT_TMAP_DIRECT 256 /* threads below this index: direct slots */
struct vmt_tmap {
	/* Direct slots for the common small indices; a slot is live when its
	 * generation equals the map's (a reset bumps the map's generation
	 * instead of clearing the array). */
	struct vmt_tstate direct[VMT_TMAP_DIRECT];
	uint32_t gen_of[VMT_TMAP_DIRECT];
	uint32_t gen;
	struct vmt_tstate *slots; /* hash table for larger indices */
	uint32_t cap, used; /* cap is a power of two */
	struct vmt_tstate *last; /* most recently looked up */
};
/* State of thread t (created zeroed).  NULL on allocation failure. */
struct vmt_tstate *vmt_tmap_get_slow(struct vmt_tmap *m, uint32_t t);
static inline struct vmt_tstate *vmt_tmap_get(struct vmt_tmap *m, uint32_t t)
{
	if (t < VMT_TMAP_DIRECT) {
		struct vmt_tstate *st = &m->direct[t];
		if (__builtin_expect(m->gen_of[t] != m->gen + 1, 0)) {
			m->gen_of[t] = m->gen + 1;
			st->thread = t;
			st->ts = st->addr = st->ip = 0;
		}
		return st;
	}
	if (m->last && m->last->thread == t)
		return m->last;
	return vmt_tmap_get_slow(m, t);
}
void vmt_tmap_reset(struct vmt_tmap *m);
void vmt_tmap_free(struct vmt_tmap *m);

/* ---- events -------------------------------------------------------------- */

/* A chunk's content is a varint (length of the record section), the
 * record section, then the time section: the time fields of the records
 * (each record's time delta, a SYSCALL's duration), in record order.
 * Keeping the nearly random time bits apart from the repetitive records
 * lets zstd match whole records of a loop and entropy-code the times. */

/* Append the record (kind, length, payload) of ev to out and its time
 * fields to times.  ev must have passed vmt_event_check().  Returns 0 or
 * -ENOMEM / VMT_E_LIMIT. */
int vmt_encode_event(struct vmt_bytes *out, struct vmt_bytes *times,
		     struct vmt_tmap *tm, const struct vmt_event *ev);

/* Scratch memory the decoder uses for strings and arrays of one event. */
struct vmt_scratch_block;
struct vmt_scratch {
	struct vmt_scratch_block *head; /* blocks of the current event */
	struct vmt_scratch_block *spare; /* one kept for reuse */
};
/* Start a new event: forget what the previous one allocated. */
void vmt_scratch_reset(struct vmt_scratch *s);
void vmt_scratch_free(struct vmt_scratch *s);

/* Decode one record from c (its time fields from times) into ev.  minor = the file's minor version
 * (unknown kinds/fields are accepted only from a newer minor); page_size
 * from the header.  Returns 1 = event, 2 = skipped an unknown kind, or
 * VMT_E_CORRUPT/-ENOMEM with *why naming the problem. */
int vmt_decode_event(struct vmt_cursor *c, struct vmt_cursor *times,
		     struct vmt_tmap *tm,
		     struct vmt_scratch *s, uint16_t minor, uint32_t page_size,
		     struct vmt_event *ev, const char **why);

/* The fast path for SYSCALL and FAULT records, which are nearly all of a
 * trace: everything in locals, one pass, validated as it goes.  Anything
 * unusual (a long varint, a bad field, another kind) returns 0 without
 * side effects, and the general decoder then does the work and names the
 * problem.  vmt_decode_fast reads a record's head (kind, length, thread,
 * process), each kind's part the rest.  c and times must be the reader's,
 * whose chunk buffer has VMT_DECODE_SLACK bytes after its data. */
/* The reader keeps this many readable (zeroed) bytes after a chunk's data:
 * more than the fast path's fields of one record, 3 bytes each on the
 * inline paths below, can read past the record's end. */
#define VMT_DECODE_SLACK 64

/* A varint of the record at P_ (ending at E_), up to 3 bytes inline, with
 * no bound check: a field that runs past the record moves P_ past E_,
 * which the caller checks once after the record's last field. */
#define FV(P_, E_, out)                                                  \
	do {                                                             \
		if (__builtin_expect((P_)[0] < 0x80, 1)) {               \
			(out) = *(P_)++;                                 \
		} else if ((P_)[1] < 0x80) {                             \
			(out) = (uint64_t)((P_)[0] & 0x7f) | (uint64_t)(P_)[1] << 7; \
			(P_) += 2;                                       \
		} else if ((P_)[2] < 0x80) {                             \
			(out) = (uint64_t)((P_)[0] & 0x7f) |             \
				(uint64_t)((P_)[1] & 0x7f) << 7 |        \
				(uint64_t)(P_)[2] << 14;                 \
			(P_) += 3;                                       \
		} else {                                                 \
			struct vmt_cursor t_ = { (P_), (E_), 0 };        \
			(out) = vmt_get_varint_slow(&t_);                \
			if (t_.bad)                                      \
				return 0;                                \
			(P_) = t_.p;                                     \
		}                                                        \
	} while (0)

static inline int vmt_fast_syscall(struct vmt_cursor *c, const uint8_t *p,
				   const uint8_t *rec_end, struct vmt_cursor *times,
				   struct vmt_tstate *st, uint16_t minor, struct vmt_event *ev)
{
	const uint8_t *tp = times->p, *tend = times->end;
	uint64_t tsz, op, z, dur, stack, flags;
	FV(p, rec_end, op);
	if (op == 0 || op >= VMT_OP__COUNT || rec_end - p < 2)
		return 0;
	uint32_t nargs = p[0], mask = p[1];
	p += 2;
	if (nargs > VMT_MAX_ARGS || (mask & ~((1u << nargs) - 1) & ~VMT_MASK_RESULT))
		return 0;
	uint64_t addr = st->addr;
	struct vmt_syscall *sc = &ev->u.sc;
	memset(sc->args, 0, sizeof(sc->args));
	for (uint32_t i = 0; i < nargs; i++) {
		FV(p, rec_end, z);
		/* branch-free: an address argument is a delta from addr */
		uint64_t is_addr = -(uint64_t)((mask >> i) & 1);
		uint64_t v = (uint64_t)vmt_unzigzag(z) + (addr & is_addr);
		sc->args[i] = v;
		addr = (v & is_addr) | (addr & ~is_addr);
	}
	FV(p, rec_end, z);
	if (mask & VMT_MASK_RESULT) {
		addr += (uint64_t)vmt_unzigzag(z);
		sc->result = (int64_t)addr;
	} else {
		sc->result = vmt_unzigzag(z);
	}
	FV(p, rec_end, stack);
	FV(p, rec_end, flags);
	/* 1.2: the call's waits, when the recorder measured them */
	uint64_t off_cpu = 0, vcsw = 0, ivcsw = 0;
	uint32_t waits = 0;
	if (p != rec_end && minor >= 2) {
		FV(p, rec_end, off_cpu);
		FV(p, rec_end, vcsw);
		FV(p, rec_end, ivcsw);
		if (vcsw > UINT32_MAX || ivcsw > UINT32_MAX || (flags & VMT_SC_NO_RESULT))
			return 0;
		waits = 1;
	}
	if (p > rec_end || (p != rec_end && minor <= VMT_FORMAT_MINOR))
		return 0;
	if (stack > UINT32_MAX || (flags & ~(uint64_t)(VMT_SC_NO_RESULT | VMT_SC_REWRITTEN)))
		return 0;
	FV(tp, tend, tsz);
	FV(tp, tend, dur);
	if (tp > tend)
		return 0;
	uint64_t ts = st->ts + (uint64_t)vmt_unzigzag(tsz);
	if (ts + dur < ts || off_cpu > dur)
		return 0;
	if (sc->result < -4095 && vmt_op_info((uint32_t)op)->ret != VMT_RET_ADDR)
		return 0;
	/* commit */
	ev->kind = VMT_EV_SYSCALL;
	ev->ts_ns = ts;
	sc->op = (uint32_t)op;
	sc->nargs = nargs;
	sc->exit_ns = ts + dur;
	sc->stack_id = stack ? (uint32_t)(stack - 1) : VMT_NONE;
	sc->flags = (uint32_t)flags;
	sc->waits = waits;
	sc->vcsw = (uint32_t)vcsw;
	sc->ivcsw = (uint32_t)ivcsw;
	sc->off_cpu_ns = off_cpu;
	st->ts = ts;
	st->addr = addr;
	c->p = rec_end;
	times->p = tp;
	return 1;
}

static inline int vmt_fast_fault(struct vmt_cursor *c, const uint8_t *p,
				 const uint8_t *rec_end, struct vmt_cursor *times,
				 struct vmt_tstate *st, uint16_t minor, struct vmt_event *ev)
{
	const uint8_t *tp = times->p, *tend = times->end;
	uint64_t za, zi, access, flags = 0, tsz;
	FV(p, rec_end, za);
	FV(p, rec_end, zi);
	FV(p, rec_end, access);
	/* 1.3: the flags after the access (none before) */
	if (p != rec_end && minor >= 3)
		FV(p, rec_end, flags);
	if (p > rec_end || access > 7 || (flags & ~(uint64_t)VMT_FLT__ALL) ||
	    (p != rec_end && minor <= VMT_FORMAT_MINOR))
		return 0;
	FV(tp, tend, tsz);
	if (tp > tend)
		return 0;
	/* commit */
	ev->kind = VMT_EV_FAULT;
	ev->ts_ns = st->ts + (uint64_t)vmt_unzigzag(tsz);
	st->ts = ev->ts_ns;
	ev->u.fault.addr = st->addr + (uint64_t)vmt_unzigzag(za);
	st->addr = ev->u.fault.addr;
	ev->u.fault.ip = st->ip + (uint64_t)vmt_unzigzag(zi);
	st->ip = ev->u.fault.ip;
	ev->u.fault.access = (uint32_t)access;
	ev->u.fault.flags = (uint32_t)flags;
	c->p = rec_end;
	times->p = tp;
	return 1;
}

static inline int vmt_decode_fast(struct vmt_cursor *c, struct vmt_cursor *times,
				  struct vmt_tmap *tm, uint16_t minor, struct vmt_event *ev)
{
	const uint8_t *p = c->p, *end = c->end;
	if (__builtin_expect(end - p < 3, 0))
		return 0;
	/* every kind is one byte */
	unsigned kind = *p++;
	if (kind != VMT_EV_SYSCALL && kind != VMT_EV_FAULT)
		return 0;
	uint64_t plen, thread, proc;
	FV(p, end, plen);
	if (plen > (uint64_t)(end - p))
		return 0;
	const uint8_t *rec_end = p + plen;
	FV(p, rec_end, thread);
	FV(p, rec_end, proc);
	if (thread >= VMT_MAX_THREADS || proc >= VMT_MAX_THREADS)
		return 0;
	struct vmt_tstate *st = vmt_tmap_get(tm, (uint32_t)thread);
	if (!st)
		return 0;
	ev->thread = (uint32_t)thread;
	ev->proc = (uint32_t)proc;
	if (kind == VMT_EV_SYSCALL)
		return vmt_fast_syscall(c, p, rec_end, times, st, minor, ev);
	return vmt_fast_fault(c, p, rec_end, times, st, minor, ev);
}
#undef FV

/* The COUNTERS fields after scope and flags, in payload order (1.2). */
#define VMT_CNT_FIELDS(X) X(minflt) X(majflt) X(nvcsw) X(nivcsw) X(utime_ns) X(stime_ns) X(stops)

/* counters.c: what format 1.2 added, beside its encoding (codec.c): the
 * rules of a COUNTERS record and of a SYSCALL's waits (0, or VMT_E_CORRUPT
 * with *why), and their renderings. */
int vmt_counters_check(const struct vmt_counters *c, const char **why);
const char *vmt_counters_scope_name(uint32_t scope);
void vmt_counters_text(struct vmt_buf *b, const struct vmt_counters *c);
void vmt_counters_json(struct vmt_buf *b, const struct vmt_counters *c);
int vmt_sc_waits_check(const struct vmt_syscall *sc, uint64_t ts_ns, const char **why);
void vmt_sc_waits_text(struct vmt_buf *b, const struct vmt_syscall *sc);
void vmt_sc_waits_json(struct vmt_buf *b, const struct vmt_syscall *sc);

/* For codec.c and check.c: refuse a record or event, naming the problem in
 * *why (when the caller asked for it). */
#define BAD(what)                          \
	do {                               \
		if (why)                   \
			*why = (what);     \
		return VMT_E_CORRUPT;      \
	} while (0)

/* vmt_event_check with the page size of the trace. */
int vmt_event_check_ps(const struct vmt_event *ev, uint32_t page_size,
		       const char **why);

#endif
