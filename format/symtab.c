/*
 * symtab.c - the STACK, SYMBOL and STRING tables of a trace, rebuilt from
 * its events for rendering stacks (vmtrace dump --stacks) and analyses.
 *
 * Input is untrusted: ids come from the file.  Stack and string ids must be
 * dense (each new id equal to the current count), so memory grows only with
 * events actually read, never with the value of a hostile id.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmtrace.h"
#include "vmtutil.h"

/* A SYMBOL may name a string that has not arrived yet (the format does not
 * order them); ids further ahead than this are garbage, not forward
 * references. */
#define MAX_ID_AHEAD 1000000u

/* Copies live in an arena of blocks that never move, so the pointers
 * vmt_symtab_stack() hands out stay valid until vmt_symtab_free(). */
#define ARENA_BLOCK (64u << 10)

struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	_Alignas(uint64_t) unsigned char data[];
};

struct stack_ent {
	const uint64_t *ips;
	uint32_t depth;
};

struct sym_ent {
	uint64_t ip;
	uint64_t offset;
	uint32_t module, function;
};

struct vmt_symtab {
	struct arena_block *arena;
	struct stack_ent *stacks;
	uint32_t nstacks;
	size_t capstacks;
	const char **strings;
	uint32_t nstrings;
	size_t capstrings;
	struct sym_ent *syms; /* in order of first appearance */
	size_t nsyms, capsyms;
	struct vmt_htab sym_index; /* (ip, 0) -> index in syms */
};

static void *arena_alloc(vmt_symtab *t, size_t size)
{
	struct arena_block *blk = t->arena;
	size_t need = (size + 7) & ~(size_t)7; /* keep uint64_t alignment */

	if (need < size)
		return NULL;
	if (!blk || blk->cap - blk->used < need) {
		/* An oversized request gets a block of its own, placed second
		 * so the partly used current block keeps serving small ones. */
		size_t cap = need > ARENA_BLOCK ? need : ARENA_BLOCK;
		struct arena_block *nb = malloc(sizeof(*nb) + cap);

		if (!nb)
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		if (blk && need > ARENA_BLOCK) {
			nb->next = blk->next;
			blk->next = nb;
		} else {
			nb->next = blk;
			t->arena = nb;
		}
		blk = nb;
	}
	blk->used += need;
	return blk->data + blk->used - need;
}

vmt_symtab *vmt_symtab_new(void)
{
	return calloc(1, sizeof(vmt_symtab));
}

static int add_stack(vmt_symtab *t, const struct vmt_stack *s)
{
	uint64_t *ips = NULL;

	if (s->id != t->nstacks || s->id == VMT_NONE)
		return VMT_E_CORRUPT;
	if (s->depth > VMT_MAX_STACK_DEPTH || (s->depth && !s->ips))
		return VMT_E_CORRUPT;
	if (vmt_grow(&t->stacks, &t->capstacks, (size_t)t->nstacks + 1, sizeof(*t->stacks)))
		return -ENOMEM;
	if (s->depth) {
		ips = arena_alloc(t, (size_t)s->depth * sizeof(*ips));
		if (!ips)
			return -ENOMEM;
		memcpy(ips, s->ips, (size_t)s->depth * sizeof(*ips));
	}
	t->stacks[t->nstacks].ips = ips;
	t->stacks[t->nstacks].depth = s->depth;
	t->nstacks++;
	return 0;
}

static int add_string(vmt_symtab *t, const struct vmt_string *s)
{
	size_t len;
	char *copy;

	if (s->id != t->nstrings || s->id == VMT_NONE || !s->str)
		return VMT_E_CORRUPT;
	len = strnlen(s->str, VMT_MAX_STRING + 1);
	if (len > VMT_MAX_STRING)
		return VMT_E_CORRUPT;
	if (vmt_grow(&t->strings, &t->capstrings, (size_t)t->nstrings + 1, sizeof(*t->strings)))
		return -ENOMEM;
	/* Function names are kept as people read them: C++ (and Rust)
	 * names demangled, the way c++filt shows them. */
	char *readable = s->str[0] == '_' ? vmt_demangle(s->str) : NULL;
	if (readable)
		len = strlen(readable);
	copy = arena_alloc(t, len + 1);
	if (!copy) {
		free(readable);
		return -ENOMEM;
	}
	memcpy(copy, readable ? readable : s->str, len + 1);
	free(readable);
	t->strings[t->nstrings++] = copy;
	return 0;
}

