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

/* Each find_* below fills a finding while it adds up its counters (parts
 * included) and keeps it only when the counters cross the thresholds. */

static int find_pnf(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_PROT_NONE_FREE,
		.title = "memory uncommitted with mmap(PROT_NONE, MAP_FIXED), then committed again",
		.why = "each uncommit and each commit replaces VMAs with mmap_lock held for "
		       "writing, so threads that fault or map meanwhile wait, and committing "
		       "again faults the pages in anyway (seed 000: 2 threads, 1,000,000 cycles: "
		       "140,000 context switches/s and 80 s, against 8 s with madvise)",
		.fix = "keep the range mapped with its protection and give the pages back with "
		       "madvise(MADV_DONTNEED), so that committing it again changes nothing; "
		       "measure with vmreplay --compare=prot-none-free",
		.rule = "prot-none-free",
		.part_unit = "cycles",
	};
	char h1[32], h2[32];
	uint64_t cycles = 0, bytes = 0, threads = 0, unc = 0, ubytes = 0, rec = 0, cross = 0,
		 unm = 0, never = 0, cut = 0, charged = 0, cbytes = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		const struct lproc *P = &l->prc[p];
		if (P->unc_cycles < PNF_MIN_CYCLES)
			continue;
		cycles += P->unc_cycles;
		bytes += P->unc_cycle_bytes;
		unc += P->unc_calls;
		ubytes += P->unc_bytes;
		rec += P->unc_recommitted;
		cross += P->unc_cross;
		unm += P->unc_unmapped;
		never += P->unc_never;
		cut += P->unc_cut;
		charged += P->unc_charged;
		cbytes += P->unc_charged_bytes;
		for (uint32_t t = 0; t < l->nthr; t++)
			if (l->thr[t].proc == p && l->thr[t].pnf_cycles) {
				threads++;
				lint_part(&f, p, t, l->thr[t].pnf_cycles);
			}
	}
	if (!cycles)
		return 0;
	lint_num(&f, "cycles", cycles, "cycles", "uncommits committed again or unmapped later");
	lint_num(&f, "threads", threads, "threads", "threads uncommitting");
	lint_num(&f, "bytes", bytes, "bytes", "bytes of those uncommits");
	lint_num(&f, "uncommits", unc, "calls", "mmap(PROT_NONE, MAP_FIXED) calls over committed memory");
	lint_num(&f, "recommitted", rec, "calls", "uncommits committed again (mprotect or mmap(MAP_FIXED))");
	lint_num(&f, "recommitted_by_other_thread", cross, "calls", "of them by another thread");
	lint_num(&f, "recommits_with_more", cut, "calls",
	    "commits that also committed memory that was not uncommitted");
	lint_num(&f, "unmapped", unm, "calls", "uncommits unmapped later");
	lint_num(&f, "left_uncommitted", never, "calls", "uncommits left so until the process ended");
	lint_num(&f, "charged_bytes", cbytes, "bytes", "bytes uncommitted that were charged to the commit limit");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " uncommits of committed memory by mmap(PROT_NONE, MAP_FIXED) (%s); "
		 "%" PRIu64 " committed again (%" PRIu64 " by another thread), %" PRIu64
		 " unmapped, in %" PRIu64 " thread%s (%s in those cycles)",
		 unc, vmt_format_bytes(h1, sizeof(h1), ubytes), rec, cross, unm, threads,
		 threads == 1 ? "" : "s", vmt_format_bytes(h2, sizeof(h2), bytes));
	lint_set_example(l, &f, &l->ex_pnf);
	int rc;
	if ((rc = lint_sites(l, &f, &l->sites_unc, "uncommits", 2)) ||
	    (rc = lint_sites(l, &f, &l->sites_recommit, "commits", 2)))
		return rc;
	if (l->strict)
		snprintf(f.note, sizeof(f.note),
			 "the trace was recorded with vm.overcommit_memory=2: rule prot-none-free "
			 "leaves uncommits of charged memory as recorded, since madvise would keep "
			 "the commit charge the remap drops");
	else if (charged)
		snprintf(f.note, sizeof(f.note),
			 "%" PRIu64 " uncommits (%s) dropped a commit charge that madvise keeps: "
			 "under vm.overcommit_memory=2 (glibc shrinks arenas this way only then) "
			 "the rewritten program stays charged for that memory; the trace does not "
			 "say which mode it was recorded under",
			 charged, vmt_format_bytes(h1, sizeof(h1), cbytes));
	return lint_add_finding(l, &f);
}

static int find_free(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_MADV_FREE,
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
		lint_part(&f, p, VMT_NONE, l->prc[p].free_bytes);
	}
	if (bytes < FREE_MIN_BYTES || recalls < FREE_MIN_REPEATS)
		return 0;
	lint_num(&f, "calls", calls, "calls", "madvise(MADV_FREE) calls");
	lint_num(&f, "bytes", bytes, "bytes", "bytes freed lazily");
	lint_num(&f, "repeated_calls", recalls, "calls", "calls on a range freed before");
	lint_num(&f, "repeated_bytes", rebytes, "bytes", "bytes freed again");
	lint_num(&f, "processes", procs, "processes", "processes doing it");
	snprintf(f.summary, sizeof(f.summary),
		 "%s freed with MADV_FREE in %" PRIu64 " calls; %" PRIu64
		 " calls (%s) on ranges already freed before",
		 vmt_format_bytes(h1, sizeof(h1), bytes), calls, recalls, vmt_format_bytes(h2, sizeof(h2), rebytes));
	lint_set_example(l, &f, &l->ex_free);
	return lint_add_finding(l, &f);
}

