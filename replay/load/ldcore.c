/*
 * ldcore.c - what every part of the trace loader uses: errors with the
 * event index, array growth counted toward --max-memory, the regions,
 * pieces and files of the trace, and the memory checks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "load_int.h"

/* ld_grow: arrays past this many bytes grow by an eighth, not doubled. */
#define LD_GROW_SLOW (16u << 20)

int ld_fail(struct loader *L, int err, const char *fmt, ...)
{
	if (L->err)
		return L->err;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (L->msg && L->msglen)
		snprintf(L->msg, L->msglen, "event %llu: %s", (unsigned long long)L->event, what);
	L->err = err < 0 ? err : -EINVAL;
	return L->err;
}

int ld_grow(struct loader *L, void *arrp, size_t *cap, size_t need, size_t elsz)
{
	if (need <= *cap)
		return 0;
	if (need > (1u << 31))
		return ld_fail(L, VMT_E_LIMIT, "more than 2^31 items of one kind");
	size_t old = *cap;
	if (old * elsz < LD_GROW_SLOW) {
		if (vmt_grow(arrp, cap, need, elsz))
			return ld_fail(L, -ENOMEM, "out of memory");
	} else {
		/* Large arrays (a long trace's elements, pieces, touches) grow
		 * by an eighth: doubling left up to half of the load's memory
		 * zeroed and unused.  realloc moves chunks this large with
		 * mremap, without copying. */
		size_t n = need > old + old / 8 ? need : old + old / 8;
		void *arr;
		if (n > SIZE_MAX / elsz)
			return ld_fail(L, -ENOMEM, "out of memory");
		memcpy(&arr, arrp, sizeof(arr));
		if (!(arr = realloc(arr, n * elsz)))
			return ld_fail(L, -ENOMEM, "out of memory");
		memset((char *)arr + old * elsz, 0, (n - old) * elsz);
		memcpy(arrp, &arr, sizeof(arr));
		*cap = n;
	}
	L->t->loaded_bytes += (uint64_t)(*cap - old) * elsz;
	if (L->t->loaded_bytes > L->t->opt.max_memory)
		return ld_fail(L, -E2BIG, "the trace needs more than --max-memory to load");
	return 0;
}

int ld_new_region(struct loader *L, uint32_t proc, uint8_t kind, uint64_t rec_start,
		  uint64_t size, uint32_t *out)
{
	rp_trace *t = L->t;
	if (t->region_cap && t->nregions >= t->region_cap)
		return ld_fail(L, VMT_E_LIMIT, "more than %u mappings in a streamed replay", t->region_cap);
	int rc = ld_charge(L, LD_COST_REGION);
	if (rc < 0)
		return rc;
	rc = ld_grow(L, &t->regions, &t->capregions, (size_t)t->nregions + 1, sizeof(*t->regions));
	if (rc < 0)
		return rc;
	struct rp_region *r = &t->regions[t->nregions];
	memset(r, 0, sizeof(*r));
	r->rec_start = rec_start;
	r->size = size;
	r->proc = proc;
	r->kind = kind;
	r->file = RP_VOID;
	r->needed = kind == RG_MAP;
	r->fkind = kind == RG_BRK ? RP_FK_HEAP : RP_FK_ANON;
	*out = t->nregions++;
	return 0;
}

int ld_add_piece(struct loader *L, uint64_t off, uint64_t len, uint32_t region)
{
	rp_trace *t = L->t;
	int rc = ld_grow(L, &t->pieces, &t->cappieces, (size_t)t->npieces + 1, sizeof(*t->pieces));
	if (rc < 0)
		return rc;
	t->pieces[t->npieces].off = off;
	t->pieces[t->npieces].len = len;
	t->pieces[t->npieces].region = region;
	t->pieces[t->npieces].pad = 0;
	return (int)t->npieces++;
}

