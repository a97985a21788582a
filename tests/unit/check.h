/* SPDX-License-Identifier: GPL-2.0-only */
/* The unit tests' one assertion: says where and what, and fails the program. */
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

#endif
