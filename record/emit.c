/*
 * emit.c - the recording's event layer: events into the trace writer (the
 * first writer error is kept and the recording goes on), notices for the
 * user, and the fault samples merged in time order.
 */
#include <stdarg.h>
#include <stdio.h>
#include "recording_int.h"

int vmr_emit(struct vmr_rec *r, const struct vmt_event *ev)
{
	int err = vmt_writer_append(r->w, ev);

	if (err && !r->werr)
		r->werr = err;
	return err;
}

void vmr_emit_lost(struct vmr_rec *r, const struct vmr_task *t, uint64_t n, uint64_t ts)
{
	struct vmt_event ev = { .kind = VMT_EV_LOST, .ts_ns = ts };
	if (t) {
		ev.thread = t->thread;
		ev.proc = t->proc->index;
	}
	ev.u.lost.count = n;
	ev.u.lost.what = VMT_LOST_EVENTS;
	vmr_emit(r, &ev);
	r->lost += n;
}

void vmr_notice(struct vmr_rec *r, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!r->notice)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r->notice(r->notice_ctx, buf);
}

void vmr_drain_faults(struct vmr_rec *r, uint64_t up_to)
{
	if (r->faults) {
		int n = vmr_faults_drain(r->faults, r->w, up_to);
		if (n < 0 && !r->werr)
			r->werr = n;
	}
}

void vmr_tick(struct vmr_rec *r)
{
	vmr_tick_upto(r, vmt_now_ns());
}

void vmr_tick_upto(struct vmr_rec *r, uint64_t up_to)
{
	vmr_drain_faults(r, up_to);
	int e = vmt_writer_tick(r->w);
	if (e && !r->werr)
		r->werr = e;
}
