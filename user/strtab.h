/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Interned strings: every function name and file name is stored once and referred to
 * by a small id, so stacks compare and hash as arrays of integers.
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
size_t strtab__count(const struct strtab *t);

#endif
