/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target for native_maps__parse(): /proc/PID/maps is text the target shapes
 * (file names are its to choose), so any byte string must parse without an overread,
 * keep only well-formed executable file mappings, and leave native_maps__find()
 * answering within them. The input is copied to an exact-size allocation so that ASan
 * sees a read one byte past it.
 */
#include <stdlib.h>
#include <string.h>

#include "native/native_maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct native_maps *m = calloc(1, sizeof(*m));
	char *text = malloc(size ? size : 1);

	if (!m || !text)
		abort();
	memcpy(text, data, size);
	if (native_maps__parse(m, text, size))
		abort();
	for (size_t i = 0; i < m->n; i++) {
		const struct native_map *e = &m->maps[i], *f;

		if (e->end <= e->start || e->path[0] != '/' || !e->ino)
			abort();
		f = native_maps__find(m, e->start);
		if (!f || e->start < f->start || e->start >= f->end)
			abort();
	}
	native_maps__free(m);
	free(text);
	return 0;
}
