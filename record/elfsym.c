/*
 * elfsym.c - function symbols of an ELF64 file or memory image.
 *
 * Why our own reader instead of libunwind's unw_get_proc_name: that one maps
 * the module file and rereads /proc/PID/maps for every single ip, and it can
 * only run while the process is alive.  Reading each module once at the end
 * of the recording costs one pass over its symbol table per module.
 *
 * Every read is bounded: offsets and sizes come from an untrusted file.
 */
#include "elfsym.h"
#include "vmtrace.h"
#include "vmtutil.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SECTION_BYTES (512ull << 20) /* one symbol or string table */
#define MAX_SECTIONS 65536u
#define MAX_PHDRS 4096u
#define MAX_NOTE_BYTES (64u << 10)

struct src {
	int fd;			  /* or -1 with mem */
	const unsigned char *mem;
	uint64_t size;
};

static int src_read(const struct src *s, uint64_t off, void *buf, size_t len)
{
	if (off > s->size || len > s->size - off)
		return -ENOEXEC;
	if (s->mem) {
		memcpy(buf, s->mem + off, len);
		return 0;
	}
	int e = vmt_pread_full(s->fd, buf, len, off);
	return e == -ENODATA ? -ENOEXEC : e; /* (-ENODATA: it shrank under us) */
}

/* A candidate symbol before sorting; `rank` orders aliases at one address
 * (lower is better) so that "mmap" wins over "__mmap64". */
struct cand {
	uint64_t addr, size;
	const char *name;
	unsigned rank;
};

