/*
 * render.c - strace-style text and JSON renderings of events.
 *
 * Text is for people (vmtrace dump): one line per event, syscalls exactly
 * as strace would print them so that the two can be compared by eye.  JSON
 * is for scripts: every number exact (64-bit values printed as integers,
 * never through a double), raw values alongside the decoded ones.
 *
 * Values are decoded with the recording ABI's constants from names.c, not
 * with the build machine's headers: a trace is read on other machines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "linux_abi.h"
#include "codec_int.h"

/* ---- Small pieces ------------------------------------------------------- */

/* Append `name` to a '|'-separated list; *first tracks the separator. */
static void emit(struct vmt_buf *b, int *first, const char *name)
{
	if (!*first)
		vmt_buf_putc(b, '|');
	vmt_buf_puts(b, name);
	*first = 0;
}

static void emit_hex(struct vmt_buf *b, int *first, uint64_t v)
{
	if (!*first)
		vmt_buf_putc(b, '|');
	vmt_buf_hex(b, v);
	*first = 0;
}

/* Addresses: NULL for 0 as strace does, else hex. */
static void put_addr(struct vmt_buf *b, uint64_t v)
{
	if (v == 0)
		VMT_BUF_LIT(b, "NULL");
	else
		vmt_buf_hex(b, v);
}

/* "%#x" already prints 0 as "0"; this names the intent. */
static void put_hex(struct vmt_buf *b, uint64_t v)
{
	vmt_buf_hex(b, v);
}

static const char *table_lookup(const struct vmt_flag_name *t, uint64_t v)
{
	for (; t->name; t++)
		if (t->value == v)
			return t->name;
	return NULL;
}

/* Bits of `rem` named by table t, in table order; returns what is left. */
static uint64_t emit_bits(struct vmt_buf *b, int *first,
			  const struct vmt_flag_name *t, uint64_t rem,
			  uint64_t skip)
{
	for (; t->name; t++) {
		if (t->value == 0 || (t->value & skip))
			continue;
		if ((rem & t->value) == t->value) {
			emit(b, first, t->name);
			rem &= ~t->value;
		}
	}
	return rem;
}

/*
 * mmap flags: the MAP_TYPE value first, then the bits, then the hugetlb
 * page size.  The size field (bits 26..31) overlaps MAP_UNINITIALIZED; the
 * kernel reads it as a size only with MAP_HUGETLB, and so do we.
 */
static void render_map_flags(struct vmt_buf *b, uint64_t flags,
			     const char *zero)
{
	const char *type = table_lookup(vmt_map_type_names,
					flags & LX_MAP_TYPE);
	uint64_t rem = flags;
	int first = 1;

	if (flags == 0) {
		vmt_buf_puts(b, zero ? zero : "0");
		return;
	}
	if (type) {
		emit(b, &first, type);
		rem &= ~(uint64_t)LX_MAP_TYPE;
	}
	if (flags & LX_MAP_HUGETLB) {
		unsigned shift =
			(unsigned)(rem >> LX_MAP_HUGE_SHIFT) & LX_MAP_HUGE_MASK;

		rem = emit_bits(b, &first, vmt_map_flag_names, rem,
				LX_MAP_UNINITIALIZED);
		if (shift) {
			unsigned unit = shift >= 30 ? 30 :
					shift >= 20 ? 20 : 10;

			if (!first)
				vmt_buf_puts(b, "|");
			first = 0;
			/* Page sizes a machine could have; else the field. */
			if (shift >= 10 && shift <= 40)
				vmt_buf_printf(b, "MAP_HUGE_%u%s",
					       1u << (shift - unit),
					       unit == 30 ? "GB" :
					       unit == 20 ? "MB" : "KB");
			else
				vmt_buf_printf(b, "%u<<MAP_HUGE_SHIFT", shift);
			rem &= ~((uint64_t)LX_MAP_HUGE_MASK << LX_MAP_HUGE_SHIFT);
		}
	} else {
		rem = emit_bits(b, &first, vmt_map_flag_names, rem, 0);
	}
	if (rem)
		emit_hex(b, &first, rem);
}

