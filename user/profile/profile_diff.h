/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Two profiles compared: which flame-graph nodes and which functions grew or shrank
 * beyond what sampling alone would make of them. `pybpfprof diff` prints the functions
 * (out_diff.h) and paints NEW's flame graph with the nodes (out_svg.h).
 *
 * The test, per node (and per function) with a samples in BASE and b in NEW: if the
 * node's cost changed only as the whole program's speed did (H0), each of its a + b
 * samples fell in NEW with the probability p0 that the two profiles' sampling and that
 * speed give any sample of its work, so b ~ Binomial(a + b, p0) given a + b; the
 * two-sided exact binomial test (binom.h) rejects H0 when its p-value is below
 * alpha / m, m being the number of nodes compared (Bonferroni: the chance that any
 * one of them is flagged by noise alone stays below alpha).
 * p0 = s w_new / (w_base + s w_new): w = 1 / tick (samples per second of work), times
 * the profile's duration with DIFF_PER_SECOND; s the program's speed (below).
 *
 * The speed s: one run of the same code on a busy or throttled machine (a shared
 * host, a VM whose neighbours are busy, another CPU frequency) takes more CPU time in
 * every function alike; measured here, identical runs differed by 40 %. Comparing
 * totals as they are would call each function grown. s is the factor by which the
 * code that did not change changed: the weighted median of the nodes' self-time ratios
 * (robust to the minority that changed), refined by pooling the nodes whose self time
 * it explains. A change in one function leaves the rest to say what s is; a uniform
 * slowdown is s. With raw set, s = 1: totals as they are.
 *
 * Counts of time (wall and off-CPU profiles, nanoseconds) become sample-equivalents
 * first: time / the clock's period (profile__tick_ns()), what the same time on a CPU
 * would have been sampled as. A wait is measured rather than sampled, so for it the
 * test is conservative: it has less noise than the test allows for.
 *
 * Shares (each node's fraction of its own profile) are never compared: making one
 * function slower shrinks every other function's share, and a share test would flag
 * them all as faster.
 */
#ifndef PBP_PROFILE_DIFF_H
#define PBP_PROFILE_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "base/hashmap.h"
#include "profile/profile.h"

enum diff_basis {
	DIFF_TOTALS,		/* the same work: a command run to its end, a benchmark */
	DIFF_PER_SECOND,	/* the same load: a service profiled twice, for any length */
};

struct diff_opts {
	enum diff_basis basis;
	double alpha;		/* the chance of any false alarm, before Bonferroni */
	int raw;		/* s = 1: no correction for the program's speed */
};

#define DIFF_ALPHA_DEFAULT 0.01

/* One node's or function's counts in both profiles, and the verdict. */
struct diff_count {
	uint64_t base, new;		/* in each profile's own unit */
	uint64_t base_eq, new_eq;	/* sample-equivalents: what the test counts */
	double base_s, new_s;		/* seconds, or seconds per second (DIFF_PER_SECOND) */
	double p;			/* the test's p-value */
	int change;			/* +1 grew, -1 shrank beyond noise; 0 not shown to */
	double size;			/* (new - expected) / max(new, expected): -1 to 1 */
};

struct diff_key {
	uint32_t parent;		/* nodes: the parent node; functions: 0 */
	uint32_t kind;
	int32_t line;			/* functions: -1 */
	const char *name, *file, *second;	/* "" for none: frames of two profiles
						 * match by text, their ids differ */
};

struct diff_item {
	struct diff_key key;
	struct diff_count c;
	size_t last_stack;		/* functions: the stack last counted, + 1 */
};

struct diff_table {
	struct diff_item *v;
	size_t n, cap;
	struct hashmap index;
	double threshold;		/* alpha / n: a p-value below it is a change */
};

struct profile_diff {
	const struct profile *base, *new;
	struct diff_opts o;
	double p0;			/* P(a sample of equal work is NEW's) */
	double ratio;			/* expected new_eq per base_eq under H0 */
	double speed;			/* s: NEW's time for BASE's, of unchanged code */
	struct diff_table nodes;	/* the merged flame-graph trees; 0 is the root */
	struct diff_table funcs;	/* code frames (Python, C) by function */
	size_t base_only;		/* nodes in BASE only that shrank beyond noise */
};

#define DIFF_ROOT 0

/*
 * Whether @base and @new can be compared under @basis: 0, or -EINVAL with a reason in
 * @why (modes, units, a profile without a clock or duration).
 */
int profile_diff__check(const struct profile *base, const struct profile *new,
			enum diff_basis basis, char *why, size_t len);
/* Compares two profiles that profile_diff__check() passed: 0 or -ENOMEM. */
int profile_diff__build(struct profile_diff *d, const struct profile *base,
			const struct profile *new, const struct diff_opts *o);
void profile_diff__free(struct profile_diff *d);
/* The node of the frames @path[0..@depth) of profile @p (base or new): 0 with *@node,
 * or -ENOENT. Depth 0 is the root. */
int profile_diff__node(const struct profile_diff *d, const struct profile *p,
		       const struct agg_frame *path, uint32_t depth, uint32_t *node);

#endif
