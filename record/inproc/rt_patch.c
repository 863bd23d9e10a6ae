/*
 * rt_patch.c - the fast path: call sites of the recorded calls rewritten,
 * in memory, to call the runtime directly instead of trapping.
 *
 * A site is the 7 bytes `mov $NR, %eax; syscall` (b8 NR 00 00 00 0f 05),
 * which is how glibc's wrappers (and its internal aliases: they are the
 * same code), ld.so's, and static programs' make the calls.  The mov
 * becomes a jmp to a stub within 2 GiB (a page of stubs the runtime maps
 * near the code); the syscall instruction stays, so code that jumps to it
 * directly still traps.  The stub loads the number and the return
 * address and jumps to rt_fast_entry.
 *
 * A site is found when it traps (the SIGSYS handler calls
 * rt_patch_site); the first one found in a shared object also has the
 * other wrappers of that object, found by name in its dynamic symbols,
 * patched at once, so that a call first made later, when the program has
 * threads, does not trap.  Only a single-threaded process is patched: the
 * bytes are written with /proc/self/mem (no mprotect of the program's
 * code), not atomically, and no other thread may be executing them.
 */
#include "rt.h"

static const struct {
	const char *name;
	int nr;
} wrappers[] = {
	{ "mmap", 9 },	      { "mmap64", 9 },	    { "__mmap", 9 },	      { "munmap", 11 },
	{ "__munmap", 11 },   { "mprotect", 10 },   { "__mprotect", 10 },     { "madvise", 28 },
	{ "__madvise", 28 },  { "mremap", 25 },	    { "__mremap", 25 },	      { "brk", 12 },
	{ "__brk", 12 },      { "mlock", 149 },	    { "munlock", 150 },	      { "mlockall", 151 },
	{ "munlockall", 152 }, { "mlock2", 325 },   { "msync", 26 },	      { "mincore", 27 },
	{ "shmat", 30 },      { "shmdt", 67 },	    { "pkey_mprotect", 329 }, { "remap_file_pages", 216 },
	{ "process_madvise", 440 }, { "mseal", 462 }, { "pthread_sigmask", 14 }, { "sigprocmask", 14 },
};

static int patchable(long nr)
{
	return nr == NR_rt_sigprocmask || (nr >= 0 && nr < IP_MAX_NR && rt_params.op_of_nr[nr]);
}

static int in_reach(uint64_t from, uint64_t to)
{
	int64_t d = (int64_t)(to - from);
	return d > -(1ll << 31) + 8192 && d < (1ll << 31) - 8192;
}

/* Writes into the program's (read-only) code, through /proc/self/mem. */
static long mem_fd = -1;

static int mem_write(uint64_t addr, const void *b, uint64_t n)
{
	if (mem_fd < 0)
		mem_fd = rt_sys3(NR_open, (long)"/proc/self/mem", 2 | 02000000, 0);
	if (mem_fd < 0)
		return -1;
	return rt_gate(NR_pwrite64, mem_fd, (long)b, (long)n, (long)addr, 0, 0) == (long)n ? 0 : -1;
}

static void mem_done(void)
{
	if (mem_fd >= 0)
		rt_sys1(NR_close, mem_fd);
	mem_fd = -1;
}

#define STUB 32u

/* Room for a stub within reach of site, or 0. */
static uint64_t stub_for(uint64_t site)
{
	if (rt_p.stub_page && rt_p.stub_used + STUB <= 4096 && in_reach(site + 5, rt_p.stub_page) &&
	    in_reach(site + 5, rt_p.stub_page + 4096))
		return rt_p.stub_page + (rt_p.stub_used += STUB) - STUB;
	static const int64_t tries[] = { -16, 16, -64, 64, -256, 256, -1024, 1024, -1792, 1792 };
	for (unsigned i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		uint64_t at = (site + (uint64_t)(tries[i] << 20)) & ~0xffffull;
		if (at < (1ull << 20) || at >= (1ull << 47) || !in_reach(site + 5, at))
			continue;
		long m = rt_own_map(at, 4096, 5 /* PROT_READ|PROT_EXEC */,
				    0x22 | 0x100000 /* MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE */);
		if (m < 0 && m > -4096)
			continue;
		rt_p.stub_page = (uint64_t)m;
		rt_p.stub_used = STUB;
		return rt_p.stub_page;
	}
	return 0;
}

static int seen_site(uint64_t site)
{
	for (uint32_t i = 0; i < rt_p.nsites; i++)
		if (rt_p.sites[i] == site)
			return 1;
	return 0;
}

