/*
 * buf.c - struct vmt_buf, the growable string every renderer appends to.
 *
 * Appending never fails visibly: rendering is the last step before output
 * and its callers have nothing useful to do with an error per append.  On
 * allocation failure the buffer sets `oom` and ignores further appends
 * (until reset), so the text is cut at a clean point instead of having
 * holes; the caller checks `oom` once at the end.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmtrace.h"
#include "vmtutil.h"

/* Make room for `more` bytes plus the NUL.  Returns 0, or -1 with oom set. */
static int buf_reserve(struct vmt_buf *b, size_t more)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return -1;
	if (more > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + more + 1;
	if (need <= b->cap && b->data)
		return 0;
	/* Geometric growth keeps a long dump at O(n) copying. */
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		goto fail;
	b->data = p;
	b->cap = cap;
	return 0;
fail:
	b->oom = 1;
	return -1;
}

/* The slow path of vmt_buf_add (vmtrace.h): grow first. */
void vmt_buf_grow_add(struct vmt_buf *b, const char *s, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

#define buf_add vmt_buf_add
#define buf_addc vmt_buf_putc

/* Two decimal digits at a time: half the divisions of one at a time. */
static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* The decimal digits of v: from its bit length, then one comparison. */
static unsigned dec_len(uint64_t v)
{
	static const uint64_t pow10[20] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
		100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
		1000000000000ull, 10000000000000ull, 100000000000000ull,
		1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
		1000000000000000000ull, 10000000000000000000ull,
	};
	if (v < 10)
		return 1;
	unsigned t = (unsigned)(64 - __builtin_clzll(v)) * 1233 >> 12; /* log10(2) */
	return t + 1 - (v < pow10[t]);
}

/* Hex digits eight at a time in the bytes of one word (its lanes, the
 * first digit in the lowest byte), stored with one 8-byte copy that may
 * write past the number inside the room reserved for it (the next group
 * or the NUL overwrites that): a nibble loop was a twentieth of a csv
 * export.  (Decimal the same way made no gain over the digit pairs
 * below: its chain of multiplications is as long as theirs.) */
static inline void put8(char *p, uint64_t w)
{
	memcpy(p, &w, 8);
}

/* (The byte order of the word is the memory order of the digits.) */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "hex8 lays digits out little-endian");

/* Numbers are written in place, from their last digit back: no scratch
 * copy, and 32-bit divisions for all but each eight digits above 2^32
 * (addresses and timestamps in ns, most of an export's numbers). */

/* Room for n more bytes and the NUL: the common case inline. */
static inline int buf_room(struct vmt_buf *b, size_t n)
{
	return (b->data && !b->oom && b->cap - b->len > n) ? 0 : buf_reserve(b, n);
}

/* The 2 * k digits of w, which has no more, ending at end. */
static inline void dec_pairs(char *end, uint32_t w, int k)
{
	while (k-- > 0) {
		unsigned d = (w % 100) * 2;
		w /= 100;
		end -= 2;
		memcpy(end, digit_pairs + d, 2);
	}
}

static void vmt_buf_u64_any(struct vmt_buf *b, uint64_t v)
{
	unsigned n = dec_len(v);
	if (buf_room(b, n) < 0)
		return;
	char *end = b->data + b->len + n, *p = end;
	while (v > UINT32_MAX) { /* eight digits by 32-bit divisions */
		dec_pairs(p, (uint32_t)(v % 100000000), 4);
		v /= 100000000;
		p -= 8;
	}
	uint32_t w = (uint32_t)v;
	while (w >= 100) {
		unsigned d = (w % 100) * 2;
		w /= 100;
		p -= 2;
		memcpy(p, digit_pairs + d, 2);
	}
	if (w >= 10) {
		p -= 2;
		memcpy(p, digit_pairs + w * 2, 2);
	} else {
		*--p = (char)('0' + w);
	}
	b->len += n;
	*end = '\0';
}

