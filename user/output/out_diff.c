// SPDX-License-Identifier: GPL-2.0-only
/*
 * The differential outputs; see out_diff.h. The flame graph is out_svg.c's, painted
 * through its callback, so a diff zooms and searches like any other.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/out_diff.h"
#include "output/out_svg.h"

static const char *const verdicts[] = { "shrank", "-", "grew" };

static const char *unit_of(const struct profile_diff *d)
{
	return d->o.basis == DIFF_PER_SECOND ? "s/s" : "s";
}

static const char *basis_name(const struct profile_diff *d)
{
	return d->o.basis == DIFF_PER_SECOND ? "time per second" : "total time";
}

/* ---- the table -------------------------------------------------------------------- */

/* What NEW took beyond what the program's speed explains. */
static double excess(const struct diff_item *it, double speed)
{
	return it->c.new_s - it->c.base_s * speed;
}

static int by_change(const void *a, const void *b, void *speed)
{
	const struct diff_item *x = *(const struct diff_item *const *)a;
	const struct diff_item *y = *(const struct diff_item *const *)b;
	double cx = fabs(excess(x, *(double *)speed)), cy = fabs(excess(y, *(double *)speed));
	int c;

	/* Changes beyond noise first: a large change within it says less. */
	if (!x->c.change != !y->c.change)
		return x->c.change ? -1 : 1;
	if (cx != cy)
		return cx > cy ? -1 : 1;
	if ((c = strcmp(x->key.name, y->key.name)))
		return c;
	return strcmp(x->key.file, y->key.file);
}

static void put_function(FILE *f, const struct diff_key *k)
{
	const char *where = k->second[0] ? profile__base_name(k->second) : k->file;

	fprintf(f, "%s", k->name);
	if (where[0])
		fprintf(f, " (%s)", where);
}

static void put_side(FILE *f, const char *which, const struct profile *p)
{
	fprintf(f, "%s: %s, %s mode, %.1f s at %u Hz\n", which, p->target ? p->target : "profile",
		p->mode ? p->mode : "cpu", (double)p->duration_ns / 1e9, p->rate_hz);
}

int out_diff__write_table(FILE *f, const struct profile_diff *d, size_t limit)
{
	const struct diff_table *t = &d->funcs;
	const struct diff_item **order = malloc((t->n ? t->n : 1) * sizeof(*order));
	size_t shown = limit && limit < t->n ? limit : t->n, changed = 0, nodes_changed = 0;
	const char *u = unit_of(d);

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		order[i] = &t->v[i];
		changed += t->v[i].c.change != 0;
	}
	for (size_t i = 0; i < d->nodes.n; i++)
		nodes_changed += d->nodes.v[i].c.change != 0;
	qsort_r(order, t->n, sizeof(*order), by_change, (void *)&d->speed);
	put_side(f, "BASE", d->base);
	put_side(f, "NEW ", d->new);
	fprintf(f, "compared: %s; NEW's unchanged code took %.3fx BASE's time%s\n"
		"a change is beyond noise when the exact binomial test of NEW's share of a\n"
		"function's samples (H0: p0 = %.4f, changed only by that speed) gives\n"
		"p < %g / %zu functions (Bonferroni)\n", basis_name(d), d->speed,
		d->o.raw ? " (--no-scale: taken as 1)" : "", d->p0, d->o.alpha, t->n);
	fprintf(f, "%zu of %zu functions and %zu of %zu flame-graph nodes changed beyond noise; "
		"%zu of %zu rows%s\n\n", changed, t->n, nodes_changed, d->nodes.n, shown, t->n,
		shown < t->n ? " (-l 0 shows all)" : "");
	fprintf(f, " %10s %10s %10s %8s %9s %-7s %s\n", strcmp(u, "s") ? "base s/s" : "base s",
		strcmp(u, "s") ? "new s/s" : "new s", "change", "change%", "p", "verdict",
		"function");
	for (size_t i = 0; i < shown; i++) {
		const struct diff_count *c = &order[i]->c;

		fprintf(f, " %10.3f %10.3f %+10.3f", c->base_s, c->new_s, c->new_s - c->base_s);
		if (c->base_s > 0)
			fprintf(f, " %+7.1f%%", 100.0 * (c->new_s - c->base_s) / c->base_s);
		else
			fprintf(f, " %8s", "new");
		fprintf(f, " %9.2g %-7s ", c->p, verdicts[c->change + 1]);
		put_function(f, &order[i]->key);
		fputc('\n', f);
	}
	free(order);
	return ferror(f) ? -EIO : 0;
}

