// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report; see out_report.h.
 *
 * A row's total counts each stack it appears in once, however often (recursion); its
 * self counts the stacks whose innermost code frame (Python or C) it is, so the selfs
 * add up to the profile. A stack without code frames ("[no Python frame]") is its
 * marker's own row.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/hashmap.h"
#include "base/names.h"
#include "base/vec.h"
#include "output/out_report.h"
#include "profile/profile_index.h"
#include "profile/wait_class.h"

struct row_key {
	uint32_t kind, name, file;
	int32_t line;
	uint32_t pid, tid;
};

struct row {
	struct row_key key;
	uint64_t self, total;
	uint64_t by_class[WAIT_CLASSES];	/* of total */
	size_t last_stack;			/* the stack last counted in total, + 1 */
	int32_t hot_line;			/* by function: the line with most self */
	uint64_t hot_line_self, hot_line_total;
};

struct report {
	const struct profile *p;
	const struct report_opts *o;
	struct row *rows;
	size_t n, cap;
	struct hashmap index;
	struct hashmap line_index;	/* by function: (function, line) -> self, in lines */
	struct row *lines;
	size_t nlines, lines_cap;
	uint64_t class_total[WAIT_CLASSES];
	uint64_t incomplete;
};

static const char *const by_names[] = {
	[REPORT_BY_FUNCTION] = "function", [REPORT_BY_LINE] = "line",
	[REPORT_BY_FILE] = "file", [REPORT_BY_THREAD] = "thread", [REPORT_BY_TASK] = "task",
};

int out_report__parse_by(const char *s, enum report_by *by)
{
	int i = names__index(by_names, NAMES_N(by_names), s);

	if (i < 0)
		return i;
	*by = (enum report_by)i;
	return 0;
}

int out_report__parse_sort(const char *s, enum report_sort *sort)
{
	if (!strcmp(s, "self") || !strcmp(s, "total")) {
		*sort = !strcmp(s, "self") ? REPORT_SORT_SELF : REPORT_SORT_TOTAL;
		return 0;
	}
	return -EINVAL;
}

/* ---- rows ------------------------------------------------------------------------- */

struct table {
	struct row **rows;
	size_t *n, *cap;
};

static uint64_t key_hash(const struct row_key *k)
{
	return hash_bytes(k, sizeof(*k));
}

static uint64_t row_hash(uint32_t idx, const void *ctx)
{
	const struct table *t = ctx;

	return key_hash(&(*t->rows)[idx].key);
}

static bool row_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct table *t = ctx;

	return !memcmp(&(*t->rows)[idx].key, key, sizeof(struct row_key));
}

/* The row of @k in @t (indexed by @m), added if new; NULL on -ENOMEM. */
static struct row *row_of(struct table *t, struct hashmap *m, const struct row_key *k)
{
	size_t slot;

	if (hashmap__grow(m, 256, row_hash, t) ||
	    vec__reserve((void **)t->rows, t->cap, *t->n + 1, sizeof(**t->rows), 256))
		return NULL;
	slot = hashmap__probe(m, key_hash(k), row_equal, k, t);
	if (hashmap__used(m, slot))
		return &(*t->rows)[hashmap__at(m, slot)];
	(*t->rows)[*t->n] = (struct row){ .key = *k, .hot_line = -1 };
	hashmap__set(m, slot, (uint32_t)*t->n);
	return &(*t->rows)[(*t->n)++];
}

static int is_code(const struct agg_frame *fr)
{
	return fr->kind == AGG_PYTHON || fr->kind == AGG_NATIVE;
}

