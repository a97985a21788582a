// SPDX-License-Identifier: GPL-2.0-only
/*
 * An interactive flame graph in one SVG file that needs nothing but a browser. Every
 * frame is a plain <rect> with a <title> tooltip and, when it fits, a label, so the
 * file is also a correct static picture; an inline script adds the details line,
 * click-to-zoom and search on top of that markup.
 *
 * Stacks are merged on their frames alone, as in the collapsed writer, so only thread
 * frames keep threads apart. The tree is never built: the stacks are sorted by their
 * frames, and a frame ends where the next stack stops sharing the prefix up to it, so
 * its width is known right there. Siblings come out in name order, root at the bottom.
 *
 * Frames narrower than MIN_PX are left out and counted: their samples still widen
 * their parents, and a note in the picture says how many there were. That bounds the
 * drawn frames at PLOT_W / MIN_PX per row, however many distinct stacks there are.
 *
 * The HTML page is the same <svg> element inline in a minimal HTML document, for users
 * who ask for profile.html: an HTML parser reads the element as SVG (CDATA included),
 * so the only differences are no XML declaration and a script that finds its <svg> by
 * its frames rather than as the document's root.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/frame_class.h"
#include "output/out_svg.h"
#include "output/xml_text.h"
#include "base/vec.h"

/* Geometry in CSS pixels; the script reads what it needs from the root element. */
#define IMG_W	1200
#define PAD	10
#define PLOT_W	(IMG_W - 2 * PAD)
#define FRAME_H	16
#define HEAD_H	96	/* title, subtitle, buttons and legend, the note on left-out frames */
#define FOOT_H	32	/* the details and search result line */
#define CHAR_W	7.3	/* a 12px monospace advance (DejaVu Sans Mono: 7.22) with slack */
#define MIN_PX	0.1
#define TITLE_CHARS 110	/* of bold 17px sans-serif fit in IMG_W */

struct box {
	const struct agg_frame *fr;	/* NULL: the "all" root */
	uint64_t x, n;			/* first sample and samples, in sorted order */
	uint32_t depth;			/* the root is 0 */
};

struct layout {
	struct box *v;
	size_t len, cap;
	uint64_t total;
	size_t omitted;
	uint32_t rows;
};

/* A reusable buffer for one frame's text. */
struct text {
	char *s;
	size_t len, cap;
};

static int text__put(struct text *t, const char *s, size_t n)
{
	int err = vec__reserve((void **)&t->s, &t->cap, t->len + n + 1, 1, 2 * (t->len + n + 1));

	if (err)
		return err;
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = 0;
	return 0;
}

/*
 * "QUALNAME (FILE:LINE)", or "FUNCTION+0xOFF (OBJECT)" / "FUNCTION (SOURCE:LINE)" for a
 * native frame, as in the collapsed format, without its ';' replacement.
 */
static int frame_text(struct text *t, const struct profile *p, const struct agg_frame *fr)
{
	const char *name = fr ? profile__name(p, fr) : "all";
	const char *src = fr ? profile__source(p, fr) : NULL;
	const char *file = src ? profile__base_name(src) : fr ? profile__file(p, fr) : NULL;
	const char *lib = fr && !src ? profile__lib(p, fr) : NULL;
	const char *where = file ? file : lib;
	char offset[16] = "", line[16] = "";	/* "+0x2c" before " (", ":12" before ")" */
	int err;

	t->len = 0;
	err = text__put(t, name, strlen(name));
	if (err || !where)
		return err;
	if (lib && fr->line >= 0)
		snprintf(offset, sizeof(offset), "+0x%x", (unsigned)fr->line);
	if (file && fr->line >= 0)
		snprintf(line, sizeof(line), ":%d", fr->line);
	if ((err = text__put(t, offset, strlen(offset))) || (err = text__put(t, " (", 2)) ||
	    (err = text__put(t, where, strlen(where))) ||
	    (err = text__put(t, line, strlen(line))))
		return err;
	return text__put(t, ")", 1);
}

/* Names come from another process's memory and may be anything: escaped, and valid
 * UTF-8 whatever the bytes were (xml_text.h). */
static void put_xml(FILE *f, const char *s, size_t len, size_t max)
{
	xml_text__put(f, s, len, max, 0);
}

