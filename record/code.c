/*
 * code.c - the executable ranges of a traced process, for the stack
 * module's cache of unwind information: when code in a range goes away,
 * what was cached for the process may be stale.
 */
#include <errno.h>
#include <string.h>
#include "rec_internal.h"

int vmr_code_add(struct vmr_code *c, uint64_t start, uint64_t end)
{
	if (vmt_grow(&c->r, &c->cap, c->n + 1, sizeof(*c->r))) {
		/* Unknown code from now on: every removal may hit it. */
		c->lost = 1;
		return -ENOMEM;
	}
	c->r[c->n++] = (struct vmr_range){start, end};
	return 0;
}

int vmr_code_remove(struct vmr_code *c, uint64_t start, uint64_t end)
{
	int hit = c->lost;

	for (size_t i = 0; i < c->n;) {
		if (c->r[i].start < end && start < c->r[i].end) {
			c->r[i] = c->r[--c->n];
			hit = 1;
		} else {
			i++;
		}
	}
	return hit;
}

void vmr_code_reset(struct vmr_code *c)
{
	c->n = 0;
	c->lost = 0;
}

int vmr_code_copy(struct vmr_code *to, const struct vmr_code *from)
{
	vmr_code_reset(to);
	to->lost = from->lost;
	if (vmt_grow(&to->r, &to->cap, from->n, sizeof(*to->r))) {
		to->lost = 1;
		return -ENOMEM;
	}
	if (from->n)
		memcpy(to->r, from->r, from->n * sizeof(*to->r));
	to->n = from->n;
	return 0;
}

void vmr_code_free(struct vmr_code *c)
{
	free(c->r);
	memset(c, 0, sizeof(*c));
}