/* The key @fr counts under, or 0 if it counts under none. */
static int frame_key(const struct report *r, const struct agg_stack *st,
		     const struct agg_frame *fr, struct row_key *k)
{
	*k = (struct row_key){ .kind = fr->kind, .line = -1 };
	switch (r->o->by) {
	case REPORT_BY_LINE:
		k->line = fr->line;
		/* fall through */
	case REPORT_BY_FUNCTION:
		k->name = fr->name;
		/* fall through */
	case REPORT_BY_FILE:
		k->file = fr->file;
		return is_code(fr);
	case REPORT_BY_TASK:
		k->name = fr->name;
		return fr->kind == AGG_TASK;
	case REPORT_BY_THREAD:
		*k = (struct row_key){ .kind = AGG_THREAD, .line = -1, .pid = st->pid,
				       .tid = st->tid };
		return fr == st->frames;
	}
	return 0;
}

/* The frame a stack's self goes to: its innermost code frame (by task: its innermost
 * task), else its innermost marker. */
static const struct agg_frame *self_frame(const struct report *r, const struct agg_stack *st)
{
	const struct agg_frame *marker = NULL;
	struct row_key k;

	if (r->o->by == REPORT_BY_THREAD)
		return st->depth ? st->frames : NULL;
	for (uint32_t i = st->depth; i-- > 0;) {
		const struct agg_frame *fr = &st->frames[i];

		if (frame_key(r, st, fr, &k))
			return fr;
		if (!marker && fr->kind == AGG_MARKER)
			marker = fr;
	}
	return r->o->by == REPORT_BY_TASK ? NULL : marker;
}

/* By function: @fr's line, in its self if @self and in its total once per stack. */
static int count_line(struct report *r, const struct agg_frame *fr, size_t si, uint64_t count,
		      int self)
{
	struct table t = { &r->lines, &r->nlines, &r->lines_cap };
	struct row_key k = { .kind = fr->kind, .name = fr->name, .file = fr->file,
			     .line = fr->line };
	struct row *line = row_of(&t, &r->line_index, &k);

	if (!line)
		return -ENOMEM;
	if (line->last_stack != si + 1) {
		line->last_stack = si + 1;
		line->total += count;
	}
	if (self)
		line->self += count;
	return 0;
}

/* A row with no frame of its own: a stack without code frames, or without a task. */
#define NO_ROW_NAME UINT32_MAX

/* Counts @st in the row of @k: in its total once per stack, in its self if @self. */
static int count_in(struct report *r, const struct row_key *k, size_t si,
		    const struct agg_stack *st, enum wait_class c, int self)
{
	struct table t = { &r->rows, &r->n, &r->cap };
	struct row *row = row_of(&t, &r->index, k);

	if (!row)
		return -ENOMEM;
	if (row->last_stack != si + 1) {
		row->last_stack = si + 1;
		row->total += st->count;
		row->by_class[c] += st->count;
	}
	if (self)
		row->self += st->count;
	return 0;
}

static int count_stack(struct report *r, size_t si)
{
	const struct agg_stack *st = aggregate__stack(r->p->agg, si);
	enum wait_class c = wait_class__of(r->p, st);
	const struct agg_frame *self = self_frame(r, st);
	struct row_key k;
	int err = 0;

	r->class_total[c] += st->count;
	for (uint32_t i = 0; i < st->depth; i++)
		if (st->frames[i].kind == AGG_MARKER &&
		    !strcmp(strtab__get(r->p->strs, st->frames[i].name), "[incomplete]")) {
			r->incomplete += st->count;
			break;
		}
	for (uint32_t i = 0; !err && i < st->depth; i++) {
		const struct agg_frame *fr = &st->frames[i];

		if (!frame_key(r, st, fr, &k))
			continue;
		err = count_in(r, &k, si, st, c, fr == self);
		if (!err && r->o->by == REPORT_BY_FUNCTION)
			err = count_line(r, fr, si, st->count, fr == self);
	}
	if (err)
		return err;
	if (self && frame_key(r, st, self, &k))
		return 0;
	/* A marker's row, or "(not in a task)". */
	k = (struct row_key){ .kind = AGG_MARKER, .name = self ? self->name : NO_ROW_NAME,
			      .line = -1 };
	return count_in(r, &k, si, st, c, 1);
}