int ld_file_index(struct loader *L, const struct rp_file *f, uint32_t *out)
{
	rp_trace *t = L->t;
	const char *path = f->path ? f->path : "";
	for (uint32_t i = t->nfiles; i-- > 0;) {
		struct rp_file *g = &t->files[i];
		int same = (f->dev || f->ino) ? (g->dev == f->dev && g->ino == f->ino)
					      : (!g->dev && !g->ino && !strcmp(g->path, path));
		if (!same || g->shm != f->shm)
			continue;
		if (f->size > g->size)
			g->size = f->size;
		if (f->rec_size > g->rec_size)
			g->rec_size = f->rec_size;
		*out = i;
		return 0;
	}
	if (t->nfiles >= RP_FCAP)
		return ld_fail(L, VMT_E_LIMIT, "more than %u mapped files", RP_FCAP);
	int rc = ld_charge(L, LD_COST_FILE);
	if (rc < 0)
		return rc;
	rc = ld_grow(L, &t->files, &t->capfiles, (size_t)t->nfiles + 1, sizeof(*t->files));
	if (rc < 0)
		return rc;
	struct rp_file *g = &t->files[t->nfiles];
	*g = *f;
	g->path = strdup(path);
	if (!g->path)
		return ld_fail(L, -ENOMEM, "out of memory");
	g->shared_rw = g->original = g->not_original = 0;
	g->warm = g->cold = NULL;
	g->capwarm = g->capcold = 0;
	if (g->rec_size > g->size)
		g->size = g->rec_size;
	*out = t->nfiles++;
	return 0;
}

/* What the replay itself needs for each thread, process, mapping and file
 * of a trace, beyond the loader's arrays (ld_grow counts those): a thread's
 * first block of elements and its slot of results (the pages of its
 * histograms), a replay process's page tables, stack and private tables,
 * a mapping's entries, a file's descriptors and scratch inode.  Measured
 * here on traces of 20,000 threads (28 KiB each, all in) and of 2,000
 * forked processes (88 KiB each); rounded up. */
static const uint64_t cost[] = {
	[LD_COST_THREAD] = 32ull << 10,
	[LD_COST_PROC] = 128ull << 10,
	[LD_COST_REGION] = 64,
	[LD_COST_FILE] = 1024,
};

int ld_charge(struct loader *L, enum ld_cost what)
{
	rp_trace *t = L->t;
	uint64_t scale = t->opt.scale ? t->opt.scale : 1;
	t->own_bytes += cost[what] * scale;
	if (t->own_bytes + t->loaded_bytes <= t->opt.max_memory)
		return 0;
	char a[32], b[32];
	vmt_format_bytes(a, sizeof(a), t->own_bytes + t->loaded_bytes);
	vmt_format_bytes(b, sizeof(b), t->opt.max_memory);
	return ld_fail(L, -E2BIG,
		       "the replay's own memory for the trace's %u threads, %u processes, %u "
		       "mappings and %u files%s would reach %s, more than --max-memory %s",
		       t->nthreads + (what == LD_COST_THREAD), t->nprocs + (what == LD_COST_PROC),
		       t->nregions + (what == LD_COST_REGION), t->nfiles + (what == LD_COST_FILE),
		       scale > 1 ? " (all copies)" : "", a, b);
}

int ld_check_memory(struct loader *L)
{
	rp_trace *t = L->t;
	if (L->cur_mapped > t->peak_mapped)
		t->peak_mapped = L->cur_mapped;
	if (L->cur_touched > t->peak_touched)
		t->peak_touched = L->cur_touched;
	uint64_t scale = t->opt.scale ? t->opt.scale : 1, peak = t->peak_mapped > t->peak_touched
			 ? t->peak_mapped : t->peak_touched;
	uint64_t own = t->own_bytes + t->loaded_bytes;
	if (own <= t->opt.max_memory && peak <= (t->opt.max_memory - own) / scale)
		return 0;
	char a[32], b[32], c[32];
	vmt_format_bytes(a, sizeof(a), peak * scale);
	vmt_format_bytes(b, sizeof(b), t->opt.max_memory);
	vmt_format_bytes(c, sizeof(c), own);
	return ld_fail(L, -E2BIG, "peak %s %s%s, with the replay's own %s, exceeds --max-memory %s",
		       t->peak_mapped >= t->peak_touched
			       ? "reserved memory (private writable mappings, shared memory once)"
			       : "touched private writable memory", a,
		       scale > 1 ? " (all copies)" : "", c, b);
}

uint32_t ld_fkind(const struct loader *L, uint32_t region, uint32_t attr)
{
	if (region < L->t->nregions && L->t->regions[region].kind == RG_BRK)
		return RP_FK_HEAP;
	if (attr & AT_KPAGES)
		return RP_FK_OTHER;
	if (attr & AT_STACK)
		return RP_FK_STACK;
	if ((attr & AT_SHM) || ((attr & AT_SHARED) && !(attr & AT_FILE)))
		return RP_FK_SHM;
	if (attr & AT_FILE)
		return (attr & AT_SHARED) ? RP_FK_SFILE : RP_FK_PFILE;
	return RP_FK_ANON;
}
