/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fields taken out of a copied struct stay inside the copy, whatever the offsets say.
 *
 * The readers copy a bounded prefix of a target's object (a code object, a frame
 * header, a thread state) and take fields out of it at offsets that came from the
 * target's _Py_DebugOffsets. py_offsets__from_debug() refuses tables whose fields lie
 * outside those copies; this test hands the readers offsets that bypass that check,
 * as a future table or a bug in it would, and a fake target whose objects are laid out
 * at them. Each reader must refuse, never read past its buffer: built with
 * -fsanitize=address the old code reports a stack-buffer-overflow here. Each case has
 * a control that decodes the same objects at sound offsets, so a refusal means the
 * bound, not a broken fixture. The BPF record's own length is checked the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "code_cache.h"
#include "decoder.h"
#include "fake_mem.h"
#include "fake_py.h"
#include "py_threads.h"
#include "strtab.h"

#define BASE		0x10000ull
#define MEM_SIZE	0x8000u
#define CODE		(BASE + 0x1000)	/* 4 KiB of room: fields may be far out */
#define QUALNAME	(BASE + 0x2000)
#define FILENAME	(BASE + 0x2100)
#define NAME		(BASE + 0x2200)
#define LINETABLE	(BASE + 0x2300)
#define FRAME		(BASE + 0x3000)
#define RUNTIME		(BASE + 0x4000)
#define INTERP		(BASE + 0x4800)
#define TSTATE		(BASE + 0x5000)
#define CFRAME		(BASE + 0x6000)
#define UNITS		4
#define FIRSTLINE	5

static uint8_t bytes[MEM_SIZE];
static struct fake_mem mem;

/* 3.11's layout: the one whose offsets are built in, so no table is needed. */
static struct py_offsets base_offsets(void)
{
	struct py_offsets o;

	CHECK(py_offsets__builtin(0x030b02f0, &o) == 0);
	return o;
}

/* A fake target holding one code object "f" of x.py, laid out at @o. */
static void build_code(const struct py_offsets *o)
{
	/* One entry covering the UNITS code units, no column info, line delta 0. */
	static const uint8_t lt[] = { 0x80 | 13 << 3 | (UNITS - 1), 0x00 };
	const struct fake_code c = {
		.type = 0, .units = UNITS, .firstlineno = FIRSTLINE,
		.qualname = QUALNAME, .filename = FILENAME, .name = NAME, .linetable = LINETABLE,
	};

	memset(bytes, 0, sizeof(bytes));
	fake_mem__init(&mem, BASE, bytes, sizeof(bytes));
	fake_py__str(&mem, o, QUALNAME, "f");
	fake_py__str(&mem, o, FILENAME, "x.py");
	fake_py__str(&mem, o, NAME, "f");
	fake_py__bytes(&mem, o, LINETABLE, lt, sizeof(lt));
	fake_py__code(&mem, o, CODE, &c);
}

static int get_code(const struct py_offsets *o, struct strtab *strs, int *line)
{
	const struct code_cache_cfg cfg = {
		.off = o, .live = &mem.base, .strs = strs, .max_entries = 16,
	};
	const struct code_info *ci;
	struct code_cache *c;
	uint64_t fp;
	int err;

	CHECK(code_cache__new(&cfg, &c) == 0);
	err = code_cache__live_fp(c, CODE, &fp);
	if (!err)
		err = code_cache__get(c, CODE, fp, &ci);
	if (!err) {
		CHECK(!strcmp(strtab__get(strs, ci->qualname), "f"));
		CHECK(!strcmp(strtab__get(strs, ci->filename), "x.py"));
		CHECK(ci->firstlineno == FIRSTLINE && ci->ncodeunits == UNITS);
		*line = code_cache__line(ci, 0);
	}
	code_cache__free(c);
	return err;
}

struct moved {
	const char *what;
	size_t field;		/* offsetof(struct py_offsets, ...) */
	uint64_t at;
	uint64_t co_size;	/* 0: keep the layout's */
};

