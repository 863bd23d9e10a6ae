/*
 * rewrite_file.c - rewrite a whole trace file into another one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rewrite_int.h"

struct out {
	vmt_writer *w;
	int werr; /* the writer's error, to tell it from the reader's */
	const char *why; /* the invalid field, when the writer refused */
	uint32_t kind, op;
};

static int write_event(void *arg, const struct vmt_event *ev)
{
	struct out *o = arg;
	int rc = vmt_writer_append(o->w, ev);
	if (rc < 0) {
		o->werr = rc;
		o->kind = ev->kind;
		o->op = ev->kind == VMT_EV_SYSCALL ? ev->u.sc.op : 0;
		if (rc == -EINVAL || rc == VMT_E_LIMIT || rc == VMT_E_CORRUPT)
			vmt_event_check(ev, &o->why);
	}
	return rc;
}

static void writer_msg(const struct out *o, char *err, size_t errlen)
{
	if (o->why)
		vmt_errf(err, errlen, o->werr,
			 "writing: a rewrite rule made an invalid %s event (%s%s%s)",
			 vmt_kind_name(o->kind) ? vmt_kind_name(o->kind) : "?",
			 o->op && vmt_op_name(o->op) ? vmt_op_name(o->op) : "", o->op ? ": " : "",
			 o->why);
	else
		vmt_errf(err, errlen, o->werr, "writing: %s", vmt_strerror(o->werr));
}

int van_rewrite_trace(van_rewrite *rw, int infd, int outfd, char *err, size_t errlen)
{
	char rmsg[256] = "";
	int e = 0;
	vmt_reader *r = vmt_reader_open_fd(infd, &e, rmsg, sizeof(rmsg));
	if (!r) {
		return vmt_errf(err, errlen, e < 0 ? e : VMT_E_CORRUPT, "reading: %s",
				*rmsg ? rmsg : vmt_strerror(e));
	}
	const struct vmt_header *h = vmt_reader_header(r);
	struct vmt_header oh = *h;
	const char *list = van_rewrite_list(rw);
	size_t olen = strlen(h->options) + strlen(list) + 16;
	char *opts = malloc(olen);
	if (!opts) {
		vmt_reader_free(r);
		return vmt_errf(err, errlen, -ENOMEM, "out of memory");
	}
	snprintf(opts, olen, "%s%srewrite=%s", h->options, *h->options ? " " : "", list);
	oh.options = opts;

	int rc = van_rewrite_start(rw, h);
	if (rc) {
		vmt_errf(err, errlen, rc, "reading: page size %u is not a power of two",
			 h->page_size);
		free(opts);
		vmt_reader_free(r);
		return rc;
	}
	struct out o = { 0 };
	o.w = vmt_writer_create(outfd, &oh, NULL, &e);
	if (!o.w) {
		vmt_errf(err, errlen, e, "writing: %s", vmt_strerror(e));
		free(opts);
		vmt_reader_free(r);
		return e < 0 ? e : -EIO;
	}
	struct vmt_event ev;
	int rd;
	rc = 0;
	while ((rd = vmt_reader_next(r, &ev)) == 1)
		if ((rc = van_rewrite_push(rw, &ev, write_event, &o)) < 0)
			break;
	/* The events before damage in the input still make a valid
	 * output: finish it, then report the damage. */
	if (!rc)
		rc = van_rewrite_finish(rw, write_event, &o);
	int frc = vmt_writer_finish(o.w);
	if (!rc && frc < 0) {
		o.werr = frc;
		rc = frc;
	}
	if (rc < 0 && o.werr)
		writer_msg(&o, err, errlen);
	else if (rc < 0)
		vmt_errf(err, errlen, rc, "rewriting: %s", vmt_strerror(rc));
	else if (rd < 0) {
		vmt_errf(err, errlen, rd, "reading: %s", vmt_reader_errmsg(r));
		rc = rd;
	}
	vmt_writer_free(o.w);
	free(opts);
	vmt_reader_free(r);
	return rc;
}
