/*
 * asmodel.c - the address-space model's VMA trees: splitting, merging,
 * and address spaces made, shared and dropped.  What each syscall and MAPS
 * snapshot does to the VMAs is in asmodel_ops.c; the events in trace order
 * and the queries in asmodel_event.c.
 *
 * Merging follows the kernel's rules (mm/vma.c): two adjacent VMAs merge
 * when every VM_* flag is equal (VM_SOFTDIRTY aside; VM_ACCOUNT counts,
 * which is why a PROT_NONE reservation next to memory that was once
 * writable stays separate), the backing is the same (same file, or both
 * anonymous with the same name), the page offsets are contiguous (for
 * anonymous memory the offset is the address the VMA was created at, so a
 * VMA moved by mremap after it got pages does not merge with its new
 * neighbours) and their anon_vmas are compatible: equal, or one has none
 * and the other was not inherited over fork.  Special mappings and SysV
 * segments (which have close operations) never merge.
 *
 * Approximations, each measured by tests/unit/test_asmodel.c where the
 * kernel allows: the model learns that anonymous memory has pages (and so
 * an anon_vma) only from TOUCH/FAULT events and from ops that populate
 * (MAP_POPULATE, mlock, MADV_POPULATE_WRITE); fork gives every child VMA
 * with pages a new anon_vma (the kernel may reuse one); mempolicies,
 * userfaultfd contexts and anonymous VMA names set by prctl are not seen.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "asmodel_int.h"

/* ---- strings ----------------------------------------------------------- */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

const char *van_am_intern(struct van_asmodel *m, const char *s)
{
	if (!s || !*s)
		return "";
	if (2 * (m->nstrs + 1) > m->cap_strs) {
		uint32_t ncap = m->cap_strs ? 2 * m->cap_strs : 64;
		char **n = calloc(ncap, sizeof(*n));
		if (!n) {
			m->oom = 1;
			return "";
		}
		for (uint32_t i = 0; i < m->cap_strs; i++) {
			if (!m->strs[i])
				continue;
			uint64_t j = str_hash(m->strs[i]) & (ncap - 1);
			while (n[j])
				j = (j + 1) & (ncap - 1);
			n[j] = m->strs[i];
		}
		free(m->strs);
		m->strs = n;
		m->cap_strs = ncap;
	}
	uint64_t j = str_hash(s) & (m->cap_strs - 1);
	while (m->strs[j]) {
		if (strcmp(m->strs[j], s) == 0)
			return m->strs[j];
		j = (j + 1) & (m->cap_strs - 1);
	}
	char *d = strdup(s);
	if (!d) {
		m->oom = 1;
		return "";
	}
	m->strs[j] = d;
	m->nstrs++;
	return d;
}

/* ---- the treap ---------------------------------------------------------- */

static uint32_t rnd(struct van_asmodel *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return (uint32_t)(m->rng >> 16);
}

/* The treap keeps parent links so that a node can be added or taken out
 * where the address-ordered list already says it goes: a split adds its
 * upper half as the lower half's neighbour, a merge removes a neighbour.
 * Both rotate by priority, an expected constant number of times, instead
 * of descending from the root. */

/* Put x in the place of its parent p, p becoming x's child. */
static void t_rotate_up(struct space *sp, struct node *x)
{
	struct node *p = x->up, *g = p->up;
	if (p->l == x) {
		p->l = x->r;
		if (x->r)
			x->r->up = p;
		x->r = p;
	} else {
		p->r = x->l;
		if (x->l)
			x->l->up = p;
		x->l = p;
	}
	p->up = x;
	x->up = g;
	if (!g)
		sp->root = x;
	else if (g->l == p)
		g->l = x;
	else
		g->r = x;
}

/* Add n, already linked between n->prev and n->next. */
static void t_insert(struct space *sp, struct node *n)
{
	struct node *p = n->prev, *s = n->next;
	n->l = n->r = n->up = NULL;
	if (p && !p->r) {
		p->r = n; /* the in-order next of p is n */
		n->up = p;
	} else if (s) {
		s->l = n; /* p has a right subtree: s is its leftmost node */
		n->up = s;
	} else {
		sp->root = n; /* (p with a right child has a successor) */
	}
	while (n->up && n->prio > n->up->prio)
		t_rotate_up(sp, n);
}