int vmt_buf_memoize(struct vmt_buf *b)
{
	if (!b->memo && !(b->memo = calloc(1, sizeof(*b->memo))))
		return -ENOMEM;
	return 0;
}

/* Numbers of nine digits and more: from the buffer's memo where it has
 * them.  Times in ns (14 digits and more) never come again, but their
 * digits above the last eight change only every 0.1 s: those are kept
 * from the last such number, and a time that has them takes no slot. */
void vmt_buf_u64_slow(struct vmt_buf *b, uint64_t v)
{
	struct vmt_buf_memo *mm = b->memo;
	if (v < 100000000 || !mm) {
		vmt_buf_u64_any(b, v);
		return;
	}
	struct vmt_memo_num *m = &mm->num[(v * 0x9e3779b97f4a7c15ull) >> 58];
	if (m->v == v && m->n) {
		if (buf_room(b, sizeof(m->d)) < 0)
			return;
		memcpy(b->data + b->len, m->d, sizeof(m->d));
		b->len += m->n;
		b->data[b->len] = '\0';
		return;
	}
	uint64_t hi = v / 100000000;
	uint32_t lo = (uint32_t)(v % 100000000);
	if (hi == mm->top.hi && mm->top.n) {
		if (buf_room(b, sizeof(mm->top.d) + 8) < 0)
			return;
		char *p = b->data + b->len;
		memcpy(p, mm->top.d, sizeof(mm->top.d));
		dec_pairs(p + mm->top.n + 8, lo, 4);
		b->len += mm->top.n + 8;
		b->data[b->len] = '\0';
		return;
	}
	size_t at = b->len;
	vmt_buf_u64_any(b, v);
	if (b->len > at) {
		m->v = v;
		m->n = (uint32_t)(b->len - at);
		memcpy(m->d, b->data + at, m->n);
		mm->top.hi = hi;
		mm->top.n = m->n - 8;
		memcpy(mm->top.d, m->d, mm->top.n);
	}
}

void vmt_buf_i64(struct vmt_buf *b, int64_t v)
{
	if (v < 0) {
		buf_addc(b, '-');
		vmt_buf_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		vmt_buf_u64(b, (uint64_t)v);
	}
}

/* The 8 hex digits of x: the nibbles spread to a byte each, put in
 * order, and made digits without a branch. */
