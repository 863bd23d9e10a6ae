/*
 * tracks.c - see tracks.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "asmodel.h"
#include "tracks.h"
#include "vmtutil.h"

struct tproc {
	char name[64];
	int32_t os_pid;
	uint32_t parent1; /* the parent process + 1; 0: none known */
	uint64_t touched, syscalls;
};

struct tthread {
	int32_t os_tid;
	uint32_t proc;
};

struct van_tracks {
	const struct vmt_header *h;
	van_asmodel *model;
	struct tproc *p;
	uint32_t np;
	size_t capp;
	struct tthread *t;
	uint32_t nt;
	size_t capt;
};

static struct tproc *proc_at(van_tracks *t, uint32_t i)
{
	if (i >= VMT_MAX_THREADS || vmt_grow(&t->p, &t->capp, (size_t)i + 1, sizeof(*t->p)))
		return NULL;
	if (i >= t->np)
		t->np = i + 1;
	return &t->p[i];
}

static struct tthread *thread_at(van_tracks *t, uint32_t i)
{
	size_t old = t->capt;
	if (i >= VMT_MAX_THREADS || vmt_grow(&t->t, &t->capt, (size_t)i + 1, sizeof(*t->t)))
		return NULL;
	for (size_t k = old; k < t->capt; k++)
		t->t[k].proc = VMT_NONE;
	if (i >= t->nt)
		t->nt = i + 1;
	return &t->t[i];
}

static void set_name(struct tproc *p, const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *base = slash ? slash + 1 : path ? path : "";
	size_t n = strlen(base);
	if (n >= sizeof(p->name))
		n = sizeof(p->name) - 1;
	memcpy(p->name, base, n);
	p->name[n] = 0;
}

van_tracks *van_tracks_new(const struct vmt_header *h)
{
	van_tracks *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->h = h;
	t->model = van_asmodel_for(h);
	if (!t->model) {
		free(t);
		return NULL;
	}
	return t;
}

void van_tracks_free(van_tracks *t)
{
	if (!t)
		return;
	van_asmodel_free(t->model);
	free(t->p);
	free(t->t);
	free(t);
}

int van_tracks_apply(van_tracks *t, const struct vmt_event *ev, unsigned *changed)
{
	unsigned ch = 0;
	struct tproc *p = proc_at(t, ev->proc);
	struct tthread *th = thread_at(t, ev->thread);
	if (!p || !th)
		return -ENOMEM;
	th->proc = ev->proc;

	switch (ev->kind) {
	case VMT_EV_PROCESS_START: {
		const struct vmt_process_start *s = &ev->u.process_start;
		p->os_pid = s->os_pid;
		p->parent1 = s->parent_proc != VMT_NONE ? s->parent_proc + 1 : 0;
		if (s->parent_proc != VMT_NONE && s->parent_proc < t->np)
			memcpy(p->name, t->p[s->parent_proc].name, sizeof(p->name));
		else if (t->h && t->h->argc > 0)
			set_name(p, t->h->argv[0]);
		ch |= VAN_TRK_NAMES;
		break;
	}
	case VMT_EV_THREAD_START:
		th->os_tid = ev->u.thread_start.os_tid;
		ch |= VAN_TRK_NAMES;
		break;
	case VMT_EV_EXEC:
		set_name(p, ev->u.exec.path);
		ch |= VAN_TRK_NAMES;
		break;
	case VMT_EV_TOUCH:
		for (uint32_t i = 0; i < ev->u.touch.nruns; i++)
			if (ev->u.touch.runs[i].state != VMT_PAGE_ABSENT)
				p->touched += ev->u.touch.runs[i].pages;
		ch |= VAN_TRK_TOUCHED;
		break;
	case VMT_EV_FAULT:
		if (!vmt_fault_touches(&ev->u.fault))
			break;
		p->touched++;
		ch |= VAN_TRK_TOUCHED;
		break;
	case VMT_EV_SYSCALL:
		p->syscalls++;
		ch |= VAN_TRK_SYSCALL;
		break;
	default:
		break;
	}
	int rc = van_asmodel_apply(t->model, ev);
	if (rc)
		return rc;
	const struct van_as_effect *eff = van_asmodel_last(t->model);
	if (eff->changed || ev->kind == VMT_EV_PROCESS_EXIT || ev->kind == VMT_EV_EXEC ||
	    ev->kind == VMT_EV_MAPS || ev->kind == VMT_EV_PROCESS_START)
		ch |= VAN_TRK_SPACE;
	if (changed)
		*changed = ch;
	return 0;
}

uint32_t van_tracks_nprocs(const van_tracks *t)
{
	return t->np;
}

uint32_t van_tracks_nthreads(const van_tracks *t)
{
	return t->nt;
}

void van_tracks_get(const van_tracks *t, uint32_t p, struct van_track_vals *v)
{
	memset(v, 0, sizeof(*v));
	if (p >= t->np)
		return;
	struct van_as_counts c;
	van_asmodel_counts(t->model, p, &c);
	v->vmas = c.vmas;
	v->mapped_bytes = c.mapped_bytes;
	v->locked_bytes = c.locked_bytes;
	v->touched_pages = t->p[p].touched;
	v->syscalls = t->p[p].syscalls;
}

const char *van_tracks_proc_name(const van_tracks *t, uint32_t p)
{
	return p < t->np ? t->p[p].name : "";
}

uint32_t van_tracks_parent(const van_tracks *t, uint32_t p)
{
	return p < t->np && t->p[p].parent1 ? t->p[p].parent1 - 1 : VMT_NONE;
}

int32_t van_tracks_os_pid(const van_tracks *t, uint32_t p)
{
	return p < t->np ? t->p[p].os_pid : 0;
}

int32_t van_tracks_os_tid(const van_tracks *t, uint32_t thread)
{
	return thread < t->nt ? t->t[thread].os_tid : 0;
}

uint32_t van_tracks_thread_proc(const van_tracks *t, uint32_t thread)
{
	return thread < t->nt ? t->t[thread].proc : VMT_NONE;
}

uint64_t van_tracks_rel_ns(const van_tracks *t, uint64_t ts_ns)
{
	uint64_t base = t->h ? t->h->start_mono_ns : 0;
	return ts_ns > base ? ts_ns - base : 0;
}
