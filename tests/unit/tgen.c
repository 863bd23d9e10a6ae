/*
 * tgen.c - see tgen.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tgen.h"

/* ---- events ------------------------------------------------------------- */

static struct vmt_event ev_of(uint32_t kind, uint32_t proc, uint32_t thread)
{
	struct vmt_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.kind = kind;
	ev.proc = proc;
	ev.thread = thread;
	ev.ts_ns = TG_EV_NS;
	return ev;
}

struct vmt_event tg_ev_sc(uint32_t proc, uint32_t thread, uint32_t op, int64_t result,
			  uint32_t nargs, const uint64_t *args)
{
	const struct vmt_op_info *oi = vmt_op_info(op);
	if ((oi && nargs != oi->nargs) || nargs > VMT_MAX_ARGS) {
		fprintf(stderr, "tgen: %u arguments for %s\n", nargs, oi ? oi->name : "an op");
		abort();
	}
	struct vmt_event ev = ev_of(VMT_EV_SYSCALL, proc, thread);
	ev.u.sc.op = op;
	ev.u.sc.nargs = nargs;
	for (uint32_t i = 0; i < nargs; i++)
		ev.u.sc.args[i] = args[i];
	ev.u.sc.result = result;
	ev.u.sc.exit_ns = ev.ts_ns + 500;
	ev.u.sc.stack_id = VMT_NONE;
	return ev;
}

struct vmt_event tg_with_stack(struct vmt_event ev, uint32_t stack)
{
	ev.u.sc.stack_id = stack;
	return ev;
}

struct vmt_event tg_ev_file(uint32_t proc, uint32_t thread, const char *path, uint64_t dev,
			    uint64_t ino, uint64_t size, uint32_t open_flags, uint32_t mode)
{
	struct vmt_event ev = ev_of(VMT_EV_MAP_FILE, proc, thread);
	ev.u.file = (struct vmt_map_file){ path, dev, ino, size, open_flags, mode };
	return ev;
}

struct vmt_event tg_ev_thread_start(uint32_t proc, uint32_t thread, uint32_t parent_thread,
				    int32_t os_tid)
{
	struct vmt_event ev = ev_of(VMT_EV_THREAD_START, proc, thread);
	ev.u.thread_start = (struct vmt_thread_start){ parent_thread, os_tid };
	return ev;
}

struct vmt_event tg_ev_thread_exit(uint32_t proc, uint32_t thread, int32_t status)
{
	struct vmt_event ev = ev_of(VMT_EV_THREAD_EXIT, proc, thread);
	ev.u.thread_exit.status = status;
	return ev;
}

struct vmt_event tg_ev_process_start(uint32_t proc, uint32_t thread, uint32_t parent_proc,
				     int32_t os_pid, uint32_t how)
{
	struct vmt_event ev = ev_of(VMT_EV_PROCESS_START, proc, thread);
	ev.u.process_start = (struct vmt_process_start){ parent_proc, os_pid, how };
	return ev;
}

struct vmt_event tg_ev_exec(uint32_t proc, uint32_t thread, const char *path)
{
	struct vmt_event ev = ev_of(VMT_EV_EXEC, proc, thread);
	ev.u.exec.path = path;
	return ev;
}

struct vmt_event tg_ev_process_exit(uint32_t proc, uint32_t thread, int32_t status)
{
	struct vmt_event ev = ev_of(VMT_EV_PROCESS_EXIT, proc, thread);
	ev.u.process_exit.status = status;
	return ev;
}

struct vmt_event tg_ev_maps(uint32_t proc, uint32_t thread, uint32_t count,
			    const struct vmt_map_entry *entries)
{
	struct vmt_event ev = ev_of(VMT_EV_MAPS, proc, thread);
	ev.u.maps = (struct vmt_maps){ count, entries };
	return ev;
}

struct vmt_event tg_ev_touch(uint32_t proc, uint32_t thread, uint64_t start, uint64_t npages,
			     uint32_t reason, uint32_t nruns, const struct vmt_touch_run *runs)
{
	struct vmt_event ev = ev_of(VMT_EV_TOUCH, proc, thread);
	ev.u.touch = (struct vmt_touch){ start, npages, reason, nruns, runs };
	return ev;
}

