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
 * bound, not a broken fixture. The BPF record's own length is checked the same way,
 * and so is its --native block: each way it could point outside the record, or say
 * what this ABI does not write, leaves the stack without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/code_cache.h"
#include "decode/decoder.h"
#include "fake_mem.h"
#include "fake_py.h"
#include "cpython/py_threads.h"
#include "base/strtab.h"

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
	err = code_cache__fp(c, &mem.base, CODE, &fp);
	if (!err)
		err = code_cache__get(c, NULL, CODE, fp, &ci);
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

/* A record with no thread state or chunks and a native block of NATIVE_STACK bytes. */
#define NATIVE_STACK 64
#define NATIVE_REC (sizeof(struct pbp_sample) + sizeof(struct pbp_native) + NATIVE_STACK)

static void build_native_record(uint64_t *buf)
{
	struct pbp_sample *s = (struct pbp_sample *)buf;
	struct pbp_native *n = (struct pbp_native *)((uint8_t *)buf + sizeof(*s));

	memset(buf, 0, NATIVE_REC + 64);
	s->abi = PBP_ABI_VERSION;
	s->hdr_len = sizeof(*s);
	s->len = NATIVE_REC;
	s->tstate = FRAME;
	s->current_frame = FRAME;
	s->flags = PBP_SF_NATIVE;
	s->native_off = sizeof(*s);
	s->native_len = sizeof(*n) + NATIVE_STACK;
	n->hdr_len = sizeof(*n);
	n->flags = PBP_NF_STACK_TOP;
	n->regs_mask = (1u << PBP_NATIVE_REGS) - 1;
	n->regs[7] = 0x7ffc0000;
	n->stack_off = sizeof(*s) + sizeof(*n);
	n->stack_len = NATIVE_STACK;
}

/* The ways of spoiling the block, each on a sound record. */
static const char *const native_cases[] = {
	"offsets without PBP_SF_NATIVE", "native_off not 8-aligned",
	"native_off inside the Python payload", "native_off past the record",
	"native_len past the record", "native_len shorter than the block",
	"hdr_len not this ABI's", "an unknown flag", "a register beyond rip",
	"frame records without PBP_NF_FP_WALK", "a kernel stack id (reserved)",
	"stack_off not 8-aligned", "stack_off inside the block's header",
	"stack_len past native_len", "stack_off + stack_len wrapping 32 bits",
	"stack_len of 4 GiB",
};

/* The same with a frame-pointer walk (ABI 6): NFP records, then the stack bytes. */
#define NFP 3
#define FP_REC (NATIVE_REC + NFP * sizeof(struct pbp_native_fp))

static void build_fp_record(uint64_t *buf)
{
	struct pbp_sample *s = (struct pbp_sample *)buf;
	struct pbp_native *n = (struct pbp_native *)((uint8_t *)buf + sizeof(*s));
	struct pbp_native_fp *r = (struct pbp_native_fp *)(n + 1);

	build_native_record(buf);
	memset((uint8_t *)buf + NATIVE_REC, 0, FP_REC - NATIVE_REC + 64);
	s->len = FP_REC;
	s->native_len = FP_REC - sizeof(*s);
	n->flags = PBP_NF_STACK_CAPPED | PBP_NF_FP_WALK | PBP_NF_FP_ZERO;
	n->fp_off = sizeof(*s) + sizeof(*n);
	n->nfp = NFP;
	n->stack_off = n->fp_off + NFP * sizeof(*r);
	for (uint32_t i = 0; i < NFP; i++) {
		r[i].fp = n->regs[7] + 0x40 + 0x100 * i;
		r[i].ret = 0x401000 + i;
	}
}

static const char *const fp_cases[] = {
	"PBP_NF_FP_WALK without an end", "two ends", "an end without PBP_NF_FP_WALK",
	"fp_off past the header", "fp_off inside the header", "more than PBP_NATIVE_FP_MAX",
	"records past native_len", "stack_off inside the records", "a misaligned record",
	"records that do not rise", "records 8 bytes apart", "a record below RSP",
	"a return address of 0", "a record at the top of the address space",
	"nfp of 4 G",
};

static void spoil_fp(size_t i, struct pbp_sample *s, struct pbp_native *n)
{
	struct pbp_native_fp *r = (struct pbp_native_fp *)(n + 1);

	(void)s;
	switch (i) {
	case 0: n->flags &= ~PBP_NF_FP_ENDS; break;
	case 1: n->flags |= PBP_NF_FP_BROKEN; break;
	case 2: n->flags &= ~PBP_NF_FP_WALK; n->nfp = 0; n->fp_off = 0; break;
	case 3: n->fp_off += 8; break;
	case 4: n->fp_off -= 8; break;
	case 5: n->nfp = PBP_NATIVE_FP_MAX + 1; break;
	case 6: n->nfp = NFP + 5; n->stack_off += 5 * sizeof(*r); n->stack_len = 0; break;
	case 7: n->stack_off -= 8; break;
	case 8: r[1].fp += 4; break;
	case 9: r[2].fp = r[0].fp; break;
	case 10: r[1].fp = r[0].fp + 8; break;
	case 11: r[0].fp = n->regs[7] - 16; break;
	case 12: r[1].ret = 0; break;
	case 13: r[2].fp = UINT64_MAX - 7; break;
	default: n->nfp = UINT32_MAX; break;
	}
}