/* By function, each row's location is its hottest line. */
static void hot_lines(struct report *r)
{
	struct table t = { &r->rows, &r->n, &r->cap };

	for (size_t i = 0; i < r->nlines; i++) {
		const struct row *line = &r->lines[i];
		struct row_key k = line->key;
		size_t slot;
		struct row *row;

		k.line = -1;
		slot = hashmap__probe(&r->index, key_hash(&k), row_equal, &k, &t);
		if (!hashmap__used(&r->index, slot))
			continue;
		row = &r->rows[hashmap__at(&r->index, slot)];
		if (line->self > row->hot_line_self ||
		    (line->self == row->hot_line_self && (line->total > row->hot_line_total ||
		     (line->total == row->hot_line_total && line->key.line < row->hot_line)))) {
			row->hot_line = line->key.line;
			row->hot_line_self = line->self;
			row->hot_line_total = line->total;
		}
	}
}

/* ---- printing --------------------------------------------------------------------- */

static int by_count(const void *a, const void *b, void *ctx)
{
	const struct row *x = a, *y = b;
	enum report_sort sort_by = *(const enum report_sort *)ctx;
	uint64_t kx = sort_by == REPORT_SORT_SELF ? x->self : x->total;
	uint64_t ky = sort_by == REPORT_SORT_SELF ? y->self : y->total;
	uint64_t tx = sort_by == REPORT_SORT_SELF ? x->total : x->self;
	uint64_t ty = sort_by == REPORT_SORT_SELF ? y->total : y->self;

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

static int is_time(const struct profile *p)
{
	return p->unit == PROFILE_NS;
}

/* A count as the table shows it: samples, or seconds. */
static void put_count(FILE *f, const struct profile *p, uint64_t v, int width)
{
	if (is_time(p))
		fprintf(f, " %*.3f", width, (double)v / 1e9);
	else
		fprintf(f, " %*llu", width, (unsigned long long)v);
}

static double share(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static void put_name(FILE *f, const struct report *r, const struct row *row)
{
	const struct profile *p = r->p;
	const struct row_key *k = &row->key;
	int32_t line = r->o->by == REPORT_BY_FUNCTION ? row->hot_line : k->line;
	const char *file = strtab__get(p->strs, k->file);

	/* A C function's line is an offset into it, of no use once lines are merged. */
	if (k->kind == AGG_NATIVE && !strtab__second(p->strs, k->name) &&
	    r->o->by == REPORT_BY_FUNCTION)
		line = -1;
	if (k->kind == AGG_THREAD) {
		for (size_t i = 0; i < p->nthreads; i++)
			if (p->threads[i].pid == k->pid && p->threads[i].tid == k->tid &&
			    p->threads[i].label != PROFILE_NO_NAME) {
				fprintf(f, "%s", strtab__get(p->strs, p->threads[i].label));
				if (p->nthreads && k->pid != p->threads[0].pid)
					fprintf(f, " of pid %u", k->pid);
				return;
			}
		fprintf(f, "thread %u", k->tid);
		return;
	}
	if (k->kind == AGG_MARKER && k->name == NO_ROW_NAME) {
		fprintf(f, "(not in a task)");
		return;
	}
	if (r->o->by == REPORT_BY_FILE && (k->kind == AGG_PYTHON || k->kind == AGG_NATIVE)) {
		fprintf(f, "%s", file);
		return;
	}
	fprintf(f, "%s", strtab__get(p->strs, k->name));
	if (k->kind == AGG_PYTHON)
		fprintf(f, line >= 0 ? " (%s:%d)" : " (%s)", file, line);
	else if (k->kind == AGG_NATIVE && strtab__second(p->strs, k->name))
		fprintf(f, line >= 0 ? " (%s:%d)" : " (%s)",
			profile__base_name(strtab__second(p->strs, k->name)), line);
	else if (k->kind == AGG_NATIVE && line >= 0)
		fprintf(f, "+0x%x (%s)", (unsigned int)line, file);
	else if (k->kind == AGG_NATIVE)
		fprintf(f, " (%s)", file);
}

/* The threads sampled: those the stacks are of (the thread table also holds threads
 * seen in no stack kept). 0 when out of memory: the header then leaves it out. */
static size_t threads_sampled(const struct profile *p)
{
	struct profile_index ix;
	size_t n;

	if (profile_index__build_threads(&ix, p))
		return 0;
	n = ix.nthreads;
	profile_index__free(&ix);
	return n;
}

static void put_header(FILE *f, const struct report *r, size_t shown)
{
	const struct profile *p = r->p;
	uint64_t total = aggregate__total(p->agg);
	size_t threads = threads_sampled(p);

	fprintf(f, "%s: %s mode, ", p->target ? p->target : "profile", p->mode ? p->mode : "cpu");
	if (is_time(p))
		fprintf(f, "%.3f s of thread time", (double)total / 1e9);
	else
		fprintf(f, "%llu samples", (unsigned long long)total);
	fprintf(f, " at %u Hz over %.1f s", p->rate_hz, (double)p->duration_ns / 1e9);
	if (threads)
		fprintf(f, ", %zu thread%s", threads, threads == 1 ? "" : "s");
	if (r->incomplete)
		fprintf(f, ", %.1f%% incomplete", share(r->incomplete, total));
	fprintf(f, "\nby %s, sorted by %s: %zu of %zu rows%s\n", by_names[r->o->by],
		r->o->sort == REPORT_SORT_SELF ? "self" : "total", shown, r->n,
		shown < r->n ? " (-l 0 shows all)" : "");
}

static void put_table(FILE *f, struct report *r)
{
	const struct profile *p = r->p;
	uint64_t total = aggregate__total(p->agg);
	int width = is_time(p) ? 10 : 8, classes = 0;
	size_t shown = r->o->limit && r->o->limit < r->n ? r->o->limit : r->n;

	/* Only the classes the profile has: a CPU profile has one, and needs no split. */
	for (int c = 0; c < WAIT_CLASSES; c++)
		classes += r->class_total[c] != 0;
	put_header(f, r, shown);
	fprintf(f, "\n %6s %6s %*s %*s", "self%", "total%", width, is_time(p) ? "self s" : "self",
		width, is_time(p) ? "total s" : "total");
	for (int c = 0; classes > 1 && c < WAIT_CLASSES; c++)
		if (r->class_total[c])
			fprintf(f, " %*s", width, wait_class__name((enum wait_class)c));
	fprintf(f, "  %s\n", by_names[r->o->by]);
	for (size_t i = 0; i < shown; i++) {
		const struct row *row = &r->rows[i];

		fprintf(f, " %5.1f%% %5.1f%%", share(row->self, total), share(row->total, total));
		put_count(f, p, row->self, width);
		put_count(f, p, row->total, width);
		for (int c = 0; classes > 1 && c < WAIT_CLASSES; c++)
			if (r->class_total[c])
				put_count(f, p, row->by_class[c], width);
		fputs("  ", f);
		put_name(f, r, row);
		fputc('\n', f);
	}
	if (classes > 1) {
		fprintf(f, "\n %6s %5.1f%% %*s", "", 100.0, width, "");
		put_count(f, p, total, width);
		for (int c = 0; c < WAIT_CLASSES; c++)
			if (r->class_total[c])
				put_count(f, p, r->class_total[c], width);
		fputs("  (all)\n", f);
	}
}

int out_report__write(FILE *f, const struct profile *p, const struct report_opts *o)
{
	struct report r = { .p = p, .o = o };
	int err = 0;

	for (size_t i = 0; !err && i < aggregate__count(p->agg); i++)
		err = count_stack(&r, i);
	if (!err) {
		hot_lines(&r);
		if (r.n)
			qsort_r(r.rows, r.n, sizeof(*r.rows), by_count, (void *)&o->sort);
		put_table(f, &r);
		if (ferror(f))
			err = -EIO;
	}
	free(r.rows);
	free(r.lines);
	hashmap__free(&r.index);
	hashmap__free(&r.line_index);
	return err;
}