struct vmt_event tg_ev_fault(uint32_t proc, uint32_t thread, uint64_t addr, uint64_t ip,
			     uint32_t access)
{
	struct vmt_event ev = ev_of(VMT_EV_FAULT, proc, thread);
	ev.u.fault = (struct vmt_fault){ addr, ip, access, 0 };
	return ev;
}

struct vmt_event tg_ev_lost(uint32_t proc, uint32_t thread, uint64_t count, uint32_t what)
{
	struct vmt_event ev = ev_of(VMT_EV_LOST, proc, thread);
	ev.u.lost = (struct vmt_lost){ count, what };
	return ev;
}

struct vmt_event tg_ev_stack(uint32_t id, uint32_t depth, const uint64_t *ips)
{
	struct vmt_event ev = ev_of(VMT_EV_STACK, 0, 0);
	ev.u.stack = (struct vmt_stack){ id, depth, ips };
	return ev;
}

struct vmt_event tg_ev_symbol(uint64_t ip, uint32_t module, uint32_t function, uint64_t offset)
{
	struct vmt_event ev = ev_of(VMT_EV_SYMBOL, 0, 0);
	ev.u.symbol = (struct vmt_symbol){ ip, module, function, offset };
	return ev;
}

struct vmt_event tg_ev_string(uint32_t id, const char *str)
{
	struct vmt_event ev = ev_of(VMT_EV_STRING, 0, 0);
	ev.u.string = (struct vmt_string){ id, str };
	return ev;
}

/* ---- traces ------------------------------------------------------------- */

static void die(const char *what, int err)
{
	fprintf(stderr, "tgen: %s: %s\n", what, vmt_strerror(err));
	abort();
}

void tg_trace_open(struct tg_trace *t, int fd, const struct vmt_header *h)
{
	int err = 0;
	memset(t, 0, sizeof(*t));
	t->fd = fd;
	t->h = *h;
	t->now = h->start_mono_ns;
	t->w = vmt_writer_create(fd, &t->h, NULL, &err);
	if (!t->w)
		die("cannot start a trace", err);
}

void tg_trace_memfd(struct tg_trace *t, const char *name, const char *options)
{
	struct vmt_header h;
	tg_header(&h);
	if (options)
		h.options = options;
	tg_trace_open(t, tg_memfd(name), &h);
}

void tg_trace_file(struct tg_trace *t)
{
	static const char *const argv[] = { "./synthetic" };
	char path[sizeof(t->path)] = "/tmp/tgen.XXXXXX";
	struct vmt_header h;
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("tgen: mkstemp");
		abort();
	}
	vmt_header_from_host(&h);
	h.argc = 1;
	h.argv = argv;
	h.options = "touch=resident";
	h.recorder = "tgen";
	tg_trace_open(t, fd, &h);
	memcpy(t->path, path, sizeof(path));
	t->now = 1000;
}

uint64_t tg_put_at(struct tg_trace *t, struct vmt_event ev, uint64_t ts)
{
	ev.ts_ns = ts;
	if (ev.kind == VMT_EV_SYSCALL)
		ev.u.sc.exit_ns = ts + 500;
	int rc = vmt_writer_append(t->w, &ev);
	if (rc) {
		char what[64];
		snprintf(what, sizeof(what), "event %llu (kind %u)", (unsigned long long)t->count,
			 ev.kind);
		die(what, rc);
	}
	return t->count++;
}

uint64_t tg_put(struct tg_trace *t, struct vmt_event ev)
{
	return tg_put_at(t, ev, t->now += 1000);
}

void tg_proc_how(struct tg_trace *t, uint32_t proc, uint32_t thread, uint32_t parent_proc,
		 uint32_t parent_thread, uint32_t how)
{
	tg_put(t, tg_ev_process_start(proc, thread, parent_proc, 1000 + (int32_t)proc, how));
	tg_thread(t, proc, thread, parent_thread);
}

void tg_proc(struct tg_trace *t, uint32_t proc, uint32_t thread, uint32_t parent_proc,
	     uint32_t parent_thread)
{
	tg_proc_how(t, proc, thread, parent_proc, parent_thread,
		    parent_proc == VMT_NONE ? VMT_PROC_ROOT : VMT_PROC_FORK);
}

