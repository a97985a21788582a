/* SPDX-License-Identifier: GPL-2.0-only */
/* Which of the capabilities the BPF path needs this process lacks. */
#ifndef PBP_PRIVS_H
#define PBP_PRIVS_H

#include <stddef.h>

/* Writes the missing capabilities ("CAP_BPF, CAP_PERFMON") into @buf; returns how
 * many are missing (0: all there). */
int privs__missing(char *buf, size_t len);

#endif
