/*
 * plot.c - `vmtrace plot`: an SVG chart of a trace over time.
 *
 * Four panels, one line per process: VMA count, mapped memory, touched
 * pages (tracks.h says how they are counted) and the syscall rate.  The
 * time axis is split into at most NBUCKETS buckets; when the trace outgrows
 * them, neighbouring buckets are merged and the bucket width doubles, so
 * memory stays fixed per process whatever the trace length.  A bucket
 * keeps the largest value seen in it (so a short peak stays visible) and
 * the last one (carried into the following empty buckets).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"
#include "svg.h"
#include "tracks.h"

static const char plot_usage[] =
	"usage: vmtrace plot -o FILE.svg TRACE\n"
	"\n"
	"Draw TRACE over time as a self-contained SVG image (no scripts, no\n"
	"external fonts) with four panels, one colored line per process:\n"
	"\n"
	"  VMA count       VMAs of the process, from vmtrace's model of its\n"
	"                  address space (splits and merges as the kernel does)\n"
	"  mapped memory   bytes mapped (KiB, MiB or GiB)\n"
	"  touched pages   pages seen in use so far: present pages of the TOUCH\n"
	"                  events plus one per FAULT event\n"
	"  syscall rate    memory-management syscalls per second\n"
	"\n"
	"Each family of processes gets a hue, and each of its processes a shade\n"
	"of it: a process that was started or exec'd a program, with those forked\n"
	"from it that run the same program (a server's workers), or the children\n"
	"of one parent that exec'd the same program (a make's compilers); the\n"
	"legend names each family once.  The roots' families come first, then\n"
	"those that map the most.  Nine hues in all: the others are drawn in gray.\n"
	"\n"
	"  -o, --output=FILE  the SVG file to write (required; '-' for standard\n"
	"                     output)\n"
	"  -h, --help         this help\n"
	"\n"
	"TRACE may be '-' for standard input.\n"
	"Exit status: 0, or 2 for a usage error, an unreadable, truncated or\n"
	"corrupt trace (the events before the damage are drawn), or an output\n"
	"that cannot be written.\n";

#define NBUCKETS 400
#define FIRST_WIDTH_NS 1000ull /* the bucket width doubles from here */
#define NCOLORS 9
#define RATE_GROUP 4 /* buckets per syscall-rate step: 100 steps at most */

/* Colorblind-friendly, distinct on white (Tableau 10 without its gray). */
static const char *const palette[NCOLORS] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f",
};
#define OTHER_COLOR "#bab0ac"

struct series {
	uint64_t vmax[NBUCKETS], vlast[NBUCKETS]; /* VMA count */
	uint64_t mmax[NBUCKETS], mlast[NBUCKETS]; /* mapped bytes */
	uint64_t touched[NBUCKETS];		  /* cumulative: last value */
	uint64_t calls[NBUCKETS];		  /* syscalls in the bucket */
	uint8_t set[NBUCKETS];			  /* vmax..touched hold a value */
	int32_t first, last;			  /* buckets with events */
	uint64_t peak_mapped;
	int execd; /* the process exec'd (else it runs its parent's program) */
};

struct plot {
	van_tracks *trk;
	struct series **s; /* per process, NULL until it has an event */
	uint32_t ns;
	uint64_t width;	   /* bucket width, ns */
	uint64_t end_ns;   /* largest relative time seen */
};

static struct series *series_of(struct plot *p, uint32_t proc)
{
	if (proc >= p->ns) {
		uint32_t n = p->ns ? p->ns : 8;
		while (n <= proc)
			n *= 2;
		struct series **q = realloc(p->s, n * sizeof(*q));
		if (!q)
			return NULL;
		memset(q + p->ns, 0, (n - p->ns) * sizeof(*q));
		p->s = q;
		p->ns = n;
	}
	if (!p->s[proc]) {
		p->s[proc] = calloc(1, sizeof(struct series));
		if (!p->s[proc])
			return NULL;
		p->s[proc]->first = -1;
		p->s[proc]->last = -1;
	}
	return p->s[proc];
}

