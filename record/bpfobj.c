/*
 * bpfobj.c - the stream backend's compiled BPF programs (bpf/stream.bpf.c),
 * carried inside vmrec: the build compiles them with clang's BPF target
 * and VMR_BPF_OBJ names the object file that is embedded here.
 */
#include "record_int.h"

#ifndef VMR_BPF_OBJ
#error "VMR_BPF_OBJ: the path of the compiled BPF object (see the Makefile)"
#endif

__asm__(".section .rodata\n"
	".balign 8\n"
	".global vmr_bpf_obj\n"
	"vmr_bpf_obj:\n"
	".incbin \"" VMR_BPF_OBJ "\"\n"
	".global vmr_bpf_obj_end\n"
	"vmr_bpf_obj_end:\n"
	".previous\n");
