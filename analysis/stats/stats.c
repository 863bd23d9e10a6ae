/*
 * stats.c - summary metrics of a trace (see stats.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asmodel.h"
#include "stats.h"
#include "vmtutil.h"

struct stack_count {
	uint64_t count, errors;
	uint64_t op_count[VMT_OP__COUNT];
};

struct van_stats_priv {
	van_asmodel *model;
	vmt_symtab *syms;
	uint64_t page;
	struct stack_count *stacks; /* indexed by stack id */
	size_t nstacks;
	char **strs; /* exec paths we own */
	uint32_t nstrs;
};

int van_stats_init(struct van_stats *s, const struct vmt_header *h)
{
	memset(s, 0, sizeof(*s));
	s->priv = calloc(1, sizeof(*s->priv));
	if (!s->priv)
		return -ENOMEM;
	uint32_t page = h && h->page_size && !(h->page_size & (h->page_size - 1)) ? h->page_size : 4096;
	s->priv->model = van_asmodel_for(h);
	s->priv->page = page;
	s->priv->syms = vmt_symtab_new();
	if (!s->priv->model || !s->priv->syms) {
		van_stats_free(s);
		return -ENOMEM;
	}
	s->start_ns = h ? h->start_mono_ns : 0;
	return 0;
}

void van_stats_free(struct van_stats *s)
{
	if (!s)
		return;
	if (s->priv) {
		van_asmodel_free(s->priv->model);
		vmt_symtab_free(s->priv->syms);
		free(s->priv->stacks);
		for (uint32_t i = 0; i < s->priv->nstrs; i++)
			free(s->priv->strs[i]);
		free(s->priv->strs);
		free(s->priv);
	}
	for (uint32_t i = 0; i < s->nsites; i++)
		free(s->sites[i].name);
	free(s->sites);
	free(s->advice);
	free(s->procs);
	free(s->thread);
	memset(s, 0, sizeof(*s));
}

/* The first event of a process or thread: its entry made (the slow
 * path of proc_of() and thread_of(), which run for every event). */
static __attribute__((noinline)) struct van_proc_stats *proc_new(struct van_stats *s, uint32_t p)
{
	size_t n = s->nprocs;
	if (p >= VMT_MAX_THREADS)
		return NULL;
	if (p >= n && vmt_grow(&s->procs, &s->nprocs, (size_t)p + 1, sizeof(*s->procs)))
		return NULL;
	struct van_proc_stats *ps = &s->procs[p];
	if (!ps->seen) {
		ps->seen = 1;
		ps->parent = VMT_NONE;
		ps->path = "";
		s->processes++;
	}
	return ps;
}

static inline struct van_proc_stats *proc_of(struct van_stats *s, uint32_t p)
{
	if (p < s->nprocs && s->procs[p].seen)
		return &s->procs[p];
	return proc_new(s, p);
}

static __attribute__((noinline)) struct van_thread_stats *thread_new(struct van_stats *s, uint32_t t,
								     uint32_t p)
{
	if (t >= VMT_MAX_THREADS)
		return NULL;
	if (t >= s->nthreads && vmt_grow(&s->thread, &s->nthreads, (size_t)t + 1, sizeof(*s->thread)))
		return NULL;
	struct van_thread_stats *ts = &s->thread[t];
	if (!ts->seen) {
		ts->seen = 1;
		ts->proc = p;
		s->threads++;
	}
	return ts;
}

static inline struct van_thread_stats *thread_of(struct van_stats *s, uint32_t t, uint32_t p)
{
	if (t < s->nthreads && s->thread[t].seen)
		return &s->thread[t];
	return thread_new(s, t, p);
}

static struct van_op_stats *advice_of(struct van_stats *s, uint64_t adv)
{
	uint32_t lo = 0, hi = s->nadvice;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (s->advice[mid].advice < adv)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->nadvice && s->advice[lo].advice == adv)
		return &s->advice[lo].s;
	struct van_advice_stats *n = realloc(s->advice, (s->nadvice + 1) * sizeof(*n));
	if (!n)
		return NULL;
	memmove(n + lo + 1, n + lo, (s->nadvice - lo) * sizeof(*n));
	memset(&n[lo], 0, sizeof(n[lo]));
	n[lo].advice = adv;
	s->advice = n;
	s->nadvice++;
	return &n[lo].s;
}

static uint64_t rel(const struct van_stats *s, uint64_t ts)
{
	return ts > s->start_ns ? ts - s->start_ns : 0;
}

