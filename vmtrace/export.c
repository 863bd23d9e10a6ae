/*
 * export.c - `vmtrace export`: a trace in formats other tools read.
 *
 *   perfetto  Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing):
 *             a track per thread with a slice per syscall, counter tracks
 *             per process (VMAs, mapped bytes, touched pages), instants for
 *             faults, touches and life-cycle events
 *   csv       one row per event for spreadsheets, pandas, DuckDB
 *   jsonl     one JSON object per event (vmt_render_json plus "index")
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"
#include "fmtpipe.h"
#include "tracks.h"
#include "vmtutil.h"

static const char export_usage[] =
	"usage: vmtrace export --format=perfetto|csv|jsonl [-o FILE] TRACE\n"
	"\n"
	"Write TRACE in another format, to FILE or standard output.\n"
	"\n"
	"  --format=perfetto  Chrome trace-event JSON, which ui.perfetto.dev and\n"
	"                     chrome://tracing open: one track per thread with a\n"
	"                     slice per syscall (args and result in its arguments),\n"
	"                     counter tracks per process for the VMA count, mapped\n"
	"                     bytes and touched pages, instant events for faults,\n"
	"                     touches and thread/process life-cycle events.  Times\n"
	"                     are microseconds since the start of recording; pid is\n"
	"                     the process index + 1 and tid the thread index + 1\n"
	"                     (0 is the idle task to Perfetto)\n"
	"  --format=csv       one row per event after a header line: index, ts_ns,\n"
	"                     kind, proc, thread, op, arg0..arg5, result,\n"
	"                     duration_ns, text.  Syscall args are the raw values\n"
	"                     (decimal); faults put addr, ip, access in arg0..2 and\n"
	"                     touches start, pages, present pages, reason\n"
	"  --format=jsonl     one JSON object per event: the keys of\n"
	"                     'vmtrace dump --json' and \"index\"\n"
	"  -o, --output=FILE  write to FILE instead of standard output\n"
	"  -h, --help         this help\n"
	"\n"
	"TRACE may be '-' for standard input.\n"
	"Exit status: 0, or 2 for a usage error, an unreadable, truncated or\n"
	"corrupt trace (the events before the damage are written, as a complete\n"
	"file), or an output that cannot be written.\n";

enum fmt { FMT_PERFETTO, FMT_CSV, FMT_JSONL };

static int sc_failed(const struct vmt_syscall *sc)
{
	return (sc->flags & VMT_SC_NO_RESULT) || vmt_is_errno(sc->result);
}

/* Numbers without printf (vmt_buf_u64 and co.): the exporters write
 * millions of them, and vsnprintf dominated their profile. */
#define put_u64 vmt_buf_u64
#define put_i64 vmt_buf_i64

/* ---- csv ---------------------------------------------------------------- */

static void csv_quote(struct vmt_buf *b, const char *s)
{
	vmt_buf_puts(b, "\"");
	for (const char *q; (q = strchr(s, '"')); s = q + 1) {
		vmt_buf_printf(b, "%.*s\"\"", (int)(q - s), s);
	}
	vmt_buf_puts(b, s);
	vmt_buf_puts(b, "\"");
}

/* The text column: rendered in place after its opening quote, and only
 * when it holds a quote (a path) copied out to be quoted.  Only the
 * trace's own strings can hold one: paths and strings, which are what
 * the kinds with pointers carry; the rest is numbers and names. */
static void csv_text(struct vmt_buf *b, struct vmt_buf *text, const struct vmt_event *ev)
{
	size_t from = b->len;
	vmt_buf_putc(b, '"');
	vmt_render_text(b, ev);
	if (b->oom || !vmt_kind_has_pointers(ev->kind) ||
	    !memchr(b->data + from + 1, '"', b->len - from - 1)) {
		vmt_buf_putc(b, '"');
		return;
	}
	vmt_buf_reset(text);
	vmt_buf_puts(text, b->data + from + 1);
	b->len = from;
	b->data[from] = 0;
	csv_quote(b, text->len ? text->data : "");
}

