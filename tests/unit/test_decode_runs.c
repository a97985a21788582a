/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The decoder's runs (user/decode/decode_runs.c): which eval-loop activation ran which
 * Python frames, and where on the C stack each activation is, for every layout:
 * 3.11 (is_entry and the _PyCFrame chain in the sample's copy of the native stack),
 * 3.12 (built-in table), 3.13-3.15 (their real _Py_DebugOffsets, debug_tables.h),
 * with 3.15's base frame, which is no activation. A fake target holds the chain,
 * written from a spec; the real decoder decodes it, and the runs must be the ones the
 * spec implies, cover the decoded frames exactly, and degrade to c_addr 0 (never a
 * wrong address) when the chain is cut, a copy is short or a cframe lies.
 *
 * A spec lists the chain innermost first: 'f' a Python frame, '|' the end of an
 * activation (3.12+: its entry frame on the C stack; 3.11: the preceding frame's
 * is_entry and a _PyCFrame on the C stack), 'B' 3.15's base frame (on the heap).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/decode_runs.h"
#include "decode/decoder.h"
#include "fake_frames.h"
#include "decode/frame_cache.h"
#include "base/strtab.h"

#define BASE		0x7f0000000000ull
#define MEM_SIZE	0x60000u
#define CODE		(BASE + 0x1000)
#define STRS		(BASE + 0x2000)
#define LINETABLE	(BASE + 0x2400)
#define TSTATE		(BASE + 0x3000)	/* room for 3.15's embedded base frame */
#define BASE_FRAME	(TSTATE + 0x800)
#define FRAMES		(BASE + 0x8000)	/* the data stack: 0x80 a frame */
#define CSTACK		(BASE + 0x30000) /* the native stack, inner activations lower */
#define CSTACK_LEN	0x30000u
#define MAX_MARKS	512

static uint8_t bytes[MEM_SIZE];

struct target {
	struct fake_mem mem;
	struct py_offsets o;
	const char *name;
	uint64_t top;			/* the innermost frame */
	uint64_t marks[MAX_MARKS];	/* each activation's C-stack address */
	uint32_t run_len[MAX_MARKS + 1];	/* Python frames per run, as the spec says */
	unsigned int nmarks;
	uint64_t cframe_first;		/* 3.11: tstate->cframe */
};

static struct py_offsets offsets_of(unsigned int minor)
{
	return fake_frames__offsets(minor);
}

static void put_frame(struct target *tg, uint64_t at, uint64_t code, uint64_t previous,
		      uint8_t owner, uint8_t is_entry)
{
	fake_frames__put(&tg->mem, &tg->o, at, code, previous, owner, is_entry);
}

/* One code object "f" of runs.py, which every Python frame runs. */
static void put_code(struct target *tg)
{
	fake_frames__code(&tg->mem, &tg->o, CODE, STRS, LINETABLE, "runs.py");
}

/* Where the @i-th element of the chain lives. */
static uint64_t element_at(const struct target *tg, const char *spec, size_t i,
			   unsigned int mark)
{
	if (spec[i] == 'B')
		return BASE_FRAME;
	if (spec[i] == '|' && tg->o.version_hex >= 0x030c0000)
		return CSTACK + 0x100 + (uint64_t)mark * 0x100;
	return FRAMES + i * 0x80;
}

/* 3.11: activation @k's _PyCFrame, on the C stack. */
static uint64_t cframe_at(unsigned int k)
{
	return CSTACK + 0x80 + (uint64_t)k * 0x100;
}

/* Lays out @spec under @o in a fresh target. */
static void build(struct target *tg, unsigned int minor, const char *spec)
{
	size_t len = strlen(spec);
	unsigned int mark = 0, k = 0;
	uint64_t run_top = 0;

	memset(bytes, 0, sizeof(bytes));
	memset(tg, 0, sizeof(*tg));
	tg->o = offsets_of(minor);
	tg->name = spec;
	fake_mem__init(&tg->mem, BASE, bytes, sizeof(bytes));
	put_code(tg);
	for (size_t i = 0; i < len; i++) {
		uint64_t at = element_at(tg, spec, i, mark), next = 0;
		const struct py_offsets *o = &tg->o;

		/* 3.11 has no entry frames: '|' only marks the frame before it. */
		if (spec[i] == '|' && o->version_hex < 0x030c0000)
			continue;
		for (size_t j = i + 1; j < len && !next; j++)
			if (spec[j] != '|' || o->version_hex >= 0x030c0000)
				next = element_at(tg, spec, j, mark + (spec[i] == '|'));
		if (!tg->top)
			tg->top = at;
		switch (spec[i]) {
		case 'f':
			if (!tg->run_len[mark]++)
				run_top = at;
			put_frame(tg, at, CODE, next, o->owner_thread,
				  o->version_hex < 0x030c0000 && spec[i + 1] == '|');
			if (o->version_hex < 0x030c0000 && spec[i + 1] == '|') {
				uint64_t cf = cframe_at(k);

				fake_mem__put_u64(&tg->mem, cf + o->cframe_current_frame, run_top);
				fake_mem__put_u64(&tg->mem, cf + o->cframe_previous,
						  cframe_at(k + 1));
				tg->marks[mark++] = cf;
				k++;
			}
			break;
		case '|':
			put_frame(tg, at, 0, next,
				  o->owner_cstack != 0xff ? o->owner_cstack : o->owner_interpreter,
				  0);
			tg->marks[mark++] = at;
			break;
		case 'B':
			put_frame(tg, at, 0, next, o->owner_interpreter, 0);
			break;
		}
	}
	tg->nmarks = mark;
	if (tg->o.version_hex < 0x030c0000) {
		/* The outermost cframe leads to the thread's root_cframe. */
		if (k)
			fake_mem__put_u64(&tg->mem, cframe_at(k - 1) + tg->o.cframe_previous,
					  TSTATE + tg->o.ts_root_cframe);
		tg->cframe_first = k ? cframe_at(0) : TSTATE + tg->o.ts_root_cframe;
		fake_mem__put_u64(&tg->mem, TSTATE + tg->o.ts_cframe, tg->cframe_first);
	}
}

struct decode_opts {
	int no_cstack;
	size_t cstack_len;	/* 0: the whole copy */
	struct frame_cache *fc;
};

static struct stack *decode(struct target *tg, struct strtab *strs,
			    const struct decode_opts *opt)
{
	struct py_interp in = { .off = tg->o };
	const struct decoder_cfg cfg = {
		.interp = &in, .live = &tg->mem.base, .strs = strs, .fcache = opt->fc,
	};
	struct thread_sample t = {
		.pid = 1, .tid = 1, .tstate = TSTATE, .current_frame = tg->top,
		.mem = &tg->mem.base,
	};
	struct stack *st = calloc(1, sizeof(*st));
	struct decoder *d;

	CHECK(st);
	if (!opt->no_cstack) {
		t.cstack = bytes + (CSTACK - BASE);
		t.cstack_addr = CSTACK;
		t.cstack_len = opt->cstack_len ? opt->cstack_len : CSTACK_LEN;
	}
	CHECK(decoder__new(&cfg, &d) == 0);
	CHECK(decoder__decode_thread(d, &t, st) == 0);
	decoder__free(d);
	return st;
}

/* The runs cover frames[0, depth), in order, innermost first. */
static void check_cover(const char *what, const struct stack *st)
{
	uint32_t next = 0;

	CHECK_MSG(st->nruns <= DECODE_MAX_RUNS, "%s: %u runs", what, st->nruns);
	for (uint32_t i = 0; i < st->nruns && i < DECODE_MAX_RUNS; i++) {
		CHECK_MSG(st->runs[i].first == next, "%s: run %u starts at %u, not %u", what, i,
			  st->runs[i].first, next);
		next = st->runs[i].first + st->runs[i].n;
	}
	CHECK_MSG(next == st->depth, "%s: runs cover %u of %u frames", what, next, st->depth);
}

/* The runs @spec implies: one per activation, with its address unless @known says
 * only the first @known are known; and one more, address unknown, for frames after
 * the last activation. */
static void expect_runs(const struct target *tg, const struct stack *st, unsigned int known,
			const char *what)
{
	unsigned int want = tg->nmarks + (tg->run_len[tg->nmarks] ? 1 : 0);

	check_cover(what, st);
	CHECK_MSG(st->nruns == want, "%s %s: %u runs, not %u", tg->name, what, st->nruns, want);
	for (unsigned int i = 0; i < st->nruns && i < want; i++) {
		uint64_t c = i < tg->nmarks && i < known ? tg->marks[i] : 0;

		CHECK_MSG(st->runs[i].n == tg->run_len[i], "%s %s: run %u has %u frames, not %u",
			  tg->name, what, i, st->runs[i].n, tg->run_len[i]);
		CHECK_MSG(st->runs[i].c_addr == c, "%s %s: run %u at 0x%llx, not 0x%llx", tg->name,
			  what, i, (unsigned long long)st->runs[i].c_addr, (unsigned long long)c);
	}
}

static unsigned int decode_and_expect(struct target *tg, struct strtab *strs,
				      const struct decode_opts *opt, unsigned int known,
				      const char *what)
{
	struct stack *st = decode(tg, strs, opt);
	unsigned int depth = st->depth;

	CHECK_MSG(st->gap == GAP_NONE, "%s %s: gap %d", tg->name, what, st->gap);
	expect_runs(tg, st, known, what);
	free(st);
	return depth;
}

/* Whole chains of every version: each activation's run and address. */
static void test_versions(struct strtab *strs)
{
	static const char *const specs[] = { "f|", "ff|f|ff|", "f|f|f|f|f|", "fff|" };
	const struct decode_opts opt = { 0 };

	for (unsigned int minor = 11; minor <= 15; minor++) {
		for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
			char spec[64];
			struct target tg;

			snprintf(spec, sizeof(spec), "%s%s", specs[i], minor == 15 ? "B" : "");
			build(&tg, minor, spec);
			decode_and_expect(&tg, strs, &opt, ~0u, "whole");
		}
	}
	printf("versions: 3.11-3.15, whole chains, runs and addresses as laid out\n");
}

