/*
 * reader.c - the streaming trace reader.
 *
 * The file is untrusted: every length is checked against the format limits
 * and, for regular files, against the bytes actually left in the file
 * before anything is allocated; zstd frames are checked against their
 * descriptor and their content checksum; every decoded event is validated.
 * Errors are sticky and carry the byte offset where they were found.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include "codec_int.h"
#include "prefetch_int.h"

struct vmt_reader {
	int fd;
	int err;
	char msg[320];
	uint64_t pos;	    /* file offset of the next unread byte */
	uint64_t file_size; /* UINT64_MAX when unknown (pipe) */

	struct vmt_header hdr;
	char **hstrings; /* owned copies of header strings */
	uint32_t nhstrings;
	const char **argv;

	ZSTD_DCtx *dctx;
	uint8_t *cbuf, *rbuf; /* compressed / raw chunk bytes */
	size_t ccap, rcap;
	struct vmt_cursor cur;	 /* record section of the current chunk */
	struct vmt_cursor times; /* its time section */
	uint64_t chunk_off;    /* offset of the current chunk's descriptor */
	uint64_t chunk_raw_base;
	uint32_t chunk_left;   /* events still to decode per descriptor */
	uint32_t chunk_decoded;
	uint64_t chunk_first_ts; /* from the descriptor, checked */
	struct vmt_tmap tm;
	struct vmt_scratch scratch;

	uint64_t events;  /* events returned so far */
	uint64_t by_kind[VMT_EV__COUNT]; /* to check the footer's counts */
	uint32_t nchunks; /* chunks read */
	int done;
	struct vmt_footer footer;
	struct vmt_chunk_info *chunks;

	/* With vmt_reader_prefetch(): the fields above belong to the
	 * producer thread until the consumer has seen the end (pf_final);
	 * the consumer's own position is here. */
	struct vmt_prefetch *pf;
	struct vmt_event ev; /* vmt_reader_next_ref's, without prefetch */
	int pf_final;	      /* 0, 1 (end reached), or the error */
	/* the batch being handed out: [pf_first, pf_end), pf_cur the next;
	 * pf_before events were returned before it */
	const struct vmt_event *pf_first, *pf_cur, *pf_end;
	uint64_t pf_before;
	uint64_t pf_chunk_off;
};