void vmt_render_flags(struct vmt_buf *b, const struct vmt_flag_name *t,
		      uint64_t flags, const char *zero)
{
	int first = 1;
	uint64_t rem;

	/* The MAP_* table only makes sense together with its type field. */
	if (t == vmt_map_flag_names) {
		render_map_flags(b, flags, zero);
		return;
	}
	/* Value tables: a name for the whole value, or the number. */
	if (t == vmt_madv_names || t == vmt_map_type_names) {
		const char *name = table_lookup(t, flags);

		if (name)
			vmt_buf_puts(b, name);
		else if (t == vmt_madv_names)
			vmt_buf_u64(b, flags);
		else
			put_hex(b, flags);
		return;
	}
	if (flags == 0) {
		vmt_buf_puts(b, zero ? zero : "0");
		return;
	}
	rem = emit_bits(b, &first, t, flags, 0);
	if (rem)
		emit_hex(b, &first, rem);
}

/* ---- Syscalls ----------------------------------------------------------- */

static void render_arg(struct vmt_buf *b, unsigned type, uint64_t v)
{
	switch (type) {
	case VMT_ARG_ADDR:
		put_addr(b, v);
		break;
	case VMT_ARG_LEN:
		vmt_buf_u64(b, v);
		break;
	case VMT_ARG_PROT:
		vmt_render_flags(b, vmt_prot_names, v, "PROT_NONE");
		break;
	case VMT_ARG_MAP_FLAGS:
		render_map_flags(b, v, NULL);
		break;
	case VMT_ARG_FD:
	case VMT_ARG_INT:
		/* int parameters: the kernel uses the low 32 bits. */
		vmt_buf_i64(b, (int32_t)(uint32_t)v);
		break;
	case VMT_ARG_MADV: {
		int32_t adv = (int32_t)(uint32_t)v;
		const char *name = adv >= 0 ?
			table_lookup(vmt_madv_names, (uint64_t)adv) : NULL;

		if (name)
			vmt_buf_puts(b, name);
		else
			vmt_buf_i64(b, adv);
		break;
	}
	case VMT_ARG_MLOCK2:
		vmt_render_flags(b, vmt_mlock2_names, v, NULL);
		break;
	case VMT_ARG_MCL:
		vmt_render_flags(b, vmt_mcl_names, v, NULL);
		break;
	case VMT_ARG_MREMAP:
		vmt_render_flags(b, vmt_mremap_names, v, NULL);
		break;
	case VMT_ARG_MS:
		vmt_render_flags(b, vmt_ms_names, v, NULL);
		break;
	case VMT_ARG_SHMFLG:
		vmt_render_flags(b, vmt_shm_names, v, NULL);
		break;
	case VMT_ARG_OFF:
	case VMT_ARG_HEX:
	default:
		put_hex(b, v);
		break;
	}
}

/*
 * A known op shows the arguments of its prototype (the reader checks that
 * nargs matches); an op from a newer version shows what the event holds,
 * in hex, since nothing is known about it.
 */
static uint32_t shown_args(const struct vmt_syscall *sc,
			   const struct vmt_op_info *oi)
{
	if (oi)
		return oi->nargs;
	return sc->nargs < VMT_MAX_ARGS ? sc->nargs : VMT_MAX_ARGS;
}

/* A flag or name argument: from the buffer's memo where it has it
 * (numbers and addresses are cheaper made than looked up). */
static void render_arg_memo(struct vmt_buf *b, unsigned type, uint64_t v)
{
	if (!b->memo || type == VMT_ARG_ADDR || type == VMT_ARG_LEN || type == VMT_ARG_FD ||
	    type == VMT_ARG_INT || type == VMT_ARG_OFF || type == VMT_ARG_HEX) {
		render_arg(b, type, v);
		return;
	}
	struct vmt_memo_arg *m = &b->memo->arg[((v ^ (uint64_t)type << 40) * 0x9e3779b97f4a7c15ull) >> 59];
	if (m->type == type && m->v == v) {
		vmt_buf_add(b, m->text, m->n);
		return;
	}
	size_t at = b->len;
	render_arg(b, type, v);
	if (!b->oom && b->len - at <= sizeof(m->text)) {
		m->type = type;
		m->v = v;
		m->n = (uint32_t)(b->len - at);
		memcpy(m->text, b->data + at, m->n);
	}
}

