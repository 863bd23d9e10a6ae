/*
 * rewrite.c - the rewrite engine: the chain of stages, the queues of held
 * events, and helpers the rules share.  The rules and their list:
 * rules.c.
 *
 * Why a queue per stage: a rule often cannot decide on an event until it
 * has seen later ones (prot-none-free keeps the mmap(PROT_NONE) until it
 * knows whether the range is enabled again; populate keeps an mmap until
 * it knows whether all its pages were touched).  Other threads' events
 * keep arriving meanwhile and must come out in their recorded order after
 * it, so everything behind a held event waits as a deep copy (the reader's
 * strings and arrays are only valid until its next read).  When nothing is
 * held, events pass through without a copy.
 *
 * The queue is bounded (RW_MAX_QUEUE events, RW_MAX_QBYTES bytes): past
 * that, the rule must decide on its oldest held event at once, which it
 * does conservatively (usually: leave it unchanged).  The counts report
 * how often that happened.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rewrite_int.h"

#define RW_MAX_QUEUE (1u << 17)
#define RW_MAX_QBYTES ((size_t)128 << 20)

struct van_rewrite {
	unsigned nst;
	vmt_symtab *syms;      /* the input's stacks and symbols (call sites) */
	van_asmodel *min, *mout; /* both sides, for the counts' in and out */
	struct rw_stage st[RW_MAX_RULES];
	struct van_rewrite_count count[RW_MAX_RULES];
	struct van_rewrite_counts c;
	char list[VAN_REWRITE_MAX_LIST];
	uint32_t page_size;
	int zero_page; /* the recording kernel's (vmt_header_zero_page) */
	int started, finished, err;
	van_rewrite_emit_fn emit;
	void *arg;
};

