// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where a session's decoded stacks go: each becomes one aggregated stack, under the
 * process and thread frames the options ask for, and, for the formats that place
 * samples in time, one entry of the timeline.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "aggregate.h"
#include "decoder.h"
#include "log.h"
#include "session_priv.h"
#include "strtab.h"
#include "thread_table.h"
#include "vec.h"

/* The timeline keeps its first samples up to this size (16 bytes each). */
#define TIMELINE_MAX_BYTES (64u << 20)

static int intern_fmt(struct session *s, uint32_t *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int intern_fmt(struct session *s, uint32_t *id, const char *fmt, ...)
{
	char buf[192];
	va_list ap;
	int64_t r;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r = strtab__intern(s->strs, buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	if (r < 0)
		return (int)r;
	*id = (uint32_t)r;
	return 0;
}

static int32_t frame_line(const struct session_opts *o, const struct decoded_frame *f)
{
	if (o->nolineno)
		return -1;
	return o->function_lines ? f->first_line : f->line;
}

static int add_to_timeline(struct session *s, uint64_t ts_ns, uint32_t index)
{
	if (s->ntimeline == TIMELINE_MAX_BYTES / sizeof(*s->timeline)) {
		if (!s->timeline_full)
			pr_warn("the timeline holds its first %zu samples (%u MiB): later ones "
				"count in the profile but are not placed in time\n", s->ntimeline,
				TIMELINE_MAX_BYTES >> 20);
		s->timeline_full = 1;
		return 0;
	}
	if (vec__reserve((void **)&s->timeline, &s->timeline_cap, s->ntimeline + 1,
			 sizeof(*s->timeline), 4096))
		return -ENOMEM;
	/* A record decoded late may predate the start by a tick: clamp, keep order. */
	s->timeline[s->ntimeline++] = (struct profile_sample){
		.t_ns = ts_ns > s->profile_ns ? ts_ns - s->profile_ns : 0,
		.stack = index,
	};
	return 0;
}

/* One decoded stack in, one aggregated stack out, unless --gil/--idle leave it out. */
static int add_stack(struct target *t, const struct stack *st)
{
	struct session *s = t->session;
	uint32_t n = 0, index;
	int err;

	if ((s->opts.gil && !(st->flags & PBP_TS_GIL)) ||
	    (!s->opts.idle && !(st->flags & PBP_TS_ON_CPU))) {
		s->filtered++;
		return 0;
	}
	if (s->opts.subprocesses || s->opts.system_wide)
		s->frames[n++] = (struct agg_frame){ .kind = AGG_PROCESS, .name = t->root_name };
	if (s->opts.threads) {
		s->frames[n].kind = AGG_THREAD;
		err = intern_fmt(s, &s->frames[n].name, "thread %u", st->tid);
		if (err)
			goto fail;
		n++;
	}
	if (st->gap != GAP_NONE)
		s->frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = s->incomplete_name };
	else if (!st->depth)	/* only entry frames: the interpreter runs no Python code */
		s->frames[n++] = (struct agg_frame){ .kind = AGG_MARKER,
						     .name = s->no_python_name };
	for (uint32_t i = st->depth; i-- > 0;)
		s->frames[n++] = (struct agg_frame){
			.kind = AGG_PYTHON,
			.name = st->frames[i].qualname,
			.file = st->frames[i].filename,
			.line = frame_line(&s->opts, &st->frames[i]),
		};
	err = aggregate__add(s->agg, st->pid, st->tid, s->frames, n, 1, &index);
	if (!err)
		err = thread_table__see(s->threads, s->strs, st->pid, st->tid);
	if (!err && s->opts.timeline)
		err = add_to_timeline(s, st->ts_ns, index);
	if (err)
		goto fail;
	s->aggregated++;
	s->incomplete += st->gap != GAP_NONE;
	return 0;
fail:
	s->fatal = err;
	return err;
}

/* Ring-buffer callback. */
int session_sink__on_sample(void *arg, const void *rec, size_t len)
{
	const struct pbp_sample *hdr = rec;
	struct session *s = arg;
	struct target *t;

	s->delivered++;
	s->bytes_copied += len > sizeof(*hdr) ? len - sizeof(*hdr) : 0;
	t = len >= sizeof(*hdr) ? session_targets__of(s, hdr->pid) : NULL;
	if (!t) {
		s->lost++;
		return 0;
	}
	if (decoder__decode(t->dec, rec, len, s->stack))
		return 0;
	return add_stack(t, s->stack);
}

/* Live sampler callback. */
int session_sink__on_live_stack(void *arg, struct stack *st)
{
	struct target *t = arg;

	t->session->delivered++;
	return add_stack(t, st);
}
