/*
 * record.c - one recording, whatever the backend: the choice of backend
 * and touch source, set-up, the trace's end and the summary (vmr_record,
 * recorder.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "recording_int.h"
#include "insn_int.h"

/* ---- the backend and the touch source ------------------------------------ */

static const char *const touch_names[] = { "resident", "faults", "none" };

/* auto: the stream backend where it can run, else inproc for a dynamically
 * linked program, else ptrace, saying why. */
static int choose_backend(struct vmr_rec *r, char *err, size_t errlen)
{
	const struct vmr_opts *o = r->o;
	char why[256] = "", why2[256] = "";

	/* A process that is not there is the answer, before any fallback. */
	if (o->attach_pid && kill(o->attach_pid, 0) < 0 && errno == ESRCH) {
		snprintf(err, errlen, "cannot attach to %d: no such process", (int)o->attach_pid);
		return -ESRCH;
	}
	if (o->backend == VMR_BACKEND_PTRACE) {
		r->backend = &vmr_backend_ptrace;
		return 0;
	}
	if (o->backend == VMR_BACKEND_INPROC) {
		int e = vmr_backend_inproc.probe(r, why, sizeof(why));
		if (e) {
			snprintf(err, errlen, "--backend=inproc: %s", why);
			return e;
		}
		r->backend = &vmr_backend_inproc;
		if (o->cmd_argc && vmr_cmd_static(o->cmd_argv[0], why, sizeof(why)))
			vmr_notice(r, "%s: every recorded call it makes traps (a signal) until its "
				   "call sites are patched", why);
		return 0;
	}
	int e = vmr_backend_stream.probe(r, why, sizeof(why));
	if (!e) {
		r->backend = &vmr_backend_stream;
		return 0;
	}
	if (o->backend == VMR_BACKEND_STREAM) {
		snprintf(err, errlen, "--backend=stream: %s", why);
		return e;
	}
	/* A static program, or one that needs its privileges, goes to ptrace. */
	int unfit = o->attach_pid || (o->cmd_argc && vmr_cmd_static(o->cmd_argv[0], why2, sizeof(why2)));
	if (!unfit && vmr_backend_inproc.probe(r, why2, sizeof(why2)) == 0) {
		r->backend = &vmr_backend_inproc;
		vmr_notice(r, "recording in-process (inproc: no stop at a call): %s%s", why,
			   o->ring_given ? "; --ring-size does not apply" : "");
		return 0;
	}
	r->backend = &vmr_backend_ptrace;
	vmr_notice(r, "recording with ptrace (a stop at every recorded call): %s%s%s%s", why,
		   why2[0] && !o->attach_pid ? "; not inproc: " : "", o->attach_pid ? "" : why2,
		   o->ring_given ? "; --ring-size does not apply" : "");
	return 0;
}

/* auto: page faults where they can be sampled, else resident pages. */
static int choose_touch(struct vmr_rec *r, char *err, size_t errlen)
{
	const char *why = NULL;
	int e = 0, want = r->o->touch;

	if (r->backend == &vmr_backend_stream) {
		/* The stream backend samples faults itself. */
		r->touch = want == VMR_TOUCH_NONE ? VMR_TOUCH_NONE : VMR_TOUCH_FAULTS;
		return 0;
	}
	r->touch = want;
	if (want == VMR_TOUCH_RESIDENT || want == VMR_TOUCH_NONE)
		return 0;
	r->faults = vmr_faults_new(&e, &why);
	if (r->faults) {
		r->touch = VMR_TOUCH_FAULTS;
		/* Where the event gives no access type, the faulting
		 * instruction does. */
		if (why && (r->code = vmr_codecache_new())) {
			vmr_faults_set_access(r->faults, vmr_codecache_access, r->code);
			vmr_notice(r, "exceptions:page_fault_user tracepoint %s: sampling the software "
				   "page-fault events, the access type read from the faulting instruction",
				   strstr(why, "not permitted") ? "not permitted" : "not available");
		} else if (why) {
			vmr_notice(r, "%s", why);
		}
		return 0;
	}
	if (want == VMR_TOUCH_FAULTS) {
		snprintf(err, errlen, "--touch=faults: cannot sample page faults: %s",
			 vmt_strerror(e));
		return e;
	}
	r->touch = VMR_TOUCH_RESIDENT;
	vmr_notice(r, "page faults cannot be sampled here (%s): touches are the pages present "
		   "before discarding calls and at exit, which miss a read followed by a write "
		   "of the same page and pages touched then freed between two scans",
		   vmt_strerror(e));
	return 0;
}

/* ---- the recording ---------------------------------------------------------- */

static int setup(struct vmr_rec *r, const struct vmr_opts *o, char *err,
		 size_t errlen)
{
	long ps = sysconf(_SC_PAGESIZE);
	int e;

	r->o = o;
	r->attach = o->attach_pid != 0;
	r->errfd = -1;
	r->exit_code = 1;
	r->page_size = ps > 0 ? (uint64_t)ps : 4096;
	while ((1ull << r->page_shift) < r->page_size)
		r->page_shift++;
	if ((e = vmr_sysmap_init(&r->sys))) {
		snprintf(err, errlen, "cannot resolve system call numbers with libseccomp");
		return e;
	}
	if ((e = choose_backend(r, err, errlen)) || (e = choose_touch(r, err, errlen)))
		return e;
	if ((e = vmr_pagemap_init(&r->pm))) {
		snprintf(err, errlen, "out of memory");
		return e;
	}
	if (o->stack_depth) {
		r->stacks = vmr_stacks_new(o->stack_depth, &e);
		if (!r->stacks) {
			snprintf(err, errlen, "cannot record stacks: %s", vmt_strerror(e));
			return e;
		}
	}
	return 0;
}

