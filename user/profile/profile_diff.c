// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two profiles compared; see profile_diff.h.
 *
 * Both profiles' stacks go into one tree of nodes, merged on their frames alone as the
 * flame graph merges them (out_svg.c: name, kind, file, C source, line), so that a
 * node of NEW's picture finds its counterpart in BASE by walking the same path. The
 * profiles have a string table each, so frames are keyed by their text, not their ids.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/binom.h"
#include "base/hash.h"
#include "base/vec.h"
#include "profile/profile_diff.h"

static const char *mode_of(const struct profile *p)
{
	return p->mode ? p->mode : "cpu";
}

int profile_diff__check(const struct profile *base, const struct profile *new,
			enum diff_basis basis, char *why, size_t len)
{
	const struct profile *both[2] = { base, new };

	if (strcmp(mode_of(base), mode_of(new))) {
		snprintf(why, len, "BASE is a %s profile and NEW a %s one: they measure "
			 "different things", mode_of(base), mode_of(new));
		return -EINVAL;
	}
	if (base->unit != new->unit) {
		snprintf(why, len, "BASE counts %s and NEW %s: their counts cannot compare",
			 base->unit == PROFILE_NS ? "time" : "samples",
			 new->unit == PROFILE_NS ? "time" : "samples");
		return -EINVAL;
	}
	for (int i = 0; i < 2; i++) {
		if (!profile__tick_ns(both[i])) {
			snprintf(why, len, "%s has no sampling rate: its counts cannot be "
				 "weighed", i ? "NEW" : "BASE");
			return -EINVAL;
		}
		if (basis == DIFF_PER_SECOND && !both[i]->duration_ns) {
			snprintf(why, len, "%s has no duration: --per-second cannot divide by "
				 "it", i ? "NEW" : "BASE");
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- the tables ------------------------------------------------------------------- */

static uint64_t str_hash(uint64_t h, const char *s)
{
	return hash_u64(h ^ hash_bytes(s, strlen(s)));
}

static uint64_t key_hash(const struct diff_key *k)
{
	uint64_t h = hash_u64((uint64_t)k->parent << 32 | k->kind) ^ (uint32_t)k->line;

	return str_hash(str_hash(str_hash(h, k->name), k->file), k->second);
}

static uint64_t item_hash(uint32_t idx, const void *ctx)
{
	const struct diff_table *t = ctx;

	return key_hash(&t->v[idx].key);
}

static bool item_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct diff_key *a = &((const struct diff_table *)ctx)->v[idx].key, *b = key;

	return a->parent == b->parent && a->kind == b->kind && a->line == b->line &&
	       !strcmp(a->name, b->name) && !strcmp(a->file, b->file) &&
	       !strcmp(a->second, b->second);
}

/* The item of @k in @t, added if new: 0 with *@idx, or -ENOMEM. */
static int table__get(struct diff_table *t, const struct diff_key *k, uint32_t *idx)
{
	size_t slot;

	if (hashmap__grow(&t->index, 256, item_hash, t) ||
	    vec__reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v), 256))
		return -ENOMEM;
	slot = hashmap__probe(&t->index, key_hash(k), item_equal, k, t);
	if (hashmap__used(&t->index, slot)) {
		*idx = hashmap__at(&t->index, slot);
		return 0;
	}
	t->v[t->n] = (struct diff_item){ .key = *k };
	hashmap__set(&t->index, slot, (uint32_t)t->n);
	*idx = (uint32_t)t->n++;
	return 0;
}

static void table__free(struct diff_table *t)
{
	free(t->v);
	hashmap__free(&t->index);
}

/* The key of @fr under @parent, as out_svg.c's cmp_frame() tells frames apart. */
static struct diff_key frame_key(const struct profile *p, const struct agg_frame *fr,
				 uint32_t parent)
{
	const char *second = fr->kind == AGG_NATIVE ? strtab__second(p->strs, fr->name) : NULL;
	const char *name = strtab__get(p->strs, fr->name);
	const char *file = fr->kind == AGG_PYTHON || fr->kind == AGG_NATIVE ?
			   strtab__get(p->strs, fr->file) : NULL;

	return (struct diff_key){ .parent = parent, .kind = fr->kind, .line = fr->line,
				  .name = name ? name : "", .file = file ? file : "",
				  .second = second ? second : "" };
}

