/*
 * sim_int.h - what the address-space simulation's files (sim.c, simtouch.c,
 * simspace.c) share beyond load_int.h.  Internal.
 */
#ifndef VMREPLAY_SIM_INT_H
#define VMREPLAY_SIM_INT_H

#include "load_int.h"


#endif
