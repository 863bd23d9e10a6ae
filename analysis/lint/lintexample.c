/*
 * lintexample.c - what every detector and finding of `vmtrace lint`
 * shares: the per-thread and per-process counters, the example event of a
 * finding (taken while the detectors run, named when the symbols are
 * known) and its call sites.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lint_int.h"

struct lthread *lint_thread_grow(van_lint *l, uint32_t t)
{
	if (t >= VMT_MAX_THREADS || vmt_grow(&l->thr, &l->nthr, (size_t)t + 1, sizeof(*l->thr)))
		return NULL;
	return &l->thr[t];
}

struct lproc *lint_proc_grow(van_lint *l, uint32_t p)
{
	if (p >= VMT_MAX_THREADS || vmt_grow(&l->prc, &l->nprc, (size_t)p + 1, sizeof(*l->prc)))
		return NULL;
	return &l->prc[p];
}

void lint_take_example(van_lint *l, struct example *x, uint64_t index, const struct vmt_event *ev)
{
	x->set = 1;
	x->index = index;
	x->proc = ev->proc;
	x->thread = ev->thread;
	x->stack = ev->kind == VMT_EV_SYSCALL ? ev->u.sc.stack_id : VMT_NONE;
	x->is_fault = ev->kind == VMT_EV_FAULT;
	x->ip = x->is_fault ? ev->u.fault.ip : 0;
	vmt_buf_reset(&l->scratch);
	vmt_render_text(&l->scratch, ev);
	snprintf(x->text, sizeof(x->text), "%s", l->scratch.len ? l->scratch.data : "");
}

void lint_set_example(van_lint *l, struct van_lint_finding *f, const struct example *x)
{
	if (!x->set)
		return;
	f->example_index = x->index;
	f->example_proc = x->proc;
	f->example_thread = x->thread;
	snprintf(f->example, sizeof(f->example), "%s", x->text);
	struct vmt_buf b = { 0 };
	if (x->is_fault) {
		vmt_symtab_render_ip(l->syms, &b, x->ip);
		snprintf(f->frames[0], sizeof(f->frames[0]), "%s", b.len ? b.data : "?");
		f->nframes = 1;
	} else if (x->stack != VMT_NONE) {
		uint32_t depth = 0;
		const uint64_t *ips = vmt_symtab_stack(l->syms, x->stack, &depth);
		for (uint32_t i = 0; ips && i < depth && i < VAN_LINT_MAX_FRAMES; i++) {
			vmt_buf_reset(&b);
			vmt_symtab_render_ip(l->syms, &b, ips[i]);
			snprintf(f->frames[i], sizeof(f->frames[i]), "%s", b.len ? b.data : "?");
			f->nframes = i + 1;
		}
	}
	vmt_buf_free(&b);
}

int lint_sites(van_lint *l, struct van_lint_finding *f, const struct cs_tally *c, const char *role,
	       uint32_t max)
{
	struct cs_site s[VAN_LINT_MAX_SITES];
	uint32_t room = VAN_LINT_MAX_SITES - f->nsites;
	if (room > max)
		room = max;
	int n = cs_tally_sites(c, l->syms, s, room, NULL);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		struct van_lint_site *d = &f->sites[f->nsites++];
		_Static_assert(sizeof(d->site) == CS_SITE_TEXT, "site text sizes");
		memcpy(d->site, s[i].text, sizeof(d->site));
		d->role = role;
		d->calls = s[i].calls;
	}
	return 0;
}

/* Keep the finding f (built on the caller's stack). */
int lint_add_finding(van_lint *l, const struct van_lint_finding *f)
{
	struct van_lint_finding *n = realloc(l->found, (l->nfound + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->found = n;
	n[l->nfound++] = *f;
	return 0;
}

void lint_num(struct van_lint_finding *f, const char *key, uint64_t v, const char *unit,
		const char *what)
{
	if (f->nnums < VAN_LINT_MAX_NUMS)
		f->nums[f->nnums++] = (struct van_lint_num){ key, v, unit, what };
}

/* Add a part, keeping the VAN_LINT_MAX_PARTS largest. */
void lint_part(struct van_lint_finding *f, uint32_t proc, uint32_t thread, uint64_t v)
{
	if (!v)
		return;
	struct van_lint_part np = { proc, thread, v };
	if (f->nparts < VAN_LINT_MAX_PARTS) {
		f->parts[f->nparts++] = np;
		return;
	}
	uint32_t min = 0;
	for (uint32_t i = 1; i < f->nparts; i++)
		if (f->parts[i].value < f->parts[min].value)
			min = i;
	f->parts_more++;
	if (f->parts[min].value < v) {
		f->parts_more_value += f->parts[min].value;
		f->parts[min] = np;
	} else {
		f->parts_more_value += v;
	}
}
