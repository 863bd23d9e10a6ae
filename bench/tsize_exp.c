/*
 * tsize_exp.c - an experiment, not a tool of the build (issue 26, trace
 * bytes per event): re-encode a real trace's events, chunk by chunk, with
 * candidate codings and print the compressed bytes per event of each, in
 * one zstd frame per chunk (as the format has it: "1frame", with a 40-byte
 * descriptor per chunk) and per field stream compressed alone, plus an
 * order-0 entropy estimate of the time, page, offset and ip fields.
 *
 *   cc -O2 -std=gnu11 -Iformat -o tsize_exp bench/tsize_exp.c \
 *      build/libvmtrace.a -lzstd -lpthread -lm
 *   ./tsize_exp TRACE            chunks as the file has them
 *   MERGE=256 ./tsize_exp TRACE  chunks re-cut at 256 KiB of 1.4 content
 *                                (what a writer without a time flush does)
 *   CUTMS=500 ./tsize_exp TRACE  re-cut at 256 KiB or 500 ms of trace time
 *                                (a writer's time flush, in trace time)
 *
 * It includes codec_int.h (the 1.4 encoder is its baseline) and so is not
 * built by make (mk/layers.py keeps internal headers in their folder).
 * Each chunk of each candidate is decoded back and compared with the
 * trace's events (the fields of SYSCALL and FAULT records, the kind,
 * thread, process and time of the others, whose payloads are 1.4's).
 * Thread indices are taken modulo 4096.  The "1.5-run" lines are a coding
 * that the minor-version rules allow (see FAULT_RUN below).
 *
 * Candidates (flags of struct cand):
 *   split_times  durations in their own section, apart from the ts deltas
 *   gap          a ts as a delta against the thread's previous end (a
 *                SYSCALL's exit), not its previous ts: the duration is
 *                then not counted twice
 *   fault_sep    FAULT addr and ip in their own sections
 *   fault_page   FAULT addr as a page delta, the in-page offset apart
 *                (0: as the previous fault's, else offset + 1)
 *   ip_mtf       FAULT ip: 0 an exec fault at its addr, 1..16 an index in
 *                a move-to-front cache of the thread's last ips, else the
 *                delta against the previous ip
 *   fault_addr_own  faults keep an addr apart from the SYSCALL args'
 *   tsplit       the low byte of each time field in its own section
 *   ipaddr       FAULT addr against the last addr of the same ip (cache)
 *   level        zstd level
 * "now-as-cand" is the 1.4 coding less each record's Payload_Length (and
 * with a FAULT's access and flags in one varint): the difference from the
 * "baseline codec" line is what the lengths cost.  The zstd column is the
 * compression speed of the one-frame content (indicative: shared machine).
 */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "codec_int.h"

enum { S_R, S_O, S_T, S_D, S_FA, S_FO, S_FI, S_TL, S__N };
static const char *sname[S__N] = { "rec", "other", "ts", "dur", "faddr", "foff", "fip", "tslo" };

#define MTF 16
struct ts2 {
	uint64_t ts, end, addr, ip, fpage, foff;
	uint64_t cache[MTF], cache_addr[MTF];
	int ncache;
};

struct cand {
	const char *name;
	int split_times; /* durations in their own stream */
	int gap;	 /* ts against the thread's previous end (exit) */
	int fault_sep;	 /* fault addr/ip in their own streams */
	int fault_page;	 /* addr as page delta + offset stream */
	int ip_mtf;	 /* ip: 0 = exec at addr, 1..MTF cache, else literal */
	int fault_addr_own; /* faults keep an addr state apart from syscalls */
	int tsplit;	 /* time fields: low byte apart */
	int level;
	int ipaddr;	 /* fault addr against the last addr of the same ip */
	/* per chunk */
	struct vmt_bytes s[S__N];
	struct ts2 st[4096];
	unsigned char seen[4096];
	/* totals */
	uint64_t one_frame, sep[S__N], raw[S__N], chunks;
	double ctime, craw;
};

static struct vmt_bytes scratch_t;
static struct vmt_tmap scratch_tm;

static void put(struct vmt_bytes *b, uint64_t v)
{
	vmt_bytes_reserve(b, 10);
	vmt_put_varint(b, v);
}
static void putz(struct vmt_bytes *b, int64_t v) { put(b, vmt_zigzag(v)); }

static void put_time(struct cand *c, int stream, uint64_t z)
{
	if (c->tsplit) {
		vmt_bytes_reserve(&c->s[S_TL], 1);
		c->s[S_TL].p[c->s[S_TL].len++] = (uint8_t)z;
		put(&c->s[stream], z >> 8);
	} else {
		put(&c->s[stream], z);
	}
}

static size_t zsize(const uint8_t *p, size_t n, int level)
{
	if (!n)
		return 0;
	static uint8_t *out;
	static size_t cap;
	size_t b = ZSTD_compressBound(n);
	if (b > cap) {
		out = realloc(out, b);
		cap = b;
	}
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
	size_t r = ZSTD_compress2(cc, out, cap, p, n);
	ZSTD_freeCCtx(cc);
	return r;
}

