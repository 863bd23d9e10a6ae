/*
 * svg.c - see svg.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "svg.h"

void svg_escape(struct vmt_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': vmt_buf_puts(b, "&amp;"); break;
		case '<': vmt_buf_puts(b, "&lt;"); break;
		case '>': vmt_buf_puts(b, "&gt;"); break;
		case '"': vmt_buf_puts(b, "&quot;"); break;
		default:
			/* Control characters are not allowed in XML 1.0. */
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
				vmt_buf_puts(b, "?");
			else
				vmt_buf_printf(b, "%c", *s);
		}
	}
}

/* DejaVu Sans's advance widths of ' ' to '~', in thousandths of an em. */
static const unsigned short ascii_width[95] = {
	318, 400, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, /*  !"#$%&'()*+,-./ */
	636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, /* 0-9 :;<=>? */
	1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, /* @A-O */
	603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500,	 /* P-Z [\]^_ */
	500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612,	 /* `a-o */
	635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,	 /* p-z {|}~ */
};

double svg_text_width(const char *text, double size, int bold)
{
	double em = 0;
	for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
		if (*c >= 0x20 && *c < 0x7f)
			em += ascii_width[*c - 0x20] / 1000.0;
		else if ((*c & 0xc0) != 0x80)
			em += 1.0; /* a character beyond ASCII (its first byte): "—", "…" */
	}
	return em * size * (bold ? 1.1 : 1.0);
}

void svg_fit(struct vmt_buf *b, size_t from, double width, double size, int bold)
{
	if (!b->data || b->len <= from || svg_text_width(b->data + from, size, bold) <= width)
		return;
	double room = width - svg_text_width("…", size, bold);
	/* the longest prefix that leaves room for the ellipsis */
	size_t end = from;
	double w = 0;
	for (size_t i = from; i < b->len; i++) {
		unsigned char c = (unsigned char)b->data[i];
		if ((c & 0xc0) == 0x80)
			continue;
		double cw = (c >= 0x20 && c < 0x7f ? ascii_width[c - 0x20] / 1000.0 : 1.0) * size *
			    (bold ? 1.1 : 1.0);
		if (w + cw > room)
			break;
		w += cw;
		end = i + 1;
		while (end < b->len && ((unsigned char)b->data[end] & 0xc0) == 0x80)
			end++; /* (a whole UTF-8 character) */
	}
	/* back to a word's end, unless that loses more than a third */
	size_t cut = end;
	while (cut > from && b->data[cut - 1] != ' ' && b->data[cut - 1] != '/')
		cut--;
	if (cut > from && (cut - from) * 3 >= (end - from) * 2)
		end = cut;
	while (end > from && b->data[end - 1] == ' ')
		end--;
	b->len = end;
	b->data[end] = 0;
	vmt_buf_puts(b, "…");
}

void svg_open(struct vmt_buf *b, double w, double h, const char *title)
{
	vmt_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			  "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
			  "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
			  "font-family=\"sans-serif\">\n<title>", w, h, w, h);
	svg_escape(b, title);
	vmt_buf_puts(b, "</title>\n");
	svg_rect(b, 0, 0, w, h, "#ffffff", NULL);
}

void svg_close(struct vmt_buf *b)
{
	vmt_buf_puts(b, "</svg>\n");
}

void svg_text(struct vmt_buf *b, double x, double y, const char *anchor, double size,
	      const char *fill, int bold, double rot, const char *text)
{
	vmt_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" fill=\"%s\"", x, y,
		       size, fill);
	if (strcmp(anchor, "start"))
		vmt_buf_printf(b, " text-anchor=\"%s\"", anchor);
	if (bold)
		vmt_buf_puts(b, " font-weight=\"bold\"");
	if (rot != 0)
		vmt_buf_printf(b, " transform=\"rotate(%.0f %.1f %.1f)\"", rot, x, y);
	vmt_buf_puts(b, ">");
	svg_escape(b, text);
	vmt_buf_puts(b, "</text>\n");
}

void svg_line(struct vmt_buf *b, double x1, double y1, double x2, double y2,
	      const char *stroke, double width)
{
	vmt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			  "stroke-width=\"%.1f\"/>\n", x1, y1, x2, y2, stroke, width);
}

void svg_rect(struct vmt_buf *b, double x, double y, double w, double h, const char *fill,
	      const char *stroke)
{
	vmt_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"",
		       x, y, w, h, fill);
	if (stroke)
		vmt_buf_printf(b, " stroke=\"%s\"", stroke);
	vmt_buf_puts(b, "/>\n");
}

void svg_poly_begin(struct vmt_buf *b, const char *stroke, double width)
{
	vmt_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
			  "stroke-linejoin=\"round\" points=\"", stroke, width);
}

void svg_poly_point(struct vmt_buf *b, double x, double y)
{
	vmt_buf_printf(b, "%.1f,%.1f ", x, y);
}

void svg_poly_end(struct vmt_buf *b)
{
	if (b->len && b->data[b->len - 1] == ' ')
		b->len--;
	vmt_buf_puts(b, "\"/>\n");
}

double svg_nice_step(double max, int want, double *top)
{
	if (!(max > 0))
		max = 1;
	if (want < 1)
		want = 1;
	double raw = max / want;
	double p = pow(10, floor(log10(raw)));
	double f = raw / p, step;
	if (f <= 1)
		step = p;
	else if (f <= 2)
		step = 2 * p;
	else if (f <= 5)
		step = 5 * p;
	else
		step = 10 * p;
	*top = ceil(max / step - 1e-9) * step;
	if (*top <= 0)
		*top = step;
	return step;
}

double svg_unit(double max, int bytes, const char **name)
{
	static const char *const bn[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	static const char *const cn[] = { "", "thousand", "million", "billion", "trillion" };
	double base = bytes ? 1024 : 1000, div = 1;
	int i = 0;
	while (i < 4 && max >= div * base) {
		div *= base;
		i++;
	}
	*name = bytes ? bn[i] : cn[i];
	return div;
}

void svg_fmt_tick(char *out, size_t n, double v, double step)
{
	int dec = 0;
	while (dec < 6 && step * pow(10, dec) < 0.999)
		dec++;
	snprintf(out, n, "%.*f", dec, v);
}