/* Halve the resolution: bucket i takes buckets 2i and 2i+1. */
static void coarsen(struct plot *p)
{
	for (uint32_t k = 0; k < p->ns; k++) {
		struct series *s = p->s[k];
		if (!s)
			continue;
		for (int i = 0; i < NBUCKETS / 2; i++) {
			int a = 2 * i, b = 2 * i + 1;
			int late = s->set[b] ? b : a;
			uint64_t vmax = s->vmax[a], mmax = s->mmax[a];
			if (s->set[b]) {
				if (!s->set[a] || s->vmax[b] > vmax)
					vmax = s->vmax[b];
				if (!s->set[a] || s->mmax[b] > mmax)
					mmax = s->mmax[b];
			}
			s->vmax[i] = vmax;
			s->mmax[i] = mmax;
			s->vlast[i] = s->vlast[late];
			s->mlast[i] = s->mlast[late];
			s->touched[i] = s->touched[late];
			s->calls[i] = s->calls[a] + s->calls[b];
			s->set[i] = s->set[a] | s->set[b];
		}
		size_t half = NBUCKETS / 2;
		memset(s->vmax + half, 0, half * sizeof(uint64_t));
		memset(s->vlast + half, 0, half * sizeof(uint64_t));
		memset(s->mmax + half, 0, half * sizeof(uint64_t));
		memset(s->mlast + half, 0, half * sizeof(uint64_t));
		memset(s->touched + half, 0, half * sizeof(uint64_t));
		memset(s->calls + half, 0, half * sizeof(uint64_t));
		memset(s->set + half, 0, half);
		if (s->first >= 0)
			s->first /= 2;
		if (s->last >= 0)
			s->last /= 2;
	}
	p->width *= 2;
}

static int plot_event(struct plot *p, const struct vmt_event *ev)
{
	int rc = van_tracks_apply(p->trk, ev, NULL);
	if (rc)
		return rc;
	if (ev->kind == VMT_EV_STACK || ev->kind == VMT_EV_SYMBOL || ev->kind == VMT_EV_STRING)
		return 0; /* tables, written at the end: not a moment in time */
	uint64_t rel = van_tracks_rel_ns(p->trk, ev->ts_ns);
	while (rel / p->width >= NBUCKETS)
		coarsen(p);
	if (rel > p->end_ns)
		p->end_ns = rel;
	int k = (int)(rel / p->width);
	struct series *s = series_of(p, ev->proc);
	if (!s)
		return -ENOMEM;
	if (s->first < 0)
		s->first = k;
	if (k > s->last)
		s->last = k;
	struct van_track_vals v;
	van_tracks_get(p->trk, ev->proc, &v);
	if (!s->set[k] || v.vmas > s->vmax[k])
		s->vmax[k] = v.vmas;
	if (!s->set[k] || v.mapped_bytes > s->mmax[k])
		s->mmax[k] = v.mapped_bytes;
	s->vlast[k] = v.vmas;
	s->mlast[k] = v.mapped_bytes;
	s->touched[k] = v.touched_pages;
	s->set[k] = 1;
	if (v.mapped_bytes > s->peak_mapped)
		s->peak_mapped = v.mapped_bytes;
	if (ev->kind == VMT_EV_SYSCALL)
		s->calls[k]++;
	if (ev->kind == VMT_EV_EXEC)
		s->execd = 1;
	return 0;
}

/* ---- drawing --------------------------------------------------------------- */

#define W 1000.0
#define LEFT 90.0
#define RIGHT 30.0
#define TOP 64.0
#define PANEL_H 190.0
#define PANEL_GAP 62.0

enum what { P_VMAS, P_MAPPED, P_TOUCHED, P_RATE };

