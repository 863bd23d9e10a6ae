/*
 * insn.c - the access type of a page fault from the instruction that took
 * it (x86-64), for fault sources that do not give it (the software
 * page-fault events, which unprivileged users may sample).
 *
 * Only what the replay needs is decoded: does the instruction write the
 * memory it faulted on?  The prefixes, the opcode maps (legacy, 0F, 0F38,
 * 0F3A, VEX, EVEX) and the ModRM byte are read; an instruction whose
 * memory operand is its destination (a store, or a read-modify-write,
 * which the processor reports as a write) is a write.  Instructions with
 * two memory accesses (string moves, pushes and pops of memory, calls)
 * are told apart by the faulting address: the stack's side is near rsp,
 * a string move's destination at rdi.  A fault on the instruction itself
 * is an instruction fetch.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "insn_int.h"

enum { NONE, RD, WR, STACKW, STACKR, STRING, STACKW_RD, STACKR_WR, UNKNOWN };

/* The 1-byte map, for operands with mod != 3 (0: read). */
static int legacy(unsigned op, unsigned reg)
{
	switch (op) {
	case 0x00: case 0x01: case 0x08: case 0x09: case 0x10: case 0x11: case 0x18: case 0x19:
	case 0x20: case 0x21: case 0x28: case 0x29: case 0x30: case 0x31:
	case 0x86: case 0x87: case 0x88: case 0x89: case 0x8c:
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		return WR;
	case 0x80: case 0x81: case 0x83:
		return reg == 7 ? RD : WR; /* CMP reads */
	case 0x8d:
		return NONE; /* LEA */
	case 0x8f:
		return STACKR_WR; /* POP Ev */
	case 0xc6: case 0xc7:
		return reg == 0 ? WR : NONE;
	case 0xd9:
		return reg == 2 || reg == 3 || reg == 6 || reg == 7 ? WR : RD;
	case 0xdb:
		return reg == 1 || reg == 2 || reg == 3 || reg == 7 ? WR : RD;
	case 0xdd:
		return reg == 1 || reg == 2 || reg == 3 || reg == 6 || reg == 7 ? WR : RD;
	case 0xdf:
		return reg == 1 || reg == 2 || reg == 3 || reg == 6 || reg == 7 ? WR : RD;
	case 0xf6: case 0xf7:
		return reg == 2 || reg == 3 ? WR : RD; /* NOT, NEG */
	case 0xfe:
		return reg <= 1 ? WR : UNKNOWN;
	case 0xff:
		if (reg <= 1)
			return WR; /* INC, DEC */
		if (reg == 2 || reg == 3 || reg == 6)
			return STACKW_RD; /* CALL, CALLF, PUSH Ev */
		return RD;
	default:
		return RD;
	}
}

/* The 1-byte map's instructions without ModRM that touch memory. */
static int legacy_nomodrm(unsigned op)
{
	if (op >= 0x50 && op <= 0x57)
		return STACKW;
	if (op >= 0x58 && op <= 0x5f)
		return STACKR;
	switch (op) {
	case 0x68: case 0x6a: case 0x9c: case 0xc8: case 0xe8:
		return STACKW;
	case 0x9d: case 0xc2: case 0xc3: case 0xc9: case 0xca: case 0xcb: case 0xcf:
		return STACKR;
	case 0xa0: case 0xa1: case 0xa6: case 0xa7: case 0xac: case 0xad: case 0xae: case 0xaf:
	case 0xd7: case 0x6e: case 0x6f:
		return RD;
	case 0xa2: case 0xa3: case 0xaa: case 0xab: case 0x6c: case 0x6d:
		return WR;
	case 0xa4: case 0xa5:
		return STRING;
	default:
		return UNKNOWN;
	}
}

static int has_modrm_legacy(unsigned op)
{
	if (op < 0x40)
		return (op & 7) < 4;
	if ((op >= 0x62 && op <= 0x63) || op == 0x69 || op == 0x6b)
		return 1;
	if (op >= 0x80 && op <= 0x8f)
		return 1;
	if (op >= 0xc0 && op <= 0xc1)
		return 1;
	if (op >= 0xc4 && op <= 0xc7)
		return 1;
	if (op >= 0xd0 && op <= 0xd3)
		return 1;
	if (op >= 0xd8 && op <= 0xdf)
		return 1;
	if (op == 0xf6 || op == 0xf7 || op == 0xfe || op == 0xff)
		return 1;
	return 0;
}