static void teardown(struct vmr_rec *r)
{
	if (r->backend && r->backend->done)
		r->backend->done(r);
	vmr_stacks_free(r->stacks);
	vmr_faults_free(r->faults);
	vmr_codecache_free(r->code);
	vmr_free_tables(r);
	vmr_maps_free(&r->maps);
	vmr_pagemap_free(&r->pm);
	vmr_runs_free(&r->runs);
	free(r->present);
	if (r->errfd >= 0)
		close(r->errfd);
	vmt_writer_free(r->w);
}

int vmr_record(const struct vmr_opts *o, int out_fd,
	       const struct vmt_header *h, vmr_notice_fn notice,
	       void *notice_ctx, struct vmr_summary *sum, char *err,
	       size_t errlen)
{
	struct vmr_rec rec, *r = &rec;
	struct saved_signals sv;
	struct vmt_writer_stats st;
	struct vmt_header hdr = *h;
	char options[384];
	/* Chunks every 50 ms at most (the tick is 50 ms): a killed recording
	 * loses at most the last 100 ms (vmrec.1) */
	const struct vmt_writer_opts wopts = { .flush_ms = 50 };
	int e;

	memset(r, 0, sizeof(*r));
	memset(sum, 0, sizeof(*sum));
	sum->exit_code = 1;
	err[0] = '\0';
	r->notice = notice;
	r->notice_ctx = notice_ctx;
	/* From the start: a SIGINT while the backend sets up stops the
	 * recording as soon as it runs. */
	vmr_signals_install(&sv);
	if ((e = setup(r, o, err, errlen)))
		goto out;
	/* The header says what made the trace: the backend and the touch
	 * source actually used. */
	vmr_options_string(o, r->backend->name, r->touch, options, sizeof(options));
	/* and the machine's settings that change faults and results (under
	 * strict overcommit an uncommit by mmap(PROT_NONE) gives back charge
	 * that madvise keeps; without the zero page a read allocates) */
	vmt_host_mm_words(options, sizeof(options));
	hdr.options = options;
	hdr.backend = r->backend->name;
	hdr.touch = touch_names[r->touch];
	r->out_fd = out_fd;
	r->w = vmt_writer_create(out_fd, &hdr, &wopts, &e);
	if (!r->w) {
		snprintf(err, errlen, "cannot write the trace: %s", vmt_strerror(e));
		if (e != -ENOMEM)
			sum->write_error = e;
		goto out;
	}
	vmr_ticks_start();
	e = r->backend->run(r, err, errlen);
	if (e) {
		sum->exit_code = r->exit_code;
		goto out;
	}
	vmr_drain_faults(r, UINT64_MAX);
	if (r->stacks && (e = vmr_stacks_finish(r->stacks, r->w, vmt_now_ns())) && !r->werr)
		r->werr = e;
	if (r->faults)
		r->lost += vmr_faults_lost(r->faults);
	e = vmt_writer_finish(r->w);
	if (e && !r->werr)
		r->werr = e;
	vmt_writer_get_stats(r->w, &st);
	sum->events = st.events;
	sum->raw_bytes = st.raw_bytes;
	sum->file_bytes = st.file_bytes;
	sum->threads = r->next_thread;
	sum->procs = r->next_proc;
	sum->lost = r->lost;
	if (r->stacks) {
		struct vmr_stacks_stats ss;
		vmr_stacks_get_stats(r->stacks, &ss);
		sum->stack_captures = ss.captures + r->stack_skipped;
		sum->stack_failed = ss.failed + r->stack_skipped;
		sum->stack_skipped = r->stack_skipped;
		sum->stack_shallow = ss.shallow;
		sum->stack_cut = ss.cut;
		sum->stacks = ss.stacks;
	}
	sum->backend = r->backend->name;
	sum->touch = touch_names[r->touch];
	sum->stopped_by = r->stopped_by;
	sum->written_events = st.written_events;
	if (r->stopped_by && !r->attach)
		sum->exit_code = 128 + r->stopped_by;
	else if (r->have_root_status)
		sum->exit_code = r->root_status;
	else
		sum->exit_code = 0; /* detached: the program runs on */
	e = 0;
	if (r->werr) {
		snprintf(err, errlen, "cannot write the trace: %s", vmt_strerror(r->werr));
		e = r->werr;
		sum->write_error = r->werr;
		sum->write_error_stopped = r->stop_werr;
		sum->exit_code = 1;
	}
out:
	vmr_signals_restore(&sv);
	/* (the trace is complete: what is left is releasing) */
	r->handed_off = o->exits && r->stream && vmr_exit_handoff() == 0;
	teardown(r);
	return e;
}