static void add_count(struct diff_count *c, int is_new, uint64_t n)
{
	if (is_new)
		c->new += n;
	else
		c->base += n;
}

/* Adds stack @si of @p to both tables; @stamp tells this pass's stacks apart. */
static int add_stack(struct profile_diff *d, const struct profile *p, int is_new, size_t si,
		     size_t stamp)
{
	const struct agg_stack *st = aggregate__stack(p->agg, si);
	uint32_t node = DIFF_ROOT, fn;
	int err;

	add_count(&d->nodes.v[DIFF_ROOT].c, is_new, st->count);
	for (uint32_t i = 0; i < st->depth; i++) {
		const struct agg_frame *fr = &st->frames[i];
		struct diff_key k = frame_key(p, fr, node);

		err = table__get(&d->nodes, &k, &node);
		if (err)
			return err;
		add_count(&d->nodes.v[node].c, is_new, st->count);
		if (fr->kind != AGG_PYTHON && fr->kind != AGG_NATIVE)
			continue;
		/* A function is on the stack once however deep it recurses, as report's. */
		k.parent = 0, k.line = -1;
		err = table__get(&d->funcs, &k, &fn);
		if (err)
			return err;
		if (d->funcs.v[fn].last_stack != stamp + si + 1) {
			d->funcs.v[fn].last_stack = stamp + si + 1;
			add_count(&d->funcs.v[fn].c, is_new, st->count);
		}
	}
	return 0;
}

/* ---- the test --------------------------------------------------------------------- */

/* A count of @p in sample-equivalents: time / the clock's period. */
static uint64_t sample_eq(const struct profile *p, uint64_t n)
{
	return (uint64_t)llround((double)n * (double)p->period_ns / (double)profile__tick_ns(p));
}

static double seconds(const struct profile_diff *d, const struct profile *p, uint64_t n)
{
	double s = (double)n * (double)p->period_ns / 1e9;

	return d->o.basis == DIFF_PER_SECOND ? s / ((double)p->duration_ns / 1e9) : s;
}

/* P(a sample of work is NEW's) if it changed by @speed. */
static double p0_at(const struct profile_diff *d, double speed)
{
	return d->ratio * speed / (1 + d->ratio * speed);
}

static void judge(const struct profile_diff *d, struct diff_count *c, double threshold)
{
	double expected;

	c->base_eq = sample_eq(d->base, c->base);
	c->new_eq = sample_eq(d->new, c->new);
	c->base_s = seconds(d, d->base, c->base);
	c->new_s = seconds(d, d->new, c->new);
	c->p = binom__p_two_sided(c->new_eq, c->base_eq + c->new_eq, d->p0);
	expected = (double)c->base_eq * d->ratio * d->speed;
	c->size = (double)c->new_eq == expected ? 0 :
		  ((double)c->new_eq - expected) / fmax((double)c->new_eq, expected);
	c->change = c->p >= threshold ? 0 : (double)c->new_eq > expected ? 1 : -1;
}

static void judge_all(const struct profile_diff *d, struct diff_table *t)
{
	size_t tested = 0;

	for (size_t i = 0; i < t->n; i++)
		tested += t->v[i].c.base || t->v[i].c.new;
	t->threshold = d->o.alpha / (double)(tested ? tested : 1);
	for (size_t i = 0; i < t->n; i++)
		judge(d, &t->v[i].c, t->threshold);
}

/* Samples of equal work per second of it: the clock's rate, times the duration with
 * --per-second, where equal work is equal work each second. */
static double weight(const struct profile_diff *d, const struct profile *p)
{
	double w = 1e9 / (double)profile__tick_ns(p);

	return d->o.basis == DIFF_PER_SECOND ? w * ((double)p->duration_ns / 1e9) : w;
}

/* A node's own samples (not its callees'), in sample-equivalents, and their ratio. */
struct self_time {
	uint64_t a, b;
	double r;		/* b / (a ratio): NEW's time for BASE's */
};

static int by_ratio(const void *x, const void *y)
{
	double a = ((const struct self_time *)x)->r, b = ((const struct self_time *)y)->r;

	return (a > b) - (a < b);
}

