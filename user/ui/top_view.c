// SPDX-License-Identifier: GPL-2.0-only
/*
 * The function table of `top` and its text; see top_view.h. Updates are incremental:
 * aggregate stacks keep their index and only grow, so each update walks the frames of
 * the stacks whose count changed, not the whole profile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/hashmap.h"
#include "base/text_safe.h"
#include "ui/top_view.h"
#include "base/vec.h"

struct top_view {
	struct top_row *rows;
	uint64_t *stamps;	/* per row: the last update step that counted its total */
	uint32_t *order;	/* row indices, sorted */
	size_t n, cap, stamps_cap, order_cap;
	struct hashmap index;	/* (name, file) -> row */
	uint64_t *seen;		/* per aggregate stack: the count already taken in */
	size_t nseen, seen_cap;
	const struct aggregate *agg;
	uint64_t window;
	uint64_t step;
};

/* Below this, the function column would be too narrow to tell functions apart. */
#define WIDTH_FOR_TIMES 56

int top_view__new(struct top_view **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void top_view__free(struct top_view *v)
{
	if (!v)
		return;
	free(v->rows);
	free(v->stamps);
	free(v->order);
	hashmap__free(&v->index);
	free(v->seen);
	free(v);
}

static uint64_t key_hash(uint32_t name, uint32_t file)
{
	return hash_u64((uint64_t)name << 32 | file);
}

static uint64_t row_hash(uint32_t idx, const void *ctx)
{
	const struct top_view *v = ctx;

	return key_hash(v->rows[idx].name, v->rows[idx].file);
}

static bool row_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct top_view *v = ctx;
	const struct top_row *k = key;

	return v->rows[idx].name == k->name && v->rows[idx].file == k->file;
}

/* The row of (@name, @file), added if new: its index, or a negative errno. */
static int64_t row_of(struct top_view *v, uint32_t name, uint32_t file)
{
	const struct top_row key = { .name = name, .file = file, .thread = -1 };
	size_t i, need = v->n + 1;
	int err;

	err = hashmap__grow(&v->index, 256, row_hash, v);
	if (err)
		return err;
	i = hashmap__probe(&v->index, key_hash(name, file), row_equal, &key, v);
	if (hashmap__used(&v->index, i))
		return hashmap__at(&v->index, i);
	err = vec__reserve((void **)&v->rows, &v->cap, need, sizeof(*v->rows), 64);
	if (!err)
		err = vec__reserve((void **)&v->stamps, &v->stamps_cap, need, sizeof(*v->stamps), 64);
	if (!err)
		err = vec__reserve((void **)&v->order, &v->order_cap, need, sizeof(*v->order), 64);
	if (err)
		return err;
	v->rows[v->n] = key;
	v->stamps[v->n] = 0;
	v->order[v->n] = (uint32_t)v->n;
	hashmap__set(&v->index, i, (uint32_t)v->n);
	return v->n++;
}

static void reset(struct top_view *v, const struct aggregate *agg)
{
	v->n = 0;
	v->nseen = 0;
	hashmap__clear(&v->index);
	v->agg = agg;
}

/*
 * The file a row shows beside the name: a Python frame's, or a native frame's object,
 * so that a C function reads "FUNCTION (OBJECT)", as in the collapsed format without
 * the offset (a row is a function, whatever the line or offset). A Python function
 * and a C one share a row only if a .py file is named like a shared object and holds
 * a function named like the C one; then they read alike too.
 */
static uint32_t row_file(const struct agg_frame *fr)
{
	return fr->kind == AGG_PYTHON || fr->kind == AGG_NATIVE ? fr->file : TOP_NO_FILE;
}

