/*
 * writer.c - the streaming trace writer.
 *
 * Events are encoded into a buffer and written as one chunk (a descriptor
 * skippable frame followed by an independent zstd frame) when the buffer
 * reaches chunk_bytes or when its oldest event is flush_ms old.  Each chunk
 * is written with one write() loop right after compression, so a writer
 * killed at any point leaves a file whose complete chunks all decode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include "codec_int.h"

struct vmt_writer {
	int fd;
	int err; /* sticky */
	int finished;
	uint32_t page_size;
	size_t chunk_bytes;
	uint64_t flush_ns;
	ZSTD_CCtx *cctx;
	struct vmt_bytes raw;	/* record section of the open chunk */
	struct vmt_bytes times; /* its time section */
	struct vmt_bytes content; /* both, joined for compression */
	struct vmt_bytes out; /* compressed chunk being written */
	struct vmt_tmap tm;
	uint32_t chunk_events;
	uint64_t chunk_first_ts;
	uint64_t chunk_opened_ns; /* when the first buffered event arrived */
	uint64_t file_bytes;
	uint64_t written_events; /* in chunks written whole */
	struct vmt_footer sum;
	struct vmt_chunk_info *chunks;
	uint32_t chunks_cap;
	int have_ts;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_all(struct vmt_writer *w, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = write(w->fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
		w->file_bytes += (uint64_t)r;
	}
	return 0;
}

/* TLV field helpers for header and footer content. */
static int tlv_u64(struct vmt_bytes *b, uint64_t key, uint64_t v)
{
	int err = vmt_bytes_reserve(b, 30);
	if (err)
		return err;
	vmt_put_varint(b, key);
	uint8_t tmp[10];
	struct vmt_bytes t = { tmp, 0, sizeof(tmp) };
	vmt_put_varint(&t, v);
	vmt_put_varint(b, t.len);
	memcpy(b->p + b->len, tmp, t.len);
	b->len += t.len;
	return 0;
}