/* The 0F map (pp: 0 none, 1 66, 2 F3, 3 F2), operand in memory. */
static int map0f(unsigned op, unsigned reg, unsigned pp)
{
	switch (op) {
	case 0x11: case 0x13: case 0x17: case 0x29: case 0x2b: case 0x7f: case 0xc3: case 0xe7:
	case 0xab: case 0xb3: case 0xbb: case 0xa4: case 0xa5: case 0xac: case 0xad:
	case 0xb0: case 0xb1: case 0xc0: case 0xc1:
		return WR;
	case 0x7e:
		return pp == 2 ? RD : WR; /* F3: movq xmm, m64 */
	case 0xd6:
		return pp == 1 ? WR : RD;
	case 0x00:
		return reg <= 1 ? WR : RD;
	case 0x01:
		return reg == 0 || reg == 1 || reg == 4 ? WR : reg == 7 ? NONE : RD;
	case 0x0d: case 0x18: case 0x19: case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e:
	case 0x1f:
		return NONE; /* prefetches, hint nops */
	case 0xae:
		return reg == 0 || reg == 3 || reg == 4 || reg == 6 ? WR : RD;
	case 0xba:
		return reg >= 5 ? WR : RD;
	case 0xc7:
		return reg == 1 || reg == 4 || reg == 5 || reg == 7 ? WR : RD;
	default:
		if (op >= 0x90 && op <= 0x9f)
			return WR; /* SETcc */
		return RD;
	}
}

static int map0f38(unsigned op, unsigned pp)
{
	if (op == 0xf1 && pp != 3)
		return WR; /* MOVBE My, Gy (F2: CRC32) */
	return RD;
}

static int map0f3a(unsigned op)
{
	return op >= 0x14 && op <= 0x17 ? WR : RD; /* PEXTR*, EXTRACTPS */
}

/* VEX and EVEX maps (evex: EVEX-only stores too). */
static int vexmap(unsigned map, unsigned op, unsigned reg, unsigned pp, int evex)
{
	switch (map) {
	case 1:
		switch (op) {
		case 0x11: case 0x13: case 0x17: case 0x29: case 0x2b: case 0x7f: case 0xe7:
			return WR;
		case 0x7e:
			return pp == 2 ? RD : WR;
		case 0xd6:
			return pp == 1 ? WR : RD;
		case 0xae:
			return reg == 3 ? WR : RD;
		case 0x18:
			return NONE;
		default:
			return RD;
		}
	case 2:
		if (op == 0x2e || op == 0x2f || op == 0x8e)
			return WR; /* masked stores */
		if (evex && (op == 0x8a || op == 0x8b || op == 0x63 || (op >= 0xa0 && op <= 0xa3)))
			return WR; /* compresses, scatters */
		return RD;
	case 3:
		if ((op >= 0x14 && op <= 0x17) || op == 0x19 || op == 0x1b || op == 0x1d || op == 0x39 ||
		    op == 0x3b)
			return WR; /* extracts */
		return RD;
	case 5:
		return op == 0x11 || op == 0x7e ? WR : RD; /* vmovsh, vmovw stores */
	default:
		return RD;
	}
}

static uint64_t pageof(uint64_t a)
{
	return a & ~4095ull;
}

/* What the instruction at c (len bytes) does to memory, from its prefixes,
 * opcode and ModRM: one of the kinds above (UNKNOWN: none, or not known). */
static int decode_kind(const unsigned char *c, size_t len)
{
	size_t i = 0;
	unsigned pp = 0;

	for (; i < len; i++) {
		unsigned b = c[i];
		if (b == 0x66)
			pp = 1;
		else if (b == 0xf3)
			pp = 2;
		else if (b == 0xf2)
			pp = 3;
		else if (b == 0xf0 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 ||
			 b == 0x65 || b == 0x67)
			;
		else
			break;
	}
	if (i < len && c[i] >= 0x40 && c[i] <= 0x4f)
		i++; /* REX */
	if (i >= len)
		return UNKNOWN;
	unsigned op = c[i++];
	if (op == 0xc5 || op == 0xc4 || op == 0x62) {
		unsigned map, vpp;
		if (op == 0xc5) {
			if (i + 1 >= len)
				return UNKNOWN;
			map = 1;
			vpp = c[i] & 3;
			i += 1;
		} else if (op == 0xc4) {
			if (i + 2 >= len)
				return UNKNOWN;
			map = c[i] & 0x1f;
			vpp = c[i + 1] & 3;
			i += 2;
		} else {
			if (i + 3 >= len)
				return UNKNOWN;
			map = c[i] & 7;
			vpp = c[i + 1] & 3;
			i += 3;
		}
		if (i + 1 >= len)
			return UNKNOWN;
		unsigned vop = c[i++], modrm = c[i];
		if ((modrm >> 6) == 3)
			return NONE; /* a register operand */
		return vexmap(map, vop, (modrm >> 3) & 7, vpp, op == 0x62);
	} else if (op == 0x0f) {
		if (i >= len)
			return UNKNOWN;
		unsigned op2 = c[i++];
		if (op2 == 0x38 || op2 == 0x3a) {
			if (i + 1 >= len)
				return UNKNOWN;
			unsigned op3 = c[i++], modrm = c[i];
			if ((modrm >> 6) == 3)
				return NONE; /* a register operand */
			return op2 == 0x38 ? map0f38(op3, pp) : map0f3a(op3);
		} else if (op2 == 0xa0 || op2 == 0xa8) {
			return STACKW; /* push fs, gs */
		} else if (op2 == 0xa1 || op2 == 0xa9) {
			return STACKR;
		} else if ((op2 >= 0x80 && op2 <= 0x8f) || (op2 >= 0xc8 && op2 <= 0xcf) || op2 == 0x05 ||
			   op2 == 0x0b || op2 == 0x31 || op2 == 0xa2) {
			return NONE; /* no ModRM, no memory */
		} else {
			if (i >= len)
				return UNKNOWN;
			unsigned modrm = c[i];
			if ((modrm >> 6) == 3)
				return op2 == 0xf7 ? WR : NONE; /* MASKMOVQ writes [rdi] */
			return map0f(op2, (modrm >> 3) & 7, pp);
		}
	} else if (has_modrm_legacy(op)) {
		if (i >= len)
			return UNKNOWN;
		unsigned modrm = c[i];
		if ((modrm >> 6) == 3)
			return NONE; /* a register operand */
		return legacy(op, (modrm >> 3) & 7);
	} else {
		return legacy_nomodrm(op);
	}
}