/* Patch the site at `site` (its mov) for call nr.  0 when patched. */
static int patch(uint64_t site, long nr)
{
	const unsigned char *b = (const void *)site;
	uint32_t imm;
	if (rt_p.nsites >= RT_MAX_SITES || seen_site(site))
		return -1;
	rt_p.sites[rt_p.nsites++] = site;
	memcpy(&imm, b + 1, 4);
	if (b[0] != 0xb8 || imm != (uint32_t)nr || b[5] != 0x0f || b[6] != 0x05)
		return -1;
	uint64_t stub = stub_for(site);
	if (!stub)
		return -1;
	unsigned char s[29];
	uint64_t ret = site + 7, entry = (uint64_t)rt_fast_entry;
	s[0] = 0xb8;
	memcpy(s + 1, &imm, 4);
	s[5] = 0x49; /* movabs $ret, %r11 */
	s[6] = 0xbb;
	memcpy(s + 7, &ret, 8);
	s[15] = 0xff; /* jmp *0(%rip) */
	s[16] = 0x25;
	memset(s + 17, 0, 4);
	memcpy(s + 21, &entry, 8);
	if (mem_write(stub, s, sizeof(s))) {
		rt_p.patch_off = 1;
		return -1;
	}
	unsigned char j[5];
	int32_t rel = (int32_t)(int64_t)(stub - (site + 5));
	j[0] = 0xe9;
	memcpy(j + 1, &rel, 4);
	if (mem_write(site, j, 5)) {
		rt_p.patch_off = 1;
		return -1;
	}
	return 0;
}

/* ---- the object's other wrappers ----------------------------------------- */

struct ehdr {
	unsigned char ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff, shoff;
	uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};
struct sym {
	uint32_t name;
	unsigned char info, other;
	uint16_t shndx;
	uint64_t value, size;
};

struct base_find {
	uint64_t addr, base, cand, cand_ino;
};

static int base_line(void *ctx, const struct rt_map *m)
{
	struct base_find *f = ctx;
	if (m->off == 0 && m->ino) {
		f->cand = m->start;
		f->cand_ino = m->ino;
	}
	if (f->addr >= m->start && f->addr < m->end) {
		if (m->ino && m->ino == f->cand_ino)
			f->base = f->cand;
		return 1;
	}
	return 0;
}

/* The load address of the file mapped at addr (its mapping at offset 0
 * before it), or 0. */
static uint64_t object_base(uint64_t addr)
{
	struct base_find f = { addr, 0, 0, 0 };
	rt_maps_each(base_line, &f);
	return f.base;
}

/* Patch every wrapper the object at base exports. */
static void patch_object(uint64_t base)
{
	const struct ehdr *e = (const void *)base;
	if (memcmp(e->ident, "\177ELF", 4) || e->ident[4] != 2 || e->machine != 62 ||
	    e->phentsize != sizeof(struct phdr))
		return;
	uint64_t bias = e->type == 3 /* ET_DYN */ ? base : 0;
	const struct phdr *ph = (const void *)(base + e->phoff);
	const uint64_t *dyn = 0;
	for (int i = 0; i < e->phnum; i++)
		if (ph[i].type == 2 /* PT_DYNAMIC */)
			dyn = (const void *)(bias + ph[i].vaddr);
	if (!dyn)
		return;
	uint64_t symtab = 0, strtab = 0;
	for (; dyn[0]; dyn += 2) {
		if (dyn[0] == 5)
			strtab = dyn[1];
		else if (dyn[0] == 6)
			symtab = dyn[1];
	}
	/* (ld.so relocates these in place; before that they are offsets) */
	if (symtab && symtab < bias)
		symtab += bias;
	if (strtab && strtab < bias)
		strtab += bias;
	if (!symtab || strtab <= symtab || (strtab - symtab) / sizeof(struct sym) > 200000)
		return;
	const struct sym *sy = (const void *)symtab;
	uint64_t n = (strtab - symtab) / sizeof(struct sym);
	for (uint64_t k = 1; k < n; k++) {
		if ((sy[k].info & 0xf) != 2 /* STT_FUNC */ || !sy[k].shndx || !sy[k].value)
			continue;
		const char *name = (const char *)(strtab + sy[k].name);
		for (unsigned w = 0; w < sizeof(wrappers) / sizeof(wrappers[0]); w++) {
			if (rt_strcmp(name, wrappers[w].name) || !patchable(wrappers[w].nr))
				continue;
			uint64_t f = bias + sy[k].value, len = sy[k].size < 512 ? sy[k].size : 512;
			const unsigned char *c = (const void *)f;
			for (uint64_t i = 0; i + 7 <= len; i++)
				if (c[i] == 0xb8 && c[i + 1] == (unsigned char)wrappers[w].nr &&
				    c[i + 2] == (unsigned char)(wrappers[w].nr >> 8) && !c[i + 3] && !c[i + 4] &&
				    c[i + 5] == 0x0f && c[i + 6] == 0x05)
					patch(f + i, wrappers[w].nr);
			break;
		}
	}
}

void rt_patch_site(uint64_t after, long nr)
{
	if ((rt_params.flags & IP_F_NOPATCH) || rt_p.patch_off || !patchable(nr) ||
	    __atomic_load_n(&rt_p.nthreads, __ATOMIC_ACQUIRE) != 1 || after < 7)
		return;
	uint64_t site = after - 7;
	if (seen_site(site))
		return;
	if (patch(site, nr) == 0 && rt_p.nscanned < sizeof(rt_p.scanned) / sizeof(rt_p.scanned[0])) {
		uint64_t base = object_base(site);
		int done = 0;
		for (uint32_t i = 0; i < rt_p.nscanned; i++)
			done |= rt_p.scanned[i] == base;
		if (base && !done) {
			rt_p.scanned[rt_p.nscanned++] = base;
			patch_object(base);
		}
	}
	mem_done();
}