static int ref_ok(const vmt_symtab *t, uint32_t id)
{
	return id == VMT_NONE ||
	       (uint64_t)id < (uint64_t)t->nstrings + MAX_ID_AHEAD;
}

static int add_symbol(vmt_symtab *t, const struct vmt_symbol *s)
{
	int created;

	if (!ref_ok(t, s->module) || !ref_ok(t, s->function))
		return VMT_E_CORRUPT;
	if (vmt_grow(&t->syms, &t->capsyms, t->nsyms + 1, sizeof(*t->syms)))
		return -ENOMEM;
	uint64_t *at = vmt_htab_put(&t->sym_index, s->ip, 0, &created);
	if (!at)
		return -ENOMEM;
	if (created)
		*at = t->nsyms++;
	/* A repeated ip replaces the earlier symbolization. */
	t->syms[*at] = (struct sym_ent){ s->ip, s->offset, s->module, s->function };
	return 0;
}

int vmt_symtab_add(vmt_symtab *t, const struct vmt_event *ev)
{
	switch (ev->kind) {
	case VMT_EV_STACK:
		return add_stack(t, &ev->u.stack);
	case VMT_EV_STRING:
		return add_string(t, &ev->u.string);
	case VMT_EV_SYMBOL:
		return add_symbol(t, &ev->u.symbol);
	default:
		return 0;
	}
}

const uint64_t *vmt_symtab_stack(const vmt_symtab *t, uint32_t id,
				 uint32_t *depth)
{
	/* A known stack of depth 0 still gets a non-NULL pointer, so that
	 * NULL always means "unknown id". */
	static const uint64_t empty[1];

	if (!t || id >= t->nstacks) {
		if (depth)
			*depth = 0;
		return NULL;
	}
	if (depth)
		*depth = t->stacks[id].depth;
	return t->stacks[id].ips ? t->stacks[id].ips : empty;
}

static const struct sym_ent *sym_find(const vmt_symtab *t, uint64_t ip)
{
	const uint64_t *at = t ? vmt_htab_get(&t->sym_index, ip, 0) : NULL;
	return at ? &t->syms[*at] : NULL;
}

static const char *string_of(const vmt_symtab *t, uint32_t id)
{
	return id < t->nstrings ? t->strings[id] : NULL;
}

const char *vmt_symtab_function(const vmt_symtab *t, uint64_t ip)
{
	const struct sym_ent *e = sym_find(t, ip);

	return e ? string_of(t, e->function) : NULL;
}

const char *vmt_symtab_module(const vmt_symtab *t, uint64_t ip, uint64_t *offset)
{
	const struct sym_ent *e = sym_find(t, ip);

	if (offset)
		*offset = e ? e->offset : 0;
	return e ? string_of(t, e->module) : NULL;
}

void vmt_symtab_render_ip(const vmt_symtab *t, struct vmt_buf *b, uint64_t ip)
{
	const struct sym_ent *e = sym_find(t, ip);
	const char *func = e ? string_of(t, e->function) : NULL;
	const char *mod = e ? string_of(t, e->module) : NULL;
	const char *slash;

	/* The module's file name is enough to tell libraries apart in a
	 * stack listing, and keeps frames short. */
	if (mod && (slash = strrchr(mod, '/')) && slash[1])
		mod = slash + 1;
	if (func) {
		vmt_buf_puts(b, func);
		if (e->offset)
			vmt_buf_printf(b, "+%#llx",
				       (unsigned long long)e->offset);
		if (mod)
			vmt_buf_printf(b, " (%s)", mod);
	} else if (mod) {
		/* The offset is then relative to the module base. */
		vmt_buf_printf(b, "%#llx (%s+%#llx)", (unsigned long long)ip,
			       mod, (unsigned long long)e->offset);
	} else {
		vmt_buf_printf(b, "%#llx", (unsigned long long)ip);
	}
}

void vmt_symtab_free(vmt_symtab *t)
{
	struct arena_block *blk, *next;

	if (!t)
		return;
	for (blk = t->arena; blk; blk = next) {
		next = blk->next;
		free(blk);
	}
	free(t->stacks);
	free(t->strings);
	free(t->syms);
	vmt_htab_free(&t->sym_index);
	free(t);
}