static int mtf_find(struct ts2 *st, uint64_t ip);
static void mtf_use(struct ts2 *st, int i, uint64_t ip, uint64_t addr);

/* ---- a decoder, to check that each candidate keeps every value exact */
struct mini {
	uint32_t kind, thread, proc;
	uint64_t ts;
	uint64_t a[6], res, exit, x[4]; /* syscall: args, result; fault: x */
	uint32_t op, nargs, stack, flags, waits, vcsw, ivcsw;
	uint64_t off_cpu;
};
static struct mini *chunk_ev;
static size_t chunk_n, chunk_cap;
static uint64_t verified, mismatches, chunk_ts0;

static void keep(const struct vmt_event *ev)
{
	if (chunk_n == chunk_cap) {
		chunk_cap = chunk_cap ? 2 * chunk_cap : 4096;
		chunk_ev = realloc(chunk_ev, chunk_cap * sizeof(*chunk_ev));
	}
	struct mini *m = &chunk_ev[chunk_n++];
	memset(m, 0, sizeof(*m));
	m->kind = ev->kind;
	m->thread = ev->thread;
	m->proc = ev->proc;
	m->ts = ev->ts_ns;
	if (ev->kind == VMT_EV_SYSCALL) {
		const struct vmt_syscall *sc = &ev->u.sc;
		m->op = sc->op;
		m->nargs = sc->nargs;
		memcpy(m->a, sc->args, sizeof(m->a));
		m->res = (uint64_t)sc->result;
		m->exit = (sc->flags & VMT_SC_NO_RESULT) ? ev->ts_ns : sc->exit_ns;
		m->stack = sc->stack_id == VMT_NONE ? 0 : sc->stack_id + 1;
		m->flags = sc->flags;
		m->waits = sc->waits;
		m->vcsw = sc->vcsw;
		m->ivcsw = sc->ivcsw;
		m->off_cpu = sc->off_cpu_ns;
	} else if (ev->kind == VMT_EV_FAULT) {
		m->x[0] = ev->u.fault.addr;
		m->x[1] = ev->u.fault.ip;
		m->x[2] = ev->u.fault.access;
		m->x[3] = ev->u.fault.flags;
	}
}

static uint64_t get(struct vmt_cursor *k) { return vmt_get_varint(k); }
static int64_t getz(struct vmt_cursor *k) { return vmt_unzigzag(vmt_get_varint(k)); }
static uint64_t get_time(struct cand *c, struct vmt_cursor *k, struct vmt_cursor *tl)
{
	if (!c->tsplit)
		return get(k);
	uint64_t lo = tl->p < tl->end ? *tl->p++ : (tl->bad = 1, 0);
	return get(k) << 8 | lo;
}