static void put_xml_str(FILE *f, const char *s)
{
	put_xml(f, s, strlen(s), SIZE_MAX);
}

static int cmp_frame(const struct agg_frame *a, const struct agg_frame *b,
		     const struct strtab *strs)
{
	int c = strcmp(strtab__get(strs, a->name), strtab__get(strs, b->name));

	if (c)
		return c;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if ((a->kind == AGG_PYTHON || a->kind == AGG_NATIVE) &&
	    (c = strcmp(strtab__get(strs, a->file), strtab__get(strs, b->file))))
		return c;
	/* A native frame's source is the second half of its name (aggregate.h). */
	if (a->kind == AGG_NATIVE && a->name != b->name &&
	    (c = strcmp(strtab__second(strs, a->name) ? strtab__second(strs, a->name) : "",
			strtab__second(strs, b->name) ? strtab__second(strs, b->name) : "")))
		return c;
	return (a->line > b->line) - (a->line < b->line);
}

/* Root-first lexicographic order on frames: stacks that share a prefix are adjacent. */
static int by_frames(const void *a, const void *b, void *strs)
{
	const struct agg_stack *x = *(const struct agg_stack *const *)a;
	const struct agg_stack *y = *(const struct agg_stack *const *)b;

	for (uint32_t i = 0; i < x->depth && i < y->depth; i++) {
		int c = cmp_frame(&x->frames[i], &y->frames[i], strs);

		if (c)
			return c;
	}
	return (x->depth > y->depth) - (x->depth < y->depth);
}

static int by_row_then_x(const void *a, const void *b)
{
	const struct box *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return (x->x > y->x) - (x->x < y->x);
}

static int layout__add(struct layout *l, const struct agg_frame *fr, uint64_t x, uint64_t n,
		       uint32_t depth)
{
	int err;

	if ((double)n * PLOT_W < MIN_PX * (double)l->total) {
		l->omitted++;
		return 0;
	}
	err = vec__reserve((void **)&l->v, &l->cap, l->len + 1, sizeof(*l->v), 256);
	if (err)
		return err;
	l->v[l->len++] = (struct box){ .fr = fr, .x = x, .n = n, .depth = depth };
	if (depth >= l->rows)
		l->rows = depth + 1;
	return 0;
}

struct open_frame {
	const struct agg_frame *fr;
	uint64_t x;
};

/* Ends the open frames at stack depths [@to, @from): they span up to sample @end. */
static int layout__close(struct layout *l, const struct open_frame *open, uint32_t from,
			 uint32_t to, uint64_t end)
{
	int err = 0;

	for (uint32_t d = from; d-- > to && !err;)
		err = layout__add(l, open[d].fr, open[d].x, end - open[d].x, d + 1);
	return err;
}

static int layout__build(struct layout *l, const struct profile *p)
{
	size_t n = aggregate__count(p->agg);
	const struct agg_stack **order = malloc((n ? n : 1) * sizeof(*order));
	const struct agg_stack *prev = NULL;
	struct open_frame *open = NULL;
	uint32_t max_depth = 0;
	uint64_t end = 0;
	int err = -ENOMEM;

	if (!order)
		goto out;
	l->total = 0;
	for (size_t i = 0; i < n; i++) {
		order[i] = aggregate__stack(p->agg, i);
		l->total += order[i]->count;
		if (order[i]->depth > max_depth)
			max_depth = order[i]->depth;
	}
	open = calloc(max_depth ? max_depth : 1, sizeof(*open));
	if (!open)
		goto out;
	qsort_r(order, n, sizeof(*order), by_frames, (void *)p->strs);
	for (size_t i = 0; i < n; i++) {
		const struct agg_stack *s = order[i];
		uint32_t common = 0;

		while (prev && common < prev->depth && common < s->depth &&
		       !cmp_frame(&prev->frames[common], &s->frames[common], p->strs))
			common++;
		err = layout__close(l, open, prev ? prev->depth : 0, common, end);
		if (err)
			goto out;
		for (uint32_t d = common; d < s->depth; d++)
			open[d] = (struct open_frame){ .fr = &s->frames[d], .x = end };
		end += s->count;
		prev = s;
	}
	err = layout__close(l, open, prev ? prev->depth : 0, 0, end);
	if (!err)
		err = layout__add(l, NULL, 0, l->total, 0);
	if (!err && l->v)
		qsort(l->v, l->len, sizeof(*l->v), by_row_then_x);
out:
	free(open);
	free(order);
	return err;
}

