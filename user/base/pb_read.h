/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reading protocol buffers that someone else wrote: every length is checked against
 * what is left, a varint stops at ten bytes, and a field of an unknown wire type ends
 * the read with an error rather than a guess. Errors are sticky, as pb.h's are.
 */
#ifndef PBP_PB_READ_H
#define PBP_PB_READ_H

#include <stddef.h>
#include <stdint.h>

struct pb_reader {
	const uint8_t *p, *end;
	int err;		/* -EBADMSG once the input is found malformed */
};

static inline struct pb_reader pb_read__init(const void *data, size_t len)
{
	return (struct pb_reader){ .p = data, .end = (const uint8_t *)data + len };
}

/* Whether any input is left (and no error was found). */
static inline int pb_read__more(const struct pb_reader *r)
{
	return !r->err && r->p < r->end;
}

/* A bare varint (an element of a packed field): 0 with *@v, or -EBADMSG. */
int pb_read__varint(struct pb_reader *r, uint64_t *v);

/*
 * The next field: 1 with its number in *@field and either its value in *@v (a varint;
 * *@sub empty) or its bytes in *@sub (length-delimited; *@v their length). Fixed-size
 * fields are skipped. 0 at the end of the input or after an error (r->err).
 */
int pb_read__next(struct pb_reader *r, uint32_t *field, uint64_t *v, struct pb_reader *sub);

#endif
