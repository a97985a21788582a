// SPDX-License-Identifier: GPL-2.0-only
/* Names of enum decode_gap; see decode_gap.h. */
#include "decode/decode_gap.h"

static const struct {
	const char *key, *text;
} gaps[GAP_MAX] = {
	[GAP_NONE] = { "complete", "" },
	[GAP_UNREADABLE] = { "unreadable_frame", "a frame could not be read" },
	[GAP_BAD_FRAME] = { "invalid_frame", "a frame is not valid" },
	[GAP_BAD_CODE] = { "invalid_code", "a frame's code object is not valid" },
	[GAP_STALE_CODE] = { "code_freed_before_decode",
			     "a code object was freed while being read" },
	[GAP_TOO_DEEP] = { "too_deep", "the stack is deeper than the frames followed" },
	[GAP_BAD_RECORD] = { "bad_record", "the thread state is malformed" },
	[GAP_NO_BOTTOM] = { "chain_ended_early",
			    "the frame chain ends before the thread's first frame" },
	[GAP_TORN] = { "torn_live_read", "the stack kept changing while it was read" },
	[GAP_CACHE_LOST] = { "frame_cache_entry_gone",
			     "the cached frames below the anchor were gone" },
	[GAP_NOT_COPIED] = { "stack_not_copied",
			     "the stack could not be copied and had moved on" },
	[GAP_MOVING] = { "stack_between_chunks",
			 "the thread was between two stack chunks" },
	[GAP_WALK_CUT] = { "frames_outside_chunks_cut",
			   "more frames outside the stack chunks than a sample copies" },
	[GAP_CODES_CUT] = { "code_objects_not_copied",
			    "more new code objects than a sample copies" },
};

/* A gap added to the enum and not to the table is "unknown", never a NULL printed. */
const char *decode_gap__key(enum decode_gap g)
{
	return (unsigned)g < GAP_MAX && gaps[g].key ? gaps[g].key : "unknown";
}

const char *decode_gap__text(enum decode_gap g)
{
	return (unsigned)g < GAP_MAX && gaps[g].text ? gaps[g].text : "unknown";
}