static int tlv_str(struct vmt_bytes *b, uint64_t key, const char *s)
{
	if (!s)
		return 0;
	size_t n = strlen(s);
	if (n > VMT_MAX_STRING)
		return VMT_E_LIMIT;
	int err = vmt_bytes_reserve(b, n + 20);
	if (err)
		return err;
	vmt_put_varint(b, key);
	vmt_put_varint(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* A TLV whose value is a list of varints. */
static int tlv_u64s(struct vmt_bytes *b, uint64_t key, const uint64_t *v, size_t n)
{
	struct vmt_bytes val = { 0 };
	int err = vmt_bytes_reserve(&val, 10 * (n + 1));
	if (!err) {
		vmt_put_varint(&val, n);
		for (size_t i = 0; i < n; i++)
			vmt_put_varint(&val, v[i]);
		err = vmt_bytes_reserve(b, val.len + 20);
	}
	if (!err) {
		vmt_put_varint(b, key);
		vmt_put_varint(b, val.len);
		memcpy(b->p + b->len, val.p, val.len);
		b->len += val.len;
	}
	vmt_bytes_free(&val);
	return err;
}

/* Write a skippable frame: magic, size, content. */
static int write_frame(struct vmt_writer *w, uint32_t magic, const struct vmt_bytes *c)
{
	uint8_t hdr[8];
	vmt_put_le32(hdr, magic);
	vmt_put_le32(hdr + 4, (uint32_t)c->len);
	int err = write_all(w, hdr, 8);
	return err ? err : write_all(w, c->p, c->len);
}

static int write_header(struct vmt_writer *w, const struct vmt_header *h)
{
	struct vmt_bytes b = { 0 };
	int err = vmt_bytes_reserve(&b, 16);
	if (err)
		return err;
	memcpy(b.p, VMT_HEADER_ID, 4);
	b.p[4] = VMT_FORMAT_MAJOR & 0xff;
	b.p[5] = VMT_FORMAT_MAJOR >> 8;
	b.p[6] = VMT_FORMAT_MINOR & 0xff;
	b.p[7] = VMT_FORMAT_MINOR >> 8;
	vmt_put_le32(b.p + 8, 0); /* flags: none defined */
	b.len = 12;
	if (!err) err = tlv_str(&b, VMT_HK_ARCH, h->arch);
	if (!err) err = tlv_u64(&b, VMT_HK_PAGE_SIZE, w->page_size);
	if (!err) err = tlv_str(&b, VMT_HK_KERNEL, h->kernel);
	if (!err) err = tlv_str(&b, VMT_HK_HOSTNAME, h->hostname);
	for (uint32_t i = 0; !err && i < h->argc && h->argv; i++)
		err = tlv_str(&b, VMT_HK_ARG, h->argv[i] ? h->argv[i] : "");
	if (!err) err = tlv_str(&b, VMT_HK_OPTIONS, h->options);
	if (!err) err = tlv_str(&b, VMT_HK_RECORDER, h->recorder);
	if (!err && h->backend && *h->backend) err = tlv_str(&b, VMT_HK_BACKEND, h->backend);
	if (!err && h->touch && *h->touch) err = tlv_str(&b, VMT_HK_TOUCH, h->touch);
	if (!err) err = tlv_u64(&b, VMT_HK_START_REALTIME, h->start_realtime_ns);
	if (!err) err = tlv_u64(&b, VMT_HK_START_MONO, h->start_mono_ns);
	if (!err && b.len > VMT_MAX_HEADER_SIZE)
		err = VMT_E_LIMIT;
	if (!err)
		err = write_frame(w, VMT_MAGIC_HEADER, &b);
	vmt_bytes_free(&b);
	return err;
}

vmt_writer *vmt_writer_create(int fd, const struct vmt_header *h,
			      const struct vmt_writer_opts *opts, int *errp)
{
	int err = -ENOMEM;
	struct vmt_writer *w = calloc(1, sizeof(*w));
	if (!w)
		goto fail;
	w->fd = fd;
	w->page_size = h->page_size ? h->page_size : 4096;
	if ((w->page_size & (w->page_size - 1)) || w->page_size < 1024 ||
	    w->page_size > (1u << 30)) {
		err = -EINVAL;
		goto fail;
	}
	w->chunk_bytes = opts && opts->chunk_bytes ? opts->chunk_bytes : 256 * 1024;
	if (w->chunk_bytes > VMT_MAX_CHUNK_BYTES)
		w->chunk_bytes = VMT_MAX_CHUNK_BYTES;
	w->flush_ns = (uint64_t)(opts && opts->flush_ms ? opts->flush_ms : 100) * 1000000u;
	w->cctx = ZSTD_createCCtx();
	if (!w->cctx)
		goto fail;
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
			       opts && opts->level ? opts->level : 3);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
	w->sum.first_ts_ns = UINT64_MAX;
	err = write_header(w, h);
	if (err)
		goto fail;
	return w;
fail:
	vmt_writer_free(w);
	if (errp)
		*errp = err;
	return NULL;
}

int vmt_writer_flush(vmt_writer *w)
{
	if (w->err)
		return w->err;
	if (w->chunk_events == 0)
		return 0;
	w->content.len = 0;
	int err = vmt_bytes_reserve(&w->content, 10 + w->raw.len + w->times.len);
	if (err)
		return w->err = err;
	vmt_put_varint(&w->content, w->raw.len);
	memcpy(w->content.p + w->content.len, w->raw.p, w->raw.len);
	w->content.len += w->raw.len;
	memcpy(w->content.p + w->content.len, w->times.p, w->times.len);
	w->content.len += w->times.len;
	size_t bound = ZSTD_compressBound(w->content.len);
	w->out.len = 0;
	err = vmt_bytes_reserve(&w->out, 8 + VMT_CHUNK_DESC_SIZE + bound);
	if (err)
		return w->err = err;
	uint8_t *d = w->out.p;
	size_t csize = ZSTD_compress2(w->cctx, d + 8 + VMT_CHUNK_DESC_SIZE, bound,
				      w->content.p, w->content.len);
	if (ZSTD_isError(csize))
		return w->err = -EIO;
	vmt_put_le32(d, VMT_MAGIC_CHUNK);
	vmt_put_le32(d + 4, VMT_CHUNK_DESC_SIZE);
	memcpy(d + 8, VMT_CHUNK_ID, 4);
	vmt_put_le32(d + 12, (uint32_t)w->content.len);
	vmt_put_le32(d + 16, (uint32_t)csize);
	vmt_put_le32(d + 20, w->chunk_events);
	vmt_put_le64(d + 24, w->sum.events - w->chunk_events);
	vmt_put_le64(d + 32, w->chunk_first_ts);

	if (w->sum.nchunks == w->chunks_cap) {
		uint32_t ncap = w->chunks_cap ? w->chunks_cap * 2 : 64;
		struct vmt_chunk_info *nc = realloc(w->chunks, ncap * sizeof(*nc));
		if (!nc)
			return w->err = -ENOMEM;
		w->chunks = nc;
		w->chunks_cap = ncap;
	}
	struct vmt_chunk_info *ci = &w->chunks[w->sum.nchunks];
	ci->offset = w->file_bytes;
	ci->first_event = w->sum.events - w->chunk_events;
	ci->events = w->chunk_events;
	ci->first_ts_ns = w->chunk_first_ts;

	err = write_all(w, d, 8 + VMT_CHUNK_DESC_SIZE + csize);
	if (err)
		return w->err = err;
	w->sum.nchunks++;
	w->written_events += w->chunk_events;
	w->sum.raw_bytes += w->content.len;
	w->raw.len = 0;
	w->times.len = 0;
	w->chunk_events = 0;
	vmt_tmap_reset(&w->tm);
	return 0;
}

int vmt_writer_tick(vmt_writer *w)
{
	if (w->err)
		return w->err;
	if (w->chunk_events && now_ns() - w->chunk_opened_ns >= w->flush_ns)
		return vmt_writer_flush(w);
	return 0;
}

int vmt_writer_append(vmt_writer *w, const struct vmt_event *ev)
{
	if (w->err)
		return w->err;
	if (w->finished)
		return VMT_E_STATE;
	const char *why;
	int err = vmt_event_check_ps(ev, w->page_size, &why);
	if (err)
		return err == VMT_E_CORRUPT ? -EINVAL : err;
	size_t before = w->raw.len, tbefore = w->times.len;
	err = vmt_encode_event(&w->raw, &w->times, &w->tm, ev);
	if (err) {
		/* Undo the partial record; the delta state of this thread may
		 * have moved, so close the chunk to keep it decodable. */
		w->raw.len = before;
		w->times.len = tbefore;
		vmt_tmap_reset(&w->tm);
		if (w->chunk_events) {
			int ferr = vmt_writer_flush(w);
			if (ferr)
				return ferr;
		}
		return err;
	}
	if (w->raw.len + w->times.len + 10 > VMT_MAX_CHUNK_BYTES) {
		/* This event does not fit with the others: write them first
		 * and re-encode it alone (delta state reset by the flush). */
		w->raw.len = before;
		w->times.len = tbefore;
		vmt_tmap_reset(&w->tm);
		if (!w->chunk_events)
			return VMT_E_LIMIT;
		if ((err = vmt_writer_flush(w)))
			return err;
		err = vmt_encode_event(&w->raw, &w->times, &w->tm, ev);
		if (!err && w->raw.len + w->times.len + 10 > VMT_MAX_CHUNK_BYTES)
			err = VMT_E_LIMIT;
		if (err) {
			w->raw.len = w->times.len = 0;
			vmt_tmap_reset(&w->tm);
			return err;
		}
	}
	if (w->chunk_events == 0) {
		w->chunk_first_ts = ev->ts_ns;
		w->chunk_opened_ns = now_ns();
	}
	w->chunk_events++;
	w->sum.events++;
	w->sum.by_kind[ev->kind]++;
	if (ev->kind == VMT_EV_SYSCALL) {
		w->sum.op_count[ev->u.sc.op]++;
		if (vmt_is_errno(ev->u.sc.result) &&
		    !(ev->u.sc.flags & VMT_SC_NO_RESULT))
			w->sum.op_errors[ev->u.sc.op]++;
	}
	if (ev->thread + 1 > w->sum.threads)
		w->sum.threads = ev->thread + 1;
	if (ev->proc + 1 > w->sum.procs)
		w->sum.procs = ev->proc + 1;
	if (ev->ts_ns < w->sum.first_ts_ns)
		w->sum.first_ts_ns = ev->ts_ns;
	if (ev->ts_ns > w->sum.last_ts_ns)
		w->sum.last_ts_ns = ev->ts_ns;
	if (w->raw.len + w->times.len >= w->chunk_bytes)
		return vmt_writer_flush(w);
	if (now_ns() - w->chunk_opened_ns >= w->flush_ns)
		return vmt_writer_flush(w);
	return 0;
}

int vmt_writer_finish(vmt_writer *w)
{
	if (w->err)
		return w->err;
	if (w->finished)
		return VMT_E_STATE;
	int err = vmt_writer_flush(w);
	if (err)
		return err;
	w->finished = 1;
	struct vmt_footer *s = &w->sum;
	struct vmt_bytes b = { 0 };
	err = vmt_bytes_reserve(&b, 8);
	if (err)
		return w->err = err;
	memcpy(b.p, VMT_FOOTER_ID, 4);
	b.len = 4;
	if (!err) err = tlv_u64(&b, VMT_FK_EVENTS, s->events);
	if (!err) err = tlv_u64s(&b, VMT_FK_BY_KIND, s->by_kind, VMT_EV__COUNT);
	if (!err) err = tlv_u64s(&b, VMT_FK_OP_COUNT, s->op_count, VMT_OP__COUNT);
	if (!err) err = tlv_u64s(&b, VMT_FK_OP_ERRORS, s->op_errors, VMT_OP__COUNT);
	if (!err) err = tlv_u64(&b, VMT_FK_THREADS, s->threads);
	if (!err) err = tlv_u64(&b, VMT_FK_PROCS, s->procs);
	if (!err) err = tlv_u64(&b, VMT_FK_FIRST_TS, s->events ? s->first_ts_ns : 0);
	if (!err) err = tlv_u64(&b, VMT_FK_LAST_TS, s->last_ts_ns);
	if (!err) err = tlv_u64(&b, VMT_FK_RAW_BYTES, s->raw_bytes);
	if (!err) {
		/* chunk index: per chunk offset, first event, events, first ts */
		size_t n = s->nchunks;
		uint64_t *v = malloc(sizeof(*v) * (4 * n + 1));
		if (!v) {
			err = -ENOMEM;
		} else {
			for (size_t i = 0; i < n; i++) {
				v[4 * i] = w->chunks[i].offset;
				v[4 * i + 1] = w->chunks[i].first_event;
				v[4 * i + 2] = w->chunks[i].events;
				v[4 * i + 3] = w->chunks[i].first_ts_ns;
			}
			err = tlv_u64s(&b, VMT_FK_CHUNKS, v, 4 * n);
			free(v);
		}
	}
	/* The frame's total size as the last 4 bytes, so a reader can find
	 * the footer from the end of the file. */
	if (!err && !(err = vmt_bytes_reserve(&b, 4))) {
		vmt_put_le32(b.p + b.len, (uint32_t)(b.len + 4 + 8));
		b.len += 4;
	}
	if (!err && b.len > VMT_MAX_FOOTER_SIZE)
		err = VMT_E_LIMIT;
	if (!err)
		err = write_frame(w, VMT_MAGIC_FOOTER, &b);
	vmt_bytes_free(&b);
	if (err)
		w->err = err;
	return err;
}

void vmt_writer_get_stats(const vmt_writer *w, struct vmt_writer_stats *st)
{
	st->events = w->sum.events;
	st->raw_bytes = w->sum.raw_bytes + w->raw.len + w->times.len;
	st->file_bytes = w->file_bytes;
	st->chunks = w->sum.nchunks;
	st->written_events = w->written_events;
}

void vmt_writer_free(vmt_writer *w)
{
	if (!w)
		return;
	ZSTD_freeCCtx(w->cctx);
	vmt_bytes_free(&w->raw);
	vmt_bytes_free(&w->times);
	vmt_bytes_free(&w->content);
	vmt_bytes_free(&w->out);
	vmt_tmap_free(&w->tm);
	free(w->chunks);
	free(w);
}