/* 3.12+: an activation caught before its first frame or after its last (the chain's
 * current frame is its entry frame) has an empty run of its own. */
static void test_empty_run(struct strtab *strs)
{
	const struct decode_opts opt = { 0 };

	for (unsigned int minor = 12; minor <= 15; minor++) {
		struct target tg;

		build(&tg, minor, minor == 15 ? "|ff|f|B" : "|ff|f|");
		CHECK(tg.run_len[0] == 0);
		decode_and_expect(&tg, strs, &opt, ~0u, "empty innermost");
	}
	printf("empty runs: an activation entering or leaving keeps its place\n");
}

/* 3.15: frames straight on the base frame (none of an activation's own, which CPython
 * never leaves): their run has no address, the base frame on the heap is not one. */
static void test_base_frame(struct strtab *strs)
{
	const struct decode_opts opt = { 0 };
	struct target tg;

	build(&tg, 15, "ffB");
	decode_and_expect(&tg, strs, &opt, ~0u, "frames on the base frame");
	build(&tg, 15, "ff|ffB");
	decode_and_expect(&tg, strs, &opt, ~0u, "an activation, then frames on the base frame");
	printf("3.15: the base frame is no activation\n");
}

/* 3.11: the chain is read from the copy only; whatever cannot be read there, or
 * does not name its run, gives 0 for that run and every one after it. */
