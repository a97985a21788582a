// SPDX-License-Identifier: GPL-2.0-only
/*
 * The two-sided binomial test; see binom.h.
 *
 * The probability mass rises to the mode and falls after it, so the outcomes no more
 * likely than k are two tails: the one that starts at k, and on the other side of the
 * mode the one that starts at the last outcome no likelier than k (found by bisection).
 * Each tail is summed outward from its start with the ratio of neighbouring terms, and
 * stops once a term no longer changes the sum: a few standard deviations of terms,
 * not n of them.
 */
#include <math.h>

#include "base/binom.h"

static double log_pmf(uint64_t k, uint64_t n, double lp, double lq)
{
	int sign;	/* lgamma_r: lgamma's sign is a global otherwise */

	return lgamma_r((double)n + 1, &sign) - lgamma_r((double)k + 1, &sign) -
	       lgamma_r((double)(n - k) + 1, &sign) + (double)k * lp + (double)(n - k) * lq;
}

/* The sum of pmf(j) from j = @k outward, away from the mode: upward if @up. */
static double tail(uint64_t k, uint64_t n, double p, int up)
{
	double lp = log(p), lq = log1p(-p), r = p / (1 - p);
	double t = exp(log_pmf(k, n, lp, lq)), sum = 0;

	for (uint64_t j = k;;) {
		sum += t;
		if (t <= sum * 1e-17 || (up ? j == n : j == 0))
			break;
		/* pmf(j+1) / pmf(j) = (n - j) / (j + 1) * p / q */
		t *= up ? (double)(n - j) / (double)(j + 1) * r : (double)j / (double)(n - j + 1) / r;
		j += up ? 1 : -1;
	}
	return sum;
}

double binom__p_two_sided(uint64_t k, uint64_t n, double p0)
{
	double mean = (double)n * p0, var = mean * (1 - p0), lp, lq, limit, p;
	uint64_t mode, lo, hi;
	int above;

	if (!n || k > n)
		return 1;
	if (var > BINOM_EXACT_VAR) {
		double z = (fabs((double)k - mean) - 0.5) / sqrt(var);

		return z <= 0 ? 1 : erfc(z / M_SQRT2);
	}
	mode = (uint64_t)((double)(n + 1) * p0);
	if (mode > n)
		mode = n;
	if (k == mode)
		return 1;
	lp = log(p0), lq = log1p(-p0);
	/* A relative slack, as R's binom.test has, so that an outcome exactly as likely
	 * as k on the other side is counted despite rounding. */
	limit = log_pmf(k, n, lp, lq) + 1e-7;
	above = k > mode;
	/* The other side's outcome no likelier than k nearest the mode: lo above it
	 * (where the mass rises), hi below it, with the mode on the far side. */
	lo = above ? 0 : mode, hi = above ? mode : n;
	if (above ? log_pmf(0, n, lp, lq) > limit : log_pmf(n, n, lp, lq) > limit) {
		p = tail(k, n, p0, above);	/* none: the other tail is empty */
		return p < 1 ? p : 1;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		/* Below the mode the mass rises with j, above it falls. */
		if ((log_pmf(mid, n, lp, lq) <= limit) == above)
			lo = mid;
		else
			hi = mid;
	}
	p = tail(k, n, p0, above) + tail(above ? lo : hi, n, p0, !above);
	return p < 1 ? p : 1;
}