static inline uint64_t hex8(uint32_t x)
{
	uint64_t t = x;
	t = (t | t << 16) & 0x0000ffff0000ffffull;
	t = (t | t << 8) & 0x00ff00ff00ff00ffull;
	t = (t | t << 4) & 0x0f0f0f0f0f0f0f0full;
	t = __builtin_bswap64(t); /* the most significant nibble first */
	uint64_t letter = ((t + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
	return t + 0x3030303030303030ull + letter * ('a' - '0' - 10);
}

void vmt_buf_hex(struct vmt_buf *b, uint64_t v)
{
	if (v == 0) { /* "%#x" has no prefix for 0 */
		buf_addc(b, '0');
		return;
	}
	unsigned n = (unsigned)(67 - __builtin_clzll(v)) / 4; /* digits */
	if (buf_room(b, n + 10) < 0)
		return;
	char *p = b->data + b->len;
	p[0] = '0';
	p[1] = 'x';
	if (n <= 8) {
		put8(p + 2, hex8((uint32_t)v) >> (8 * (8 - n)));
	} else {
		put8(p + 2, hex8((uint32_t)(v >> 32)) >> (8 * (16 - n)));
		put8(p + 2 + n - 8, hex8((uint32_t)v));
	}
	b->len += n + 2;
	p[n + 2] = '\0';
}

void vmt_buf_printf(struct vmt_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int n;

	if (buf_reserve(b, 0) < 0)
		return;
	/* Try in place first: most appends fit the free space. */
	room = b->cap - b->len;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		/* Only an invalid format gets here; keep the old text. */
		b->data[b->len] = '\0';
		return;
	}
	if ((size_t)n >= room) {
		if (buf_reserve(b, (size_t)n) < 0) {
			b->data[b->len] = '\0';
			return;
		}
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void vmt_buf_puts(struct vmt_buf *b, const char *s)
{
	if (s)
		buf_add(b, s, strlen(s));
}

/*
 * Length of the well-formed UTF-8 sequence at s (1..4), or 0 if the bytes
 * there are not one: overlong forms, surrogates and code points above
 * U+10FFFF are rejected as RFC 3629 requires, so the output is always
 * valid UTF-8 whatever a path or symbol name contained.
 */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80;
		unsigned char hi = c == 0xed ? 0x9f : 0xbf;

		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80;
		unsigned char hi = c == 0xf4 ? 0x8f : 0xbf;

		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

/*
 * Shared body of the JSON and C quoting: plain runs are copied in one go,
 * every other byte goes through esc().  The NUL terminator stops the
 * multi-byte checks in utf8_len() before they read past the string,
 * since a NUL is never a continuation byte.
 */
static void quote(struct vmt_buf *b, const char *s,
		  void (*esc)(struct vmt_buf *, unsigned char))
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *run = p;

	buf_addc(b, '"');
	while (*p) {
		size_t n = 1;

		if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') {
			p++;
			continue;
		}
		if (*p >= 0x80 && (n = utf8_len(p)) > 0) {
			p += n;
			continue;
		}
		buf_add(b, (const char *)run, (size_t)(p - run));
		esc(b, *p);
		run = ++p;
	}
	buf_add(b, (const char *)run, (size_t)(p - run));
	buf_addc(b, '"');
}

static void json_esc(struct vmt_buf *b, unsigned char c)
{
	switch (c) {
	case '"': buf_add(b, "\\\"", 2); break;
	case '\\': buf_add(b, "\\\\", 2); break;
	case '\b': buf_add(b, "\\b", 2); break;
	case '\f': buf_add(b, "\\f", 2); break;
	case '\n': buf_add(b, "\\n", 2); break;
	case '\r': buf_add(b, "\\r", 2); break;
	case '\t': buf_add(b, "\\t", 2); break;
	default:
		/* Control characters, DEL and bytes that are not UTF-8: JSON
		 * strings are Unicode, so a stray byte becomes the code point
		 * of the same value (its Latin-1 reading). */
		vmt_buf_printf(b, "\\u%04x", c);
		break;
	}
}

static void c_esc(struct vmt_buf *b, unsigned char c)
{
	switch (c) {
	case '"': buf_add(b, "\\\"", 2); break;
	case '\\': buf_add(b, "\\\\", 2); break;
	case '\n': buf_add(b, "\\n", 2); break;
	case '\r': buf_add(b, "\\r", 2); break;
	case '\t': buf_add(b, "\\t", 2); break;
	default:
		vmt_buf_printf(b, "\\x%02x", c);
		break;
	}
}

void vmt_buf_json_str(struct vmt_buf *b, const char *s)
{
	if (!s) {
		buf_add(b, "null", 4);
		return;
	}
	/* Names (kinds, ops, errnos: most strings of an export) need no
	 * escape: one pass to see that, and one copy with the quotes. */
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	while (p[n] >= 0x20 && p[n] < 0x7f && p[n] != '"' && p[n] != '\\')
		n++;
	if (p[n]) {
		quote(b, s, json_esc);
		return;
	}
	if (buf_room(b, n + 2) < 0)
		return;
	char *d = b->data + b->len;
	d[0] = '"';
	memcpy(d + 1, s, n);
	d[n + 1] = '"';
	b->len += n + 2;
	d[n + 2] = '\0';
}

void vmt_buf_json_close(struct vmt_buf *b, size_t from)
{
	const unsigned char *p, *end;
	char *raw;

	if (b->oom || from >= b->len)
		return;
	p = (const unsigned char *)b->data + from + 1;
	end = (const unsigned char *)b->data + b->len;
	/* Eight bytes at a time while none needs a look (the text of a
	 * JSON line is most of it): any byte below 0x20, with the top bit,
	 * 0x7f, '"' or '\\' stops the word test. */
	for (uint64_t w; end - p >= 8; p += 8) {
		const uint64_t ones = 0x0101010101010101ull, high = ones * 0x80;
		memcpy(&w, p, 8);
		uint64_t q = w ^ (ones * '"'), s = w ^ (ones * '\\'), d = w ^ (ones * 0x7f);
		/* (x - ones) & ~x & high: some byte of x is 0; with ones *
		 * 0x20, below 0x20 (both exact for "some", not for "which") */
		if ((((w - ones * 0x20) & ~w) | w | ((q - ones) & ~q) | ((s - ones) & ~s) |
		     ((d - ones) & ~d)) & high)
			break;
	}
	while (p < end && *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
		p++;
	if (p == end) {
		buf_addc(b, '"');
		return;
	}
	/* Something to escape: quote a copy of the text (as rare as a
	 * quote or a control character in a path). */
	raw = strdup(b->data + from + 1);
	if (!raw) {
		b->oom = 1;
		return;
	}
	b->len = from;
	b->data[from] = '\0';
	vmt_buf_json_str(b, raw);
	free(raw);
}

void vmt_buf_quote(struct vmt_buf *b, const char *s)
{
	if (!s) {
		buf_add(b, "NULL", 4);
		return;
	}
	quote(b, s, c_esc);
}

static int shell_safe(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_@%+=:,./-", c));
}

static void shell_word(struct vmt_buf *b, const char *w)
{
	const unsigned char *p = (const unsigned char *)w;
	int bare = *p != 0, ctl = 0;
	for (; *p; p++) {
		bare &= shell_safe(*p);
		ctl |= *p < 0x20 || *p == 0x7f;
	}
	if (bare) {
		vmt_buf_puts(b, w);
		return;
	}
	if (!ctl) {
		buf_addc(b, '\'');
		for (p = (const unsigned char *)w; *p; p++) {
			if (*p == '\'')
				buf_add(b, "'\\''", 4);
			else
				buf_addc(b, (char)*p);
		}
		buf_addc(b, '\'');
		return;
	}
	buf_add(b, "$'", 2);
	for (p = (const unsigned char *)w; *p; p++) {
		switch (*p) {
		case '\'': buf_add(b, "\\'", 2); break;
		case '\\': buf_add(b, "\\\\", 2); break;
		case '\n': buf_add(b, "\\n", 2); break;
		case '\t': buf_add(b, "\\t", 2); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				vmt_buf_printf(b, "\\x%02x", *p);
			else
				buf_addc(b, (char)*p);
		}
	}
	buf_addc(b, '\'');
}

void vmt_buf_shell_words(struct vmt_buf *b, const char *const *argv, uint32_t argc)
{
	for (uint32_t i = 0; i < argc; i++) {
		if (i)
			buf_addc(b, ' ');
		shell_word(b, argv[i] ? argv[i] : "");
	}
}

void vmt_buf_reset(struct vmt_buf *b)
{
	b->len = 0;
	b->oom = 0;
	if (b->data)
		b->data[0] = '\0';
}

void vmt_buf_json_num(struct vmt_buf *b, double v)
{
	if (!isfinite(v))
		vmt_buf_puts(b, "null");
	else if (v == floor(v) && fabs(v) < 1e15)
		vmt_buf_printf(b, "%.0f", v);
	else
		vmt_buf_printf(b, "%.6g", v);
}

int vmt_buf_write(const struct vmt_buf *b, FILE *f)
{
	if (b->oom)
		return -ENOMEM;
	if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
		return -EIO;
	return 0;
}

void vmt_buf_free(struct vmt_buf *b)
{
	if (!b)
		return;
	free(b->data);
	free(b->memo);
	b->data = NULL;
	b->memo = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}
