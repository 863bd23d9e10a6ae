/*
 * simint.h - what the address-space simulation's files (sim.c, simtouch.c,
 * simspace.c) share beyond loadint.h.  Internal.
 */
#ifndef VMREPLAY_SIMINT_H
#define VMREPLAY_SIMINT_H

#include "loadint.h"

/* A further attribute of a recorded mapping (rpam_val.attr, beside
 * loadint.h's): it maps a file (not /dev/zero, not a SysV segment).  A
 * present page of a private file mapping that the recorder saw in the
 * page cache was only read: written, it would be the process's own copy. */
#define AT_FILE 0x20u

#endif
