/*
 * simspace.c - address-space epochs of the load-time simulation: the
 * MAPS snapshot a process starts with (stand-in regions, the brk heap),
 * exec (everything goes), and process exit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "sim_int.h"

int sim_plan(struct loader *L, uint32_t p)
{
	struct lproc *P = &L->lp[p];
	rp_trace *t = L->t;
	if (P->plan != RP_VOID)
		return (int)P->plan;
	int rc = ld_grow(L, &t->plans, &t->capplans, (size_t)t->nplans + 1, sizeof(*t->plans));
	if (rc < 0)
		return rc;
	struct rp_plan *pl = &t->plans[t->nplans];
	pl->standin0 = t->nstandins;
	pl->nstandin = 0;
	pl->brk_region = RP_VOID;
	pl->proc = p;
	P->plan = t->nplans++;
	return (int)P->plan;
}

/* Mappings a replay cannot and need not stand in for. */
static int special(const char *path)
{
	static const char *const names[] = {"[vsyscall]", "[uprobes]", "[sigpage]", "[vectors]",
					    NULL};
	for (int i = 0; names[i]; i++)
		if (!strcmp(path, names[i]))
			return 1;
	return 0;
}

/* The kernel's pages that the program reads: an exec'd program takes a
 * fault on each it reads first (ld.so reads the vDSO's ELF header, the
 * clock functions read the vvar pages), which an anonymous read-only
 * stand-in replays (a replay process has vmreplay's own, long mapped). */
static int kernel_pages(const char *path)
{
	return !strcmp(path, "[vdso]") || !strncmp(path, "[vvar", 5);
}

static int snap_map_set(struct loader *L, struct lproc *P, uint64_t a, uint64_t b, struct rpam_val v)
{
	int rc = ld_reserve(L, P, a, b, -1);
	if (rc)
		return rc;
	if (rpam_set(&P->map, a, b, v))
		return ld_fail(L, -ENOMEM, "out of memory");
	if ((rc = ld_reserve(L, P, a, b, 1)))
		return rc;
	return ld_check_memory(L);
}

