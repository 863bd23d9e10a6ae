/*
 * ehframe.c - locate a module's .eh_frame_hdr search table.
 *
 * Only the headers are read (bounded preads); the table itself is read by
 * libunwind from the tracee's memory, where the module is mapped anyway.
 * Layout of .eh_frame_hdr (LSB "Exception Frame Header"): version (1),
 * eh_frame_ptr encoding, fde_count encoding, table encoding (1 byte each),
 * eh_frame_ptr, fde_count, then fde_count pairs (initial location, FDE
 * address), each datarel|sdata4 in practice.
 */
#include "ehframe.h"
#include "vmtrace.h"
#include "vmtutil.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_datarel 0x30
#define MAX_PHDRS 4096u

static int rd(int fd, uint64_t off, void *buf, size_t len, uint64_t size)
{
	if (off > size || len > size - off)
		return -1;
	return vmt_pread_full(fd, buf, len, off) ? -1 : 0;
}

/* Size of a pointer with encoding enc (low nibble), or 0 if unsupported. */
static unsigned enc_size(unsigned char enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8: return 8;
	default: return 0;
	}
}

void ehf_load(struct ehf_module *m, int fd)
{
	memset(m, 0, sizeof(*m));
	m->state = EHF_NONE;
	struct stat st;
	Elf64_Ehdr eh;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	uint64_t size = (uint64_t)st.st_size;
	if (rd(fd, 0, &eh, sizeof(eh), size) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > MAX_PHDRS)
		return;
	Elf64_Phdr eh_frame = { .p_type = PT_NULL }, dyn = { .p_type = PT_NULL };
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (rd(fd, eh.e_phoff + (uint64_t)i * sizeof(ph), &ph, sizeof(ph),
		       size))
			return;
		if (ph.p_type == PT_LOAD && m->nloads < EHF_MAX_LOADS) {
			m->loads[m->nloads].offset = ph.p_offset;
			m->loads[m->nloads].vaddr = ph.p_vaddr;
			m->loads[m->nloads].filesz = ph.p_filesz;
			m->nloads++;
		} else if (ph.p_type == PT_GNU_EH_FRAME) {
			eh_frame = ph;
		} else if (ph.p_type == PT_DYNAMIC) {
			dyn = ph;
		}
	}
	if (eh_frame.p_type == PT_NULL || eh_frame.p_filesz < 4)
		return;
	unsigned char h[4 + 8 + 8];
	size_t n = eh_frame.p_filesz < sizeof(h) ? eh_frame.p_filesz : sizeof(h);
	memset(h, 0, sizeof(h));
	if (rd(fd, eh_frame.p_offset, h, n, size))
		return;
	/* version 1; a count we can read; the one table encoding libunwind
	 * searches (it aborts on others) */
	unsigned psz = enc_size(h[1]), csz = enc_size(h[2]);
	if (h[0] != 1 || h[1] == DW_EH_PE_omit || h[2] == DW_EH_PE_omit ||
	    !psz || !csz || (h[2] & 0x70) != 0 ||
	    h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || 4 + psz + csz > n) {
		m->state = EHF_ODD;
		return;
	}
	uint64_t count = 0;
	if (csz == 4) {
		uint32_t c;
		memcpy(&c, h + 4 + psz, 4);
		count = c;
	} else {
		memcpy(&count, h + 4 + psz, 8);
	}
	m->table_off = 4 + psz + csz;
	if (count == 0 || count > (eh_frame.p_filesz - m->table_off) / 8) {
		m->state = EHF_ODD;
		return;
	}
	m->hdr_vaddr = eh_frame.p_vaddr;
	m->fde_count = count;
	/* gp = DT_PLTGOT, unrelocated, as libunwind-ptrace does. */
	for (uint64_t off = 0; dyn.p_type == PT_DYNAMIC &&
			       off + sizeof(Elf64_Dyn) <= dyn.p_filesz &&
			       off < (64u << 10);
	     off += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		if (rd(fd, dyn.p_offset + off, &d, sizeof(d), size) ||
		    d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_PLTGOT) {
			m->gp = d.d_un.d_ptr;
			break;
		}
	}
	m->state = EHF_OK;
}

int ehf_bias(const struct ehf_module *m, uint64_t map_start, uint64_t map_off,
	     uint64_t ip_off, uint64_t *bias)
{
	for (unsigned i = 0; i < m->nloads; i++) {
		if (ip_off >= m->loads[i].offset &&
		    ip_off - m->loads[i].offset < m->loads[i].filesz) {
			/* file offset X is at bias + vaddr + (X - offset) */
			*bias = map_start - map_off - m->loads[i].vaddr +
				m->loads[i].offset;
			return 0;
		}
	}
	return -1;
}
