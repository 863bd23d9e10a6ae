/*
 * lintfind.c - the findings of `vmtrace lint`: which counters of the
 * detectors (lintcheck.c) cross the thresholds of lint_int.h, and the
 * evidence, cost and fix of each.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lint_int.h"

static const char *const frag_reason_key[FR__COUNT] = {
	"unmerged_prot_differs", "unmerged_file_vs_anon", "unmerged_other_file",
	"unmerged_offset_not_contiguous", "unmerged_flags_differ", "unmerged_anon_vma",
	"unmerged_other",
};
static const char *const frag_reason_what[FR__COUNT] = {
	"unmerged: protection differs from the neighbour's",
	"unmerged: file next to anonymous memory",
	"unmerged: a different file than the neighbour's",
	"unmerged: file offset not contiguous with the neighbour's",
	"unmerged: flags differ", "unmerged: anonymous memory of another origin (anon_vma)",
	"unmerged: reason unknown",
};

/* ---- Findings ------------------------------------------------------------ */

/* Keep the finding f (built on the caller's stack). */
static int add_finding(vmt_lint *l, const struct vmt_lint_finding *f)
{
	struct vmt_lint_finding *n = realloc(l->found, (l->nfound + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->found = n;
	n[l->nfound++] = *f;
	return 0;
}

static void num(struct vmt_lint_finding *f, const char *key, uint64_t v, const char *unit,
		const char *what)
{
	if (f->nnums < VMT_LINT_MAX_NUMS)
		f->nums[f->nnums++] = (struct vmt_lint_num){ key, v, unit, what };
}

/* Add a part, keeping the VMT_LINT_MAX_PARTS largest. */
static void part(struct vmt_lint_finding *f, uint32_t proc, uint32_t thread, uint64_t v)
{
	if (!v)
		return;
	struct vmt_lint_part np = { proc, thread, v };
	if (f->nparts < VMT_LINT_MAX_PARTS) {
		f->parts[f->nparts++] = np;
		return;
	}
	uint32_t min = 0;
	for (uint32_t i = 1; i < f->nparts; i++)
		if (f->parts[i].value < f->parts[min].value)
			min = i;
	f->parts_more++;
	if (f->parts[min].value < v) {
		f->parts_more_value += f->parts[min].value;
		f->parts[min] = np;
	} else {
		f->parts_more_value += v;
	}
}

static void set_example(vmt_lint *l, struct vmt_lint_finding *f, const struct example *x)
{
	if (!x->set)
		return;
	f->example_index = x->index;
	f->example_proc = x->proc;
	f->example_thread = x->thread;
	snprintf(f->example, sizeof(f->example), "%s", x->text);
	struct vmt_buf b = { 0 };
	if (x->is_fault) {
		vmt_symtab_render_ip(l->syms, &b, x->ip);
		snprintf(f->frames[0], sizeof(f->frames[0]), "%s", b.len ? b.data : "?");
		f->nframes = 1;
	} else if (x->stack != VMT_NONE) {
		uint32_t depth = 0;
		const uint64_t *ips = vmt_symtab_stack(l->syms, x->stack, &depth);
		for (uint32_t i = 0; ips && i < depth && i < VMT_LINT_MAX_FRAMES; i++) {
			vmt_buf_reset(&b);
			vmt_symtab_render_ip(l->syms, &b, ips[i]);
			snprintf(f->frames[i], sizeof(f->frames[i]), "%s", b.len ? b.data : "?");
			f->nframes = i + 1;
		}
	}
	vmt_buf_free(&b);
}

/* Each find_* below fills a finding while it adds up its counters (parts
 * included) and keeps it only when the counters cross the thresholds. */

static int find_pnf(vmt_lint *l)
{
	struct vmt_lint_finding f = {
		.id = VMT_LINT_PROT_NONE_FREE,
		.title = "memory freed with mmap(PROT_NONE, MAP_FIXED) after mprotect(PROT_READ|PROT_WRITE)",
		.why = "each cycle takes mmap_lock for writing twice (mprotect, then mmap) and "
		       "faults the pages in again; threads doing it serialize on the lock "
		       "(seed 000: 2 threads, 1,000,000 cycles: 140,000 context switches/s and "
		       "80 s, against 8 s with madvise)",
		.fix = "keep the range mapped read-write and give pages back with "
		       "madvise(MADV_DONTNEED); measure with vmreplay --compare=prot-none-free",
		.rule = "prot-none-free",
		.part_unit = "cycles",
	};
	char h1[32];
	uint64_t cycles = 0, bytes = 0, threads = 0;
	for (uint32_t t = 0; t < l->nthr; t++)
		if (l->thr[t].pnf_cycles >= PNF_MIN_CYCLES) {
			cycles += l->thr[t].pnf_cycles;
			bytes += l->thr[t].pnf_bytes;
			threads++;
			part(&f, l->thr[t].proc, t, l->thr[t].pnf_cycles);
		}
	if (!threads)
		return 0;
	num(&f, "cycles", cycles, "cycles", "mprotect(RW) -> mmap(PROT_NONE, MAP_FIXED) cycles");
	num(&f, "threads", threads, "threads", "threads doing it");
	num(&f, "bytes", bytes, "bytes", "bytes remapped PROT_NONE");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " mprotect(RW) -> mmap(PROT_NONE, MAP_FIXED) cycles on the same "
		 "ranges in %" PRIu64 " thread%s (%s)",
		 cycles, threads, threads == 1 ? "" : "s", vmt_format_bytes(h1, sizeof(h1), bytes));
	set_example(l, &f, &l->ex_pnf);
	return add_finding(l, &f);
}

static int find_free(vmt_lint *l)
{
	struct vmt_lint_finding f = {
		.id = VMT_LINT_MADV_FREE,
		.title = "large volume of memory given back with MADV_FREE, repeatedly on the same ranges",
		.why = "lazily freed pages stay charged to the process until reclaim takes them; "
		       "under memory pressure every cycle goes through the LRU and direct reclaim "
		       "(seed 001: 12 processes freeing 512 MiB 5 times took 1:30 with MADV_FREE "
		       "against 0:49 with MADV_DONTNEED)",
		.fix = "use MADV_DONTNEED for memory that is not reused soon, or keep MADV_FREE "
		       "only where the pages are reused before pressure builds; measure with "
		       "vmreplay --compare=free-to-dontneed",
		.rule = "free-to-dontneed",
		.part_unit = "bytes",
	};
	char h1[32], h2[32];
	uint64_t calls = 0, bytes = 0, recalls = 0, rebytes = 0, procs = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		calls += l->prc[p].free_calls;
		bytes += l->prc[p].free_bytes;
		recalls += l->prc[p].refree_calls;
		rebytes += l->prc[p].refree_bytes;
		procs += l->prc[p].free_calls > 0;
		part(&f, p, VMT_NONE, l->prc[p].free_bytes);
	}
	if (bytes < FREE_MIN_BYTES || recalls < FREE_MIN_REPEATS)
		return 0;
	num(&f, "calls", calls, "calls", "madvise(MADV_FREE) calls");
	num(&f, "bytes", bytes, "bytes", "bytes freed lazily");
	num(&f, "repeated_calls", recalls, "calls", "calls on a range freed before");
	num(&f, "repeated_bytes", rebytes, "bytes", "bytes freed again");
	num(&f, "processes", procs, "processes", "processes doing it");
	snprintf(f.summary, sizeof(f.summary),
		 "%s freed with MADV_FREE in %" PRIu64 " calls; %" PRIu64
		 " calls (%s) on ranges already freed before",
		 vmt_format_bytes(h1, sizeof(h1), bytes), calls, recalls, vmt_format_bytes(h2, sizeof(h2), rebytes));
	set_example(l, &f, &l->ex_free);
	return add_finding(l, &f);
}