/* ---- the flame graph -------------------------------------------------------------- */

#define NEUTRAL "#dcdcd4"

/* From a pale tint at no change to a full colour at a doubling (or a halving). */
static void tint(char *out, size_t len, const unsigned char pale[3], const unsigned char full[3],
		 double size)
{
	double t = fmin(1, fabs(size));
	unsigned v[3];

	for (int i = 0; i < 3; i++)
		v[i] = (unsigned)lround(pale[i] + (full[i] - pale[i]) * t);
	snprintf(out, len, "#%02x%02x%02x", v[0], v[1], v[2]);
}

static int paint(void *ctx, const struct agg_frame *path, uint32_t depth, uint64_t n,
		 struct svg_mark *m)
{
	static const unsigned char red_pale[3] = { 245, 190, 180 }, red[3] = { 200, 20, 20 };
	static const unsigned char blue_pale[3] = { 190, 205, 245 }, blue[3] = { 30, 70, 200 };
	const struct profile_diff *d = ctx;
	const struct diff_count *c;
	uint32_t node;

	(void)n;
	if (profile_diff__node(d, d->new, path, depth, &node)) {
		snprintf(m->fill, sizeof(m->fill), NEUTRAL);	/* every path of NEW has one */
		return 0;
	}
	c = &d->nodes.v[node].c;
	if (c->change > 0)
		tint(m->fill, sizeof(m->fill), red_pale, red, 2 * c->size);
	else if (c->change < 0)
		tint(m->fill, sizeof(m->fill), blue_pale, blue, 2 * c->size);
	else
		snprintf(m->fill, sizeof(m->fill), NEUTRAL);
	snprintf(m->mark, sizeof(m->mark), "%s", c->change > 0 ? "grew" :
		 c->change < 0 ? "shrank" : "same");
	snprintf(m->note, sizeof(m->note), "base %.3f %s, new %.3f %s (%+.1f%%), p %.2g: %s",
		 c->base_s, unit_of(d), c->new_s, unit_of(d),
		 c->base_s > 0 ? 100 * (c->new_s - c->base_s) / c->base_s : 100.0, c->p,
		 c->change > 0 ? "grew beyond noise" : c->change < 0 ? "shrank beyond noise" :
		 "within noise");
	return 0;
}

int out_diff__write_svg(FILE *f, const struct profile_diff *d, int html)
{
	static const struct svg_legend_item legend[] = {
		{ "#c81414", "grew" }, { "#1e46c8", "shrank" }, { NEUTRAL, "within noise" },
	};
	char subtitle[512], note[256];
	const struct profile *b = d->base, *n = d->new;

	const char *bt = b->target ? b->target : "profile", *cut = strstr(bt, " (");

	/* The title names NEW in full; BASE's command line would not fit beside it. */
	snprintf(subtitle, sizeof(subtitle), "diff of NEW (%.1f s at %u Hz) against BASE %.*s "
		 "(%.1f s at %u Hz), %s compared", (double)n->duration_ns / 1e9, n->rate_hz,
		 (int)(cut ? (size_t)(cut - bt) : strlen(bt)), bt, (double)b->duration_ns / 1e9,
		 b->rate_hz, basis_name(d));
	snprintf(note, sizeof(note), "coloured only beyond noise: exact binomial test, p < %g / "
		 "%zu nodes, NEW's unchanged code taking %.3fx BASE's time", d->o.alpha,
		 d->nodes.n, d->speed);
	if (d->base_only)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "; %zu node%s only in "
			 "BASE shrank (see the table)", d->base_only, d->base_only == 1 ? "" : "s");
	return out_svg__write_painted(f, n, &(struct svg_painter){
		.paint = paint, .ctx = (void *)d, .subtitle = subtitle, .note = note,
		.legend = legend, .nlegend = sizeof(legend) / sizeof(legend[0]) }, html);
}