uint32_t vmr_insn_access(const unsigned char *c, size_t len, uint64_t ip, uint64_t addr,
			 const uint64_t *si_di_sp)
{
	if (addr >= ip && addr < ip + 16)
		return VMT_FAULT_EXEC;
	/* (an instruction that spans into the next page faulted on it) */
	if (pageof(addr) == pageof(ip + 15) && pageof(addr) != pageof(ip) && addr < ip + 16)
		return VMT_FAULT_EXEC;
	int kind = decode_kind(c, len);
	/* the stack side of an instruction with two accesses */
	int near_sp = si_di_sp && addr + 4096 > si_di_sp[2] - 64 && addr < si_di_sp[2] + 64;
	switch (kind) {
	case RD:
	case STACKR:
		return VMT_FAULT_READ;
	case WR:
	case STACKW:
		return VMT_FAULT_WRITE;
	case STACKW_RD:
		return !si_di_sp ? 0 : near_sp ? VMT_FAULT_WRITE : VMT_FAULT_READ;
	case STACKR_WR:
		return !si_di_sp ? 0 : near_sp ? VMT_FAULT_READ : VMT_FAULT_WRITE;
	case STRING:
		if (!si_di_sp)
			return 0;
		/* (rsi and rdi point at the element being moved; backwards
		 * moves, DF=1, come just below them) */
		if (pageof(addr) == pageof(si_di_sp[1]) || pageof(addr + 64) == pageof(si_di_sp[1]))
			return VMT_FAULT_WRITE;
		if (pageof(addr) == pageof(si_di_sp[0]) || pageof(addr + 64) == pageof(si_di_sp[0]))
			return VMT_FAULT_READ;
		return 0;
	default:
		return 0;
	}
}

/* ---- the bytes ------------------------------------------------------------- */

#define CODE_SLOTS 4096

struct vmr_codecache {
	struct code {
		pid_t pid;
		uint32_t len;
		uint64_t ip;
		unsigned char b[16];
	} slot[CODE_SLOTS];
};

struct vmr_codecache *vmr_codecache_new(void)
{
	return calloc(1, sizeof(struct vmr_codecache));
}

void vmr_codecache_free(struct vmr_codecache *c)
{
	free(c);
}

uint32_t vmr_codecache_access(void *ctx, pid_t pid, uint64_t ip, uint64_t addr,
			      const uint64_t *si_di_sp)
{
	struct vmr_codecache *cc = ctx;
	struct code *c = &cc->slot[(ip * 0x9e3779b97f4a7c15ull) >> 52];
	if (addr >= ip && addr < ip + 16)
		return VMT_FAULT_EXEC; /* (no need to read it) */
	if (c->pid != pid || c->ip != ip || !c->len) {
		/* (code is read again when a process reuses a pid: a later
		 * program's code at the same address is another cache entry
		 * only by luck, so the pid is part of the key) */
		struct iovec l = { c->b, sizeof(c->b) }, r = { (void *)ip, sizeof(c->b) };
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0) {
			/* the end of a mapping: what is there */
			l.iov_len = r.iov_len = 4096 - (ip & 4095) < sizeof(c->b) ? 4096 - (ip & 4095)
										     : sizeof(c->b);
			n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		}
		if (n <= 0)
			return 0;
		c->pid = pid;
		c->ip = ip;
		c->len = (uint32_t)n;
	}
	return vmr_insn_access(c->b, c->len, ip, addr, si_di_sp);
}