struct palette {
	unsigned char r, g, b, dr, dg, db;	/* darkest colour, and how far it varies */
};

static const struct palette palettes[] = {
	[FRAME_USER] = { 210, 60, 20, 45, 160, 45 },		/* flame: red to yellow */
	[FRAME_STDLIB] = { 90, 150, 215, 40, 50, 30 },		/* blue */
	[FRAME_THIRD_PARTY] = { 80, 175, 80, 50, 55, 45 },	/* green */
	[FRAME_OTHER] = { 170, 170, 170, 40, 40, 40 },		/* grey */
	[FRAME_WAIT] = { 130, 100, 200, 40, 30, 40 },		/* purple */
	[FRAME_TASK] = { 20, 160, 160, 30, 50, 50 },		/* teal */
	[FRAME_NATIVE] = { 157, 115, 73, 30, 30, 30 },		/* brown; see native_fill() */
};

static const char *const class_names[] = {
	[FRAME_USER] = "u", [FRAME_STDLIB] = "s", [FRAME_THIRD_PARTY] = "t",
	[FRAME_OTHER] = "n", [FRAME_WAIT] = "w", [FRAME_TASK] = "k", [FRAME_NATIVE] = "c",
};

/* "12 samples", or in wall and off-CPU profiles "1.234 s". */
static void put_amount(FILE *f, const struct profile *p, uint64_t n)
{
	if (p->unit == PROFILE_NS)
		fprintf(f, "%.3f s", (double)n / 1e9);
	else
		fprintf(f, "%llu sample%s", (unsigned long long)n, n == 1 ? "" : "s");
}

static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	for (const unsigned char *s = (const unsigned char *)name; s && *s; s++)
		h = (h ^ *s) * 16777619u;
	return h;
}

/*
 * The colour of a frame: its class picks the hue, a hash of its name the shade, so
 * neighbours differ and a function has the same colour wherever it appears.
 */
static void put_fill(FILE *f, enum frame_class c, const char *name)
{
	const struct palette *pl = &palettes[c];
	uint32_t h = name_hash(name);
	unsigned v1, v2;

	v1 = h & 0xff;
	v2 = c == FRAME_OTHER ? v1 : (h >> 8) & 0xff;
	fprintf(f, "#%02x%02x%02x", pl->r + pl->dr * v1 / 255, pl->g + pl->dg * v2 / 255,
		pl->b + pl->db * v1 / 255);
}

/*
 * Native code: a hue per object, from a hash of its name, so that a library's frames
 * read as one block wherever they are; the function's hash picks the lightness. The
 * hues are the browns, ochres and khakis (15 to 64 degrees), duller and darker than
 * the flame colours of the user's Python code that share them, and far from the blue,
 * green, grey, purple and teal of the other families; black labels stay readable.
 */
static void put_native_fill(FILE *f, const char *lib, const char *name)
{
	unsigned hue = 15 + name_hash(lib) % 50;
	double light = 0.45 + 0.12 * (name_hash(name) & 0xff) / 255.0, sat = 0.38;
	double chroma = (light < 0.5 ? 2 * light : 2 - 2 * light) * sat, m = light - chroma / 2;
	/* HSL below 120 degrees, the red-to-green sextants: no blue beyond the grey m. */
	double r = hue < 60 ? chroma : chroma * (120 - hue) / 60;
	double g = hue < 60 ? chroma * hue / 60 : chroma;

	fprintf(f, "#%02x%02x%02x", (unsigned)((r + m) * 255 + 0.5),
		(unsigned)((g + m) * 255 + 0.5), (unsigned)(m * 255 + 0.5));
}

static double px(const struct layout *l, uint64_t n)
{
	return l->total ? (double)n * PLOT_W / (double)l->total : PLOT_W;
}

