/*
 * rules.c - the rewrite rules vmtrace and vmreplay know, and the parsing
 * of a rule list into the chain the engine (rewrite.c) runs.
 */
#include <errno.h>
#include <string.h>
#include "rewrite_int.h"

static const struct rw_rule *const all_rules[] = {
	&rw_rule_prot_none_free,
	&rw_rule_dontneed_to_free,
	&rw_rule_free_to_dontneed,
	&rw_rule_mlock_onfault,
	&rw_rule_populate,
	&rw_rule_discard_before_unmap,
	&rw_rule_free_before_dontneed,
};
#define NRULES (sizeof(all_rules) / sizeof(all_rules[0]))
_Static_assert(NRULES <= RW_MAX_RULES, "RW_MAX_RULES is too small");

const struct van_rewrite_rule_info *van_rewrite_rules(size_t *n)
{
	static struct van_rewrite_rule_info info[NRULES];
	for (size_t i = 0; i < NRULES; i++)
		info[i] = (struct van_rewrite_rule_info){ all_rules[i]->name, all_rules[i]->summary };
	*n = NRULES;
	return info;
}

/* Parse `rules` into rule pointers; 0 or -EINVAL with a message. */
static int parse(const char *rules, const struct rw_rule **out, unsigned *n, char *err,
		 size_t errlen)
{
	if (!rules || !*rules)
		rules = VAN_REWRITE_DEFAULT;
	if (strlen(rules) >= VAN_REWRITE_MAX_LIST) {
		return vmt_errf(err, errlen, -EINVAL,
				"rewrite rule list too long (%zu bytes, at most %d)", strlen(rules),
				VAN_REWRITE_MAX_LIST - 1);
	}
	*n = 0;
	for (const char *p = rules;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (!len) {
			return vmt_errf(err, errlen, -EINVAL,
					"empty rewrite rule name in '%s'", rules);
		}
		const struct rw_rule *r = NULL;
		for (size_t i = 0; i < NRULES; i++)
			if ((strlen(all_rules[i]->name) == len && !memcmp(all_rules[i]->name, p, len)) ||
			    (all_rules[i]->alias && strlen(all_rules[i]->alias) == len &&
			     !memcmp(all_rules[i]->alias, p, len)))
				r = all_rules[i];
		if (!r) {
			char known[256] = "";
			for (size_t i = 0; i < NRULES; i++) {
				strcat(known, i ? ", " : "");
				strcat(known, all_rules[i]->name);
			}
			return vmt_errf(err, errlen, -EINVAL,
					"unknown rewrite rule '%.*s' (rules: %s)", (int)len, p, known);
		}
		for (unsigned i = 0; i < *n; i++)
			if (out[i] == r) {
				return vmt_errf(err, errlen, -EINVAL,
						"rewrite rule '%s' given twice", r->name);
			}
		out[(*n)++] = r;
		if (!e)
			break;
		p = e + 1;
	}
	int d2f = 0, f2d = 0;
	for (unsigned i = 0; i < *n; i++) {
		d2f |= out[i] == &rw_rule_dontneed_to_free;
		f2d |= out[i] == &rw_rule_free_to_dontneed;
	}
	if (d2f && f2d) {
		return vmt_errf(err, errlen, -EINVAL,
				"rewrite rules 'dontneed-to-free' and 'free-to-dontneed' undo each other");
	}
	return 0;
}

int van_rewrite_check(const char *rules, char *err, size_t errlen)
{
	const struct rw_rule *r[NRULES + 1];
	unsigned n;
	return parse(rules, r, &n, err, errlen);
}

van_rewrite *van_rewrite_new(const char *rules, char *err, size_t errlen)
{
	const struct rw_rule *r[NRULES + 1];
	unsigned n;
	if (parse(rules, r, &n, err, errlen))
		return NULL;
	return rw_engine_new(r, n, err, errlen);
}
