/*
 * rtabletext.c - the table of several kernels (rtable.h) as text, in the
 * manner of mmtests' compare-kernels.sh, and as JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rtable.h"
#include "vmtrace.h"
#include "vmtutil.h"

/* ---- text -------------------------------------------------------------------- */

#define GROUP_W 27 /* a column group: value and mark 12, cv 7, ratio 7, mark 1 */
#define GAP "  "
#define WRAP_LINES 6

static double stat_of(const struct van_rtrow *row, const struct van_rcell *x)
{
	return row->mean ? x->mean : x->median;
}

/* A time in the unit that reads best: ns, us, ms or s. */
static double unit_of(double v, const char **u)
{
	static const struct { double div; const char *name; } units[] = {
		{ 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" },
	};
	for (size_t i = 0; i < 3; i++)
		if (fabs(v) >= units[i].div) {
			*u = units[i].name;
			return units[i].div;
		}
	*u = "ns";
	return 1;
}

static void fmt_value(char *b, size_t n, double v, double div, const char *unit)
{
	double x = v / div, a = fabs(x);
	/* counts and nanoseconds whole; other times with their decimals */
	if (x == floor(x) && a < 1e15 && (!*unit || div == 1))
		snprintf(b, n, "%.0f%s", x, unit);
	else
		snprintf(b, n, a < 10 ? "%.3f%s" : a < 100 ? "%.2f%s" : a < 1e5 ? "%.1f%s" : "%.0f%s", x,
			 unit);
}

static void fmt_ratio(char *b, size_t n, double r)
{
	snprintf(b, n, r == 0 ? "0" : r < 0.01 ? "%.1e" : r < 10 ? "%.3f" : r < 1000 ? "%.1f" : "%.1e",
		 r);
}

static char sig_mark(int sig)
{
	return sig == VAN_SIG_YES ? '*' : sig == VAN_SIG_FEW ? '?' : ' ';
}

static void group(struct vmt_buf *o, const char *s)
{
	vmt_buf_printf(o, GAP "%-*.*s", GROUP_W, GROUP_W, s);
}

static void cell_text(struct vmt_buf *o, const struct van_rtable *t, const struct van_rtrow *row,
		      size_t c)
{
	const struct van_rcell *x = &row->cell[c];
	char val[40], cv[16], ratio[16];
	if (!x->have) {
		vmt_buf_printf(o, GAP "%11s %-*s", "-", GROUP_W - 12, "");
		return;
	}
	const char *unit = "";
	double div = row->timing ? unit_of(stat_of(row, x), &unit) : 1;
	fmt_value(val, sizeof(val), stat_of(row, x), div, unit);
	if (t->cols[c].r.nruns < 2 || x->mean == 0)
		snprintf(cv, sizeof(cv), "-");
	else
		snprintf(cv, sizeof(cv), x->cv < 1000 ? "%.1f%%" : "%.0f%%", x->cv);
	if (c == t->base)
		ratio[0] = 0;
	else
		fmt_ratio(ratio, sizeof(ratio), x->ratio);
	int emulated = row->timing && !strcmp(t->cols[c].where, "tcg");
	vmt_buf_printf(o, GAP "%11s%c %6s %6s%c", val, emulated ? '~' : ' ', cv, ratio,
		       c == t->base ? ' ' : sig_mark(x->sig));
}

/* One row of the header: key, then each column's text. */
typedef void (*col_text_fn)(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n);

static void header_row(struct vmt_buf *o, const struct van_rtable *t, int namew, const char *key,
		       col_text_fn fn, size_t arg)
{
	char b[160];
	vmt_buf_printf(o, "%-*s", namew, key);
	for (size_t c = 0; c < t->ncols; c++) {
		fn(t, c, arg, b, sizeof(b));
		group(o, b);
	}
	while (o->len && o->data[o->len - 1] == ' ')
		o->len--;
	vmt_buf_puts(o, "\n");
}

static void h_label(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n)
{
	snprintf(b, n, "%s", t->cols[c].label);
}

static void h_where(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n)
{
	const char *w = t->cols[c].where;
	snprintf(b, n, "%s", !strcmp(w, "host") ? "this machine" : !strcmp(w, "kvm") ? "qemu kvm"
			     : "qemu tcg (emulated)");
}

static void h_size(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n)
{
	const struct van_rcol *col = &t->cols[c];
	char mem[32] = "";
	if (col->memory > 0)
		vmt_format_bytes(mem, sizeof(mem), (uint64_t)col->memory);
	if (col->cpus && mem[0])
		snprintf(b, n, "%d, %s", col->cpus, mem);
	else if (col->cpus)
		snprintf(b, n, "%d", col->cpus);
	else
		snprintf(b, n, "%s", mem[0] ? mem : "-");
}

static void h_runs(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n)
{
	const struct van_rcol *col = &t->cols[c];
	if (col->error) {
		snprintf(b, n, "-");
		return;
	}
	int few = t->base < t->ncols && c != t->base &&
		  van_mwu_min_p(t->cols[t->base].r.nruns, col->r.nruns) >= t->alpha;
	snprintf(b, n, "%u%s", col->r.nruns, few ? " (too few runs)" : "");
}

static void h_mm(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n)
{
	const struct van_rcol *col = &t->cols[c];
	const char *v = col->mm[arg], *r = col->mm_rec[arg];
	snprintf(b, n, "%s%s", v ? v : "-", v && r && strcmp(v, r) ? " !" : "");
}

static void h_noise_host(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n)
{
	double v = t->cols[c].host_noise;
	snprintf(b, n, v < 0 ? "-" : "%.1f%%", v);
}

static void h_noise_guest(const struct van_rtable *t, size_t c, size_t arg, char *b, size_t n)
{
	double v = t->cols[c].guest_noise;
	snprintf(b, n, v < 0 ? "-" : "%.1f%%", v);
}

/* The status row: "ok", or why there are no results, wrapped over a few
 * lines of the column's width.  Returns whether some text was cut. */
static int status_rows(struct vmt_buf *o, const struct van_rtable *t, int namew)
{
	const char *pos[64];
	size_t nc = t->ncols < 64 ? t->ncols : 64;
	int cut = 0, more = 1;
	for (size_t c = 0; c < nc; c++)
		pos[c] = t->cols[c].error;
	for (int line = 0; line < WRAP_LINES && more; line++) {
		more = 0;
		vmt_buf_printf(o, "%-*s", namew, line ? "" : "status");
		for (size_t c = 0; c < nc; c++) {
			char b[GROUP_W + 16];
			const char *p = pos[c];
			if (!t->cols[c].error) {
				snprintf(b, sizeof(b), "%s", line ? "" : "ok");
			} else if (!p || !*p) {
				b[0] = 0;
			} else {
				const char *pre = line ? "" : "failed: ";
				size_t room = GROUP_W - strlen(pre), len = strlen(p), take = len;
				if (len > room) {
					take = room;
					while (take > room / 2 && p[take] != ' ')
						take--;
					if (p[take] != ' ')
						take = room;
				}
				snprintf(b, sizeof(b), "%s%.*s", pre, (int)take, p);
				p += take;
				while (*p == ' ')
					p++;
				pos[c] = p;
				if (*p) {
					more = 1;
					if (line == WRAP_LINES - 1) {
						cut = 1;
						size_t bl = strlen(b);
						snprintf(b + (bl > GROUP_W - 3 ? GROUP_W - 3 : bl), 4, "...");
					}
				}
			}
			group(o, b);
		}
		while (o->len && o->data[o->len - 1] == ' ')
			o->len--;
		vmt_buf_puts(o, "\n");
	}
	return cut;
}

static void sub_header(struct vmt_buf *o, const struct van_rtable *t, int namew, const char *title)
{
	vmt_buf_printf(o, "\n%-*s", namew, title);
	for (size_t c = 0; c < t->ncols; c++)
		vmt_buf_printf(o, GAP "%11s  %6s %6s ", "median", "cv", c == t->base ? "(base)" : "ratio");
	while (o->len && o->data[o->len - 1] == ' ')
		o->len--;
	vmt_buf_puts(o, "\n");
}

static void rows_text(struct vmt_buf *o, const struct van_rtable *t, int namew, int sec, int all)
{
	for (size_t i = 0; i < t->nrows; i++) {
		const struct van_rtrow *row = &t->rows[i];
		if (row->section != sec || !van_rtable_shown(t, row, all))
			continue;
		char name[80];
		snprintf(name, sizeof(name), "%s%s", row->name, row->mean ? " (mean)" : "");
		vmt_buf_printf(o, "%-*s", namew, name);
		for (size_t c = 0; c < t->ncols; c++)
			cell_text(o, t, row, c);
		while (o->len && o->data[o->len - 1] == ' ')
			o->len--;
		vmt_buf_puts(o, "\n");
	}
}

/* The legend, and what the header could not hold. */
static void notes(struct vmt_buf *o, const struct van_rtable *t, int cut)
{
	int tcg = 0, few = 0, differs = 0, means = 0;
	size_t fa = 0, fb = 0;
	for (size_t c = 0; c < t->ncols; c++) {
		const struct van_rcol *col = &t->cols[c];
		tcg |= !strcmp(col->where, "tcg") && !col->error;
		if (t->base < t->ncols && c != t->base && !col->error &&
		    van_mwu_min_p(t->cols[t->base].r.nruns, col->r.nruns) >= t->alpha && !few) {
			few = 1;
			fa = t->cols[t->base].r.nruns;
			fb = col->r.nruns;
		}
		for (size_t k = 0; k < VAN_RCOL_MM; k++)
			differs |= col->mm[k] && col->mm_rec[k] && strcmp(col->mm[k], col->mm_rec[k]);
	}
	for (size_t i = 0; i < t->nrows; i++)
		means |= t->rows[i].mean;
	vmt_buf_printf(o, "\n(ratio: the median%s over the base's, the divisor at least 1;"
			  " cv: the standard deviation over the mean;\n"
			  " *: significant, a two-sided Mann-Whitney U test over the runs"
			  " giving p < %g",
		       means ? " (the mean in \"(mean)\" rows: rare events a median of 0 hides)" : "",
		       t->alpha);
	if (few)
		vmt_buf_printf(o, ";\n ?: too few runs to tell: with %zu and %zu runs no difference can"
				  " be significant; give each at least %u (vmreplay --repeat=%u)",
			       fa, fb, van_runs_needed(t->alpha), van_runs_needed(t->alpha));
	if (tcg)
		vmt_buf_puts(o, ";\n ~: a time on a processor that TCG emulates: compare those"
				" columns' counts and ratios, not their times with the others'");
	if (differs) {
		const struct van_rcol *rc = NULL;
		for (size_t c = 0; c < t->ncols && !rc; c++)
			for (size_t k = 0; k < VAN_RCOL_MM && !rc; k++)
				if (t->cols[c].mm_rec[k])
					rc = &t->cols[c];
		vmt_buf_puts(o, ";\n !: a setting not as recorded (the recording's:");
		for (size_t k = 0; rc && k < VAN_RCOL_MM; k++)
			if (rc->mm_rec[k])
				vmt_buf_printf(o, " %s=%s", vmt_mm_key(k), rc->mm_rec[k]);
		vmt_buf_puts(o, "; zeropage is a boot parameter of some hypervisors' guests, which"
				" no guest here can take)");
	}
	vmt_buf_puts(o, ")\n");
	for (size_t c = 0; c < t->ncols; c++) {
		const struct van_rcol *col = &t->cols[c];
		if (col->error && cut)
			vmt_buf_printf(o, "%s: failed: %s\n", col->label, col->error);
		if (col->unset)
			vmt_buf_printf(o, "%s: not set as asked: %s\n", col->label, col->unset);
	}
}

void van_rtable_text(const struct van_rtable *t, int all, struct vmt_buf *o)
{
	int namew = 26;
	for (size_t i = 0; i < t->nrows; i++)
		if (van_rtable_shown(t, &t->rows[i], all)) {
			int w = (int)strlen(t->rows[i].name) + (t->rows[i].mean ? 7 : 0);
			if (w > namew)
				namew = w;
		}
	header_row(o, t, namew, "kernel", h_label, 0);
	header_row(o, t, namew, "ran on", h_where, 0);
	header_row(o, t, namew, "cpus, memory", h_size, 0);
	header_row(o, t, namew, "runs", h_runs, 0);
	for (size_t k = 0; k < VAN_RCOL_MM && vmt_mm_key(k); k++) {
		int any = 0;
		for (size_t c = 0; c < t->ncols; c++)
			any |= t->cols[c].mm[k] != NULL;
		if (any)
			header_row(o, t, namew, vmt_mm_key(k), h_mm, k);
	}
	int noise = 0, gnoise = 0;
	for (size_t c = 0; c < t->ncols; c++) {
		noise |= t->cols[c].host_noise >= 0;
		gnoise |= t->cols[c].guest_noise >= 0;
	}
	if (noise)
		header_row(o, t, namew, "others' cpu, machine", h_noise_host, 0);
	if (gnoise)
		header_row(o, t, namew, "others' cpu, guest", h_noise_guest, 0);
	int cut = status_rows(o, t, namew);
	/* "~" marks only the emulated columns that have times to show */
	int tcg = 0;
	for (size_t c = 0; c < t->ncols; c++)
		tcg |= !strcmp(t->cols[c].where, "tcg") && !t->cols[c].error;
	if (t->base < t->ncols) {
		sub_header(o, t, namew, "counts");
		rows_text(o, t, namew, VAN_RS_COUNTS, all);
		sub_header(o, t, namew, tcg ? "times (~: emulated)" : "times");
		rows_text(o, t, namew, VAN_RS_TIMES, all);
	} else {
		vmt_buf_puts(o, "\n(no column has results)\n");
	}
	notes(o, t, cut);
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_settings(struct vmt_buf *o, char *const *mm)
{
	int first = 1;
	vmt_buf_puts(o, "{");
	for (size_t k = 0; k < VAN_RCOL_MM && vmt_mm_key(k); k++) {
		if (!mm[k])
			continue;
		vmt_buf_printf(o, "%s\"%s\":", first ? "" : ",", vmt_mm_key(k));
		vmt_buf_json_str(o, mm[k]);
		first = 0;
	}
	vmt_buf_puts(o, "}");
}

static void json_col(struct vmt_buf *o, const struct van_rtable *t, size_t c)
{
	const struct van_rcol *col = &t->cols[c];
	vmt_buf_puts(o, "{\"label\":");
	vmt_buf_json_str(o, col->label);
	vmt_buf_puts(o, ",\"file\":");
	vmt_buf_json_str(o, col->path);
	vmt_buf_puts(o, ",\"kernel\":");
	vmt_buf_json_str(o, col->error ? NULL : col->r.kernel);
	vmt_buf_puts(o, ",\"where\":");
	vmt_buf_json_str(o, col->where);
	vmt_buf_printf(o, ",\"cpus\":%d,\"memory_bytes\":", col->cpus);
	vmt_buf_json_num(o, col->memory);
	vmt_buf_printf(o, ",\"runs\":%u,\"error\":", col->error ? 0 : col->r.nruns);
	vmt_buf_json_str(o, col->error);
	vmt_buf_puts(o, ",\"mm\":");
	json_settings(o, col->mm);
	vmt_buf_puts(o, ",\"recorded_mm\":");
	json_settings(o, col->mm_rec);
	vmt_buf_puts(o, ",\"mm_unset\":");
	vmt_buf_json_str(o, col->unset);
	vmt_buf_puts(o, ",\"host_noise_pct\":");
	col->host_noise < 0 ? vmt_buf_puts(o, "null") : vmt_buf_json_num(o, col->host_noise);
	vmt_buf_puts(o, ",\"guest_noise_pct\":");
	col->guest_noise < 0 ? vmt_buf_puts(o, "null") : vmt_buf_json_num(o, col->guest_noise);
	vmt_buf_puts(o, "}");
}

static const char *sig_name(int sig)
{
	return sig == VAN_SIG_YES ? "yes" : sig == VAN_SIG_FEW ? "too few runs" : "no";
}

static void json_cell(struct vmt_buf *o, const struct van_rtable *t, const struct van_rtrow *row,
		      size_t c)
{
	const struct van_rcell *x = &row->cell[c];
	if (!x->have) {
		vmt_buf_puts(o, "null");
		return;
	}
	static const char *const keys[] = { "median", "mean", "sd", "cv_pct", "min", "max" };
	const double vals[] = { x->median, x->mean, x->sd, x->cv, x->min, x->max };
	vmt_buf_puts(o, "{");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		vmt_buf_printf(o, "%s\"%s\":", i ? "," : "", keys[i]);
		vmt_buf_json_num(o, vals[i]);
	}
	if (c == t->base) {
		vmt_buf_puts(o, ",\"ratio\":1,\"change_pct\":0,\"p\":null,\"significant\":null}");
		return;
	}
	vmt_buf_puts(o, ",\"ratio\":");
	vmt_buf_json_num(o, x->ratio);
	vmt_buf_puts(o, ",\"change_pct\":");
	vmt_buf_json_num(o, x->change_pct);
	vmt_buf_puts(o, ",\"p\":");
	vmt_buf_json_num(o, x->p);
	vmt_buf_printf(o, ",\"significant\":\"%s\"}", sig_name(x->sig));
}

void van_rtable_json(const struct van_rtable *t, int all, struct vmt_buf *o)
{
	vmt_buf_printf(o, "\"kind\":\"results-table\",\"alpha\":%g,\"base\":", t->alpha);
	if (t->base < t->ncols)
		vmt_buf_printf(o, "%zu", t->base);
	else
		vmt_buf_puts(o, "null");
	vmt_buf_puts(o, ",\"columns\":[");
	for (size_t c = 0; c < t->ncols; c++) {
		if (c)
			vmt_buf_puts(o, ",");
		json_col(o, t, c);
	}
	vmt_buf_puts(o, "],\"metrics\":[");
	int first = 1;
	for (size_t i = 0; i < t->nrows; i++) {
		const struct van_rtrow *row = &t->rows[i];
		if (!van_rtable_shown(t, row, all))
			continue;
		vmt_buf_printf(o, "%s{\"name\":", first ? "" : ",");
		vmt_buf_json_str(o, row->name);
		vmt_buf_printf(o, ",\"section\":\"%s\",\"timing\":%s,\"stat\":\"%s\",\"cells\":[",
			       row->section == VAN_RS_TIMES ? "times" : "counts",
			       row->timing ? "true" : "false", row->mean ? "mean" : "median");
		for (size_t c = 0; c < t->ncols; c++) {
			if (c)
				vmt_buf_puts(o, ",");
			json_cell(o, t, row, c);
		}
		vmt_buf_puts(o, "]}");
		first = 0;
	}
	vmt_buf_puts(o, "]");
}
