/*
 * lint_int.h - what the detectors (lintcheck.c) and the findings
 * (lintfind.c) of `vmtrace lint` share: thresholds and the linter's state.
 */
#ifndef VAN_LINT_INT_H
#define VAN_LINT_INT_H

#include <stdint.h>
#include "asmodel.h"
#include "callsite_int.h"
#include "linux_abi.h"
#include "lint.h"
#include "touchlog_int.h"
#include "vmtutil.h"

/* ---- Thresholds --------------------------------------------------------
 * A finding must point at a pattern that costs something measurable, not at
 * a single call that happens to look like one.  Each threshold says why it
 * sits where it does; the workloads of tests/workloads cross them by an
 * order of magnitude at their default settings, and their near-miss
 * variants stay far below. */

/* prot-none-free: memory uncommitted by mmap(PROT_NONE, MAP_FIXED) and
 * then committed again (or unmapped) this many times in one process is an
 * allocator's or a garbage collector's free path, not a one-off reset of
 * a guard region.  Every cycle replaces VMAs under mmap_lock held for
 * writing twice (seed 000: 80 s against 8 s with 2 threads).  Counted per
 * process, not per thread: G1 uncommits in its service thread and
 * commits again in the VM thread. */
#define PNF_MIN_CYCLES 4
/* Examples kept of the first uncommits, until one of them makes a cycle. */
#define LU_EXAMPLES 16

/* madv-free-volume: MADV_FREE is cheap when nothing needs the memory, but
 * every lazily freed page stays charged to the process and must be
 * reclaimed when something does (seed 001: 1:30 against 0:49 for
 * MADV_DONTNEED under pressure).  Below 64 MiB freed in total, or when no
 * range is freed twice (a one-time trim), the reclaim work is too small to
 * matter. */
#define FREE_MIN_BYTES (64ull << 20)
#define FREE_MIN_REPEATS 1

/* vma-fragmentation: a "small" mapping is at most 64 KiB (16 pages), the
 * size an allocator or a per-record file mapping uses.  A process normally
 * has a few hundred VMAs (each shared library brings 4-5); 1000 VMAs at the
 * peak with 500 small mappings that sat next to a neighbour and still did
 * not merge is the shape of seed 002, where get_unmapped_area ended up at
 * 19.8% of the profile. */
#define FRAG_SMALL_BYTES (64ull << 10)
#define FRAG_MIN_UNMERGED 500
#define FRAG_MIN_PEAK_VMAS 1000
#define FRAG_EXAMPLE_AT 100

/* locked-untouched: locking populates every page of the range at once
 * (seed 003: 9.5 s to set up a 5 GB MAP_LOCKED mapping of which 150,000
 * pages were read).  Below 8 MiB (2048 pages) that costs a few ms at most.
 * "Mostly never touched": fewer than half the pages show any use. */
#define LOCK_MIN_BYTES (8ull << 20)
#define LOCK_MAX_USED_PERCENT 50
#define LOCK_MAX_RECORDS 256 /* large locks remembered for the use check */

/* mlock-per-page: mlock of at most 4 pages at a time, 64 times or more in
 * one process, is locking on demand by hand (seed 003's second method:
 * 722 ms of processing against 42 ms with MLOCK_ONFAULT). */
#define MLOCK_SMALL_PAGES 4
#define MLOCK_MIN_CALLS 64

/* read-then-write: a read fault on a fresh anonymous page maps the zero
 * page; the write that follows faults again to copy it (seed 004: 890 +
 * 2660 cycles against 2300 for writing at once).  256 pages (1 MiB) is
 * above what ld.so and libc startup do (a handful of pages) and far below
 * a buffer that is read before it is filled. */
#define RTW_MIN_PAGES 256

/* discard-before-unmap: a madvise(MADV_DONTNEED/MADV_FREE) or
 * mprotect(PROT_NONE) of a range that the same thread then unmaps, with
 * nothing else on the range in between, is a call munmap makes useless
 * (its pages go with the mapping; mprotect also splits a VMA under the
 * write lock).  64 of them in one process is a teardown loop (V8 frees
 * every 256 KiB page of an isolate this way: 387 pages, 3 calls each),
 * not a one-off. */
#define DUN_MIN_CALLS 64