static void t_remove(struct space *sp, struct node *n)
{
	while (n->l && n->r)
		t_rotate_up(sp, n->l->prio > n->r->prio ? n->l : n->r);
	struct node *c = n->l ? n->l : n->r, *p = n->up;
	if (c)
		c->up = p;
	if (!p)
		sp->root = c;
	else if (p->l == n)
		p->l = c;
	else
		p->r = c;
}

/* Build the treap of a space that had only its list: append the VMAs in
 * address order, each the right child of the highest so far, rotated up
 * by priority. */
static void am_index(struct space *sp)
{
	struct node *n = sp->last;
	while (n && n->prev)
		n = n->prev;
	sp->root = NULL;
	for (; n; n = n->next) {
		n->l = n->r = n->up = NULL;
		if (!sp->root) {
			sp->root = n;
			continue;
		}
		n->up = n->prev; /* the highest so far: no right child */
		n->prev->r = n;
		while (n->up && n->prio > n->up->prio)
			t_rotate_up(sp, n);
	}
	sp->indexed = 1;
}

/* n, found at hint slot i (or the last slot: not a hint), becomes the
 * first hint.  The hints are a cache, not the model's state: a lookup
 * through a const space may move them. */
static void am_hint(struct space *sp, struct node *n, int i)
{
	for (; i > 0; i--)
		sp->hint[i] = sp->hint[i - 1];
	sp->hint[0] = n;
}

/* n goes: a hint to it moves to its neighbour (where the next lookup
 * most likely lands, and where a walk of the list starts). */
static void am_unhint(struct space *sp, const struct node *n)
{
	for (int i = 0; i < AM_HINTS; i++)
		if (sp->hint[i] == n)
			sp->hint[i] = n->prev ? n->prev : n->next;
}

struct node *van_am_first(const struct space *sp, uint64_t addr)
{
	if (!sp)
		return NULL;
	/* A hint answers when it is the first VMA ending above addr (or its
	 * successor is); the order of the VMAs by start is that by end. */
	struct node *const *hint = sp->hint;
	for (int i = 0; i < AM_HINTS && hint[i]; i++) {
		struct node *h = hint[i];
		if (h->v.end > addr) {
			if (h->prev && h->prev->v.end > addr)
				continue;
		} else if (!h->next) {
			return NULL;
		} else if (h->next->v.end > addr) {
			h = h->next;
		} else {
			continue;
		}
		am_hint((struct space *)sp, h, i);
		return h;
	}
	struct node *t, *cand = NULL;
	if (!sp->indexed) {
		/* Few VMAs: walk the list from where the hint (or the top)
		 * is; the walk is short, and the list needs no upkeep. */
		t = hint[0] ? hint[0] : sp->last;
		if (t && t->v.end > addr) {
			while (t->prev && t->prev->v.end > addr)
				t = t->prev;
		} else {
			while (t && t->v.end <= addr)
				t = t->next;
		}
		cand = t;
	} else {
		for (t = sp->root; t;) {
			if (t->v.end > addr) {
				cand = t;
				t = t->l;
			} else {
				t = t->r;
			}
		}
	}
	if (cand)
		am_hint((struct space *)sp, cand, AM_HINTS - 1);
	return cand;
}

struct node *van_am_next(const struct space *sp, const struct node *n)
{
	(void)sp;
	return n->next;
}

/* ---- counts ------------------------------------------------------------- */

/* ---- nodes -------------------------------------------------------------- */

/* Add a node for v between prev and succ (either may be NULL: the ends
 * of the list), which are neighbours, counting only the VMA (its bytes
 * are the caller's to count).  NULL when out of memory. */
