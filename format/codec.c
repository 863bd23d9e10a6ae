/*
 * codec.c - encoding and decoding of single event records (man/vmtrace.5,
 * "Event records"), one function per event kind each way, and the
 * per-thread state and scratch arena they use.  The validation rules
 * shared by writer and reader are in check.c.
 *
 * Every record is: varint kind, varint payload length, payload.  The
 * length lets a reader skip kinds added by a newer minor version.  Inside a
 * payload, times and addresses are deltas against the previous value of the
 * same thread in the same chunk, so that loops cost a few bytes per event
 * once zstd has seen them; chunk boundaries reset the state so that chunks
 * decode independently.
 */
#include <errno.h>
#include <stdlib.h>
#include "codec_int.h"

int vmt_bytes_reserve(struct vmt_bytes *b, size_t n)
{
	if (b->cap - b->len >= n)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

void vmt_bytes_free(struct vmt_bytes *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* ---- per-thread state: open addressing keyed by thread index ------------ */

static uint32_t thash(uint32_t t)
{
	return t * 2654435761u;
}

struct vmt_tstate *vmt_tmap_get_slow(struct vmt_tmap *m, uint32_t t)
{
	if (m->used * 2 >= m->cap) {
		uint32_t ncap = m->cap ? m->cap * 2 : 16;
		struct vmt_tstate *ns = malloc(sizeof(*ns) * ncap);
		if (!ns)
			return NULL;
		for (uint32_t i = 0; i < ncap; i++)
			ns[i].thread = UINT32_MAX;
		for (uint32_t i = 0; i < m->cap; i++) {
			if (m->slots[i].thread == UINT32_MAX)
				continue;
			uint32_t j = thash(m->slots[i].thread) & (ncap - 1);
			while (ns[j].thread != UINT32_MAX)
				j = (j + 1) & (ncap - 1);
			ns[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
	}
	uint32_t j = thash(t) & (m->cap - 1);
	while (m->slots[j].thread != UINT32_MAX && m->slots[j].thread != t)
		j = (j + 1) & (m->cap - 1);
	if (m->slots[j].thread == UINT32_MAX) {
		m->slots[j].thread = t;
		m->slots[j].ts = m->slots[j].addr = m->slots[j].ip = 0;
		m->used++;
	}
	m->last = &m->slots[j];
	return m->last;
}

void vmt_tmap_reset(struct vmt_tmap *m)
{
	if (++m->gen == UINT32_MAX) {
		m->gen = 0;
		memset(m->gen_of, 0, sizeof(m->gen_of));
	}
	if (m->used)
		for (uint32_t i = 0; i < m->cap; i++)
			m->slots[i].thread = UINT32_MAX;
	m->used = 0;
	m->last = NULL;
}

void vmt_tmap_free(struct vmt_tmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->used = 0;
	m->last = NULL;
	vmt_tmap_reset(m);
}

/* The scratch arena: blocks that are never moved, so that pointers handed
 * out for one event stay valid until the next reset.  Its size follows the
 * decoded content (bounded by the format limits), not a multiple of the
 * payload, so a hostile record cannot make it balloon. */
struct vmt_scratch_block {
	struct vmt_scratch_block *next;
	size_t cap, used;
	_Alignas(16) uint8_t data[];
};

void vmt_scratch_reset(struct vmt_scratch *s)
{
	while (s->head) {
		struct vmt_scratch_block *b = s->head;
		s->head = b->next;
		if (!s->spare || b->cap > s->spare->cap) {
			free(s->spare);
			s->spare = b;
		} else {
			free(b);
		}
	}
	if (s->spare)
		s->spare->used = 0;
}

void vmt_scratch_free(struct vmt_scratch *s)
{
	vmt_scratch_reset(s);
	free(s->spare);
	s->spare = NULL;
}

static void *scratch_alloc(struct vmt_scratch *s, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct vmt_scratch_block *b = s->head;
	if (!b || b->cap - b->used < n) {
		if (s->spare && s->spare->cap - s->spare->used >= n) {
			b = s->spare;
			s->spare = NULL;
		} else {
			size_t cap = n > 65536 ? n : 65536;
			b = malloc(sizeof(*b) + cap);
			if (!b)
				return NULL;
			b->cap = cap;
			b->used = 0;
		}
		b->next = s->head;
		s->head = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

/* ---- encoding ------------------------------------------------------------ */

static int put_str(struct vmt_bytes *b, const char *s)
{
	size_t n = strlen(s);
	int err = vmt_bytes_reserve(b, n + 10);
	if (err)
		return err;
	vmt_put_varint(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* Reserve for a fixed number of varints. */
#define NEED(nvarints)                                              \
	do {                                                        \
		int e_ = vmt_bytes_reserve(out, 10 * (size_t)(nvarints)); \
		if (e_)                                             \
			return e_;                                  \
	} while (0)

/* One encoder per event kind, as strace has one decoder per syscall: each
 * writes its kind's fields after the common ones.  Those that delta-code
 * addresses or times take the thread's state or the time section. */

/* COUNTERS (1.2): scope, flags, then its numbers; own_flt (1.4) only
 * when not 0. */
static int encode_counters(struct vmt_bytes *out, const struct vmt_counters *c)
{
	NEED(10);
	vmt_put_varint(out, c->scope);
	vmt_put_varint(out, c->flags);
#define PUT(f) vmt_put_varint(out, c->f);
	VMT_CNT_FIELDS(PUT)
#undef PUT
	if (c->own_flt)
		vmt_put_varint(out, c->own_flt);
	return 0;
}

/* A SYSCALL's waits (1.2), after its flags, when the recorder measured
 * them. */
static int encode_waits(struct vmt_bytes *out, const struct vmt_syscall *sc)
{
	if (!sc->waits)
		return 0;
	NEED(3);
	vmt_put_varint(out, sc->off_cpu_ns);
	vmt_put_varint(out, sc->vcsw);
	vmt_put_varint(out, sc->ivcsw);
	return 0;
}

static int encode_syscall(struct vmt_bytes *out, struct vmt_bytes *times,
			  struct vmt_tstate *st, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	uint32_t mask = 0;
	NEED(12);
	/* Address arguments are deltas from the thread's last address;
	 * a NULL hint is not an address and stays a plain 0. */
	for (uint32_t i = 0; i < sc->nargs; i++)
		if (oi && i < oi->nargs && oi->arg[i] == VMT_ARG_ADDR && sc->args[i])
			mask |= 1u << i;
	if (oi && oi->ret == VMT_RET_ADDR && !vmt_is_errno(sc->result) &&
	    !(sc->flags & VMT_SC_NO_RESULT))
		mask |= VMT_MASK_RESULT;
	vmt_put_varint(out, sc->op);
	out->p[out->len++] = (uint8_t)sc->nargs;
	out->p[out->len++] = (uint8_t)mask;
	for (uint32_t i = 0; i < sc->nargs; i++) {
		if (mask & (1u << i)) {
			vmt_put_varint(out, vmt_zigzag((int64_t)(sc->args[i] - st->addr)));
			st->addr = sc->args[i];
		} else {
			vmt_put_varint(out, vmt_zigzag((int64_t)sc->args[i]));
		}
	}
	if (mask & VMT_MASK_RESULT) {
		vmt_put_varint(out, vmt_zigzag((int64_t)((uint64_t)sc->result - st->addr)));
		st->addr = (uint64_t)sc->result;
	} else {
		vmt_put_varint(out, vmt_zigzag(sc->result));
	}
	vmt_put_varint(times, (sc->flags & VMT_SC_NO_RESULT) ? 0 : sc->exit_ns - ev->ts_ns);
	vmt_put_varint(out, sc->stack_id == VMT_NONE ? 0 : (uint64_t)sc->stack_id + 1);
	vmt_put_varint(out, sc->flags);
	return encode_waits(out, sc);
}

static int encode_map_file(struct vmt_bytes *out, const struct vmt_map_file *f)
{
	int err;
	if ((err = put_str(out, f->path)))
		return err;
	NEED(5);
	vmt_put_varint(out, f->dev);
	vmt_put_varint(out, f->ino);
	vmt_put_varint(out, f->size);
	vmt_put_varint(out, f->open_flags);
	vmt_put_varint(out, f->mode);
	return 0;
}

static int encode_thread_start(struct vmt_bytes *out,
			       const struct vmt_thread_start *ts)
{
	NEED(2);
	vmt_put_varint(out, ts->parent_thread == VMT_NONE
			    ? 0 : (uint64_t)ts->parent_thread + 1);
	vmt_put_varint(out, vmt_zigzag(ts->os_tid));
	return 0;
}

/* thread_exit and process_exit: the exit status alone. */
static int encode_exit_status(struct vmt_bytes *out, int32_t status)
{
	NEED(1);
	vmt_put_varint(out, vmt_zigzag(status));
	return 0;
}

static int encode_process_start(struct vmt_bytes *out,
				const struct vmt_process_start *ps)
{
	NEED(3);
	vmt_put_varint(out, ps->parent_proc == VMT_NONE
			    ? 0 : (uint64_t)ps->parent_proc + 1);
	vmt_put_varint(out, vmt_zigzag(ps->os_pid));
	vmt_put_varint(out, ps->how);
	return 0;
}

static int encode_maps(struct vmt_bytes *out, const struct vmt_maps *m)
{
	int err;
	uint64_t prev_end = 0;
	NEED(1);
	vmt_put_varint(out, m->count);
	for (uint32_t i = 0; i < m->count; i++) {
		const struct vmt_map_entry *e = &m->entries[i];
		NEED(6);
		vmt_put_varint(out, e->start - prev_end);
		vmt_put_varint(out, e->end - e->start);
		vmt_put_varint(out, e->perms);
		vmt_put_varint(out, e->offset);
		vmt_put_varint(out, e->dev);
		vmt_put_varint(out, e->ino);
		if ((err = put_str(out, e->path)))
			return err;
		prev_end = e->end;
	}
	return 0;
}

static int encode_touch(struct vmt_bytes *out, struct vmt_tstate *st,
			const struct vmt_touch *t)
{
	NEED(3);
	vmt_put_varint(out, vmt_zigzag((int64_t)(t->start - st->addr)));
	st->addr = t->start;
	vmt_put_varint(out, t->reason);
	vmt_put_varint(out, t->nruns);
	for (uint32_t i = 0; i < t->nruns; i++) {
		NEED(1);
		vmt_put_varint(out, t->runs[i].pages << 2 | t->runs[i].state);
	}
	return 0;
}

static int encode_fault(struct vmt_bytes *out, struct vmt_tstate *st,
			const struct vmt_fault *f)
{
	NEED(3);
	vmt_put_varint(out, vmt_zigzag((int64_t)(f->addr - st->addr)));
	st->addr = f->addr;
	vmt_put_varint(out, vmt_zigzag((int64_t)(f->ip - st->ip)));
	st->ip = f->ip;
	vmt_put_varint(out, f->access);
	/* 1.3: what the kernel made of it, left out when nothing */
	if (f->flags) {
		NEED(1);
		vmt_put_varint(out, f->flags);
	}
	return 0;
}

static int encode_stack(struct vmt_bytes *out, const struct vmt_stack *s)
{
	uint64_t prev = 0;
	NEED(2);
	vmt_put_varint(out, s->id);
	vmt_put_varint(out, s->depth);
	for (uint32_t i = 0; i < s->depth; i++) {
		NEED(1);
		vmt_put_varint(out, vmt_zigzag((int64_t)(s->ips[i] - prev)));
		prev = s->ips[i];
	}
	return 0;
}

static int encode_symbol(struct vmt_bytes *out, const struct vmt_symbol *sy)
{
	NEED(4);
	vmt_put_varint(out, sy->ip);
	vmt_put_varint(out, sy->module == VMT_NONE ? 0 : (uint64_t)sy->module + 1);
	vmt_put_varint(out, sy->function == VMT_NONE ? 0 : (uint64_t)sy->function + 1);
	vmt_put_varint(out, sy->offset);
	return 0;
}

static int encode_string(struct vmt_bytes *out, const struct vmt_string *s)
{
	NEED(1);
	vmt_put_varint(out, s->id);
	return put_str(out, s->str);
}

static int encode_lost(struct vmt_bytes *out, const struct vmt_lost *l)
{
	NEED(2);
	vmt_put_varint(out, l->count);
	vmt_put_varint(out, l->what);
	return 0;
}

/* The fields every kind has (thread, process, time delta), then the
 * kind's own.  A switch, not a table, so that the encoders inline. */
static int encode_payload(struct vmt_bytes *out, struct vmt_bytes *times,
			  struct vmt_tstate *st, const struct vmt_event *ev)
{
	int err;

	NEED(2);
	vmt_put_varint(out, ev->thread);
	vmt_put_varint(out, ev->proc);
	if ((err = vmt_bytes_reserve(times, 20)))
		return err;
	vmt_put_varint(times, vmt_zigzag((int64_t)(ev->ts_ns - st->ts)));
	st->ts = ev->ts_ns;

	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		return encode_syscall(out, times, st, ev);
	case VMT_EV_MAP_FILE:
		return encode_map_file(out, &ev->u.file);
	case VMT_EV_THREAD_START:
		return encode_thread_start(out, &ev->u.thread_start);
	case VMT_EV_THREAD_EXIT:
		return encode_exit_status(out, ev->u.thread_exit.status);
	case VMT_EV_PROCESS_START:
		return encode_process_start(out, &ev->u.process_start);
	case VMT_EV_EXEC:
		return put_str(out, ev->u.exec.path);
	case VMT_EV_PROCESS_EXIT:
		return encode_exit_status(out, ev->u.process_exit.status);
	case VMT_EV_MAPS:
		return encode_maps(out, &ev->u.maps);
	case VMT_EV_TOUCH:
		return encode_touch(out, st, &ev->u.touch);
	case VMT_EV_FAULT:
		return encode_fault(out, st, &ev->u.fault);
	case VMT_EV_STACK:
		return encode_stack(out, &ev->u.stack);
	case VMT_EV_SYMBOL:
		return encode_symbol(out, &ev->u.symbol);
	case VMT_EV_STRING:
		return encode_string(out, &ev->u.string);
	case VMT_EV_LOST:
		return encode_lost(out, &ev->u.lost);
	case VMT_EV_COUNTERS:
		return encode_counters(out, &ev->u.counters);
	default:
		return VMT_E_CORRUPT;
	}
}

int vmt_encode_event(struct vmt_bytes *out, struct vmt_bytes *times,
		     struct vmt_tmap *tm, const struct vmt_event *ev)
{
	struct vmt_tstate *st = vmt_tmap_get(tm, ev->thread);
	if (!st)
		return -ENOMEM;
	/* Kind and a 1-byte length placeholder; a payload of 128 bytes or
	 * more is moved up to make room for its longer length varint. */
	int err = vmt_bytes_reserve(out, 16);
	if (err)
		return err;
	vmt_put_varint(out, ev->kind);
	size_t lenpos = out->len;
	out->len += 1;
	size_t start = out->len;
	err = encode_payload(out, times, st, ev);
	if (err)
		return err;
	size_t plen = out->len - start;
	if (plen > VMT_MAX_CHUNK_BYTES)
		return VMT_E_LIMIT;
	uint8_t tmp[10];
	struct vmt_bytes lb = { tmp, 0, sizeof(tmp) };
	vmt_put_varint(&lb, plen);
	if (lb.len > 1) {
		if ((err = vmt_bytes_reserve(out, lb.len)))
			return err;
		memmove(out->p + start + lb.len - 1, out->p + start, plen);
		out->len += lb.len - 1;
	}
	memcpy(out->p + lenpos, tmp, lb.len);
	return 0;
}

/* ---- decoding ------------------------------------------------------------ */

static const char *get_str(struct vmt_cursor *c, struct vmt_scratch *s)
{
	uint64_t n = vmt_get_varint(c);
	if (c->bad || n > VMT_MAX_STRING || n > (uint64_t)(c->end - c->p)) {
		c->bad = 1;
		return NULL;
	}
	if (memchr(c->p, 0, n)) {
		c->bad = 1;
		return NULL;
	}
	if (n == 0)
		return "";
	char *d = scratch_alloc(s, n + 1);
	if (!d) {
		c->bad = 1;
		return NULL;
	}
	memcpy(d, c->p, n);
	d[n] = 0;
	c->p += n;
	return d;
}

static int fits_u32(uint64_t v)
{
	return v <= UINT32_MAX;
}

/* One decoder per event kind, mirroring the encoders: each reads its
 * kind's fields and checks the ranges that its encoding can get wrong,
 * returning 0 or BAD().  A field that runs past the record only sets the
 * cursor's bad flag; decode_payload() checks it once. */

static int decode_syscall(struct vmt_cursor *c, struct vmt_cursor *times,
			  struct vmt_tstate *st, struct vmt_event *ev,
			  const char **why)
{
	struct vmt_syscall *sc = &ev->u.sc;
	uint64_t v = vmt_get_varint(c);
	if (!fits_u32(v))
		BAD("syscall op out of range");
	sc->op = (uint32_t)v;
	if (c->end - c->p < 2)
		BAD("syscall record too short");
	sc->nargs = *c->p++;
	uint32_t mask = *c->p++;
	if (sc->nargs > VMT_MAX_ARGS)
		BAD("more than 6 syscall arguments");
	if (mask & ~((1u << sc->nargs) - 1) & ~VMT_MASK_RESULT)
		BAD("syscall address mask names a missing argument");
	for (uint32_t i = sc->nargs; i < VMT_MAX_ARGS; i++)
		sc->args[i] = 0;
	for (uint32_t i = 0; i < sc->nargs; i++) {
		uint64_t z = vmt_get_varint(c);
		if (mask & (1u << i)) {
			sc->args[i] = st->addr + (uint64_t)vmt_unzigzag(z);
			st->addr = sc->args[i];
		} else {
			sc->args[i] = (uint64_t)vmt_unzigzag(z);
		}
	}
	uint64_t z = vmt_get_varint(c);
	if (mask & VMT_MASK_RESULT) {
		sc->result = (int64_t)(st->addr + (uint64_t)vmt_unzigzag(z));
		st->addr = (uint64_t)sc->result;
	} else {
		sc->result = vmt_unzigzag(z);
	}
	uint64_t dur = vmt_get_varint(times);
	if (times->bad)
		BAD("time section ends early");
	sc->exit_ns = ev->ts_ns + dur;
	if (sc->exit_ns < ev->ts_ns)
		BAD("syscall duration overflows");
	v = vmt_get_varint(c);
	if (v > UINT32_MAX)
		BAD("stack id out of range");
	sc->stack_id = v ? (uint32_t)(v - 1) : VMT_NONE;
	v = vmt_get_varint(c);
	if (!fits_u32(v))
		BAD("syscall flags out of range");
	sc->flags = (uint32_t)v;
	return 0;
}

static int decode_map_file(struct vmt_cursor *c, struct vmt_scratch *s,
			   struct vmt_map_file *f, const char **why)
{
	f->path = get_str(c, s);
	f->dev = vmt_get_varint(c);
	f->ino = vmt_get_varint(c);
	f->size = vmt_get_varint(c);
	uint64_t fl = vmt_get_varint(c), mode = vmt_get_varint(c);
	if (!fits_u32(fl) || !fits_u32(mode))
		BAD("map_file flags out of range");
	f->open_flags = (uint32_t)fl;
	f->mode = (uint32_t)mode;
	return 0;
}

static int decode_thread_start(struct vmt_cursor *c,
			       struct vmt_thread_start *ts, const char **why)
{
	uint64_t p = vmt_get_varint(c);
	int64_t tid = vmt_unzigzag(vmt_get_varint(c));
	if (p > VMT_MAX_THREADS || tid < INT32_MIN || tid > INT32_MAX)
		BAD("thread_start field out of range");
	ts->parent_thread = p ? (uint32_t)(p - 1) : VMT_NONE;
	ts->os_tid = (int32_t)tid;
	return 0;
}

/* thread_exit and process_exit: the exit status alone. */
static int decode_exit_status(struct vmt_cursor *c, int32_t *status,
			      const char **why)
{
	int64_t stv = vmt_unzigzag(vmt_get_varint(c));
	if (stv < INT32_MIN || stv > INT32_MAX)
		BAD("exit status out of range");
	*status = (int32_t)stv;
	return 0;
}

static int decode_process_start(struct vmt_cursor *c,
				struct vmt_process_start *ps, const char **why)
{
	uint64_t p = vmt_get_varint(c);
	int64_t pid = vmt_unzigzag(vmt_get_varint(c));
	uint64_t how = vmt_get_varint(c);
	if (p > VMT_MAX_THREADS || pid < INT32_MIN || pid > INT32_MAX ||
	    how > VMT_PROC_ATTACH)
		BAD("process_start field out of range");
	ps->parent_proc = p ? (uint32_t)(p - 1) : VMT_NONE;
	ps->os_pid = (int32_t)pid;
	ps->how = (uint32_t)how;
	return 0;
}

static int decode_exec(struct vmt_cursor *c, struct vmt_scratch *s,
		       struct vmt_exec *ex)
{
	ex->path = get_str(c, s);
	return 0;
}

static int decode_maps(struct vmt_cursor *c, struct vmt_scratch *s,
		       struct vmt_maps *m, const char **why)
{
	uint64_t n = vmt_get_varint(c);
	/* each entry costs at least 7 payload bytes */
	if (c->bad || n > (uint64_t)(c->end - c->p) / 7)
		BAD("maps entry count exceeds the record");
	if (n > VMT_MAX_MAPS_ENTRIES)
		BAD("maps entry count exceeds the limit");
	struct vmt_map_entry *e = scratch_alloc(s, n * sizeof(*e));
	if (n && !e)
		BAD("maps entry count exceeds the record");
	uint64_t prev_end = 0;
	for (uint64_t i = 0; i < n && !c->bad; i++) {
		uint64_t gap = vmt_get_varint(c), len = vmt_get_varint(c);
		e[i].start = prev_end + gap;
		e[i].end = e[i].start + len;
		if (e[i].start < prev_end || e[i].end < e[i].start)
			BAD("maps entry range overflows");
		uint64_t perms = vmt_get_varint(c);
		if (perms > 0xf)
			BAD("maps entry with unknown permission bits");
		e[i].perms = (uint32_t)perms;
		e[i].offset = vmt_get_varint(c);
		e[i].dev = vmt_get_varint(c);
		e[i].ino = vmt_get_varint(c);
		e[i].path = get_str(c, s);
		prev_end = e[i].end;
	}
	m->count = (uint32_t)n;
	m->entries = e;
	return 0;
}

static int decode_touch(struct vmt_cursor *c, struct vmt_tstate *st,
			struct vmt_scratch *s, struct vmt_touch *t,
			const char **why)
{
	t->start = st->addr + (uint64_t)vmt_unzigzag(vmt_get_varint(c));
	st->addr = t->start;
	uint64_t reason = vmt_get_varint(c), n = vmt_get_varint(c);
	if (!fits_u32(reason))
		BAD("touch reason out of range");
	t->reason = (uint32_t)reason;
	if (c->bad || n > (uint64_t)(c->end - c->p))
		BAD("touch run count exceeds the record");
	if (n > VMT_MAX_TOUCH_RUNS)
		BAD("touch run count exceeds the limit");
	struct vmt_touch_run *r = scratch_alloc(s, n * sizeof(*r));
	if (n && !r)
		BAD("touch run count exceeds the record");
	t->npages = 0;
	for (uint64_t i = 0; i < n && !c->bad; i++) {
		uint64_t v = vmt_get_varint(c);
		r[i].pages = v >> 2;
		r[i].state = (uint32_t)(v & 3);
		if (r[i].pages == 0 || r[i].pages > (1ull << 40))
			BAD("touch run length out of range");
		t->npages += r[i].pages;
	}
	t->nruns = (uint32_t)n;
	t->runs = r;
	return 0;
}

static int decode_fault(struct vmt_cursor *c, struct vmt_tstate *st,
			struct vmt_fault *f, const char **why)
{
	f->addr = st->addr + (uint64_t)vmt_unzigzag(vmt_get_varint(c));
	st->addr = f->addr;
	f->ip = st->ip + (uint64_t)vmt_unzigzag(vmt_get_varint(c));
	st->ip = f->ip;
	uint64_t a = vmt_get_varint(c);
	if (a > 7)
		BAD("unknown fault access bits");
	f->access = (uint32_t)a;
	f->flags = 0;
	return 0;
}

/* A FAULT's flags (1.3): what is left of its payload, in a file of minor
 * version 3 or later (nothing left, or an older file: none). */
static int decode_fault_flags(struct vmt_cursor *c, struct vmt_fault *f, const char **why)
{
	if (c->p == c->end)
		return 0;
	uint64_t v = vmt_get_varint(c);
	if (c->bad)
		BAD("fault flags end inside a field");
	if (v & ~(uint64_t)VMT_FLT__ALL)
		BAD("unknown fault flags");
	f->flags = (uint32_t)v;
	return 0;
}

static int decode_stack(struct vmt_cursor *c, struct vmt_scratch *s,
			struct vmt_stack *st, const char **why)
{
	uint64_t id = vmt_get_varint(c), depth = vmt_get_varint(c);
	if (!fits_u32(id) || id == VMT_NONE)
		BAD("stack id out of range");
	if (depth > VMT_MAX_STACK_DEPTH || depth > (uint64_t)(c->end - c->p))
		BAD("stack depth out of range");
	uint64_t *ips = scratch_alloc(s, depth * sizeof(*ips));
	if (depth && !ips)
		BAD("stack depth out of range");
	uint64_t prev = 0;
	for (uint64_t i = 0; i < depth; i++) {
		ips[i] = prev + (uint64_t)vmt_unzigzag(vmt_get_varint(c));
		prev = ips[i];
	}
	st->id = (uint32_t)id;
	st->depth = (uint32_t)depth;
	st->ips = ips;
	return 0;
}

static int decode_symbol(struct vmt_cursor *c, struct vmt_symbol *sy,
			 const char **why)
{
	sy->ip = vmt_get_varint(c);
	uint64_t m = vmt_get_varint(c), f = vmt_get_varint(c);
	if (m > UINT32_MAX || f > UINT32_MAX)
		BAD("symbol string id out of range");
	sy->module = m ? (uint32_t)(m - 1) : VMT_NONE;
	sy->function = f ? (uint32_t)(f - 1) : VMT_NONE;
	sy->offset = vmt_get_varint(c);
	return 0;
}

static int decode_string(struct vmt_cursor *c, struct vmt_scratch *s,
			 struct vmt_string *str, const char **why)
{
	uint64_t id = vmt_get_varint(c);
	if (!fits_u32(id) || id == VMT_NONE)
		BAD("string id out of range");
	str->id = (uint32_t)id;
	str->str = get_str(c, s);
	return 0;
}

static int decode_lost(struct vmt_cursor *c, struct vmt_lost *l,
		       const char **why)
{
	l->count = vmt_get_varint(c);
	uint64_t w = vmt_get_varint(c);
	if (!fits_u32(w))
		BAD("unknown lost-event kind");
	l->what = (uint32_t)w;
	return 0;
}

/* COUNTERS (1.2). */
static int decode_counters(struct vmt_cursor *c, struct vmt_counters *k, const char **why)
{
	uint64_t scope = vmt_get_varint(c), flags = vmt_get_varint(c);
#define GET(f) k->f = vmt_get_varint(c);
	VMT_CNT_FIELDS(GET)
#undef GET
	if (scope > VMT_CNT_EXEC)
		BAD("unknown counters scope");
	if (flags & ~(uint64_t)(VMT_CNT_TICKS | VMT_CNT_SUM))
		BAD("unknown counters flags");
	k->scope = (uint32_t)scope;
	k->flags = (uint32_t)flags;
	k->own_flt = 0;
	return 0;
}

/* COUNTERS (1.4): the recorder's own faults, when there are any. */
static int decode_counters_own(struct vmt_cursor *c, struct vmt_counters *k, const char **why)
{
	if (c->p == c->end)
		return 0;
	k->own_flt = vmt_get_varint(c);
	if (c->bad)
		BAD("counters end inside a field");
	return 0;
}

/* A SYSCALL's waits (1.2): what is left of its payload, in a file of
 * minor version 2 or later (nothing left, or an older file: none). */
static int decode_waits(struct vmt_cursor *c, struct vmt_syscall *sc, const char **why)
{
	sc->waits = sc->vcsw = sc->ivcsw = 0;
	sc->off_cpu_ns = 0;
	if (c->p == c->end)
		return 0;
	uint64_t off = vmt_get_varint(c), v = vmt_get_varint(c), iv = vmt_get_varint(c);
	if (c->bad)
		BAD("syscall waits end inside a field");
	if (v > UINT32_MAX || iv > UINT32_MAX)
		BAD("syscall context switches out of range");
	sc->waits = 1;
	sc->off_cpu_ns = off;
	sc->vcsw = (uint32_t)v;
	sc->ivcsw = (uint32_t)iv;
	return 0;
}

/* The kind's own fields (the common ones are read by the caller); 1, or
 * VMT_E_CORRUPT with *why.  A switch, not a table, so the decoders inline. */
static int decode_payload(struct vmt_cursor *c, struct vmt_cursor *times,
			  struct vmt_tstate *st, struct vmt_scratch *s,
			  struct vmt_event *ev, const char **why)
{
	int err;

	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		err = decode_syscall(c, times, st, ev, why);
		break;
	case VMT_EV_MAP_FILE:
		err = decode_map_file(c, s, &ev->u.file, why);
		break;
	case VMT_EV_THREAD_START:
		err = decode_thread_start(c, &ev->u.thread_start, why);
		break;
	case VMT_EV_THREAD_EXIT:
		err = decode_exit_status(c, &ev->u.thread_exit.status, why);
		break;
	case VMT_EV_PROCESS_START:
		err = decode_process_start(c, &ev->u.process_start, why);
		break;
	case VMT_EV_EXEC:
		err = decode_exec(c, s, &ev->u.exec);
		break;
	case VMT_EV_PROCESS_EXIT:
		err = decode_exit_status(c, &ev->u.process_exit.status, why);
		break;
	case VMT_EV_MAPS:
		err = decode_maps(c, s, &ev->u.maps, why);
		break;
	case VMT_EV_TOUCH:
		err = decode_touch(c, st, s, &ev->u.touch, why);
		break;
	case VMT_EV_FAULT:
		err = decode_fault(c, st, &ev->u.fault, why);
		break;
	case VMT_EV_STACK:
		err = decode_stack(c, s, &ev->u.stack, why);
		break;
	case VMT_EV_SYMBOL:
		err = decode_symbol(c, &ev->u.symbol, why);
		break;
	case VMT_EV_STRING:
		err = decode_string(c, s, &ev->u.string, why);
		break;
	case VMT_EV_LOST:
		err = decode_lost(c, &ev->u.lost, why);
		break;
	case VMT_EV_COUNTERS:
		err = decode_counters(c, &ev->u.counters, why);
		break;
	default:
		BAD("unknown event kind");
	}
	if (err < 0)
		return err;
	if (c->bad)
		BAD("record ends inside a field, or a string/varint is malformed");
	return 1;
}


int vmt_decode_event(struct vmt_cursor *c, struct vmt_cursor *times,
		     struct vmt_tmap *tm,
		     struct vmt_scratch *s, uint16_t minor, uint32_t page_size,
		     struct vmt_event *ev, const char **why)
{
	/* (The reader tries vmt_decode_fast() before calling this.) */
	uint64_t kind = vmt_get_varint(c);
	uint64_t plen = vmt_get_varint(c);
	if (c->bad)
		BAD("record header is malformed");
	if (plen > (uint64_t)(c->end - c->p))
		BAD("record length exceeds the chunk");
	struct vmt_cursor pc = { c->p, c->p + plen, 0 };
	c->p += plen;
	if (kind == 0 || kind >= VMT_EV__COUNT) {
		if (minor > VMT_FORMAT_MINOR && kind <= UINT32_MAX) {
			/* A kind from a newer minor version: skip it, but apply
			 * its time delta to its thread (new kinds add no other
			 * time fields), or that thread's later times drift. */
			uint64_t t = vmt_get_varint(&pc);
			uint64_t z = vmt_get_varint(times);
			if (pc.bad || t >= VMT_MAX_THREADS)
				BAD("thread index out of range");
			if (times->bad)
				BAD("time section ends early");
			struct vmt_tstate *ust = vmt_tmap_get(tm, (uint32_t)t);
			if (!ust)
				return -ENOMEM;
			ust->ts += (uint64_t)vmt_unzigzag(z);
			return 2;
		}
		BAD("unknown event kind");
	}
	ev->kind = (uint32_t)kind;
	uint64_t thread = vmt_get_varint(&pc), proc = vmt_get_varint(&pc);
	if (pc.bad || thread >= VMT_MAX_THREADS || proc >= VMT_MAX_THREADS)
		BAD("thread or process index out of range");
	ev->thread = (uint32_t)thread;
	ev->proc = (uint32_t)proc;
	struct vmt_tstate *st = vmt_tmap_get(tm, ev->thread);
	if (!st)
		return -ENOMEM;
	ev->ts_ns = st->ts + (uint64_t)vmt_unzigzag(vmt_get_varint(times));
	if (times->bad)
		BAD("time section ends early");
	st->ts = ev->ts_ns;
	if (s->head)
		vmt_scratch_reset(s);
	int err = decode_payload(&pc, times, st, s, ev, why);
	if (err < 0)
		return err;
	/* 1.2: the waits after a SYSCALL's flags (none before) */
	if (ev->kind == VMT_EV_SYSCALL &&
	    (decode_waits(minor >= 2 ? &pc : &(struct vmt_cursor){ pc.end, pc.end, 0 }, &ev->u.sc,
			  why) ||
	     vmt_sc_waits_check(&ev->u.sc, ev->ts_ns, why)))
		return VMT_E_CORRUPT;
	/* 1.3: the flags after a FAULT's access (none before) */
	if (ev->kind == VMT_EV_FAULT && minor >= 3 && decode_fault_flags(&pc, &ev->u.fault, why))
		return VMT_E_CORRUPT;
	/* 1.4: the recorder's own faults after a COUNTERS's numbers */
	if (ev->kind == VMT_EV_COUNTERS && minor >= 4 &&
	    decode_counters_own(&pc, &ev->u.counters, why))
		return VMT_E_CORRUPT;
	/* Trailing payload bytes are fields of a newer minor version. */
	if (pc.p != pc.end && minor <= VMT_FORMAT_MINOR)
		BAD("record has trailing bytes");
	if (ev->kind == VMT_EV_SYSCALL) {
		/* The common case, checked here rather than by the generic
		 * check (decode_payload checked nargs and the ranges). */
		const struct vmt_syscall *sc = &ev->u.sc;
		if (sc->op == 0 || sc->op >= VMT_OP__COUNT) {
			if (minor > VMT_FORMAT_MINOR && sc->op)
				return 2; /* an op from a newer minor version */
			BAD("unknown syscall op");
		}
		if (sc->flags & ~(VMT_SC_NO_RESULT | VMT_SC_REWRITTEN))
			BAD("unknown syscall flags");
		if (sc->result < -4095 &&
		    vmt_op_info(sc->op)->ret != VMT_RET_ADDR)
			BAD("syscall result is neither a value nor an errno");
		return 1;
	}
	err = vmt_event_check_ps(ev, page_size, why);
	return err < 0 ? err : 1;
}
