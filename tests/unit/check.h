/* SPDX-License-Identifier: GPL-2.0-only */
/* The unit tests' assertions: says where and what, and fails the program. */
#ifndef PBP_TEST_CHECK_H
#define PBP_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

/* A check that says why and goes on, so that one run reports every failure; the test
 * returns 1 at its end when check_failures is not 0. */
static int check_failures __attribute__((unused));

#define CHECK_MSG(cond, ...)                                                        \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			check_failures++;                                           \
		}                                                                   \
	} while (0)

#endif