static int put_box(FILE *f, const struct profile *p, const struct layout *l,
		   const struct box *b, struct text *t, const struct svg_painter *pt)
{
	const char *file = b->fr ? profile__file(p, b->fr) : NULL;
	enum frame_class c = !b->fr ? FRAME_OTHER :
			     b->fr->kind == AGG_WAIT ? FRAME_WAIT :
			     b->fr->kind == AGG_TASK ? FRAME_TASK :
			     b->fr->kind == AGG_NATIVE ? FRAME_NATIVE : frame_class__of(file);
	unsigned y = HEAD_H + (l->rows - 1 - b->depth) * FRAME_H;
	double x = PAD + px(l, b->x), w = px(l, b->n);
	int label = (int)((w - 6) / CHAR_W);
	struct svg_mark m = { "" };
	int err = frame_text(t, p, b->fr);

	/* A box's frame is the one its first stack opened it with (layout__build()), so
	 * the frames before it in that stack are the path to it. */
	if (!err && pt)
		err = pt->paint(pt->ctx, b->fr ? b->fr - (b->depth - 1) : NULL, b->depth, b->n,
				&m);
	if (err)
		return err;
	fprintf(f, "<g class=\"%s\"%s data-x=\"%llu\" data-n=\"%llu\"", class_names[c],
		b->fr ? "" : " id=\"root\"", (unsigned long long)b->x, (unsigned long long)b->n);
	if (m.mark[0])
		fprintf(f, " data-mark=\"%s\"", m.mark);
	fputs("><title>", f);
	put_xml(f, t->s, t->len, SIZE_MAX);
	fputc('\n', f);
	put_amount(f, p, b->n);
	fprintf(f, " (%.2f%%)", l->total ? 100.0 * (double)b->n / (double)l->total : 100.0);
	if (m.note[0]) {
		fputc('\n', f);
		put_xml_str(f, m.note);
	}
	fprintf(f, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" fill=\"",
		x, y, w, FRAME_H - 1);
	if (pt)
		put_xml_str(f, m.fill);
	else if (c == FRAME_NATIVE)
		put_native_fill(f, profile__lib(p, b->fr), profile__name(p, b->fr));
	else
		put_fill(f, c, b->fr ? profile__name(p, b->fr) : NULL);
	fputs("\"/>", f);
	if (label >= 3) {
		fprintf(f, "<text x=\"%.2f\" y=\"%u\">", x + 3, y + FRAME_H - 4);
		put_xml(f, t->s, t->len, (size_t)label);
		fputs("</text>", f);
	}
	fputs("</g>\n", f);
	return 0;
}

static const char style[] =
	"text{font:12px monospace;fill:#000}\n"
	"#title{font:bold 17px sans-serif;text-anchor:middle}\n"
	"#subtitle,#note{font:12px sans-serif;fill:#555;text-anchor:middle}\n"
	".end{text-anchor:end}\n"
	".btn{cursor:pointer;fill:#1a5fb4;text-decoration:underline}\n"
	"#frames g{cursor:pointer}\n"
	"#frames text{pointer-events:none}\n"
	"#frames g:hover rect{stroke:#000;stroke-width:.6}\n"
	"#frames g.m rect{fill:#e040e0}\n"
	"#frames g.a rect{fill-opacity:.45}\n";

/*
 * The behaviour. Frames carry their first sample and sample count (data-x, data-n);
 * zooming lays them out again from those, and a search counts the union of the
 * matching frames' sample ranges, so nested matches are counted once.
 */