/* The weighted median of the ratios (by samples, a + b), or 1 if it is no number. */
static double weighted_median(struct self_time *v, size_t n)
{
	uint64_t total = 0, sum = 0;

	qsort(v, n, sizeof(*v), by_ratio);
	for (size_t i = 0; i < n; i++)
		total += v[i].a + v[i].b;
	for (size_t i = 0; i < n; i++) {
		sum += v[i].a + v[i].b;
		if (2 * sum >= total)
			return isfinite(v[i].r) && v[i].r > 0 ? v[i].r : 1;
	}
	return 1;
}

/*
 * d->speed (profile_diff.h): the median first, robust to the nodes that changed but
 * as noisy as the one node it picks; then the pooled ratio of every node whose own
 * time the median explains, which is as precise as all of them together.
 */
static int estimate_speed(struct profile_diff *d)
{
	const struct diff_table *t = &d->nodes;
	uint64_t *own = calloc(2 * (t->n ? t->n : 1), sizeof(*own));
	struct self_time *v = calloc(t->n ? t->n : 1, sizeof(*v));
	size_t n = 0;
	int err = -ENOMEM;

	if (!own || !v)
		goto cleanup;
	for (size_t i = 0; i < t->n; i++) {
		own[2 * i] += t->v[i].c.base;
		own[2 * i + 1] += t->v[i].c.new;
		if (i != DIFF_ROOT) {
			own[2 * t->v[i].key.parent] -= t->v[i].c.base;
			own[2 * t->v[i].key.parent + 1] -= t->v[i].c.new;
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		struct self_time st = { sample_eq(d->base, own[2 * i]),
					sample_eq(d->new, own[2 * i + 1]) };

		if (!st.a && !st.b)
			continue;
		st.r = st.a ? (double)st.b / ((double)st.a * d->ratio) : INFINITY;
		v[n++] = st;
	}
	d->speed = weighted_median(v, n);
	for (int round = 0; round < 3; round++) {
		uint64_t a = 0, b = 0;

		for (size_t i = 0; i < n; i++)
			if (binom__p_two_sided(v[i].b, v[i].a + v[i].b, p0_at(d, d->speed)) >=
			    d->o.alpha / (double)n)
				a += v[i].a, b += v[i].b;
		if (a && b)
			d->speed = (double)b / ((double)a * d->ratio);
	}
	err = 0;
cleanup:
	free(own);
	free(v);
	return err;
}

int profile_diff__build(struct profile_diff *d, const struct profile *base,
			const struct profile *new, const struct diff_opts *o)
{
	static const struct diff_key root = { .name = "", .file = "", .second = "",
					      .line = -1, .kind = UINT32_MAX };
	uint32_t idx;
	int err;

	*d = (struct profile_diff){ .base = base, .new = new, .o = *o, .speed = 1 };
	d->ratio = weight(d, new) / weight(d, base);
	err = table__get(&d->nodes, &root, &idx);
	for (size_t i = 0; !err && i < aggregate__count(base->agg); i++)
		err = add_stack(d, base, 0, i, 0);
	for (size_t i = 0; !err && i < aggregate__count(new->agg); i++)
		err = add_stack(d, new, 1, i, aggregate__count(base->agg));
	if (!err && !o->raw)
		err = estimate_speed(d);
	if (err)
		goto cleanup;
	d->p0 = p0_at(d, d->speed);
	judge_all(d, &d->nodes);
	judge_all(d, &d->funcs);
	for (size_t i = 0; i < d->nodes.n; i++)
		d->base_only += !d->nodes.v[i].c.new && d->nodes.v[i].c.change;
	return 0;
cleanup:
	profile_diff__free(d);
	return err;
}

void profile_diff__free(struct profile_diff *d)
{
	table__free(&d->nodes);
	table__free(&d->funcs);
	d->nodes = (struct diff_table){ 0 };
	d->funcs = (struct diff_table){ 0 };
}

int profile_diff__node(const struct profile_diff *d, const struct profile *p,
		       const struct agg_frame *path, uint32_t depth, uint32_t *node)
{
	uint32_t at = DIFF_ROOT;

	for (uint32_t i = 0; i < depth; i++) {
		struct diff_key k = frame_key(p, &path[i], at);

		if (hashmap__find(&d->nodes.index, key_hash(&k), item_equal, &k, &d->nodes,
				  &at))
			return -ENOENT;
	}
	*node = at;
	return 0;
}
