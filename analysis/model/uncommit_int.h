/*
 * uncommit_int.h - what an uncommit by remap and a commit are, for the
 * prot-none-free rule (rewrite/rules_pnf.c) and its lint finding
 * (lint/lintuncommit.c), so both see the same calls.
 *
 *   uncommit  mmap(A, L, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS
 *             [|MAP_NORESERVE], -1, 0) = A over committed memory: all of
 *             [A, A+L) mapped by private anonymous VMAs with one
 *             protection other than PROT_NONE, protection key 0, not
 *             locked and without attributes that a madvise would keep
 *             but a new mapping resets (UC_BAD)
 *   commit    mprotect(C, M, P) = 0 or mmap(C, M, P, MAP_PRIVATE|
 *             MAP_FIXED|MAP_ANONYMOUS[|MAP_NORESERVE], -1, 0) = C, with
 *             P other than PROT_NONE
 * A commit re-commits an uncommitted range when it restores its
 * protection (and, for an mmap, the MAP_NORESERVE all of the range had).
 */
#ifndef VAN_UNCOMMIT_INT_H
#define VAN_UNCOMMIT_INT_H

#include <stdint.h>
#include "asmodel.h"
#include "vmtutil.h"
#include "vmtrace.h"

#define UC_BAD (VAN_VMA_LOCKED | VAN_VMA_LOCKONFAULT | VAN_VMA_GROWSDOWN | VAN_VMA_DONTFORK | \
		VAN_VMA_WIPEONFORK | VAN_VMA_DONTDUMP | VAN_VMA_HUGEPAGE | VAN_VMA_NOHUGEPAGE | \
		VAN_VMA_MERGEABLE | VAN_VMA_SEQ_READ | VAN_VMA_RAND_READ | VAN_VMA_SEALED |   \
		VAN_VMA_HUGETLB | VAN_VMA_SPECIAL | VAN_VMA_HEAP | VAN_VMA_SYSV |             \
		VAN_VMA_SNAPSHOT | VAN_VMA_SHARED | VAN_VMA_FILE)

/* What committed() finds about a range (rs_ent.flags of the ranges the
 * rule and the finding follow). */
#define UC_NORESERVE 0x1u /* its VMAs had MAP_NORESERVE */
#define UC_MIXED 0x2u	  /* some had MAP_NORESERVE, some not */
#define UC_CHARGED 0x4u	  /* some were charged to the commit limit (VM_ACCOUNT) */

/* sc is an uncommit-shaped mmap (the model decides the rest). */
int uc_is_uncommit(const struct vmt_syscall *sc, uint64_t page_mask);

/* sc is a commit: *prot its protection, *noreserve 1 or 0 for an mmap,
 * -1 for an mprotect (which keeps the VMAs' own). */
int uc_is_commit(const struct vmt_syscall *sc, uint64_t page_mask, uint32_t *prot, int *noreserve);

/* The model shows [a, b) of proc as committed memory an uncommit may give
 * back with madvise: 1 with *prot and *flags (UC_*) set, else 0. */
int uc_committed(const van_asmodel *m, uint32_t proc, uint64_t a, uint64_t b, uint32_t *prot,
		 uint32_t *flags);

/* A commit with protection prot and noreserve (as uc_is_commit sets it)
 * restores range e (e->prot, e->flags as uc_committed set them). */
int uc_restores(const struct vmt_rset_ent *e, uint32_t prot, int noreserve);

/* 1 if the recording options of h say the recording ran under strict
 * overcommit ("overcommit=2": vm.overcommit_memory was 2), where an
 * uncommit drops a commit charge the program may need. */
int uc_strict_overcommit(const struct vmt_header *h);

#endif