static int find_frag(vmt_lint *l)
{
	struct vmt_lint_finding f = {
		.id = VMT_LINT_FRAGMENTATION,
		.title = "many small adjacent mappings that could not merge into one VMA",
		.why = "every VMA is a node of the process's VMA tree: each mmap without MAP_FIXED "
		       "searches it for a gap (get_unmapped_area), and fork, exit, munmap and "
		       "/proc/PID/maps walk all of them; vm.max_map_count (65530 by default) caps "
		       "their number (seed 002: at 300,000 VMAs get_unmapped_area was 19.8% of the "
		       "profile and mappings ran at 20/s, against 1000/s when they merged)",
		.fix = "map one larger region and hand out pieces of it, give neighbouring "
		       "mappings the same protection and flags, and map consecutive file offsets "
		       "(or the whole file once) so that neighbours merge",
		.rule = NULL,
		.part_unit = "peak_vmas",
	};
	uint64_t unmerged = 0, small = 0, peak = 0, reasons[FR__COUNT] = { 0 };
	uint32_t peak_proc = 0;
	int any = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		const struct lproc *q = &l->prc[p];
		if (q->unmerged < FRAG_MIN_UNMERGED || q->peak_vmas < FRAG_MIN_PEAK_VMAS)
			continue;
		any = 1;
		unmerged += q->unmerged;
		small += q->small_maps;
		for (int r = 0; r < FR__COUNT; r++)
			reasons[r] += q->reasons[r];
		if (q->peak_vmas > peak) {
			peak = q->peak_vmas;
			peak_proc = p;
		}
		part(&f, p, VMT_NONE, q->peak_vmas);
	}
	if (!any)
		return 0;
	num(&f, "peak_vmas", peak, "vmas", "peak VMA count");
	num(&f, "unmerged_small_maps", unmerged, "calls",
	    "small mmaps next to a neighbour that stayed separate VMAs");
	num(&f, "small_maps", small, "calls", "mmaps of at most 64 KiB");
	for (int r = 0; r < FR__COUNT; r++)
		if (reasons[r])
			num(&f, frag_reason_key[r], reasons[r], "calls", frag_reason_what[r]);
	int top = 0;
	for (int r = 1; r < FR__COUNT; r++)
		if (reasons[r] > reasons[top])
			top = r;
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " of %" PRIu64 " small mmaps stayed separate VMAs next to a neighbour "
		 "(mostly %s); peak %" PRIu64 " VMAs in p%u at %.3f s",
		 unmerged, small, frag_reason_what[top] + 10, peak, peak_proc,
		 (double)(l->prc[peak_proc].peak_ts -
			  (l->h && l->prc[peak_proc].peak_ts >= l->h->start_mono_ns ? l->h->start_mono_ns : 0)) / 1e9);
	set_example(l, &f, &l->ex_frag[top]);
	return add_finding(l, &f);
}

