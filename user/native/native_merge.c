// SPDX-License-Identifier: GPL-2.0-only
/*
 * Native and Python frames in one stack.
 *
 * Each activation of CPython's eval loop is one native frame (an unnamed
 * python3.X+0x... in Debian's stripped, LTO-split builds, so names cannot find it) and
 * runs a run of Python frames. The decoder knows an address on the C stack inside
 * each activation's frame (its entry frame, or on 3.11 its _PyCFrame), and the native
 * walk knows each frame's stack area, [sp, the next frame's sp): the frame whose area
 * holds the address is the activation. Matching by address needs no symbols, works
 * for every build, and cannot pair a run with the wrong activation without noticing:
 * the activations must come out in the order of the runs, each in a frame of its own,
 * inside the walk, or the stack is reported UNMATCHED rather than merged wrongly.
 *
 * The work is two passes over the input: one decides how many runs match and the
 * result, the other writes the items, finding each activation again by a forward scan
 * (so the whole is linear in frames + runs, and nothing is stored between passes).
 */
#include <errno.h>

#include "native/native_merge.h"

enum place {
	PLACE_FOUND,   /* in a frame of the walk */
	PLACE_BEYOND,  /* above the last frame's sp of a walk that ended early */
	PLACE_NOWHERE, /* below the walk or a frame already passed: inconsistent */
};

struct emit {
	struct native_merge_item *out;
	uint32_t n;
};

static const char *const result_names[] = {
	[NATIVE_MERGE_MATCHED] = "matched",
	[NATIVE_MERGE_CUT] = "cut",
	[NATIVE_MERGE_UNMATCHED] = "unmatched",
};

const char *native_merge__result_name(enum native_merge_result r)
{
	return (unsigned int)r <= NATIVE_MERGE_UNMATCHED ? result_names[r] : "?";
}

/*
 * The frame at or after @from whose area holds @c. Areas rise with the frames (checked
 * beforehand), so an address below frame @from's sp is below the walk or in a frame
 * an inner activation already took. The last frame's area has no known top unless the
 * walk reached the outermost frame.
 */
static enum place find_frame(const struct native_merge_in *in, uint64_t c, uint32_t from,
			     uint32_t *f)
{
	for (uint32_t i = from; i < in->nframes; i++) {
		if (c < in->frames[i].sp)
			return PLACE_NOWHERE;
		if (i + 1 < in->nframes ? c < in->frames[i + 1].sp : in->complete) {
			*f = i;
			return PLACE_FOUND;
		}
	}
	return from < in->nframes ? PLACE_BEYOND : PLACE_NOWHERE;
}

/* Native stack pointers that rise strictly, as a real walk's do (a callee's frame
 * holds at least its return address): anything else is not a stack to match. */
static int areas_rise(const struct native_merge_in *in)
{
	for (uint32_t i = 0; i < in->nframes; i++)
		if (!in->frames[i].sp || (i && in->frames[i].sp <= in->frames[i - 1].sp))
			return 0;
	return 1;
}

/* The runs from @k on, whose activations the walk did not reach, must still lie
 * above it and in order where their place is known. */
static int tail_consistent(const struct native_merge_in *in, uint32_t k)
{
	uint64_t last = in->nframes ? in->frames[in->nframes - 1].sp : 0;

	for (; k < in->nruns; k++) {
		uint64_t c = in->runs[k].c_addr;

		if (!c)
			continue;
		if (c < last)
			return 0;
		last = c + 1;
	}
	return 1;
}

/* How many runs, innermost first, are placed in the walk (*@matched), and so the
 * result. */
static enum native_merge_result classify(const struct native_merge_in *in, uint32_t *matched)
{
	uint32_t from = 0, f;

	*matched = 0;
	if (!in->nframes)
		return tail_consistent(in, 0) ? NATIVE_MERGE_CUT : NATIVE_MERGE_UNMATCHED;
	if (!areas_rise(in))
		return NATIVE_MERGE_UNMATCHED;
	for (uint32_t k = 0; k < in->nruns; k++) {
		enum place p = PLACE_BEYOND;

		if (in->runs[k].c_addr)
			p = find_frame(in, in->runs[k].c_addr, from, &f);
		if (p == PLACE_NOWHERE)
			return NATIVE_MERGE_UNMATCHED;
		if (p == PLACE_BEYOND)
			return tail_consistent(in, k) ? NATIVE_MERGE_CUT : NATIVE_MERGE_UNMATCHED;
		from = f + 1;
		(*matched)++;
	}
	return NATIVE_MERGE_MATCHED;
}

