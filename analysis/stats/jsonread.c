/*
 * jsonread.c - a recursive-descent JSON reader (jsonread.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonread.h"

struct parser {
	const char *s, *end, *start;
	char *err;
	size_t errlen;
	int failed;
};

static void *fail(struct parser *p, const char *fmt, ...)
{
	if (p->failed)
		return NULL;
	p->failed = 1;
	if (!p->err || !p->errlen)
		return NULL;
	if (strcmp(fmt, "out of memory") == 0) {
		snprintf(p->err, p->errlen, "out of memory");
		return NULL;
	}
	unsigned line = 1, col = 1;
	for (const char *c = p->start; c < p->s && c < p->end; c++) {
		if (*c == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	int k = snprintf(p->err, p->errlen, "line %u, column %u: ", line, col);
	if (k >= 0 && (size_t)k < p->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return NULL;
}

static void skip_ws(struct parser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static struct van_json *node(struct parser *p, int type)
{
	struct van_json *v = calloc(1, sizeof(*v));
	if (!v)
		return fail(p, "out of memory");
	v->type = type;
	return v;
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string literal at p->s (the opening quote); returns it malloc'd. */
static char *string(struct parser *p)
{
	const char *s = p->s + 1;
	/* Escapes only shrink: the literal's length bounds the result. */
	const char *q = s;
	while (q < p->end && *q != '"') {
		if (*q == '\\')
			q++;
		q++;
	}
	if (q >= p->end) {
		p->s = p->end;
		return fail(p, "unterminated string");
	}
	char *out = malloc((size_t)(q - s) + 1), *o = out;
	if (!out)
		return fail(p, "out of memory");
	while (s < q) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20) {
			p->s = s;
			free(out);
			return fail(p, "control character in a string");
		}
		if (c != '\\') {
			*o++ = (char)c;
			s++;
			continue;
		}
		s++;
		switch (*s) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			unsigned cp, lo;
			if (q - s < 5 || hex4(s + 1, &cp)) {
				p->s = s;
				free(out);
				return fail(p, "bad \\u escape");
			}
			s += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && q - s >= 7 && s[1] == '\\' && s[2] == 'u' &&
			    !hex4(s + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				s += 6;
			} else if (cp >= 0xd800 && cp < 0xe000) {
				cp = 0xfffd; /* a lone surrogate */
			}
			o += utf8(o, cp);
			break;
		}
		default:
			p->s = s;
			free(out);
			return fail(p, "bad escape in a string");
		}
		s++;
	}
	*o = 0;
	p->s = q + 1;
	return out;
}

static int number(struct parser *p, double *out)
{
	const char *s = p->s;
	if (s < p->end && *s == '-')
		s++;
	if (s >= p->end || *s < '0' || *s > '9')
		return -1;
	if (*s == '0')
		s++;
	else
		while (s < p->end && *s >= '0' && *s <= '9')
			s++;
	if (s < p->end && *s == '.') {
		s++;
		if (s >= p->end || *s < '0' || *s > '9')
			return -1;
		while (s < p->end && *s >= '0' && *s <= '9')
			s++;
	}
	if (s < p->end && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < p->end && (*s == '+' || *s == '-'))
			s++;
		if (s >= p->end || *s < '0' || *s > '9')
			return -1;
		while (s < p->end && *s >= '0' && *s <= '9')
			s++;
	}
	char buf[64];
	size_t n = (size_t)(s - p->s);
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, p->s, n);
	buf[n] = 0;
	*out = strtod(buf, NULL);
	p->s = s;
	return 0;
}

static struct van_json *value(struct parser *p, int depth);

/* Array or object: the elements (and keys) after the opening bracket. */
static struct van_json *container(struct parser *p, int depth, int object)
{
	struct van_json *v = node(p, object ? VAN_JSON_OBJECT : VAN_JSON_ARRAY), **tail;
	char close = object ? '}' : ']';
	if (!v)
		return NULL;
	tail = &v->child;
	p->s++;
	skip_ws(p);
	if (p->s < p->end && *p->s == close) {
		p->s++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		skip_ws(p);
		if (object) {
			if (p->s >= p->end || *p->s != '"') {
				van_json_free(v);
				return fail(p, "expected a member name");
			}
			key = string(p);
			if (!key) {
				van_json_free(v);
				return NULL;
			}
			skip_ws(p);
			if (p->s >= p->end || *p->s != ':') {
				free(key);
				van_json_free(v);
				return fail(p, "expected ':'");
			}
			p->s++;
		}
		struct van_json *e = value(p, depth + 1);
		if (!e) {
			free(key);
			van_json_free(v);
			return NULL;
		}
		e->key = key;
		*tail = e;
		tail = &e->next;
		v->n++;
		skip_ws(p);
		if (p->s < p->end && *p->s == ',') {
			p->s++;
			continue;
		}
		if (p->s < p->end && *p->s == close) {
			p->s++;
			return v;
		}
		van_json_free(v);
		return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static struct van_json *value(struct parser *p, int depth)
{
	static const struct { const char *word; int type; } words[] = {
		{ "null", VAN_JSON_NULL }, { "false", VAN_JSON_FALSE }, { "true", VAN_JSON_TRUE },
	};
	if (depth > VAN_JSON_MAX_DEPTH)
		return fail(p, "nested more than %d deep", VAN_JSON_MAX_DEPTH);
	skip_ws(p);
	if (p->s >= p->end)
		return fail(p, "unexpected end of the text");
	char c = *p->s;
	if (c == '{' || c == '[')
		return container(p, depth, c == '{');
	if (c == '"') {
		char *s = string(p);
		struct van_json *v = s ? node(p, VAN_JSON_STRING) : NULL;
		if (!v) {
			free(s);
			return NULL;
		}
		v->str = s;
		return v;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i].word);
		if ((size_t)(p->end - p->s) >= n && memcmp(p->s, words[i].word, n) == 0) {
			p->s += n;
			return node(p, words[i].type);
		}
	}
	double d;
	if (number(p, &d) == 0) {
		struct van_json *v = node(p, VAN_JSON_NUMBER);
		if (v)
			v->num = d;
		return v;
	}
	return fail(p, "expected a value");
}

struct van_json *van_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parser p = { text, text + len, text, err, errlen, 0 };
	struct van_json *v = value(&p, 0);
	if (!v)
		return NULL;
	skip_ws(&p);
	if (p.s != p.end) {
		van_json_free(v);
		return fail(&p, "unexpected text after the value");
	}
	return v;
}

void van_json_free(struct van_json *v)
{
	while (v) {
		struct van_json *next = v->next;
		van_json_free(v->child);
		free(v->str);
		free(v->key);
		free(v);
		v = next;
	}
}

const struct van_json *van_json_get(const struct van_json *v, const char *key)
{
	if (!v || v->type != VAN_JSON_OBJECT)
		return NULL;
	for (const struct van_json *m = v->child; m; m = m->next)
		if (strcmp(m->key, key) == 0)
			return m;
	return NULL;
}

double van_json_num(const struct van_json *v, const char *key, double dflt)
{
	const struct van_json *m = van_json_get(v, key);
	return m && m->type == VAN_JSON_NUMBER ? m->num : dflt;
}

const char *van_json_str(const struct van_json *v, const char *key)
{
	const struct van_json *m = van_json_get(v, key);
	return m && m->type == VAN_JSON_STRING ? m->str : NULL;
}