static void csv_row(struct vmt_buf *b, struct vmt_buf *text, uint64_t index,
		    const struct vmt_event *ev)
{
	const char *kind = vmt_kind_name(ev->kind);
	put_u64(b, index);
	vmt_buf_putc(b, ',');
	put_u64(b, ev->ts_ns);
	vmt_buf_putc(b, ',');
	vmt_buf_puts(b, kind ? kind : "?");
	vmt_buf_putc(b, ',');
	put_u64(b, ev->proc);
	vmt_buf_putc(b, ',');
	put_u64(b, ev->thread);
	vmt_buf_putc(b, ',');
	uint64_t a[VMT_MAX_ARGS];
	uint32_t na = 0;
	const char *op = "";
	int has_result = 0, has_dur = 0;
	if (ev->kind == VMT_EV_SYSCALL) {
		const struct vmt_syscall *sc = &ev->u.sc;
		op = vmt_op_name(sc->op) ? vmt_op_name(sc->op) : "?";
		na = sc->nargs <= VMT_MAX_ARGS ? sc->nargs : VMT_MAX_ARGS;
		memcpy(a, sc->args, sizeof(a));
		has_result = has_dur = !(sc->flags & VMT_SC_NO_RESULT);
	} else if (ev->kind == VMT_EV_FAULT) {
		a[0] = ev->u.fault.addr;
		a[1] = ev->u.fault.ip;
		a[2] = ev->u.fault.access;
		a[3] = ev->u.fault.flags;
		na = 4;
	} else if (ev->kind == VMT_EV_TOUCH) {
		uint64_t present = 0;
		for (uint32_t i = 0; i < ev->u.touch.nruns; i++)
			if (ev->u.touch.runs[i].state != VMT_PAGE_ABSENT)
				present += ev->u.touch.runs[i].pages;
		a[0] = ev->u.touch.start;
		a[1] = ev->u.touch.npages;
		a[2] = present;
		a[3] = ev->u.touch.reason;
		na = 4;
	}
	vmt_buf_puts(b, op);
	vmt_buf_putc(b, ',');
	for (uint32_t i = 0; i < VMT_MAX_ARGS; i++) {
		if (i < na)
			put_u64(b, a[i]);
		vmt_buf_putc(b, ',');
	}
	if (has_result)
		put_i64(b, ev->u.sc.result);
	vmt_buf_putc(b, ',');
	if (has_dur)
		put_u64(b, ev->u.sc.exit_ns > ev->ts_ns ? ev->u.sc.exit_ns - ev->ts_ns : 0);
	vmt_buf_putc(b, ',');
	csv_text(b, text, ev);
	vmt_buf_putc(b, '\n');
}

/* ---- perfetto ----------------------------------------------------------- */

/* Inlined where the keys and names are literals: their lengths are then
 * known and their appends copies of constant size (strlen and memcpy
 * calls were a tenth of a perfetto export). */
#define PF_INLINE static inline __attribute__((always_inline))

/* Microseconds with three decimals, exact from integer nanoseconds. */
PF_INLINE void put_us(struct vmt_buf *b, const char *key, uint64_t ns)
{
	char frac[5] = { '.', (char)('0' + ns % 1000 / 100), (char)('0' + ns % 100 / 10),
			 (char)('0' + ns % 10), 0 };
	VMT_BUF_LIT(b, ",\"");
	vmt_buf_add(b, key, strlen(key));
	VMT_BUF_LIT(b, "\":");
	put_u64(b, ns / 1000);
	vmt_buf_add(b, frac, 4);
}

struct pf {
	van_tracks *trk;
	struct van_track_vals *last; /* per process: the values last written */
	size_t nlast;
	int first; /* no event written yet */
};

