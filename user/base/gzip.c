// SPDX-License-Identifier: GPL-2.0-only
/* gzip with zlib; see gzip.h. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <zlib.h>

#include "base/fd.h"
#include "base/gzip.h"
#include "base/vec.h"

int gzip__write(FILE *f, const struct pb *parts, size_t nparts)
{
	unsigned char out[16384];
	gz_header hdr = { .os = 255 };	/* "unknown": not the build host's */
	z_stream zs = { 0 };
	int err = 0, zerr;

	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	if (deflateSetHeader(&zs, &hdr) != Z_OK) {
		err = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < nparts; i++) {
		int last = i + 1 == nparts;

		zs.next_in = parts[i].data;
		zs.avail_in = (uInt)parts[i].len;
		do {
			zs.next_out = out;
			zs.avail_out = sizeof(out);
			zerr = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
			if (zerr == Z_STREAM_ERROR) {
				err = -EINVAL;
				goto out;
			}
			if (fwrite(out, 1, sizeof(out) - zs.avail_out, f) !=
			    sizeof(out) - zs.avail_out) {
				err = -EIO;
				goto out;
			}
		} while (zs.avail_out == 0 || (last && zerr != Z_STREAM_END));
	}
out:
	deflateEnd(&zs);
	return err;
}

int gzip__read(int fd, size_t max, uint8_t **out, size_t *len)
{
	unsigned char in[65536];
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	z_stream zs = { 0 };
	int err = 0, zerr = Z_OK, begun = 0, pending = 0;
	ssize_t got;

	/* 15 + 32: a gzip or zlib header, told apart by zlib; only gzip is written. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return -ENOMEM;
	for (;;) {
		/* More input only once zlib has written out all it holds. */
		if (!zs.avail_in && !pending) {
			got = fd__read(fd, in, sizeof(in));
			if (got < 0) {
				err = (int)got;
				goto out;
			}
			if (!got)
				break;
			zs.next_in = in;
			zs.avail_in = (uInt)got;
		}
		/* Another member after the end of one (cat a.gz b.gz), as gunzip reads it. */
		if (zerr == Z_STREAM_END && inflateReset(&zs) != Z_OK) {
			err = -ENOMEM;
			goto out;
		}
		if (n == cap) {
			if (cap >= max) {
				err = -EFBIG;
				goto out;
			}
			err = vec__reserve((void **)&buf, &cap, cap + 1, 1, 1 << 16);
			if (err)
				goto out;
			if (cap > max)
				cap = max;
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(cap - n < (1u << 30) ? cap - n : 1u << 30);
		zerr = inflate(&zs, Z_NO_FLUSH);
		begun = 1;
		if (zerr != Z_OK && zerr != Z_STREAM_END && zerr != Z_BUF_ERROR) {
			err = zerr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
			goto out;
		}
		n = (size_t)(zs.next_out - buf);
		pending = zerr != Z_STREAM_END && !zs.avail_out;
	}
	/* The last member must have ended: a cut file is not a shorter profile. */
	if (!begun || zerr != Z_STREAM_END)
		err = -EBADMSG;
out:
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*len = n;
	return 0;
}
