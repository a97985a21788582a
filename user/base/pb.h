/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A minimal protocol-buffers encoder into a growing buffer: varint and
 * length-delimited fields, nested messages and packed repeated fields. Enough for
 * profile.proto; no schema, no reflection.
 *
 * Errors are sticky: once an allocation fails, later calls do nothing and pb.err holds
 * -ENOMEM, so an encoder can emit a whole message and check once at the end instead
 * of after every field.
 */
#ifndef PBP_PB_H
#define PBP_PB_H

#include <stddef.h>
#include <stdint.h>

struct pb {
	uint8_t *data;
	size_t len, cap;
	int err;
};

/* A zeroed struct pb is an empty buffer; this frees what it grew. */
void pb__free(struct pb *b);
/* A varint field; a zero value is left out, as proto3 does. */
void pb__uint(struct pb *b, uint32_t field, uint64_t v);
/* A length-delimited field, written even when empty (string_table[0] is ""). */
void pb__bytes(struct pb *b, uint32_t field, const void *data, size_t len);
/* A bare varint: an element of a packed repeated field. */
void pb__varint(struct pb *b, uint64_t v);
/* Nested messages and packed fields: pb__close() wraps what was written since
 * pb__open() as one length-delimited @field. */
size_t pb__open(const struct pb *b);
void pb__close(struct pb *b, uint32_t field, size_t mark);

#endif