static const char script[] =
	"'use strict';\n"
	"(function () {\n"
	"  var svg = document.getElementById('frames').ownerSVGElement;\n"
	"  var NS = 'http://www.w3.org/2000/svg';\n"
	"  function num(k) { return +svg.getAttribute('data-' + k); }\n"
	"  function $(id) { return document.getElementById(id); }\n"
	"  var X0 = num('x0'), W = num('w'), FH = num('fh'), CW = num('cw');\n"
	"  var TOTAL = num('total') || 1;\n"
	"  function amount(n) {\n"
	"    return svg.getAttribute('data-unit') === 'ns' ? (n / 1e9).toFixed(3) + ' s' :\n"
	"      n + ' samples';\n"
	"  }\n"
	"  var details = $('details'), matched = $('matched'), reset = $('reset');\n"
	"  var button = $('search'), term = null;\n"
	"  var frames = [], byG = new Map();\n"
	"  [].forEach.call($('frames').children, function (g) {\n"
	"    var r = g.querySelector('rect');\n"
	"    var f = { g: g, rect: r, x: +g.getAttribute('data-x'),\n"
	"              n: +g.getAttribute('data-n'), y: +r.getAttribute('y') };\n"
	"    frames.push(f);\n"
	"    byG.set(g, f);\n"
	"  });\n"
	"  function info(f) { return f.g.querySelector('title').textContent.split('\\n'); }\n"
	"  function place(f, x, w) {\n"
	"    var t = f.g.querySelector('text'), room = Math.floor((w - 6) / CW), s = '';\n"
	"    f.rect.setAttribute('x', x.toFixed(2));\n"
	"    f.rect.setAttribute('width', w.toFixed(2));\n"
	"    f.g.style.display = '';\n"
	"    if (room >= 3) {\n"
	"      s = info(f)[0];\n"
	"      if (s.length > room) s = s.slice(0, room - 2) + '..';\n"
	"    }\n"
	"    if (s && !t) {\n"
	"      t = f.g.appendChild(document.createElementNS(NS, 'text'));\n"
	"      t.setAttribute('y', f.y + FH - 4);\n"
	"    }\n"
	"    if (t) {\n"
	"      t.setAttribute('x', (x + 3).toFixed(2));\n"
	"      t.textContent = s;\n"
	"    }\n"
	"  }\n"
	"  // The zoomed frame fills the width, what it called is scaled with it, its\n"
	"  // callers stay below at full width, dimmed, and everything else is hidden.\n"
	"  function zoom(z) {\n"
	"    var k = W / z.n;\n"
	"    frames.forEach(function (f) {\n"
	"      var caller = f.y > z.y;\n"
	"      if (!caller && f.x >= z.x && f.x + f.n <= z.x + z.n)\n"
	"        place(f, X0 + (f.x - z.x) * k, f.n * k);\n"
	"      else if (caller && f.x <= z.x && f.x + f.n >= z.x + z.n)\n"
	"        place(f, X0, W);\n"
	"      else\n"
	"        f.g.style.display = 'none';\n"
	"      f.g.classList.toggle('a', caller);\n"
	"    });\n"
	"    reset.style.visibility = 'visible';\n"
	"  }\n"
	"  function unzoom() {\n"
	"    frames.forEach(function (f) {\n"
	"      place(f, X0 + f.x * W / TOTAL, f.n * W / TOTAL);\n"
	"      f.g.classList.remove('a');\n"
	"    });\n"
	"    reset.style.visibility = 'hidden';\n"
	"  }\n"
	"  // A regular expression, or plain text if it is not a valid one.\n"
	"  function search(s) {\n"
	"    var re = null, hits = [], sum = 0, end = 0;\n"
	"    term = s || null;\n"
	"    try { re = term && new RegExp(term); } catch (e) { re = null; }\n"
	"    frames.forEach(function (f) {\n"
	"      var name = term && f.g.id !== 'root' ? info(f)[0] : null;\n"
	"      var hit = name !== null && (re ? re.test(name) : name.indexOf(term) >= 0);\n"
	"      f.g.classList.toggle('m', hit);\n"
	"      if (hit) hits.push(f);\n"
	"    });\n"
	"    hits.sort(function (a, b) { return a.x - b.x; });\n"
	"    hits.forEach(function (f) {\n"
	"      sum += Math.max(0, f.x + f.n - Math.max(f.x, end));\n"
	"      end = Math.max(end, f.x + f.n);\n"
	"    });\n"
	"    matched.textContent = term ? 'Matched: ' + (100 * sum / TOTAL).toFixed(2) +\n"
	"      '% (' + amount(sum) + ' of ' + amount(num('total')) + ')' : '';\n"
	"    button.textContent = term ? 'Clear search' : 'Search';\n"
	"  }\n"
	"  function ask() {\n"
	"    var s = window.prompt('Search frames (regular expression or text):', term || '');\n"
	"    if (s !== null) search(s);\n"
	"  }\n"
	"  function frameOf(e) {\n"
	"    return byG.get(e.target.closest && e.target.closest('#frames > g'));\n"
	"  }\n"
	"  var box = $('frames');\n"
	"  box.addEventListener('mouseover', function (e) {\n"
	"    var f = frameOf(e);\n"
	"    if (f) details.textContent = info(f).join(', ');\n"
	"  });\n"
	"  box.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  box.addEventListener('click', function (e) {\n"
	"    var f = frameOf(e);\n"
	"    if (f) f.g.id === 'root' ? unzoom() : zoom(f);\n"
	"  });\n"
	"  reset.addEventListener('click', unzoom);\n"
	"  button.addEventListener('click', function () { term ? search(null) : ask(); });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') {\n"
	"      e.preventDefault();\n"
	"      ask();\n"
	"    } else if (e.key === 'Escape') {\n"
	"      search(null);\n"
	"    }\n"
	"  });\n"
	"})();\n";