void tg_thread(struct tg_trace *t, uint32_t proc, uint32_t thread, uint32_t parent_thread)
{
	tg_put(t, tg_ev_thread_start(proc, thread, parent_thread, 2000 + (int32_t)thread));
}

void tg_thread_exit(struct tg_trace *t, uint32_t proc, uint32_t thread)
{
	tg_put(t, tg_ev_thread_exit(proc, thread, 0));
}

void tg_proc_exit(struct tg_trace *t, uint32_t proc, uint32_t thread)
{
	tg_put(t, tg_ev_process_exit(proc, thread, 0));
}

void tg_exec(struct tg_trace *t, uint32_t proc, uint32_t thread, const char *path)
{
	tg_put(t, tg_ev_exec(proc, thread, path));
}

void tg_maps(struct tg_trace *t, uint32_t proc, uint32_t thread, const struct tg_map *m,
	     uint32_t n)
{
	struct vmt_map_entry *e = calloc(n ? n : 1, sizeof(*e));
	if (!e)
		abort();
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
	tg_put(t, tg_ev_maps(proc, thread, n, e));
	free(e);
}

void tg_file(struct tg_trace *t, uint32_t proc, uint32_t thread, const char *path, uint64_t ino,
	     uint64_t size, uint32_t open_flags)
{
	tg_put(t, tg_ev_file(proc, thread, path, 0x801, ino, size, open_flags, S_IFREG | 0644));
}

void tg_touch(struct tg_trace *t, uint32_t proc, uint32_t thread, uint64_t start,
	      uint64_t npages, uint32_t state)
{
	struct vmt_touch_run run = { npages, state };
	tg_put(t, tg_ev_touch(proc, thread, start, npages, VMT_TOUCH_BEFORE_OP, 1, &run));
}

void tg_fault(struct tg_trace *t, uint32_t proc, uint32_t thread, uint64_t addr,
	      uint32_t access)
{
	tg_put(t, tg_ev_fault(proc, thread, addr, 0x401000, access));
}

void tg_finish(struct tg_trace *t)
{
	int rc = vmt_writer_finish(t->w);
	if (rc)
		die("cannot finish the trace", rc);
	vmt_writer_free(t->w);
	t->w = NULL;
	if (t->path[0]) {
		close(t->fd);
		t->fd = -1;
	} else if (lseek(t->fd, 0, SEEK_SET) != 0) {
		perror("tgen: lseek");
		abort();
	}
}

void tg_remove(struct tg_trace *t)
{
	unlink(t->path);
}

vmt_writer *tg_memfd_writer(const char *name, int *fd)
{
	struct vmt_header h;
	int err = 0;
	vmt_header_from_host(&h);
	*fd = tg_memfd(name);
	vmt_writer *w = vmt_writer_create(*fd, &h, NULL, &err);
	if (!w)
		die("cannot start a trace", err);
	return w;
}

void tg_header(struct vmt_header *h)
{
	static const char *const argv[] = { "./app", "--flag", "arg with space" };
	memset(h, 0, sizeof(*h));
	h->arch = "x86_64";
	h->page_size = 4096;
	h->kernel = "6.18.0-test";
	h->hostname = "testhost";
	h->argc = 3;
	h->argv = argv;
	h->options = "touch=resident";
	h->recorder = "vmrec test";
	h->start_realtime_ns = 1764470000000000000ull;
	h->start_mono_ns = TG_START_NS;
}

/* ---- random events ------------------------------------------------------ */

uint64_t tg_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t pick(uint64_t *r)
{
	/* Values of every magnitude: small, page sized, addresses, huge. */
	switch (tg_rand(r) % 5) {
	case 0: return tg_rand(r) % 16;
	case 1: return (tg_rand(r) % 1024) * 4096;
	case 2: return 0x7f0000000000ull + (tg_rand(r) % (1ull << 32)) * 4096;
	case 3: return tg_rand(r);
	default: return (uint64_t)-(int64_t)(tg_rand(r) % 4096);
	}
}