static void test_311_chain(struct strtab *strs)
{
	struct target tg;
	struct decode_opts opt = { 0 };
	struct stack *st;

	build(&tg, 11, "ff|f|ff|");
	opt.no_cstack = 1;
	decode_and_expect(&tg, strs, &opt, 0, "no copy of the native stack");

	/* A copy that holds the first cframe only. */
	opt.no_cstack = 0;
	opt.cstack_len = 0x100 + 0x20;
	decode_and_expect(&tg, strs, &opt, 1, "copy holds one cframe");
	opt.cstack_len = 0x80 + 8;	/* current_frame, not previous */
	decode_and_expect(&tg, strs, &opt, 0, "copy cut inside the first cframe");
	opt.cstack_len = 0;

	/* The second cframe names another frame: it and the rest are unknown. */
	fake_mem__put_u64(&tg.mem, cframe_at(1) + tg.o.cframe_current_frame, FRAMES + 8);
	decode_and_expect(&tg, strs, &opt, 1, "cframe names another frame");

	/* The chain reaches the root cframe too early. */
	build(&tg, 11, "ff|f|ff|");
	fake_mem__put_u64(&tg.mem, cframe_at(0) + tg.o.cframe_previous,
			  TSTATE + tg.o.ts_root_cframe);
	decode_and_expect(&tg, strs, &opt, 1, "root cframe too early");

	/* A cframe pointer into the live heap, outside the copy: never followed. */
	build(&tg, 11, "ff|f|ff|");
	fake_mem__put_u64(&tg.mem, cframe_at(0) + tg.o.cframe_previous, FRAMES + 0x800);
	fake_mem__put_u64(&tg.mem, FRAMES + 0x800 + tg.o.cframe_current_frame, FRAMES + 2 * 0x80);
	decode_and_expect(&tg, strs, &opt, 1, "cframe outside the copy");

	/* tstate->cframe itself outside the copy. */
	build(&tg, 11, "ff|f|ff|");
	fake_mem__put_u64(&tg.mem, TSTATE + tg.o.ts_cframe, FRAMES + 0x800);
	decode_and_expect(&tg, strs, &opt, 0, "tstate->cframe outside the copy");

	/* Frames after the last is_entry (a chain cut short of the root): their own run,
	 * address unknown. */
	build(&tg, 11, "ff|f");
	st = decode(&tg, strs, &opt);
	CHECK(st->nruns == 2 && st->runs[0].c_addr == cframe_at(0) && st->runs[1].c_addr == 0 &&
	      st->runs[1].n == 1);
	check_cover("after the last is_entry", st);
	free(st);
	printf("3.11: cframes read from the copy only, lost for good at the first doubt\n");
}

