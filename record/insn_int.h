/*
 * insn_int.h - the access type of a page fault from its instruction (insn.c).
 * Internal to record/.
 */
#ifndef VMREC_INSN_INT_H
#define VMREC_INSN_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "vmtrace.h"

/* The access (VMT_FAULT_READ, _WRITE or _EXEC) of a fault at data
 * address addr taken by the instruction at ip, whose first len bytes (up
 * to 15) are c; si_di_sp: the faulting moment's rsi, rdi and rsp, or NULL
 * (then instructions with two memory accesses give 0).  0 when it cannot
 * tell (no memory operand, bytes that do not decode). */
uint32_t vmr_insn_access(const unsigned char *c, size_t len, uint64_t ip, uint64_t addr,
			 const uint64_t *si_di_sp);

/* Instruction bytes read from the faulting processes (process_vm_readv),
 * by (pid, ip), for vmr_codecache_access.  NULL without memory. */
struct vmr_codecache;
struct vmr_codecache *vmr_codecache_new(void);
void vmr_codecache_free(struct vmr_codecache *c);
/* A vmr_faults_access_fn (ctx: the cache): the access type of a fault of
 * process pid from its instruction, 0 when the bytes cannot be read (the
 * process is gone) or do not tell. */
uint32_t vmr_codecache_access(void *ctx, pid_t pid, uint64_t ip, uint64_t addr,
			      const uint64_t *si_di_sp);

#endif
