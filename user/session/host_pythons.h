/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How many CPython processes this build can read run on the host now: what `-a`
 * would have profiled without its filters, told to a user whose filters took none.
 */
#ifndef PBP_HOST_PYTHONS_H
#define PBP_HOST_PYTHONS_H

#include <stdint.h>

/* Counts them into *@n (our own process left out); 0 or a negative errno. */
int host_pythons__count(uint32_t *n);

#endif