static struct node *am_link_uncounted(struct van_asmodel *m, struct space *sp, struct node *prev,
				      struct node *succ, const struct van_vma *v)
{
	struct node *n = m->free_nodes;
	if (n) {
		m->free_nodes = n->l;
	} else if (!(n = malloc(sizeof(*n)))) {
		m->oom = 1;
		return NULL;
	}
	n->v = *v;
	n->prio = rnd(m);
	n->next = succ;
	n->prev = prev;
	if (prev)
		prev->next = n;
	if (succ)
		succ->prev = n;
	else
		sp->last = n;
	sp->c.vmas++, m->tot.vmas++;
	if (sp->indexed)
		t_insert(sp, n);
	else if (sp->c.vmas > AM_INDEX_AT)
		am_index(sp);
	return n;
}

static struct node *am_link(struct van_asmodel *m, struct space *sp, struct node *prev,
			    struct node *succ, const struct van_vma *v)
{
	struct node *n = am_link_uncounted(m, sp, prev, succ, v);
	if (n) {
		uint64_t len = v->end - v->start;
		uint64_t locked = (v->flags & VAN_VMA_LOCKED) ? len : 0;
		sp->c.mapped_bytes += len, sp->c.locked_bytes += locked;
		m->tot.mapped_bytes += len, m->tot.locked_bytes += locked;
	}
	return n;
}

struct node *van_am_insert(struct van_asmodel *m, struct space *sp, const struct van_vma *v)
{
	/* The successor in the treap's order: the first VMA with a higher
	 * start (after those with an equal start). */
	struct node *succ = van_am_first(sp, v->start);
	while (succ && succ->v.start <= v->start)
		succ = succ->next;
	return am_link(m, sp, succ ? succ->prev : sp->last, succ, v);
}

/* Take n out, counting only the VMA. */
static void am_unlink_uncounted(struct van_asmodel *m, struct space *sp, struct node *n)
{
	sp->c.vmas--, m->tot.vmas--;
	if (sp->indexed)
		t_remove(sp, n);
	if (n->prev)
		n->prev->next = n->next;
	am_unhint(sp, n);
	if (n->next)
		n->next->prev = n->prev;
	else
		sp->last = n->prev;
	n->l = m->free_nodes;
	m->free_nodes = n;
}

void van_am_remove(struct van_asmodel *m, struct space *sp, struct node *n)
{
	uint64_t len = n->v.end - n->v.start;
	uint64_t locked = (n->v.flags & VAN_VMA_LOCKED) ? len : 0;
	sp->c.mapped_bytes -= len, sp->c.locked_bytes -= locked;
	m->tot.mapped_bytes -= len, m->tot.locked_bytes -= locked;
	am_unlink_uncounted(m, sp, n);
}

struct node *van_am_split_node(struct van_asmodel *m, struct space *sp, struct node *n,
			       uint64_t addr)
{
	struct van_vma hi = n->v;
	hi.start = addr;
	hi.offset += addr - n->v.start;
	/* The bytes stay mapped (and locked or not) in the upper half: only
	 * the VMA count changes. */
	struct node *h = am_link_uncounted(m, sp, n, n->next, &hi);
	if (h) {
		n->v.end = addr;
		m->last.splits++;
	}
	return h;
}

void van_am_split(struct van_asmodel *m, struct space *sp, uint64_t addr)
{
	struct node *n = van_am_first(sp, addr);
	if (n && n->v.start < addr) /* a VMA straddles addr */
		van_am_split_node(m, sp, n, addr);
}

uint64_t van_am_unmap(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b)
{
	uint64_t bytes = 0;
	if (a >= b)
		return 0;
	van_am_split(m, sp, a);
	van_am_split(m, sp, b);
	struct node *n = van_am_first(sp, a);
	while (n && n->v.start < b) {
		struct node *next = van_am_next(sp, n);
		bytes += n->v.end - n->v.start;
		van_am_remove(m, sp, n);
		n = next;
	}
	return bytes;
}