void vmt_render_args(struct vmt_buf *b, const struct vmt_syscall *sc)
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	uint32_t n = shown_args(sc, oi);

	for (uint32_t i = 0; i < n; i++) {
		if (i)
			VMT_BUF_LIT(b, ", ");
		render_arg_memo(b, oi ? oi->arg[i] : VMT_ARG_HEX, sc->args[i]);
	}
}

static void render_result(struct vmt_buf *b, const struct vmt_syscall *sc)
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op);

	if (sc->flags & VMT_SC_NO_RESULT) {
		VMT_BUF_LIT(b, " = ?");
	} else if (vmt_is_errno(sc->result)) {
		int err = (int)-sc->result;
		const char *name = vmt_errno_name(err);

		if (name) {
			VMT_BUF_LIT(b, " = -1 ");
			vmt_buf_puts(b, name);
			VMT_BUF_LIT(b, " (");
			vmt_buf_puts(b, vmt_errno_text(err));
			vmt_buf_putc(b, ')');
		} else
			vmt_buf_printf(b, " = -1 ERRNO_%d (Unknown error %d)",
				       err, err);
	} else if (oi && oi->ret == VMT_RET_ADDR) {
		VMT_BUF_LIT(b, " = ");
		put_hex(b, (uint64_t)sc->result);
	} else {
		VMT_BUF_LIT(b, " = ");
		vmt_buf_i64(b, sc->result);
	}
	/* A call a rewrite rule made or changed: not what the program did. */
	if (sc->flags & VMT_SC_REWRITTEN)
		VMT_BUF_LIT(b, " (rewritten)");
}

static void render_syscall(struct vmt_buf *b, const struct vmt_syscall *sc)
{
	const char *name = vmt_op_name(sc->op);

	if (name)
		vmt_buf_puts(b, name);
	else
		vmt_buf_printf(b, "op%" PRIu32, sc->op);
	vmt_buf_putc(b, '(');
	vmt_render_args(b, sc);
	vmt_buf_putc(b, ')');
	render_result(b, sc);
}

/* ---- Other kinds: shared decoders --------------------------------------- */

/* dev_t as glibc's makedev() lays it out (so does the kernel's
 * new_encode_dev() for stat and /proc). */
static uint32_t dev_major(uint64_t d)
{
	return (uint32_t)(((d >> 32) & 0xfffff000u) | ((d >> 8) & 0xfffu));
}

static uint32_t dev_minor(uint64_t d)
{
	return (uint32_t)(((d >> 12) & 0xffffff00u) | (d & 0xffu));
}

/* O_* of x86_64/asm-generic (aarch64 differs in four bits, see below).
 * Multi-bit values come before the bits they contain. */
static const struct vmt_flag_name open_flag_names[] = {
	{04010000, "O_SYNC"},	  /* __O_SYNC | O_DSYNC */
	{020200000, "O_TMPFILE"}, /* __O_TMPFILE | O_DIRECTORY */
	{0100, "O_CREAT"},
	{0200, "O_EXCL"},
	{0400, "O_NOCTTY"},
	{01000, "O_TRUNC"},
	{02000, "O_APPEND"},
	{04000, "O_NONBLOCK"},
	{010000, "O_DSYNC"},
	{020000, "O_ASYNC"},
	/* aarch64 numbers these four differently; its traces show them
	 * under these names (the header's arch says which ABI applies). */
	{040000, "O_DIRECT"},
	{0100000, "O_LARGEFILE"},
	{0200000, "O_DIRECTORY"},
	{0400000, "O_NOFOLLOW"},
	{01000000, "O_NOATIME"},
	{02000000, "O_CLOEXEC"},
	{010000000, "O_PATH"},
	{0, NULL},
};

static void render_open_flags(struct vmt_buf *b, uint32_t flags)
{
	static const char *const acc[] = {"O_RDONLY", "O_WRONLY", "O_RDWR"};
	int first = 1;
	uint64_t rem;

	if ((flags & 3) < 3)
		emit(b, &first, acc[flags & 3]);
	else
		emit(b, &first, "O_ACCMODE");
	rem = emit_bits(b, &first, open_flag_names, flags & ~3u, 0);
	if (rem)
		emit_hex(b, &first, rem);
}

