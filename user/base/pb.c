// SPDX-License-Identifier: GPL-2.0-only
/* Protocol-buffers encoding; see pb.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/pb.h"
#include "base/vec.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

void pb__free(struct pb *b)
{
	free(b->data);
	*b = (struct pb){ 0 };
}

static int reserve(struct pb *b, size_t more)
{
	if (!b->err)
		b->err = vec__reserve((void **)&b->data, &b->cap, b->len + more, 1, 4096);
	return b->err;
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

void pb__varint(struct pb *b, uint64_t v)
{
	if (!reserve(b, 10))
		b->len += put_varint(b->data + b->len, v);
}

void pb__uint(struct pb *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb__varint(b, (uint64_t)field << 3 | WIRE_VARINT);
	pb__varint(b, v);
}

void pb__bytes(struct pb *b, uint32_t field, const void *data, size_t len)
{
	pb__varint(b, (uint64_t)field << 3 | WIRE_LEN);
	pb__varint(b, len);
	if (!reserve(b, len)) {
		memcpy(b->data + b->len, data, len);
		b->len += len;
	}
}

size_t pb__open(const struct pb *b)
{
	return b->len;
}

void pb__close(struct pb *b, uint32_t field, size_t mark)
{
	uint8_t head[20];
	size_t n, body;

	if (b->err)
		return;
	body = b->len - mark;
	n = put_varint(head, (uint64_t)field << 3 | WIRE_LEN);
	n += put_varint(head + n, body);
	if (reserve(b, n))
		return;
	/* The length is known only now; messages are small, so moving the body is
	 * cheaper than encoding everything twice to size it first. */
	memmove(b->data + mark + n, b->data + mark, body);
	memcpy(b->data + mark, head, n);
	b->len += n;
}