/* What pf_prepare found, for pf_event (on any thread): the time, and
 * the counters to write with their values. */
#define PF_FIRST 0x8u /* the event's first object is the file's first */
#define PF_VMA 0x1u
#define PF_MAPPED 0x2u
#define PF_TOUCHED 0x4u
enum { PF_REL, PF_VMAS, PF_BYTES, PF_PAGES };

/* The separator before an object: none before the file's first. */
static void pf_sep(int *first, struct vmt_buf *b)
{
	if (*first)
		vmt_buf_putc(b, '\n');
	else
		VMT_BUF_LIT(b, ",\n");
	*first = 0;
}

PF_INLINE void pf_counter(int *first, struct vmt_buf *b, uint32_t proc, uint64_t rel,
			  const char *name, const char *key, uint64_t v)
{
	pf_sep(first, b);
	VMT_BUF_LIT(b, "{\"ph\":\"C\",\"name\":\"");
	vmt_buf_add(b, name, strlen(name));
	VMT_BUF_LIT(b, "\",\"pid\":");
	put_u64(b, proc + 1);
	put_us(b, "ts", rel);
	VMT_BUF_LIT(b, ",\"args\":{\"");
	vmt_buf_add(b, key, strlen(key));
	VMT_BUF_LIT(b, "\":");
	put_u64(b, v);
	VMT_BUF_LIT(b, "}}");
}

static int pf_grow(struct pf *p, uint32_t n)
{
	size_t old = p->nlast;
	if (vmt_grow(&p->last, &p->nlast, n, sizeof(*p->last)))
		return -ENOMEM;
	/* All ones: "not written yet", so the first value is written. */
	memset(p->last + old, 0xff, (p->nlast - old) * sizeof(*p->last));
	return 0;
}

/* The kinds with an object of their own on the timeline. */
static int pf_timeline(uint32_t kind)
{
	return kind == VMT_EV_SYSCALL || kind == VMT_EV_FAULT || kind == VMT_EV_TOUCH ||
	       kind == VMT_EV_THREAD_START || kind == VMT_EV_THREAD_EXIT ||
	       kind == VMT_EV_PROCESS_START || kind == VMT_EV_EXEC ||
	       kind == VMT_EV_PROCESS_EXIT || kind == VMT_EV_MAPS || kind == VMT_EV_LOST;
}

/* In order: the tracks, and which counters of the process changed from
 * the values last written (those are written after the event). */
static int pf_prepare(void *ctx, struct fp_rec *r)
{
	struct pf *p = ctx;
	const struct vmt_event *ev = &r->ev;
	unsigned changed = 0;
	int err = van_tracks_apply(p->trk, ev, &changed);
	if (err)
		return err;
	r->flags = 0;
	r->aux[PF_REL] = van_tracks_rel_ns(p->trk, ev->ts_ns);
	if (changed & (VAN_TRK_SPACE | VAN_TRK_TOUCHED)) {
		struct van_track_vals v;
		if (pf_grow(p, ev->proc + 1))
			return -ENOMEM;
		van_tracks_get(p->trk, ev->proc, &v);
		struct van_track_vals *last = &p->last[ev->proc];
		r->flags |= (v.vmas != last->vmas ? PF_VMA : 0) |
			    (v.mapped_bytes != last->mapped_bytes ? PF_MAPPED : 0) |
			    (v.touched_pages != last->touched_pages ? PF_TOUCHED : 0);
		r->aux[PF_VMAS] = v.vmas;
		r->aux[PF_BYTES] = v.mapped_bytes;
		r->aux[PF_PAGES] = v.touched_pages;
		*last = v;
	}
	if (r->flags || pf_timeline(ev->kind)) {
		if (p->first)
			r->flags |= PF_FIRST;
		p->first = 0;
	}
	return 0;
}