/* Signal names of x86_64/asm-generic (identical on aarch64). */
static const char *const signal_names[32] = {
	NULL, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT",
	"SIGBUS", "SIGFPE", "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2",
	"SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT",
	"SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU",
	"SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR",
	"SIGSYS",
};

static void put_signal(struct vmt_buf *b, int sig)
{
	if (sig > 0 && sig < 32)
		vmt_buf_puts(b, signal_names[sig]);
	else
		vmt_buf_printf(b, "SIG%d", sig);
}

/* Decode a raw wait status the way WIFEXITED/WIFSIGNALED do. */
static void render_wait_status(struct vmt_buf *b, int32_t st)
{
	int low = st & 0x7f;

	if (low == 0) {
		vmt_buf_printf(b, "exited %d", (st >> 8) & 0xff);
	} else if (low != 0x7f) {
		vmt_buf_puts(b, "killed by ");
		put_signal(b, low);
		if (st & 0x80)
			vmt_buf_puts(b, ", core dumped");
	} else {
		vmt_buf_puts(b, "stopped by ");
		put_signal(b, (st >> 8) & 0xff);
	}
}

static const char *const proc_kind_names[] = {
	[VMT_PROC_ROOT] = "root",   [VMT_PROC_FORK] = "fork",
	[VMT_PROC_VFORK] = "vfork", [VMT_PROC_CLONE] = "clone",
	[VMT_PROC_ATTACH] = "attach",
};

static const char *proc_kind_name(uint32_t how)
{
	return how < sizeof(proc_kind_names) / sizeof(proc_kind_names[0]) ?
		proc_kind_names[how] : NULL;
}

/* Touch reasons: words for text, keys for JSON. */
static const char *touch_reason(uint32_t r, int json)
{
	switch (r) {
	case VMT_TOUCH_BEFORE_OP: return json ? "before_op" : "before op";
	case VMT_TOUCH_EXIT: return "exit";
	case VMT_TOUCH_SNAPSHOT: return "snapshot";
	default: return NULL;
	}
}

static const char *lost_what_name(uint32_t w)
{
	switch (w) {
	case VMT_LOST_FAULTS: return "faults";
	case VMT_LOST_EVENTS: return "events";
	default: return NULL;
	}
}

/* "rw-p": permissions as /proc/PID/maps shows them. */
static void perms_str(uint32_t perms, char out[5])
{
	out[0] = (perms & VMT_PROT_R) ? 'r' : '-';
	out[1] = (perms & VMT_PROT_W) ? 'w' : '-';
	out[2] = (perms & VMT_PROT_X) ? 'x' : '-';
	out[3] = (perms & VMT_MAPS_SHARED) ? 's' : 'p';
	out[4] = '\0';
}

void vmt_render_map_entry(struct vmt_buf *b, const struct vmt_map_entry *e)
{
	char perms[5];

	perms_str(e->perms, perms);
	vmt_buf_printf(b, "%012" PRIx64 "-%012" PRIx64 " %s %08" PRIx64 " %" PRIu32 ":%" PRIu32
		       " %" PRIu64 " %s", e->start, e->end, perms, e->offset,
		       dev_major(e->dev), dev_minor(e->dev), e->ino, e->path);
}

static void put_parent(struct vmt_buf *b, uint32_t id)
{
	if (id == VMT_NONE)
		vmt_buf_puts(b, "none");
	else
		vmt_buf_u64(b, id);
}

/* ---- Text --------------------------------------------------------------- */