/* Cut chains: runs cover what was decoded; an activation whose end was not walked
 * has no address. */
static void test_incomplete(struct strtab *strs)
{
	const struct decode_opts opt = { 0 };

	for (unsigned int minor = 11; minor <= 15; minor++) {
		struct target tg;
		struct stack *st;
		/* The chain leaves the target's memory after the fourth Python frame, the
		 * sixth element of the spec. */
		build(&tg, minor, "ff|f|ff|");
		fake_mem__put_u64(&tg.mem, FRAMES + 5 * 0x80 + tg.o.fr_previous,
				  BASE + MEM_SIZE + 0x1000);
		st = decode(&tg, strs, &opt);
		CHECK_MSG(st->gap == GAP_UNREADABLE, "3.%u cut: gap %d", minor, st->gap);
		check_cover("cut", st);
		CHECK_MSG(st->depth == 4 && st->nruns == 3, "3.%u cut: depth %u, %u runs", minor,
			  st->depth, st->nruns);
		CHECK(st->runs[0].c_addr == tg.marks[0] && st->runs[1].c_addr == tg.marks[1]);
		CHECK(st->runs[2].n == 1 && st->runs[2].c_addr == 0);
		free(st);

		/* A code object that is not one: frames named up to it only. The run it
		 * cuts keeps its activation's address when the walk saw its end. */
		build(&tg, minor, "ff|f|ff|");
		fake_mem__put_u64(&tg.mem, FRAMES + 0x80 + tg.o.fr_code, STRS + 8);
		st = decode(&tg, strs, &opt);
		CHECK_MSG(st->gap == GAP_BAD_CODE || st->gap == GAP_UNREADABLE ||
				  st->gap == GAP_STALE_CODE,
			  "3.%u bad code: gap %d", minor, st->gap);
		check_cover("bad code", st);
		CHECK_MSG(st->depth == 1 && st->nruns == 1 && st->runs[0].c_addr == tg.marks[0],
			  "3.%u bad code: depth %u, %u runs", minor, st->depth, st->nruns);
		free(st);
	}
	printf("incomplete stacks: runs cover what was decoded, unknown ends have no address\n");
}

/* More activations than runs: the last run holds the rest, with no address. */
static void test_too_many(struct strtab *strs)
{
	const struct decode_opts opt = { 0 };
	size_t n = DECODE_MAX_RUNS + 40;
	char *spec = malloc(2 * n + 2);

	CHECK(spec);
	for (unsigned int minor = 11; minor <= 15; minor += 4) {
		for (int extra = 0; extra < 2; extra++) {
			size_t acts = extra ? n : DECODE_MAX_RUNS;
			struct target tg;
			struct stack *st;

			for (size_t i = 0; i < acts; i++)
				memcpy(spec + 2 * i, "f|", 2);
			strcpy(spec + 2 * acts, minor == 15 ? "B" : "");
			build(&tg, minor, spec);
			st = decode(&tg, strs, &opt);
			CHECK_MSG(st->gap == GAP_NONE, "3.%u x%zu: gap %d", minor, acts, st->gap);
			check_cover("too many", st);
			CHECK(st->nruns == DECODE_MAX_RUNS);
			CHECK(st->runs[DECODE_MAX_RUNS - 2].c_addr == tg.marks[DECODE_MAX_RUNS - 2]);
			if (extra)
				CHECK(st->runs[DECODE_MAX_RUNS - 1].n == n - DECODE_MAX_RUNS + 1 &&
				      st->runs[DECODE_MAX_RUNS - 1].c_addr == 0);
			else
				CHECK(st->runs[DECODE_MAX_RUNS - 1].n == 1 &&
				      st->runs[DECODE_MAX_RUNS - 1].c_addr ==
					      tg.marks[DECODE_MAX_RUNS - 1]);
			free(st);
		}
	}
	free(spec);
	printf("too many activations: %d runs, the last one without an address\n",
	       DECODE_MAX_RUNS);
}