static void spoil_native(size_t i, struct pbp_sample *s, struct pbp_native *n)
{
	switch (i) {
	case 0: s->flags = 0; break;
	case 1: s->native_off += 4; break;
	case 2: s->native_off -= 8; break;
	case 3: s->native_off = UINT32_MAX - 7; break;
	case 4: s->native_len += 8; break;
	case 5: s->native_len = sizeof(*n) - 8; n->stack_len = 0; break;
	case 6: n->hdr_len += 8; break;
	case 7: n->flags |= 0x8000; break;
	case 8: n->regs_mask |= 1u << PBP_NATIVE_REGS; break;
	case 9: n->nfp = 1; break;
	case 10: n->kstack_id = -1; break;
	case 11: n->stack_off += 4; n->stack_len -= 8; break;
	case 12: n->stack_off -= 8; break;
	case 13: n->stack_len += 8; break;
	case 14: n->stack_off = UINT32_MAX - 7; n->stack_len = 16; break;
	default: n->stack_len = UINT32_MAX; break;
	}
}

/* The --native block: taken as is when sound; ignored and counted, never read past the
 * record, in every other case, while the Python stack still decodes. */
static void test_native_block(void)
{
	struct py_offsets o = base_offsets();
	struct py_interp in = { .off = o };
	struct strtab *strs = strtab__new();
	const struct decoder_cfg cfg = { .interp = &in, .live = &mem.base, .strs = strs };
	struct stack *st = calloc(1, sizeof(*st));
	uint64_t *buf = calloc(1, FP_REC + 64);
	struct pbp_sample *s = (struct pbp_sample *)buf;
	struct pbp_native *n = (struct pbp_native *)((uint8_t *)buf + sizeof(*s));
	const struct decode_stats *ds;
	struct decoder *d;

	CHECK(strs && st && buf);
	build_frame(&o);
	CHECK(decoder__new(&cfg, &d) == 0);
	ds = decoder__stats(d);
	/* control: the sound block, and a record without one */
	build_native_record(buf);
	CHECK(decoder__decode(d, buf, NATIVE_REC, st) == 0);
	CHECK(st->gap == GAP_NONE && st->depth == 1);
	CHECK(st->native == n && st->native_stack == (uint8_t *)buf + n->stack_off);
	CHECK(st->native->regs[7] == 0x7ffc0000 && ds->native_blocks == 1);
	s->flags = 0;
	s->native_off = s->native_len = 0;
	s->len = sizeof(*s);
	CHECK(decoder__decode(d, buf, NATIVE_REC, st) == 0);
	CHECK(!st->native && !st->native_stack && ds->native_invalid == 0);

	for (size_t i = 0; i < sizeof(native_cases) / sizeof(native_cases[0]); i++) {
		build_native_record(buf);
		spoil_native(i, s, n);
		CHECK(decoder__decode(d, buf, NATIVE_REC, st) == 0);
		if (st->native || st->native_stack || ds->native_invalid != i + 1 ||
		    st->gap != GAP_NONE || st->depth != 1) {
			fprintf(stderr, "FAIL native block with %s: native %p, invalid %llu, gap %d\n",
				native_cases[i], (const void *)st->native,
				(unsigned long long)ds->native_invalid, st->gap);
			exit(1);
		}
	}
	CHECK(ds->native_blocks == 1);
	/* A frame-pointer walk's records: sound, then spoiled each way. */
	build_fp_record(buf);
	CHECK(decoder__decode(d, buf, FP_REC, st) == 0);
	CHECK(st->native == n && st->native_fp == (const struct pbp_native_fp *)(n + 1));
	CHECK(st->native_stack == (uint8_t *)buf + n->stack_off && ds->native_blocks == 2);
	CHECK(st->native_fp[NFP - 1].ret == 0x401000 + NFP - 1);
	for (size_t i = 0; i < sizeof(fp_cases) / sizeof(fp_cases[0]); i++) {
		uint64_t before = ds->native_invalid;

		build_fp_record(buf);
		spoil_fp(i, s, n);
		CHECK(decoder__decode(d, buf, FP_REC, st) == 0);
		if (st->native || st->native_stack || st->native_fp ||
		    ds->native_invalid != before + 1 || st->gap != GAP_NONE || st->depth != 1) {
			fprintf(stderr, "FAIL frame records with %s: native %p, invalid %llu, gap %d\n",
				fp_cases[i], (const void *)st->native,
				(unsigned long long)ds->native_invalid, st->gap);
			exit(1);
		}
	}
	CHECK(ds->native_blocks == 2);
	/* A live sample (no record) has none. */
	{
		const struct thread_sample t = {
			.pid = 1, .tid = 1, .current_frame = FRAME, .mem = &mem.base,
		};

		st->native = n;
		CHECK(decoder__decode_thread(d, &t, st) == 0 && !st->native && !st->native_stack);
	}
	decoder__free(d);
	free(buf);
	free(st);
	strtab__free(strs);
	printf("records: %zu malformed native blocks ignored, %zu with frame records\n",
	       sizeof(native_cases) / sizeof(native_cases[0]),
	       sizeof(fp_cases) / sizeof(fp_cases[0]));
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
	test_native_block();
	test_thread_fields();
	printf("test_field_bounds: all passed\n");
	return 0;
}