static void text_touch(struct vmt_buf *b, const struct vmt_touch *t)
{
	/* Counts by state; index 4 collects states from newer versions. */
	static const char *const state_word[5] = {
		[VMT_PAGE_ABSENT] = "absent", [VMT_PAGE_PRESENT] = "present",
		[VMT_PAGE_READ] = "read", [VMT_PAGE_WRITTEN] = "written",
		[4] = "other",
	};
	/* Most informative first: what was written, read, merely present. */
	static const unsigned order[5] = {
		VMT_PAGE_WRITTEN, VMT_PAGE_READ, VMT_PAGE_PRESENT,
		VMT_PAGE_ABSENT, 4,
	};
	uint64_t count[5] = {0};
	const char *reason = touch_reason(t->reason, 0);
	int any = 0;

	for (uint32_t i = 0; t->runs && i < t->nruns; i++)
		count[t->runs[i].state < 4 ? t->runs[i].state : 4] +=
			t->runs[i].pages;
	VMT_BUF_LIT(b, "touch(");
	vmt_buf_hex(b, t->start);
	VMT_BUF_LIT(b, ", ");
	vmt_buf_u64(b, t->npages);
	if (t->npages == 1)
		VMT_BUF_LIT(b, " page");
	else
		VMT_BUF_LIT(b, " pages");
	for (unsigned i = 0; i < 5; i++) {
		if (!count[order[i]])
			continue;
		vmt_buf_add(b, any ? ", " : ": ", 2);
		vmt_buf_u64(b, count[order[i]]);
		vmt_buf_putc(b, ' ');
		vmt_buf_puts(b, state_word[order[i]]);
		any = 1;
	}
	if (reason) {
		VMT_BUF_LIT(b, ", ");
		vmt_buf_puts(b, reason);
		vmt_buf_putc(b, ')');
	} else {
		vmt_buf_printf(b, ", reason %" PRIu32 ")", t->reason);
	}
}

/* A FAULT's flags: their names in text, keys of JSON. */
static const struct vmt_flag_name fault_flag_names[] = {
	{VMT_FLT_MAJOR, "major"},
	{VMT_FLT_GUP, "gup"},
	{VMT_FLT_CALL, "call"},
	{0, NULL},
};

static void text_fault(struct vmt_buf *b, const struct vmt_fault *f)
{
	static const struct vmt_flag_name access_names[] = {
		{VMT_FAULT_READ, "read"},
		{VMT_FAULT_WRITE, "write"},
		{VMT_FAULT_EXEC, "exec"},
		{0, NULL},
	};

	VMT_BUF_LIT(b, "fault(");
	vmt_buf_hex(b, f->addr);
	VMT_BUF_LIT(b, ", ");
	vmt_render_flags(b, access_names, f->access, "unknown");
	VMT_BUF_LIT(b, ", ip=");
	vmt_buf_hex(b, f->ip);
	if (f->flags) {
		VMT_BUF_LIT(b, ", ");
		vmt_render_flags(b, fault_flag_names, f->flags, "");
	}
	vmt_buf_putc(b, ')');
}

static void text_symbol(struct vmt_buf *b, const struct vmt_symbol *s)
{
	vmt_buf_printf(b, "symbol %#" PRIx64 " = ", s->ip);
	if (s->function != VMT_NONE)
		vmt_buf_printf(b, "string#%" PRIu32 "+%#" PRIx64, s->function,
			       s->offset);
	else if (s->module != VMT_NONE)
		vmt_buf_printf(b, "+%#" PRIx64, s->offset);
	else
		vmt_buf_puts(b, "?");
	if (s->module != VMT_NONE)
		vmt_buf_printf(b, " in string#%" PRIu32, s->module);
}

