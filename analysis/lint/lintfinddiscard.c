/*
 * lintfinddiscard.c - the findings of the detectors in lintdiscard.c:
 * which of their counters cross the thresholds of lint_int.h, and the
 * evidence, cost and fix of each.
 */
#include <inttypes.h>
#include <stdio.h>

#include "lint_int.h"

static int find_dun(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_DISCARD_UNMAP,
		.title = "pages discarded, or made PROT_NONE, right before the range is unmapped",
		.why = "munmap gives the pages back anyway: the madvise before it walks the same "
		       "page tables once more, and an mprotect(PROT_NONE) splits or changes VMAs "
		       "with mmap_lock held for writing, for nothing (V8 frees each 256 KiB page of "
		       "an isolate with mprotect, madvise and munmap: two calls of three wasted)",
		.fix = "unmap the range directly; measure with vmreplay --compare=discard-before-unmap",
		.rule = "discard-before-unmap",
		.part_unit = "calls",
	};
	char h1[32];
	uint64_t calls = 0, bytes = 0, unmaps = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		const struct lproc *P = &l->prc[p];
		if (P->dun_calls < DUN_MIN_CALLS)
			continue;
		calls += P->dun_calls;
		bytes += P->dun_bytes;
		unmaps += P->dun_unmaps;
		lint_part(&f, p, VMT_NONE, P->dun_calls);
	}
	if (!calls)
		return 0;
	lint_num(&f, "calls", calls, "calls", "discards right before the munmap of their range");
	lint_num(&f, "bytes", bytes, "bytes", "bytes they covered");
	lint_num(&f, "unmaps", unmaps, "calls", "munmaps that followed them");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " madvise(MADV_DONTNEED/MADV_FREE) or mprotect(PROT_NONE) calls (%s) "
		 "right before %" PRIu64 " munmaps of the same ranges by the same threads",
		 calls, vmt_format_bytes(h1, sizeof(h1), bytes), unmaps);
	lint_set_example(l, &f, &l->ex_dun);
	int rc = lint_sites(l, &f, &l->sites_dun, "discards", VAN_LINT_MAX_SITES);
	return rc ? rc : lint_add_finding(l, &f);
}

static int find_fbd(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_FREE_DONTNEED,
		.title = "memory freed lazily with MADV_FREE, then given back with MADV_DONTNEED "
			 "before reclaim took any of it",
		.why = "the MADV_FREE walked the page tables and kept the pages charged, and the "
		       "MADV_DONTNEED that followed found them all still there and freed them itself "
		       "(jemalloc's two-stage decay: dirty pages become muzzy with MADV_FREE, "
		       "then clean with MADV_DONTNEED)",
		.fix = "give such memory back with MADV_DONTNEED at once (jemalloc: muzzy_decay_ms:0, "
		       "the Debian default); measure with vmreplay --compare=free-before-dontneed",
		.rule = "free-before-dontneed",
		.part_unit = "bytes",
	};
	char h1[32];
	uint64_t pairs = 0, bytes = 0, cross = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		const struct lproc *P = &l->prc[p];
		pairs += P->fbd_pairs;
		bytes += P->fbd_bytes;
		cross += P->fbd_cross;
		lint_part(&f, p, VMT_NONE, P->fbd_bytes);
	}
	if (bytes < FBD_MIN_BYTES)
		return 0;
	lint_num(&f, "calls", pairs, "calls", "MADV_FREE calls whose pages MADV_DONTNEED freed later");
	lint_num(&f, "bytes", bytes, "bytes", "bytes they covered");
	lint_num(&f, "other_thread", cross, "calls", "of them freed by another thread's MADV_DONTNEED");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " madvise(MADV_FREE) calls (%s) whose pages were all still present when "
		 "a later MADV_DONTNEED gave them back (%" PRIu64 " of those by another thread)",
		 pairs, vmt_format_bytes(h1, sizeof(h1), bytes), cross);
	lint_set_example(l, &f, &l->ex_fbd);
	int rc = lint_sites(l, &f, &l->sites_fbd, "MADV_FREE calls", VAN_LINT_MAX_SITES);
	return rc ? rc : lint_add_finding(l, &f);
}

static int find_dlk(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_DISCARD_LOCKED,
		.title = "madvise(MADV_DONTNEED/MADV_FREE) on locked memory, failing with EINVAL",
		.why = "the kernel refuses to discard locked pages: each call takes mmap_lock and "
		       "walks the VMAs for nothing (glibc's malloc_trim under mlockall does it for "
		       "every free chunk of every arena)",
		.fix = "do not trim memory that is locked (or lock on fault, so that only used pages "
		       "are locked); MADV_DONTNEED_LOCKED discards locked pages where that is meant",
		.rule = NULL,
		.part_unit = "calls",
	};
	char h1[32];
	uint64_t calls = 0, bytes = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		calls += l->prc[p].dlk_calls;
		bytes += l->prc[p].dlk_bytes;
		lint_part(&f, p, VMT_NONE, l->prc[p].dlk_calls);
	}
	if (calls < DLK_MIN_CALLS)
		return 0;
	lint_num(&f, "calls", calls, "calls", "discards that failed on locked memory");
	lint_num(&f, "bytes", bytes, "bytes", "bytes they asked for");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " madvise calls (%s) failed with EINVAL on locked memory", calls,
		 vmt_format_bytes(h1, sizeof(h1), bytes));
	lint_set_example(l, &f, &l->ex_dlk);
	int rc = lint_sites(l, &f, &l->sites_dlk, "failed discards", VAN_LINT_MAX_SITES);
	return rc ? rc : lint_add_finding(l, &f);
}

static int find_fmc(van_lint *l)
{
	struct van_lint_finding f = {
		.id = VAN_LINT_FILE_MAP_CHURN,
		.title = "small files mapped and unmapped again, one by one",
		.why = "each mmap and each munmap takes mmap_lock for writing, and the first read "
		       "of the mapping faults, to read what read() would copy in one call (seed 002: "
		       "every mapping also searches the VMA tree for a gap)",
		.fix = "read small files with read() or pread() into a buffer, or map one larger "
		       "file that holds them",
		.rule = NULL,
		.part_unit = "pairs",
	};
	char h1[32];
	uint64_t pairs = 0, bytes = 0;
	for (uint32_t p = 0; p < l->nprc; p++) {
		const struct lproc *P = &l->prc[p];
		if (P->fmc_pairs < FMC_MIN_PAIRS)
			continue;
		pairs += P->fmc_pairs;
		bytes += P->fmc_bytes;
		lint_part(&f, p, VMT_NONE, P->fmc_pairs);
	}
	if (!pairs)
		return 0;
	lint_num(&f, "pairs", pairs, "calls", "mmap + munmap pairs of files of at most 64 KiB");
	lint_num(&f, "bytes", bytes, "bytes", "bytes mapped by them (whole pages)");
	snprintf(f.summary, sizeof(f.summary),
		 "%" PRIu64 " file mappings of at most 64 KiB (%s in all) were made and unmapped again",
		 pairs, vmt_format_bytes(h1, sizeof(h1), bytes));
	lint_set_example(l, &f, &l->ex_fmc);
	int rc = lint_sites(l, &f, &l->sites_fmc, "mmaps", VAN_LINT_MAX_SITES);
	return rc ? rc : lint_add_finding(l, &f);
}

int lint_find_discards(van_lint *l)
{
	int rc;
	if ((rc = find_dun(l)) || (rc = find_fbd(l)) || (rc = find_dlk(l)) || (rc = find_fmc(l)))
		return rc;
	return 0;
}