static int find_locks(vmt_lint *l)
{
	struct vmt_lint_finding f = {
		.id = VMT_LINT_LOCKED_UNTOUCHED,
		.title = "large locked mappings whose pages are mostly never used",
		.why = "locking (MAP_LOCKED, mlock, mlockall without ONFAULT) reads in and pins "
		       "every page of the range when the call is made, used or not (seed 003: "
		       "9.5 s to set up a 5 GB MAP_LOCKED mapping of which 150,000 pages were "
		       "read, against 0.08 s with MAP_LOCKONFAULT)",
		.fix = "lock on fault: mlock2(MLOCK_ONFAULT) or mlockall(MCL_ONFAULT), so that "
		       "only pages the program uses are read in and locked; measure with "
		       "vmreplay --compare=mlock-onfault",
		.rule = "mlock-onfault",
		.part_unit = "bytes",
	};
	char h1[32];
	const struct lockrec *worst = NULL;
	uint64_t bytes = 0, pages = 0, used = 0, n = 0, ns = 0;
	for (uint32_t i = 0; i < l->nlocks; i++) {
		const struct lockrec *r = &l->locks[i];
		uint64_t locked = r->bytes;
		uint64_t np = locked / l->page;
		if (!np || r->used_pages * 100 >= np * LOCK_MAX_USED_PERCENT)
			continue;
		n++;
		bytes += locked;
		pages += np;
		/* A page used, discarded and used again counts once. */
		used += r->used_pages < np ? r->used_pages : np;
		ns += r->ns;
		if (!worst || locked > worst->bytes)
			worst = r;
		part(&f, r->proc, r->ex.thread, r->bytes);
	}
	if (!n)
		return 0;
	num(&f, "locks", n, "calls", "locking calls of 8 MiB or more");
	num(&f, "locked_bytes", bytes, "bytes", "bytes locked (and populated) at once");
	num(&f, "locked_pages", pages, "pages", "pages locked");
	num(&f, "used_pages", used, "pages",
	    "pages with evidence of use (faults before the lock or after it)");
	num(&f, "lock_ns", ns, "ns", "time spent in the locking calls");
	snprintf(f.summary, sizeof(f.summary),
		 "%s (%" PRIu64 " pages) locked at once by %" PRIu64
		 " call%s taking %.3f ms; %" PRIu64 " of those pages show use%s",
		 vmt_format_bytes(h1, sizeof(h1), bytes), pages, n, n == 1 ? "" : "s", (double)ns / 1e6, used,
		 l->had_faults ? "" : " (no FAULT events: pages the lock populated look "
				      "present whether used or not, so only a --touch=faults "
				      "recording shows use)");
	set_example(l, &f, &worst->ex);
	return add_finding(l, &f);
}

