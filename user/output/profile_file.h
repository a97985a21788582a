/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The profile file (.pbp): everything a profile holds (struct profile), written so that
 * reading it back gives the same profile, id for id, and so the same bytes from every
 * writer as writing that format at record time would. docs/profile-format.md describes
 * it field by field.
 *
 * A file to read may come from anyone, so nothing in it is trusted: it is inflated to
 * at most PROFILE_FILE_MAX bytes, every count is bounded by the bytes that hold it, and
 * every id is checked against what it names before any writer sees it.
 */
#ifndef PBP_PROFILE_FILE_H
#define PBP_PROFILE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* The most a profile file may hold once inflated. */
#define PROFILE_FILE_MAX (1024u << 20)
/* The format's version; a file of a later one is refused, naming it. */
#define PROFILE_FILE_VERSION 1

/* A writer (writers.h): @p as one gzip-compressed profile file. */
int profile_file__write(FILE *f, const struct profile *p);

/* A profile read back: @p is what writers read; the rest is what it points into. */
struct profile_file {
	struct profile p;
	struct aggregate *agg;
	struct strtab *strs;
	struct profile_thread *threads;
	struct profile_sample *timeline;
	struct profile_label *labels;
	struct profile_source *sources;
	char **texts;		/* the target's name, labels, modes and sources */
	size_t ntexts;
};

/*
 * Reads the profile file @path ("-": standard input). 0 with @pf filled (free it with
 * profile_file__free()); else a negative errno with why in @why (one line, no path):
 * -ENOENT and other errnos of opening or reading, -EBADMSG not a profile file or
 * corrupt, -EFBIG past PROFILE_FILE_MAX, -EPROTO a later version, -ENOMEM.
 */
int profile_file__load(const char *path, struct profile_file *pf, char *why, size_t whylen);
/* The same from the inflated bytes @data (@why as above). */
int profile_file__parse(const uint8_t *data, size_t len, struct profile_file *pf, char *why,
			size_t whylen);
void profile_file__free(struct profile_file *pf);

#endif
