/*
 * uncommit.c - see uncommit_int.h.
 */
#include <string.h>
#include "linux_abi.h"
#include "uncommit_int.h"

static int ok(const struct vmt_syscall *sc)
{
	return !(sc->flags & VMT_SC_NO_RESULT) && !vmt_is_errno(sc->result);
}

/* MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED[|MAP_NORESERVE], fd -1, offset 0,
 * mapped where asked. */
static int anon_fixed(const struct vmt_syscall *sc)
{
	uint64_t fl = sc->args[3];
	return sc->op == VMT_OP_MMAP && (uint64_t)sc->result == sc->args[0] &&
	       (fl & LX_MAP_TYPE) == LX_MAP_PRIVATE && (fl & LX_MAP_FIXED) &&
	       (fl & LX_MAP_ANONYMOUS) &&
	       !(fl & ~(uint64_t)(LX_MAP_TYPE | LX_MAP_FIXED | LX_MAP_ANONYMOUS | LX_MAP_NORESERVE)) &&
	       (int32_t)(uint32_t)sc->args[4] == -1 && sc->args[5] == 0;
}

int uc_is_uncommit(const struct vmt_syscall *sc, uint64_t page_mask)
{
	return ok(sc) && anon_fixed(sc) && sc->args[2] == LX_PROT_NONE &&
	       !(sc->args[0] & page_mask) && sc->args[1] != 0;
}

int uc_is_commit(const struct vmt_syscall *sc, uint64_t page_mask, uint32_t *prot, int *noreserve)
{
	uint64_t p = sc->args[2];
	if (!ok(sc) || (sc->args[0] & page_mask) || !sc->args[1] || !p || (p & ~(uint64_t)LX_PROT_RWX))
		return 0;
	if (sc->op == VMT_OP_MPROTECT && sc->result == 0)
		*noreserve = -1;
	else if (anon_fixed(sc))
		*noreserve = (sc->args[3] & LX_MAP_NORESERVE) != 0;
	else
		return 0;
	*prot = (uint32_t)p;
	return 1;
}

int uc_committed(const van_asmodel *m, uint32_t proc, uint64_t a, uint64_t b, uint32_t *prot,
		 uint32_t *flags)
{
	uint64_t at = a;
	*flags = 0;
	*prot = 0;
	for (const struct van_vma *v = van_asmodel_first(m, proc, a); v && v->start < b;
	     v = van_asmodel_next(m, proc, v)) {
		uint32_t nr = (v->flags & VAN_VMA_NORESERVE) ? UC_NORESERVE : 0;
		if (v->start > at || !v->prot || (at > a && v->prot != *prot) || (v->flags & UC_BAD) ||
		    v->pkey || v->dev || v->ino)
			return 0;
		if (at > a && nr != (*flags & UC_NORESERVE))
			*flags |= UC_MIXED;
		*flags |= nr | ((v->flags & VAN_VMA_ACCOUNT) ? UC_CHARGED : 0);
		*prot = v->prot;
		at = v->end;
		if (at >= b)
			return 1;
	}
	return 0;
}

int uc_restores(const struct vmt_rset_ent *e, uint32_t prot, int noreserve)
{
	return e->prot == prot &&
	       (noreserve < 0 || (!(e->flags & UC_MIXED) && noreserve == !!(e->flags & UC_NORESERVE)));
}

int uc_strict_overcommit(const struct vmt_header *h)
{
	char v[4];
	return h && vmt_options_get(h->options, "overcommit", v, sizeof(v)) && !strcmp(v, "2");
}
