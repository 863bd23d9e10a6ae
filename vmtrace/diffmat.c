/*
 * diffmat.c - `vmtrace diff BASE.json NEW1.json NEW2.json ...`: vmreplay
 * results of one trace on several kernels in one table (rtable.h), the
 * table `vmreplay --kernel=A --kernel=B --host` prints, with --fail-on
 * checked against every column but the base.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diffmat.h"
#include "rtable.h"
#include "vmtrace.h"
#include "vmtutil.h"

#define ALPHA 0.05
#define MAX_RESULT (256u << 20) /* larger files are not vmreplay's */

static char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 0, n = 0;
	char *b = NULL;
	int e = 0;
	if (fd < 0) {
		e = errno;
		goto fail;
	}
	for (;;) {
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 1 << 16;
			char *nb = nc <= MAX_RESULT ? realloc(b, nc) : NULL;
			if (!nb) {
				e = nc > MAX_RESULT ? EFBIG : ENOMEM;
				goto fail;
			}
			b = nb;
			cap = nc;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return b;
fail:
	fprintf(stderr, "vmtrace: cannot read '%s': %s\n", path, strerror(e));
	if (fd >= 0)
		close(fd);
	free(b);
	return NULL;
}

/* A condition holds in a column where its statistic moved past the
 * limit from the base's and the runs do not say it is noise. */
static int holds(const struct vtc_cond *c, const struct van_rtrow *row, size_t col,
		 size_t base)
{
	const struct van_rcell *x = &row->cell[col], *b = &row->cell[base];
	if (col == base || !x->have || !b->have || x->sig == VAN_SIG_NO)
		return 0;
	return vtc_cond_holds(c, row->mean ? b->mean : b->median, row->mean ? x->mean : x->median);
}

static void fail_line(struct vmt_buf *o, int json, int nfail, const struct vtc_cond *c,
		      const struct van_rtable *t, const struct van_rtrow *row, size_t col)
{
	const struct van_rcell *x = &row->cell[col], *b = &row->cell[t->base];
	double bv = row->mean ? b->mean : b->median, nv = row->mean ? x->mean : x->median;
	const char *sig = x->sig == VAN_SIG_FEW ? "too few runs" : "yes";
	if (json) {
		vtc_diff_json_fail(o, nfail, c, row->name);
		vmt_buf_printf(o, ",\"column\":%zu,\"label\":", col);
		vmt_buf_json_str(o, t->cols[col].label);
		vmt_buf_printf(o, ",\"base\":%.17g,\"new\":%.17g,\"change_pct\":", bv, nv);
		if (isfinite(x->change_pct))
			vmt_buf_printf(o, "%.3f", x->change_pct);
		else
			vmt_buf_puts(o, "null");
		vmt_buf_printf(o, ",\"significant\":\"%s\"}", sig);
		return;
	}
	char pct[32];
	if (isinf(x->change_pct))
		snprintf(pct, sizeof(pct), "%s", x->change_pct > 0 ? "+inf%" : "-inf%");
	else
		snprintf(pct, sizeof(pct), "%+.1f%%", x->change_pct);
	vmt_buf_printf(o, "%sFAIL %s in %s (column %zu): %.17g -> %.17g (%s, %s), condition '%s'\n",
		       nfail ? "" : "\n", row->name, t->cols[col].label, col + 1, bv, nv, pct,
		       x->sig == VAN_SIG_FEW ? "too few runs to tell it from noise" : "significant",
		       c->text);
}

static const char *row_name(const void *rows, size_t i)
{
	return ((const struct van_rtrow *)rows)[i].name;
}

int vtc_diff_table(char *const *paths, size_t n, const struct vtc_conds *cs, int json, int all)
{
	struct van_rcol *cols = calloc(n, sizeof(*cols));
	struct van_rtable t = { 0 };
	struct vmt_buf o = { 0 };
	size_t ok = 0;
	int status = 2;
	if (!cols) {
		fprintf(stderr, "vmtrace diff: out of memory\n");
		return 2;
	}
	for (; ok < n; ok++) {
		size_t len;
		char msg[256], *text = read_file(paths[ok], &len);
		if (!text)
			goto out;
		int rc = van_rcol_parse(text, len, paths[ok], &cols[ok], msg, sizeof(msg));
		free(text);
		if (rc < 0) {
			fprintf(stderr, "vmtrace: '%s': %s\n", paths[ok],
				rc == -ENOMEM ? "out of memory" : msg);
			goto out;
		}
	}
	if (van_rtable_build(cols, n, ALPHA, &t) < 0) {
		fprintf(stderr, "vmtrace diff: out of memory\n");
		goto out;
	}
	if (vtc_conds_known(cs, row_name, t.rows, t.nrows) < 0)
		goto out;
	if (json) {
		vmt_buf_puts(&o, "{");
		van_rtable_json(&t, all, &o);
		vmt_buf_puts(&o, ",\"failed\":[");
	} else {
		van_rtable_text(&t, all, &o);
	}
	int nfail = 0;
	for (size_t i = 0; i < cs->n && t.base < n; i++)
		for (size_t j = 0; j < t.nrows; j++) {
			if (!vtc_cond_matches(&cs->c[i], t.rows[j].name, 1))
				continue;
			for (size_t c = 0; c < n; c++)
				if (holds(&cs->c[i], &t.rows[j], c, t.base))
					fail_line(&o, json, nfail++, &cs->c[i], &t, &t.rows[j], c);
		}
	/* A kernel that gave no results fails any check: CI must not pass
	 * over a guest that panicked. */
	for (size_t c = 0; c < n && cs->n; c++) {
		if (!cols[c].error)
			continue;
		if (json) {
			vmt_buf_printf(&o, "%s{\"expr\":null,\"metric\":null,\"column\":%zu,\"label\":",
				       nfail ? "," : "", c);
			vmt_buf_json_str(&o, cols[c].label);
			vmt_buf_puts(&o, ",\"error\":");
			vmt_buf_json_str(&o, cols[c].error);
			vmt_buf_puts(&o, "}");
		} else {
			vmt_buf_printf(&o, "%sFAIL %s (column %zu): no results: %s\n", nfail ? "" : "\n",
				       cols[c].label, c + 1, cols[c].error);
		}
		nfail++;
	}
	if (t.base == n) {
		fprintf(stderr, "vmtrace diff: no file has results\n");
		if (!json && vmt_buf_write(&o, stdout) == -ENOMEM)
			fprintf(stderr, "vmtrace diff: out of memory\n");
		goto out;
	}
	status = vtc_diff_verdict(&o, json, cs->n, nfail);
out:
	vmt_buf_free(&o);
	van_rtable_free(&t);
	for (size_t i = 0; i < ok; i++)
		van_rcol_free(&cols[i]);
	free(cols);
	return status;
}