/* Bytes an op addressed (successful calls only); brk/shmat/shmdt get the
 * size of the change from the model. */
static uint64_t op_bytes(const struct vmt_syscall *sc, const struct van_as_effect *fx)
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	if (!oi) /* an op of a newer format version */
		return sc->args[1];
	switch (oi->range) {
	case VMT_RANGE_REMAP:
		return sc->args[2]; /* the new size */
	case VMT_RANGE_BREAK: case VMT_RANGE_SEGMENT:
		return (uint64_t)(fx->d_mapped < 0 ? -fx->d_mapped : fx->d_mapped);
	case VMT_RANGE_ARGS: case VMT_RANGE_MAP:
		return sc->args[oi->len_arg];
	default: /* the whole address space, or ranges not recorded */
		return 0;
	}
}

static int add_syscall(struct van_stats *s, const struct vmt_event *ev,
		       struct van_proc_stats *ps, struct van_thread_stats *ts)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	uint32_t op = sc->op < VMT_OP__COUNT ? sc->op : 0;
	int err = !(sc->flags & VMT_SC_NO_RESULT) && sc->result < 0;
	struct van_op_stats *o = &s->ops[op];
	const struct van_as_effect *fx = van_asmodel_last(s->priv->model);

	s->syscalls++;
	o->count++;
	if (err) {
		o->errors++;
		s->errors++;
	} else if (!(sc->flags & VMT_SC_NO_RESULT)) {
		o->bytes += op_bytes(sc, fx);
	}
	if (sc->exit_ns > ev->ts_ns && !(sc->flags & VMT_SC_NO_RESULT))
		o->time_ns += sc->exit_ns - ev->ts_ns;
	if (op == VMT_OP_MADVISE) {
		struct van_op_stats *a = advice_of(s, sc->args[2]);
		if (!a)
			return -ENOMEM;
		a->count++;
		if (err)
			a->errors++;
		else
			a->bytes += sc->args[1];
	}
	ps->ops++, ts->ops++;
	if (err)
		ps->errors++, ts->errors++;
	if (sc->stack_id != VMT_NONE) {
		struct van_stats_priv *p = s->priv;
		s->has_stacks = 1;
		if (sc->stack_id >= (1u << 26))
			return VMT_E_CORRUPT;
		if (sc->stack_id >= p->nstacks &&
		    vmt_grow(&p->stacks, &p->nstacks, (size_t)sc->stack_id + 1, sizeof(*p->stacks)))
			return -ENOMEM;
		struct stack_count *c = &p->stacks[sc->stack_id];
		c->count++;
		c->op_count[op]++;
		if (err)
			c->errors++;
	}
	return 0;
}

static void update_peaks(struct van_stats *s, const struct vmt_event *ev, struct van_proc_stats *ps)
{
	struct van_as_counts c;
	van_asmodel_counts(s->priv->model, ev->proc, &c);
	if (ps) {
		if (c.vmas > ps->peak_vmas)
			ps->peak_vmas = c.vmas;
		if (c.mapped_bytes > ps->peak_mapped_bytes)
			ps->peak_mapped_bytes = c.mapped_bytes;
		if (c.locked_bytes > ps->peak_locked_bytes)
			ps->peak_locked_bytes = c.locked_bytes;
	}
	if (c.vmas > s->peak_vmas)
		s->peak_vmas = c.vmas, s->peak_vmas_ns = rel(s, ev->ts_ns);
	if (c.mapped_bytes > s->peak_mapped_bytes)
		s->peak_mapped_bytes = c.mapped_bytes, s->peak_mapped_ns = rel(s, ev->ts_ns);
	if (c.locked_bytes > s->peak_locked_bytes)
		s->peak_locked_bytes = c.locked_bytes, s->peak_locked_ns = rel(s, ev->ts_ns);
}

/* Present pages, split into file pages (page cache: how many are mapped
 * depends on the cache and on fault-around, not only on the program) and
 * the others (anonymous or written). */
