/*
 * callsite.c - see callsite_int.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "callsite_int.h"

/* A wrapper's name is the call's, decorated: "__GI___mmap64", "__mmap",
 * "mmap64".  Strip the decorations and compare. */
static int is_wrapper(const char *func, uint32_t op)
{
	const struct vmt_op_info *oi = vmt_op_info(op);
	if (!func || !oi)
		return 0;
	if (!strncmp(func, "__GI_", 5))
		func += 5;
	while (*func == '_')
		func++;
	size_t n = strlen(func);
	if (n > 2 && !strcmp(func + n - 2, "64"))
		n -= 2;
	if (n == 7 && !strncmp(func, "syscall", 7))
		return 1;
	return (strlen(oi->name) == n && !strncmp(func, oi->name, n)) ||
	       (oi->sysname && strlen(oi->sysname) == n && !strncmp(func, oi->sysname, n));
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s && s[1] ? s + 1 : path;
}

int cs_render(const vmt_symtab *t, const uint64_t *ips, uint32_t depth, uint32_t op,
	      struct vmt_buf *b)
{
	if (!ips || !depth)
		return 0;
	uint32_t i = 0;
	/* At most two frames of wrapper (a public name calling an internal
	 * one), and never the whole stack. */
	while (i < 2 && i + 1 < depth && is_wrapper(vmt_symtab_function(t, ips[i]), op))
		i++;
	uint64_t off = 0;
	const char *func = vmt_symtab_function(t, ips[i]);
	const char *mod = base_name(vmt_symtab_module(t, ips[i], &off));
	if (func && mod)
		vmt_buf_printf(b, "%s (%s)", func, mod);
	else if (func)
		vmt_buf_puts(b, func);
	else if (mod)
		vmt_buf_printf(b, "%s+%#llx", mod, (unsigned long long)off);
	else
		vmt_buf_printf(b, "%#llx", (unsigned long long)ips[i]);
	return 1;
}

void cs_tally_init(struct cs_tally *c)
{
	vmt_htab_init(&c->t);
	c->total = 0;
	c->last_v = NULL;
}

void cs_tally_free(struct cs_tally *c)
{
	vmt_htab_free(&c->t);
	c->total = 0;
	c->last_v = NULL;
}

int cs_tally_add(struct cs_tally *c, uint32_t stack, uint32_t op, uint64_t n)
{
	/* A loop calls from one site: the slot of the last (stack, op) is
	 * kept while the table's array stays (a tally never deletes, so
	 * only a growth moves slots). */
	uint64_t *v = c->last_v;
	if (!v || c->last_e != c->t.e || c->last_stack != stack || c->last_op != op) {
		if (!(v = vmt_htab_put(&c->t, stack, op, NULL)))
			return -ENOMEM;
		c->last_v = v;
		c->last_e = c->t.e;
		c->last_stack = stack;
		c->last_op = op;
	}
	*v += n;
	c->total += n;
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct cs_site *)a)->text, ((const struct cs_site *)b)->text);
}

static int by_calls(const void *a, const void *b)
{
	const struct cs_site *x = a, *y = b;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return strcmp(x->text, y->text);
}

int cs_tally_sites(const struct cs_tally *c, const vmt_symtab *t, struct cs_site *out,
		   uint32_t max, uint64_t *rest)
{
	struct cs_site *all = c->t.n ? calloc(c->t.n, sizeof(*all)) : NULL;
	struct vmt_buf b = { 0 };
	size_t n = 0;
	uint64_t listed = 0;
	if (c->t.n && !all)
		return -ENOMEM;
	for (size_t i = 0; i < c->t.cap; i++) {
		const struct vmt_htab_ent *e = &c->t.e[i];
		if (!e->used || e->a == VMT_NONE)
			continue;
		uint32_t depth = 0;
		const uint64_t *ips = vmt_symtab_stack(t, (uint32_t)e->a, &depth);
		vmt_buf_reset(&b);
		if (!cs_render(t, ips, depth, (uint32_t)e->b, &b) || b.oom)
			continue;
		snprintf(all[n].text, sizeof(all[n].text), "%s", b.data);
		all[n++].calls = e->v;
	}
	vmt_buf_free(&b);
	if (!n) {
		free(all);
		if (rest)
			*rest = c->total;
		return 0;
	}
	qsort(all, n, sizeof(*all), by_text);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(all[m - 1].text, all[i].text))
			all[m - 1].calls += all[i].calls;
		else
			all[m++] = all[i];
	}
	qsort(all, m, sizeof(*all), by_calls);
	uint32_t k = 0;
	for (; k < max && k < m; k++) {
		out[k] = all[k];
		listed += all[k].calls;
	}
	free(all);
	if (rest)
		*rest = c->total - listed;
	return (int)k;
}
