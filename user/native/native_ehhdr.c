// SPDX-License-Identifier: GPL-2.0-only
/*
 * The FDE start table of .eh_frame_hdr (see native_ehhdr.h), read from bytes of a
 * file someone else chose: every field is bounds-checked against @len, the entry
 * count against the bytes that hold entries, and an unsorted table only yields a
 * wrong start (checked by the caller), never a read out of bounds.
 *
 * Layout (LSB, "Exception Frame Header"): u8 version (1), u8 eh_frame_ptr encoding,
 * u8 fde_count encoding, u8 table encoding, the encoded eh_frame_ptr, the encoded
 * fde_count, then fde_count pairs (initial location, FDE address) in the table
 * encoding, sorted by initial location.
 */
#include <errno.h>
#include <string.h>

#include "native/native_ehhdr.h"

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_datarel_sdata4 0x3b

/* Bytes an encoded pointer takes, by the encoding's format nibble; 0 if unsupported. */
static size_t enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: /* absptr (64-bit objects) */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		return 8;
	case 0x03: /* udata4 */
	case 0x0b: /* sdata4 */
		return 4;
	default:
		return 0;
	}
}

static uint64_t read_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i > 0; i--)
		v = v << 8 | p[i - 1];
	return v;
}

static int32_t entry_start(const uint8_t *table, size_t i)
{
	return (int32_t)(uint32_t)read_le(table + i * 8, 4);
}

int native_ehhdr__find(const uint8_t *hdr, size_t len, uint64_t hdr_vaddr, uint64_t vaddr,
		       uint64_t *start)
{
	size_t ptr_size, count_size, pos = 4, lo, hi, n;
	const uint8_t *table;
	uint64_t count;
	int64_t want;

	if (len < 4 || hdr[0] != 1 || hdr[2] == DW_EH_PE_omit || hdr[3] != DW_EH_PE_datarel_sdata4)
		return -EINVAL;
	ptr_size = hdr[1] == DW_EH_PE_omit ? 0 : enc_size(hdr[1]);
	count_size = enc_size(hdr[2]);
	if ((hdr[1] != DW_EH_PE_omit && !ptr_size) || !count_size || len - pos < ptr_size)
		return -EINVAL;
	pos += ptr_size;
	if (len - pos < count_size)
		return -EINVAL;
	count = read_le(hdr + pos, count_size);
	pos += count_size;
	n = (len - pos) / 8;
	if (count > n)
		return -EINVAL; /* claims more entries than its bytes hold */
	n = (size_t)count;
	table = hdr + pos;
	/* datarel: entries are relative to the header's own address. An address more
	 * than 2 GiB away cannot be in the table. */
	if (vaddr < hdr_vaddr ? hdr_vaddr - vaddr > (1ull << 31) : vaddr - hdr_vaddr > (1ull << 31))
		return -ENOENT;
	want = (int64_t)(vaddr - hdr_vaddr);
	if (!n || entry_start(table, 0) > want)
		return -ENOENT;
	/* The last entry whose start is <= want: table[lo] <= want < table[hi]. */
	lo = 0;
	hi = n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (entry_start(table, mid) <= want)
			lo = mid;
		else
			hi = mid;
	}
	*start = hdr_vaddr + (uint64_t)(int64_t)entry_start(table, lo);
	return 0;
}