static int fail(struct vmt_reader *r, int err, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(struct vmt_reader *r, int err, uint64_t off, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	const char *lead = err == VMT_E_TRUNC ? "truncated" : "bad trace";
	if (err == VMT_E_MAGIC)
		lead = "not a vmtrace file";
	else if (err == VMT_E_VERSION)
		lead = "unsupported version";
	else if (err > -1000)
		lead = "read error";
	if (err == -EISDIR) /* (nothing was read: no byte to name) */
		snprintf(r->msg, sizeof(r->msg), "%s", what);
	else
		snprintf(r->msg, sizeof(r->msg), "%s at byte %llu: %s", lead,
			 (unsigned long long)off, what);
	r->err = err;
	return err;
}

/* Read exactly n bytes; returns n, or fewer at end of file, or -errno. */
static ssize_t read_upto(struct vmt_reader *r, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(r->fd, (char *)buf + got, n - got);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	r->pos += got;
	return (ssize_t)got;
}

/* Read exactly n bytes of a structure that starts at `start` and is
 * described as `what`. */
static int read_exact(struct vmt_reader *r, void *buf, size_t n, uint64_t start,
		      const char *what)
{
	ssize_t k = read_upto(r, buf, n);
	if (k < 0)
		return fail(r, (int)k, r->pos, "%s", strerror((int)-k));
	if ((size_t)k < n)
		return fail(r, VMT_E_TRUNC, r->pos,
			    "%s at byte %llu needs %zu more bytes, file has %zu",
			    what, (unsigned long long)start, n, (size_t)k);
	return 0;
}

/* Bytes left in the file after pos, or UINT64_MAX when unknown. */
static uint64_t left(const struct vmt_reader *r)
{
	if (r->file_size == UINT64_MAX)
		return UINT64_MAX;
	return r->file_size > r->pos ? r->file_size - r->pos : 0;
}

static const char *keep_str(struct vmt_reader *r, const uint8_t *p, size_t n)
{
	char **ns = realloc(r->hstrings, sizeof(*ns) * (r->nhstrings + 1));
	if (!ns)
		return NULL;
	r->hstrings = ns;
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = 0;
	r->hstrings[r->nhstrings++] = s;
	return s;
}

static int parse_header(struct vmt_reader *r, const uint8_t *p, size_t n, uint64_t off)
{
	if (n < 12 || memcmp(p, VMT_HEADER_ID, 4))
		return fail(r, VMT_E_MAGIC, off, "header frame lacks the \"VMTR\" identifier");
	r->hdr.major = (uint16_t)(p[4] | p[5] << 8);
	r->hdr.minor = (uint16_t)(p[6] | p[7] << 8);
	if (r->hdr.major != VMT_FORMAT_MAJOR)
		return fail(r, VMT_E_VERSION, off + 4,
			    "trace format %u.%u, this reader reads %u.x",
			    r->hdr.major, r->hdr.minor, VMT_FORMAT_MAJOR);
	r->hdr.arch = r->hdr.kernel = r->hdr.hostname = "";
	r->hdr.options = r->hdr.recorder = r->hdr.backend = r->hdr.touch = "";
	struct vmt_cursor c = { p + 12, p + n, 0 };
	uint32_t argc = 0, argcap = 0;
	while (c.p < c.end) {
		uint64_t foff = off + 8 + (uint64_t)(c.p - p);
		uint64_t key = vmt_get_varint(&c), len = vmt_get_varint(&c);
		if (c.bad || len > (uint64_t)(c.end - c.p))
			return fail(r, VMT_E_CORRUPT, foff, "malformed header field");
		const uint8_t *v = c.p;
		c.p += len;
		const char *s = NULL;
		uint64_t num = 0;
		switch (key) {
		case VMT_HK_ARCH: case VMT_HK_KERNEL: case VMT_HK_HOSTNAME:
		case VMT_HK_ARG: case VMT_HK_OPTIONS: case VMT_HK_RECORDER:
		case VMT_HK_BACKEND: case VMT_HK_TOUCH:
			if (memchr(v, 0, len))
				return fail(r, VMT_E_CORRUPT, foff, "header string contains NUL");
			if (!(s = keep_str(r, v, len)))
				return fail(r, -ENOMEM, foff, "out of memory");
			break;
		case VMT_HK_PAGE_SIZE: case VMT_HK_START_REALTIME: case VMT_HK_START_MONO: {
			struct vmt_cursor vc = { v, v + len, 0 };
			num = vmt_get_varint(&vc);
			if (vc.bad || vc.p != vc.end)
				return fail(r, VMT_E_CORRUPT, foff, "malformed header number");
			break;
		}
		default:
			continue; /* a field from a newer version */
		}
		switch (key) {
		case VMT_HK_ARCH: r->hdr.arch = s; break;
		case VMT_HK_KERNEL: r->hdr.kernel = s; break;
		case VMT_HK_HOSTNAME: r->hdr.hostname = s; break;
		case VMT_HK_OPTIONS: r->hdr.options = s; break;
		case VMT_HK_RECORDER: r->hdr.recorder = s; break;
		case VMT_HK_BACKEND: r->hdr.backend = s; break;
		case VMT_HK_TOUCH: r->hdr.touch = s; break;
		case VMT_HK_ARG:
			if (argc == VMT_MAX_ARGV)
				return fail(r, VMT_E_LIMIT, foff, "more than %u arguments", VMT_MAX_ARGV);
			if (argc == argcap) {
				argcap = argcap ? argcap * 2 : 8;
				const char **na = realloc(r->argv, sizeof(*na) * (argcap + 1));
				if (!na)
					return fail(r, -ENOMEM, foff, "out of memory");
				r->argv = na;
			}
			r->argv[argc++] = s;
			r->argv[argc] = NULL;
			break;
		case VMT_HK_PAGE_SIZE:
			if (num < 1024 || num > (1u << 30) || (num & (num - 1)))
				return fail(r, VMT_E_CORRUPT, foff, "page size %llu is not a power of two in [1K, 1G]",
					    (unsigned long long)num);
			r->hdr.page_size = (uint32_t)num;
			break;
		case VMT_HK_START_REALTIME: r->hdr.start_realtime_ns = num; break;
		case VMT_HK_START_MONO: r->hdr.start_mono_ns = num; break;
		}
	}
	if (!r->hdr.page_size)
		r->hdr.page_size = 4096;
	/* Before 1.1 vmrec had one backend, and the touch source was only
	 * in the options ("touch=MODE"). */
	if (!*r->hdr.backend && !strncmp(r->hdr.recorder, "vmrec ", 6))
		r->hdr.backend = "ptrace";
	if (!*r->hdr.touch) {
		static const char *const modes[] = { "resident", "faults", "none" };
		const char *t = strstr(r->hdr.options, "touch=");
		for (int i = 0; t && i < 3; i++) {
			size_t l = strlen(modes[i]);
			if (!strncmp(t + 6, modes[i], l) && (!t[6 + l] || t[6 + l] == ' '))
				r->hdr.touch = modes[i];
		}
	}
	r->hdr.argc = argc;
	r->hdr.argv = r->argv;
	return 0;
}

vmt_reader *vmt_reader_open_fd(int fd, int *errp, char *errmsg, size_t errlen)
{
	struct vmt_reader *r = calloc(1, sizeof(*r));
	int err;
	if (!r) {
		if (errp)
			*errp = -ENOMEM;
		if (errmsg && errlen)
			snprintf(errmsg, errlen, "out of memory");
		return NULL;
	}
	r->fd = fd;
	r->file_size = UINT64_MAX;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		err = fail(r, -EISDIR, 0, "is a directory, not a trace");
		goto out;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t cur = lseek(fd, 0, SEEK_CUR);
		r->file_size = (uint64_t)st.st_size;
		if (cur > 0)
			r->pos = (uint64_t)cur;
	}
	uint8_t fh[8];
	err = read_exact(r, fh, 8, 0, "header frame");
	if (err == VMT_E_TRUNC) {
		if (r->pos == 0)
			fail(r, VMT_E_MAGIC, 0, "the file is empty");
		else
			fail(r, VMT_E_MAGIC, 0, "file shorter than a trace header");
		goto out;
	} else if (err) {
		goto out; /* (a read error, said as it is) */
	}
	uint32_t magic = vmt_get_le32(fh), size = vmt_get_le32(fh + 4);
	if (magic != VMT_MAGIC_HEADER) {
		fail(r, VMT_E_MAGIC, 0, magic == VMT_ZSTD_MAGIC
			? "a plain zstd file, not a vmtrace trace"
			: "bad magic number 0x%08x (expected 0x%08x)", magic, VMT_MAGIC_HEADER);
		goto out;
	}
	if (size > VMT_MAX_HEADER_SIZE || size > left(r)) {
		fail(r, size > left(r) ? VMT_E_TRUNC : VMT_E_LIMIT, 4,
		     "header size %u exceeds %s", size,
		     size > left(r) ? "the file" : "the 1 MiB limit");
		goto out;
	}
	uint8_t *hb = malloc(size ? size : 1);
	if (!hb) {
		fail(r, -ENOMEM, 8, "out of memory");
		goto out;
	}
	err = read_exact(r, hb, size, 8, "header");
	if (!err)
		parse_header(r, hb, size, 8);
	free(hb);
	if (!r->err && !(r->dctx = ZSTD_createDCtx()))
		fail(r, -ENOMEM, r->pos, "out of memory");
out:
	if (r->err) {
		if (errp)
			*errp = r->err;
		if (errmsg && errlen)
			snprintf(errmsg, errlen, "%s", r->msg);
		vmt_reader_free(r);
		return NULL;
	}
	return r;
}

