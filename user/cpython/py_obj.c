// SPDX-License-Identifier: GPL-2.0-only
/* str and bytes readers; see py_obj.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/py_obj.h"

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = 0xc0 | (cp >> 6);
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = 0xe0 | (cp >> 12);
		out[1] = 0x80 | ((cp >> 6) & 0x3f);
		out[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	out[0] = 0xf0 | (cp >> 18);
	out[1] = 0x80 | ((cp >> 12) & 0x3f);
	out[2] = 0x80 | ((cp >> 6) & 0x3f);
	out[3] = 0x80 | (cp & 0x3f);
	return 4;
}

int py_obj__str(struct mem_source *m, const struct py_offsets *o, uint64_t addr, char *out,
		size_t cap, size_t *len)
{
	uint8_t raw[PYSTR_MAX_CHARS * 4];
	uint32_t state, kind;
	int64_t nchars;
	uint64_t data;
	size_t n = 0;
	int err;

	if (!addr || cap < 5)
		return -EINVAL;
	err = mem__read(m, addr + o->unicode_state, &state, sizeof(state));
	if (!err)
		err = mem__read(m, addr + o->unicode_length, &nchars, sizeof(nchars));
	if (err)
		return err;
	kind = (state >> o->unicode_kind_shift) & 7;
	if (!(state & (1u << o->unicode_compact_bit)) || (kind != 1 && kind != 2 && kind != 4) ||
	    nchars < 0)
		return -EINVAL;
	if (nchars > PYSTR_MAX_CHARS)
		nchars = PYSTR_MAX_CHARS;
	data = addr + ((state & (1u << o->unicode_ascii_bit)) ? o->unicode_ascii_data
							     : o->unicode_compact_data);
	err = mem__read(m, data, raw, nchars * kind);
	if (err)
		return err;
	for (int64_t i = 0; i < nchars && n + 5 <= cap; i++) {
		uint32_t cp;

		if (kind == 1)
			cp = raw[i];
		else if (kind == 2)
			cp = raw[2 * i] | raw[2 * i + 1] << 8;
		else
			memcpy(&cp, raw + 4 * i, 4);
		if (cp > 0x10ffff)
			cp = 0xfffd;
		n += put_utf8(out + n, cp);
	}
	out[n] = '\0';
	*len = n;
	return 0;
}

int py_obj__str_hash(struct mem_source *m, const struct py_offsets *o, uint64_t addr,
		uint64_t *hash)
{
	/* Py_hash_t hash follows Py_ssize_t length in PyASCIIObject in every version. */
	return mem__read_u64(m, addr + o->unicode_length + 8, hash);
}

int py_obj__bytes(struct mem_source *m, const struct py_offsets *o, uint64_t addr,
		  uint8_t **out, size_t *len)
{
	return py_obj__bytes_upto(m, o, addr, PYBYTES_MAX, out, len);
}

int py_obj__bytes_upto(struct mem_source *m, const struct py_offsets *o, uint64_t addr,
		       size_t max, uint8_t **out, size_t *len)
{
	int64_t size;
	uint8_t *buf;
	int err;

	err = mem__read(m, addr + o->bytes_size, &size, sizeof(size));
	if (err)
		return err;
	if (size < 0 || size > PYBYTES_MAX)
		return -EINVAL;
	if ((uint64_t)size > max)
		size = (int64_t)max;
	buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	err = mem__read(m, addr + o->bytes_sval, buf, size);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*len = size;
	return 0;
}