static void verify(struct cand *c)
{
	struct vmt_cursor k[S__N];
	for (int i = 0; i < S__N; i++)
		k[i] = (struct vmt_cursor){ c->s[i].p, c->s[i].p + c->s[i].len, 0 };
	static struct ts2 st_[4096];
	static unsigned char seen[4096];
	memset(seen, 0, sizeof(seen));
	struct vmt_cursor *r = &k[S_R];
	for (size_t e = 0; e < chunk_n; e++) {
		const struct mini *m = &chunk_ev[e];
		struct mini d;
		memset(&d, 0, sizeof(d));
		d.kind = (uint32_t)get(r);
		d.thread = (uint32_t)get(r);
		d.proc = (uint32_t)get(r);
		uint32_t t = d.thread & 4095;
		if (!seen[t]) {
			memset(&st_[t], 0, sizeof(st_[t]));
			seen[t] = 1;
		}
		struct ts2 *st = &st_[t];
		uint64_t ref = c->gap ? st->end : st->ts;
		d.ts = ref + (uint64_t)vmt_unzigzag(get_time(c, &k[S_T], &k[S_TL]));
		st->ts = st->end = d.ts;
		if (d.kind == VMT_EV_SYSCALL) {
			uint64_t dur = get_time(c, c->split_times ? &k[S_D] : &k[S_T], &k[S_TL]);
			st->end = d.ts + dur;
			d.exit = d.ts + dur;
			d.op = (uint32_t)get(r);
			d.nargs = (uint32_t)get(r);
			uint32_t mask = (uint32_t)get(r);
			for (uint32_t i = 0; i < d.nargs && i < 6; i++) {
				if (mask & (1u << i)) {
					d.a[i] = st->addr + (uint64_t)getz(r);
					st->addr = d.a[i];
				} else {
					d.a[i] = (uint64_t)getz(r);
				}
			}
			if (mask & VMT_MASK_RESULT) {
				d.res = st->addr + (uint64_t)getz(r);
				st->addr = d.res;
			} else {
				d.res = (uint64_t)getz(r);
			}
			d.stack = (uint32_t)get(r);
			uint64_t fl = get(r);
			d.flags = (uint32_t)(fl & 0xff);
			if (fl & 0x100) {
				d.waits = 1;
				d.off_cpu = get(r);
				d.vcsw = (uint32_t)get(r);
				d.ivcsw = (uint32_t)get(r);
			}
			if (d.flags & VMT_SC_NO_RESULT)
				d.exit = d.ts; /* duration stored as 0 */
		} else if (d.kind == VMT_EV_FAULT) {
			struct vmt_cursor *ka = c->fault_sep ? &k[S_FA] : r;
			struct vmt_cursor *ki = c->fault_sep ? &k[S_FI] : r;
			uint64_t *aref = c->fault_addr_own ? &st->fpage : &st->addr;
			uint64_t ip = 0, addr;
			int hit = -1, at_ip = 0, ip_known = 0;
			if (c->ip_mtf) {
				uint64_t code = get(ki);
				if (code == 0) {
					at_ip = 1;
				} else if (code <= MTF) {
					hit = (int)code - 1;
					ip = st->cache[hit];
					ip_known = 1;
				} else {
					ip = st->ip + (uint64_t)vmt_unzigzag(code - MTF - 1);
					ip_known = 1;
				}
			}
			uint64_t pred = *aref;
			if (c->ipaddr && hit >= 0 && !at_ip)
				pred = st->cache_addr[hit];
			if (c->fault_page) {
				uint64_t page = (pred >> 12) + (uint64_t)getz(ka);
				uint64_t oc = get(&k[S_FO]);
				uint64_t off = oc ? oc - 1 : (c->ipaddr ? (pred & 4095) : st->foff);
				addr = page << 12 | off;
				st->foff = off;
			} else {
				addr = pred + (uint64_t)getz(ka);
			}
			if (!c->ip_mtf) {
				ip = st->ip + (uint64_t)getz(ki);
				ip_known = 1;
			}
			if (at_ip)
				ip = addr;
			(void)ip_known;
			*aref = addr;
			if (!c->fault_addr_own)
				st->addr = addr;
			if (hit < 0)
				hit = mtf_find(st, ip);
			mtf_use(st, hit, ip, addr);
			st->ip = ip;
			uint64_t af = get(r);
			d.x[0] = addr;
			d.x[1] = ip;
			d.x[2] = af & 7;
			d.x[3] = af >> 3;
		} else {
			struct vmt_cursor *o = c->fault_sep ? &k[S_O] : r;
			get(o); /* kind */
			uint64_t len = get(o);
			o->p += len;
		}
		int ok = d.kind == m->kind && d.thread == m->thread && d.proc == m->proc &&
			 d.ts == m->ts;
		if (ok && d.kind == VMT_EV_SYSCALL)
			ok = d.op == m->op && d.nargs == m->nargs &&
			     !memcmp(d.a, m->a, sizeof(uint64_t) * m->nargs) && d.res == m->res &&
			     d.exit == m->exit && d.stack == m->stack && d.flags == m->flags &&
			     d.waits == m->waits && d.vcsw == m->vcsw && d.ivcsw == m->ivcsw &&
			     d.off_cpu == m->off_cpu;
		if (ok && d.kind == VMT_EV_FAULT)
			ok = !memcmp(d.x, m->x, sizeof(d.x));
		if (!ok) {
			if (mismatches++ < 3)
				fprintf(stderr, "%s: event %zu of a chunk decodes differently (kind %u)\n",
					c->name, e, m->kind);
		} else {
			verified++;
		}
	}
	for (int i = 0; i < S__N; i++)
		if (k[i].bad || k[i].p != k[i].end) {
			if (mismatches++ < 3)
				fprintf(stderr, "%s: section %s not consumed exactly\n", c->name, sname[i]);
		}
}

