/*
 * rwrun.c - see rwrun.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "rwrun.h"

/* Process 0 with threads 0, 1 and 2. */
void rwt_open(struct tg_trace *b)
{
	tg_trace_memfd(b, "rewrite-in", NULL);
	tg_put(b, tg_ev_process_start(0, 0, VMT_NONE, 1000, VMT_PROC_ROOT));
	for (uint32_t t = 0; t < 3; t++)
		tg_put(b, tg_ev_thread_start(0, t, t ? 0 : VMT_NONE, 1000 + (int)t));
}

/* glibc's free: mmap(a, len, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED, -1, 0) */
/* The events of the trace in fd as text lines; the preamble of tb_open
 * (process and thread starts) is left out. */
static char *render_all(int fd)
{
	struct vmt_buf out = { 0 }, line = { 0 };
	char msg[256];
	int err;
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	assert_non_null(r);
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		if (ev.kind == VMT_EV_PROCESS_START || ev.kind == VMT_EV_THREAD_START)
			continue;
		vmt_buf_reset(&line);
		vmt_render_text(&line, &ev);
		if (ev.proc)
			vmt_buf_printf(&out, "p%u ", ev.proc);
		vmt_buf_printf(&out, "t%u %s\n", ev.thread, line.data);
	}
	assert_int_equal(rc, 0);
	vmt_reader_free(r);
	vmt_buf_free(&line);
	if (!out.data)
		vmt_buf_puts(&out, "");
	return out.data;
}

/* Finish b's trace and rewrite it with `rules`. */
struct rwt_result rwt_run(struct tg_trace *b, const char *rules)
{
	struct rwt_result res = { 0 };
	char err[256];
	tg_finish(b);
	van_rewrite *rw = van_rewrite_new(rules, err, sizeof(err));
	assert_non_null(rw);
	int out = tg_memfd("rewrite-out");
	assert_int_equal(lseek(b->fd, 0, SEEK_SET), 0);
	int rc = van_rewrite_trace(rw, b->fd, out, err, sizeof(err));
	if (rc)
		fail_msg("van_rewrite_trace: %d %s", rc, err);
	const struct van_rewrite_counts *c = van_rewrite_counts(rw);
	res.nrules = c->nrules;
	for (uint32_t i = 0; i < c->nrules && i < 8; i++) {
		res.applied[i] = c->rules[i].applied;
		res.removed[i] = c->rules[i].removed;
	}
	res.first = c->rules[0];
	snprintf(res.note, sizeof(res.note), "%s", c->rules[0].note ? c->rules[0].note : "");
	res.first.note = NULL;
	res.events_in = c->events_in;
	res.events_out = c->events_out;
	res.in = c->in;
	res.out = c->out;
	res.text = render_all(out);
	/* The header says what was done to the trace. */
	int e;
	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(out, &e, NULL, 0);
	assert_non_null(r);
	char want[300];
	snprintf(want, sizeof(want), "touch=resident rewrite=%s", van_rewrite_list(rw));
	assert_string_equal(vmt_reader_header(r)->options, want);
	vmt_reader_free(r);
	van_rewrite_free(rw);
	close(out);
	close(b->fd);
	return res;
}

void rwt_expect(const char *got, const char *want)
{
	if (strcmp(got, want))
		fail_msg("rewritten stream differs.\n--- expected:\n%s--- got:\n%s", want, got);
}

/* The trace rewritten by `rules` must be exactly `want`, the rule applied
 * `applied` times. */
void rwt_check(struct tg_trace *b, const char *rules, const char *want, uint64_t applied)
{
	struct rwt_result r = rwt_run(b, rules);
	rwt_expect(r.text, want);
	assert_int_equal(r.applied[0], applied);
	free(r.text);
}
