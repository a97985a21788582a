/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Frames of the unit tests' fixed profiles, written as text: "KIND|NAME[|FILE|LINE]",
 * KIND one of Y (Python), T (thread), M (marker), P (process), W (wait), K (task) or
 * N (native: FILE is the object, LINE the offset, "0x2c"); LINE -1 for none. A native
 * NAME "FUNCTION#SOURCE" is a frame with DWARF line info: the pair "FUNCTION\0SOURCE"
 * (aggregate.h), LINE its source line.
 */
#ifndef PBP_TEST_FRAME_SPEC_H
#define PBP_TEST_FRAME_SPEC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"
#include "base/strtab.h"

/* The id of @s; a test cannot go on without it. */
static inline uint32_t spec_intern(struct strtab *strs, const char *s, size_t len)
{
	int64_t id = strtab__intern(strs, s, len);

	if (id < 0)
		exit(1);
	return (uint32_t)id;
}

/* The id of a native frame's name: "FUNCTION#SOURCE" is the pair "FUNCTION\0SOURCE". */
static inline uint32_t spec_native_name_len(struct strtab *strs, const char *name, size_t len)
{
	const char *hash = memchr(name, '#', len);
	char pair[512];

	if (!hash)
		return spec_intern(strs, name, len);
	if (len >= sizeof(pair))
		exit(1);
	memcpy(pair, name, len);
	pair[hash - name] = '\0';
	return spec_intern(strs, pair, len);
}

static inline uint32_t spec_native_name(struct strtab *strs, const char *name)
{
	return spec_native_name_len(strs, name, strlen(name));
}

static inline void spec_parse_frame(struct strtab *strs, const char *spec,
				    struct agg_frame *fr)
{
	const char *name = spec + 2, *bar = strchr(name, '|');
	/* In enum agg_frame_kind's order. */
	static const char kinds[] = "YTMPWKN";
	const char *kind = strchr(kinds, spec[0]);

	_Static_assert(sizeof(kinds) - 1 == AGG_NATIVE + 1, "a letter per frame kind");

	if (!kind || !spec[0]) {
		fprintf(stderr, "bad frame spec %s\n", spec);
		exit(1);
	}
	fr->kind = (uint32_t)(kind - kinds);
	fr->name = spec_intern(strs, name, bar ? (size_t)(bar - name) : strlen(name));
	if (fr->kind == AGG_NATIVE && bar)
		fr->name = spec_native_name_len(strs, name, (size_t)(bar - name));
	fr->line = -1;
	fr->file = 0;
	if (!bar)
		return;
	name = bar + 1;
	bar = strchr(name, '|');
	fr->file = spec_intern(strs, name, (size_t)(bar - name));
	fr->line = (int32_t)strtol(bar + 1, NULL, 0);
}

#endif