/* Whether any stack of @p has a frame of @kind: an asyncio task (--async), C code
 * (--native). */
static int has_kind(const struct profile *p, enum agg_frame_kind kind)
{
	for (size_t i = 0; i < aggregate__count(p->agg); i++) {
		const struct agg_stack *s = aggregate__stack(p->agg, i);

		for (uint32_t k = 0; k < s->depth; k++)
			if (s->frames[k].kind == kind)
				return 1;
	}
	return 0;
}

/* A painter's own legend, in the place of the frame classes'. */
static void put_painted_legend(FILE *f, const struct svg_painter *pt, unsigned y)
{
	unsigned x = 330;

	fputs("<g id=\"legend\">", f);
	for (size_t i = 0; i < pt->nlegend; i++) {
		fprintf(f, "<rect x=\"%u\" y=\"%u\" width=\"12\" height=\"12\" fill=\"", x,
			y - 10);
		put_xml_str(f, pt->legend[i].fill);
		fprintf(f, "\"/><text x=\"%u\" y=\"%u\">", x + 17, y);
		put_xml_str(f, pt->legend[i].label);
		fputs("</text>", f);
		x += 17 + (unsigned)(CHAR_W * (double)strlen(pt->legend[i].label)) + 28;
	}
	fputs("</g>\n", f);
}

static void put_legend(FILE *f, const struct profile *p, unsigned y)
{
	static const struct { enum frame_class c; const char *label; } items[] = {
		{ FRAME_USER, "your code" },
		{ FRAME_STDLIB, "standard library" },
		{ FRAME_THIRD_PARTY, "third-party" },
		{ FRAME_OTHER, "not Python" },
		{ FRAME_WAIT, "off the CPU" },		/* only profiles of time have it */
		{ FRAME_TASK, "asyncio task" },		/* only profiles with tasks */
		{ FRAME_NATIVE, "native code" },	/* only with --native */
	};
	int shown[] = { 1, 1, 1, 1, p->unit == PROFILE_NS, has_kind(p, AGG_TASK),
			has_kind(p, AGG_NATIVE) };
	unsigned x = 330;

	fputs("<g id=\"legend\">", f);
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		const struct palette *pl = &palettes[items[i].c];

		if (!shown[i])
			continue;
		fprintf(f, "<rect class=\"%s\" x=\"%u\" y=\"%u\" width=\"12\" height=\"12\" "
			"fill=\"#%02x%02x%02x\"/><text x=\"%u\" y=\"%u\">%s</text>",
			class_names[items[i].c], x, y - 10, pl->r + pl->dr / 2,
			pl->g + pl->dg / 2, pl->b + pl->db / 2, x + 17, y, items[i].label);
		x += 17 + (unsigned)(CHAR_W * (double)strlen(items[i].label)) + 28;
	}
	fputs("</g>\n", f);
}

