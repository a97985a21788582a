/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target for native_worker_answer__walk(): the parsing worker's answer to a
 * walk is as hostile as the files it parsed (a file may have taken the worker over),
 * so any byte string must be refused or give at most the frames asked for, each with
 * NUL-terminated strings inside the arena and within their caps. The answer is copied
 * to an exact-size allocation so that ASan sees a read one byte past it. The first
 * byte sets how many frames are asked for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "native/native_worker_answer.h"
#include "native/native_worker_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void within(const struct native_worker_arena *a, const char *s, size_t cap)
{
	if (!s)
		return;
	if (s < a->strs || s >= a->strs + a->cap || strnlen(s, cap + 1) > cap)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct native_worker_name names[NATIVE_MAX_FRAMES];
	static struct native_stack out;
	struct native_worker_arena arena = { 0 };
	unsigned int max;
	uint8_t *ans;
	int err;

	if (!size)
		return 0;
	max = data[0] % (NATIVE_MAX_FRAMES + 1);
	ans = malloc(size - 1 ? size - 1 : 1);
	if (!ans)
		abort();
	memcpy(ans, data + 1, size - 1);
	err = native_worker_answer__walk(ans, size - 1, max, &arena, &out, names);
	if (err && (err != -EPROTO || out.n))
		abort();
	if (out.n > max || out.guessed_from > out.n || out.fp_first > out.n)
		abort();
	for (uint32_t i = 0; i < out.n; i++) {
		const struct native_worker_name *nm = &names[i];

		if (strcmp(nm->sym.module, "[unknown]"))
			within(&arena, nm->sym.module, NW_MODULE_MAX);
		within(&arena, nm->sym.function, NW_FUNCTION_MAX);
		within(&arena, nm->sym.source, NW_SOURCE_MAX);
		within(&arena, nm->path, NW_PATH_MAX);
		if (nm->build_id_len > NATIVE_BUILD_ID_MAX)
			abort();
	}
	free(arena.strs);
	free(ans);
	return 0;
}