int sim_snapshot(struct loader *L, uint32_t p, const struct vmt_maps *m)
{
	struct lproc *P = &L->lp[p];
	rp_trace *t = L->t;
	int rc;

	if (P->have_snapshot)
		return 0;
	P->have_snapshot = 1;
	int pl = sim_plan(L, p);
	if (pl < 0)
		return pl;
	t->plans[pl].snap = 1;
	t->plans[pl].standin0 = t->nstandins;
	uint32_t cur = RP_VOID;
	uint64_t cur_end = 0;
	int cur_kpages = 0;
	for (uint32_t i = 0; i < m->count; i++) {
		const struct vmt_map_entry *en = &m->entries[i];
		const char *path = en->path ? en->path : "";
		uint32_t attr = (en->perms & AT_PROT) | ((en->perms & VMT_MAPS_SHARED) ? AT_SHARED : 0);
		if (en->start >= RP_ADDR_LIMIT || en->end > RP_ADDR_LIMIT || en->start >= en->end)
			continue;
		if (special(path)) {
			cur = RP_VOID;
			continue;
		}
		if (!strcmp(path, "[heap]")) {
			if (P->brk_region == RP_VOID) {
				if ((rc = ld_new_region(L, p, RG_BRK, en->start, en->end - en->start,
							&P->brk_region)))
					return rc;
				t->regions[P->brk_region].brk_init = en->end - en->start;
				t->regions[P->brk_region].plan = (uint32_t)pl;
				t->plans[pl].brk_region = P->brk_region;
				P->brk_cur = en->end;
			}
			struct rp_region *rg = &t->regions[P->brk_region];
			if (en->start >= rg->rec_start) {
				struct rpam_val v = {P->brk_region, attr, en->start - rg->rec_start};
				if ((rc = snap_map_set(L, P, en->start, en->end, v)))
					return rc;
				if (en->end - rg->rec_start > rg->size)
					rg->size = en->end - rg->rec_start;
			}
			cur = RP_VOID;
			continue;
		}
		int kp = kernel_pages(path);
		if (cur == RP_VOID || en->start != cur_end || kp != cur_kpages) {
			if ((rc = ld_new_region(L, p, RG_SNAP, en->start, 0, &cur)))
				return rc;
			cur_kpages = kp;
		}
		struct rp_region *rg = &t->regions[cur];
		uint64_t off = en->start - rg->rec_start, len = en->end - en->start;
		rg->size = en->end - rg->rec_start;
		uint32_t file = RP_VOID;
		if (path[0] == '/' || en->dev || en->ino) {
			struct rp_file f;
			memset(&f, 0, sizeof(f));
			f.dev = en->dev;
			f.ino = en->ino;
			f.path = (char *)path;
			f.size = en->offset < RP_ADDR_LIMIT ? en->offset + len : 0;
			if ((rc = ld_file_index(L, &f, &file)) < 0)
				return rc;
			if ((en->perms & VMT_MAPS_SHARED) && (en->perms & VMT_PROT_W))
				t->files[file].shared_rw = 1;
		}
		if ((rc = ld_grow(L, &t->standins, &t->capstandins, (size_t)t->nstandins + 1,
				  sizeof(*t->standins))) < 0)
			return rc;
		struct rp_standin *s = &t->standins[t->nstandins++];
		s->region = cur;
		s->prot = en->perms & AT_PROT;
		s->shared = (en->perms & VMT_MAPS_SHARED) != 0;
		s->file = file;
		s->off = off;
		s->len = len;
		s->file_off = en->offset;
		if (file != RP_VOID && !t->files[file].zero && !t->files[file].shm &&
		    strncmp(path, "/SYSV", 5))
			attr |= AT_FILE;
		else if (file != RP_VOID && !t->files[file].zero)
			attr |= AT_SHM;
		if (!strcmp(path, "[stack]"))
			attr |= AT_STACK;
		if (kp)
			attr |= AT_KPAGES;
		s->fkind = ld_fkind(L, cur, attr);
		if ((attr & AT_FILE) && (rc = sim_overlay(L, cur, off, len, file, en->offset)) < 0)
			return rc;
		struct rpam_val v = {cur, attr, off};
		if ((rc = snap_map_set(L, P, en->start, en->end, v)))
			return rc;
		cur_end = en->end;
	}
	t->plans[pl].nstandin = t->nstandins - t->plans[pl].standin0;
	return 0;
}

int sim_clear(struct loader *L, uint32_t p, uint32_t *piece0, uint32_t *npieces)
{
	struct lproc *P = &L->lp[p];
	uint32_t n = 0;
	*piece0 = L->t->npieces;
	for (size_t i = 0; i < P->map.n; i++) {
		const struct rpam_seg *s = &P->map.s[i];
		if (n) {
			struct rp_piece *lp = &L->t->pieces[L->t->npieces - 1];
			if (lp->region == s->v.region && lp->off + lp->len == s->v.off) {
				lp->len += s->end - s->start;
				continue;
			}
		}
		int rc = ld_add_piece(L, s->v.off, s->end - s->start, s->v.region);
		if (rc < 0)
			return rc;
		n++;
	}
	*npieces = n;
	int rc = ld_reserve(L, P, 0, RP_ADDR_LIMIT, -1);
	if (rc)
		return rc;
	L->cur_touched -= P->touched_bytes;
	P->mapped = P->touched_bytes = 0;
	rpam_free(&P->map);
	rpam_free(&P->touched);
	rpam_init(&P->map, 1);
	rpam_init(&P->touched, 0);
	P->brk_region = RP_VOID;
	P->plan = RP_VOID;
	P->have_snapshot = 0;
	return 0;
}

void sim_proc_exit(struct loader *L, uint32_t p)
{
	struct lproc *P = &L->lp[p];
	/* (taking out cannot fail: the regions it shares are grown to) */
	(void)ld_reserve(L, P, 0, RP_ADDR_LIMIT, -1);
	L->cur_touched -= P->touched_bytes;
	P->mapped = P->touched_bytes = 0;
	rpam_free(&P->map);
	rpam_free(&P->touched);
	rpam_free(&P->last);
	rpam_init(&P->map, 1);
	rpam_init(&P->touched, 0);
	rpam_init(&P->last, 0);
}