void vmt_render_text(struct vmt_buf *b, const struct vmt_event *ev)
{
	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		render_syscall(b, &ev->u.sc);
		vmt_sc_waits_text(b, &ev->u.sc);
		break;
	case VMT_EV_MAP_FILE: {
		const struct vmt_map_file *f = &ev->u.file;

		vmt_buf_puts(b, "map_file(");
		vmt_buf_quote(b, f->path);
		vmt_buf_printf(b,
			       ", dev=%" PRIu32 ":%" PRIu32 ", ino=%" PRIu64
			       ", size=%" PRIu64 ", flags=",
			       dev_major(f->dev), dev_minor(f->dev), f->ino,
			       f->size);
		render_open_flags(b, f->open_flags);
		vmt_buf_puts(b, ")");
		break;
	}
	case VMT_EV_THREAD_START:
		vmt_buf_printf(b, "+++ thread_start tid=%" PRId32 " parent=",
			       ev->u.thread_start.os_tid);
		put_parent(b, ev->u.thread_start.parent_thread);
		vmt_buf_puts(b, " +++");
		break;
	case VMT_EV_THREAD_EXIT:
		vmt_buf_printf(b, "+++ thread_exit status=%" PRId32 " +++",
			       ev->u.thread_exit.status);
		break;
	case VMT_EV_PROCESS_START: {
		const struct vmt_process_start *p = &ev->u.process_start;
		const char *how = proc_kind_name(p->how);

		vmt_buf_printf(b, "+++ process_start pid=%" PRId32 " parent=",
			       p->os_pid);
		put_parent(b, p->parent_proc);
		if (how)
			vmt_buf_printf(b, " %s +++", how);
		else
			vmt_buf_printf(b, " how=%" PRIu32 " +++", p->how);
		break;
	}
	case VMT_EV_EXEC:
		vmt_buf_puts(b, "+++ exec ");
		vmt_buf_quote(b, ev->u.exec.path);
		vmt_buf_puts(b, " +++");
		break;
	case VMT_EV_PROCESS_EXIT:
		vmt_buf_printf(b, "+++ process_exit status=%" PRId32 " (",
			       ev->u.process_exit.status);
		render_wait_status(b, ev->u.process_exit.status);
		vmt_buf_puts(b, ") +++");
		break;
	case VMT_EV_MAPS:
		vmt_buf_printf(b, "maps(%" PRIu32 " mappings)",
			       ev->u.maps.count);
		break;
	case VMT_EV_TOUCH:
		text_touch(b, &ev->u.touch);
		break;
	case VMT_EV_FAULT:
		text_fault(b, &ev->u.fault);
		break;
	case VMT_EV_STACK: {
		const struct vmt_stack *s = &ev->u.stack;

		vmt_buf_printf(b, "stack #%" PRIu32 " [", s->id);
		for (uint32_t i = 0; s->ips && i < s->depth; i++) {
			if (i)
				vmt_buf_putc(b, ' ');
			vmt_buf_hex(b, s->ips[i]);
		}
		vmt_buf_puts(b, "]");
		break;
	}
	case VMT_EV_SYMBOL:
		text_symbol(b, &ev->u.symbol);
		break;
	case VMT_EV_STRING:
		vmt_buf_printf(b, "string #%" PRIu32 " ", ev->u.string.id);
		vmt_buf_quote(b, ev->u.string.str);
		break;
	case VMT_EV_LOST: {
		const char *what = lost_what_name(ev->u.lost.what);

		if (what)
			vmt_buf_printf(b, "lost(%" PRIu64 " %s)",
				       ev->u.lost.count, what);
		else
			vmt_buf_printf(b, "lost(%" PRIu64 " what=%" PRIu32 ")",
				       ev->u.lost.count, ev->u.lost.what);
		break;
	}
	case VMT_EV_COUNTERS:
		vmt_counters_text(b, &ev->u.counters);
		break;
	default:
		vmt_buf_printf(b, "+++ unknown kind %" PRIu32 " +++", ev->kind);
		break;
	}
}

/* ---- JSON --------------------------------------------------------------- */

/* ,"key": -- inlined where the key is a literal, its length is known and
 * the appends are copies of constant size (a JSON line has a dozen keys;
 * strlen and memcpy calls were a tenth of an export). */
#define JSON_INLINE static inline __attribute__((always_inline))
JSON_INLINE void jkey(struct vmt_buf *b, const char *key)
{
	VMT_BUF_LIT(b, ",\"");
	vmt_buf_add(b, key, strlen(key));
	VMT_BUF_LIT(b, "\":");
}

JSON_INLINE void ju64(struct vmt_buf *b, const char *key, uint64_t v)
{
	jkey(b, key);
	vmt_buf_u64(b, v);
}

JSON_INLINE void ji64(struct vmt_buf *b, const char *key, int64_t v)
{
	jkey(b, key);
	vmt_buf_i64(b, v);
}

/* An id or index, null for VMT_NONE. */
JSON_INLINE void jid(struct vmt_buf *b, const char *key, uint32_t v)
{
	jkey(b, key);
	if (v == VMT_NONE)
		VMT_BUF_LIT(b, "null");
	else
		vmt_buf_u64(b, v);
}