const struct vmt_header *vmt_reader_header(const vmt_reader *r)
{
	return &r->hdr;
}

static int grow(uint8_t **buf, size_t *cap, size_t n)
{
	if (*cap >= n)
		return 0;
	uint8_t *p = realloc(*buf, n);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

static int read_chunk(struct vmt_reader *r, uint64_t off)
{
	uint8_t d[VMT_CHUNK_DESC_SIZE];
	int err = read_exact(r, d, sizeof(d), off, "chunk descriptor");
	if (err)
		return err;
	if (memcmp(d, VMT_CHUNK_ID, 4))
		return fail(r, VMT_E_CORRUPT, off + 8, "chunk descriptor lacks \"VMTC\"");
	uint32_t raw = vmt_get_le32(d + 4), comp = vmt_get_le32(d + 8);
	uint32_t nev = vmt_get_le32(d + 12);
	uint64_t first = vmt_get_le64(d + 16);
	r->chunk_first_ts = vmt_get_le64(d + 24);
	if (raw > VMT_MAX_CHUNK_BYTES)
		return fail(r, VMT_E_LIMIT, off + 12, "chunk claims %u bytes (limit %u)",
			    raw, VMT_MAX_CHUNK_BYTES);
	if ((uint64_t)raw > (uint64_t)comp * VMT_MAX_RATIO + 65536)
		return fail(r, VMT_E_CORRUPT, off + 12,
			    "chunk claims %u bytes from %u compressed bytes", raw, comp);
	if (comp > ZSTD_compressBound(VMT_MAX_CHUNK_BYTES) || comp < 9)
		return fail(r, VMT_E_CORRUPT, off + 16, "chunk compressed size %u out of range", comp);
	if (nev == 0 || nev > raw / 3)
		return fail(r, VMT_E_CORRUPT, off + 20, "chunk claims %u events in %u bytes", nev, raw);
	if (first != r->events)
		return fail(r, VMT_E_CORRUPT, off + 24,
			    "chunk starts at event %llu, expected %llu (chunk missing or repeated?)",
			    (unsigned long long)first, (unsigned long long)r->events);
	if (comp > left(r))
		return fail(r, VMT_E_TRUNC, r->pos,
			    "chunk at byte %llu needs %u bytes, file has %llu",
			    (unsigned long long)off, comp, (unsigned long long)left(r));
	if ((err = grow(&r->cbuf, &r->ccap, comp)) ||
	    (err = grow(&r->rbuf, &r->rcap, (size_t)raw + VMT_DECODE_SLACK)))
		return fail(r, err, off, "out of memory");
	memset(r->rbuf + raw, 0, VMT_DECODE_SLACK);
	uint64_t zoff = r->pos;
	if ((err = read_exact(r, r->cbuf, comp, off, "chunk")))
		return err;
	if (vmt_get_le32(r->cbuf) != VMT_ZSTD_MAGIC)
		return fail(r, VMT_E_CORRUPT, zoff, "chunk data is not a zstd frame");
	unsigned long long fcs = ZSTD_getFrameContentSize(r->cbuf, comp);
	if (fcs != raw)
		return fail(r, VMT_E_CORRUPT, zoff, "zstd frame size does not match its descriptor");
	/* Frame_Header_Descriptor bit 2: Content_Checksum_flag (RFC 8878) */
	if (!(r->cbuf[4] & 0x04))
		return fail(r, VMT_E_CORRUPT, zoff + 4, "zstd frame lacks its content checksum");
	if (ZSTD_findFrameCompressedSize(r->cbuf, comp) != comp)
		return fail(r, VMT_E_CORRUPT, zoff, "zstd frame length does not match its descriptor");
	size_t got = ZSTD_decompressDCtx(r->dctx, r->rbuf, raw, r->cbuf, comp);
	if (ZSTD_isError(got))
		return fail(r, VMT_E_CORRUPT, zoff, "zstd: %s", ZSTD_getErrorName(got));
	if (got != raw)
		return fail(r, VMT_E_CORRUPT, zoff, "chunk decompressed to %zu bytes, expected %u", got, raw);
	struct vmt_cursor c = { r->rbuf, r->rbuf + raw, 0 };
	uint64_t rec_len = vmt_get_varint(&c);
	if (c.bad || rec_len > (uint64_t)(c.end - c.p))
		return fail(r, VMT_E_CORRUPT, zoff, "chunk record section length %llu exceeds the chunk",
			    (unsigned long long)rec_len);
	r->cur = (struct vmt_cursor){ c.p, c.p + rec_len, 0 };
	r->times = (struct vmt_cursor){ c.p + rec_len, c.end, 0 };
	r->chunk_off = off;
	r->chunk_left = nev;
	r->chunk_decoded = 0;
	r->nchunks++;
	vmt_tmap_reset(&r->tm);
	return 0;
}

static int get_list(struct vmt_cursor *c, uint64_t *out, size_t max, size_t *n)
{
	uint64_t cnt = vmt_get_varint(c);
	if (c->bad || cnt > (uint64_t)(c->end - c->p))
		return -1;
	for (uint64_t i = 0; i < cnt; i++) {
		uint64_t v = vmt_get_varint(c);
		if (out && i < max)
			out[i] = v;
	}
	*n = (size_t)cnt;
	return c->bad ? -1 : 0;
}

static int read_footer(struct vmt_reader *r, uint64_t off, uint32_t size)
{
	if (size > VMT_MAX_FOOTER_SIZE || size > left(r))
		return fail(r, size > left(r) ? VMT_E_TRUNC : VMT_E_LIMIT, off + 4,
			    "footer size %u exceeds %s", size,
			    size > left(r) ? "the file" : "the limit");
	uint8_t *b = malloc(size ? size : 1);
	if (!b)
		return fail(r, -ENOMEM, off, "out of memory");
	int err = read_exact(r, b, size, off, "footer");
	if (err) {
		free(b);
		return err;
	}
	struct vmt_footer *f = &r->footer;
	struct vmt_cursor c = { b + 4, b + size - (size >= 8 ? 4 : 0), 0 };
	if (size < 8 || memcmp(b, VMT_FOOTER_ID, 4)) {
		free(b);
		return fail(r, VMT_E_CORRUPT, off + 8, "footer lacks \"VMTF\"");
	}
	if (vmt_get_le32(b + size - 4) != size + 8) {
		free(b);
		return fail(r, VMT_E_CORRUPT, off + 8 + size - 4, "footer size trailer is wrong");
	}
	const char *bad = NULL;
	while (c.p < c.end && !bad) {
		uint64_t key = vmt_get_varint(&c), len = vmt_get_varint(&c);
		if (c.bad || len > (uint64_t)(c.end - c.p)) {
			bad = "malformed footer field";
			break;
		}
		struct vmt_cursor v = { c.p, c.p + len, 0 };
		c.p += len;
		size_t n = 0;
		switch (key) {
		case VMT_FK_EVENTS: f->events = vmt_get_varint(&v); break;
		case VMT_FK_THREADS: f->threads = (uint32_t)vmt_get_varint(&v); break;
		case VMT_FK_PROCS: f->procs = (uint32_t)vmt_get_varint(&v); break;
		case VMT_FK_FIRST_TS: f->first_ts_ns = vmt_get_varint(&v); break;
		case VMT_FK_LAST_TS: f->last_ts_ns = vmt_get_varint(&v); break;
		case VMT_FK_RAW_BYTES: f->raw_bytes = vmt_get_varint(&v); break;
		case VMT_FK_BY_KIND:
			if (get_list(&v, f->by_kind, VMT_EV__COUNT, &n)) bad = "malformed footer kind counts";
			break;
		case VMT_FK_OP_COUNT:
			if (get_list(&v, f->op_count, VMT_OP__COUNT, &n)) bad = "malformed footer op counts";
			break;
		case VMT_FK_OP_ERRORS:
			if (get_list(&v, f->op_errors, VMT_OP__COUNT, &n)) bad = "malformed footer op errors";
			break;
		case VMT_FK_CHUNKS: {
			if (get_list(&v, NULL, 0, &n) || n % 4 || n / 4 != r->nchunks) {
				bad = "footer chunk index does not match the chunks read";
				break;
			}
			free(r->chunks);
			r->chunks = calloc(n / 4 + 1, sizeof(*r->chunks));
			if (!r->chunks) {
				bad = "out of memory";
				break;
			}
			struct vmt_cursor v2 = { c.p - len, c.p, 0 };
			vmt_get_varint(&v2);
			for (size_t i = 0; i < n / 4; i++) {
				r->chunks[i].offset = vmt_get_varint(&v2);
				r->chunks[i].first_event = vmt_get_varint(&v2);
				r->chunks[i].events = (uint32_t)vmt_get_varint(&v2);
				r->chunks[i].first_ts_ns = vmt_get_varint(&v2);
			}
			f->nchunks = (uint32_t)(n / 4);
			f->chunks = r->chunks;
			break;
		}
		default:
			continue;
		}
		if (v.bad && !bad)
			bad = "malformed footer number";
	}
	free(b);
	if (bad)
		return fail(r, VMT_E_CORRUPT, off + 8, "%s", bad);
	if (f->events != r->events)
		return fail(r, VMT_E_CORRUPT, off + 8,
			    "footer counts %llu events, the chunks hold %llu",
			    (unsigned long long)f->events, (unsigned long long)r->events);
	for (uint32_t k = 1; k < VMT_EV__COUNT && r->hdr.minor <= VMT_FORMAT_MINOR; k++)
		if (f->by_kind[k] != r->by_kind[k])
			return fail(r, VMT_E_CORRUPT, off + 8,
				    "footer counts %llu %s events, the chunks hold %llu",
				    (unsigned long long)f->by_kind[k], vmt_kind_name(k),
				    (unsigned long long)r->by_kind[k]);
	uint8_t extra;
	ssize_t k = read_upto(r, &extra, 1);
	if (k != 0)
		return fail(r, VMT_E_CORRUPT, r->pos - (k > 0), "data after the footer");
	r->done = 1;
	return 0;
}

/* Account for one decoded event (rc 1 = returned, 2 = skipped); the first
 * returned event of a chunk must carry the descriptor's first time. */
static inline int took(struct vmt_reader *r, const struct vmt_event *ev, int rc)
{
	if (r->chunk_decoded == 0 && rc == 1 && ev->ts_ns != r->chunk_first_ts)
		return fail(r, VMT_E_CORRUPT, r->chunk_off + 32,
			    "chunk descriptor's first time does not match its first event");
	r->chunk_left--;
	r->chunk_decoded++;
	r->events++;
	if (rc == 1)
		r->by_kind[ev->kind]++;
	return rc;
}

static int reader_next(vmt_reader *r, struct vmt_event *ev);

/* Decode the next event of the current chunk (r->chunk_left > 0): 1, 2 for
 * a skipped kind of a newer version, or the error. */
static int decode_in_chunk(struct vmt_reader *r, struct vmt_event *ev)
{
	if (r->cur.p >= r->cur.end)
		return fail(r, VMT_E_CORRUPT, r->chunk_off,
			    "chunk holds %u events, its descriptor says %u",
			    r->chunk_decoded, r->chunk_decoded + r->chunk_left);
	uint64_t at = (uint64_t)(r->cur.p - r->rbuf);
	const char *why = "invalid event";
	int rc = vmt_decode_event(&r->cur, &r->times, &r->tm, &r->scratch,
				  r->hdr.minor, r->hdr.page_size, ev, &why);
	if (rc < 0)
		return fail(r, rc, r->chunk_off,
			    "chunk event %u (byte %llu of the chunk's data): %s",
			    r->chunk_decoded, (unsigned long long)at,
			    rc == -ENOMEM ? "out of memory" : why);
	return took(r, ev, rc);
}

/* The producer's source (prefetch_int.h): a run of events of one chunk.
 * SYSCALL and FAULT records are decoded by the fast path in a loop here;
 * an event that points into the reader's memory ends the run. */
static int pf_fill(void *src, struct vmt_event *evs, uint32_t max, uint32_t *n,
		   uint64_t *chunk_off, int *last)
{
	struct vmt_reader *r = src;
	uint32_t k = 0;
	int stop = 0;
	*n = 0;
	*last = 0;
	if (r->chunk_left == 0 || r->err || r->done) {
		/* the next chunk, or the end: by the general path */
		int rc = reader_next(r, &evs[0]);
		if (rc != 1) {
			*chunk_off = r->chunk_off;
			return rc;
		}
		k = 1;
		stop = vmt_kind_has_pointers(evs[0].kind);
	}
	*chunk_off = r->chunk_off;
	while (!stop && k < max && r->chunk_left) {
		struct vmt_event *ev = &evs[k];
		int rc;
		pf_hint_write(ev + PF_AHEAD, sizeof(*ev));
		if (__builtin_expect(vmt_decode_fast(&r->cur, &r->times, &r->tm, r->hdr.minor, ev), 1))
			rc = took(r, ev, 1);
		else
			rc = decode_in_chunk(r, ev);
		if (rc < 0)
			break;
		if (rc == 2)
			continue;
		k++;
		stop = vmt_kind_has_pointers(ev->kind);
	}
	*n = k;
	*last = r->chunk_left == 0;
	return r->err ? r->err : 1;
}

int vmt_reader_prefetch(vmt_reader *r)
{
	if (r->pf || r->events || r->err || r->done)
		return r->pf ? 0 : -EINVAL;
	if (r->file_size == UINT64_MAX)
		return -ENOTSUP; /* a pipe: vmt_reader_free must not wait on it */
	int err = 0;
	r->pf = vmt_pf_start(pf_fill, r, &err);
	return r->pf ? 0 : err;
}

void vmt_reader_hold(vmt_reader *r, int on)
{
	vmt_pf_hold(r->pf, on);
}

/* vmt_reader_next_ref once the current batch is used up. */
static int next_ref_slow(vmt_reader *r, const struct vmt_event **ev)
{
	if (!r->pf) {
		*ev = &r->ev;
		return reader_next(r, &r->ev);
	}
	const struct vmt_event *evs;
	uint32_t n;
	r->pf_before += (uint64_t)(r->pf_end - r->pf_first);
	r->pf_first = r->pf_cur = r->pf_end = NULL;
	int rc = vmt_pf_batch(r->pf, &evs, &n, &r->pf_chunk_off);
	if (rc == 1) {
		r->pf_first = evs;
		r->pf_cur = evs + 1;
		r->pf_end = evs + n;
		*ev = evs;
		return 1;
	}
	r->pf_final = rc ? rc : 1;
	if (rc < 0 && !r->err) /* the producer's own failure: no memory */
		fail(r, rc, r->pf_chunk_off, "out of memory");
	return rc;
}

int vmt_reader_next_ref(vmt_reader *r, const struct vmt_event **ev)
{
	if (__builtin_expect(r->pf_cur < r->pf_end, 1)) {
		pf_hint_read(r->pf_cur + PF_AHEAD, sizeof(*r->pf_cur));
		*ev = r->pf_cur++;
		return 1;
	}
	return next_ref_slow(r, ev);
}

int vmt_reader_next(vmt_reader *r, struct vmt_event *ev)
{
	if (!r->pf)
		return reader_next(r, ev);
	const struct vmt_event *e;
	int rc = vmt_reader_next_ref(r, &e);
	if (rc == 1)
		*ev = *e;
	return rc;
}

static int reader_next(vmt_reader *r, struct vmt_event *ev)
{
	/* The common case first: a well-formed SYSCALL inside a chunk.  The
	 * general decoder below handles everything else and names errors. */
	if (__builtin_expect(r->chunk_left && !r->err, 1) &&
	    vmt_decode_fast(&r->cur, &r->times, &r->tm, r->hdr.minor, ev))
		return took(r, ev, 1);
	if (r->err)
		return r->err;
	if (r->done)
		return 0;
	for (;;) {
		if (r->cur.p < r->cur.end) {
			if (r->chunk_left == 0)
				return fail(r, VMT_E_CORRUPT, r->chunk_off,
					    "chunk holds more events than its descriptor says");
			int rc = decode_in_chunk(r, ev);
			if (rc != 2)
				return rc;
			continue; /* skipped a kind from a newer version */
		}
		if (r->chunk_left)
			return fail(r, VMT_E_CORRUPT, r->chunk_off,
				    "chunk holds %u events, its descriptor says %u",
				    r->chunk_decoded, r->chunk_decoded + r->chunk_left);
		if (r->nchunks && r->times.p != r->times.end)
			return fail(r, VMT_E_CORRUPT, r->chunk_off,
				    "chunk time section has %zu unused bytes",
				    (size_t)(r->times.end - r->times.p));
		uint64_t off = r->pos;
		uint8_t fh[8];
		ssize_t k = read_upto(r, fh, 8);
		if (k < 0)
			return fail(r, (int)k, off, "%s", strerror((int)-k));
		if (k == 0)
			return fail(r, VMT_E_TRUNC, off,
				    "the trace ends without a footer after %llu events "
				    "(recording interrupted?)", (unsigned long long)r->events);
		if (k < 8)
			return fail(r, VMT_E_TRUNC, r->pos,
				    "frame header at byte %llu cut short", (unsigned long long)off);
		uint32_t magic = vmt_get_le32(fh), size = vmt_get_le32(fh + 4);
		if (magic == VMT_MAGIC_CHUNK) {
			if (size != VMT_CHUNK_DESC_SIZE)
				return fail(r, VMT_E_CORRUPT, off + 4, "chunk descriptor size %u, expected %u",
					    size, VMT_CHUNK_DESC_SIZE);
			int err = read_chunk(r, off);
			if (err)
				return err;
		} else if (magic == VMT_MAGIC_FOOTER) {
			int err = read_footer(r, off, size);
			return err ? err : 0;
		} else if ((magic & 0xFFFFFFF0u) == 0x184D2A50u && magic != VMT_MAGIC_HEADER) {
			/* A skippable frame of a newer version: skip it. */
			if (size > left(r) || r->hdr.minor <= VMT_FORMAT_MINOR)
				return fail(r, size > left(r) ? VMT_E_TRUNC : VMT_E_CORRUPT, off,
					    "unexpected frame 0x%08x of %u bytes", magic, size);
			/* read and discard: the input may be a pipe */
			uint8_t sink[4096];
			for (uint32_t done = 0; done < size;) {
				uint32_t want = size - done < sizeof(sink) ? size - done : (uint32_t)sizeof(sink);
				int err = read_exact(r, sink, want, off, "frame");
				if (err)
					return err;
				done += want;
			}
		} else {
			return fail(r, VMT_E_CORRUPT, off, "unknown frame magic 0x%08x", magic);
		}
	}
}

const char *vmt_reader_errmsg(const vmt_reader *r)
{
	if (r->pf)
		return r->pf_final < 0 ? r->msg : "";
	return r->err ? r->msg : "";
}

const struct vmt_footer *vmt_reader_footer(const vmt_reader *r)
{
	if (r->pf)
		return r->pf_final == 1 ? &r->footer : NULL;
	return r->done ? &r->footer : NULL;
}

uint64_t vmt_reader_event_index(const vmt_reader *r)
{
	return r->pf ? r->pf_before + (uint64_t)(r->pf_cur - r->pf_first) : r->events;
}

uint64_t vmt_reader_offset(const vmt_reader *r)
{
	return r->pf ? r->pf_chunk_off : r->chunk_off;
}

void vmt_reader_free(vmt_reader *r)
{
	if (!r)
		return;
	vmt_pf_stop(r->pf);
	for (uint32_t i = 0; i < r->nhstrings; i++)
		free(r->hstrings[i]);
	free(r->hstrings);
	free(r->argv);
	ZSTD_freeDCtx(r->dctx);
	free(r->cbuf);
	free(r->rbuf);
	vmt_tmap_free(&r->tm);
	vmt_scratch_free(&r->scratch);
	free(r->chunks);
	free(r);
}