static int take_stack(struct top_view *v, const struct agg_stack *s, uint64_t delta)
{
	const struct agg_frame *leaf = s->depth ? &s->frames[s->depth - 1] : NULL;
	int64_t r;

	v->step++;
	for (uint32_t k = 0; k < s->depth; k++) {
		const struct agg_frame *fr = &s->frames[k];

		/* A process is a row too: its total is its share of the samples; and so
		 * is each thread (--threads), each kind of wait, and each asyncio task
		 * (--async). */
		if (fr->kind != AGG_PYTHON && fr->kind != AGG_NATIVE && fr->kind != AGG_PROCESS &&
		    fr->kind != AGG_THREAD && fr->kind != AGG_WAIT && fr->kind != AGG_TASK)
			continue;
		r = row_of(v, fr->name, row_file(fr));
		if (r < 0)
			return (int)r;
		v->rows[r].native = fr->kind == AGG_NATIVE;
		/* A thread's row is "thread TID", and reads as its label, which may name
		 * the thread only after its first samples. */
		if (fr->kind == AGG_THREAD)
			v->rows[r].thread = fr->line;
		/* Recursion: a function is on the stack of this sample once, not per frame. */
		if (v->stamps[r] == v->step)
			continue;
		v->stamps[r] = v->step;
		v->rows[r].total += delta;
		v->rows[r].total_now += delta;
	}
	if (leaf && (leaf->kind == AGG_PYTHON || leaf->kind == AGG_NATIVE ||
		     leaf->kind == AGG_WAIT)) {
		r = row_of(v, leaf->name, row_file(leaf));
		if (r < 0)
			return (int)r;
		v->rows[r].own += delta;
		v->rows[r].own_now += delta;
	}
	return 0;
}

int top_view__update(struct top_view *v, const struct profile *p)
{
	size_t count = aggregate__count(p->agg);
	int err;

	if (p->agg != v->agg || count < v->nseen)
		reset(v, p->agg);
	if (count > v->seen_cap) {
		size_t cap = count * 2;
		uint64_t *seen = realloc(v->seen, cap * sizeof(*seen));

		if (!seen)
			return -ENOMEM;
		v->seen = seen;
		v->seen_cap = cap;
	}
	memset(v->seen + v->nseen, 0, (count - v->nseen) * sizeof(*v->seen));
	v->nseen = count;
	for (size_t i = 0; i < v->n; i++)
		v->rows[i].own_now = v->rows[i].total_now = 0;
	v->window = 0;
	for (size_t i = 0; i < count; i++) {
		const struct agg_stack *s = aggregate__stack(p->agg, i);

		if (s->count <= v->seen[i])
			continue;
		err = take_stack(v, s, s->count - v->seen[i]);
		if (err)
			return err;
		v->window += s->count - v->seen[i];
		v->seen[i] = s->count;
	}
	return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;	/* larger first */
}

struct sort_ctx {
	const struct top_row *rows;
	enum top_sort key;
};

static int by_key(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *sc = arg;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct top_row *x = &sc->rows[ia], *y = &sc->rows[ib];
	int c;

	if (sc->key == TOP_BY_TOTAL) {
		c = cmp_u64(x->total_now, y->total_now);
		c = c ? c : cmp_u64(x->own_now, y->own_now);
		c = c ? c : cmp_u64(x->total, y->total);
		c = c ? c : cmp_u64(x->own, y->own);
	} else {
		c = cmp_u64(x->own_now, y->own_now);
		c = c ? c : cmp_u64(x->total_now, y->total_now);
		c = c ? c : cmp_u64(x->own, y->own);
		c = c ? c : cmp_u64(x->total, y->total);
	}
	/* Ties in first-seen order: the same profile always draws the same table. */
	return c ? c : ia < ib ? -1 : ia > ib;
}

void top_view__sort(struct top_view *v, enum top_sort key)
{
	struct sort_ctx sc = { v->rows, key };

	if (v->n)
		qsort_r(v->order, v->n, sizeof(*v->order), by_key, &sc);
}

size_t top_view__count(const struct top_view *v)
{
	return v->n;
}

const struct top_row *top_view__row(const struct top_view *v, size_t i)
{
	return i < v->n ? &v->rows[v->order[i]] : NULL;
}

uint64_t top_view__window(const struct top_view *v)
{
	return v->window;
}

/* ---- text ------------------------------------------------------------------------ */