static void flush(struct cand *c)
{
	verify(c);
	struct vmt_bytes all = { 0 };
	for (int i = 0; i < S__N; i++) {
		vmt_bytes_reserve(&all, c->s[i].len + 10);
		put(&all, c->s[i].len); /* section sizes */
	}
	for (int i = 0; i < S__N; i++) {
		vmt_bytes_reserve(&all, c->s[i].len);
		memcpy(all.p + all.len, c->s[i].p, c->s[i].len);
		all.len += c->s[i].len;
		c->sep[i] += zsize(c->s[i].p, c->s[i].len, c->level);
		c->raw[i] += c->s[i].len;
		c->s[i].len = 0;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	c->one_frame += zsize(all.p, all.len, c->level) + 40; /* + descriptor */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	c->ctime += (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
	c->craw += all.len;
	c->chunks++;
	vmt_bytes_free(&all);
	memset(c->seen, 0, sizeof(c->seen));
}

static struct ts2 *state(struct cand *c, uint32_t t)
{
	t &= 4095;
	if (!c->seen[t]) {
		memset(&c->st[t], 0, sizeof(c->st[t]));
		c->seen[t] = 1;
	}
	return &c->st[t];
}

static int mtf_find(struct ts2 *st, uint64_t ip)
{
	for (int i = 0; i < st->ncache; i++)
		if (st->cache[i] == ip)
			return i;
	return -1;
}
static void mtf_use(struct ts2 *st, int i, uint64_t ip, uint64_t addr)
{
	if (i < 0) {
		if (st->ncache < MTF)
			st->ncache++;
		i = st->ncache - 1;
	}
	memmove(st->cache + 1, st->cache, sizeof(uint64_t) * i);
	memmove(st->cache_addr + 1, st->cache_addr, sizeof(uint64_t) * i);
	st->cache[0] = ip;
	st->cache_addr[0] = addr;
}

static void enc_fault(struct cand *c, struct ts2 *st, const struct vmt_fault *f)
{
	struct vmt_bytes *ba = c->fault_sep ? &c->s[S_FA] : &c->s[S_R];
	struct vmt_bytes *bi = c->fault_sep ? &c->s[S_FI] : &c->s[S_R];
	struct vmt_bytes *r = &c->s[S_R];
	uint64_t *aref = c->fault_addr_own ? &st->fpage : &st->addr;
	int hit = mtf_find(st, f->ip);
	uint64_t pred = *aref;
	/* the decoder learns the ip first (its own stream), except for an
	 * exec fault at its ip (code 0), whose ip is its addr: then the addr
	 * is predicted from the thread's last addr, never from the ip's */
	int at_ip = c->ip_mtf && f->ip == f->addr && f->ip;
	if (c->ipaddr && hit >= 0 && !at_ip)
		pred = st->cache_addr[hit];
	if (c->fault_page) {
		uint64_t page = f->addr >> 12, off = f->addr & 4095;
		putz(ba, (int64_t)(page - (pred >> 12)));
		put(&c->s[S_FO], off == (c->ipaddr ? (pred & 4095) : st->foff) ? 0 : off + 1);
		st->foff = off;
	} else {
		putz(ba, (int64_t)(f->addr - pred));
	}
	*aref = f->addr;
	if (!c->fault_addr_own)
		st->addr = f->addr;
	if (c->ip_mtf) {
		if (at_ip)
			put(bi, 0);
		else if (hit >= 0)
			put(bi, (uint64_t)hit + 1);
		else
			put(bi, MTF + 1 + vmt_zigzag((int64_t)(f->ip - st->ip)));
	} else {
		putz(bi, (int64_t)(f->ip - st->ip));
	}
	mtf_use(st, hit, f->ip, f->addr);
	st->ip = f->ip;
	put(r, f->access | f->flags << 3);
}

static void enc_syscall(struct cand *c, struct ts2 *st, const struct vmt_syscall *sc)
{
	struct vmt_bytes *r = &c->s[S_R];
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	uint32_t mask = 0;
	for (uint32_t i = 0; i < sc->nargs; i++)
		if (oi && i < oi->nargs && oi->arg[i] == VMT_ARG_ADDR && sc->args[i])
			mask |= 1u << i;
	if (oi && oi->ret == VMT_RET_ADDR && !vmt_is_errno(sc->result) &&
	    !(sc->flags & VMT_SC_NO_RESULT))
		mask |= VMT_MASK_RESULT;
	put(r, sc->op);
	put(r, sc->nargs);
	put(r, mask);
	for (uint32_t i = 0; i < sc->nargs; i++) {
		if (mask & (1u << i)) {
			putz(r, (int64_t)(sc->args[i] - st->addr));
			st->addr = sc->args[i];
		} else {
			putz(r, (int64_t)sc->args[i]);
		}
	}
	if (mask & VMT_MASK_RESULT) {
		putz(r, (int64_t)((uint64_t)sc->result - st->addr));
		st->addr = (uint64_t)sc->result;
	} else {
		putz(r, sc->result);
	}
	put(r, sc->stack_id == VMT_NONE ? 0 : (uint64_t)sc->stack_id + 1);
	put(r, sc->flags | (sc->waits ? 0x100u : 0)); /* waits follow */
	if (sc->waits) {
		put(r, sc->off_cpu_ns);
		put(r, sc->vcsw);
		put(r, sc->ivcsw);
	}
}

static void enc(struct cand *c, const struct vmt_event *ev)
{
	struct ts2 *st = state(c, ev->thread);
	struct vmt_bytes *r = &c->s[S_R];
	put(r, ev->kind);
	put(r, ev->thread);
	put(r, ev->proc);
	uint64_t ref = c->gap ? st->end : st->ts;
	put_time(c, S_T, vmt_zigzag((int64_t)(ev->ts_ns - ref)));
	st->ts = ev->ts_ns;
	st->end = ev->ts_ns;
	if (ev->kind == VMT_EV_SYSCALL) {
		uint64_t d = (ev->u.sc.flags & VMT_SC_NO_RESULT) ? 0 : ev->u.sc.exit_ns - ev->ts_ns;
		put_time(c, c->split_times ? S_D : S_T, d);
		st->end = ev->ts_ns + d;
		enc_syscall(c, st, &ev->u.sc);
	} else if (ev->kind == VMT_EV_FAULT) {
		enc_fault(c, st, &ev->u.fault);
	} else {
		/* the rest as today (their bytes into rec) */
		scratch_t.len = 0;
		vmt_tmap_reset(&scratch_tm);
		vmt_encode_event(c->fault_sep ? &c->s[S_O] : r, &scratch_t, &scratch_tm, ev);
	}
}

/* Baseline: the real codec. */
struct base {
	struct vmt_bytes raw, times;
	struct vmt_tmap tm;
	uint64_t total, rec, tim, raw_bytes;
	int level;
};

static void base_flush(struct base *b)
{
	struct vmt_bytes all = { 0 };
	vmt_bytes_reserve(&all, b->raw.len + b->times.len + 10);
	vmt_put_varint(&all, b->raw.len);
	memcpy(all.p + all.len, b->raw.p, b->raw.len);
	all.len += b->raw.len;
	memcpy(all.p + all.len, b->times.p, b->times.len);
	all.len += b->times.len;
	b->raw_bytes += all.len;
	b->total += zsize(all.p, all.len, b->level) + 40;
	b->rec += zsize(b->raw.p, b->raw.len, b->level);
	b->tim += zsize(b->times.p, b->times.len, b->level);
	b->raw.len = b->times.len = 0;
	vmt_tmap_reset(&b->tm);
	vmt_bytes_free(&all);
}

/* ---- what a compatible 1.5 could do: FAULT_RUN (a new kind, 16) ------
 * The 1.4 records stay as they are; a run of consecutive FAULTs of one
 * thread becomes one record of a new kind, which a 1.4 reader skips (its
 * Payload_Length), with its one time field (the run's first fault, moving
 * the thread's ts as any record's does) and, in its payload, the run as
 * columns: count, the other faults' times (deltas, optionally low bytes
 * apart), page deltas, offsets, ip codes (cache), access|flags.  Its own
 * per-thread state (fault addr, ip cache) is new state, so the 1.4 delta
 * state (ts, addr, ip) is not touched: the minor-version rules. */
struct rfault { uint64_t ts, addr, ip; uint32_t access, flags; };
struct runcand {
	const char *name;
	int tlo, level;
	struct vmt_bytes raw, times, pay, col[6];
	struct vmt_tmap tm;
	struct ts2 st[4096], dst[4096];
	unsigned char seen[4096];
	struct rfault *run;
	size_t nrun, caprun;
	uint32_t run_thread, run_proc;
	uint64_t total, runs, run_faults, bad;
};

static struct ts2 *rstate(struct runcand *c, uint32_t t, int dec)
{
	t &= 4095;
	if (!c->seen[t]) {
		memset(&c->st[t], 0, sizeof(c->st[t]));
		memset(&c->dst[t], 0, sizeof(c->dst[t]));
		c->seen[t] = 1;
	}
	return dec ? &c->dst[t] : &c->st[t];
}

/* one fault's addr and ip into the columns (0 ts, 1 tslo, 2 page, 3 off,
 * 4 ip, 5 access) */
static void run_fault(struct runcand *c, struct ts2 *st, const struct rfault *f)
{
	int hit = mtf_find(st, f->ip);
	int at_ip = f->ip == f->addr && f->ip;
	uint64_t page = f->addr >> 12, off = f->addr & 4095;
	putz(&c->col[2], (int64_t)(page - (st->fpage >> 12)));
	put(&c->col[3], off == st->foff ? 0 : off + 1);
	st->foff = off;
	st->fpage = f->addr;
	if (at_ip)
		put(&c->col[4], 0);
	else if (hit >= 0)
		put(&c->col[4], (uint64_t)hit + 1);
	else
		put(&c->col[4], MTF + 1 + vmt_zigzag((int64_t)(f->ip - st->ip)));
	mtf_use(st, hit, f->ip, f->addr);
	st->ip = f->ip;
	put(&c->col[5], f->access | f->flags << 3);
}

static int run_decode_check(struct runcand *c, const uint8_t *p, size_t n)
{
	struct vmt_cursor k = { p, p + n, 0 };
	uint32_t thread = (uint32_t)get(&k);
	get(&k); /* proc */
	uint64_t cnt = get(&k);
	uint64_t len[6];
	for (int i = 0; i < 6; i++)
		len[i] = get(&k);
	struct vmt_cursor col[6];
	const uint8_t *q = k.p;
	for (int i = 0; i < 6; i++) {
		col[i] = (struct vmt_cursor){ q, q + len[i], 0 };
		q += len[i];
	}
	if (q != k.end || cnt != c->nrun)
		return 1;
	struct ts2 *st = rstate(c, thread, 1);
	uint64_t ts = c->run[0].ts;
	for (size_t i = 0; i < cnt; i++) {
		if (i) {
			uint64_t z = get(&col[0]);
			if (c->tlo)
				z = z << 8 | (col[1].p < col[1].end ? *col[1].p++ : 0);
			ts += (uint64_t)vmt_unzigzag(z);
		}
		uint64_t page = (st->fpage >> 12) + (uint64_t)getz(&col[2]);
		uint64_t oc = get(&col[3]);
		uint64_t off = oc ? oc - 1 : st->foff;
		uint64_t addr = page << 12 | off, ip;
		st->foff = off;
		st->fpage = addr;
		uint64_t code = get(&col[4]);
		int hit = -1;
		if (code == 0) {
			ip = addr;
		} else if (code <= MTF) {
			hit = (int)code - 1;
			ip = st->cache[hit];
		} else {
			ip = st->ip + (uint64_t)vmt_unzigzag(code - MTF - 1);
		}
		if (hit < 0)
			hit = mtf_find(st, ip);
		mtf_use(st, hit, ip, addr);
		st->ip = ip;
		uint64_t af = get(&col[5]);
		const struct rfault *f = &c->run[i];
		if (ts != f->ts || addr != f->addr || ip != f->ip || (af & 7) != f->access ||
		    (af >> 3) != f->flags)
			return 1;
	}
	for (int i = 0; i < 6; i++)
		if (col[i].bad || col[i].p != col[i].end)
			return 1;
	return 0;
}

static void run_emit(struct runcand *c)
{
	if (!c->nrun)
		return;
	struct ts2 *st = rstate(c, c->run_thread, 0);
	for (int i = 0; i < 6; i++)
		c->col[i].len = 0;
	for (size_t i = 0; i < c->nrun; i++) {
		if (i) {
			uint64_t z = vmt_zigzag((int64_t)(c->run[i].ts - c->run[i - 1].ts));
			if (c->tlo) {
				vmt_bytes_reserve(&c->col[1], 1);
				c->col[1].p[c->col[1].len++] = (uint8_t)z;
				z >>= 8;
			}
			put(&c->col[0], z);
		}
		run_fault(c, st, &c->run[i]);
	}
	c->pay.len = 0;
	put(&c->pay, c->run_thread);
	put(&c->pay, c->run_proc);
	put(&c->pay, c->nrun);
	for (int i = 0; i < 6; i++)
		put(&c->pay, c->col[i].len);
	for (int i = 0; i < 6; i++) {
		vmt_bytes_reserve(&c->pay, c->col[i].len);
		memcpy(c->pay.p + c->pay.len, c->col[i].p, c->col[i].len);
		c->pay.len += c->col[i].len;
	}
	c->bad += run_decode_check(c, c->pay.p, c->pay.len);
	put(&c->raw, 16);
	put(&c->raw, c->pay.len);
	vmt_bytes_reserve(&c->raw, c->pay.len);
	memcpy(c->raw.p + c->raw.len, c->pay.p, c->pay.len);
	c->raw.len += c->pay.len;
	/* the record's one time field: its first fault, as a 1.4 reader
	 * applies it to the thread's ts */
	struct vmt_tstate *ts = vmt_tmap_get(&c->tm, c->run_thread);
	put(&c->times, vmt_zigzag((int64_t)(c->run[0].ts - ts->ts)));
	ts->ts = c->run[0].ts;
	c->runs++;
	c->run_faults += c->nrun;
	c->nrun = 0;
}

static void run_enc(struct runcand *c, const struct vmt_event *ev)
{
	if (ev->kind == VMT_EV_FAULT) {
		if (c->nrun && c->run_thread != ev->thread)
			run_emit(c);
		if (c->nrun == c->caprun) {
			c->caprun = c->caprun ? 2 * c->caprun : 1024;
			c->run = realloc(c->run, c->caprun * sizeof(*c->run));
		}
		c->run[c->nrun++] = (struct rfault){ ev->ts_ns, ev->u.fault.addr, ev->u.fault.ip,
						    ev->u.fault.access, ev->u.fault.flags };
		c->run_thread = ev->thread;
		c->run_proc = ev->proc;
		return;
	}
	run_emit(c);
	vmt_encode_event(&c->raw, &c->times, &c->tm, ev);
}

static void run_flush(struct runcand *c)
{
	run_emit(c);
	struct vmt_bytes all = { 0 };
	vmt_bytes_reserve(&all, c->raw.len + c->times.len + 10);
	vmt_put_varint(&all, c->raw.len);
	memcpy(all.p + all.len, c->raw.p, c->raw.len);
	all.len += c->raw.len;
	memcpy(all.p + all.len, c->times.p, c->times.len);
	all.len += c->times.len;
	c->total += zsize(all.p, all.len, c->level) + 40;
	c->raw.len = c->times.len = 0;
	vmt_tmap_reset(&c->tm);
	memset(c->seen, 0, sizeof(c->seen));
	vmt_bytes_free(&all);
}

/* order-0 entropy floor of a field: min over k of H(v >> k) + k bits (the
 * k low bits taken as uniform), from one histogram of the whole trace */
#define EF 6
static const char *efname[EF] = { "ts(now)", "ts(gap)", "dur", "fpage", "foff", "fip" };
static uint64_t *ev_[EF];
static size_t en_[EF], ecap_[EF];
static void eadd(int f, uint64_t v)
{
	if (en_[f] == ecap_[f]) {
		ecap_[f] = ecap_[f] ? 2 * ecap_[f] : 4096;
		ev_[f] = realloc(ev_[f], ecap_[f] * sizeof(uint64_t));
	}
	ev_[f][en_[f]++] = v;
}
static int cmpu(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}
static double efloor(int f, int *bestk)
{
	size_t n = en_[f];
	if (!n)
		return 0;
	uint64_t *t = malloc(n * sizeof(uint64_t));
	double best = 1e18;
	for (int k = 0; k < 40; k++) {
		for (size_t i = 0; i < n; i++)
			t[i] = ev_[f][i] >> k;
		qsort(t, n, sizeof(uint64_t), cmpu);
		double h = 0;
		size_t m = 0;
		for (size_t i = 0, j; i < n; i = j) {
			for (j = i; j < n && t[j] == t[i]; j++)
				;
			double p = (double)(j - i) / n;
			h -= p * log2(p);
			m++;
		}
		/* only histograms with enough samples per bin; Miller-Madow */
		if (m > n / 16 + 1)
			continue;
		h += (double)(m - 1) / (2.0 * n * log(2.0));
		if (h + k < best) {
			best = h + k;
			*bestk = k;
		}
	}
	free(t);
	return best * n / 8; /* bytes */
}

#define NC 27
int main(int argc, char **argv)
{
	int fd = open(argv[1], O_RDONLY);
	int err;
	char msg[256];
	vmt_reader *rd = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!rd) {
		fprintf(stderr, "%s\n", msg);
		return 1;
	}
	/* read the footer first: chunk boundaries */
	struct vmt_event ev;
	static struct cand cs[NC] = {
		{ "now-as-cand", 0, 0, 0, 0, 0, 0, 0, 3 },
		{ "split-dur", 1, 0, 0, 0, 0, 0, 0, 3 },
		{ "gap", 0, 1, 0, 0, 0, 0, 0, 3 },
		{ "gap+split", 1, 1, 0, 0, 0, 0, 0, 3 },
		{ "fault-sep", 0, 0, 1, 0, 0, 0, 0, 3 },
		{ "fault-page", 0, 0, 1, 1, 0, 0, 0, 3 },
		{ "fault-own", 0, 0, 1, 0, 0, 1, 0, 3 },
		{ "ip-mtf", 0, 0, 1, 0, 1, 0, 0, 3 },
		{ "page+own+mtf", 0, 0, 1, 1, 1, 1, 0, 3 },
		{ "all", 1, 1, 1, 1, 1, 1, 0, 3 },
		{ "all+tlo", 1, 1, 1, 1, 1, 1, 1, 3 },
		{ "all-l9", 1, 1, 1, 1, 1, 1, 0, 9 },
		{ "all-l19", 1, 1, 1, 1, 1, 1, 0, 19 },
		{ "gap+mtf+own", 1, 1, 1, 0, 1, 1, 0, 3 },
		{ "now-l19", 0, 0, 0, 0, 0, 0, 0, 19 },
		{ "now-l9", 0, 0, 0, 0, 0, 0, 0, 9 },
		{ "all+ipaddr", 1, 1, 1, 1, 1, 1, 0, 3, 1 },
		{ "all+ipaddr+tlo", 1, 1, 1, 1, 1, 1, 1, 3, 1 },
		{ "ipaddr-nopage", 1, 1, 1, 0, 1, 1, 1, 3, 1 },
		{ "ipaddr+tlo-l19", 1, 1, 1, 1, 1, 1, 1, 19, 1 },
		{ "now-l6", 0, 0, 0, 0, 0, 0, 0, 6 },
		{ "now-l12", 0, 0, 0, 0, 0, 0, 0, 12 },
		{ "all+tlo-l6", 1, 1, 1, 1, 1, 1, 1, 6 },
		{ "all+tlo-l9", 1, 1, 1, 1, 1, 1, 1, 9 },
		{ "nopage+tlo-l6", 1, 1, 1, 0, 1, 1, 1, 6, 1 },
		{ "nopage+tlo-l9", 1, 1, 1, 0, 1, 1, 1, 9, 1 },
		{ "nopage+tlo-l19", 1, 1, 1, 0, 1, 1, 1, 19, 1 },
	};
	struct base b3 = { .level = 3 };
	static struct runcand rc[] = {
		{ .name = "1.5-run-l3", .level = 3 },
		{ .name = "1.5-run+tlo-l3", .tlo = 1, .level = 3 },
		{ .name = "1.5-run+tlo-l6", .tlo = 1, .level = 6 },
		{ .name = "1.4-l6 (no run)", .level = 6 },
	};
	const int NR = (int)(sizeof(rc) / sizeof(rc[0]));
	uint64_t n = 0, nfault = 0, nsc = 0;
	/* we learn chunk boundaries from the footer at the end; collect the
	 * first-event ordinals by reopening */
	const struct vmt_footer *ft = NULL;
	{
		int fd2 = open(argv[1], O_RDONLY);
		vmt_reader *r2 = vmt_reader_open_fd(fd2, &err, msg, sizeof(msg));
		while (vmt_reader_next(r2, &ev) == 1)
			;
		ft = vmt_reader_footer(r2);
		/* keep r2 alive: ft points into it */
	}
	uint32_t ci = 1;
	while (vmt_reader_next(rd, &ev) == 1) {
		int cut;
		if (getenv("CUTMS")) /* a time flush of CUTMS ms of trace time */
			cut = b3.raw.len + b3.times.len >= 256 * 1024 ||
			      (chunk_n && ev.ts_ns - chunk_ts0 >= (uint64_t)atoi(getenv("CUTMS")) * 1000000u);
		else if (getenv("MERGE"))
			cut = b3.raw.len + b3.times.len >= (size_t)atoi(getenv("MERGE")) * 1024;
		else
			cut = ci < ft->nchunks && n == ft->chunks[ci].first_event;
		if (cut) {
			base_flush(&b3);
			for (int i = 0; i < NR; i++)
				run_flush(&rc[i]);
			for (int i = 0; i < NC; i++)
				flush(&cs[i]);
			chunk_n = 0;
			ci++;
		}
		vmt_encode_event(&b3.raw, &b3.times, &b3.tm, &ev);
		for (int i = 0; i < NR - 1; i++)
			run_enc(&rc[i], &ev);
		vmt_encode_event(&rc[NR - 1].raw, &rc[NR - 1].times, &rc[NR - 1].tm, &ev);
		if (!chunk_n)
			chunk_ts0 = ev.ts_ns;
		keep(&ev);
		for (int i = 0; i < NC; i++)
			enc(&cs[i], &ev);
		{
			static uint64_t lts[4096], lend[4096], lip[4096], lad[4096];
			uint32_t t = ev.thread & 4095;
			eadd(0, vmt_zigzag((int64_t)(ev.ts_ns - lts[t])));
			eadd(1, vmt_zigzag((int64_t)(ev.ts_ns - lend[t])));
			lts[t] = lend[t] = ev.ts_ns;
			if (ev.kind == VMT_EV_SYSCALL) {
				uint64_t d = (ev.u.sc.flags & VMT_SC_NO_RESULT) ? 0 : ev.u.sc.exit_ns - ev.ts_ns;
				eadd(2, d);
				lend[t] += d;
			}
			if (ev.kind == VMT_EV_FAULT) {
				eadd(3, vmt_zigzag((int64_t)((ev.u.fault.addr >> 12) - (lad[t] >> 12))));
				eadd(4, ev.u.fault.addr & 4095);
				eadd(5, vmt_zigzag((int64_t)(ev.u.fault.ip - lip[t])));
				lad[t] = ev.u.fault.addr;
				lip[t] = ev.u.fault.ip;
			} else if (ev.kind == VMT_EV_SYSCALL && ev.u.sc.nargs) {
				lad[t] = ev.u.sc.args[0];
			}
		}
		n++;
		nfault += ev.kind == VMT_EV_FAULT;
		nsc += ev.kind == VMT_EV_SYSCALL;
	}
	base_flush(&b3);
	for (int i = 0; i < NR; i++)
		run_flush(&rc[i]);
	for (int i = 0; i < NC; i++)
		flush(&cs[i]);
	printf("decoded back: %llu events equal, %llu differ (all candidates)\n",
	       (unsigned long long)verified, (unsigned long long)mismatches);
	off_t fsize = lseek(fd, 0, SEEK_END);
	uint64_t nch = cs[0].chunks;
	printf("%s: %llu events (%llu syscalls, %llu faults), %u chunks, file %lld B = %.3f B/ev; raw %llu (footer %llu)\n",
	       argv[1], (unsigned long long)n, (unsigned long long)nsc,
	       (unsigned long long)nfault, (unsigned)nch, (long long)fsize,
	       (double)fsize / n, (unsigned long long)b3.raw_bytes,
	       (unsigned long long)ft->raw_bytes);
	printf("baseline codec l3: %.3f B/ev (records alone %.3f, times alone %.3f)\n",
	       (double)b3.total / n, (double)b3.rec / n, (double)b3.tim / n);
	for (int i = 0; i < NR; i++)
		printf("%-16s %.3f B/ev (1.4 records and a FAULT_RUN record per run of one thread's faults: %llu runs of %.1f faults; %llu runs decode differently)\n",
		       rc[i].name, (double)rc[i].total / n, (unsigned long long)rc[i].runs,
		       rc[i].runs ? (double)rc[i].run_faults / rc[i].runs : 0.0,
		       (unsigned long long)rc[i].bad);
	printf("%-14s %9s %7s %7s |", "candidate", "zstd", "1frame", "sumsep");
	for (int s = 0; s < S__N; s++)
		printf(" %6s", sname[s]);
	printf("   (B/event, streams compressed alone)\n");
	for (int i = 0; i < NC; i++) {
		struct cand *c = &cs[i];
		uint64_t sum = 0;
		for (int s = 0; s < S__N; s++)
			sum += c->sep[s];
		printf("%-14s %5.0fMB/s %7.3f %7.3f |", c->name, c->craw / c->ctime / 1e6, (double)c->one_frame / n,
		       (double)(sum + 40 * c->chunks) / n);
		for (int s = 0; s < S__N; s++)
			printf(" %6.3f", (double)c->sep[s] / n);
		printf("\n");
	}
	printf("order-0 floor (B/event of the trace; whole-trace histogram):");
	for (int f = 0; f < EF; f++) {
		int k = 0;
		double b = efloor(f, &k);
		printf(" %s %.3f (k=%d, %.1f bits/value)", efname[f], b / n, k, en_[f] ? b * 8 / en_[f] : 0);
	}
	printf("\n");
	return 0;
}
