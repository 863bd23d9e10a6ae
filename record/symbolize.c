/*
 * symbolize.c - ips to (module, function, offset), written as STRING and
 * SYMBOL events when recording ends.
 *
 * Placement (module + file offset) is taken from /proc/PID/maps while the
 * process lives; names are read at the end, once per module file, with our
 * own ELF reader (elfsym.c).  Why not libunwind's unw_get_proc_name at the
 * first sight of each ip: it rereads /proc/PID/maps and maps the module
 * file for every single ip, and searches the symbol table linearly.
 */
#include "symbolize.h"
#include "elfsym.h"
#include "record_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

struct sip { /* one distinct ip */
	uint64_t ip, file_off;
	uint32_t module, next; /* next ip of the same module, or VMT_NONE */
};

struct smod {
	char *path;
	uint64_t dev, ino, hash;
	uint32_t first_ip, last_ip;
};

struct vmr_syms {
	struct sip *sips;
	size_t nsips, capsips;
	struct vmt_htab ip_index;
	struct smod *mods;
	size_t nmods, capmods;
	struct vmt_htab mod_index; /* hash(path, dev, ino) -> first module */
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

struct strtab { /* STRING events written so far: text -> id */
	char **str;
	size_t n, cap;
	uint32_t *tab; /* id + 1, 0 = empty */
	size_t tabcap;
};

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->str[i]);
	free(t->str);
	free(t->tab);
}

/* The STRING id of str, writing the STRING event when it is new. */
static int string_id(struct strtab *t, vmt_writer *w, const char *str,
		     uint64_t ts, uint32_t *id)
{
	char *copy = NULL;
	size_t len = strlen(str);
	if (len > VMT_MAX_STRING) { /* (very long C++ names) */
		if (!(copy = strndup(str, VMT_MAX_STRING)))
			return -ENOMEM;
		str = copy;
	}
	if ((t->n + 1) * 2 > t->tabcap) {
		size_t cap = t->tabcap ? t->tabcap * 2 : 256;
		uint32_t *tab = calloc(cap, sizeof(*tab));
		if (!tab) {
			free(copy);
			return -ENOMEM;
		}
		for (size_t i = 0; i < t->n; i++) {
			size_t j = str_hash(t->str[i]) & (cap - 1);
			while (tab[j])
				j = (j + 1) & (cap - 1);
			tab[j] = (uint32_t)i + 1;
		}
		free(t->tab);
		t->tab = tab;
		t->tabcap = cap;
	}
	size_t j = str_hash(str) & (t->tabcap - 1);
	for (; t->tab[j]; j = (j + 1) & (t->tabcap - 1)) {
		if (!strcmp(t->str[t->tab[j] - 1], str)) {
			*id = t->tab[j] - 1;
			free(copy);
			return 0;
		}
	}
	if (vmt_grow(&t->str, &t->cap, t->n + 1, sizeof(*t->str)) ||
	    (!copy && !(copy = strdup(str)))) {
		free(copy);
		return -ENOMEM;
	}
	t->str[t->n] = copy;
	t->tab[j] = (uint32_t)t->n + 1;
	*id = (uint32_t)t->n++;
	struct vmt_event ev = { .kind = VMT_EV_STRING, .ts_ns = ts };
	ev.u.string.id = *id;
	ev.u.string.str = copy;
	return vmt_writer_append(w, &ev);
}

/* The vdso is the same image in every process of this kernel (for the
 * recorder's own architecture), so ours stands in for the tracee's. */
static int load_vdso(struct elfsym *e)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct vmr_maps m = { 0 };
	int err = -ENOENT;
	if (!base || vmr_maps_read(&m, getpid())) {
		vmr_maps_free(&m);
		return err;
	}
	for (uint32_t i = 0; i < m.n; i++)
		if (m.e[i].start == base && !strcmp(m.e[i].path, "[vdso]")) {
			err = elfsym_load_mem(e, (const void *)(uintptr_t)base,
					      m.e[i].end - base);
			break;
		}
	vmr_maps_free(&m);
	return err;
}

static int load_module(const struct smod *m, struct elfsym *e,
		       const char *debug_root)
{
	if (!strcmp(m->path, "[vdso]"))
		return load_vdso(e);
	size_t len = strlen(m->path);
	if (m->path[0] != '/' ||
	    (len > 10 && !strcmp(m->path + len - 10, " (deleted)")))
		return -ENOENT; /* the mapped file is no longer there */
	/* O_NONBLOCK: the path may name a FIFO by now. */
	int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = fstat(fd, &st) < 0 ? -errno : 0;
	/* Another file at the same path (replaced since it was mapped) has
	 * other symbols.  (Overlay file systems show another st_dev than
	 * /proc/PID/maps, so only compare inodes when the devices agree.) */
	if (!err && st.st_dev == m->dev && st.st_ino != m->ino)
		err = -ESTALE;
	if (!err)
		err = elfsym_load_fd(e, fd, debug_root);
	close(fd);
	return err;
}