/*
 * Writes at most @maxcols characters of @s to @f (NULL: writes nothing), one column
 * each; returns the columns it took. Wide (East Asian) characters are counted as one:
 * the screen turns off line wrapping, so a miscount clips a line and never breaks the
 * layout.
 */
static int put_text(FILE *f, const char *s, int maxcols)
{
	const unsigned char *u = (const unsigned char *)s;
	int cols = 0, ok;

	while (*u && cols < maxcols) {
		size_t len = text_safe__next(u, &ok);

		if (f && ok)
			fwrite(u, 1, len, f);
		else if (f)
			fputc('?', f);
		u += len;
		cols++;
	}
	return cols;
}

static int text_cols(const char *s)
{
	return put_text(NULL, s, 1 << 30);
}

/* @s past its first @cols characters. */
static const char *skip_cols(const char *s, int cols)
{
	const unsigned char *u = (const unsigned char *)s;
	int ok;

	while (*u && cols-- > 0)
		u += text_safe__next(u, &ok);
	return (const char *)u;
}

/*
 * "QUALNAME (FILE)" in @avail columns: the file loses its start first (its end names
 * the module), then it goes, then the name loses its end. Returns the columns taken.
 */
static int put_function(FILE *f, const char *name, const char *file, int avail)
{
	int nc = text_cols(name), fc = file ? text_cols(file) : 0;

	if (avail <= 0)
		return 0;
	if (!file)
		return put_text(f, name, nc < avail ? nc : avail);
	if (nc + fc + 3 <= avail) {
		put_text(f, name, nc);
		fputs(" (", f);
		put_text(f, file, fc);
		fputc(')', f);
		return nc + fc + 3;
	}
	if (nc + 7 <= avail) {
		put_text(f, name, nc);
		fputs(" (...", f);
		put_text(f, skip_cols(file, fc - (avail - nc - 6)), avail - nc - 6);
		fputc(')', f);
		return avail;
	}
	if (nc <= avail)
		return put_text(f, name, nc);
	if (avail <= 3)
		return put_text(f, name, avail);
	put_text(f, name, avail - 3);
	fputs("...", f);
	return avail;
}

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Seconds in 8 columns, however long the run. */
static void fmt_secs(char *buf, size_t len, double s)
{
	if (s < 99999.995)
		snprintf(buf, len, "%8.2f", s);
	else if (s < 99999999.5)
		snprintf(buf, len, "%8.0f", s);
	else
		snprintf(buf, len, "%8.1e", s);
}

static void fmt_elapsed(char *buf, size_t len, double s)
{
	unsigned long t = s > 0 ? (unsigned long)s : 0;

	snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
}

static const char *column_header(int times)
{
	return times ? "  %Own %Total   Own(s) Total(s)  Function (file)"
		     : "  %Own %Total  Function (file)";
}

/* One table row; @width <= 0: no limit. Returns the columns taken. */
static int put_row(FILE *f, const struct top_view *v, const struct profile *p,
		   const struct top_row *r, int times, int width)
{
	double period = p->period_ns / 1e9;
	const struct agg_frame fr = { .kind = r->thread >= 0 ? AGG_THREAD : AGG_PYTHON,
				      .name = r->name, .line = r->thread };
	char own[16], total[16], nums[64];
	int cols;

	if (width <= 0)
		width = 1 << 30;
	fmt_secs(own, sizeof(own), r->own * period);
	fmt_secs(total, sizeof(total), r->total * period);
	if (times)
		snprintf(nums, sizeof(nums), "%6.1f %6.1f %s %s  ", percent(r->own_now, v->window),
			 percent(r->total_now, v->window), own, total);
	else
		snprintf(nums, sizeof(nums), "%6.1f %6.1f  ", percent(r->own_now, v->window),
			 percent(r->total_now, v->window));
	cols = put_text(f, nums, width);
	return cols + put_function(f, profile__name(p, &fr), top_view__row_file(p, r),
				   width - cols);
}

const char *top_view__row_file(const struct profile *p, const struct top_row *r)
{
	const char *src = r->native ? strtab__second(p->strs, r->name) : NULL;

	if (src)
		return profile__base_name(src);
	return r->file == TOP_NO_FILE ? NULL : strtab__get(p->strs, r->file);
}

