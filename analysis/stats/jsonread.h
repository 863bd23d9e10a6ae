/*
 * jsonread.h - a small JSON reader: text to a tree of values, for
 * programs that read back what vmrec's tools wrote (vmreplay --json
 * results for `vmtrace diff`).
 *
 * The whole of RFC 8259 is accepted (strings with every escape, numbers
 * as doubles), nested at most VMT_JSON_MAX_DEPTH deep.  Numbers keep
 * 53 bits exactly: plenty for nanosecond counts of a replay.
 */
#ifndef VMT_JSONREAD_H
#define VMT_JSONREAD_H

#include <stddef.h>

#define VMT_JSON_MAX_DEPTH 64

enum vmt_json_type {
	VMT_JSON_NULL = 0,
	VMT_JSON_FALSE,
	VMT_JSON_TRUE,
	VMT_JSON_NUMBER,
	VMT_JSON_STRING,
	VMT_JSON_ARRAY,
	VMT_JSON_OBJECT,
};

struct vmt_json {
	int type;		  /* enum vmt_json_type */
	double num;		  /* VMT_JSON_NUMBER */
	char *str;		  /* VMT_JSON_STRING: NUL-terminated UTF-8 (may hold \0 escapes) */
	char *key;		  /* the member name, for a member of an object */
	size_t n;		  /* elements of an array, members of an object */
	struct vmt_json *child;	  /* the first element or member */
	struct vmt_json *next;	  /* the next sibling */
};

/* Parse len bytes of text holding one JSON value (white space around it
 * is allowed, nothing else).  Returns the tree (free with vmt_json_free),
 * or NULL with a one-line reason in err: "line 3, column 7: expected ':'",
 * or "out of memory". */
struct vmt_json *vmt_json_parse(const char *text, size_t len, char *err, size_t errlen);
void vmt_json_free(struct vmt_json *v);

/* The member `key` of object v (the first one, if repeated), or NULL when
 * v is not an object or has no such member. */
const struct vmt_json *vmt_json_get(const struct vmt_json *v, const char *key);

/* The number of member `key` of v, or dflt when it is missing or not a
 * number. */
double vmt_json_num(const struct vmt_json *v, const char *key, double dflt);

/* The string of member `key` of v, or NULL. */
const char *vmt_json_str(const struct vmt_json *v, const char *key);

#endif
