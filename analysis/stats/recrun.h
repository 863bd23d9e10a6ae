/*
 * recrun.h - the recorded run's own counters in a trace (its COUNTERS
 * records and the waits of its calls, vmtrace(5)), summed as the program
 * itself made them: the root's launch (its counters at the exec that
 * started the recording) and the recorder's own stops taken off.  What
 * `vmtrace diff TRACE RESULT` holds a replay against (vmreplay(1),
 * FIDELITY, counts the same way).
 *
 * Conventions as in the other engines: 0 or a negative errno, no printing.
 */
#ifndef VAN_RECRUN_H
#define VAN_RECRUN_H

#include <stdint.h>
#include "vmtrace.h"

struct van_recrun {
	uint64_t counters;	 /* COUNTERS records (0: a trace without them) */
	uint32_t procs;		 /* processes of the trace */
	uint32_t procs_missing;	 /* of those, without counters (left out) */
	uint64_t minflt, majflt; /* of the processes with counters */
	uint64_t vcs, ivcs;	 /* voluntary less the recorder's stops */
	int have_off_cpu;	 /* every call has its waits (a stream recording) */
	uint64_t off_cpu_ns;	 /* the calls' time off CPU, summed */
	uint64_t span_ns;	 /* first to last event */
	uint16_t minor;		 /* the trace's format version */
};

/* Read every event of r (from where it is) into *out.  Returns 0, -ENOMEM,
 * or the reader's error (its message says where). */
int van_recrun_read(vmt_reader *r, struct van_recrun *out);

#endif
