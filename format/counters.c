/*
 * counters.c - what format 1.2 added (man/vmtrace.5): the COUNTERS record
 * (the kernel's own counters of a thread or process: what a replay is
 * judged against) and the waits at the end of a SYSCALL record (its time
 * off CPU and its context switches inside the call).  Their validation
 * and rendering, for check.c, codec.c and render.c (their encoding and
 * decoding are codec.c's, with the other kinds').
 */
#include <inttypes.h>
#include "codec_int.h"


/* ---- COUNTERS ------------------------------------------------------------ */




int vmt_counters_check(const struct vmt_counters *c, const char **why)
{
	if (c->scope > VMT_CNT_EXEC)
		BAD("unknown counters scope");
	if (c->flags & ~(VMT_CNT_TICKS | VMT_CNT_SUM))
		BAD("unknown counters flags");
	if ((c->flags & VMT_CNT_SUM) && c->scope != VMT_CNT_PROCESS)
		BAD("counters of a thread or an exec marked as a sum of threads");
	/* What a thread or process did in CPU time cannot exceed 2^63 ns
	 * (292 years): a larger value is a broken recorder. */
	if ((c->utime_ns | c->stime_ns) >> 63)
		BAD("counters CPU time out of range");
	if (c->own_flt > c->minflt)
		BAD("counters with more of the recorder's own faults than minor faults");
	return 0;
}

const char *vmt_counters_scope_name(uint32_t scope)
{
	switch (scope) {
	case VMT_CNT_THREAD: return "thread";
	case VMT_CNT_PROCESS: return "process";
	case VMT_CNT_EXEC: return "exec";
	default: return NULL;
	}
}

void vmt_counters_text(struct vmt_buf *b, const struct vmt_counters *c)
{
	const char *scope = vmt_counters_scope_name(c->scope);
	if (scope)
		vmt_buf_printf(b, "+++ counters %s", scope);
	else
		vmt_buf_printf(b, "+++ counters scope=%" PRIu32, c->scope);
#define TXT(f) vmt_buf_printf(b, " " #f "=%" PRIu64, c->f);
	VMT_CNT_FIELDS(TXT)
#undef TXT
	if (c->own_flt)
		vmt_buf_printf(b, " own_flt=%" PRIu64, c->own_flt);
	if (c->flags & VMT_CNT_TICKS)
		vmt_buf_puts(b, " ticks");
	if (c->flags & VMT_CNT_SUM)
		vmt_buf_puts(b, " sum");
	vmt_buf_puts(b, " +++");
}

void vmt_counters_json(struct vmt_buf *b, const struct vmt_counters *c)
{
	const char *scope = vmt_counters_scope_name(c->scope);
	if (scope)
		vmt_buf_printf(b, ",\"scope\":\"%s\"", scope);
	else
		vmt_buf_printf(b, ",\"scope\":%" PRIu32, c->scope);
#define JS(f) vmt_buf_printf(b, ",\"" #f "\":%" PRIu64, c->f);
	VMT_CNT_FIELDS(JS)
#undef JS
	if (c->own_flt)
		vmt_buf_printf(b, ",\"own_flt\":%" PRIu64, c->own_flt);
	vmt_buf_printf(b, ",\"ticks\":%s,\"sum\":%s", (c->flags & VMT_CNT_TICKS) ? "true" : "false",
		       (c->flags & VMT_CNT_SUM) ? "true" : "false");
}

/* ---- the waits of a SYSCALL ------------------------------------------------ */



int vmt_sc_waits_check(const struct vmt_syscall *sc, uint64_t ts_ns, const char **why)
{
	if (!sc->waits) {
		if (sc->off_cpu_ns || sc->vcsw || sc->ivcsw)
			BAD("syscall waits without the waits flag");
		return 0;
	}
	if (sc->waits != 1)
		BAD("syscall waits flag is neither 0 nor 1");
	if (sc->flags & VMT_SC_NO_RESULT)
		BAD("syscall waits of a call that did not return");
	if (sc->off_cpu_ns > sc->exit_ns - ts_ns)
		BAD("syscall off-CPU time longer than the call");
	return 0;
}

void vmt_sc_waits_text(struct vmt_buf *b, const struct vmt_syscall *sc)
{
	/* Only a call that waited says so: most never leave the CPU. */
	if (!sc->waits || (!sc->vcsw && !sc->ivcsw && !sc->off_cpu_ns))
		return;
	VMT_BUF_LIT(b, " <off cpu ");
	vmt_buf_u64(b, sc->off_cpu_ns);
	VMT_BUF_LIT(b, " ns, ");
	vmt_buf_u64(b, sc->vcsw);
	VMT_BUF_LIT(b, " vcsw, ");
	vmt_buf_u64(b, sc->ivcsw);
	VMT_BUF_LIT(b, " ivcsw>");
}

void vmt_sc_waits_json(struct vmt_buf *b, const struct vmt_syscall *sc)
{
	if (!sc->waits)
		return;
	VMT_BUF_LIT(b, ",\"off_cpu_ns\":");
	vmt_buf_u64(b, sc->off_cpu_ns);
	VMT_BUF_LIT(b, ",\"vcsw\":");
	vmt_buf_u64(b, sc->vcsw);
	VMT_BUF_LIT(b, ",\"ivcsw\":");
	vmt_buf_u64(b, sc->ivcsw);
}
