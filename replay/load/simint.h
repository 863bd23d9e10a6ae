/*
 * simint.h - what the address-space simulation's files (sim.c, simtouch.c,
 * simspace.c) share beyond loadint.h.  Internal.
 */
#ifndef VMREPLAY_SIMINT_H
#define VMREPLAY_SIMINT_H

#include "loadint.h"


#endif