/* The value drawn for bucket k of s; *carry holds the last value. */
static double value_at(const struct plot *p, const struct series *s, int k, enum what w,
		       uint64_t *carry)
{
	switch (w) {
	case P_RATE: {
		/* groups of RATE_GROUP buckets: one call in a lone narrow
		 * bucket would otherwise look like a burst */
		int g0 = k - k % RATE_GROUP, end = (int)(p->end_ns / p->width);
		int nb = end - g0 + 1 < RATE_GROUP ? end - g0 + 1 : RATE_GROUP; /* last group */
		uint64_t n = 0;
		for (int i = g0; i < g0 + RATE_GROUP; i++)
			n += s->calls[i];
		return (double)n * 1e9 / ((double)p->width * (nb > 0 ? nb : 1));
	}
	case P_VMAS:
		if (s->set[k]) {
			*carry = s->vlast[k];
			return (double)s->vmax[k];
		}
		return (double)*carry;
	case P_MAPPED:
		if (s->set[k]) {
			*carry = s->mlast[k];
			return (double)s->mmax[k];
		}
		return (double)*carry;
	case P_TOUCHED:
	default:
		if (s->set[k])
			*carry = s->touched[k];
		return (double)*carry;
	}
}

/* The time axis: its step and (*span) its end, in seconds. */
static double x_axis(const struct plot *p, double *span)
{
	double dur = (double)p->end_ns / 1e9;
	/* the last bucket must fit: its end may be past the last event */
	double min = (double)((p->end_ns / p->width + 1) * p->width) / 1e9;
	if (dur < 1e-6)
		dur = 1e-6;
	double step = svg_nice_step(dur, 8, span);
	while (*span + 1e-12 < min && *span < dur * 1.2)
		*span += step;
	return step;
}

struct order {
	uint32_t proc;
	char color[8];	/* "#rrggbb": its family's hue, in its own shade */
	int gray;	/* one of the "other processes" */
	uint32_t group; /* its family (draw) */
};

static void panel(struct vmt_buf *b, const struct plot *p, const struct order *ord, uint32_t n,
		  double y0, enum what w, const char *title)
{
	double x0 = LEFT, pw = W - LEFT - RIGHT, ph = PANEL_H;
	double max = 0;
	int any = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct series *s = p->s[ord[i].proc];
		uint64_t carry = 0;
		for (int k = s->first; k >= 0 && k <= s->last; k++) {
			double v = value_at(p, s, k, w, &carry);
			if (v > max)
				max = v;
			any = 1;
		}
	}
	const char *uname;
	double div = svg_unit(max, w == P_MAPPED, &uname);
	double top, step = svg_nice_step(max / div, 4, &top);
	char label[128];
	if (w == P_MAPPED)
		snprintf(label, sizeof(label), "%s (%s)", title, uname);
	else if (w == P_RATE)
		snprintf(label, sizeof(label), "%s (%s%scalls/s, %g ms buckets)", title, uname,
			 *uname ? " " : "", (double)p->width * RATE_GROUP / 1e6);
	else if (*uname)
		snprintf(label, sizeof(label), "%s (%ss)", title, uname);
	else
		snprintf(label, sizeof(label), "%s", title);
	svg_text(b, x0, y0 - 10, "start", 14, "#222222", 1, 0, label);
	svg_rect(b, x0, y0, pw, ph, "#fbfbfb", "#cccccc");

	/* y axis: ticks, labels, grid */
	for (double v = 0; v <= top + step / 2; v += step) {
		double y = y0 + ph - v / top * ph;
		char t[32];
		svg_fmt_tick(t, sizeof(t), v, step);
		svg_line(b, x0, y, x0 + pw, y, "#e6e6e6", 1);
		svg_line(b, x0 - 5, y, x0, y, "#666666", 1);
		svg_text(b, x0 - 8, y + 4, "end", 11, "#444444", 0, 0, t);
	}
	/* x axis: time since the start, up to a round number >= the end;
	 * in ms when the trace is shorter than a second */
	double span, xstep = x_axis(p, &span);
	double xscale = span < 1 ? 1000 : 1;
	for (double t = 0; t <= span + xstep / 2; t += xstep) {
		double x = x0 + t / span * pw;
		char s[32];
		svg_fmt_tick(s, sizeof(s), t * xscale, xstep * xscale);
		svg_line(b, x, y0 + ph, x, y0 + ph + 5, "#666666", 1);
		svg_text(b, x, y0 + ph + 18, "middle", 11, "#444444", 0, 0, s);
	}
	svg_text(b, x0 + pw, y0 + ph + 34, "end", 11, "#444444", 0, 0,
		 xscale > 1 ? "time since start (ms)" : "time since start (s)");
	if (!any) {
		svg_text(b, x0 + pw / 2, y0 + ph / 2, "middle", 13, "#888888", 0, 0,
			 w == P_TOUCHED ? "no TOUCH or FAULT events (recorded with --touch=none?)"
					: "no data");
		return;
	}
	/* lines, gray ones first so that colors stay on top */
	double bucket_s = (double)p->width / 1e9;
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < n; i++) {
			int gray = ord[i].gray;
			if (gray != (pass == 0))
				continue;
			const struct series *s = p->s[ord[i].proc];
			uint64_t carry = 0;
			svg_poly_begin(b, ord[i].color, gray ? 1 : 1.8);
			for (int k = s->first; k >= 0 && k <= s->last; k++) {
				double v = value_at(p, s, k, w, &carry) / div;
				double y = y0 + ph - v / top * ph;
				double xa = x0 + bucket_s * k / span * pw;
				double xb = x0 + bucket_s * (k + 1) / span * pw;
				if (xb > x0 + pw)
					xb = x0 + pw;
				svg_poly_point(b, xa, y);
				svg_poly_point(b, xb, y);
			}
			svg_poly_end(b);
		}
}