static unsigned sym_rank(const Elf64_Sym *s, const char *name)
{
	unsigned r = 0;
	while (name[r] == '_' && r < 8)
		r++;
	r *= 4;
	if (s->st_size == 0)
		r += 64; /* size-less labels only when nothing better */
	switch (ELF64_ST_BIND(s->st_info)) {
	case STB_GLOBAL: break;
	case STB_WEAK: r += 1; break;
	default: r += 2; break;
	}
	return r;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct parsed {
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	unsigned nsh;
};

static int read_headers(struct elfsym *e, const struct src *s, struct parsed *p)
{
	int err = src_read(s, 0, &p->eh, sizeof(p->eh));
	if (err)
		return err;
	const unsigned char *id = p->eh.e_ident;
	if (memcmp(id, ELFMAG, SELFMAG) != 0 || id[EI_CLASS] != ELFCLASS64)
		return -ENOEXEC;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (id[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
#else
	if (id[EI_DATA] != ELFDATA2MSB)
		return -ENOEXEC;
#endif
	/* Section headers (count may be escaped into section 0). */
	uint64_t nsh = p->eh.e_shnum;
	if (p->eh.e_shoff != 0) {
		if (p->eh.e_shentsize != sizeof(Elf64_Shdr))
			return -ENOEXEC;
		if (nsh == 0) {
			Elf64_Shdr s0;
			if ((err = src_read(s, p->eh.e_shoff, &s0, sizeof(s0))))
				return err;
			nsh = s0.sh_size;
		}
		if (nsh > MAX_SECTIONS)
			return -ENOEXEC;
	} else {
		nsh = 0;
	}
	if (nsh) {
		p->sh = calloc(nsh, sizeof(Elf64_Shdr));
		if (!p->sh)
			return -ENOMEM;
		if ((err = src_read(s, p->eh.e_shoff, p->sh,
				    nsh * sizeof(Elf64_Shdr))))
			return err;
	}
	p->nsh = (unsigned)nsh;

	/* PT_LOAD segments map file offsets to virtual addresses. */
	uint64_t nph = p->eh.e_phnum;
	if (nph == PN_XNUM && p->nsh)
		nph = p->sh[0].sh_info;
	if (nph && p->eh.e_phentsize != sizeof(Elf64_Phdr))
		return -ENOEXEC;
	if (nph > MAX_PHDRS)
		return -ENOEXEC;
	for (uint64_t i = 0; i < nph; i++) {
		Elf64_Phdr ph;
		if ((err = src_read(s, p->eh.e_phoff + i * sizeof(ph), &ph,
				    sizeof(ph))))
			return err;
		if (ph.p_type == PT_LOAD && e->nloads < ELFSYM_MAX_LOADS) {
			struct elfsym_load *l = &e->loads[e->nloads++];
			l->offset = ph.p_offset;
			l->vaddr = ph.p_vaddr;
			l->filesz = ph.p_filesz;
		}
	}
	return 0;
}

/* The GNU build id from the SHT_NOTE sections, if any. */
static void read_build_id(struct elfsym *e, const struct src *s,
			  const struct parsed *p)
{
	for (unsigned i = 0; i < p->nsh && !e->build_id_len; i++) {
		const Elf64_Shdr *sh = &p->sh[i];
		if (sh->sh_type != SHT_NOTE || sh->sh_size > MAX_NOTE_BYTES ||
		    sh->sh_size < sizeof(Elf64_Nhdr))
			continue;
		unsigned char *buf = malloc(sh->sh_size);
		if (!buf)
			return;
		if (src_read(s, sh->sh_offset, buf, sh->sh_size) == 0) {
			uint64_t off = 0;
			while (off + sizeof(Elf64_Nhdr) <= sh->sh_size) {
				Elf64_Nhdr n;
				memcpy(&n, buf + off, sizeof(n));
				uint64_t name = off + sizeof(n);
				uint64_t desc = name + ((n.n_namesz + 3ull) & ~3ull);
				uint64_t next = desc + ((n.n_descsz + 3ull) & ~3ull);
				if (next > sh->sh_size)
					break;
				if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 &&
				    memcmp(buf + name, "GNU", 4) == 0 &&
				    n.n_descsz > 0 &&
				    n.n_descsz <= sizeof(e->build_id)) {
					memcpy(e->build_id, buf + desc, n.n_descsz);
					e->build_id_len = n.n_descsz;
					break;
				}
				off = next;
			}
		}
		free(buf);
	}
}

/* Append the function symbols of symbol-table section `idx` to *c. */
static int read_symbols(struct elfsym *e, const struct src *s,
			const struct parsed *p, unsigned idx,
			struct cand **c, size_t *nc, size_t *capc)
{
	const Elf64_Shdr *sh = &p->sh[idx];
	if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_link >= p->nsh ||
	    sh->sh_size > MAX_SECTION_BYTES)
		return -ENOEXEC;
	const Elf64_Shdr *st = &p->sh[sh->sh_link];
	if (st->sh_type != SHT_STRTAB || st->sh_size > MAX_SECTION_BYTES ||
	    st->sh_size == 0)
		return -ENOEXEC;

	char **strs = realloc(e->strs, (e->nstrs + 1) * sizeof(*strs));
	if (!strs)
		return -ENOMEM;
	e->strs = strs;
	char *str = malloc(st->sh_size + 1);
	if (!str)
		return -ENOMEM;
	int err = src_read(s, st->sh_offset, str, st->sh_size);
	if (err) {
		free(str);
		return err;
	}
	str[st->sh_size] = '\0'; /* a last unterminated name stays bounded */
	e->strs[e->nstrs++] = str;

	uint64_t nsym = sh->sh_size / sizeof(Elf64_Sym);
	Elf64_Sym blk[256];
	for (uint64_t i = 0; i < nsym; i += 256) {
		uint64_t n = nsym - i < 256 ? nsym - i : 256;
		if ((err = src_read(s, sh->sh_offset + i * sizeof(Elf64_Sym),
				    blk, n * sizeof(Elf64_Sym))))
			return err;
		for (uint64_t j = 0; j < n; j++) {
			const Elf64_Sym *y = &blk[j];
			unsigned t = ELF64_ST_TYPE(y->st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC) ||
			    y->st_shndx == SHN_UNDEF || y->st_value == 0 ||
			    y->st_name == 0 || y->st_name >= st->sh_size)
				continue;
			const char *name = str + y->st_name;
			if (!*name)
				continue;
			if (vmt_grow(c, capc, *nc + 1, sizeof(**c)))
				return -ENOMEM;
			(*c)[(*nc)++] = (struct cand){ y->st_value, y->st_size,
						       name, sym_rank(y, name) };
		}
	}
	return 0;
}

/* Sort the candidates and keep the best name per address. */
static int finish_fns(struct elfsym *e, struct cand *c, size_t nc)
{
	if (nc == 0)
		return 0;
	qsort(c, nc, sizeof(*c), cand_cmp);
	e->fns = malloc(nc * sizeof(*e->fns));
	if (!e->fns)
		return -ENOMEM;
	for (size_t i = 0; i < nc; i++) {
		if (e->nfns && e->fns[e->nfns - 1].addr == c[i].addr)
			continue;
		e->fns[e->nfns++] = (struct elfsym_fn){ c[i].addr, c[i].size,
							c[i].name };
	}
	return 0;
}

