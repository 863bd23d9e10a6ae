/*
 * linux_abi.h - the Linux ABI values that traces carry: PROT_*, MAP_*,
 * MADV_*, MLOCK_*, MCL_*, MREMAP_*, MS_* and SHM_* under an LX_ prefix.
 *
 * A trace holds the raw argument values of the recording architecture
 * (vmtrace(5), "Raw argument values").  Every architecture vmrec records,
 * x86-64 and arm64, uses the asm-generic numbering, written here once as
 * literals: a trace is read on machines other than the one that recorded
 * it, and the build machine's libc headers may be older than the kernel
 * that made the trace (MADV_GUARD_INSTALL, MAP_DROPPABLE, ...).  Code that
 * interprets a recorded value uses LX_*; code that makes a call on this
 * machine uses the libc names, whose missing ones are supplied at the end.
 *
 * This header is part of libvmtrace's public interface.
 */
#ifndef VMTRACE_LINUX_ABI_H
#define VMTRACE_LINUX_ABI_H

/* ---- mmap, mprotect: prot ---------------------------------------------- */
#define LX_PROT_NONE 0x0u
#define LX_PROT_READ 0x1u
#define LX_PROT_WRITE 0x2u
#define LX_PROT_EXEC 0x4u
#define LX_PROT_RWX 0x7u
#define LX_PROT_SEM 0x8u
#define LX_PROT_GROWSDOWN 0x01000000u
#define LX_PROT_GROWSUP 0x02000000u

/* ---- mmap: flags ---------------------------------------------------------
 * The MAP_TYPE field (mask LX_MAP_TYPE) holds a value; the rest are bits.
 * MAP_HUGE_* sizes are a 6-bit log2 field at LX_MAP_HUGE_SHIFT. */
#define LX_MAP_TYPE 0x0fu
#define LX_MAP_SHARED 0x01u
#define LX_MAP_PRIVATE 0x02u
#define LX_MAP_SHARED_VALIDATE 0x03u
#define LX_MAP_DROPPABLE 0x08u /* Linux 6.11 */
#define LX_MAP_FIXED 0x10u
#define LX_MAP_ANONYMOUS 0x20u
#define LX_MAP_32BIT 0x40u /* x86 only */
#define LX_MAP_GROWSDOWN 0x100u
#define LX_MAP_DENYWRITE 0x800u
#define LX_MAP_EXECUTABLE 0x1000u
#define LX_MAP_LOCKED 0x2000u
#define LX_MAP_NORESERVE 0x4000u
#define LX_MAP_POPULATE 0x8000u
#define LX_MAP_NONBLOCK 0x10000u
#define LX_MAP_STACK 0x20000u
#define LX_MAP_HUGETLB 0x40000u
#define LX_MAP_SYNC 0x80000u
#define LX_MAP_FIXED_NOREPLACE 0x100000u
#define LX_MAP_UNINITIALIZED 0x4000000u
#define LX_MAP_HUGE_SHIFT 26
#define LX_MAP_HUGE_MASK 0x3fu

/* ---- madvise: advice (values, not bits) --------------------------------- */
#define LX_MADV_NORMAL 0
#define LX_MADV_RANDOM 1
#define LX_MADV_SEQUENTIAL 2
#define LX_MADV_WILLNEED 3
#define LX_MADV_DONTNEED 4
#define LX_MADV_FREE 8
#define LX_MADV_REMOVE 9
#define LX_MADV_DONTFORK 10
#define LX_MADV_DOFORK 11
#define LX_MADV_MERGEABLE 12
#define LX_MADV_UNMERGEABLE 13
#define LX_MADV_HUGEPAGE 14
#define LX_MADV_NOHUGEPAGE 15
#define LX_MADV_DONTDUMP 16
#define LX_MADV_DODUMP 17
#define LX_MADV_WIPEONFORK 18
#define LX_MADV_KEEPONFORK 19
#define LX_MADV_COLD 20
#define LX_MADV_PAGEOUT 21
#define LX_MADV_POPULATE_READ 22
#define LX_MADV_POPULATE_WRITE 23
#define LX_MADV_DONTNEED_LOCKED 24
#define LX_MADV_COLLAPSE 25
#define LX_MADV_HWPOISON 100
#define LX_MADV_SOFT_OFFLINE 101
#define LX_MADV_GUARD_INSTALL 102
#define LX_MADV_GUARD_REMOVE 103

/* ---- mlock2, mlockall, mremap, msync, shmat ----------------------------- */
#define LX_MLOCK_ONFAULT 0x1u
#define LX_MCL_CURRENT 0x1u
#define LX_MCL_FUTURE 0x2u
#define LX_MCL_ONFAULT 0x4u
#define LX_MREMAP_MAYMOVE 0x1u
#define LX_MREMAP_FIXED 0x2u
#define LX_MREMAP_DONTUNMAP 0x4u
#define LX_MS_ASYNC 0x1u
#define LX_MS_INVALIDATE 0x2u
#define LX_MS_SYNC 0x4u
#define LX_SHM_RDONLY 010000u
#define LX_SHM_RND 020000u
#define LX_SHM_REMAP 040000u
#define LX_SHM_EXEC 0100000u

/* ---- This machine's names that older libc headers lack -------------------
 * For calls made here (replay, workloads): where the libc lacks a name,
 * this machine is one of the asm-generic architectures above. */
#include <sys/mman.h>
#include <sys/shm.h>
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE LX_MAP_FIXED_NOREPLACE
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP LX_MREMAP_DONTUNMAP
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT LX_MLOCK_ONFAULT
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT LX_MCL_ONFAULT
#endif
#ifndef MADV_FREE
#define MADV_FREE LX_MADV_FREE
#endif
#ifndef MADV_COLD
#define MADV_COLD LX_MADV_COLD
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT LX_MADV_PAGEOUT
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ LX_MADV_POPULATE_READ
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE LX_MADV_POPULATE_WRITE
#endif
#ifndef SHM_EXEC
#define SHM_EXEC LX_SHM_EXEC
#endif
/* Syscalls added since Linux 5.1 have one number on every architecture. */
#include <sys/syscall.h>
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_mseal
#define SYS_mseal 462
#endif

#endif /* VMTRACE_LINUX_ABI_H */