static void rstr(uint64_t *r, char *dst, size_t cap)
{
	size_t n = tg_rand(r) % (cap - 1);
	for (size_t i = 0; i < n; i++)
		dst[i] = (char)(1 + tg_rand(r) % 255);
	dst[n] = 0;
}

void tg_event(uint64_t *r, uint32_t kind, struct vmt_event *ev, struct tg_store *st)
{
	memset(ev, 0, sizeof(*ev));
	if (!kind)
		kind = 1 + (uint32_t)(tg_rand(r) % (VMT_EV__COUNT - 1));
	ev->kind = kind;
	ev->thread = (uint32_t)(tg_rand(r) % 8 == 0 ? tg_rand(r) % VMT_MAX_THREADS : tg_rand(r) % 4);
	ev->proc = (uint32_t)(tg_rand(r) % 3);
	ev->ts_ns = tg_rand(r) % (1ull << 50);
	switch (kind) {
	case VMT_EV_SYSCALL: {
		struct vmt_syscall *sc = &ev->u.sc;
		sc->op = 1 + (uint32_t)(tg_rand(r) % (VMT_OP__COUNT - 1));
		sc->nargs = vmt_op_info(sc->op)->nargs;
		for (uint32_t i = 0; i < sc->nargs; i++)
			sc->args[i] = pick(r);
		if (tg_rand(r) % 4 == 0)
			sc->result = -(int64_t)(1 + tg_rand(r) % 4095);
		else if (vmt_op_info(sc->op)->ret == VMT_RET_ADDR)
			sc->result = (int64_t)(pick(r) & 0x7fffffffffffffffull);
		else
			sc->result = (int64_t)(tg_rand(r) % 2);
		sc->flags = tg_rand(r) % 10 == 0 ? VMT_SC_NO_RESULT : 0;
		sc->exit_ns = sc->flags ? ev->ts_ns : ev->ts_ns + tg_rand(r) % 1000000;
		sc->stack_id = tg_rand(r) % 2 ? VMT_NONE : (uint32_t)(tg_rand(r) % 100000);
		/* 1.2: the waits of a call that returned, some of the time */
		if (!sc->flags && tg_rand(r) % 3 == 0) {
			sc->waits = 1;
			sc->off_cpu_ns = tg_rand(r) % (sc->exit_ns - ev->ts_ns + 1);
			sc->vcsw = (uint32_t)(tg_rand(r) % 3 ? tg_rand(r) % 4 : tg_rand(r));
			sc->ivcsw = (uint32_t)(tg_rand(r) % 3);
		}
		break;
	}
	case VMT_EV_MAP_FILE:
		rstr(r, st->str[0], sizeof(st->str[0]));
		ev->u.file.path = st->str[0];
		ev->u.file.dev = pick(r);
		ev->u.file.ino = pick(r);
		ev->u.file.size = pick(r);
		ev->u.file.open_flags = (uint32_t)tg_rand(r);
		ev->u.file.mode = (uint32_t)tg_rand(r);
		break;
	case VMT_EV_THREAD_START:
		ev->u.thread_start.parent_thread = tg_rand(r) % 3 ? (uint32_t)(tg_rand(r) % 100) : VMT_NONE;
		ev->u.thread_start.os_tid = (int32_t)tg_rand(r);
		break;
	case VMT_EV_THREAD_EXIT:
		ev->u.thread_exit.status = (int32_t)tg_rand(r);
		break;
	case VMT_EV_PROCESS_START:
		ev->u.process_start.parent_proc = tg_rand(r) % 3 ? (uint32_t)(tg_rand(r) % 100) : VMT_NONE;
		ev->u.process_start.os_pid = (int32_t)tg_rand(r);
		ev->u.process_start.how = (uint32_t)(tg_rand(r) % 5);
		break;
	case VMT_EV_EXEC:
		rstr(r, st->str[0], sizeof(st->str[0]));
		ev->u.exec.path = st->str[0];
		break;
	case VMT_EV_PROCESS_EXIT:
		ev->u.process_exit.status = (int32_t)tg_rand(r);
		break;
	case VMT_EV_MAPS: {
		uint32_t n = (uint32_t)(tg_rand(r) % 9);
		uint64_t at = (tg_rand(r) % 1024) * 4096;
		for (uint32_t i = 0; i < n; i++) {
			struct vmt_map_entry *e = &st->maps[i];
			e->start = at + (tg_rand(r) % 4) * 4096;
			e->end = e->start + (1 + tg_rand(r) % 64) * 4096;
			at = e->end;
			e->offset = pick(r);
			e->dev = pick(r);
			e->ino = pick(r);
			e->perms = (uint32_t)(tg_rand(r) % 16);
			rstr(r, st->str[i % 4], sizeof(st->str[0]));
			e->path = st->str[i % 4];
		}
		ev->u.maps.count = n;
		ev->u.maps.entries = st->maps;
		break;
	}
	case VMT_EV_TOUCH: {
		uint32_t n = 1 + (uint32_t)(tg_rand(r) % 16);
		uint64_t total = 0;
		for (uint32_t i = 0; i < n; i++) {
			st->runs[i].pages = 1 + tg_rand(r) % 300;
			st->runs[i].state = (uint32_t)(tg_rand(r) % 4);
			total += st->runs[i].pages;
		}
		ev->u.touch.start = (pick(r) & 0x00007ffffffff000ull);
		ev->u.touch.npages = total;
		ev->u.touch.reason = (uint32_t)(tg_rand(r) % 3);
		ev->u.touch.nruns = n;
		ev->u.touch.runs = st->runs;
		break;
	}
	case VMT_EV_FAULT:
		ev->u.fault.addr = pick(r);
		ev->u.fault.ip = pick(r);
		ev->u.fault.access = (uint32_t)(tg_rand(r) % 8);
		ev->u.fault.flags = (uint32_t)(tg_rand(r) % (VMT_FLT__ALL + 1));
		break;
	case VMT_EV_STACK: {
		uint32_t d = (uint32_t)(tg_rand(r) % 33);
		for (uint32_t i = 0; i < d; i++)
			st->ips[i] = pick(r);
		ev->u.stack.id = (uint32_t)(tg_rand(r) % 1000);
		ev->u.stack.depth = d;
		ev->u.stack.ips = st->ips;
		break;
	}
	case VMT_EV_SYMBOL:
		ev->u.symbol.ip = pick(r);
		ev->u.symbol.module = tg_rand(r) % 4 ? (uint32_t)(tg_rand(r) % 1000) : VMT_NONE;
		ev->u.symbol.function = tg_rand(r) % 4 ? (uint32_t)(tg_rand(r) % 1000) : VMT_NONE;
		ev->u.symbol.offset = pick(r);
		break;
	case VMT_EV_STRING:
		rstr(r, st->str[0], sizeof(st->str[0]));
		ev->u.string.id = (uint32_t)(tg_rand(r) % 1000);
		ev->u.string.str = st->str[0];
		break;
	case VMT_EV_LOST:
		ev->u.lost.count = pick(r);
		ev->u.lost.what = 1 + (uint32_t)(tg_rand(r) % 2);
		break;
	case VMT_EV_COUNTERS: {
		struct vmt_counters *c = &ev->u.counters;
		c->scope = (uint32_t)(tg_rand(r) % 3);
		c->flags = (uint32_t)(tg_rand(r) % 2) |
			   (c->scope == VMT_CNT_PROCESS && tg_rand(r) % 2 ? VMT_CNT_SUM : 0);
		c->minflt = pick(r);
		c->majflt = tg_rand(r) % 100;
		c->nvcsw = pick(r);
		c->nivcsw = tg_rand(r) % 1000;
		c->utime_ns = pick(r) >> 1;
		c->stime_ns = tg_rand(r) % (1ull << 40);
		c->stops = tg_rand(r) % 4 ? 0 : pick(r);
		break;
	}
	}
}

