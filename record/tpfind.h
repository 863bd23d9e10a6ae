/*
 * tpfind.h - find a kernel tracepoint's id and the layout of its raw
 * record, for perf_event_open(PERF_TYPE_TRACEPOINT).
 */
#ifndef VMREC_TPFIND_H
#define VMREC_TPFIND_H

#include <stddef.h>
#include <stdint.h>

struct tp_field {
	char name[32];
	uint32_t offset, size; /* in the raw record */
};

#define TP_MAX_FIELDS 16

struct tp_info {
	uint32_t id;
	unsigned nfields;
	struct tp_field fields[TP_MAX_FIELDS];
};

/* Read events/<sys>/<name>/{id,format} from tracefs: where it is mounted
 * (/sys/kernel/tracing, /sys/kernel/debug/tracing), else through a private
 * mount of tracefs made by a short-lived child process in its own mount
 * namespace (needs CAP_SYS_ADMIN; nothing changes outside the child).
 * Returns 0, -ENOENT when the tracepoint does not exist, or another -errno
 * (-EPERM/-EACCES when tracefs cannot be read or mounted). */
int tp_find(const char *sys, const char *name, struct tp_info *out);

/* Parse the text of a format file into *out (id excluded).  Returns 0 or
 * -EINVAL.  (Split out for tests.) */
int tp_parse_format(const char *text, struct tp_info *out);

/* The field called name, or NULL. */
const struct tp_field *tp_field(const struct tp_info *tp, const char *name);

#endif /* VMREC_TPFIND_H */