/* A family of processes, drawn in one hue, each member in a shade of it
 * (the first in the hue itself), so that a server and its workers are
 * told apart from other programs and from each other: a process that
 * was started (a root) or exec'd a program, the processes forked from
 * it that never exec'd (a server's workers run their parent's program),
 * and the children of one parent that exec'd the same program (a make's
 * compilers), with theirs. */
struct group {
	uint32_t parent; /* VMT_NONE: a root; else the parent of its exec'd heads */
	const char *name;
	uint32_t first;	 /* its lowest process index: the one named */
	uint32_t members;
	uint32_t forked;   /* members that run a member's program without exec */
	uint32_t siblings; /* members beside the first that exec'd the same */
	uint64_t peak;	   /* the largest peak mapped of its members */
	const char *color;
};

/* Roots first (the program itself), then the families that map the most. */
static int by_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	int rx = x->parent == VMT_NONE, ry = y->parent == VMT_NONE;
	if (rx != ry)
		return rx ? -1 : 1;
	if (!rx && x->peak != y->peak)
		return x->peak < y->peak ? 1 : -1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The k-th shade of the hue #rrggbb into out: the hue itself for k 0, then
 * darker and lighter by turns, so that neighbours differ most. */
static void shade(char out[8], const char *hue, uint32_t k)
{
	/* (towards black when negative, towards white when positive) */
	static const double mix[] = { 0, -0.45, 0.5, -0.25, 0.3, -0.6, 0.65, -0.12, 0.15 };
	unsigned rgb[3];
	double m = mix[k % (sizeof(mix) / sizeof(mix[0]))];
	if (sscanf(hue, "#%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]) != 3) {
		snprintf(out, 8, "%s", OTHER_COLOR);
		return;
	}
	for (int i = 0; i < 3; i++) {
		double v = m < 0 ? rgb[i] * (1 + m) : rgb[i] + (255 - rgb[i]) * m;
		rgb[i] = (unsigned)(v + 0.5);
	}
	snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* The family of process pr (at ord index i), added to g[0..*ng) if new;
 * fam[] holds the families of the processes seen so far (by index). */
static uint32_t family_of(const struct plot *p, uint32_t pr, const uint32_t *fam,
			  struct group *g, uint32_t *ng)
{
	uint32_t parent = van_tracks_parent(p->trk, pr);
	const char *name = van_tracks_proc_name(p->trk, pr);
	int known = parent != VMT_NONE && parent < p->ns && fam[parent] != VMT_NONE;
	uint32_t k = 0;
	if (known && !p->s[pr]->execd) {
		/* forked, running its parent's program: its parent's family */
		k = fam[parent];
		g[k].forked++;
	} else {
		while (parent != VMT_NONE && k < *ng &&
		       !(g[k].parent == parent && !strcmp(g[k].name, name)))
			k++;
		if (parent == VMT_NONE || k == *ng) {
			k = (*ng)++;
			g[k] = (struct group){ parent, name, pr, 0, 0, 0, 0, NULL };
		} else {
			g[k].siblings++;
		}
	}
	g[k].members++;
	if (p->s[pr]->peak_mapped > g[k].peak)
		g[k].peak = p->s[pr]->peak_mapped;
	return k;
}

/* The families of the n processes of ord (in process order), coloured:
 * the first NCOLORS get a hue each, the rest gray (all NCOLORS + 1 but the
 * last where there is one more), and each process its shade of its
 * family's hue.  Returns the families (sorted), or NULL without memory. */
static struct group *colour_groups(const struct plot *p, struct order *ord, uint32_t n,
				   uint32_t *ngroups)
{
	struct group *g = calloc(n ? n : 1, sizeof(*g));
	uint32_t *fam = malloc((size_t)(p->ns ? p->ns : 1) * sizeof(*fam));
	uint32_t ng = 0;
	if (!g || !fam) {
		free(g);
		free(fam);
		return NULL;
	}
	for (uint32_t i = 0; i < p->ns; i++)
		fam[i] = VMT_NONE;
	for (uint32_t i = 0; i < n; i++)
		ord[i].group = fam[ord[i].proc] = family_of(p, ord[i].proc, fam, g, &ng);
	free(fam);
	/* (sorted through an index, so that ord's group numbers follow) */
	uint32_t *at = malloc((size_t)(ng ? ng : 1) * sizeof(*at));
	uint32_t *nth = calloc(ng ? ng : 1, sizeof(*nth));
	struct group *sorted = malloc((size_t)(ng ? ng : 1) * sizeof(*sorted));
	if (!at || !nth || !sorted) {
		free(at);
		free(nth);
		free(sorted);
		free(g);
		return NULL;
	}
	memcpy(sorted, g, (size_t)ng * sizeof(*g));
	qsort(sorted, ng, sizeof(*sorted), by_group);
	for (uint32_t k = 0; k < ng; k++)
		for (uint32_t j = 0; j < ng; j++)
			if (sorted[j].first == g[k].first) {
				at[k] = j;
				break;
			}
	for (uint32_t j = 0; j < ng; j++)
		sorted[j].color = j < NCOLORS || ng == NCOLORS + 1 ? palette[j % NCOLORS] : OTHER_COLOR;
	if (ng == NCOLORS + 1)
		sorted[NCOLORS].color = OTHER_COLOR; /* only 9 colors: the 10th is gray */
	for (uint32_t i = 0; i < n; i++) {
		struct group *f = &sorted[ord[i].group = at[ord[i].group]];
		ord[i].gray = !strcmp(f->color, OTHER_COLOR);
		if (ord[i].gray)
			snprintf(ord[i].color, sizeof(ord[i].color), "%s", OTHER_COLOR);
		else
			shade(ord[i].color, f->color, nth[ord[i].group]++);
	}
	free(at);
	free(nth);
	free(g);
	*ngroups = ng;
	return sorted;
}

/* A family's name in the legend: its first process, and how many more
 * (forked and exec'd siblings). */
static void family_label(struct vmt_buf *t, const struct plot *p, const struct group *f)
{
	vmt_buf_printf(t, "p%u %s", f->first, *f->name ? f->name : "?");
	if (!f->siblings && van_tracks_os_pid(p->trk, f->first))
		vmt_buf_printf(t, " (pid %d)", van_tracks_os_pid(p->trk, f->first));
	if (f->siblings)
		vmt_buf_printf(t, " +%u sibling%s", f->siblings, f->siblings == 1 ? "" : "s");
	if (f->forked)
		vmt_buf_printf(t, "%s +%u forked", f->siblings ? "," : "", f->forked);
}

/* The subtitle: the command (shell-quoted), cut to leave room for the
 * facts, all within `width` pixels at 12 px. */
static void subtitle(struct vmt_buf *t, const struct plot *p, uint32_t n,
		     const struct vmt_header *h, double width)
{
	struct vmt_buf facts = { 0 };
	vmt_buf_printf(&facts, "%.3f s, %u process%s; kernel %s, page size %u",
		       (double)p->end_ns / 1e9, n, n == 1 ? "" : "es", h->kernel, h->page_size);
	vmt_buf_reset(t);
	vmt_buf_shell_words(t, h->argv, h->argc);
	double room = width - svg_text_width(facts.data ? facts.data : "", 12, 0) -
		      svg_text_width(" — ", 12, 0);
	if (room >= width / 4)
		svg_fit(t, 0, room, 12, 0);
	vmt_buf_printf(t, "%s%s", h->argc ? " — " : "", facts.data ? facts.data : "");
	vmt_buf_free(&facts);
	svg_fit(t, 0, width, 12, 0); /* (a kernel name too long for the rest) */
}

static void draw(struct vmt_buf *b, const struct plot *p, const char *path,
		 const struct vmt_header *h)
{
	uint32_t n = 0;
	struct order *ord = calloc(p->ns ? p->ns : 1, sizeof(*ord));
	if (!ord) {
		b->oom = 1;
		return;
	}
	for (uint32_t i = 0; i < p->ns; i++)
		if (p->s[i] && p->s[i]->first >= 0)
			ord[n++].proc = i;
	uint32_t ng = 0;
	struct group *grp = colour_groups(p, ord, n, &ng);
	if (!grp) {
		free(ord);
		b->oom = 1;
		return;
	}
	uint32_t ncolored = ng < NCOLORS ? ng : NCOLORS, gray = 0;
	for (uint32_t k = ncolored; k < ng; k++)
		gray += grp[k].members;
	int legend_rows = (int)(ncolored + (gray > 0) + 2) / 3;
	double height = TOP + 4 * (PANEL_H + PANEL_GAP) + 20 + 22.0 * legend_rows;
	const double width = W - LEFT - RIGHT;
	struct vmt_buf t = { 0 };
	vmt_buf_printf(&t, "vmtrace plot of %s", path);
	svg_open(b, W, height, t.data);
	if (t.data && svg_text_width(t.data, 17, 1) > width) {
		/* the path's last components, which name the trace */
		const char *tail = path;
		for (const char *c = path; *c; c++)
			if (*c == '/' && svg_text_width(c, 17, 1) + svg_text_width("vmtrace plot of …", 17, 1) <= width) {
				tail = c;
				break;
			}
		vmt_buf_reset(&t);
		vmt_buf_printf(&t, "vmtrace plot of %s%s", tail == path ? "" : "…", tail);
		svg_fit(&t, 0, width, 17, 1);
	}
	svg_text(b, LEFT, 26, "start", 17, "#111111", 1, 0, t.data);
	subtitle(&t, p, n, h, width);
	svg_text(b, LEFT, 46, "start", 12, "#555555", 0, 0, t.data);

	static const char *const titles[] = { "VMA count", "Mapped memory", "Touched pages",
					      "Syscall rate" };
	for (int w = 0; w < 4; w++)
		panel(b, p, ord, n, TOP + 22 + w * (PANEL_H + PANEL_GAP), (enum what)w, titles[w]);
	/* legend: a swatch of each family's first shades, and its name */
	double ly = TOP + 22 + 4 * (PANEL_H + PANEL_GAP) - 8;
	svg_text(b, LEFT, ly, "start", 12, "#222222", 1, 0, "Processes:");
	for (uint32_t i = 0; i <= ncolored; i++) {
		int others = i == ncolored;
		if (others && !gray)
			break;
		double x = LEFT + (i % 3) * 290.0, y = ly + 20 + (i / 3) * 22.0;
		vmt_buf_reset(&t);
		if (others) {
			vmt_buf_printf(&t, "%u other process%s", gray, gray == 1 ? "" : "es");
			svg_rect(b, x, y - 10, 22, 10, OTHER_COLOR, NULL);
		} else {
			family_label(&t, p, &grp[i]);
			uint32_t k = grp[i].members < 4 ? grp[i].members : 4;
			for (uint32_t j = 0; j < k; j++) {
				char c[8];
				shade(c, grp[i].color, j);
				svg_rect(b, x + 22.0 * j / k, y - 10, 22.0 / k, 10, c, NULL);
			}
		}
		svg_fit(&t, 0, 290 - 30 - 8, 12, 0);
		svg_text(b, x + 30, y, "start", 12, "#222222", 0, 0, t.data);
	}
	svg_close(b);
	vmt_buf_free(&t);
	free(grp);
	free(ord);
}

static int run_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'h': fputs(plot_usage, stdout); return 0;
		default:
			if (optopt == 'o')
				return vtc_usage_error("plot", "option '%s' needs a value", argv[optind - 1]);
			return vtc_usage_error("plot", "unknown option '%s'", argv[optind - 1]);
		}
	}
	/* No '+' in the option string: options may follow the trace
	 * (vmtrace plot TRACE -o FILE.svg). */
	if (argc - optind > 1)
		return vtc_usage_error("plot", "too many arguments");
	const char *trace = optind < argc ? argv[optind] : NULL;
	if (!trace)
		return vtc_usage_error("plot", "no trace given");
	if (!output)
		return vtc_usage_error("plot", "no output file given (-o FILE.svg)");

	struct vtc_input in;
	if (vtc_input_open(&in, trace))
		return 2;
	const struct vmt_header *h = vmt_reader_header(in.r);
	struct plot p = { .width = FIRST_WIDTH_NS };
	p.trk = van_tracks_new(h);
	if (!p.trk) {
		fprintf(stderr, "vmtrace plot: out of memory\n");
		vtc_input_close(&in);
		return 2;
	}
	struct vmt_event ev;
	int rc, err = 0, status = 0;
	while ((rc = vmt_reader_next(in.r, &ev)) == 1)
		if ((err = plot_event(&p, &ev)))
			break;
	if (rc < 0) {
		vtc_input_report(&in);
		status = 2;
	} else if (err) {
		fprintf(stderr, "vmtrace plot: '%s': %s\n", in.path, vmt_strerror(err));
		status = 2;
	}
	struct vmt_buf b = { 0 };
	if (!err)
		draw(&b, &p, in.path, h);
	if (b.oom) {
		vtc_put_output("plot", &b, stdout);
		status = 2;
	} else if (!err) {
		FILE *out = strcmp(output, "-") ? fopen(output, "w") : stdout;
		if (!out) {
			fprintf(stderr, "vmtrace plot: cannot create '%s': %s\n", output, strerror(errno));
			status = 2;
		} else {
			vmt_buf_write(&b, out);
			if (out != stdout && (ferror(out) | fclose(out))) {
				fprintf(stderr, "vmtrace plot: cannot write '%s': %s\n", output,
					strerror(errno));
				status = 2;
			}
		}
	}
	vmt_buf_free(&b);
	for (uint32_t i = 0; i < p.ns; i++)
		free(p.s[i]);
	free(p.s);
	van_tracks_free(p.trk);
	vtc_input_close(&in);
	return status;
}

const struct vtc_cmd vtc_cmd_plot = {
	"plot", run_plot, "draw VMAs, mapped memory, touched pages and syscall rate as SVG",
	plot_usage,
};