/* Straight from raw frames: the runs cover the decoded frames even where the raw
 * chain shows fewer, and an activation with no frames after the last slot's adds
 * nothing to it. */
static void test_direct(void)
{
	struct py_offsets o = offsets_of(13);
	struct thread_sample t = { 0 };
	struct raw_frame raw[2 * DECODE_MAX_RUNS + 2];
	struct stack *st = calloc(1, sizeof(*st));
	uint32_t n = 0;

	CHECK(st);
	raw[n++] = (struct raw_frame){ .addr = FRAMES, .code = CODE, .owner = 0 };
	raw[n++] = (struct raw_frame){ .addr = CSTACK, .previous = 1, .owner = 3 };
	st->depth = 3;
	decode_runs__find(&o, &t, raw, n, st);
	check_cover("fewer raw frames", st);
	CHECK(st->nruns == 2 && st->runs[0].c_addr == CSTACK && st->runs[1].n == 2 &&
	      st->runs[1].c_addr == 0);

	n = 0;
	for (uint32_t i = 0; i < DECODE_MAX_RUNS; i++) {
		raw[n++] = (struct raw_frame){ .addr = FRAMES + i * 0x80, .code = CODE };
		raw[n++] = (struct raw_frame){ .addr = CSTACK + i * 0x100, .previous = 1,
					       .owner = 3 };
	}
	raw[n++] = (struct raw_frame){ .addr = CSTACK + 0x100000, .previous = 1, .owner = 3 };
	st->depth = DECODE_MAX_RUNS;
	decode_runs__find(&o, &t, raw, n, st);
	check_cover("empty activation after the last slot", st);
	CHECK(st->nruns == DECODE_MAX_RUNS &&
	      st->runs[DECODE_MAX_RUNS - 1].c_addr == CSTACK + (DECODE_MAX_RUNS - 1) * 0x100);

	/* A frame the decoder hid (3.13+'s __init__ cleanup: its code zeroed in the raw
	 * chain too, but the thread owns it, in the data stack) is no activation: the
	 * frames on both sides of it are one run. */
	n = 0;
	raw[n++] = (struct raw_frame){ .addr = FRAMES, .code = CODE, .owner = 0 };
	raw[n++] = (struct raw_frame){ .addr = FRAMES + 0x80, .previous = 1, .owner = 0 };
	raw[n++] = (struct raw_frame){ .addr = FRAMES + 0x100, .code = CODE, .owner = 0 };
	raw[n++] = (struct raw_frame){ .addr = CSTACK, .previous = 1, .owner = 3 };
	st->depth = 2;
	decode_runs__find(&o, &t, raw, n, st);
	check_cover("a hidden frame", st);
	CHECK_MSG(st->nruns == 1 && st->runs[0].n == 2 && st->runs[0].c_addr == CSTACK,
		  "a hidden frame ended a run: %u runs, the first of %u frames at %#llx",
		  st->nruns, st->runs[0].n, (unsigned long long)st->runs[0].c_addr);
	free(st);
	printf("direct: runs cover the decoded frames, the last slot keeps its activation, "
	       "a hidden frame ends none\n");
}

/* The frame cache's reused names (the unchanged outer frames of a second sample)
 * change nothing. */
static void test_frame_cache(struct strtab *strs)
{
	for (unsigned int minor = 11; minor <= 15; minor++) {
		struct decode_opts opt = { 0 };
		struct target tg;

		build(&tg, minor, minor == 15 ? "ff|f|ff|B" : "ff|f|ff|");
		CHECK(frame_cache__new(&tg.o, 0, NULL, NULL, &opt.fc) == 0);
		decode_and_expect(&tg, strs, &opt, ~0u, "cache filled");
		decode_and_expect(&tg, strs, &opt, ~0u, "names reused");
		CHECK(frame_cache__stats(opt.fc)->partial_hits + frame_cache__stats(opt.fc)->hits > 0);
		frame_cache__free(opt.fc);
	}
	printf("frame cache: reused names, same runs\n");
}

int main(void)
{
	struct strtab *strs = strtab__new();

	CHECK(strs);
	test_versions(strs);
	test_empty_run(strs);
	test_base_frame(strs);
	test_311_chain(strs);
	test_incomplete(strs);
	test_too_many(strs);
	test_frame_cache(strs);
	test_direct();
	strtab__free(strs);
	if (check_failures)
		return 1;
	printf("test_decode_runs: all passed\n");
	return 0;
}