static void pf_result(struct vmt_buf *b, const struct vmt_syscall *sc)
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	if (sc->flags & VMT_SC_NO_RESULT) {
		VMT_BUF_LIT(b, "\"?\"");
		return;
	}
	vmt_buf_putc(b, '"');
	if (sc_failed(sc)) {
		const char *e = vmt_errno_name((int)-sc->result);
		VMT_BUF_LIT(b, "-1 ");
		vmt_buf_puts(b, e ? e : "E?");
	} else if (oi && oi->ret == VMT_RET_ADDR) {
		vmt_buf_hex(b, (uint64_t)sc->result);
	} else {
		vmt_buf_i64(b, sc->result);
	}
	vmt_buf_putc(b, '"');
}

static void pf_event(const void *ctx, struct vmt_buf *b, struct vmt_buf *scratch,
		     const struct fp_rec *r)
{
	const struct vmt_event *ev = &r->ev;
	uint64_t rel = r->aux[PF_REL], index = r->index;
	uint32_t pid = ev->proc + 1, tid = ev->thread + 1;
	int first = !!(r->flags & PF_FIRST);
	(void)ctx;
	(void)scratch;
	switch (ev->kind) {
	case VMT_EV_SYSCALL: {
		const struct vmt_syscall *sc = &ev->u.sc;
		const char *name = vmt_op_name(sc->op);
		pf_sep(&first, b);
		VMT_BUF_LIT(b, "{\"ph\":\"X\",\"cat\":\"syscall\",\"name\":");
		vmt_buf_json_name(b, name ? name : "?");
		VMT_BUF_LIT(b, ",\"pid\":");
		put_u64(b, pid);
		VMT_BUF_LIT(b, ",\"tid\":");
		put_u64(b, tid);
		put_us(b, "ts", rel);
		put_us(b, "dur", (sc->flags & VMT_SC_NO_RESULT) || sc->exit_ns < ev->ts_ns
					  ? 0 : sc->exit_ns - ev->ts_ns);
		VMT_BUF_LIT(b, ",\"args\":{\"args\":");
		vmt_buf_putc(b, '"');
		vmt_render_args(b, sc); /* (no escapes: vmtutil.h) */
		vmt_buf_putc(b, '"');
		VMT_BUF_LIT(b, ",\"result\":");
		pf_result(b, sc);
		VMT_BUF_LIT(b, ",\"index\":");
		put_u64(b, index);
		if (sc->stack_id != VMT_NONE) {
			VMT_BUF_LIT(b, ",\"stack\":");
			put_u64(b, sc->stack_id);
		}
		VMT_BUF_LIT(b, "}}");
		break;
	}
	case VMT_EV_FAULT:
	case VMT_EV_TOUCH:
	case VMT_EV_THREAD_START:
	case VMT_EV_THREAD_EXIT:
	case VMT_EV_PROCESS_START:
	case VMT_EV_EXEC:
	case VMT_EV_PROCESS_EXIT:
	case VMT_EV_MAPS:
	case VMT_EV_LOST: {
		const char *kind = vmt_kind_name(ev->kind);
		pf_sep(&first, b);
		if (ev->kind == VMT_EV_FAULT || ev->kind == VMT_EV_TOUCH)
			VMT_BUF_LIT(b, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"page\",\"name\":");
		else
			VMT_BUF_LIT(b, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"life\",\"name\":");
		vmt_buf_json_name(b, kind ? kind : "?");
		VMT_BUF_LIT(b, ",\"pid\":");
		put_u64(b, pid);
		VMT_BUF_LIT(b, ",\"tid\":");
		put_u64(b, tid);
		put_us(b, "ts", rel);
		VMT_BUF_LIT(b, ",\"args\":{\"text\":");
		size_t from = b->len;
		vmt_buf_putc(b, '"');
		vmt_render_text(b, ev);
		if (vmt_kind_has_pointers(ev->kind))
			vmt_buf_json_close(b, from);
		else
			vmt_buf_putc(b, '"');
		if (ev->kind == VMT_EV_FAULT) {
			VMT_BUF_LIT(b, ",\"addr\":\"");
			vmt_buf_hex(b, ev->u.fault.addr);
			VMT_BUF_LIT(b, "\",\"ip\":\"");
			vmt_buf_hex(b, ev->u.fault.ip);
			vmt_buf_putc(b, '"');
		}
		VMT_BUF_LIT(b, ",\"index\":");
		put_u64(b, index);
		VMT_BUF_LIT(b, "}}");
		break;
	}
	default:
		break; /* tables (stacks, symbols, strings) are not timeline events */
	}
	if (r->flags & PF_VMA)
		pf_counter(&first, b, ev->proc, rel, "vma", "count", r->aux[PF_VMAS]);
	if (r->flags & PF_MAPPED)
		pf_counter(&first, b, ev->proc, rel, "mapped", "bytes", r->aux[PF_BYTES]);
	if (r->flags & PF_TOUCHED)
		pf_counter(&first, b, ev->proc, rel, "touched", "pages", r->aux[PF_PAGES]);
}

