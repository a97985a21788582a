/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The decoder's check of a live reading (decoder.c: verify), which the --no-bpf
 * sampler relies on (docs/live-sampling.md): two copies of a fake target's stack, A
 * taken before the current frame was read and B after. Every caller in the chunk must
 * lie below the lower of the chunk's two tops; the innermost frame need not, and its
 * header may differ between the copies, when its caller is a Python frame the copies
 * agree on; not when its caller is an entry frame on the C stack, whose copies prove
 * nothing once the frame above it has returned. The frames the walk read outside the
 * copies are reported, for the next reading to copy. Every layout from 3.12 on (the
 * ones with entry frames), each case with a control that passes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/decoder.h"
#include "fake_frames.h"
#include "mem/mem_snapshot.h"
#include "base/strtab.h"

#define BASE		0x7f0000000000ull
#define MEM_SIZE	0x10000u
#define CODE		(BASE + 0x1000)
#define CODE2		(BASE + 0x1800)
#define STRS		(BASE + 0x2000)
#define STRS2		(BASE + 0x2400)
#define LINETABLE	(BASE + 0x2800)
#define TSTATE		(BASE + 0x3000)
#define CHUNK		(BASE + 0x8000)	/* the data stack: 0x80 a frame */
#define CHUNK_LEN	0x1000u
#define CSTACK		(BASE + 0xc000)	/* entry frames */
#define GEN		(BASE + 0xe000)	/* a coroutine's frame, in its object */

#define SLOT(i)		(CHUNK + (uint64_t)(i) * 0x80)

static uint8_t bytes[2][MEM_SIZE];	/* copy A, copy B (also the live memory) */

struct reading {
	struct fake_mem mem[2];
	struct mem_snapshot snap[2];
	struct py_offsets o;
	uint64_t current;
	uint64_t far;	/* a frame outside the chunk copied too, as a later reading does */
};

/* The same target in both copies: code objects, and nothing else yet. */
static void reading_init(struct reading *r, unsigned int minor)
{
	r->o = fake_frames__offsets(minor);
	r->far = 0;
	for (int k = 0; k < 2; k++) {
		memset(bytes[k], 0, sizeof(bytes[k]));
		fake_mem__init(&r->mem[k], BASE, bytes[k], sizeof(bytes[k]));
		fake_frames__code(&r->mem[k], &r->o, CODE, STRS, LINETABLE, "a.py");
		fake_frames__code(&r->mem[k], &r->o, CODE2, STRS2, LINETABLE + 0x100, "b.py");
	}
}

static uint8_t entry_owner(const struct py_offsets *o)
{
	return o->owner_cstack != 0xff ? o->owner_cstack : o->owner_interpreter;
}

/* A frame in both copies, or in copy @k alone (0 or 1; 2: both). */
static void put(struct reading *r, int k, uint64_t at, uint64_t code, uint64_t previous,
		uint8_t owner)
{
	for (int i = 0; i < 2; i++)
		if (k == 2 || k == i)
			fake_frames__put(&r->mem[i], &r->o, at, code, previous, owner, 0);
}

/* Copy @k's frame at @at stopped at another instruction than the other copy's. */
static void move_instr(struct reading *r, int k, uint64_t at)
{
	fake_mem__put_u64(&r->mem[k], at + r->o.fr_instr, CODE + r->o.co_code_adaptive + 2);
}

/* What a reading copied: the chunk and the entry frames; the coroutine's frame only
 * once it is known. */
static void reading_copy(struct reading *r)
{
	for (int k = 0; k < 2; k++) {
		mem_snapshot__init(&r->snap[k], &r->mem[1].base);
		mem_snapshot__add(&r->snap[k], CHUNK, bytes[k] + (CHUNK - BASE), CHUNK_LEN);
		mem_snapshot__add(&r->snap[k], CSTACK, bytes[k] + (CSTACK - BASE), 0x1000);
		if (r->far)
			mem_snapshot__add(&r->snap[k], r->far, bytes[k] + (r->far - BASE),
					  r->o.fr_size);
	}
}

