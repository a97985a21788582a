/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Writes each exported profile as DIR/APP-PID-YYYYMMDDTHHMMSS.mmmZ.pb.gz (UTC, the
 * profile's end), atomically (a hidden temporary name, then rename), and keeps the
 * total size of such files in DIR under a cap by deleting the oldest of them. Files
 * whose names do not have that exact form are never touched.
 */
#ifndef PBP_EXPORT_FILES_H
#define PBP_EXPORT_FILES_H

#include <stdint.h>

#include "agent/export_queue.h"

struct export_files;

/* @dir is created when missing (parents too, mode 0750); max_bytes 0 means no cap; @fsync makes each file durable before it
 * is renamed into place (and the directory after). */
int export_files__new(const char *dir, uint64_t max_bytes, int fsync,
		      const char *app_name, struct export_files **out);
void export_files__free(struct export_files *f);
/* Writes @it, then deletes the oldest of our files while over the cap (never the one
 * just written). The path written goes into @path when it is not NULL. */
int export_files__write(struct export_files *f, const struct export_item *it, char *path,
			size_t pathlen);
/* Whether @name has the form of the files written here. */
int export_files__is_ours(const char *name);

#endif