JSON_INLINE void jstr(struct vmt_buf *b, const char *key, const char *s)
{
	jkey(b, key);
	vmt_buf_json_str(b, s);
}

/* A name when known, else the raw number (from a newer version). */
JSON_INLINE void jname(struct vmt_buf *b, const char *key, const char *name,
		  uint64_t raw)
{
	jkey(b, key);
	if (name)
		vmt_buf_json_name(b, name);
	else
		vmt_buf_u64(b, raw);
}

static void json_syscall(struct vmt_buf *b, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	uint32_t n = sc->nargs < VMT_MAX_ARGS ? sc->nargs : VMT_MAX_ARGS;
	int done = !(sc->flags & VMT_SC_NO_RESULT);

	jname(b, "op", vmt_op_name(sc->op), sc->op);
	/* The raw registers the event holds, as numbers. */
	jkey(b, "args");
	vmt_buf_putc(b, '[');
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			vmt_buf_putc(b, ',');
		vmt_buf_u64(b, sc->args[i]);
	}
	vmt_buf_putc(b, ']');
	/* Without an exit stop there is no result: say so rather than
	 * print a number a script would take for one. */
	if (done) {
		ji64(b, "result", sc->result);
		ju64(b, "exit_ns", sc->exit_ns);
	} else {
		VMT_BUF_LIT(b, ",\"result\":null,\"exit_ns\":null");
	}
	jid(b, "stack", sc->stack_id);
	ju64(b, "flags", sc->flags);
	if (done && vmt_is_errno(sc->result))
		jname(b, "errno", vmt_errno_name((int)-sc->result),
		      (uint64_t)-sc->result);
	vmt_sc_waits_json(b, sc);
	/* Rendered in place (no buffer per event): numbers and names, which
	 * need no escapes (vmtutil.h). */
	jkey(b, "text");
	vmt_buf_putc(b, '"');
	render_syscall(b, sc);
	vmt_buf_putc(b, '"');
}

static void json_maps(struct vmt_buf *b, const struct vmt_maps *m)
{
	ju64(b, "count", m->count);
	jkey(b, "entries");
	vmt_buf_puts(b, "[");
	for (uint32_t i = 0; m->entries && i < m->count; i++) {
		const struct vmt_map_entry *e = &m->entries[i];
		char perms[5];

		perms_str(e->perms, perms);
		vmt_buf_printf(b,
			       "%s{\"start\":%" PRIu64 ",\"end\":%" PRIu64
			       ",\"perms\":\"%s\",\"offset\":%" PRIu64
			       ",\"dev\":%" PRIu64 ",\"ino\":%" PRIu64,
			       i ? "," : "", e->start, e->end, perms,
			       e->offset, e->dev, e->ino);
		jstr(b, "path", e->path ? e->path : "");
		vmt_buf_puts(b, "}");
	}
	vmt_buf_puts(b, "]");
}

static void json_touch(struct vmt_buf *b, const struct vmt_touch *t)
{
	ju64(b, "start", t->start);
	ju64(b, "npages", t->npages);
	jname(b, "reason", touch_reason(t->reason, 1), t->reason);
	jkey(b, "runs");
	vmt_buf_puts(b, "[");
	for (uint32_t i = 0; t->runs && i < t->nruns; i++) {
		vmt_buf_add(b, &",["[!i], 2 - !i);
		vmt_buf_u64(b, t->runs[i].pages);
		vmt_buf_putc(b, ',');
		vmt_buf_u64(b, t->runs[i].state);
		vmt_buf_putc(b, ']');
	}
	vmt_buf_puts(b, "]");
}

static void json_map_file(struct vmt_buf *b, const struct vmt_map_file *f)
{
	jstr(b, "path", f->path ? f->path : "");
	ju64(b, "dev", f->dev);
	ju64(b, "dev_major", dev_major(f->dev));
	ju64(b, "dev_minor", dev_minor(f->dev));
	ju64(b, "ino", f->ino);
	ju64(b, "size", f->size);
	ju64(b, "open_flags", f->open_flags);
	ju64(b, "mode", f->mode);
}