van_rewrite *rw_engine_new(const struct rw_rule *const *r, unsigned n, char *err, size_t errlen)
{
	if (n > RW_MAX_RULES) {
		vmt_errf(err, errlen, -EINVAL, "more than %d rewrite rules", RW_MAX_RULES);
		return NULL;
	}
	van_rewrite *rw = calloc(1, sizeof(*rw));
	if (!rw) {
		vmt_errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	rw->page_size = 4096;
	rw->zero_page = 1;
	if (!(rw->syms = vmt_symtab_new())) {
		free(rw);
		vmt_errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	rw->nst = n;
	rw->c.nrules = n;
	rw->c.rules = rw->count;
	for (unsigned i = 0; i < n; i++) {
		struct rw_stage *s = &rw->st[i];
		s->rw = rw;
		s->index = i;
		s->rule = r[i];
		s->count = &rw->count[i];
		cs_tally_init(&s->sites);
		rw->count[i].name = r[i]->name;
		s->st = r[i]->create(s);
		if (!s->st) {
			rw->nst = i; /* free only what was made */
			van_rewrite_free(rw);
			vmt_errf(err, errlen, -ENOMEM, "out of memory");
			return NULL;
		}
		snprintf(rw->list + strlen(rw->list), sizeof(rw->list) - strlen(rw->list), "%s%s",
			 i ? "," : "", r[i]->name);
	}
	return rw;
}

const char *van_rewrite_list(const van_rewrite *rw)
{
	return rw->list;
}

int van_rewrite_start(van_rewrite *rw, const struct vmt_header *h)
{
	if (rw->started)
		return VMT_E_STATE;
	uint32_t ps = h && h->page_size ? h->page_size : 4096;
	if (ps & (ps - 1))
		return -EINVAL;
	rw->page_size = ps;
	rw->zero_page = vmt_header_zero_page(h);
	for (unsigned i = 0; i < rw->nst; i++) {
		struct rw_stage *s = &rw->st[i];
		int rc = h && s->rule->start ? s->rule->start(s, h) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* Models are made at the first push, when the page size is known. */
static int begin(van_rewrite *rw)
{
	rw->started = 1;
	if (!(rw->min = van_asmodel_new(rw->page_size)) || !(rw->mout = van_asmodel_new(rw->page_size)))
		return -ENOMEM;
	van_asmodel_set_zero_page(rw->min, rw->zero_page);
	van_asmodel_set_zero_page(rw->mout, rw->zero_page);
	for (unsigned i = 0; i < rw->nst; i++) {
		struct rw_stage *s = &rw->st[i];
		s->page_mask = rw->page_size - 1;
		if (s->rule->needs_model && !(s->model = van_asmodel_new(rw->page_size)))
			return -ENOMEM;
		if (s->model)
			van_asmodel_set_zero_page(s->model, rw->zero_page);
	}
	return 0;
}

void van_rewrite_free(van_rewrite *rw)
{
	if (!rw)
		return;
	for (unsigned i = 0; i < rw->nst; i++) {
		struct rw_stage *s = &rw->st[i];
		if (s->st && s->rule->destroy)
			s->rule->destroy(s->st);
		van_asmodel_free(s->model);
		cs_tally_free(&s->sites);
		for (size_t k = 0; k < s->qlen; k++)
			free(s->q[(s->qhead + k) % s->qcap].ev);
		free(s->q);
	}
	vmt_symtab_free(rw->syms);
	van_asmodel_free(rw->min);
	van_asmodel_free(rw->mout);
	free(rw);
}

const struct van_rewrite_counts *van_rewrite_counts(const van_rewrite *rw)
{
	return &rw->c;
}

/* ---- event copies ------------------------------------------------------- */

static size_t str_bytes(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Bytes beyond the struct that ev points to. */
static size_t extra_bytes(const struct vmt_event *ev)
{
	size_t n = 0;
	switch (ev->kind) {
	case VMT_EV_MAP_FILE: return str_bytes(ev->u.file.path);
	case VMT_EV_EXEC: return str_bytes(ev->u.exec.path);
	case VMT_EV_STRING: return str_bytes(ev->u.string.str);
	case VMT_EV_TOUCH: return (size_t)ev->u.touch.nruns * sizeof(struct vmt_touch_run);
	case VMT_EV_STACK: return (size_t)ev->u.stack.depth * sizeof(uint64_t);
	case VMT_EV_MAPS:
		n = (size_t)ev->u.maps.count * sizeof(struct vmt_map_entry);
		for (uint32_t i = 0; i < ev->u.maps.count; i++)
			n += str_bytes(ev->u.maps.entries[i].path);
		return n;
	default: return 0;
	}
}

static char *put_str(char **p, const char *s)
{
	if (!s)
		return NULL;
	char *d = *p;
	size_t n = strlen(s) + 1;
	memcpy(d, s, n);
	*p += n;
	return d;
}

/* One allocation holding the event and everything it points to (arrays
 * first, so they stay aligned). */
static struct vmt_event *dup_event(const struct vmt_event *ev, size_t *bytes)
{
	size_t n = sizeof(*ev) + extra_bytes(ev);
	struct vmt_event *c = malloc(n);
	if (!c)
		return NULL;
	*c = *ev;
	char *p = (char *)(c + 1);
	switch (ev->kind) {
	case VMT_EV_MAP_FILE: c->u.file.path = put_str(&p, ev->u.file.path); break;
	case VMT_EV_EXEC: c->u.exec.path = put_str(&p, ev->u.exec.path); break;
	case VMT_EV_STRING: c->u.string.str = put_str(&p, ev->u.string.str); break;
	case VMT_EV_TOUCH:
		if (ev->u.touch.nruns) {
			memcpy(p, ev->u.touch.runs, ev->u.touch.nruns * sizeof(struct vmt_touch_run));
			c->u.touch.runs = (const struct vmt_touch_run *)p;
		}
		break;
	case VMT_EV_STACK:
		if (ev->u.stack.depth) {
			memcpy(p, ev->u.stack.ips, ev->u.stack.depth * sizeof(uint64_t));
			c->u.stack.ips = (const uint64_t *)p;
		}
		break;
	case VMT_EV_MAPS:
		if (ev->u.maps.count) {
			struct vmt_map_entry *e = (struct vmt_map_entry *)p;
			memcpy(e, ev->u.maps.entries, ev->u.maps.count * sizeof(*e));
			p += ev->u.maps.count * sizeof(*e);
			for (uint32_t i = 0; i < ev->u.maps.count; i++)
				e[i].path = put_str(&p, ev->u.maps.entries[i].path);
			c->u.maps.entries = e;
		}
		break;
	default: break;
	}
	*bytes = n;
	return c;
}

/* ---- stages and queues -------------------------------------------------- */

static int stage_input(struct rw_stage *s, const struct vmt_event *ev);

/* To the next stage, or out. */
static int forward(struct rw_stage *s, const struct vmt_event *ev)
{
	van_rewrite *rw = s->rw;
	if (s->index + 1 < rw->nst)
		return stage_input(&rw->st[s->index + 1], ev);
	int rc = rw->emit(rw->arg, ev);
	if (rc < 0)
		return rc;
	rw->c.events_out++;
	return rw_calls_apply(rw->mout, &rw->c.out, ev, rw->page_size);
}

static int enqueue(struct rw_stage *s, const struct vmt_event *ev, int held, uint64_t *seq)
{
	if (s->qlen == s->qcap) {
		size_t ncap = s->qcap ? 2 * s->qcap : 64;
		struct rw_qent *n = malloc(ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t k = 0; k < s->qlen; k++)
			n[k] = s->q[(s->qhead + k) % s->qcap];
		free(s->q);
		s->q = n;
		s->qcap = ncap;
		s->qhead = 0;
	}
	struct rw_qent *e = &s->q[(s->qhead + s->qlen) % s->qcap];
	e->ev = dup_event(ev, &e->bytes);
	if (!e->ev)
		return -ENOMEM;
	e->held = (uint8_t)held;
	e->drop = 0;
	if (seq)
		*seq = s->qseq + s->qlen;
	s->qlen++;
	s->qbytes += e->bytes;
	s->nheld += held != 0;
	if (s->qlen > s->rw->c.max_held)
		s->rw->c.max_held = s->qlen;
	return 0;
}

/* Pass on the events at the front that wait for nothing. */
static int flush(struct rw_stage *s)
{
	while (s->qlen && !s->q[s->qhead].held) {
		struct rw_qent e = s->q[s->qhead];
		s->q[s->qhead].ev = NULL;
		s->qhead = (s->qhead + 1) % s->qcap;
		s->qlen--;
		s->qseq++;
		s->qbytes -= e.bytes;
		int rc = e.drop ? 0 : forward(s, e.ev);
		free(e.ev);
		if (rc)
			return rc;
	}
	return 0;
}

int rw_emit(struct rw_stage *s, const struct vmt_event *ev)
{
	if (!s->qlen)
		return forward(s, ev);
	return enqueue(s, ev, 0, NULL);
}

int rw_hold(struct rw_stage *s, const struct vmt_event *ev, uint64_t *seq)
{
	return enqueue(s, ev, 1, seq);
}

static struct rw_qent *qent(struct rw_stage *s, uint64_t seq)
{
	if (seq < s->qseq || seq - s->qseq >= s->qlen)
		return NULL;
	struct rw_qent *e = &s->q[(s->qhead + (seq - s->qseq)) % s->qcap];
	return e->held ? e : NULL;
}

struct vmt_event *rw_held(struct rw_stage *s, uint64_t seq)
{
	struct rw_qent *e = qent(s, seq);
	return e ? e->ev : NULL;
}

int rw_release(struct rw_stage *s, uint64_t seq, int drop)
{
	struct rw_qent *e = qent(s, seq);
	if (!e)
		return VMT_E_STATE;
	e->held = 0;
	e->drop = (uint8_t)(drop != 0);
	s->nheld--;
	return flush(s);
}

static int stage_input(struct rw_stage *s, const struct vmt_event *ev)
{
	s->in++;
	int rc = s->rule->event(s, ev);
	if (!rc && s->model)
		rc = van_asmodel_apply(s->model, ev);
	/* Bounded look-ahead: the rule decides on its oldest held event
	 * now.  The front of the queue is held (else it would have been
	 * passed on). */
	while (!rc && s->nheld && (s->qlen > RW_MAX_QUEUE || s->qbytes > RW_MAX_QBYTES)) {
		uint64_t front = s->qseq;
		s->rw->c.overflows++;
		rc = s->rule->overflow(s, front);
		if (!rc && s->qlen && s->qseq == front)
			rc = VMT_E_STATE; /* the rule did not let it go: a bug */
	}
	return rc;
}

static void set_emit(van_rewrite *rw, van_rewrite_emit_fn emit, void *arg)
{
	rw->emit = emit;
	rw->arg = arg;
}

int van_rewrite_push(van_rewrite *rw, const struct vmt_event *ev, van_rewrite_emit_fn emit,
		     void *arg)
{
	if (rw->err)
		return rw->err;
	if (rw->finished)
		return VMT_E_STATE;
	set_emit(rw, emit, arg);
	int rc = rw->started ? 0 : begin(rw);
	rw->c.events_in++;
	/* A bad table entry only costs call-site names. */
	if (!rc && (ev->kind == VMT_EV_STACK || ev->kind == VMT_EV_SYMBOL ||
		    ev->kind == VMT_EV_STRING) && vmt_symtab_add(rw->syms, ev) == -ENOMEM)
		rc = -ENOMEM;
	if (!rc)
		rc = rw_calls_apply(rw->min, &rw->c.in, ev, rw->page_size);
	if (!rc)
		rc = rw->nst ? stage_input(&rw->st[0], ev) : forward(&rw->st[0], ev);
	if (rc)
		rw->err = rc;
	return rc;
}

_Static_assert(sizeof(((struct van_rewrite_site *)0)->site) == CS_SITE_TEXT, "site text sizes");

/* The call sites of stage s's applications, into its counts. */
static int name_sites(van_rewrite *rw, struct rw_stage *s)
{
	struct cs_site site[VAN_REWRITE_MAX_SITES];
	struct van_rewrite_count *c = s->count;
	int n = cs_tally_sites(&s->sites, rw->syms, site, VAN_REWRITE_MAX_SITES, &c->sites_rest);
	if (n < 0)
		return n;
	c->nsites = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		memcpy(c->sites[i].site, site[i].text, sizeof(c->sites[i].site));
		c->sites[i].calls = site[i].calls;
	}
	c->sites_rest += c->applied - s->sites.total;
	return 0;
}

int van_rewrite_finish(van_rewrite *rw, van_rewrite_emit_fn emit, void *arg)
{
	if (rw->err)
		return rw->err;
	if (rw->finished)
		return VMT_E_STATE;
	set_emit(rw, emit, arg);
	int rc = rw->started ? 0 : begin(rw);
	/* In list order: what a stage lets go may still be held by the
	 * next one, which decides when its own turn comes. */
	for (unsigned i = 0; !rc && i < rw->nst; i++) {
		struct rw_stage *s = &rw->st[i];
		if (s->rule->finish)
			rc = s->rule->finish(s);
		if (!rc && s->nheld)
			rc = VMT_E_STATE; /* a rule kept something: a bug */
		if (!rc)
			rc = flush(s);
		if (!rc)
			rc = name_sites(rw, s);
	}
	rw->finished = 1;
	if (rc)
		rw->err = rc;
	return rc;
}

/* ---- helpers for rules -------------------------------------------------- */

int rw_model_range(const struct rw_stage *s, uint32_t proc, uint64_t a, uint64_t b,
		   uint32_t prot, uint32_t bad)
{
	uint64_t at = a;
	bad |= VAN_VMA_SHARED | VAN_VMA_FILE;
	if (a >= b)
		return 0;
	for (const struct van_vma *v = van_asmodel_first(s->model, proc, a); v && v->start < b;
	     v = van_asmodel_next(s->model, proc, v)) {
		if (v->start > at)
			return 0; /* a hole */
		if ((prot != UINT32_MAX && v->prot != prot) || (v->flags & bad) || v->pkey ||
		    v->dev || v->ino)
			return 0;
		at = v->end;
		if (at >= b)
			return 1;
	}
	return 0;
}

struct rw_stale rw_stale_of(const struct vmt_event *ev)
{
	struct rw_stale st = { RW_STALE_NONE, ev->proc, VMT_NONE };
	switch (ev->kind) {
	case VMT_EV_EXEC:
	case VMT_EV_PROCESS_EXIT:
	case VMT_EV_MAPS:
		st.kind = RW_STALE_GONE;
		break;
	case VMT_EV_LOST:
		if (ev->u.lost.what != VMT_LOST_FAULTS) {
			/* (fault samples lost are observations lost, not
			 * changes to a space made unseen) */
			st.kind = RW_STALE_GONE;
			st.proc = VMT_NONE;
		}
		break;
	case VMT_EV_PROCESS_START: {
		const struct vmt_process_start *ps = &ev->u.process_start;
		if (ps->how == VMT_PROC_ROOT || ps->how == VMT_PROC_ATTACH)
			break; /* a process without a parent in the trace */
		st.kind = ps->how == VMT_PROC_VFORK ? RW_STALE_VFORK : RW_STALE_FORK;
		st.proc = ps->parent_proc;
		st.child = ev->proc;
		break;
	}
	default:
		break;
	}
	return st;
}

int rw_applied(struct rw_stage *s, const struct vmt_event *ev)
{
	s->count->applied++;
	return cs_tally_add(&s->sites, ev->u.sc.stack_id, ev->u.sc.op, 1);
}

void rw_detail(struct rw_stage *s, const char *what, uint64_t n)
{
	struct van_rewrite_count *c = s->count;
	if (c->ndetails < VAN_REWRITE_MAX_DETAILS) {
		c->details[c->ndetails].what = what;
		c->details[c->ndetails++].n = n;
	}
}

void rw_note(struct rw_stage *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->note, sizeof(s->note), fmt, ap);
	va_end(ap);
	s->count->note = s->note;
}

void rw_make_sc(struct vmt_event *out, const struct vmt_event *ev, uint32_t op,
		const uint64_t *args, int64_t result)
{
	const struct vmt_op_info *oi = vmt_op_info(op);
	*out = *ev;
	struct vmt_syscall *sc = &out->u.sc;
	sc->op = op;
	sc->nargs = oi ? oi->nargs : 0;
	memset(sc->args, 0, sizeof(sc->args));
	memcpy(sc->args, args, sc->nargs * sizeof(uint64_t));
	sc->result = result;
	if (sc->flags & VMT_SC_NO_RESULT)
		sc->exit_ns = out->ts_ns;
	sc->flags = (sc->flags & ~VMT_SC_NO_RESULT) | VMT_SC_REWRITTEN;
}