static int find_section(const struct parsed *p, uint32_t type)
{
	for (unsigned i = 0; i < p->nsh; i++)
		if (p->sh[i].sh_type == type && p->sh[i].sh_size)
			return (int)i;
	return -1;
}

static int load_debug_file(struct elfsym *e, const char *root);

static int load(struct elfsym *e, const struct src *s, const char *debug_root)
{
	struct parsed p = { .sh = NULL };
	struct cand *c = NULL;
	size_t nc = 0, capc = 0;
	memset(e, 0, sizeof(*e));
	int err = read_headers(e, s, &p);
	if (err)
		goto out;
	read_build_id(e, s, &p);
	int sym = find_section(&p, SHT_SYMTAB);
	if (sym >= 0) {
		e->from_symtab = 1;
		err = read_symbols(e, s, &p, (unsigned)sym, &c, &nc, &capc);
	} else if (debug_root && e->build_id_len &&
		   load_debug_file(e, debug_root) == 0) {
		goto out; /* names from the debug file */
	} else if ((sym = find_section(&p, SHT_DYNSYM)) >= 0) {
		err = read_symbols(e, s, &p, (unsigned)sym, &c, &nc, &capc);
	}
	if (!err)
		err = finish_fns(e, c, nc);
out:
	free(c);
	free(p.sh);
	if (err)
		elfsym_free(e);
	return err;
}

/* Take the .symtab of <root>/.build-id/xx/yyyy.debug when its build id is
 * ours (Debian's -dbg/-dbgsym packages install them there).  Our own
 * segments stay: a debug file's PT_LOADs describe no file bytes. */
static int load_debug_file(struct elfsym *e, const char *root)
{
	char path[4096];
	int n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", root,
			 e->build_id[0]);
	for (unsigned i = 1; i < e->build_id_len && n > 0 &&
			     (size_t)n + 3 < sizeof(path); i++)
		n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x",
			      e->build_id[i]);
	if (n <= 0 || (size_t)n + 7 > sizeof(path))
		return -ENAMETOOLONG;
	strcpy(path + n, ".debug");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct elfsym d;
	int err = elfsym_load_fd(&d, fd, NULL);
	close(fd);
	if (err)
		return err;
	if (!d.from_symtab || d.nfns == 0 || d.build_id_len != e->build_id_len ||
	    memcmp(d.build_id, e->build_id, e->build_id_len) != 0) {
		elfsym_free(&d);
		return -ENOENT;
	}
	e->fns = d.fns;
	e->nfns = d.nfns;
	e->strs = d.strs;
	e->nstrs = d.nstrs;
	e->from_symtab = 1;
	return 0;
}

int elfsym_load_fd(struct elfsym *e, int fd, const char *debug_root)
{
	struct stat st;
	memset(e, 0, sizeof(*e));
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	struct src s = { fd, NULL, (uint64_t)st.st_size };
	return load(e, &s, debug_root);
}

int elfsym_load_mem(struct elfsym *e, const void *p, size_t size)
{
	struct src s = { -1, p, size };
	return load(e, &s, NULL);
}

int elfsym_vaddr(const struct elfsym *e, uint64_t off, uint64_t *vaddr)
{
	for (unsigned i = 0; i < e->nloads; i++) {
		const struct elfsym_load *l = &e->loads[i];
		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = l->vaddr + (off - l->offset);
			return 0;
		}
	}
	return -ENOENT;
}

const struct elfsym_fn *elfsym_lookup(const struct elfsym *e, uint64_t a)
{
	size_t lo = 0, hi = e->nfns; /* first fn with addr > a */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->fns[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* A few steps back catch a function that encloses a smaller one. */
	for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
		const struct elfsym_fn *f = &e->fns[i - 1];
		if (f->size && a - f->addr < f->size)
			return f;
	}
	/* A size-less label (assembly) covers up to the next symbol. */
	return e->fns[lo - 1].size == 0 ? &e->fns[lo - 1] : NULL;
}

void elfsym_free(struct elfsym *e)
{
	for (size_t i = 0; i < e->nstrs; i++)
		free(e->strs[i]);
	free(e->strs);
	free(e->fns);
	memset(e, 0, sizeof(*e));
}