struct node *van_am_map(struct van_asmodel *m, struct space *sp, const struct van_vma *v,
			uint64_t *was)
{
	/* The same VMAs and counts as unmapping [start, end) and inserting
	 * v, but the first VMA the range meets is reused in place for v:
	 * mapping over what mprotect made accessible (the old way to free
	 * memory) then costs no walk of the tree, and at most the splits
	 * at the two ends. */
	struct node *n = van_am_first(sp, v->start), *x;
	uint64_t bytes = 0;
	*was = 0;
	if (n && n->v.start < v->start && !(n = van_am_split_node(m, sp, n, v->start)))
		return NULL;
	if (!n || n->v.start >= v->end)
		return am_link(m, sp, n ? n->prev : sp->last, n, v);
	if (n->v.end > v->end && !van_am_split_node(m, sp, n, v->end))
		return NULL;
	while ((x = n->next) && x->v.start < v->end) {
		if (x->v.end > v->end && !van_am_split_node(m, sp, x, v->end))
			return NULL;
		bytes += x->v.end - x->v.start;
		van_am_remove(m, sp, x);
	}
	bytes += n->v.end - n->v.start;
	*was = bytes;
	van_am_account(m, sp, &n->v, -1);
	n->v = *v;
	van_am_account(m, sp, &n->v, +1);
	return n;
}

uint64_t van_am_mapped_in(const struct space *sp, uint64_t a, uint64_t b)
{
	uint64_t bytes = 0;
	for (struct node *n = van_am_first(sp, a); n && n->v.start < b; n = van_am_next(sp, n)) {
		uint64_t s = n->v.start > a ? n->v.start : a;
		uint64_t e = n->v.end < b ? n->v.end : b;
		bytes += e - s;
	}
	return bytes;
}

/* ---- merging ------------------------------------------------------------ */

static int anon_ok(uint64_t a, uint64_t b)
{
	if (!a)
		return !(b & ANON_FORKED);
	if (!b)
		return !(a & ANON_FORKED);
	return a == b;
}

static int can_merge(const struct van_vma *p, const struct van_vma *n)
{
	if (p->end != n->start)
		return 0;
	if ((p->flags | n->flags) & (VAN_VMA_SPECIAL | VAN_VMA_SYSV))
		return 0;
	if ((p->flags ^ n->flags) & ~VMA_NOCMP)
		return 0;
	if (p->prot != n->prot || p->pkey != n->pkey || p->path != n->path)
		return 0;
	if (p->dev != n->dev || p->ino != n->ino)
		return 0;
	if (p->offset + (p->end - p->start) != n->offset)
		return 0;
	return anon_ok(p->anon, n->anon);
}

/* p absorbs its successor n. */
static void merge_next(struct van_asmodel *m, struct space *sp, struct node *p, struct node *n)
{
	uint64_t anon = p->v.anon ? p->v.anon : n->v.anon;
	uint32_t keep = (p->v.flags | n->v.flags) & VAN_VMA_HEAP;
	uint64_t end = n->v.end;
	/* Mergeable VMAs have the same flags, VAN_VMA_LOCKED too: the bytes
	 * stay counted as they were, only the VMA count changes. */
	am_unlink_uncounted(m, sp, n);
	p->v.end = end;
	p->v.anon = anon;
	p->v.flags |= keep;
	m->last.merges++;
}

void van_am_merge_window(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b)
{
	struct node *p = van_am_first(sp, a ? a - 1 : 0);
	while (p && p->v.start <= b) {
		struct node *n = van_am_next(sp, p);
		if (!n || n->v.start > b)
			break;
		if (!can_merge(&p->v, &n->v)) {
			p = n;
			continue;
		}
		merge_next(m, sp, p, n);
	}
}

struct node *van_am_merge_around(struct van_asmodel *m, struct space *sp, struct node *n)
{
	struct node *p = n->prev, *x;
	if (p && can_merge(&p->v, &n->v)) {
		merge_next(m, sp, p, n);
		n = p;
	}
	x = n->next;
	if (x && can_merge(&n->v, &x->v))
		merge_next(m, sp, n, x);
	return n;
}

/* ---- anon_vma ----------------------------------------------------------- */

uint64_t van_am_new_anon(struct van_asmodel *m)
{
	return ++m->next_anon;
}