static void fmt_counts(char *buf, size_t len, const struct top_header *h,
		       const struct profile *p)
{
	char elapsed[32], procs[32] = "";

	fmt_elapsed(elapsed, sizeof(elapsed), h->elapsed_s);
	if (h->processes > 1)
		snprintf(procs, sizeof(procs), "  Processes %u", h->processes);
	/* In wall and off-CPU modes the shares are of the threads' time, waits included. */
	snprintf(buf, len, "Samples %llu (%llu incomplete, %llu dropped)  %u Hz  Threads %u%s  "
		 "Elapsed %s%s", (unsigned long long)h->samples, (unsigned long long)h->incomplete,
		 (unsigned long long)h->drops, h->rate_hz, h->threads, procs, elapsed,
		 p->unit == PROFILE_NS ? "  %Wall: shares of wall time" : "");
}

/* A screen being drawn: lines past the height are dropped, the last ends unbroken. */
struct screen {
	FILE *f;
	int width, height, line;
	unsigned int flags;
};

static int line_open(struct screen *sc)
{
	return sc->line < sc->height;
}

static void line_close(struct screen *sc, int cols, int pad)
{
	if (sc->flags & TOP_ANSI) {
		if (pad) {
			fprintf(sc->f, "%*s\033[m", sc->width - cols, "");
			cols = sc->width;
		}
		/* A full line leaves the cursor on its last column (no wrap): erasing
		 * from there would take that column's character too. */
		if (cols < sc->width)
			fputs("\033[K", sc->f);
	}
	if (++sc->line < sc->height)
		fputc('\n', sc->f);
}

static void screen_text(struct screen *sc, const char *s)
{
	if (line_open(sc))
		line_close(sc, put_text(sc->f, s, sc->width), 0);
}

int top_view__render_screen(struct top_view *v, const struct profile *p,
			    const struct top_header *h, enum top_sort key, int width, int height,
			    unsigned int flags, FILE *f)
{
	struct screen sc = { f, width, height, 0, flags };
	int times = width >= WIDTH_FOR_TIMES;
	char buf[256];
	int cols;

	if (width <= 0 || height <= 0)
		return -EINVAL;
	top_view__sort(v, key);
	if (flags & TOP_ANSI)
		fputs("\033[H", f);
	if (line_open(&sc)) {
		cols = put_text(f, "pybpfprof top - ", width);
		line_close(&sc, cols + put_text(f, h->target, width - cols), 0);
	}
	fmt_counts(buf, sizeof(buf), h, p);
	screen_text(&sc, buf);
	screen_text(&sc, h->note ? h->note : "");
	if (line_open(&sc)) {
		if (flags & TOP_ANSI)
			fputs("\033[7m", f);
		line_close(&sc, put_text(f, column_header(times), width), 1);
	}
	for (size_t i = 0; i < v->n && sc.line < height - 1; i++)
		line_close(&sc, put_row(f, v, p, &v->rows[v->order[i]], times, width), 0);
	while (sc.line < height - 1)
		screen_text(&sc, "");
	screen_text(&sc, key == TOP_BY_OWN
		    ? "Sorted by %Own.  o: %Own  t: %Total  Tab: switch  q: quit"
		    : "Sorted by %Total.  o: %Own  t: %Total  Tab: switch  q: quit");
	return ferror(f) ? -EIO : 0;
}

int top_view__render_text(struct top_view *v, const struct profile *p,
			  const struct top_header *h, enum top_sort key, size_t nrows, FILE *f)
{
	char buf[256];

	top_view__sort(v, key);
	fmt_counts(buf, sizeof(buf), h, p);
	if (h->clock)
		fprintf(f, "%s  ", h->clock);
	put_text(f, h->target, 1 << 30);
	fprintf(f, "\n%s\n%s\n", buf, column_header(1));
	for (size_t i = 0; i < v->n && i < nrows; i++) {
		put_row(f, v, p, &v->rows[v->order[i]], 1, 0);
		fputc('\n', f);
	}
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}