/* Names of the processes and threads, as metadata events at the end (the
 * names are only known once EXEC and THREAD_START events were read). */
static void pf_names(struct pf *p, struct vmt_buf *b)
{
	van_tracks *t = p->trk;
	for (uint32_t i = 0; i < van_tracks_nprocs(t); i++) {
		const char *name = van_tracks_proc_name(t, i);
		struct vmt_buf n = { 0 };
		vmt_buf_printf(&n, "p%u %s", i, *name ? name : "?");
		if (van_tracks_os_pid(t, i))
			vmt_buf_printf(&n, " (pid %d)", van_tracks_os_pid(t, i));
		pf_sep(&p->first, b);
		vmt_buf_printf(b, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":", i + 1);
		vmt_buf_json_str(b, n.data ? n.data : "");
		vmt_buf_puts(b, "}}");
		pf_sep(&p->first, b);
		vmt_buf_printf(b, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,"
			       "\"args\":{\"sort_index\":%u}}", i + 1, i);
		vmt_buf_free(&n);
	}
	for (uint32_t i = 0; i < van_tracks_nthreads(t); i++) {
		uint32_t proc = van_tracks_thread_proc(t, i);
		if (proc == VMT_NONE)
			continue;
		pf_sep(&p->first, b);
		vmt_buf_printf(b, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
			       "\"args\":{\"name\":\"t%u", proc + 1, i + 1, i);
		if (van_tracks_os_tid(t, i))
			vmt_buf_printf(b, " (tid %d)", van_tracks_os_tid(t, i));
		vmt_buf_puts(b, "\"}}");
	}
}

/* ---- driver -------------------------------------------------------------- */

static void csv_event(const void *ctx, struct vmt_buf *b, struct vmt_buf *scratch,
		      const struct fp_rec *r)
{
	(void)ctx;
	csv_row(b, scratch, r->index, &r->ev);
}

static void jsonl_event(const void *ctx, struct vmt_buf *b, struct vmt_buf *scratch,
			const struct fp_rec *r)
{
	(void)ctx;
	(void)scratch;
	/* In place: the object's '{' becomes the ',' after the index. */
	VMT_BUF_LIT(b, "{\"index\":");
	put_u64(b, r->index);
	size_t from = b->len;
	vmt_render_json(b, &r->ev);
	if (!b->oom)
		b->data[from] = ',';
	vmt_buf_putc(b, '\n');
}