/* free-before-dontneed: MADV_FREE of pages that are still present when
 * madvise(MADV_DONTNEED) gives them back later (jemalloc's decay: dirty
 * to muzzy, then muzzy to clean) bought nothing and cost a call and a
 * page-table walk.  As for madv-free-volume, below 64 MiB the work is too
 * small to matter. */
#define FBD_MIN_BYTES (64ull << 20)

/* discard-locked: madvise(MADV_DONTNEED/MADV_FREE) fails with EINVAL on
 * locked memory (VM_LOCKED): every such call is wasted.  16 is a trim
 * loop (qemu with mem-lock=on: 391 from glibc's malloc_trim), not a
 * probe. */
#define DLK_MIN_CALLS 16

/* file-map-churn: a file of at most 64 KiB mapped, read and unmapped
 * again pays mmap_lock for writing twice and a page fault, where read()
 * copies a few hundred bytes.  1000 such pairs in one process is a
 * per-record loop (git reading 2064 loose objects: 2072 pairs). */
#define FMC_MAX_BYTES (64ull << 10)
#define FMC_MIN_PAIRS 1000
/* A mapping counts when it goes before this many more small file
 * mappings are made: map, read, unmap, one file after the other (mappings
 * that pile up and go at the end are vma-fragmentation's shape). */
#define FMC_MAX_LIVE 16

/* Page states in the faulted-page table. */
#define PG_READ_FIRST 0x1u /* first fault was a read on an anonymous page */
#define PG_WRITTEN 0x2u

enum frag_reason {
	FR_PROT, FR_FILE_ANON, FR_OTHER_FILE, FR_OFFSET, FR_FLAGS, FR_ANON_VMA, FR_OTHER,
	FR__COUNT
};
struct example {
	int set;
	uint64_t index;
	uint32_t proc, thread, stack;
	int is_fault;
	uint64_t ip;
	char text[256];
};

struct lthread {
	uint32_t proc;
	uint64_t pnf_cycles, pnf_bytes; /* uncommits by this thread that cycled */
	uint64_t rtw_pages;
};

/* A discard waiting for its munmap (discard-before-unmap), or a
 * MADV_FREE waiting for its MADV_DONTNEED (free-before-dontneed). */
struct pend_discard {
	uint64_t start, end, index;
	uint32_t thread, stack, op;
	int64_t present; /* pages present at the call (-1: unknown) */
	uint64_t calls;	 /* calls it stands for: the same call again, nothing between */
};

struct pend_list {
	struct pend_discard *d;
	size_t n, cap;
};

struct lproc {
	uint64_t free_calls, free_bytes, refree_calls, refree_bytes;
	uint64_t small_maps, unmerged, reasons[FR__COUNT];
	uint64_t peak_vmas, peak_ts;
	uint64_t small_mlocks;
	uint64_t rtw_pages, read_first_pages;
	/* prot-none-free: ranges uncommitted now (rs_ent: prot and UC_*
	 * flags before, thread, stack, index of the uncommit, seq: its
	 * length argument, LU_* in flags' high bits), and the counts */
	struct vmt_rset unc;
	uint64_t unc_calls, unc_bytes, unc_cycles, unc_cycle_bytes, unc_recommitted,
		unc_unmapped, unc_never, unc_cross, unc_cut, unc_charged, unc_charged_bytes;
	/* discard-before-unmap */
	struct pend_list dun;
	uint64_t dun_calls, dun_bytes, dun_unmaps;
	/* free-before-dontneed */
	struct pend_list fbd;
	uint64_t fbd_pairs, fbd_bytes, fbd_cross;
	/* discard-locked */
	uint64_t dlk_calls, dlk_bytes;
	/* file-map-churn: small file mappings now (start -> length) */
	struct vmt_htab fmc; /* (start, 0) -> stack << 32 | length, (start, 1) -> serial */
	uint64_t fmc_serial, fmc_pairs, fmc_bytes;
};

struct lockrec {
	uint32_t proc;
	uint64_t start, end;
	uint64_t used_pages; /* pages with a fault: before the lock, or after */
	uint64_t bytes;	     /* bytes the call locked */
	uint64_t ns;	     /* duration of the locking call */
	struct example ex;
};