/* Code-object fields beyond the bytes read_code() holds: each must be refused. */
static void test_code_fields(void)
{
	const struct moved cases[] = {
		/* the measured case: ob_size is read 8 bytes after ob_type */
		{ "ob_type=520", offsetof(struct py_offsets, ob_type), 520, 0 },
		{ "ob_type=520, co_size=4096", offsetof(struct py_offsets, ob_type), 520, 4096 },
		{ "ob_type=2000", offsetof(struct py_offsets, ob_type), 2000, 0 },
		{ "co_firstlineno=516", offsetof(struct py_offsets, co_firstlineno), 516, 4096 },
		{ "co_firstlineno past co_size", offsetof(struct py_offsets, co_firstlineno), 184, 0 },
		{ "co_qualname=3016", offsetof(struct py_offsets, co_qualname), 3016, 4096 },
		{ "co_qualname straddles the copy", offsetof(struct py_offsets, co_qualname), 508,
		  4096 },
		{ "co_filename=3000", offsetof(struct py_offsets, co_filename), 3000, 0 },
		{ "co_linetable=600", offsetof(struct py_offsets, co_linetable), 600, 4096 },
		{ "co_size=4", offsetof(struct py_offsets, co_size), 4, 0 },
		{ "co_size=0", offsetof(struct py_offsets, co_size), 0, 0 },
	};
	struct strtab *strs = strtab__new();
	struct py_offsets o = base_offsets();
	int line = -2;

	CHECK(strs);
	build_code(&o);
	CHECK(get_code(&o, strs, &line) == 0);
	CHECK(line == FIRSTLINE);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct moved *m = &cases[i];
		int err;

		o = base_offsets();
		memcpy((uint8_t *)&o + m->field, &m->at, sizeof(m->at));
		if (m->co_size)
			o.co_size = m->co_size;
		build_code(&o);
		err = get_code(&o, strs, &line);
		if (err != -EINVAL) {
			fprintf(stderr, "FAIL code object with %s: %d, not -EINVAL\n", m->what, err);
			exit(1);
		}
	}
	strtab__free(strs);
	printf("code objects: %zu out-of-copy layouts refused\n", sizeof(cases) / sizeof(cases[0]));
}

/* A 3.11 thread's only frame, running the code object at its first instruction. */
static void build_frame(const struct py_offsets *o)
{
	build_code(o);
	fake_mem__put_u64(&mem, FRAME + o->fr_code, CODE);
	fake_mem__put_u64(&mem, FRAME + o->fr_previous, 0);
	fake_mem__put_u64(&mem, FRAME + o->fr_instr, CODE + o->co_code_adaptive);
	fake_mem__put(&mem, FRAME + o->fr_owner, &o->owner_thread, 1);
}

static enum decode_gap decode_frame(const struct py_offsets *o, struct strtab *strs,
				    struct stack *st)
{
	struct py_interp in = { .off = *o };
	const struct decoder_cfg cfg = { .interp = &in, .live = &mem.base, .strs = strs };
	const struct thread_sample t = {
		.pid = 1, .tid = 1, .current_frame = FRAME, .mem = &mem.base,
	};
	struct decoder *d;

	CHECK(decoder__new(&cfg, &d) == 0);
	CHECK(decoder__decode_thread(d, &t, st) == 0);
	decoder__free(d);
	return st->gap;
}

/* Frame-header fields beyond the bytes walk() and verify() hold. */
static void test_frame_fields(void)
{
	const struct moved cases[] = {
		{ "fr_owner=300", offsetof(struct py_offsets, fr_owner), 300, 0 },
		{ "fr_owner=72", offsetof(struct py_offsets, fr_owner), 72, 0 },
		{ "fr_previous=252", offsetof(struct py_offsets, fr_previous), 252, 0 },
		{ "fr_code=1000", offsetof(struct py_offsets, fr_code), 1000, 0 },
		{ "fr_instr=UINT64_MAX-4", offsetof(struct py_offsets, fr_instr), UINT64_MAX - 4,
		  0 },
	};
	struct strtab *strs = strtab__new();
	struct stack *st = calloc(1, sizeof(*st));
	struct py_offsets o = base_offsets();

	CHECK(strs && st);
	build_frame(&o);
	CHECK(decode_frame(&o, strs, st) == GAP_NONE);
	CHECK(st->depth == 1 && st->frames[0].line == FIRSTLINE);
	CHECK(!strcmp(strtab__get(strs, st->frames[0].qualname), "f"));

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct moved *m = &cases[i];
		enum decode_gap gap;

		o = base_offsets();
		memcpy((uint8_t *)&o + m->field, &m->at, sizeof(m->at));
		build_frame(&o);
		gap = decode_frame(&o, strs, st);
		if (gap != GAP_BAD_RECORD) {
			fprintf(stderr, "FAIL frame with %s: gap %d, depth %u\n", m->what, gap,
				st->depth);
			exit(1);
		}
	}
	free(st);
	strtab__free(strs);
	printf("frames: %zu out-of-copy layouts refused\n", sizeof(cases) / sizeof(cases[0]));
}