static void put(struct emit *e, enum native_merge_kind kind, uint32_t index)
{
	e->out[e->n].kind = kind;
	e->out[e->n].index = index;
	e->n++;
}

static void put_run(struct emit *e, const struct py_run *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		put(e, NATIVE_MERGE_PYTHON, r->first + i);
}

static void put_natives(struct emit *e, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++)
		put(e, NATIVE_MERGE_NATIVE, i);
}

/* Frames (@from, @to) between two activations, or below the last matched one when
 * @to is the end: kept unless they are in an activation's own object. */
static void put_between(struct emit *e, const struct native_merge_in *in, uint32_t from,
			uint32_t to, uint32_t interp_a, uint32_t interp_b)
{
	for (uint32_t i = from; i < to; i++) {
		uint32_t mod = in->frames[i].module;

		if (!mod || (mod != interp_a && mod != interp_b))
			put(e, NATIVE_MERGE_NATIVE, i);
	}
}

static void emit_default(struct emit *e, const struct native_merge_in *in, uint32_t matched)
{
	uint32_t from = 0, prev = 0, act = 0;

	for (uint32_t k = 0; k < matched; k++) {
		find_frame(in, in->runs[k].c_addr, from, &act);
		if (!k)
			put_natives(e, 0, act);
		else
			put_between(e, in, prev + 1, act, in->frames[prev].module,
				    in->frames[act].module);
		put_run(e, &in->runs[k]);
		prev = act;
		from = act + 1;
	}
	if (!matched) {
		put_natives(e, 0, in->nframes);
	} else if (matched < in->nruns) {
		/* The next activation is past the walk: what lies below the last one is
		 * between two activations too. */
		put_between(e, in, prev + 1, in->nframes, in->frames[prev].module,
			    in->frames[prev].module);
	}
	for (uint32_t k = matched; k < in->nruns; k++)
		put_run(e, &in->runs[k]);
}

static void emit_all(struct emit *e, const struct native_merge_in *in, uint32_t matched)
{
	uint32_t from = 0, act = 0;

	for (uint32_t k = 0; k < matched; k++) {
		find_frame(in, in->runs[k].c_addr, from, &act);
		put_natives(e, from, act);
		put_run(e, &in->runs[k]);
		put(e, NATIVE_MERGE_NATIVE, act);
		from = act + 1;
	}
	put_natives(e, from, in->nframes);
	for (uint32_t k = matched; k < in->nruns; k++)
		put_run(e, &in->runs[k]);
}

/* The items @in can give at most; -EINVAL if a run's frames would pass 2^32. */
static int count_items(const struct native_merge_in *in, uint64_t *natives, uint64_t *python)
{
	*natives = in->nframes;
	*python = 0;
	for (uint32_t k = 0; k < in->nruns; k++) {
		if ((uint64_t)in->runs[k].first + in->runs[k].n > UINT32_MAX)
			return -EINVAL;
		*python += in->runs[k].n;
	}
	return 0;
}

uint32_t native_merge__placed(const struct native_merge_in *in)
{
	uint32_t matched;

	if ((in->nframes && !in->frames) || (in->nruns && !in->runs))
		return 0;
	classify(in, &matched);
	return matched;
}

int native_merge__interleave(const struct native_merge_in *in, struct native_merge_item *out,
			     uint32_t cap, uint32_t *nout, enum native_merge_result *result)
{
	struct emit e = { .out = out };
	uint64_t natives, python;
	uint32_t matched = 0;
	int err;

	*nout = 0;
	*result = NATIVE_MERGE_UNMATCHED;
	if ((in->nframes && !in->frames) || (in->nruns && !in->runs) || (cap && !out))
		return -EINVAL;
	err = count_items(in, &natives, &python);
	if (err)
		return err;
	if (natives + python > cap)
		return -ENOSPC;
	if (!python) {
		/* Nothing to place: the native stack as it is. */
		*result = NATIVE_MERGE_MATCHED;
		put_natives(&e, 0, in->nframes);
		*nout = e.n;
		return 0;
	}
	*result = classify(in, &matched);
	if (*result == NATIVE_MERGE_UNMATCHED) {
		for (uint32_t k = 0; k < in->nruns; k++)
			put_run(&e, &in->runs[k]);
	} else if (in->all) {
		emit_all(&e, in, matched);
	} else {
		emit_default(&e, in, matched);
	}
	*nout = e.n;
	return 0;
}