/* Decodes @r with the chunk's lower top at @below; the stack's gap. */
static enum decode_gap decode(struct reading *r, uint64_t below, struct strtab *strs,
			      struct stack *st, uint64_t *outside, uint32_t *noutside)
{
	struct py_interp in = { .off = r->o };
	const struct decoder_cfg cfg = { .interp = &in, .live = &r->mem[1].base, .strs = strs };
	uint64_t seen[8];
	uint32_t nseen = 0;
	const struct thread_sample t = {
		.pid = 1, .tid = 1, .tstate = TSTATE, .current_frame = r->current,
		.mem = &r->snap[1].base, .copy = &r->snap[1], .copy_chunks = 1,
		.verify = &r->snap[0].base, .verify_copy = &r->snap[0],
		.live_lo = CHUNK, .live_hi = CHUNK + CHUNK_LEN, .live_below = below,
		.outside = outside ? outside : seen, .outside_cap = 8,
		.noutside = noutside ? noutside : &nseen,
	};
	struct decoder *d;

	reading_copy(r);
	CHECK(decoder__new(&cfg, &d) == 0);
	CHECK(decoder__decode_thread(d, &t, st) == 0);
	decoder__free(d);
	return st->gap;
}

static const char *file_of(struct strtab *strs, const struct stack *st, uint32_t i)
{
	return strtab__get(strs, st->frames[i].filename);
}

/* h (slot 0) <- the thread's first entry, and the entry frame of a call from C in h. */
static void outer_chain(struct reading *r, unsigned int minor)
{
	uint8_t e;

	reading_init(r, minor);
	e = entry_owner(&r->o);
	put(r, 2, CSTACK, 0, 0, e);
	put(r, 2, SLOT(0), CODE, CSTACK, r->o.owner_thread);
	put(r, 2, CSTACK + 0x100, 0, SLOT(0), e);
}

/* f (slot 1) <- entry <- h: the innermost frame called from C. */
static void c_caller(struct reading *r, unsigned int minor)
{
	outer_chain(r, minor);
	put(r, 2, SLOT(1), CODE, CSTACK + 0x100, r->o.owner_thread);
	r->current = SLOT(1);
}

/* f (slot 2) <- g (slot 1) <- entry <- h: a Python caller below the innermost frame. */
static void python_caller(struct reading *r, unsigned int minor)
{
	c_caller(r, minor);
	put(r, 2, SLOT(2), CODE, SLOT(1), r->o.owner_thread);
	r->current = SLOT(2);
}

