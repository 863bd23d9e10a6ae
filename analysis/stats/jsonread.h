/*
 * jsonread.h - a small JSON reader: text to a tree of values, for
 * programs that read back what vmrec's tools wrote (vmreplay --json
 * results for `vmtrace diff`).
 *
 * The whole of RFC 8259 is accepted (strings with every escape, numbers
 * as doubles), nested at most VAN_JSON_MAX_DEPTH deep.  Numbers keep
 * 53 bits exactly: plenty for nanosecond counts of a replay.
 */
#ifndef VAN_JSONREAD_H
#define VAN_JSONREAD_H

#include <stddef.h>

#define VAN_JSON_MAX_DEPTH 64

enum van_json_type {
	VAN_JSON_NULL = 0,
	VAN_JSON_FALSE,
	VAN_JSON_TRUE,
	VAN_JSON_NUMBER,
	VAN_JSON_STRING,
	VAN_JSON_ARRAY,
	VAN_JSON_OBJECT,
};

struct van_json {
	int type;		  /* enum van_json_type */
	double num;		  /* VAN_JSON_NUMBER */
	char *str;		  /* VAN_JSON_STRING: NUL-terminated UTF-8 (may hold \0 escapes) */
	char *key;		  /* the member name, for a member of an object */
	size_t n;		  /* elements of an array, members of an object */
	struct van_json *child;	  /* the first element or member */
	struct van_json *next;	  /* the next sibling */
};

/* Parse len bytes of text holding one JSON value (white space around it
 * is allowed, nothing else).  Returns the tree (free with van_json_free),
 * or NULL with a one-line reason in err: "line 3, column 7: expected ':'",
 * or "out of memory". */
struct van_json *van_json_parse(const char *text, size_t len, char *err, size_t errlen);
void van_json_free(struct van_json *v);

/* The member `key` of object v (the first one, if repeated), or NULL when
 * v is not an object or has no such member. */
const struct van_json *van_json_get(const struct van_json *v, const char *key);

/* The number of member `key` of v, or dflt when it is missing or not a
 * number. */
double van_json_num(const struct van_json *v, const char *key, double dflt);

/* The string of member `key` of v, or NULL. */
const char *van_json_str(const struct van_json *v, const char *key);

#endif