struct van_lint {
	const struct vmt_header *h;
	uint64_t page;
	van_asmodel *model;
	vmt_symtab *syms;
	struct vmt_buf scratch;
	struct lthread *thr;
	size_t nthr; /* (allocated: entries past the last seen are zero) */
	struct lproc *prc;
	size_t nprc;
	struct vmt_htab freed;	 /* (start, proc) -> len of an MADV_FREE */
	struct vmt_htab pages;	 /* (page, proc) -> PG_* */
	struct lockrec locks[LOCK_MAX_RECORDS];
	uint32_t nlocks;
	int had_faults;
	uint64_t fbd_unknown;	  /* bytes given MADV_FREE with no resident scan
				     of them: free-before-dontneed unchecked */
	int strict;		  /* the header says overcommit=2 */
	int zero_page;		  /* the recording kernel maps it (zeropage=) */
	struct touchlog touches;  /* per thread, since its last syscall */
	struct cs_tally sites_unc, sites_recommit, sites_dun, sites_fbd, sites_dlk, sites_fmc;
	struct vmt_range rg[2];	  /* the syscall's ranges (vmt_sc_ranges), once */
	int nrg;		  /* per call, for every check below */
	int unc_candidate;	  /* the syscall being applied is an uncommit */
	uint32_t unc_prot, unc_flags;
	struct example ex_unc[LU_EXAMPLES];
	struct example ex_pnf, ex_free, ex_frag[FR__COUNT], ex_mlock, ex_rtw, ex_dun, ex_fbd,
		ex_dlk, ex_fmc;
	struct van_lint_finding *found;
	uint32_t nfound;
};

/* ---- between the files ------------------------------------------------ */

/* lintexample.c: the example event of a finding, and its call sites. */
void lint_take_example(van_lint *l, struct example *x, uint64_t index,
		       const struct vmt_event *ev);
void lint_set_example(van_lint *l, struct van_lint_finding *f, const struct example *x);
/* Add the tally's first `max` sites to f (role: what the calls did),
 * while f has room.  0 or -ENOMEM. */
int lint_sites(van_lint *l, struct van_lint_finding *f, const struct cs_tally *c,
	       const char *role, uint32_t max);
/* The counters of process p, thread t (NULL: out of memory or a bad
 * index). */
struct lproc *lint_proc_grow(van_lint *l, uint32_t p);
struct lthread *lint_thread_grow(van_lint *l, uint32_t t);
/* (Inline: several detectors ask for every event; the arrays' entries
 * past the last one seen are zero.) */
static inline struct lproc *lint_proc(van_lint *l, uint32_t p)
{
	return p < l->nprc ? &l->prc[p] : lint_proc_grow(l, p);
}
static inline struct lthread *lint_thread(van_lint *l, uint32_t t)
{
	return t < l->nthr ? &l->thr[t] : lint_thread_grow(l, t);
}
/* Keep finding f (built on the caller's stack); add a number of its
 * evidence; add a part, keeping the VAN_LINT_MAX_PARTS largest. */
int lint_add_finding(van_lint *l, const struct van_lint_finding *f);
void lint_num(struct van_lint_finding *f, const char *key, uint64_t v, const char *unit,
	      const char *what);
void lint_part(struct van_lint_finding *f, uint32_t proc, uint32_t thread, uint64_t v);

/* lintfinddiscard.c: the findings of lintdiscard.c's detectors.  0 or
 * -ENOMEM. */
int lint_find_discards(van_lint *l);

/* lintuncommit.c: prot-none-free, before and after the model applies a
 * syscall, and at process end and trace end. */
int lu_before(van_lint *l, const struct vmt_event *ev);
int lu_after(van_lint *l, uint64_t index, const struct vmt_event *ev);
void lu_end_proc(van_lint *l, uint32_t proc);
void lu_free(van_lint *l);

/* lintdiscard.c: discard-before-unmap, free-before-dontneed,
 * discard-locked and file-map-churn, after the model applied an event
 * (before, for the locked check). */
int lnd_before(van_lint *l, uint64_t index, const struct vmt_event *ev);
int lnd_after(van_lint *l, uint64_t index, const struct vmt_event *ev);
void lnd_end_proc(van_lint *l, uint32_t proc);
void lnd_free(van_lint *l);

#endif