int vmr_syms_write(struct vmr_syms *s, vmt_writer *w, uint64_t ts,
		   const char *debug_root)
{
	struct strtab t = { 0 };
	struct vmt_event ev = { .kind = VMT_EV_SYMBOL, .ts_ns = ts };
	int err = 0;
	for (size_t mi = 0; mi < s->nmods && !err; mi++) {
		const struct smod *m = &s->mods[mi];
		if (m->first_ip == VMT_NONE)
			continue;
		struct elfsym e;
		int loaded = load_module(m, &e, debug_root) == 0;
		uint32_t mod_id;
		if ((err = string_id(&t, w, m->path, ts, &mod_id)))
			break;
		for (uint32_t i = m->first_ip; i != VMT_NONE && !err;
		     i = s->sips[i].next) {
			const struct sip *p = &s->sips[i];
			uint64_t va;
			const struct elfsym_fn *fn = NULL;
			ev.u.symbol = (struct vmt_symbol){ p->ip, mod_id, VMT_NONE,
							   p->file_off };
			/* Look up ip - 1: every ip we hold is a return address
			 * or follows a syscall instruction, and a call can be
			 * the last instruction of a function. */
			if (loaded && p->file_off > 0 &&
			    elfsym_vaddr(&e, p->file_off - 1, &va) == 0)
				fn = elfsym_lookup(&e, va);
			if (fn) {
				err = string_id(&t, w, fn->name, ts,
						&ev.u.symbol.function);
				ev.u.symbol.offset = va + 1 - fn->addr;
			}
			if (!err)
				err = vmt_writer_append(w, &ev);
		}
		if (loaded)
			elfsym_free(&e);
	}
	/* Ips outside any file: anonymous (JIT) code or a bad unwind. */
	for (size_t i = 0; i < s->nsips && !err; i++) {
		if (s->sips[i].module != VMT_NONE)
			continue;
		ev.u.symbol = (struct vmt_symbol){ s->sips[i].ip, VMT_NONE,
						   VMT_NONE, s->sips[i].ip };
		err = vmt_writer_append(w, &ev);
	}
	strtab_free(&t);
	return err;
}

struct vmr_syms *vmr_syms_new(void)
{
	return calloc(1, sizeof(struct vmr_syms));
}

static uint64_t mod_hash(const char *path, uint64_t dev, uint64_t ino)
{
	return str_hash(path) ^ vmt_mix64(dev * 31 + ino);
}

uint32_t vmr_syms_module(struct vmr_syms *y, const char *path, uint64_t dev,
			 uint64_t ino)
{
	uint64_t h = mod_hash(path, dev, ino);
	const uint64_t *first = vmt_htab_get(&y->mod_index, h, 0);
	if (first) {
		/* Collisions are chained through the module list order. */
		for (size_t i = (size_t)*first; i < y->nmods; i++)
			if (y->mods[i].hash == h && y->mods[i].dev == dev &&
			    y->mods[i].ino == ino && !strcmp(y->mods[i].path, path))
				return i;
	}
	if (vmt_grow(&y->mods, &y->capmods, y->nmods + 1, sizeof(*y->mods)))
		return VMT_NONE;
	char *dup = strdup(path);
	if (!dup)
		return VMT_NONE;
	if (!first && vmt_htab_set(&y->mod_index, h, 0, y->nmods)) {
		free(dup);
		return VMT_NONE;
	}
	y->mods[y->nmods] = (struct smod){ dup, dev, ino, h, VMT_NONE, VMT_NONE };
	return (uint32_t)y->nmods++;
}

int vmr_syms_module_info(const struct vmr_syms *y, uint32_t idx,
			 const char **path, uint64_t *dev, uint64_t *ino)
{
	if (idx >= y->nmods)
		return -ENOENT;
	*path = y->mods[idx].path;
	*dev = y->mods[idx].dev;
	*ino = y->mods[idx].ino;
	return 0;
}

int vmr_syms_has(const struct vmr_syms *y, uint64_t ip)
{
	return vmt_htab_get(&y->ip_index, ip, 0) != NULL;
}

int vmr_syms_add(struct vmr_syms *y, uint64_t ip, uint32_t module,
		 uint64_t file_off)
{
	if (ip == 0 || vmr_syms_has(y, ip))
		return 0;
	if (module != VMT_NONE && module >= y->nmods)
		module = VMT_NONE;
	if (vmt_grow(&y->sips, &y->capsips, y->nsips + 1, sizeof(*y->sips)))
		return -ENOMEM;
	if (vmt_htab_set(&y->ip_index, ip, 0, y->nsips))
		return -ENOMEM;
	y->sips[y->nsips] = (struct sip){ ip, file_off, module, VMT_NONE };
	if (module != VMT_NONE) {
		struct smod *md = &y->mods[module];
		if (md->last_ip == VMT_NONE)
			md->first_ip = (uint32_t)y->nsips;
		else
			y->sips[md->last_ip].next = (uint32_t)y->nsips;
		md->last_ip = (uint32_t)y->nsips;
	}
	y->nsips++;
	return 0;
}

void vmr_syms_counts(const struct vmr_syms *y, uint64_t *ips,
		     uint64_t *modules)
{
	*ips = y->nsips;
	*modules = y->nmods;
}

void vmr_syms_free(struct vmr_syms *y)
{
	if (!y)
		return;
	for (size_t i = 0; i < y->nmods; i++)
		free(y->mods[i].path);
	free(y->mods);
	free(y->sips);
	vmt_htab_free(&y->ip_index);
	vmt_htab_free(&y->mod_index);
	free(y);
}
