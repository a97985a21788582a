/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gzip in and out with zlib: the same bytes for the same input on every host (no name,
 * no time, os "unknown" in the header), and a bounded read of a file someone else may
 * have written.
 */
#ifndef PBP_GZIP_H
#define PBP_GZIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/pb.h"

/* Writes the concatenation of @parts to @f as one gzip member. 0, -ENOMEM, -EIO. */
int gzip__write(FILE *f, const struct pb *parts, size_t nparts);

/*
 * Reads the gzip file @fd (any number of members) into a new buffer, at most @max
 * bytes once inflated. 0 with *@out (free()) and *@len; -EFBIG past @max, -EBADMSG
 * if it is not gzip or is corrupt or truncated, -ENOMEM, or the errno of a read.
 */
int gzip__read(int fd, size_t max, uint8_t **out, size_t *len);

#endif
