/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The two-sided binomial test: how surprising k successes in n trials are when each
 * succeeds with probability p0. `pybpfprof diff` asks it of every flame-graph node
 * (profile_diff.h).
 */
#ifndef PBP_BINOM_H
#define PBP_BINOM_H

#include <stdint.h>

/*
 * The p-value of @k in Binomial(@n, @p0), 0 < @p0 < 1: the probability of an outcome
 * no more likely than @k (the "minimum likelihood" two-sided test, as R's binom.test).
 * Exact, from log-gamma, up to a variance n p0 (1 - p0) of BINOM_EXACT_VAR; beyond it,
 * the normal approximation with continuity correction, which is then closer to the
 * exact value than the threshold it is compared with needs. 1 when @n is 0.
 */
double binom__p_two_sided(uint64_t k, uint64_t n, double p0);

#define BINOM_EXACT_VAR 1e6

#endif
