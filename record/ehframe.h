/*
 * ehframe.h - where a module's unwind table (.eh_frame_hdr) is, read once
 * per module file, so that stacks.c can hand libunwind the table of the
 * module an ip is in without libunwind-ptrace's per-lookup work (it rereads
 * /proc/PID/maps and maps the whole file each time the module changes).
 */
#ifndef VMREC_EHFRAME_H
#define VMREC_EHFRAME_H

#include <stdint.h>

#define EHF_MAX_LOADS 32

enum ehf_state {
	EHF_UNKNOWN = 0, /* not read yet */
	EHF_OK = 1,	 /* has a binary-search table */
	EHF_NONE = -1,	 /* file unreadable, or no .eh_frame_hdr */
	EHF_ODD = -2,	 /* a table encoding we (and libunwind) do not take */
};

struct ehf_module {
	int state;		/* enum ehf_state */
	uint64_t hdr_vaddr;	/* .eh_frame_hdr, ELF virtual address */
	uint64_t table_off;	/* its search table, from hdr_vaddr */
	uint64_t fde_count;	/* entries (8 bytes each) */
	uint64_t gp;		/* DT_PLTGOT, as libunwind-ptrace sets it */
	struct {
		uint64_t offset, vaddr, filesz;
	} loads[EHF_MAX_LOADS];
	unsigned nloads;
};

/* Read the program headers and the .eh_frame_hdr header of the ELF file
 * on fd into *m (m->state says the outcome).  Never fails otherwise. */
void ehf_load(struct ehf_module *m, int fd);

/* Load bias of the module in a process where the mapping starting at
 * map_start maps file offset map_off, found through the PT_LOAD holding
 * file offset ip_off (an ip's).  Returns 0, or -1 when none holds it. */
int ehf_bias(const struct ehf_module *m, uint64_t map_start, uint64_t map_off,
	     uint64_t ip_off, uint64_t *bias);

#endif /* VMREC_EHFRAME_H */
