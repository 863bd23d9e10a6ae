/*
 * asmodel_event.c - the address-space model's interface (asmodel.h): the
 * events applied in trace order, with what each changed, and the queries.
 * The VMA trees and address spaces are in asmodel.c, what each syscall and
 * MAPS snapshot does to them in asmodel_ops.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "asmodel_int.h"
#include "vmtutil.h"

static struct space *space_at(const van_asmodel *m, uint32_t proc)
{
	return proc < m->nprocs ? m->procs[proc] : NULL;
}

/* fork/clone: the child gets the parent's VMAs except MADV_DONTFORK ones,
 * without mlock state (not inherited) and with anon_vmas of its own. */
static void copy_space(struct van_asmodel *m, struct space *dst, const struct space *src)
{
	for (struct node *n = van_am_first(src, 0); n; n = van_am_next(src, n)) {
		if (n->v.flags & VAN_VMA_DONTFORK)
			continue;
		struct van_vma v = n->v;
		v.flags &= ~(VAN_VMA_LOCKED | VAN_VMA_LOCKONFAULT);
		if (v.flags & VAN_VMA_WIPEONFORK)
			v.anon = 0;
		else if (v.anon)
			v.anon = van_am_new_anon(m) | ANON_FORKED;
		if (!van_am_insert(m, dst, &v))
			return;
	}
	dst->brk_start = src->brk_start;
	dst->brk_cur = src->brk_cur;
	dst->known = src->known;
}

static void process_start(struct van_asmodel *m, const struct vmt_event *ev)
{
	const struct vmt_process_start *ps = &ev->u.process_start;
	struct space *parent = ps->parent_proc != VMT_NONE && ps->parent_proc != ev->proc
				       ? van_am_space(m, ps->parent_proc, 0) : NULL;
	if (ps->how == VMT_PROC_VFORK && parent) {
		van_am_set_space(m, ev->proc, parent);
		return;
	}
	struct space *sp = van_am_new_space(m);
	if (!sp)
		return;
	if (parent && (ps->how == VMT_PROC_FORK || ps->how == VMT_PROC_CLONE))
		copy_space(m, sp, parent);
	else if (ps->how == VMT_PROC_FORK || ps->how == VMT_PROC_CLONE || ps->how == VMT_PROC_VFORK)
		m->last.inexact = 1; /* parent unknown */
	van_am_set_space(m, ev->proc, sp);
}

/* ---- touches ------------------------------------------------------------ */

/* Present pages of private memory mean the VMA has an anon_vma, except
 * read-only sharing of the zero page (where the kernel maps it) or of
 * file pages. */
static void touch(struct van_asmodel *m, const struct vmt_event *ev)
{
	struct space *sp = van_am_space(m, ev->proc, 0);
	if (!sp)
		return;
	uint64_t a = ev->u.touch.start;
	for (uint32_t i = 0; i < ev->u.touch.nruns; i++) {
		const struct vmt_touch_run *r = &ev->u.touch.runs[i];
		uint64_t b = a + r->pages * m->page;
		if (r->state == VMT_PAGE_WRITTEN || r->state == VMT_PAGE_PRESENT ||
		    (r->state == VMT_PAGE_READ && m->no_zero_page)) {
			for (struct node *n = van_am_first(sp, a); n && n->v.start < b;
			     n = van_am_next(sp, n)) {
				if (n->v.anon || (n->v.flags & VAN_VMA_SHARED))
					continue;
				if (r->state != VMT_PAGE_WRITTEN && (n->v.flags & VAN_VMA_FILE))
					continue;
				van_am_give_anon_node(m, n);
			}
		}
		a = b;
	}
}

/* A write fault on private memory gives the VMA its anon_vma; so does a
 * read fault on private anonymous memory where the kernel has no zero
 * page to map. */
static void fault(struct van_asmodel *m, const struct vmt_event *ev)
{
	struct space *sp = space_at(m, ev->proc);
	int write = (ev->u.fault.access & VMT_FAULT_WRITE) != 0;
	if (!sp || (!write && !m->no_zero_page) || !vmt_fault_touches(&ev->u.fault))
		return;
	uint64_t a = pg_down(m, ev->u.fault.addr);
	struct node *n = van_am_first(sp, a);
	if (!n || n->v.start > a || n->v.anon || (n->v.flags & VAN_VMA_SHARED))
		return;
	if (!write && (n->v.flags & VAN_VMA_FILE))
		return; /* a page-cache page, mapped as it is */
	van_am_give_anon_node(m, n);
}

/* ---- public API --------------------------------------------------------- */

van_asmodel *van_asmodel_new(uint32_t page_size)
{
	if (page_size == 0)
		page_size = 4096;
	if (page_size & (page_size - 1))
		return NULL;
	van_asmodel *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->page = page_size;
	m->pmask = page_size - 1;
	m->rng = 0x9e3779b97f4a7c15ull;
	m->next_ino = 1ull << 40;
	return m;
}

van_asmodel *van_asmodel_for(const struct vmt_header *h)
{
	uint32_t page = h && h->page_size && !(h->page_size & (h->page_size - 1)) ? h->page_size : 4096;
	van_asmodel *m = van_asmodel_new(page);
	if (m)
		van_asmodel_set_zero_page(m, vmt_header_zero_page(h));
	return m;
}