/* The <svg> element's head: the XML declaration too when it is a document of its own. */
static void put_head(FILE *f, const struct profile *p, const struct layout *l,
		     unsigned height, int standalone, const struct svg_painter *pt)
{
	const char *target = p->target ? p->target : "profile";
	time_t start = (time_t)(p->start_unix_ns / 1000000000);
	char when[64] = "";
	struct tm tm;

	if (p->start_unix_ns > 0 && gmtime_r(&start, &tm))
		strftime(when, sizeof(when), ", from %Y-%m-%d %H:%M:%S UTC", &tm);
	if (standalone)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%u\" viewBox=\"0 0 %d %u\" data-total=\"%llu\" data-x0=\"%d\" "
		"data-w=\"%d\" data-fh=\"%d\" data-cw=\"%.2f\"%s>\n<title>pybpfprof: ",
		IMG_W, height, IMG_W, height, (unsigned long long)l->total, PAD, PLOT_W, FRAME_H,
		CHAR_W, p->unit == PROFILE_NS ? " data-unit=\"ns\"" : "");
	put_xml_str(f, target);
	fprintf(f, "</title>\n<style>\n%s</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fcfcf7\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\">pybpfprof: ", style, IMG_W / 2);
	put_xml(f, target, strlen(target), TITLE_CHARS);
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">", IMG_W / 2);
	if (pt && pt->subtitle) {
		put_xml_str(f, pt->subtitle);
	} else {
		fprintf(f, "%.2f s at %u Hz, ", (double)p->duration_ns / 1e9, p->rate_hz);
		put_amount(f, p, l->total);
		fprintf(f, "%s%s", p->unit == PROFILE_NS ? " of thread time" : "", when);
	}
	fputs("</text>\n", f);
	fprintf(f, "<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"68\" "
		"style=\"visibility:hidden\">Reset zoom</text>\n"
		"<text id=\"search\" class=\"btn end\" x=\"%d\" y=\"68\">Search</text>\n",
		PAD, IMG_W - PAD);
	if (pt && pt->legend)
		put_painted_legend(f, pt, 68);
	else
		put_legend(f, p, 68);
	if (!l->omitted && !(pt && pt->note && pt->note[0]))
		return;
	fprintf(f, "<text id=\"note\" x=\"%d\" y=\"88\">", IMG_W / 2);
	if (pt && pt->note && pt->note[0])
		put_xml_str(f, pt->note);
	if (l->omitted)
		fprintf(f, "%s%zu frame%s narrower than %.1f px merged into their callers",
			pt && pt->note && pt->note[0] ? "; " : "", l->omitted,
			l->omitted == 1 ? "" : "s", MIN_PX);
	fputs("</text>\n", f);
}

static int write_svg(FILE *f, const struct profile *p, int standalone,
		     const struct svg_painter *pt)
{
	struct layout l = { 0 };
	struct text t = { 0 };
	unsigned height;
	int err = layout__build(&l, p);

	if (err)
		goto out;
	height = HEAD_H + l.rows * FRAME_H + FOOT_H;
	put_head(f, p, &l, height, standalone, pt);
	fputs("<g id=\"frames\">\n", f);
	for (size_t i = 0; i < l.len && !err; i++)
		err = put_box(f, p, &l, &l.v[i], &t, pt);
	if (err)
		goto out;
	fprintf(f, "</g>\n<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" class=\"end\" x=\"%d\" y=\"%u\"></text>\n"
		"<script type=\"text/javascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
		PAD, height - 12, IMG_W - PAD, height - 12, script);
	err = ferror(f) ? -EIO : 0;
out:
	free(t.s);
	free(l.v);
	return err;
}

/* The SVG alone, or inline in an HTML page of its own. */
static int write_page(FILE *f, const struct profile *p, const struct svg_painter *pt,
		      int html)
{
	int err;

	if (!html)
		return write_svg(f, p, 1, pt);

	/* The margin is the SVG's own padding: the picture sits where it does alone. */
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>pybpfprof: ", f);
	put_xml_str(f, p->target ? p->target : "profile");
	fputs("</title>\n<style>body{margin:0;background:#fcfcf7}svg{display:block}</style>\n"
	      "</head>\n<body>\n", f);
	err = write_svg(f, p, 0, pt);
	if (err)
		return err;
	fputs("</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}

int out_svg__write(FILE *f, const struct profile *p)
{
	return write_page(f, p, NULL, 0);
}

int out_svg__write_html(FILE *f, const struct profile *p)
{
	return write_page(f, p, NULL, 1);
}

int out_svg__write_painted(FILE *f, const struct profile *p, const struct svg_painter *pt,
			   int html)
{
	return write_page(f, p, pt, html);
}