/* The kernel lets a VMA adopt its neighbour's anon_vma when the two
 * could merge but for their protection (anon_vma_compatible()). */
static int anon_compatible(const struct van_vma *a, const struct van_vma *b)
{
	return a->end == b->start && a->path == b->path && a->dev == b->dev &&
	       a->ino == b->ino && a->pkey == b->pkey &&
	       !((a->flags ^ b->flags) & ~VMA_NOCMP) &&
	       a->offset + (a->end - a->start) == b->offset;
}

void van_am_give_anon_node(struct van_asmodel *m, struct node *n)
{
	if (n->v.anon || (n->v.flags & (VAN_VMA_SHARED | VAN_VMA_SPECIAL)))
		return;
	uint64_t id = 0;
	struct node *o = n->next;
	if (o && o->v.anon && !(o->v.anon & ANON_FORKED) && anon_compatible(&n->v, &o->v))
		id = o->v.anon;
	o = n->prev;
	if (!id && o && o->v.anon && !(o->v.anon & ANON_FORKED) && anon_compatible(&o->v, &n->v))
		id = o->v.anon;
	n->v.anon = id ? id : van_am_new_anon(m);
}

void van_am_give_anon(struct van_asmodel *m, struct space *sp, uint64_t a, uint64_t b)
{
	for (struct node *n = van_am_first(sp, a); n && n->v.start < b; n = van_am_next(sp, n))
		van_am_give_anon_node(m, n);
}

/* ---- spaces ------------------------------------------------------------- */

struct space *van_am_new_space(struct van_asmodel *m)
{
	struct space *sp = calloc(1, sizeof(*sp));
	if (!sp)
		m->oom = 1;
	return sp;
}

static void free_nodes(struct van_asmodel *m, struct space *sp)
{
	for (struct node *n = sp->last, *p; n; n = p) {
		p = n->prev;
		n->l = m->free_nodes;
		m->free_nodes = n;
	}
}

void van_am_clear_space(struct van_asmodel *m, struct space *sp)
{
	m->tot.vmas -= sp->c.vmas;
	m->tot.mapped_bytes -= sp->c.mapped_bytes;
	m->tot.locked_bytes -= sp->c.locked_bytes;
	free_nodes(m, sp);
	sp->root = sp->last = NULL;
	sp->indexed = 0;
	memset(sp->hint, 0, sizeof(sp->hint));
	memset(&sp->c, 0, sizeof(sp->c));
	sp->def_lock = 0;
	sp->brk_start = sp->brk_cur = 0;
	sp->known = 0;
}

void van_am_drop_space(struct van_asmodel *m, struct space *sp)
{
	if (!sp || --sp->refs)
		return;
	van_am_clear_space(m, sp);
	free(sp);
}

void van_am_set_space(struct van_asmodel *m, uint32_t proc, struct space *sp)
{
	if (proc >= m->cap_procs) {
		uint32_t ncap = m->cap_procs ? m->cap_procs : 16;
		while (ncap <= proc)
			ncap *= 2;
		struct space **n = realloc(m->procs, ncap * sizeof(*n));
		if (!n) {
			m->oom = 1;
			van_am_drop_space(m, sp);
			return;
		}
		memset(n + m->cap_procs, 0, (ncap - m->cap_procs) * sizeof(*n));
		m->procs = n;
		m->cap_procs = ncap;
	}
	if (proc >= m->nprocs)
		m->nprocs = proc + 1;
	if (sp)
		sp->refs++;
	van_am_drop_space(m, m->procs[proc]);
	m->procs[proc] = sp;
}

struct space *van_am_space(struct van_asmodel *m, uint32_t proc, int create)
{
	if (proc < m->nprocs && m->procs[proc])
		return m->procs[proc];
	if (!create || proc >= VMT_MAX_THREADS)
		return NULL;
	struct space *sp = van_am_new_space(m);
	if (!sp)
		return NULL;
	van_am_set_space(m, proc, sp);
	return proc < m->cap_procs ? m->procs[proc] : NULL;
}