void van_asmodel_set_zero_page(van_asmodel *m, int maps_zero_page)
{
	m->no_zero_page = !maps_zero_page;
}

void van_asmodel_free(van_asmodel *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->nprocs; i++)
		van_am_set_space(m, i, NULL);
	free(m->procs);
	while (m->free_nodes) {
		struct node *n = m->free_nodes;
		m->free_nodes = n->l;
		free(n);
	}
	for (uint32_t i = 0; i < m->cap_strs; i++)
		free(m->strs[i]);
	free(m->strs);
	free(m->pend);
	free(m);
}

static void map_file(struct van_asmodel *m, const struct vmt_event *ev)
{
	uint32_t t = ev->thread;
	if (t >= VMT_MAX_THREADS)
		return;
	if (vmt_grow(&m->pend, &m->cap_pend, (size_t)t + 1, sizeof(*m->pend))) {
		m->oom = 1;
		return;
	}
	struct pending_file *p = &m->pend[t];
	p->valid = 1;
	p->dev = ev->u.file.dev;
	p->ino = ev->u.file.ino;
	p->size = ev->u.file.size;
	p->path = van_am_intern(m, ev->u.file.path);
}

int van_asmodel_apply(van_asmodel *m, const struct vmt_event *ev)
{
	if (m->oom)
		return -ENOMEM;
	memset(&m->last, 0, sizeof(m->last));
	if (ev->kind == VMT_EV_FAULT) {
		/* (The most frequent event: it gives a VMA an anon_vma at
		 * most, which changes no count, splits and merges nothing.) */
		fault(m, ev);
		return 0;
	}
	struct van_as_counts before = { 0 }, after;
	const struct space *sp = space_at(m, ev->proc);
	if (sp)
		before = sp->c;

	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		van_am_syscall(m, ev);
		if (ev->thread < m->cap_pend)
			m->pend[ev->thread].valid = 0;
		break;
	case VMT_EV_MAP_FILE:
		map_file(m, ev);
		break;
	case VMT_EV_PROCESS_START:
		process_start(m, ev);
		before = (struct van_as_counts){ 0 };
		break;
	case VMT_EV_EXEC: {
		/* A vfork child leaves the shared space; anyone else's space is
		 * emptied.  The MAPS snapshot that follows fills it. */
		struct space *s = van_am_space(m, ev->proc, 0);
		if (s && s->refs > 1) {
			van_am_set_space(m, ev->proc, van_am_new_space(m));
			before = (struct van_as_counts){ 0 };
		} else if (s) {
			van_am_clear_space(m, s);
		} else {
			van_am_space(m, ev->proc, 1);
		}
		m->last.changed = 1;
		break;
	}
	case VMT_EV_PROCESS_EXIT:
		if (ev->proc < m->nprocs && m->procs[ev->proc]) {
			van_am_set_space(m, ev->proc, NULL);
			m->last.changed = 1;
		}
		break;
	case VMT_EV_MAPS:
		van_am_maps(m, ev);
		m->last.changed = 1;
		break;
	case VMT_EV_TOUCH:
		touch(m, ev);
		break;
	default:
		break;
	}
	van_asmodel_counts(m, ev->proc, &after);
	m->last.d_vmas = (int64_t)(after.vmas - before.vmas);
	m->last.d_mapped = (int64_t)(after.mapped_bytes - before.mapped_bytes);
	m->last.d_locked = (int64_t)(after.locked_bytes - before.locked_bytes);
	if (m->last.d_vmas || m->last.d_mapped || m->last.d_locked || m->last.merges ||
	    m->last.splits)
		m->last.changed = 1;
	if (m->last.inexact)
		m->inexact++;
	return m->oom ? -ENOMEM : 0;
}

void van_asmodel_counts(const van_asmodel *m, uint32_t proc, struct van_as_counts *c)
{
	const struct space *sp = space_at(m, proc);
	if (sp)
		*c = sp->c;
	else
		memset(c, 0, sizeof(*c));
}

void van_asmodel_totals(const van_asmodel *m, struct van_as_counts *c)
{
	*c = m->tot;
}

int van_asmodel_alive(const van_asmodel *m, uint32_t proc)
{
	return space_at(m, proc) != NULL;
}

const struct van_vma *van_asmodel_first(const van_asmodel *m, uint32_t proc, uint64_t addr)
{
	struct node *n = van_am_first(space_at(m, proc), addr);
	return n ? &n->v : NULL;
}

const struct van_vma *van_asmodel_next(const van_asmodel *m, uint32_t proc,
				       const struct van_vma *v)
{
	const struct space *sp = space_at(m, proc);
	if (!sp || !v)
		return NULL;
	struct node *n = van_am_first(sp, v->end);
	return n ? &n->v : NULL;
}

const struct van_vma *van_asmodel_lookup(const van_asmodel *m, uint32_t proc, uint64_t addr)
{
	struct node *n = van_am_first(space_at(m, proc), addr);
	return n && n->v.start <= addr ? &n->v : NULL;
}

const struct van_as_effect *van_asmodel_last(const van_asmodel *m)
{
	return &m->last;
}

uint64_t van_asmodel_inexact(const van_asmodel *m)
{
	return m->inexact;
}
