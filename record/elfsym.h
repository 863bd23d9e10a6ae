/*
 * elfsym.h - a small, defensive reader of ELF64 function symbols, used to
 * symbolize recorded ips when recording ends (record/stacks.c).
 *
 * It reads only what it needs with bounded preads (never mmap, so a file
 * truncated under us cannot SIGBUS the recorder) and checks every offset,
 * size and count against the file size and fixed caps.  Bad or foreign
 * files give an error, never a crash.
 */
#ifndef VMREC_ELFSYM_H
#define VMREC_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

struct elfsym_fn {
	uint64_t addr, size; /* ELF virtual address (before load bias) */
	const char *name;    /* points into elfsym.strs */
};

struct elfsym_load {
	uint64_t offset, vaddr, filesz; /* a PT_LOAD segment */
};

#define ELFSYM_MAX_LOADS 32

struct elfsym {
	struct elfsym_fn *fns; /* sorted by addr, then by preference */
	size_t nfns;
	char **strs; /* string tables the names point into */
	size_t nstrs;
	struct elfsym_load loads[ELFSYM_MAX_LOADS];
	unsigned nloads;
	uint8_t build_id[64];
	unsigned build_id_len;
	int from_symtab; /* names came from a .symtab (own or debug file) */
};

/* Read the function symbols of the ELF file open on fd: its .symtab, else
 * the .symtab of its separate debug file under debug_root (may be NULL;
 * normally "/usr/lib/debug") found by build id, else its .dynsym.  Returns
 * 0, -ENOEXEC for a file that is not a native ELF64, -ENOMEM, or -errno. */
int elfsym_load_fd(struct elfsym *e, int fd, const char *debug_root);

/* The same for an ELF image in memory (the vdso), size bytes at p. */
int elfsym_load_mem(struct elfsym *e, const void *p, size_t size);

/* Virtual address of file offset off (through the PT_LOAD holding it).
 * Returns 0, or -ENOENT when no segment holds it. */
int elfsym_vaddr(const struct elfsym *e, uint64_t off, uint64_t *vaddr);

/* The function holding virtual address a, or NULL. */
const struct elfsym_fn *elfsym_lookup(const struct elfsym *e, uint64_t a);

void elfsym_free(struct elfsym *e); /* leaves *e empty; may be repeated */

#endif /* VMREC_ELFSYM_H */
