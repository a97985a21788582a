/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target for native_ehhdr__find(): .eh_frame_hdr comes from a file the
 * target chose, so any bytes must give 0, -ENOENT or -EINVAL without a read past them,
 * and a start found is never above the address asked for. The first 16 bytes are the
 * header's vaddr and the address; the rest, copied to an exact-size allocation so
 * that ASan sees an overread, is the header.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "native/native_ehhdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t hdr_vaddr, vaddr, start = 0;
	uint8_t *hdr;
	int ret;

	if (size < 16)
		return 0;
	memcpy(&hdr_vaddr, data, 8);
	memcpy(&vaddr, data + 8, 8);
	hdr = malloc(size - 16 ? size - 16 : 1);
	if (!hdr)
		abort();
	memcpy(hdr, data + 16, size - 16);
	ret = native_ehhdr__find(hdr, size - 16, hdr_vaddr, vaddr, &start);
	if (ret != 0 && ret != -ENOENT && ret != -EINVAL)
		abort();
	free(hdr);
	return 0;
}
