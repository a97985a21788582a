/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target for py_linetable__line(): the table it parses is copied out of
 * another process, so any byte string must get 0, -ENOENT or -EINVAL without an
 * overread or undefined behaviour. The first four bytes choose the instruction, the
 * next four co_firstlineno (extremes included, to reach the overflow checks); the
 * rest is the table, copied to an exact-size allocation so ASan sees overreads.
 *
 * Build: clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -I user \
 *	tests/fuzz/fuzz_linetable.c user/cpython/py_linetable.c -o build/fuzz/fuzz_linetable
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/py_linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t instr, first;
	int line, ret, prev = 0;
	uint8_t *tab;
	size_t len;

	if (size < 8)
		return 0;
	memcpy(&instr, data, 4);
	memcpy(&first, data + 4, 4);
	len = size - 8;
	tab = malloc(len ? len : 1);
	if (!tab)
		return 0;
	memcpy(tab, data + 8, len);

	ret = py_linetable__line(tab, len, (int)first, instr, &line);
	if (ret != 0 && ret != -ENOENT && ret != -EINVAL)
		abort();

	/*
	 * Small instructions too, since a random 32-bit one is nearly always past the
	 * end. Entries before an answered one decoded fine, so once a lookup fails
	 * every later one must fail as well.
	 */
	for (instr = 0; instr < 64; instr++) {
		ret = py_linetable__line(tab, len, (int)first, instr, &line);
		if (ret != 0 && ret != -ENOENT && ret != -EINVAL)
			abort();
		if (prev && !ret)
			abort();
		if (ret)
			prev = ret;
	}
	free(tab);
	return 0;
}