static void test_layout(unsigned int minor, struct strtab *strs, struct stack *st)
{
	struct reading r;
	const uint64_t top = SLOT(8);

	/* Controls: copies that agree, every frame below both tops. */
	python_caller(&r, minor);
	CHECK_MSG(decode(&r, top, strs, st, NULL, NULL) == GAP_NONE && st->depth == 3,
		  "3.%u: the agreeing reading: gap %d, depth %u", minor, st->gap, st->depth);
	c_caller(&r, minor);
	CHECK_MSG(decode(&r, top, strs, st, NULL, NULL) == GAP_NONE && st->depth == 2,
		  "3.%u: the agreeing reading from C: gap %d", minor, st->gap);

	/* A caller at or above a top: it may have been dead at that end. */
	python_caller(&r, minor);
	CHECK_MSG(decode(&r, SLOT(1), strs, st, NULL, NULL) == GAP_TORN,
		  "3.%u: a caller above the top was kept", minor);
	/* The innermost frame above it is fine: it was current at the instant. */
	python_caller(&r, minor);
	CHECK_MSG(decode(&r, SLOT(2), strs, st, NULL, NULL) == GAP_NONE,
		  "3.%u: an innermost frame above the top was refused: gap %d", minor, st->gap);

	/* Pushed after copy A took its slot: A holds another function there. B's is kept. */
	python_caller(&r, minor);
	put(&r, 0, SLOT(2), CODE2, SLOT(1), r.o.owner_thread);
	CHECK_MSG(decode(&r, top, strs, st, NULL, NULL) == GAP_NONE && st->depth == 3 &&
		  !strcmp(file_of(strs, st, 0), "a.py"),
		  "3.%u: a new innermost frame under a Python caller: gap %d", minor, st->gap);
	/* ... but not if its caller moved on between the copies. */
	python_caller(&r, minor);
	put(&r, 0, SLOT(2), CODE2, SLOT(1), r.o.owner_thread);
	move_instr(&r, 0, SLOT(1));
	CHECK_MSG(decode(&r, top, strs, st, NULL, NULL) == GAP_TORN,
		  "3.%u: a caller at two instructions was kept", minor);

	/* Called from C: the entry frame's copies prove nothing, so the innermost frame is
	 * compared and bounded like a caller. */
	c_caller(&r, minor);
	put(&r, 0, SLOT(1), CODE2, CSTACK + 0x100, r.o.owner_thread);
	CHECK_MSG(decode(&r, top, strs, st, NULL, NULL) == GAP_TORN,
		  "3.%u: a new innermost frame under an entry frame was kept", minor);
	c_caller(&r, minor);
	CHECK_MSG(decode(&r, SLOT(1), strs, st, NULL, NULL) == GAP_TORN,
		  "3.%u: an innermost frame above the top, called from C, was kept", minor);

	/* An entry frame's slot on the C stack, copied in both, that reads as a frame of
	 * the thread's own (its owner byte rewritten by other C code since): the thread's
	 * frames live in its chunks. */
	c_caller(&r, minor);
	put(&r, 2, CSTACK + 0x100, CODE2, SLOT(0), r.o.owner_thread);
	CHECK_MSG(decode(&r, top, strs, st, NULL, NULL) == GAP_TORN,
		  "3.%u: a thread's frame on the C stack was kept: gap %d", minor, st->gap);
}

/* A coroutine's frame outside the copies is not used, read after the instant: the
 * reading is refused and the frame reported for the next one to copy, which then
 * passes. */
static void test_outside(unsigned int minor, struct strtab *strs, struct stack *st)
{
	struct reading r;
	uint64_t seen[8];
	uint32_t n = 0;

	python_caller(&r, minor);
	put(&r, 2, GEN, CODE, SLOT(1), r.o.owner_generator);
	put(&r, 2, SLOT(2), CODE, GEN, r.o.owner_thread);
	CHECK_MSG(decode(&r, SLOT(8), strs, st, seen, &n) == GAP_TORN,
		  "3.%u: a coroutine's frame read after the reading was used: gap %d", minor,
		  st->gap);
	CHECK_MSG(n == 1 && seen[0] == GEN, "3.%u: %u frames outside the copies", minor, n);
	r.far = GEN;
	n = 0;
	CHECK_MSG(decode(&r, SLOT(8), strs, st, seen, &n) == GAP_NONE && st->depth == 4,
		  "3.%u: through a copied coroutine: gap %d, depth %u", minor, st->gap,
		  st->depth);
	CHECK_MSG(n == 0, "3.%u: a copied frame reported outside the copies", minor);
	/* Read after the reading, it may be no frame by then: still reported. */
	python_caller(&r, minor);
	put(&r, 2, GEN, CODE, SLOT(1), 0x7f);
	put(&r, 2, SLOT(2), CODE, GEN, r.o.owner_thread);
	n = 0;
	CHECK_MSG(decode(&r, SLOT(8), strs, st, seen, &n) == GAP_BAD_FRAME,
		  "3.%u: a broken frame outside the copies: gap %d", minor, st->gap);
	CHECK_MSG(n == 1 && seen[0] == GEN, "3.%u: a broken frame outside the copies was "
		  "not reported", minor);
}

int main(void)
{
	struct strtab *strs = strtab__new();
	struct stack *st = calloc(1, sizeof(*st));

	CHECK(strs && st);
	for (unsigned int minor = 12; minor <= 15; minor++) {
		test_layout(minor, strs, st);
		test_outside(minor, strs, st);
	}
	free(st);
	strtab__free(strs);
	if (check_failures)
		return 1;
	printf("test_live_verify: all passed\n");
	return 0;
}