static int find_frag(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_FRAGMENTATION,
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
		lint_part(&f, p, VMT_NONE, q->peak_vmas);
	}
	if (!any)
		return 0;
	lint_num(&f, "peak_vmas", peak, "vmas", "peak VMA count");
	lint_num(&f, "unmerged_small_maps", unmerged, "calls",
	    "small mmaps next to a neighbour that stayed separate VMAs");
	lint_num(&f, "small_maps", small, "calls", "mmaps of at most 64 KiB");
	for (int r = 0; r < FR__COUNT; r++)
		if (reasons[r])
			lint_num(&f, frag_reason_key[r], reasons[r], "calls", frag_reason_what[r]);
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
	lint_set_example(l, &f, &l->ex_frag[top]);
	return lint_add_finding(l, &f);
}

static int find_locks(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_LOCKED_UNTOUCHED,
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
		lint_part(&f, r->proc, r->ex.thread, r->bytes);
	}
	if (!n)
		return 0;
	lint_num(&f, "locks", n, "calls", "locking calls of 8 MiB or more");
	lint_num(&f, "locked_bytes", bytes, "bytes", "bytes locked (and populated) at once");
	lint_num(&f, "locked_pages", pages, "pages", "pages locked");
	lint_num(&f, "used_pages", used, "pages",
	    "pages with evidence of use (faults before the lock or after it)");
	lint_num(&f, "lock_ns", ns, "ns", "time spent in the locking calls");
	snprintf(f.summary, sizeof(f.summary),
		 "%s (%" PRIu64 " pages) locked at once by %" PRIu64
		 " call%s taking %.3f ms; %" PRIu64 " of those pages show use%s",
		 vmt_format_bytes(h1, sizeof(h1), bytes), pages, n, n == 1 ? "" : "s", (double)ns / 1e6, used,
		 l->had_faults ? "" : " (no FAULT events: pages the lock populated look "
				      "present whether used or not, so only a --touch=faults "
				      "recording shows use)");
	lint_set_example(l, &f, &worst->ex);
	return lint_add_finding(l, &f);
}

static int find_mlock(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_MLOCK_PER_PAGE,
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
			lint_part(&f, p, VMT_NONE, l->prc[p].small_mlocks);
		}
	if (!procs)
		return 0;
	lint_num(&f, "calls", calls, "calls", "mlock calls of at most 4 pages");
	lint_num(&f, "processes", procs, "processes", "processes doing it");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " mlock calls of at most %d pages in %" PRIu64 " process%s",
		 calls, MLOCK_SMALL_PAGES, procs, procs == 1 ? "" : "es");
	lint_set_example(l, &f, &l->ex_mlock);
	return lint_add_finding(l, &f);
}

static int find_rtw(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_READ_THEN_WRITE,
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
	if (!l->zero_page)
		return 0; /* van_lint_unchecked says why */
	for (uint32_t p = 0; p < l->nprc; p++) {
		rtw += l->prc[p].rtw_pages;
		read_first += l->prc[p].read_first_pages;
	}
	if (rtw < RTW_MIN_PAGES)
		return 0;
	lint_num(&f, "pages", rtw, "pages", "pages with a read fault then a write fault");
	lint_num(&f, "read_first_pages", read_first, "pages",
	    "fresh anonymous pages whose first fault was a read");
	lint_num(&f, "extra_faults", rtw, "faults", "faults a write-first order would save");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " fresh anonymous pages took a read fault and then a write fault "
		 "(%" PRIu64 " pages were read first)",
		 rtw, read_first);
	for (uint32_t t = 0; t < l->nthr; t++)
		lint_part(&f, l->thr[t].proc, t, l->thr[t].rtw_pages);
	lint_set_example(l, &f, &l->ex_rtw);
	return lint_add_finding(l, &f);
}

int van_lint_finish(van_lint *l)
{
	int rc;
	l->nfound = 0;
	for (uint32_t p = 0; p < l->nprc; p++)
		lu_end_proc(l, p);
	if ((rc = find_pnf(l)) || (rc = find_free(l)) || (rc = find_frag(l)) ||
	    (rc = find_locks(l)) || (rc = find_mlock(l)) || (rc = find_rtw(l)) ||
	    (rc = lint_find_discards(l)))
		return rc;
	return (int)l->nfound;
}

const struct van_lint_finding *van_lint_get(const van_lint *l, uint32_t i)
{
	return i < l->nfound ? &l->found[i] : NULL;
}

int van_lint_had_faults(const van_lint *l)
{
	return l->had_faults;
}

const char *van_lint_unchecked(const van_lint *l, const char *id)
{
	if (!strcmp(id, VAN_LINT_FREE_DONTNEED))
		/* (below the finding's volume it could not have been one) */
		return l->fbd_unknown >= FBD_MIN_BYTES
			       ? "the trace has no resident scans of the ranges given MADV_FREE "
				 "(record with vmrec --touch=resident, ptrace or inproc backend): "
				 "which of their pages reclaim took is unknown"
			       : NULL;
	if (strcmp(id, VAN_LINT_READ_THEN_WRITE))
		return NULL;
	if (!l->zero_page)
		return "the recording kernel maps no zero page (zeropage=0 in the header): a "
		       "first read already allocates the page, and the write after it takes no "
		       "second fault, so there is nothing to find on that kernel";
	if (!l->had_faults)
		return "the trace has no FAULT events (record with vmrec --touch=faults)";
	return NULL;
}

uint64_t van_lint_model_inexact(const van_lint *l)
{
	return van_asmodel_inexact(l->model);
}
