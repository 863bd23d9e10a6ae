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
		rw_msg(err, errlen, "writing: a rewrite rule made an invalid %s event (%s%s%s)",
		    vmt_kind_name(o->kind) ? vmt_kind_name(o->kind) : "?",
		    o->op && vmt_op_name(o->op) ? vmt_op_name(o->op) : "", o->op ? ": " : "",
		    o->why);
	else
		rw_msg(err, errlen, "writing: %s", vmt_strerror(o->werr));
}

int vmt_rewrite_trace(vmt_rewrite *rw, int infd, int outfd, char *err, size_t errlen)
{
	char rmsg[256] = "";
	int e = 0;
	vmt_reader *r = vmt_reader_open_fd(infd, &e, rmsg, sizeof(rmsg));
	if (!r) {
		rw_msg(err, errlen, "reading: %s", *rmsg ? rmsg : vmt_strerror(e));
		return e < 0 ? e : VMT_E_CORRUPT;
	}
	const struct vmt_header *h = vmt_reader_header(r);
	struct vmt_header oh = *h;
	const char *list = vmt_rewrite_list(rw);
	size_t olen = strlen(h->options) + strlen(list) + 16;
	char *opts = malloc(olen);
	if (!opts) {
		vmt_reader_free(r);
		rw_msg(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(opts, olen, "%s%srewrite=%s", h->options, *h->options ? " " : "", list);
	oh.options = opts;

	int rc = vmt_rewrite_start(rw, h);
	if (rc) {
		rw_msg(err, errlen, "reading: page size %u is not a power of two", h->page_size);
		free(opts);
		vmt_reader_free(r);
		return rc;
	}
	struct out o = { 0 };
	o.w = vmt_writer_create(outfd, &oh, NULL, &e);
	if (!o.w) {
		rw_msg(err, errlen, "writing: %s", vmt_strerror(e));
		free(opts);
		vmt_reader_free(r);
		return e < 0 ? e : -EIO;
	}
	struct vmt_event ev;
	int rd;
	rc = 0;
	while ((rd = vmt_reader_next(r, &ev)) == 1)
		if ((rc = vmt_rewrite_push(rw, &ev, write_event, &o)) < 0)
			break;
	/* The events before damage in the input still make a valid
	 * output: finish it, then report the damage. */
	if (!rc)
		rc = vmt_rewrite_finish(rw, write_event, &o);
	int frc = vmt_writer_finish(o.w);
	if (!rc && frc < 0) {
		o.werr = frc;
		rc = frc;
	}
	if (rc < 0 && o.werr)
		writer_msg(&o, err, errlen);
	else if (rc < 0)
		rw_msg(err, errlen, "rewriting: %s", vmt_strerror(rc));
	else if (rd < 0) {
		rw_msg(err, errlen, "reading: %s", vmt_reader_errmsg(r));
		rc = rd;
	}
	vmt_writer_free(o.w);
	free(opts);
	vmt_reader_free(r);
	return rc;
}
