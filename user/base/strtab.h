/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Interned strings: every function name and file name is stored once and referred to
 * by a small id, so stacks compare and hash as arrays of integers.
 *
 * A table only grows; one that must live for ever (the agent's) is rebuilt now and
 * then from the ids still held (struct strtab_remap), so the strings of processes
 * that are gone go with them.
 */
#ifndef PBP_STRTAB_H
#define PBP_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab;

struct strtab *strtab__new(void);
void strtab__free(struct strtab *t);
/* Returns the id of @s (@len bytes, need not be NUL-terminated), adding it if new;
 * negative errno on allocation failure. */
int64_t strtab__intern(struct strtab *t, const char *s, size_t len);
const char *strtab__get(const struct strtab *t, uint32_t id);
/* A string may be two, interned as one with a NUL between them ("FIRST\0SECOND"), so
 * that a pair is one id: strtab__get() reads the first, this the second; NULL when
 * @id holds no NUL. */
const char *strtab__second(const struct strtab *t, uint32_t id);
/* The length of string @id, pairs whole (both parts and the NUL between them). */
size_t strtab__len(const struct strtab *t, uint32_t id);
size_t strtab__count(const struct strtab *t);
/* What the table holds in memory: strings, index and hash slots. */
size_t strtab__bytes(const struct strtab *t);

/*
 * A rebuild: every holder of ids passes each through strtab_remap__id(), which moves
 * its string into a new table the first time and rewrites the id; then
 * strtab_remap__finish() puts the new table in place of the old (the strtab pointer
 * everyone holds stays valid) and frees the strings nobody passed. Only the start can
 * fail, so no holder is ever left half rewritten. Ids handed out before and not passed
 * through are meaningless afterwards.
 */
struct strtab_remap {
	struct strtab *from;
	struct strtab *to;
	uint32_t *map;		/* old id -> new id + 1; 0: not kept (yet) */
	size_t n;		/* ids of @from */
};

int strtab_remap__init(struct strtab_remap *r, struct strtab *t);
/* Rewrites *@id (an id of the old table; others are left as they are). */
void strtab_remap__id(struct strtab_remap *r, uint32_t *id);
void strtab_remap__finish(struct strtab_remap *r);

#endif