static void add_touch(struct van_stats *s, const struct vmt_event *ev)
{
	uint64_t a = ev->u.touch.start, ps = s->priv->page;
	for (uint32_t i = 0; i < ev->u.touch.nruns; i++) {
		const struct vmt_touch_run *r = &ev->u.touch.runs[i];
		uint64_t b = a + r->pages * ps;
		if (r->state != VMT_PAGE_ABSENT) {
			uint64_t file = 0;
			s->touched_pages += r->pages;
			if (r->state == VMT_PAGE_WRITTEN)
				s->touched_written_pages += r->pages;
			else
				for (const struct van_vma *v = van_asmodel_first(s->priv->model, ev->proc, a);
				     v && v->start < b; v = van_asmodel_next(s->priv->model, ev->proc, v))
					if (v->flags & VAN_VMA_FILE)
						file += ((v->end < b ? v->end : b) - (v->start > a ? v->start : a)) / ps;
			s->touched_file_pages += file;
		}
		a = b;
	}
}

static const char *own(struct van_stats *s, const char *str)
{
	struct van_stats_priv *p = s->priv;
	char **n = realloc(p->strs, (p->nstrs + 1) * sizeof(*n));
	if (!n)
		return "";
	p->strs = n;
	if (!(n[p->nstrs] = strdup(str ? str : "")))
		return "";
	return n[p->nstrs++];
}

int van_stats_add(struct van_stats *s, const struct vmt_event *ev)
{
	int rc = 0;
	if (!s->events)
		s->first_ns = ev->ts_ns;
	if (ev->ts_ns > s->last_ns)
		s->last_ns = ev->ts_ns;
	s->events++;
	if (ev->kind < VMT_EV__COUNT)
		s->by_kind[ev->kind]++;

	if (van_asmodel_apply(s->priv->model, ev))
		return -ENOMEM;

	/* The thread and process of every event count as seen.  (Their
	 * entries stay where they are below: no other entry is added.) */
	struct van_proc_stats *eps = NULL;
	struct van_thread_stats *ets = NULL;
	if (ev->kind != VMT_EV_STACK && ev->kind != VMT_EV_SYMBOL && ev->kind != VMT_EV_STRING) {
		if (!(eps = proc_of(s, ev->proc)) || !(ets = thread_of(s, ev->thread, ev->proc)))
			return -ENOMEM;
	}
	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		rc = add_syscall(s, ev, eps, ets);
		break;
	case VMT_EV_PROCESS_START: {
		struct van_proc_stats *ps = proc_of(s, ev->proc);
		if (!ps)
			return -ENOMEM;
		ps->pid = ev->u.process_start.os_pid;
		ps->parent = ev->u.process_start.parent_proc;
		/* A forked child runs its parent's program until it execs
		 * (vmtrace export names it so too). */
		if (ps->parent < s->nprocs && s->procs[ps->parent].path)
			ps->path = s->procs[ps->parent].path;
		break;
	}
	case VMT_EV_THREAD_START: {
		struct van_thread_stats *ts = thread_of(s, ev->thread, ev->proc);
		if (!ts || !proc_of(s, ev->proc))
			return -ENOMEM;
		ts->tid = ev->u.thread_start.os_tid;
		break;
	}
	case VMT_EV_EXEC: {
		struct van_proc_stats *ps = proc_of(s, ev->proc);
		if (!ps)
			return -ENOMEM;
		ps->path = own(s, ev->u.exec.path);
		break;
	}
	case VMT_EV_PROCESS_EXIT: {
		struct van_proc_stats *ps = proc_of(s, ev->proc);
		if (!ps)
			return -ENOMEM;
		ps->exited = 1;
		ps->exit_status = ev->u.process_exit.status;
		break;
	}
	case VMT_EV_TOUCH:
		add_touch(s, ev);
		break;
	case VMT_EV_FAULT:
		s->faults++;
		if (ev->u.fault.access & VMT_FAULT_EXEC)
			s->faults_exec++;
		else if (ev->u.fault.access & VMT_FAULT_WRITE)
			s->faults_write++;
		else if (ev->u.fault.access & VMT_FAULT_READ)
			s->faults_read++;
		else
			s->faults_other++;
		break;
	case VMT_EV_LOST:
		if (ev->u.lost.what == VMT_LOST_FAULTS)
			s->lost_faults += ev->u.lost.count;
		else
			s->lost_events += ev->u.lost.count;
		break;
	case VMT_EV_STACK: case VMT_EV_SYMBOL: case VMT_EV_STRING:
		rc = vmt_symtab_add(s->priv->syms, ev);
		break;
	default:
		break;
	}
	if (van_asmodel_last(s->priv->model)->changed)
		update_peaks(s, ev, eps);
	return rc;
}

/* ---- call sites --------------------------------------------------------- */

/* The C library, the loader and the threads library are where every
 * memory call ends up; the interesting frame is the first one above. */
