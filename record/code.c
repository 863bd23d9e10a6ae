/*
 * code.c - the executable ranges of a traced process, for the stack
 * module's cache of unwind information: when code in a range goes away,
 * what was cached for the process may be stale.
 */
#include <errno.h>
#include <string.h>
#include "record_int.h"

int vmr_code_add(struct vmr_code *c, uint64_t start, uint64_t end)
{
	if (start >= end)
		return 0;
	/* Room first (a cut may split one range, then one more): the cut
	 * and the insertion below cannot fail. */
	if (vmt_grow(&c->r.e, &c->r.cap, c->r.n + 2, sizeof(*c->r.e))) {
		/* Unknown code from now on: every removal may hit it. */
		c->lost = 1;
		return -ENOMEM;
	}
	vmt_rset_cut(&c->r, start, end);
	return vmt_rset_add(&c->r, &(struct vmt_rset_ent){ .start = start, .end = end });
}

int vmr_code_remove(struct vmr_code *c, uint64_t start, uint64_t end)
{
	int hit = c->lost;
	size_t i = vmt_rset_first(&c->r, start);
	while (i < c->r.n && c->r.e[i].start < end) {
		vmt_rset_del(&c->r, i);
		hit = 1;
	}
	return hit;
}

void vmr_code_reset(struct vmr_code *c)
{
	c->r.n = 0;
	c->lost = 0;
}

int vmr_code_copy(struct vmr_code *to, const struct vmr_code *from)
{
	vmr_code_reset(to);
	to->lost = from->lost;
	if (vmt_grow(&to->r.e, &to->r.cap, from->r.n, sizeof(*to->r.e))) {
		to->lost = 1;
		return -ENOMEM;
	}
	if (from->r.n)
		memcpy(to->r.e, from->r.e, from->r.n * sizeof(*to->r.e));
	to->r.n = from->r.n;
	return 0;
}

void vmr_code_free(struct vmr_code *c)
{
	vmt_rset_free(&c->r);
	c->lost = 0;
}
