/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fields of a foreign struct, taken out of a local copy of it. The offsets come from
 * the target (its _Py_DebugOffsets) and the copy's length from how much we read, so a
 * field is returned only when it lies wholly inside the bytes held; otherwise the
 * caller gets -EINVAL and nothing else is read. An offset from the target is data,
 * never a promise that the field is where it says.
 */
#ifndef PBP_STRUCTBUF_H
#define PBP_STRUCTBUF_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct structbuf {
	const uint8_t *bytes;
	size_t len;		/* bytes held at @bytes */
};

static inline struct structbuf structbuf__of(const void *bytes, size_t len)
{
	return (struct structbuf){ .bytes = bytes, .len = len };
}

/* Copies the @size bytes at @off into @dst; -EINVAL if any of them is not held. */
static inline int structbuf__read(const struct structbuf *b, uint64_t off, void *dst,
				  size_t size)
{
	if (off > b->len || size > b->len - off)
		return -EINVAL;
	memcpy(dst, b->bytes + off, size);
	return 0;
}

static inline int structbuf__u8(const struct structbuf *b, uint64_t off, uint8_t *v)
{
	return structbuf__read(b, off, v, sizeof(*v));
}

static inline int structbuf__u32(const struct structbuf *b, uint64_t off, uint32_t *v)
{
	return structbuf__read(b, off, v, sizeof(*v));
}

static inline int structbuf__u64(const struct structbuf *b, uint64_t off, uint64_t *v)
{
	return structbuf__read(b, off, v, sizeof(*v));
}

#endif
