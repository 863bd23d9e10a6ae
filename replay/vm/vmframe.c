/*
 * vmframe.c - the frames of the guest's results port (vm.h):
 * "@@T LEN\n" then LEN bytes then "\n".  The length makes any byte
 * allowed in a body; the "@@" and the trailing newline catch a stream
 * that lost bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vm_int.h"

size_t rp_frame_header(char *buf, size_t n, char type, size_t len)
{
	int k = snprintf(buf, n, "@@%c %zu\n", type, len);
	return k < 0 ? 0 : (size_t)k;
}

/* A complete header in fr->hdr: "@@T LEN\n". */
static int parse_header(struct rp_frame_reader *fr)
{
	const char *h = fr->hdr;
	if (fr->hlen < 6 || h[0] != '@' || h[1] != '@' || h[2] < 'A' || h[2] > 'Z' || h[3] != ' ')
		return -EPROTO;
	size_t len = 0;
	for (size_t i = 4; i + 1 < fr->hlen; i++) {
		if (h[i] < '0' || h[i] > '9' || len > RP_FRAME_MAX)
			return -EPROTO;
		len = len * 10 + (size_t)(h[i] - '0');
	}
	if (fr->hlen == 5 || len > RP_FRAME_MAX)
		return -EPROTO;
	fr->type = h[2];
	fr->need = len;
	fr->got = 0;
	fr->body = malloc(len + 1);
	if (!fr->body)
		return -ENOMEM;
	fr->in_body = 1;
	return 0;
}

int rp_frame_feed(struct rp_frame_reader *fr, const char *p, size_t n, rp_frame_fn fn, void *arg)
{
	while (n) {
		if (!fr->in_body) {
			char c = *p++;
			n--;
			if (fr->hlen + 1 >= sizeof(fr->hdr))
				return -EPROTO;
			fr->hdr[fr->hlen++] = c;
			if (fr->hlen <= 2 && c != '@')
				return -EPROTO;
			if (c != '\n')
				continue;
			int rc = parse_header(fr);
			fr->hlen = 0;
			if (rc < 0)
				return rc;
			continue;
		}
		if (fr->got < fr->need) {
			size_t k = fr->need - fr->got < n ? fr->need - fr->got : n;
			memcpy(fr->body + fr->got, p, k);
			fr->got += k;
			p += k;
			n -= k;
			continue;
		}
		/* The newline after the body. */
		if (*p != '\n')
			return -EPROTO;
		p++;
		n--;
		fr->body[fr->need] = 0;
		fr->in_body = 0;
		int rc = fn(arg, fr->type, fr->body, fr->need);
		free(fr->body);
		fr->body = NULL;
		if (rc < 0)
			return rc;
	}
	return 0;
}

void rp_frame_reader_free(struct rp_frame_reader *fr)
{
	free(fr->body);
	memset(fr, 0, sizeof(*fr));
}
