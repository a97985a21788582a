// SPDX-License-Identifier: GPL-2.0-only
#include "native/native_worker_answer.h"

#include <errno.h>
#include <string.h>

#include "native/native_worker_proto.h"
#include "base/vec.h"

struct reader {
	const uint8_t *ans;
	size_t len, off;
	char *strs;
	size_t used;
};

/* The next @n bytes, as a NUL-terminated string in the arena: the caller checked that
 * they are there and that the arena has room. */
static const char *take(struct reader *r, size_t n)
{
	char *s = r->strs + r->used;

	memcpy(s, r->ans + r->off, n);
	s[n] = '\0';
	r->off += n;
	r->used += n + 1;
	return s;
}

static int frame(struct reader *r, struct native_frame *fr, struct native_worker_name *nm)
{
	struct nw_frame f;

	if (r->len - r->off < sizeof(f))
		return -EPROTO;
	memcpy(&f, r->ans + r->off, sizeof(f));
	r->off += sizeof(f);
	if (f.module_len > NW_MODULE_MAX || f.function_len > NW_FUNCTION_MAX ||
	    f.source_len > NW_SOURCE_MAX || f.path_len > NW_PATH_MAX ||
	    f.build_id_len > NATIVE_BUILD_ID_MAX ||
	    r->len - r->off < (size_t)f.module_len + f.function_len + f.source_len + f.path_len)
		return -EPROTO;
	*fr = (struct native_frame){ .pc = f.pc, .lookup = f.lookup, .sp = f.sp };
	*nm = (struct native_worker_name){ .known = !!(f.flags & NW_FRAME_KNOWN),
					   .build_id_len = f.build_id_len };
	memcpy(nm->build_id, f.build_id, sizeof(nm->build_id));
	nm->sym = (struct native_symbol){ .offset = f.offset, .rel = f.rel,
					  .func_rel = f.func_rel };
	nm->sym.module = take(r, f.module_len);
	nm->sym.function = take(r, f.function_len);
	nm->sym.source = take(r, f.source_len);
	nm->path = take(r, f.path_len);
	if (!nm->sym.module[0])
		nm->sym.module = "[unknown]";
	if (!(f.flags & NW_FRAME_FUNCTION))
		nm->sym.function = NULL;
	if (f.flags & NW_FRAME_SOURCE) {
		nm->sym.line = f.line;
		nm->sym.func_line = f.func_line;
	} else {
		nm->sym.source = NULL;
	}
	if (!(f.flags & NW_FRAME_MAP))
		nm->path = NULL;
	return 0;
}

int native_worker_answer__walk(const uint8_t *ans, size_t len, unsigned int max_frames,
			       struct native_worker_arena *arena, struct native_stack *out,
			       struct native_worker_name *names)
{
	struct reader r = { .ans = ans, .len = len, .off = sizeof(struct nw_walk) };
	struct nw_walk head;
	int err = -EPROTO;

	native_unwind__clear_stack(out);
	if (len < sizeof(head))
		return -EPROTO;
	memcpy(&head, ans, sizeof(head));
	if (head.n > max_frames || head.n > NATIVE_MAX_FRAMES || head.end >= NATIVE_END_MAX ||
	    head.guessed_from > head.n || head.fp_first > head.n)
		return -EPROTO;
	/* Every string fits, with its NUL, in the answer's size plus one byte each. */
	if (vec__reserve((void **)&arena->strs, &arena->cap, len + 4 * (size_t)head.n + 1, 1,
			 64 << 10))
		return -ENOMEM;
	r.strs = arena->strs;
	for (uint32_t i = 0; i < head.n; i++) {
		err = frame(&r, &out->frames[i], &names[i]);
		if (err)
			goto fail;
	}
	if (r.off != len) {
		err = -EPROTO;
		goto fail;
	}
	out->n = head.n;
	out->end = (enum native_end)head.end;
	out->stack_used = head.stack_used;
	out->guessed_from = head.guessed_from;
	out->fp_first = head.fp_first;
	out->fp_dwarf_top = head.fp_dwarf_top;
	out->fp_resumed = head.fp_resumed;
	return 0;
fail:
	native_unwind__clear_stack(out);
	return err;
}