static int find_mlock(vmt_lint *l)
{
	struct vmt_lint_finding f = {
		.id = VMT_LINT_MLOCK_PER_PAGE,
		.title = "memory locked page by page with mlock before each use",
		.why = "one mlock call per page pays a system call, mmap_lock and a VMA split or "
		       "merge for every page (seed 003: 722 ms to process 150,000 pages locked one "
		       "by one, against 42 ms with MAP_LOCKONFAULT)",
		.fix = "lock the whole mapping once with mlock2(MLOCK_ONFAULT): pages are then "
		       "locked as they are first touched; measure with vmreplay --compare=mlock-onfault",
		.rule = "mlock-onfault",
		.part_unit = "calls",
	};
	uint64_t calls = 0, procs = 0;
	for (uint32_t p = 0; p < l->nprc; p++)
		if (l->prc[p].small_mlocks >= MLOCK_MIN_CALLS) {
			calls += l->prc[p].small_mlocks;
			procs++;
			part(&f, p, VMT_NONE, l->prc[p].small_mlocks);
		}
	if (!procs)
		return 0;
	num(&f, "calls", calls, "calls", "mlock calls of at most 4 pages");
	num(&f, "processes", procs, "processes", "processes doing it");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " mlock calls of at most %d pages in %" PRIu64 " process%s",
		 calls, MLOCK_SMALL_PAGES, procs, procs == 1 ? "" : "es");
	set_example(l, &f, &l->ex_mlock);
	return add_finding(l, &f);
}

static int find_rtw(vmt_lint *l)
{
	struct vmt_lint_finding f = {
		.id = VMT_LINT_READ_THEN_WRITE,
		.title = "fresh anonymous pages read before they are written: two faults per page",
		.why = "the first read of a fresh private anonymous page maps the shared zero page; "
		       "the first write then faults again to copy it (seed 004: 890 + 2660 cycles "
		       "per page, against 2300 for writing first)",
		.fix = "write (initialize) the pages before reading them, or prefault them writable "
		       "with MAP_POPULATE or madvise(MADV_POPULATE_WRITE); measure with "
		       "vmreplay --compare=populate",
		.rule = "populate",
		.part_unit = "pages",
	};
	uint64_t rtw = 0, read_first = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		rtw += l->prc[p].rtw_pages;
		read_first += l->prc[p].read_first_pages;
	}
	if (rtw < RTW_MIN_PAGES)
		return 0;
	num(&f, "pages", rtw, "pages", "pages with a read fault then a write fault");
	num(&f, "read_first_pages", read_first, "pages",
	    "fresh anonymous pages whose first fault was a read");
	num(&f, "extra_faults", rtw, "faults", "faults a write-first order would save");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " fresh anonymous pages took a read fault and then a write fault "
		 "(%" PRIu64 " pages were read first)",
		 rtw, read_first);
	for (uint32_t t = 0; t < l->nthr; t++)
		part(&f, l->thr[t].proc, t, l->thr[t].rtw_pages);
	set_example(l, &f, &l->ex_rtw);
	return add_finding(l, &f);
}

int vmt_lint_finish(vmt_lint *l)
{
	int rc;
	l->nfound = 0;
	if ((rc = find_pnf(l)) || (rc = find_free(l)) || (rc = find_frag(l)) ||
	    (rc = find_locks(l)) || (rc = find_mlock(l)) || (rc = find_rtw(l)))
		return rc;
	return (int)l->nfound;
}

const struct vmt_lint_finding *vmt_lint_get(const vmt_lint *l, uint32_t i)
{
	return i < l->nfound ? &l->found[i] : NULL;
}

int vmt_lint_had_faults(const vmt_lint *l)
{
	return l->had_faults;
}

uint64_t vmt_lint_model_inexact(const vmt_lint *l)
{
	return vmt_asmodel_inexact(l->model);
}