static int runtime_module(const char *mod)
{
	static const char *const names[] = { "libc.so", "libc-", "ld-linux", "ld-musl", "libc.musl",
					      "libpthread", "ld64.so", "libdl" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(mod, names[i], strlen(names[i])) == 0)
			return 1;
	return 0;
}

/* Name one frame without addresses: "func (module)", or "module+0xoff"
 * (stable across ASLR), or "0xip".  *runtime says whether it is inside the
 * C runtime. */
static void frame_name(const vmt_symtab *t, uint64_t ip, struct vmt_buf *out, int *runtime)
{
	uint64_t off = 0;
	const char *func = vmt_symtab_function(t, ip);
	const char *mod = vmt_symtab_module(t, ip, &off);
	const char *slash;

	if (mod && (slash = strrchr(mod, '/')) && slash[1])
		mod = slash + 1;
	*runtime = mod ? runtime_module(mod) : 0;
	if (func)
		vmt_buf_printf(out, mod ? "%s (%s)" : "%s", func, mod);
	else if (mod)
		vmt_buf_printf(out, "%s+%#llx", mod, (unsigned long long)off);
	else
		vmt_buf_printf(out, "%#llx", (unsigned long long)ip);
}

static int site_cmp(const void *a, const void *b)
{
	const struct van_site *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

int van_stats_finish(struct van_stats *s)
{
	struct van_stats_priv *p = s->priv;
	struct vmt_buf name = { 0 };
	int rc = 0;
	s->duration_ns = s->last_ns > s->first_ns ? s->last_ns - s->first_ns : 0;
	s->model_inexact = van_asmodel_inexact(p->model);
	for (uint32_t id = 0; id < p->nstacks && !rc; id++) {
		struct stack_count *c = &p->stacks[id];
		if (!c->count)
			continue;
		uint32_t depth = 0;
		const uint64_t *ips = vmt_symtab_stack(p->syms, id, &depth);
		vmt_buf_reset(&name);
		if (!ips || !depth) {
			vmt_buf_printf(&name, "(stack #%u)", id);
		} else {
			int runtime = 1;
			for (uint32_t i = 0; i < depth && runtime; i++) {
				vmt_buf_reset(&name);
				frame_name(p->syms, ips[i], &name, &runtime);
			}
			if (runtime) { /* all inside the runtime: the leaf */
				vmt_buf_reset(&name);
				frame_name(p->syms, ips[0], &name, &runtime);
			}
		}
		if (name.oom) {
			rc = -ENOMEM;
			break;
		}
		/* Merge stacks with the same site (linear: sites are few). */
		struct van_site *site = NULL;
		for (uint32_t i = 0; i < s->nsites && !site; i++)
			if (strcmp(s->sites[i].name, name.data) == 0)
				site = &s->sites[i];
		if (!site) {
			struct van_site *n = realloc(s->sites, (s->nsites + 1) * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			s->sites = n;
			site = &n[s->nsites];
			memset(site, 0, sizeof(*site));
			if (!(site->name = strdup(name.data))) {
				rc = -ENOMEM;
				break;
			}
			s->nsites++;
		}
		site->count += c->count;
		site->errors += c->errors;
		for (uint32_t op = 0; op < VMT_OP__COUNT; op++)
			site->op_count[op] += c->op_count[op];
	}
	vmt_buf_free(&name);
	if (s->nsites)
		qsort(s->sites, s->nsites, sizeof(*s->sites), site_cmp);
	return rc;
}

int van_stats_read(struct van_stats *s, vmt_reader *r)
{
	const struct vmt_event *ev;
	int rc, err = van_stats_init(s, vmt_reader_header(r));
	if (err)
		return err;
	/* (Without a copy of each event: the events are the consumer
	 * thread's hot path.) */
	while ((rc = vmt_reader_next_ref(r, &ev)) == 1) {
		err = van_stats_add(s, ev);
		if (err == -ENOMEM)
			return err;
	}
	err = van_stats_finish(s);
	return rc < 0 ? rc : err;
}

/* ---- metrics ------------------------------------------------------------ */

const char *van_advice_name(uint64_t advice, char *buf, size_t len)
{
	for (const struct vmt_flag_name *f = vmt_madv_names; f->name; f++)
		if (f->value == advice)
			return f->name;
	snprintf(buf, len, "MADV_%llu", (unsigned long long)advice);
	return buf;
}

struct mlist {
	struct van_metric *m;
	size_t n, cap;
	int oom;
};

static void put(struct mlist *l, double v, uint32_t flags, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(struct mlist *l, double v, uint32_t flags, const char *fmt, ...)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 128;
		struct van_metric *n = realloc(l->m, cap * sizeof(*n));
		if (!n) {
			l->oom = 1;
			return;
		}
		l->m = n;
		l->cap = cap;
	}
	struct van_metric *m = &l->m[l->n++];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->name, sizeof(m->name), fmt, ap);
	va_end(ap);
	m->value = v;
	m->flags = flags;
}

