/*
 * callsite_int.h - call sites: which function made a call, named from the
 * call's stack, for the findings of `vmtrace lint` and the counts of
 * `vmtrace rewrite`.
 *
 * A call site is the innermost frame of the stack that is not the C
 * library's wrapper of the call itself (glibc's mmap, __mmap64, ...): for
 * a JVM heap uncommit that is "os::pd_uncommit_memory(char*, unsigned
 * long, bool) (libjvm.so)", for glibc's arena growth "sysmalloc
 * (libc.so.6)".  Function names are the symbol table's (demangled);
 * modules are file names.  A frame without a function is shown as
 * "module+0xOFFSET" (from the module's base), one without a module as its
 * address.
 *
 * Symbols come at the end of a recording, so a pass over a trace tallies
 * calls by stack and names the sites when it is done.  Library code: 0 or
 * -ENOMEM, no prints.
 */
#ifndef VAN_CALLSITE_INT_H
#define VAN_CALLSITE_INT_H

#include <stdint.h>
#include "vmtutil.h"
#include "vmtrace.h"

/* Append the call site of a call to `op` made from stack ips[0..depth) to
 * b.  Returns 1, or 0 (nothing appended) for an empty stack. */
int cs_render(const vmt_symtab *t, const uint64_t *ips, uint32_t depth, uint32_t op,
	      struct vmt_buf *b);

/* Calls counted by (stack id, op). */
struct cs_tally {
	struct vmt_htab t;
	uint64_t total;
	/* cs_tally_add()'s memo of the last slot (valid while t.e is
	 * last_e) */
	uint64_t *last_v;
	const void *last_e;
	uint32_t last_stack, last_op;
};

void cs_tally_init(struct cs_tally *c);
void cs_tally_free(struct cs_tally *c);

/* Count n calls to op from stack `stack` (VMT_NONE: a call without one).
 * 0 or -ENOMEM. */
int cs_tally_add(struct cs_tally *c, uint32_t stack, uint32_t op, uint64_t n);

#define CS_SITE_TEXT 200

struct cs_site {
	char text[CS_SITE_TEXT];
	uint64_t calls;
};

/* The tally as sites (stacks with the same call site add up), most calls
 * first, the first `max` into out[]; returns how many were written (>= 0)
 * or -ENOMEM.  *rest (if not NULL) gets the calls not listed: at further
 * sites, or without a stack or a symbol table entry. */
int cs_tally_sites(const struct cs_tally *c, const vmt_symtab *t, struct cs_site *out,
		   uint32_t max, uint64_t *rest);

#endif