#define NE(f) if (a->f != b->f) return 0
#define SE(f) if (strcmp(a->f, b->f)) return 0

int tg_event_equal(const struct vmt_event *a, const struct vmt_event *b)
{
	NE(kind); NE(thread); NE(proc); NE(ts_ns);
	switch (a->kind) {
	case VMT_EV_SYSCALL:
		NE(u.sc.op); NE(u.sc.nargs); NE(u.sc.result); NE(u.sc.stack_id); NE(u.sc.flags);
		if (!(a->u.sc.flags & VMT_SC_NO_RESULT))
			NE(u.sc.exit_ns);
		for (uint32_t i = 0; i < a->u.sc.nargs; i++)
			NE(u.sc.args[i]);
		NE(u.sc.waits); NE(u.sc.off_cpu_ns); NE(u.sc.vcsw); NE(u.sc.ivcsw);
		return 1;
	case VMT_EV_MAP_FILE:
		SE(u.file.path); NE(u.file.dev); NE(u.file.ino); NE(u.file.size);
		NE(u.file.open_flags); NE(u.file.mode);
		return 1;
	case VMT_EV_THREAD_START:
		NE(u.thread_start.parent_thread); NE(u.thread_start.os_tid);
		return 1;
	case VMT_EV_THREAD_EXIT: NE(u.thread_exit.status); return 1;
	case VMT_EV_PROCESS_START:
		NE(u.process_start.parent_proc); NE(u.process_start.os_pid); NE(u.process_start.how);
		return 1;
	case VMT_EV_EXEC: SE(u.exec.path); return 1;
	case VMT_EV_PROCESS_EXIT: NE(u.process_exit.status); return 1;
	case VMT_EV_MAPS:
		NE(u.maps.count);
		for (uint32_t i = 0; i < a->u.maps.count; i++) {
			NE(u.maps.entries[i].start); NE(u.maps.entries[i].end);
			NE(u.maps.entries[i].offset); NE(u.maps.entries[i].dev);
			NE(u.maps.entries[i].ino); NE(u.maps.entries[i].perms);
			SE(u.maps.entries[i].path);
		}
		return 1;
	case VMT_EV_TOUCH:
		NE(u.touch.start); NE(u.touch.npages); NE(u.touch.reason); NE(u.touch.nruns);
		for (uint32_t i = 0; i < a->u.touch.nruns; i++) {
			NE(u.touch.runs[i].pages); NE(u.touch.runs[i].state);
		}
		return 1;
	case VMT_EV_FAULT:
		NE(u.fault.addr); NE(u.fault.ip); NE(u.fault.access); NE(u.fault.flags);
		return 1;
	case VMT_EV_STACK:
		NE(u.stack.id); NE(u.stack.depth);
		for (uint32_t i = 0; i < a->u.stack.depth; i++)
			NE(u.stack.ips[i]);
		return 1;
	case VMT_EV_SYMBOL:
		NE(u.symbol.ip); NE(u.symbol.module); NE(u.symbol.function); NE(u.symbol.offset);
		return 1;
	case VMT_EV_STRING: NE(u.string.id); SE(u.string.str); return 1;
	case VMT_EV_LOST: NE(u.lost.count); NE(u.lost.what); return 1;
	case VMT_EV_COUNTERS:
		NE(u.counters.scope); NE(u.counters.flags); NE(u.counters.minflt);
		NE(u.counters.majflt); NE(u.counters.nvcsw); NE(u.counters.nivcsw);
		NE(u.counters.utime_ns); NE(u.counters.stime_ns); NE(u.counters.stops);
		return 1;
	}
	return 0;
}

/* ---- files -------------------------------------------------------------- */

int tg_memfd(const char *name)
{
	int fd = memfd_create(name, 0);
	if (fd < 0) {
		perror("memfd_create");
		abort();
	}
	return fd;
}

uint8_t *tg_slurp(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc(end > 0 ? (size_t)end : 1);
	if (!buf)
		abort();
	if (pread(fd, buf, (size_t)end, 0) != end)
		abort();
	*len = (size_t)end;
	return buf;
}

int tg_memfd_with(const uint8_t *buf, size_t len)
{
	int fd = tg_memfd("cut");
	if (len && write(fd, buf, len) != (ssize_t)len)
		abort();
	lseek(fd, 0, SEEK_SET);
	return fd;
}

int tg_count_events(int fd, uint64_t *n, char *msg, size_t msglen)
{
	int err = 0;
	lseek(fd, 0, SEEK_SET);
	*n = 0;
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, msglen);
	if (!r)
		return err;
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1)
		(*n)++;
	if (rc < 0 && msg)
		snprintf(msg, msglen, "%s", vmt_reader_errmsg(r));
	vmt_reader_free(r);
	return rc;
}