struct van_metric *van_stats_metrics(const struct van_stats *s, size_t *n)
{
	struct mlist l = { 0 };
	const uint32_t T = VAN_METRIC_TIMING, E = VAN_METRIC_ENV;
	put(&l, (double)s->events, 0, "events");
	put(&l, (double)s->processes, 0, "processes");
	put(&l, (double)s->threads, 0, "threads");
	put(&l, (double)s->duration_ns, T, "duration_ns");
	put(&l, (double)s->syscalls, 0, "syscalls");
	put(&l, (double)s->errors, 0, "errors");
	put(&l, s->duration_ns ? (double)s->syscalls * 1e9 / (double)s->duration_ns : 0, T,
	    "ops_per_sec");
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		const char *name = vmt_op_name(op);
		const struct van_op_stats *o = &s->ops[op];
		put(&l, (double)o->count, 0, "ops.%s.count", name);
		put(&l, (double)o->errors, 0, "ops.%s.errors", name);
		put(&l, (double)o->bytes, 0, "ops.%s.bytes", name);
		put(&l, (double)o->time_ns, T, "ops.%s.time_ns", name);
	}
	/* Every known advice (zero when unused), then unknown ones seen. */
	for (const struct vmt_flag_name *f = vmt_madv_names; f->name; f++) {
		struct van_op_stats z = { 0 }, *o = &z;
		for (uint32_t i = 0; i < s->nadvice; i++)
			if (s->advice[i].advice == f->value)
				o = &s->advice[i].s;
		put(&l, (double)o->count, 0, "madvise.%s.count", f->name);
		put(&l, (double)o->errors, 0, "madvise.%s.errors", f->name);
		put(&l, (double)o->bytes, 0, "madvise.%s.bytes", f->name);
	}
	for (uint32_t i = 0; i < s->nadvice; i++) {
		char buf[32];
		const char *an = van_advice_name(s->advice[i].advice, buf, sizeof(buf));
		if (an != buf)
			continue;
		put(&l, (double)s->advice[i].s.count, 0, "madvise.%s.count", an);
		put(&l, (double)s->advice[i].s.errors, 0, "madvise.%s.errors", an);
		put(&l, (double)s->advice[i].s.bytes, 0, "madvise.%s.bytes", an);
	}
	put(&l, (double)s->peak_vmas, 0, "peak_vmas");
	put(&l, (double)s->peak_vmas_ns, T, "peak_vmas_at_ns");
	put(&l, (double)s->peak_mapped_bytes, 0, "peak_mapped_bytes");
	put(&l, (double)s->peak_mapped_ns, T, "peak_mapped_at_ns");
	put(&l, (double)s->peak_locked_bytes, 0, "peak_locked_bytes");
	put(&l, (double)s->peak_locked_ns, T, "peak_locked_at_ns");
	put(&l, (double)s->touched_pages, E, "touched_pages");
	put(&l, (double)(s->touched_pages - s->touched_file_pages), 0, "touched_anon_pages");
	put(&l, (double)s->touched_file_pages, E, "touched_file_pages");
	put(&l, (double)s->touched_written_pages, 0, "touched_written_pages");
	put(&l, (double)s->faults, 0, "faults.total");
	put(&l, (double)s->faults_read, 0, "faults.read");
	put(&l, (double)s->faults_write, 0, "faults.write");
	put(&l, (double)s->faults_exec, 0, "faults.exec");
	put(&l, (double)s->faults_other, 0, "faults.other");
	put(&l, (double)s->lost_faults, 0, "lost.faults");
	put(&l, (double)s->lost_events, 0, "lost.events");
	for (uint32_t k = 1; k < VMT_EV__COUNT; k++)
		put(&l, (double)s->by_kind[k], 0, "kinds.%s", vmt_kind_name(k));
	if (l.oom) {
		free(l.m);
		return NULL;
	}
	*n = l.n;
	return l.m;
}
