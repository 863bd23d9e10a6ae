/*
 * symbolize.h - where each recorded ip lives (module file and file offset,
 * noted while the process is alive) and, when recording ends, its function
 * name from the module's ELF symbols: the STRING and SYMBOL events that make
 * a trace's stacks readable on another machine.  Used by stacks.c.
 */
#ifndef VMREC_SYMBOLIZE_H
#define VMREC_SYMBOLIZE_H

#include "vmtrace.h"

struct vmr_syms;

/* An empty table, or NULL (out of memory). */
struct vmr_syms *vmr_syms_new(void);

/* Index of the module (path, dev, ino) as /proc/PID/maps shows it, added
 * when new; VMT_NONE when out of memory.  A file replaced at the same path
 * (other inode) is another module. */
uint32_t vmr_syms_module(struct vmr_syms *y, const char *path, uint64_t dev,
			 uint64_t ino);

/* Path, dev and inode of module idx (as given to vmr_syms_module).
 * Returns 0, or -ENOENT for an unknown index. */
int vmr_syms_module_info(const struct vmr_syms *y, uint32_t idx,
			 const char **path, uint64_t *dev, uint64_t *ino);

/* 1 when ip has been placed already, else 0. */
int vmr_syms_has(const struct vmr_syms *y, uint64_t ip);

/* Place a new ip: in module `module` at file offset file_off, or (module
 * VMT_NONE) outside any file.  The first placement of an ip wins.  Returns
 * 0 or -ENOMEM. */
int vmr_syms_add(struct vmr_syms *y, uint64_t ip, uint32_t module,
		 uint64_t file_off);

/* Append STRING and SYMBOL events (thread 0, proc 0, time ts) for every
 * placed ip, reading each module file once; modules are looked for in
 * their path (checked against the recorded inode), "[vdso]" in the
 * recorder's own vdso, debug files under debug_root (NULL: none).  Returns
 * 0 or the first writer error / -ENOMEM. */
int vmr_syms_write(struct vmr_syms *y, vmt_writer *w, uint64_t ts,
		   const char *debug_root);

/* Distinct ips placed and distinct modules seen. */
void vmr_syms_counts(const struct vmr_syms *y, uint64_t *ips,
		     uint64_t *modules);

void vmr_syms_free(struct vmr_syms *y); /* NULL is fine */

#endif /* VMREC_SYMBOLIZE_H */