/* The raw wait status, and decoded for scripts: exit code or signal, the
 * other null. */
static void json_process_exit(struct vmt_buf *b, int32_t st)
{
	int low = st & 0x7f;

	ji64(b, "status", st);
	if (low == 0)
		ji64(b, "exit_code", (st >> 8) & 0xff);
	else
		vmt_buf_puts(b, ",\"exit_code\":null");
	if (low != 0 && low != 0x7f)
		ji64(b, "signal", low);
	else
		vmt_buf_puts(b, ",\"signal\":null");
}

static void json_stack(struct vmt_buf *b, const struct vmt_stack *s)
{
	ju64(b, "id", s->id);
	ju64(b, "depth", s->depth);
	jkey(b, "ips");
	vmt_buf_puts(b, "[");
	for (uint32_t i = 0; s->ips && i < s->depth; i++) {
		if (i)
			vmt_buf_putc(b, ',');
		vmt_buf_u64(b, s->ips[i]);
	}
	vmt_buf_puts(b, "]");
}

void vmt_render_json(struct vmt_buf *b, const struct vmt_event *ev)
{
	const char *kind = vmt_kind_name(ev->kind);

	VMT_BUF_LIT(b, "{\"kind\":");
	if (kind)
		vmt_buf_json_name(b, kind);
	else
		vmt_buf_printf(b, "%" PRIu32, ev->kind);
	ju64(b, "ts_ns", ev->ts_ns);
	jid(b, "thread", ev->thread);
	jid(b, "proc", ev->proc);

	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		json_syscall(b, ev);
		break;
	case VMT_EV_MAP_FILE:
		json_map_file(b, &ev->u.file);
		break;
	case VMT_EV_THREAD_START:
		jid(b, "parent_thread", ev->u.thread_start.parent_thread);
		ji64(b, "os_tid", ev->u.thread_start.os_tid);
		break;
	case VMT_EV_THREAD_EXIT:
		ji64(b, "status", ev->u.thread_exit.status);
		break;
	case VMT_EV_PROCESS_START:
		jid(b, "parent_proc", ev->u.process_start.parent_proc);
		ji64(b, "os_pid", ev->u.process_start.os_pid);
		jname(b, "how", proc_kind_name(ev->u.process_start.how),
		      ev->u.process_start.how);
		break;
	case VMT_EV_EXEC:
		jstr(b, "path", ev->u.exec.path ? ev->u.exec.path : "");
		break;
	case VMT_EV_PROCESS_EXIT:
		json_process_exit(b, ev->u.process_exit.status);
		break;
	case VMT_EV_MAPS:
		json_maps(b, &ev->u.maps);
		break;
	case VMT_EV_TOUCH:
		json_touch(b, &ev->u.touch);
		break;
	case VMT_EV_FAULT:
		ju64(b, "addr", ev->u.fault.addr);
		ju64(b, "ip", ev->u.fault.ip);
		ju64(b, "access", ev->u.fault.access);
		/* (each flag a key, there when set) */
		for (const struct vmt_flag_name *n = fault_flag_names; n->name; n++)
			if (ev->u.fault.flags & n->value) {
				jkey(b, n->name);
				VMT_BUF_LIT(b, "true");
			}
		break;
	case VMT_EV_STACK:
		json_stack(b, &ev->u.stack);
		break;
	case VMT_EV_SYMBOL:
		ju64(b, "ip", ev->u.symbol.ip);
		jid(b, "module", ev->u.symbol.module);
		jid(b, "function", ev->u.symbol.function);
		ju64(b, "offset", ev->u.symbol.offset);
		break;
	case VMT_EV_STRING:
		ju64(b, "id", ev->u.string.id);
		jstr(b, "str", ev->u.string.str ? ev->u.string.str : "");
		break;
	case VMT_EV_LOST:
		ju64(b, "count", ev->u.lost.count);
		jname(b, "what", lost_what_name(ev->u.lost.what),
		      ev->u.lost.what);
		break;
	case VMT_EV_COUNTERS:
		vmt_counters_json(b, &ev->u.counters);
		break;
	default:
		break;
	}
	vmt_buf_putc(b, '}');
}
