/*
 * tgen.c - see tgen.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tgen.h"

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
	case VMT_EV_FAULT: NE(u.fault.addr); NE(u.fault.ip); NE(u.fault.access); return 1;
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
	}
	return 0;
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
	h->start_mono_ns = 1000000000ull;
}

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
