/* SPDX-License-Identifier: GPL-2.0-only */
/* Reads and writes on a descriptor that a signal may interrupt (SIGINT ends a recording,
 * SIGCHLD and the tick clock's signal arrive at any time): EINTR is retried here so that
 * no caller mistakes it for an end or an error. */
#ifndef PBP_FD_H
#define PBP_FD_H

#include <stddef.h>
#include <sys/types.h>

/* One read(2) of at most @len bytes: the bytes read (0 at the end) or -errno. */
ssize_t fd__read(int fd, void *buf, size_t len);

/* All of @len bytes: 0, -errno, or -EIO for a write that wrote nothing. */
int fd__write_all(int fd, const void *buf, size_t len);

#endif