/* A record whose own length is shorter than its header: refused, nothing read past it. */
static void test_record_len(void)
{
	struct py_offsets o = base_offsets();
	struct py_interp in = { .off = o };
	struct strtab *strs = strtab__new();
	const struct decoder_cfg cfg = { .interp = &in, .live = &mem.base, .strs = strs };
	struct stack *st = calloc(1, sizeof(*st));
	struct pbp_sample *s = calloc(1, sizeof(*s));
	struct decoder *d;

	CHECK(strs && st && s);
	build_frame(&o);
	s->abi = PBP_ABI_VERSION;
	s->hdr_len = sizeof(*s);
	s->tstate = FRAME;
	s->current_frame = FRAME;
	s->tstate_len = 256;	/* "copied", but the record ends with its header */
	CHECK(decoder__new(&cfg, &d) == 0);
	for (uint32_t len = 0; len < sizeof(*s); len += 8) {
		s->len = len;
		CHECK(decoder__decode(d, s, sizeof(*s), st) == -EINVAL);
		CHECK(st->gap == GAP_BAD_RECORD);
	}
	/* control: the same record with its real length decodes from live memory */
	s->len = sizeof(*s);
	s->tstate_len = 0;
	CHECK(decoder__decode(d, s, sizeof(*s), st) == 0);
	CHECK(st->gap == GAP_NONE && st->depth == 1);
	decoder__free(d);
	free(s);
	free(st);
	strtab__free(strs);
	printf("records: lengths shorter than the header refused\n");
}

static int count_thread(const struct py_thread *t, void *arg)
{
	struct py_thread *seen = arg;

	*seen = *t;
	seen->ts_bytes = NULL;
	seen[1].tid++;		/* the count */
	return 0;
}

/* A runtime with one interpreter and one thread running FRAME, laid out at @o. */
static void build_threads(const struct py_offsets *o)
{
	build_frame(o);
	fake_mem__put_u64(&mem, RUNTIME + o->runtime_interpreters_head, INTERP);
	fake_mem__put_u64(&mem, INTERP + o->interp_threads_head, TSTATE);
	fake_mem__put_u64(&mem, TSTATE + o->ts_next, 0);
	fake_mem__put_u64(&mem, TSTATE + o->ts_native_thread_id, 4242);
	fake_mem__put_u64(&mem, TSTATE + o->ts_cframe, CFRAME);
	fake_mem__put_u64(&mem, CFRAME + o->cframe_current_frame, FRAME);
}

static void walk_threads(const struct py_offsets *o, struct py_thread seen[2])
{
	struct py_interp in = { .runtime = RUNTIME, .off = *o };

	memset(seen, 0, 2 * sizeof(*seen));
	CHECK(py_threads__walk(&mem.base, &in, count_thread, seen) == 0);
}

/* Thread-state fields whose offset plus width wraps around: not inside the copy. */
static void test_thread_fields(void)
{
	struct py_offsets o = base_offsets();
	struct py_thread seen[2];

	build_threads(&o);
	walk_threads(&o, seen);
	CHECK(seen[1].tid == 1 && seen[0].tid == 4242 && seen[0].current_frame == FRAME);

	o.ts_next = UINT64_MAX - 4;
	o.ts_native_thread_id = UINT64_MAX - 2;
	build_threads(&o);
	walk_threads(&o, seen);
	CHECK(seen[1].tid == 1 && seen[0].tid == 0 && seen[0].current_frame == FRAME);
	printf("threads: wrapping offsets read as absent\n");
}

int main(void)
{
	test_code_fields();
	test_frame_fields();
	test_record_len();
	test_thread_fields();
	printf("test_field_bounds: all passed\n");
	return 0;
}
