/*
 * rptw.c - see rptw.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "rptw.h"
#include "tgen.h"

void tw_open(struct tw *t)
{
	struct vmt_header h;
	static const char *const argv[] = {"./synthetic"};
	int err = 0;
	memset(t, 0, sizeof(*t));
	snprintf(t->path, sizeof(t->path), "/tmp/rptw.XXXXXX");
	t->fd = mkstemp(t->path);
	assert_true(t->fd >= 0);
	vmt_header_from_host(&h);
	h.argc = 1;
	h.argv = argv;
	h.options = "touch=resident";
	h.recorder = "rptw";
	t->w = vmt_writer_create(t->fd, &h, NULL, &err);
	assert_non_null(t->w);
	t->ts = 1000;
}

void tw_close(struct tw *t)
{
	assert_int_equal(vmt_writer_finish(t->w), 0);
	vmt_writer_free(t->w);
	close(t->fd);
	t->w = NULL;
}

void tw_remove(struct tw *t)
{
	unlink(t->path);
}

void tw_event(struct tw *t, struct vmt_event *ev)
{
	int rc = vmt_writer_append(t->w, ev);
	if (rc)
		fprintf(stderr, "tw_event: kind %u: %s\n", ev->kind, vmt_strerror(rc));
	assert_int_equal(rc, 0);
}

vmt_writer *tw_memfd_writer(const char *name, int *fd)
{
	struct vmt_header h;
	int err;
	vmt_header_from_host(&h);
	*fd = tg_memfd(name);
	vmt_writer *w = vmt_writer_create(*fd, &h, NULL, &err);
	if (!w)
		fail_msg("writer: %s", vmt_strerror(err));
	return w;
}

static void base(struct tw *t, struct vmt_event *ev, uint32_t kind, uint32_t proc, uint32_t thread)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->proc = proc;
	ev->thread = thread;
	ev->ts_ns = t->ts += 1000;
}

void tw_proc_how(struct tw *t, uint32_t proc, uint32_t parent_proc, uint32_t thread,
		 uint32_t parent_thread, uint32_t how)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_PROCESS_START, proc, thread);
	ev.u.process_start.parent_proc = parent_proc;
	ev.u.process_start.os_pid = 1000 + (int32_t)proc;
	ev.u.process_start.how = how;
	tw_event(t, &ev);
	tw_thread(t, proc, thread, parent_thread);
}

void tw_proc(struct tw *t, uint32_t proc, uint32_t parent_proc, uint32_t thread,
	     uint32_t parent_thread)
{
	tw_proc_how(t, proc, parent_proc, thread, parent_thread,
		    parent_proc == VMT_NONE ? VMT_PROC_ROOT : VMT_PROC_FORK);
}

void tw_thread(struct tw *t, uint32_t proc, uint32_t thread, uint32_t parent_thread)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_THREAD_START, proc, thread);
	ev.u.thread_start.parent_thread = parent_thread;
	ev.u.thread_start.os_tid = 2000 + (int32_t)thread;
	tw_event(t, &ev);
}

void tw_thread_exit(struct tw *t, uint32_t proc, uint32_t thread)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_THREAD_EXIT, proc, thread);
	tw_event(t, &ev);
}

void tw_proc_exit(struct tw *t, uint32_t proc, uint32_t thread)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_PROCESS_EXIT, proc, thread);
	tw_event(t, &ev);
}

void tw_exec(struct tw *t, uint32_t proc, uint32_t thread, const char *path)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_EXEC, proc, thread);
	ev.u.exec.path = path;
	tw_event(t, &ev);
}

void tw_maps(struct tw *t, uint32_t proc, uint32_t thread, const struct tw_map *m, uint32_t n)
{
	struct vmt_event ev;
	struct vmt_map_entry *e = calloc(n ? n : 1, sizeof(*e));
	assert_non_null(e);
	for (uint32_t i = 0; i < n; i++) {
		e[i].start = m[i].start;
		e[i].end = m[i].end;
		e[i].perms = m[i].perms;
		e[i].path = m[i].path ? m[i].path : "";
		if (e[i].path[0] == '/') {
			e[i].dev = 0x801;
			e[i].ino = 4242 + i;
		}
	}
	base(t, &ev, VMT_EV_MAPS, proc, thread);
	ev.u.maps.count = n;
	ev.u.maps.entries = e;
	tw_event(t, &ev);
	free(e);
}

void tw_sc(struct tw *t, uint32_t proc, uint32_t thread, uint32_t op, int64_t result,
	   uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_SYSCALL, proc, thread);
	ev.u.sc.op = op;
	ev.u.sc.nargs = vmt_op_info(op)->nargs;
	uint64_t a[6] = {a0, a1, a2, a3, a4, a5};
	memcpy(ev.u.sc.args, a, sizeof(a));
	ev.u.sc.result = result;
	ev.u.sc.exit_ns = ev.ts_ns + 500;
	ev.u.sc.stack_id = VMT_NONE;
	tw_event(t, &ev);
}

void tw_touch(struct tw *t, uint32_t proc, uint32_t thread, uint64_t start, uint64_t npages,
	      uint32_t state)
{
	struct vmt_event ev;
	struct vmt_touch_run run = {npages, state};
	base(t, &ev, VMT_EV_TOUCH, proc, thread);
	ev.u.touch.start = start;
	ev.u.touch.npages = npages;
	ev.u.touch.reason = VMT_TOUCH_BEFORE_OP;
	ev.u.touch.nruns = 1;
	ev.u.touch.runs = &run;
	tw_event(t, &ev);
}

void tw_fault(struct tw *t, uint32_t proc, uint32_t thread, uint64_t addr, uint32_t access)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_FAULT, proc, thread);
	ev.u.fault.addr = addr;
	ev.u.fault.ip = 0x401000;
	ev.u.fault.access = access;
	tw_event(t, &ev);
}

void tw_file(struct tw *t, uint32_t proc, uint32_t thread, const char *path, uint64_t ino,
	     uint64_t size, uint32_t open_flags)
{
	struct vmt_event ev;
	base(t, &ev, VMT_EV_MAP_FILE, proc, thread);
	ev.u.file.path = path;
	ev.u.file.dev = 0x801;
	ev.u.file.ino = ino;
	ev.u.file.size = size;
	ev.u.file.open_flags = open_flags;
	ev.u.file.mode = S_IFREG | 0644;
	tw_event(t, &ev);
}
