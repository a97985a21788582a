// SPDX-License-Identifier: GPL-2.0-only
/* A Python frame as the options show it; see session_frame.h. */
#include "session/session_frame.h"

struct agg_frame session_frame__python(const struct session_opts *o,
				       const struct decoded_frame *f)
{
	int32_t line = o->function_lines ? f->first_line : f->line;

	return (struct agg_frame){
		.kind = AGG_PYTHON, .name = f->qualname, .file = f->filename,
		.line = o->nolineno ? -1 : line,
	};
}
