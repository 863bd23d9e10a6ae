/*
 * check.c - the validation rules of events (man/vmtrace.5, "Reader
 * obligations"), shared by the writer (which refuses invalid events) and
 * the reader (which refuses invalid files).
 */
#include <string.h>
#include "codec_int.h"

/* ---- validation ---------------------------------------------------------- */

/* The kinds with more than a field or two to check, one function each. */

static int check_syscall(const struct vmt_event *ev, const char **why)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	if (sc->op == 0 || sc->op >= VMT_OP__COUNT)
		BAD("unknown syscall op");
	if (sc->nargs > VMT_MAX_ARGS)
		BAD("more than 6 syscall arguments");
	if (sc->flags & ~(VMT_SC_NO_RESULT | VMT_SC_REWRITTEN))
		BAD("unknown syscall flags");
	if (!(sc->flags & VMT_SC_NO_RESULT) && sc->exit_ns < ev->ts_ns)
		BAD("syscall exit time before its entry time");
	if (sc->result < 0 && !vmt_is_errno(sc->result) &&
	    vmt_op_info(sc->op)->ret != VMT_RET_ADDR)
		BAD("syscall result is neither a value nor an errno");
	return vmt_sc_waits_check(sc, ev->ts_ns, why);
}

static int check_maps(const struct vmt_maps *m, uint64_t pmask, const char **why)
{
	uint64_t prev_end = 0;
	if (m->count && !m->entries)
		BAD("maps without entries");
	if (m->count > VMT_MAX_MAPS_ENTRIES)
		BAD("maps entry count exceeds the limit");
	for (uint32_t i = 0; i < m->count; i++) {
		const struct vmt_map_entry *e = &m->entries[i];
		if (e->start >= e->end)
			BAD("maps entry with start >= end");
		if ((e->start | e->end) & pmask)
			BAD("maps entry not page aligned");
		if (e->start < prev_end)
			BAD("maps entries overlap or are unsorted");
		if (e->perms & ~0xfu)
			BAD("maps entry with unknown permission bits");
		if (!e->path || strlen(e->path) > VMT_MAX_STRING)
			BAD("maps entry path missing or too long");
		prev_end = e->end;
	}
	return 0;
}

static int check_touch(const struct vmt_touch *t, uint64_t pmask, const char **why)
{
	uint64_t n = 0;
	if (t->start & pmask)
		BAD("touch start not page aligned");
	if (t->reason > VMT_TOUCH_SNAPSHOT)
		BAD("unknown touch reason");
	if (t->nruns == 0 || !t->runs)
		BAD("touch without runs");
	if (t->nruns > VMT_MAX_TOUCH_RUNS)
		BAD("touch run count exceeds the limit");
	for (uint32_t i = 0; i < t->nruns; i++) {
		if (t->runs[i].pages == 0 || t->runs[i].pages > (1ull << 40))
			BAD("touch run length out of range");
		if (t->runs[i].state > VMT_PAGE_WRITTEN)
			BAD("unknown touch page state");
		n += t->runs[i].pages;
	}
	if (n != t->npages || n > (1ull << 40))
		BAD("touch page count does not match its runs");
	if (t->start + n * (pmask + 1) < t->start)
		BAD("touch range wraps around");
	return 0;
}

int vmt_event_check_ps(const struct vmt_event *ev, uint32_t page_size,
		       const char **why)
{
	uint64_t pmask = (page_size ? page_size : 4096) - 1;

	if (ev->thread >= VMT_MAX_THREADS)
		BAD("thread index out of range");
	if (ev->proc >= VMT_MAX_THREADS)
		BAD("process index out of range");
	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		return check_syscall(ev, why);
	case VMT_EV_MAP_FILE:
		if (!ev->u.file.path)
			BAD("map_file without path");
		if (strlen(ev->u.file.path) > VMT_MAX_STRING)
			BAD("map_file path too long");
		break;
	case VMT_EV_THREAD_START:
		if (ev->u.thread_start.parent_thread != VMT_NONE &&
		    ev->u.thread_start.parent_thread >= VMT_MAX_THREADS)
			BAD("parent thread index out of range");
		break;
	case VMT_EV_THREAD_EXIT:
	case VMT_EV_PROCESS_EXIT:
		break;
	case VMT_EV_PROCESS_START:
		if (ev->u.process_start.parent_proc != VMT_NONE &&
		    ev->u.process_start.parent_proc >= VMT_MAX_THREADS)
			BAD("parent process index out of range");
		if (ev->u.process_start.how > VMT_PROC_ATTACH)
			BAD("unknown process start kind");
		break;
	case VMT_EV_EXEC:
		if (!ev->u.exec.path || strlen(ev->u.exec.path) > VMT_MAX_STRING)
			BAD("exec path missing or too long");
		break;
	case VMT_EV_MAPS:
		return check_maps(&ev->u.maps, pmask, why);
	case VMT_EV_TOUCH:
		return check_touch(&ev->u.touch, pmask, why);
	case VMT_EV_FAULT:
		if (ev->u.fault.access & ~7u)
			BAD("unknown fault access bits");
		if (ev->u.fault.flags & ~VMT_FLT__ALL)
			BAD("unknown fault flags");
		break;
	case VMT_EV_STACK:
		if (ev->u.stack.depth > VMT_MAX_STACK_DEPTH)
			BAD("stack deeper than the limit");
		if (ev->u.stack.depth && !ev->u.stack.ips)
			BAD("stack without ips");
		break;
	case VMT_EV_SYMBOL:
		break;
	case VMT_EV_STRING:
		if (!ev->u.string.str || strlen(ev->u.string.str) > VMT_MAX_STRING)
			BAD("string missing or too long");
		break;
	case VMT_EV_LOST:
		if (ev->u.lost.what < VMT_LOST_FAULTS ||
		    ev->u.lost.what > VMT_LOST_EVENTS)
			BAD("unknown lost-event kind");
		break;
	case VMT_EV_COUNTERS:
		return vmt_counters_check(&ev->u.counters, why);
	default:
		BAD("unknown event kind");
	}
	return 0;
}

int vmt_event_check(const struct vmt_event *ev, const char **why)
{
	return vmt_event_check_ps(ev, 4096, why);
}

