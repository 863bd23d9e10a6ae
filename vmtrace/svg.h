/*
 * svg.h - writing small self-contained SVG charts (vmtrace plot): shapes
 * and text into a vmt_buf, and the axis arithmetic (nice ticks, units).
 *
 * Everything is inline SVG 1.1: no scripts, no external fonts (the generic
 * "sans-serif" family), no images, so the file opens anywhere.
 */
#ifndef VTC_SVG_H
#define VTC_SVG_H

#include <stdint.h>
#include "vmtrace.h"

/* Open an SVG document of w x h pixels with a white background. */
void svg_open(struct vmt_buf *b, double w, double h, const char *title);
void svg_close(struct vmt_buf *b);

/* Text at (x, y) (baseline); anchor "start", "middle" or "end"; rotate
 * by `rot` degrees about (x, y) when not 0. */
void svg_text(struct vmt_buf *b, double x, double y, const char *anchor, double size,
	      const char *fill, int bold, double rot, const char *text);
void svg_line(struct vmt_buf *b, double x1, double y1, double x2, double y2,
	      const char *stroke, double width);
void svg_rect(struct vmt_buf *b, double x, double y, double w, double h, const char *fill,
	      const char *stroke);

/* A polyline: begin, points, end. */
void svg_poly_begin(struct vmt_buf *b, const char *stroke, double width);
void svg_poly_point(struct vmt_buf *b, double x, double y);
void svg_poly_end(struct vmt_buf *b);

/* The width in pixels of text at `size` px (bold: a tenth wider), from
 * the advance widths of DejaVu Sans, the widest of the common sans-serif
 * fonts: text that fits by this estimate fits in the font a viewer picks. */
double svg_text_width(const char *text, double size, int bold);

/* Cut b's text from offset `from` on to fit in `width` pixels (at size,
 * bold), with "…" where it was cut: after the last space or '/' that
 * leaves the most of it, else inside the last word.  Unchanged when it
 * fits. */
void svg_fit(struct vmt_buf *b, size_t from, double width, double size, int bold);

/* Append s with XML special characters escaped. */
void svg_escape(struct vmt_buf *b, const char *s);

/* Axis ticks for values in [0, max]: a "nice" step (1, 2 or 5 times a
 * power of ten) giving about `want` intervals; returns the step and sets
 * *top to the first multiple of the step >= max (> 0). */
double svg_nice_step(double max, int want, double *top);

/* A unit for values up to max: for bytes, the largest of B, KiB, MiB,
 * GiB, TiB not above max; for plain counts, "", "thousand", "million"...  Returns the
 * divisor and sets *name. */
double svg_unit(double max, int bytes, const char **name);

/* Format a tick value v (already divided by the unit) with as many
 * decimals as the step needs. */
void svg_fmt_tick(char *out, size_t n, double v, double step);

#endif
