/*
 * dump.c - `vmtrace dump`: one line per event, strace-style or JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"

static const char dump_usage[] =
	"usage: vmtrace dump [--json] [--stacks] [--maps] TRACE\n"
	"\n"
	"Print every event of TRACE, one line each, in recorded order.  A line\n"
	"starts with the time since the start of recording (seconds) and the\n"
	"process and thread ([p0 t1]), then the event: syscalls as strace shows\n"
	"them, other events as +++ lines.\n"
	"\n"
	"  --json      one JSON object per event instead (keys: kind, ts_ns,\n"
	"              thread, proc and the kind's fields; syscalls add op, args,\n"
	"              result, exit_ns, stack, flags, text)\n"
	"  --stacks    after each syscall that has a call stack, its frames\n"
	"              (function+offset (module)); reads the trace twice\n"
	"  --maps      print the mappings of each address-space snapshot\n"
	"  -h, --help  this help\n"
	"\n"
	"TRACE may be '-' for standard input (not with --stacks).\n"
	"Exit status: 0, or 2 when the trace is unreadable, truncated or corrupt\n"
	"(every event before the damage is printed first).\n";

/* First pass for --stacks: the symbol tables are written at the end of a
 * recording, so they must be read before the events can be shown. */
static int load_symbols(struct vtc_input *in, vmt_symtab *t)
{
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(in->r, &ev)) == 1) {
		if (ev.kind == VMT_EV_STACK || ev.kind == VMT_EV_SYMBOL ||
		    ev.kind == VMT_EV_STRING) {
			int err = vmt_symtab_add(t, &ev);
			if (err) {
				fprintf(stderr, "vmtrace: '%s': bad symbol table at event %" PRIu64 ": %s\n",
					in->path, vmt_reader_event_index(in->r) - 1, vmt_strerror(err));
				return -1;
			}
		}
	}
	/* A damaged trace still shows its stacks up to the damage; the
	 * error is reported by the second pass. */
	return vtc_input_rewind(in);
}

static void print_maps_entries(struct vmt_buf *b, const struct vmt_maps *m)
{
	for (uint32_t i = 0; i < m->count; i++) {
		vmt_buf_puts(b, "\n    ");
		vmt_render_map_entry(b, &m->entries[i]);
	}
}

static void add_frames(struct vmt_buf *b, const vmt_symtab *t, uint32_t id, int json)
{
	uint32_t depth = 0;
	const uint64_t *ips = vmt_symtab_stack(t, id, &depth);
	struct vmt_buf f = { 0 };
	if (json) {
		vmt_buf_puts(b, ",\"frames\":[");
		for (uint32_t i = 0; ips && i < depth; i++) {
			vmt_buf_reset(&f);
			vmt_symtab_render_ip(t, &f, ips[i]);
			if (i)
				vmt_buf_puts(b, ",");
			vmt_buf_json_str(b, f.len ? f.data : "");
		}
		vmt_buf_puts(b, "]");
	} else if (!ips) {
		vmt_buf_printf(b, "\n    (stack #%u not in the trace)", id);
	} else {
		for (uint32_t i = 0; i < depth; i++) {
			vmt_buf_reset(&f);
			vmt_symtab_render_ip(t, &f, ips[i]);
			vmt_buf_printf(b, "\n    #%-2u %s", i, f.len ? f.data : "?");
		}
	}
	vmt_buf_free(&f);
}

static int run_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "stacks", no_argument, NULL, 's' },
		{ "maps", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, stacks = 0, maps = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 's': stacks = 1; break;
		case 'm': maps = 1; break;
		case 'h': fputs(dump_usage, stdout); return 0;
		default:
			return vtc_usage_error("dump", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return vtc_usage_error("dump", argc - optind ? "too many arguments" : "no trace given");

	struct vtc_input in;
	if (vtc_input_open(&in, argv[optind]))
		return 2;
	vmt_symtab *syms = NULL;
	if (stacks) {
		if (strcmp(in.path, "-") == 0) {
			vtc_input_close(&in);
			return vtc_usage_error("dump", "--stacks needs a file, not standard input");
		}
		syms = vmt_symtab_new();
		if (!syms || load_symbols(&in, syms)) {
			vmt_symtab_free(syms);
			vtc_input_close(&in);
			return 2;
		}
	}
	const struct vmt_header *h = vmt_reader_header(in.r);
	if (!json) {
		printf("# vmtrace %u.%u, %s, page size %u, kernel %s, host %s\n", h->major, h->minor,
		       h->arch, h->page_size, h->kernel, h->hostname);
		struct vmt_buf cmd = { 0 };
		vmt_buf_shell_words(&cmd, h->argv, h->argc);
		printf("# recorded by %s%s%s:%s%s\n", *h->recorder ? h->recorder : "?",
		       *h->options ? ", " : "", h->options, cmd.len ? " " : "",
		       cmd.len ? cmd.data : "");
		vmt_buf_free(&cmd);
	}

	struct vmt_buf b = { 0 };
	struct vmt_event ev;
	int rc, oom = 0;
	while ((rc = vmt_reader_next(in.r, &ev)) == 1) {
		vmt_buf_reset(&b);
		if (json) {
			vmt_render_json(&b, &ev);
			if (syms && ev.kind == VMT_EV_SYSCALL && ev.u.sc.stack_id != VMT_NONE &&
			    b.len && b.data[b.len - 1] == '}') {
				b.len--;
				add_frames(&b, syms, ev.u.sc.stack_id, 1);
				vmt_buf_puts(&b, "}");
			}
		} else {
			uint64_t rel = ev.ts_ns >= h->start_mono_ns ? ev.ts_ns - h->start_mono_ns : 0;
			vmt_buf_printf(&b, "%4" PRIu64 ".%09" PRIu64 " [p%u t%u] ",
				       rel / 1000000000u, rel % 1000000000u, ev.proc, ev.thread);
			vmt_render_text(&b, &ev);
			if (maps && ev.kind == VMT_EV_MAPS)
				print_maps_entries(&b, &ev.u.maps);
			if (syms && ev.kind == VMT_EV_SYSCALL && ev.u.sc.stack_id != VMT_NONE)
				add_frames(&b, syms, ev.u.sc.stack_id, 0);
		}
		if (vtc_put_output("dump", &b, stdout) == -ENOMEM) {
			oom = 1;
			break;
		}
		putchar('\n');
		if (ferror(stdout))
			break;
	}
	vmt_buf_free(&b);
	int status = oom ? 2 : 0;
	if (rc < 0 && !oom) {
		fflush(stdout);
		vtc_input_report(&in);
		status = 2;
	}
	vmt_symtab_free(syms);
	vtc_input_close(&in);
	return status;
}

const struct vtc_cmd vtc_cmd_dump = {
	"dump", run_dump, "print every event, strace-style or as JSON lines", dump_usage,
};
