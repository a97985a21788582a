// SPDX-License-Identifier: GPL-2.0-only
/* Bounded protocol-buffers reading; see pb_read.h. */
#include <errno.h>

#include "base/pb_read.h"

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

static int fail(struct pb_reader *r)
{
	r->err = -EBADMSG;
	return r->err;
}

int pb_read__varint(struct pb_reader *r, uint64_t *v)
{
	uint64_t x = 0;

	if (r->err)
		return r->err;
	for (unsigned int shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (r->p >= r->end)
			return fail(r);
		b = *r->p++;
		/* The tenth byte may carry only the top bit of 64. */
		if (shift == 63 && b > 1)
			return fail(r);
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return fail(r);
}

static int skip(struct pb_reader *r, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return fail(r);
	r->p += n;
	return 0;
}

int pb_read__next(struct pb_reader *r, uint32_t *field, uint64_t *v, struct pb_reader *sub)
{
	uint64_t key;

	for (;;) {
		if (!pb_read__more(r) || pb_read__varint(r, &key))
			return 0;
		if (key >> 3 == 0 || key >> 3 > UINT32_MAX) {
			fail(r);
			return 0;
		}
		*field = (uint32_t)(key >> 3);
		*sub = (struct pb_reader){ .p = r->p, .end = r->p };
		switch (key & 7) {
		case WIRE_VARINT:
			return !pb_read__varint(r, v);
		case WIRE_LEN:
			if (pb_read__varint(r, v) || skip(r, *v > SIZE_MAX ? SIZE_MAX : (size_t)*v))
				return 0;
			*sub = (struct pb_reader){ .p = r->p - *v, .end = r->p };
			return 1;
		case WIRE_FIXED64:
			if (skip(r, 8))
				return 0;
			continue;
		case WIRE_FIXED32:
			if (skip(r, 4))
				return 0;
			continue;
		default:
			fail(r);
			return 0;
		}
	}
}
