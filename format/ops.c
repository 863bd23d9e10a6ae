/*
 * ops.c - the op table of libvmtrace: for every op, its names, its
 * arguments and result as the decoder and the renderer see them, and the
 * part of the address space it acts on and what it may do there, for the
 * recorder, the replayer and the analyses alike.
 */
#include <string.h>

#include "linux_abi.h"
#include "vmtrace.h"

/* Short aliases keep the table below readable. */
#define A_ADDR VMT_ARG_ADDR
#define A_LEN VMT_ARG_LEN
#define A_PROT VMT_ARG_PROT
#define A_MAPF VMT_ARG_MAP_FLAGS
#define A_FD VMT_ARG_FD
#define A_OFF VMT_ARG_OFF
#define A_MADV VMT_ARG_MADV
#define A_MLOCK2 VMT_ARG_MLOCK2
#define A_MCL VMT_ARG_MCL
#define A_MREMAP VMT_ARG_MREMAP
#define A_MS VMT_ARG_MS
#define A_INT VMT_ARG_INT
#define A_HEX VMT_ARG_HEX
#define A_SHM VMT_ARG_SHMFLG

#define NO VMT_NO_ARG
#define LAYOUT VMT_OPE_LAYOUT
#define DISCARD VMT_OPE_DISCARD
#define QUERY VMT_OPE_QUERY
#define ROUNDS VMT_OPE_ROUNDS

/*
 * Argument lists follow the kernel prototypes (SYSCALL_DEFINEn), not the
 * libc wrappers.  The sysname is the name libseccomp resolves on x86_64 and
 * aarch64; both architectures have every one of these syscalls under the
 * same name (aarch64 has mmap, not mmap2; shmat is a real syscall on both).
 * Each row ends with the range, the address and length argument indexes
 * and the effects.
 */
static const struct vmt_op_info op_table[VMT_OP__COUNT] = {
	[VMT_OP_MMAP] = {"mmap", "mmap", 6,
			 {A_ADDR, A_LEN, A_PROT, A_MAPF, A_FD, A_OFF},
			 VMT_RET_ADDR, VMT_RANGE_MAP, 0, 1, LAYOUT | DISCARD},
	[VMT_OP_MUNMAP] = {"munmap", "munmap", 2, {A_ADDR, A_LEN},
			   VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, LAYOUT | DISCARD},
	[VMT_OP_MPROTECT] = {"mprotect", "mprotect", 3,
			     {A_ADDR, A_LEN, A_PROT}, VMT_RET_INT,
			     VMT_RANGE_ARGS, 0, 1, 0},
	/* pkey_mprotect(start, len, prot, int pkey) */
	[VMT_OP_PKEY_MPROTECT] = {"pkey_mprotect", "pkey_mprotect", 4,
				  {A_ADDR, A_LEN, A_PROT, A_INT},
				  VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, 0},
	[VMT_OP_MADVISE] = {"madvise", "madvise", 3, {A_ADDR, A_LEN, A_MADV},
			    VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, DISCARD},
	/* process_madvise(int pidfd, const struct iovec *vec, size_t vlen,
	 * int behavior, unsigned int flags); returns bytes advised, which
	 * fits the "int or -errno" rendering.  The iovecs (the ranges) are
	 * not recorded. */
	[VMT_OP_PROCESS_MADVISE] = {"process_madvise", "process_madvise", 5,
				    {A_FD, A_ADDR, A_LEN, A_MADV, A_HEX},
				    VMT_RET_INT, VMT_RANGE_NONE, NO, NO, 0},
	[VMT_OP_MLOCK] = {"mlock", "mlock", 2, {A_ADDR, A_LEN}, VMT_RET_INT,
			  VMT_RANGE_ARGS, 0, 1, ROUNDS},
	[VMT_OP_MLOCK2] = {"mlock2", "mlock2", 3, {A_ADDR, A_LEN, A_MLOCK2},
			   VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, ROUNDS},
	[VMT_OP_MUNLOCK] = {"munlock", "munlock", 2, {A_ADDR, A_LEN},
			    VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, ROUNDS},
	[VMT_OP_MLOCKALL] = {"mlockall", "mlockall", 1, {A_MCL}, VMT_RET_INT,
			     VMT_RANGE_ALL, NO, NO, 0},
	[VMT_OP_MUNLOCKALL] = {"munlockall", "munlockall", 0, {0},
			       VMT_RET_INT, VMT_RANGE_ALL, NO, NO, 0},
	/* mremap(addr, old_len, new_len, flags, new_addr) */
	[VMT_OP_MREMAP] = {"mremap", "mremap", 5,
			   {A_ADDR, A_LEN, A_LEN, A_MREMAP, A_ADDR},
			   VMT_RET_ADDR, VMT_RANGE_REMAP, 0, 1,
			   LAYOUT | DISCARD},
	[VMT_OP_BRK] = {"brk", "brk", 1, {A_ADDR}, VMT_RET_ADDR,
			VMT_RANGE_BREAK, 0, NO, LAYOUT | DISCARD},
	[VMT_OP_MSYNC] = {"msync", "msync", 3, {A_ADDR, A_LEN, A_MS},
			  VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, QUERY},
	/* mincore(start, len, unsigned char *vec) */
	[VMT_OP_MINCORE] = {"mincore", "mincore", 3, {A_ADDR, A_LEN, A_ADDR},
			    VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, QUERY},
	/* remap_file_pages(start, size, prot, pgoff, flags): pgoff counts
	 * pages, so it is shown in decimal like a length; prot must be 0
	 * and flags may only hold MAP_NONBLOCK, but show what was passed.
	 * The kernel rounds start and size down to pages. */
	[VMT_OP_REMAP_FILE_PAGES] = {"remap_file_pages", "remap_file_pages", 5,
				     {A_ADDR, A_LEN, A_PROT, A_LEN, A_MAPF},
				     VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, ROUNDS},
	/* shmat(int shmid, const void *shmaddr, int shmflg) */
	[VMT_OP_SHMAT] = {"shmat", "shmat", 3, {A_INT, A_ADDR, A_SHM},
			  VMT_RET_ADDR, VMT_RANGE_SEGMENT, 1, NO, LAYOUT},
	[VMT_OP_SHMDT] = {"shmdt", "shmdt", 1, {A_ADDR}, VMT_RET_INT,
			  VMT_RANGE_SEGMENT, 0, NO, LAYOUT | DISCARD},
	/* mseal(start, len, unsigned long flags): no flags defined yet. */
	[VMT_OP_MSEAL] = {"mseal", "mseal", 3, {A_ADDR, A_LEN, A_HEX},
			  VMT_RET_INT, VMT_RANGE_ARGS, 0, 1, 0},
};