static int export_events(struct vtc_input *in, enum fmt fmt, FILE *out)
{
	const struct vmt_header *h = vmt_reader_header(in->r);
	struct vmt_buf b = { 0 };
	struct pf pf = { .first = 1 };
	struct fp_ops ops = { NULL, csv_event, NULL };
	int rc, err = 0;

	if (fmt == FMT_PERFETTO) {
		pf.trk = van_tracks_new(h);
		if (!pf.trk) {
			fprintf(stderr, "vmtrace export: out of memory\n");
			return 2;
		}
		ops = (struct fp_ops){ pf_prepare, pf_event, &pf };
		fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":", out);
		vmt_buf_json_str(&b, in->path);
		vmt_buf_puts(&b, ",\"recorder\":");
		vmt_buf_json_str(&b, h->recorder ? h->recorder : "");
		vmt_buf_puts(&b, ",\"options\":");
		vmt_buf_json_str(&b, h->options ? h->options : "");
		vmt_buf_printf(&b, ",\"page_size\":%u},\"traceEvents\":[", h->page_size);
	} else if (fmt == FMT_CSV) {
		vmt_buf_puts(&b, "index,ts_ns,kind,proc,thread,op,arg0,arg1,arg2,arg3,arg4,arg5,"
				 "result,duration_ns,text\n");
	} else {
		ops.format = jsonl_event;
	}
	/* The events' text is made on as many threads as there are CPUs
	 * (fmtpipe.h): it is most of an export's time. */
	if ((err = vmt_buf_write(&b, out)) == 0) {
		vmt_buf_reset(&b);
		rc = fp_run(in->r, &ops, out, &err);
	} else {
		rc = 0;
	}
	if (fmt == FMT_PERFETTO) {
		pf_names(&pf, &b);
		vmt_buf_puts(&b, "\n]}\n");
	}
	if (vmt_buf_write(&b, out) == -ENOMEM && !err)
		err = -ENOMEM;
	int status = 0;
	if (rc < 0) {
		vtc_input_report(in);
		status = 2;
	} else if (err) {
		fprintf(stderr, "vmtrace export: '%s': %s\n", in->path, vmt_strerror(err));
		status = 2;
	}
	vmt_buf_free(&b);
	van_tracks_free(pf.trk);
	free(pf.last);
	return status;
}

static int run_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = NULL, *output = NULL;
	int c;
	/* No '+': options may follow the trace, as in the synopsis. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
		case 'h': fputs(export_usage, stdout); return 0;
		default:
			if (optopt == 'o' || optopt == 'f')
				return vtc_usage_error("export", "option '%s' needs a value",
						       argv[optind - 1]);
			return vtc_usage_error("export", "unknown option '%s'", argv[optind - 1]);
		}
	}
	enum fmt fmt;
	if (!format)
		return vtc_usage_error("export", "no --format given (perfetto, csv or jsonl)");
	if (!strcmp(format, "perfetto"))
		fmt = FMT_PERFETTO;
	else if (!strcmp(format, "csv"))
		fmt = FMT_CSV;
	else if (!strcmp(format, "jsonl"))
		fmt = FMT_JSONL;
	else
		return vtc_usage_error("export", "unknown format '%s' (perfetto, csv or jsonl)", format);
	if (argc - optind != 1)
		return vtc_usage_error("export", argc - optind ? "too many arguments" : "no trace given");

	struct vtc_input in;
	if (vtc_input_open(&in, argv[optind]))
		return 2;
	FILE *out = stdout;
	if (output && strcmp(output, "-")) {
		out = fopen(output, "w");
		if (!out) {
			fprintf(stderr, "vmtrace export: cannot create '%s': %s\n", output, strerror(errno));
			vtc_input_close(&in);
			return 2;
		}
	}
	int status = export_events(&in, fmt, out);
	vtc_input_close(&in);
	if (out == stdout)
		return status; /* (main checks stdout) */
	if (ferror(out) | fclose(out)) {
		fprintf(stderr, "vmtrace export: cannot write '%s': %s\n", output, strerror(errno));
		return 2;
	}
	return status;
}

const struct vtc_cmd vtc_cmd_export = {
	"export", run_export, "write a trace as Perfetto JSON, CSV or JSON lines", export_usage,
};