const struct vmt_op_info *vmt_op_info(uint32_t op)
{
	if (op == 0 || op >= VMT_OP__COUNT || !op_table[op].name)
		return NULL;
	return &op_table[op];
}

const char *vmt_op_name(uint32_t op)
{
	const struct vmt_op_info *oi = vmt_op_info(op);

	return oi ? oi->name : NULL;
}

uint32_t vmt_op_from_name(const char *name)
{
	if (!name)
		return 0;
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++)
		if (op_table[op].name && strcmp(op_table[op].name, name) == 0)
			return op;
	return 0;
}

/* ---- What a call acts on ------------------------------------------------ */

int vmt_madv_discards(uint64_t advice)
{
	return advice == LX_MADV_DONTNEED || advice == LX_MADV_FREE ||
	       advice == LX_MADV_REMOVE || advice == LX_MADV_DONTNEED_LOCKED;
}

int vmt_sc_discards(const struct vmt_syscall *sc)
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	const uint64_t *a = sc->args;

	if (!oi || !(oi->effects & VMT_OPE_DISCARD))
		return 0;
	switch (oi->range) {
	case VMT_RANGE_MAP:
		return (a[3] & LX_MAP_FIXED) && !(a[3] & LX_MAP_FIXED_NOREPLACE);
	case VMT_RANGE_REMAP:
		return a[2] < a[1] || (a[3] & (LX_MREMAP_MAYMOVE | LX_MREMAP_FIXED));
	default:
		break;
	}
	if (sc->op == VMT_OP_MADVISE)
		return vmt_madv_discards(a[2]);
	return 1;
}

/* The end of len bytes at a, rounded up to a page, clamped at the top. */
static uint64_t range_end(uint64_t mask, uint64_t a, uint64_t len)
{
	uint64_t l = len + mask < len ? UINT64_MAX : (len + mask) & ~mask;
	return a + l < a ? UINT64_MAX & ~mask : a + l;
}

int vmt_sc_ranges(const struct vmt_syscall *sc, uint64_t page_size,
		  struct vmt_range r[2])
{
	const struct vmt_op_info *oi = vmt_op_info(sc->op);
	const uint64_t *a = sc->args, mask = page_size - 1;
	uint64_t res = (uint64_t)sc->result;
	int ok = !(sc->flags & VMT_SC_NO_RESULT) && !vmt_is_errno(sc->result);

	if (!oi)
		return 0;
	switch (oi->range) {
	case VMT_RANGE_ARGS: {
		uint64_t s = a[oi->addr_arg], len = a[oi->len_arg];
		if (oi->effects & VMT_OPE_ROUNDS) {
			len += s & mask;
			s &= ~mask;
		}
		r[0] = (struct vmt_range){s, range_end(mask, s, len)};
		return 1;
	}
	case VMT_RANGE_MAP:
		if (a[3] & (LX_MAP_FIXED | LX_MAP_FIXED_NOREPLACE)) {
			r[0] = (struct vmt_range){a[0], range_end(mask, a[0], a[1])};
			return 1;
		}
		if (!ok)
			return 0;
		r[0] = (struct vmt_range){res, range_end(mask, res, a[1])};
		return 1;
	case VMT_RANGE_REMAP:
		r[0] = (struct vmt_range){a[0], range_end(mask, a[0], a[1])};
		if (ok) {
			r[1] = (struct vmt_range){res, range_end(mask, res, a[2])};
			return 2;
		}
		if (a[3] & LX_MREMAP_FIXED) {
			r[1] = (struct vmt_range){a[4], range_end(mask, a[4], a[2])};
			return 2;
		}
		return 1;
	case VMT_RANGE_SEGMENT:
		if (sc->op == VMT_OP_SHMAT) {
			/* The segment's size is not in the call: a remap
			 * may replace anything at the address. */
			if (a[2] & LX_SHM_REMAP)
				return -1;
			if (!ok)
				return 0;
			r[0] = (struct vmt_range){res, res + mask + 1};
			return 1;
		}
		r[0].start = a[0] & ~mask;
		r[0].end = r[0].start + mask + 1;
		return 1;
	case VMT_RANGE_ALL:
		return -1;
	default: /* VMT_RANGE_NONE, VMT_RANGE_BREAK */
		return 0;
	}
}
