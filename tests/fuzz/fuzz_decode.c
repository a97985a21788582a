/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libFuzzer target for what a target process controls on the way from its
 * _Py_DebugOffsets to a decoded stack: py_offsets__from_debug() on a hostile table, then,
 * with whatever table it accepts, the thread-list walk (py_threads), the frame walk
 * (decoder: live memory and a BPF record) and the code-object reader (code_cache,
 * py_obj) over hostile memory. Any input must give a refusal or a stack, never an
 * overread, a hang or undefined behaviour, and an accepted table must keep every
 * field inside the readers' copies.
 *
 * Random bytes seldom make a table the parser accepts, or memory that holds a
 * thread, so the input edits a well-formed start instead (as fuzz_core wraps its input
 * in an ELF header):
 *   byte 0     bits 0-1: 0-2 start from the real 3.13/3.14/3.15 table
 *                        (tests/unit/debug_tables.h), 3 take the table from the input;
 *              bit 2: also decode the thread from a BPF record; bit 3: no frame cache;
 *              bit 4: the record carries a --native block (registers, 256 stack bytes)
 *              bit 5: ... with a frame-pointer walk's 3 records before the stack bytes
 *   table      0-2: a count byte, then that many (mod 16) edits of 4 bytes: slot
 *                   (from 2), kind (how the 16-bit value becomes the slot's), value;
 *              3: a 16-bit length, then that many bytes (what the input holds)
 *   the rest   edits of the target's memory and the record: 16-bit offset into
 *              both (memory first, then the record), a length byte, the bytes.
 * The memory starts as a runtime with one interpreter and one thread running two
 * Python frames over a base frame, laid out at the accepted table's offsets.
 *
 * Seeds (tests/fuzz/seeds/decode): each real table as is, and "roomy" ones whose
 * code object, str and frame sizes are raised to 4096, so that one more edit can move
 * a field past a reader's copy while the table still describes structs that hold it.
 *
 * Build and run: make fuzz (clang -fsanitize=fuzzer,address,undefined).
 */
#include <stdlib.h>
#include <string.h>

#include "decode/code_cache.h"
#include "decode/decoder.h"
#include "decode/frame_cache.h"
#include "cpython/py_thread_name.h"
#include "cpython/py_threads.h"
#include "base/strtab.h"
#include "../unit/debug_tables.h"
#include "../unit/fake_mem.h"
#include "../unit/fake_py.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE		0x7f0000100000ull
#define MEM_BYTES	0xc000u
#define REC_BYTES	0x4000u
#define RUNTIME		(BASE + 0x0000)
#define INTERP		(BASE + 0x1000)	/* fields up to ~8 KiB in */
#define GIL		(BASE + 0x3000)
#define TSTATE		(BASE + 0x3400)
#define CHUNK		(BASE + 0x4000)
#define CHUNK_BYTES	0x400u
#define CODE_A		(BASE + 0x5000)
#define CODE_B		(BASE + 0x5400)
#define STRS		(BASE + 0x6000)
#define LINETABLE	(BASE + 0x7000)
#define CODE_TYPE	(BASE + 0x8000)
#define TID		4242
#define UNITS		8

/* The target's memory, then a BPF record of its thread: one buffer, one edit space. */
static uint64_t scratch[(MEM_BYTES + REC_BYTES) / 8];

struct ctx {
	struct decoder *d;
	struct stack *st;
	struct mem_source *mem;
	const struct py_offsets *off;
};

static struct stack stack_buf;

static size_t get(const uint8_t **p, const uint8_t *end, void *dst, size_t n)
{
	size_t have = (size_t)(end - *p) < n ? (size_t)(end - *p) : n;

	memset(dst, 0, n);
	memcpy(dst, *p, have);
	*p += have;
	return have;
}

/* A slot's new value from an edit: an offset inside a copy or just past it, one
 * inside a struct (most bounds are near 4096), a step from the real value, or one
 * near the top (sums that wrap) or far beyond anything. */
static uint64_t widen(uint8_t kind, uint16_t v, uint64_t old)
{
	switch (kind & 3) {
	case 0:
		return v & 1023;
	case 1:
		return v & 8191;
	case 2:
		return old + (uint64_t)(int64_t)(int16_t)v;
	default:
		return v & 1 ? UINT64_MAX - (v >> 1) : (uint64_t)v << 47;
	}
}

/* The table to parse, in @buf; returns its length. */
static size_t table(const uint8_t **p, const uint8_t *end, uint8_t mode, uint8_t *buf)
{
	const struct debug_table *t;
	uint8_t n;

	memset(buf, 0, PBP_DEBUG_OFFSETS_MAX);
	if ((mode & 3) == 3) {
		uint16_t len;

		get(p, end, &len, sizeof(len));
		return get(p, end, buf, len % (PBP_DEBUG_OFFSETS_MAX + 1));
	}
	t = &debug_tables[mode & 3];
	memcpy(buf, t->slots, t->nslots * 8);
	get(p, end, &n, 1);
	for (unsigned int i = 0; i < n % 16u; i++) {
		uint8_t edit[4];
		unsigned int slot;
		uint16_t v;
		uint64_t x;

		get(p, end, edit, sizeof(edit));
		/* The cookie and version stay: the raw form tries those. */
		slot = 2 + edit[0] % (t->nslots - 2);
		memcpy(&v, edit + 2, sizeof(v));
		memcpy(&x, buf + slot * 8, 8);
		x = widen(edit[1], v, x);
		memcpy(buf + slot * 8, &x, 8);
	}
	return t->nslots * 8;
}

/* What py_offsets__from_debug() promises the readers (see test_offsets.c). */
static int inside(uint64_t off, uint64_t width, uint64_t size)
{
	return off < size && width <= size - off;
}

static void check_fits(const struct py_offsets *o)
{
	if (o->co_size > PBP_CODE_COPY_MAX || o->fr_size > PBP_FRAME_COPY_MAX ||
	    o->ts_size > PBP_TSTATE_COPY_MAX || !inside(o->ob_type, 16, o->co_size) ||
	    !inside(o->co_firstlineno, 4, o->co_size) || !inside(o->co_qualname, 8, o->co_size) ||
	    !inside(o->co_filename, 8, o->co_size) || !inside(o->co_linetable, 8, o->co_size) ||
	    !inside(o->fr_owner, 1, o->fr_size) || !inside(o->fr_code, 8, o->fr_size) ||
	    !inside(o->fr_previous, 8, o->fr_size) || !inside(o->fr_instr, 8, o->fr_size) ||
	    !inside(o->ts_current_frame, 8, o->ts_size) || !inside(o->ts_next, 8, o->ts_size))
		abort();
}

static void put_frame(struct fake_mem *m, const struct py_offsets *o, uint64_t at,
		      uint64_t code, uint64_t instr, uint64_t previous, uint8_t owner)
{
	fake_mem__put_u64(m, at + o->fr_code, code);
	fake_mem__put_u64(m, at + o->fr_instr, instr);
	fake_mem__put_u64(m, at + o->fr_previous, previous);
	fake_mem__put(m, at + o->fr_owner, &owner, 1);
}

/* A runtime, one interpreter, one thread: f (CODE_A) called by g (CODE_B) over a
 * base frame, in the data-stack chunk. */
static void build(struct fake_mem *m, const struct py_offsets *o)
{
	static const uint8_t lt[] = { 0x80 | 13 << 3 | 3, 0x00, 0x80 | 13 << 3 | 3, 0x02 };
	const uint64_t f0 = CHUNK + 0x100, f1 = CHUNK + 0x200, f2 = CHUNK + 0x300;
	const uint8_t base_owner = o->owner_cstack != 0xff ? o->owner_cstack :
							     o->owner_interpreter;
	const struct fake_code a = {
		.type = CODE_TYPE, .units = UNITS, .firstlineno = 10, .version = 1,
		.qualname = STRS, .filename = STRS + 0x100, .name = STRS,
		.linetable = LINETABLE,
	};
	struct fake_code b = a;

	b.qualname = b.name = STRS + 0x200;
	b.firstlineno = 20;
	b.version = 2;
	fake_mem__put_u64(m, RUNTIME + o->runtime_interpreters_head, INTERP);
	fake_mem__put_u64(m, INTERP + o->interp_threads_head, TSTATE);
	if (o->interp_gil_ptr != PBP_OFF_NONE)
		fake_mem__put_u64(m, INTERP + o->interp_gil_ptr, GIL);
	fake_mem__put_u32(m, GIL + o->gil_locked, 1);
	fake_mem__put_u64(m, GIL + o->gil_last_holder, TSTATE);
	fake_mem__put_u64(m, TSTATE + o->ts_native_thread_id, TID);
	fake_mem__put_u64(m, TSTATE + o->ts_current_frame, f0);
	fake_mem__put_u64(m, TSTATE + o->ts_datastack_chunk, CHUNK);
	fake_mem__put_u64(m, TSTATE + o->ts_datastack_top, CHUNK + CHUNK_BYTES);
	fake_mem__put_u64(m, TSTATE + o->ts_datastack_limit, CHUNK + 0x1000);
	put_frame(m, o, f0, CODE_A, CODE_A + o->co_code_adaptive + 6, f1, o->owner_thread);
	put_frame(m, o, f1, CODE_B, CODE_B + o->co_code_adaptive + 2, f2, o->owner_thread);
	put_frame(m, o, f2, 0, 0, 0, base_owner);
	fake_py__code(m, o, CODE_A, &a);
	fake_py__code(m, o, CODE_B, &b);
	fake_py__str(m, o, STRS, "f");
	fake_py__str(m, o, STRS + 0x100, "fuzz.py");
	fake_py__str(m, o, STRS + 0x200, "g");
	fake_py__bytes(m, o, LINETABLE, lt, sizeof(lt));
}

#define NATIVE_STACK 256
#define NATIVE_FP 3

/* With --native: the block after the payload at @len, as the BPF program lays it out;
 * with @fp, a frame-pointer walk's records first. */
static size_t add_native(uint8_t *rec, size_t len, int fp)
{
	struct pbp_sample *s = (struct pbp_sample *)rec;
	size_t off = (len + 7) & ~(size_t)7;
	struct pbp_native *n = (struct pbp_native *)(rec + off);
	struct pbp_native_fp *r = (struct pbp_native_fp *)(n + 1);
	uint32_t nfp = fp ? NATIVE_FP : 0;

	memset(n, 0, sizeof(*n));
	n->hdr_len = sizeof(*n);
	n->flags = PBP_NF_STACK_TOP;
	n->regs_mask = (1u << PBP_NATIVE_REGS) - 1;
	n->regs[7] = BASE + 0x9000;
	if (fp) {
		n->flags = PBP_NF_STACK_CAPPED | PBP_NF_FP_WALK | PBP_NF_FP_ZERO;
		n->fp_off = (uint32_t)(off + sizeof(*n));
		n->nfp = nfp;
		for (uint32_t i = 0; i < nfp; i++)
			r[i] = (struct pbp_native_fp){ .fp = n->regs[7] + 0x80 * (i + 1),
						       .ret = 0x401000 + i };
	}
	n->stack_off = (uint32_t)(off + sizeof(*n) + nfp * sizeof(*r));
	n->stack_len = NATIVE_STACK;
	memset(rec + n->stack_off, 0x5a, NATIVE_STACK);
	s->flags |= PBP_SF_NATIVE;
	s->native_off = (uint32_t)off;
	s->native_len = (uint32_t)(sizeof(*n) + nfp * sizeof(*r) + NATIVE_STACK);
	s->len = (uint32_t)(off + s->native_len);
	return s->len;
}

/* A copy of one frame outside the chunk, and of one code object, as BPF appends them:
 * the frame at the chunk's start again, and CODE_A. */
static size_t add_copies(struct fake_mem *m, const struct py_offsets *o, uint8_t *rec,
			 size_t len)
{
	struct pbp_sample *s = (struct pbp_sample *)rec;
	struct pbp_span h = { .addr = CODE_A, .len = (uint32_t)o->co_size };
	uint64_t frame = CHUNK;

	s->nframes = 1;
	s->frame_len = (uint32_t)o->fr_size;
	memcpy(rec + len, &frame, 8);
	fake_mem__read(&m->base, frame, rec + len + 8, o->fr_size);
	len = (len + 8 + o->fr_size + 7) & ~(size_t)7;
	s->nspans = 1;
	s->spans_off = (uint32_t)len;
	memcpy(rec + len, &h, sizeof(h));
	fake_mem__read(&m->base, CODE_A, rec + len + sizeof(h), h.len);
	len += sizeof(h) + ((h.len + 7) & ~7u);
	s->len = (uint32_t)len;
	return len;
}

/* The BPF program's record of the thread: header, thread state, the chunk, and then
 * (@copies) frame and code copies or (@native) a native block. */
static size_t build_record(struct fake_mem *m, const struct py_offsets *o, uint8_t *rec,
			   int native, int fp, int copies)
{
	struct pbp_sample *s = (struct pbp_sample *)rec;
	uint32_t tlen = o->ts_size < PBP_TSTATE_MAX ? (uint32_t)o->ts_size : PBP_TSTATE_MAX;
	size_t len = sizeof(*s) + tlen + CHUNK_BYTES;

	memset(s, 0, sizeof(*s));
	s->abi = PBP_ABI_VERSION;
	s->hdr_len = sizeof(*s);
	s->len = (uint32_t)len;
	s->pid = 1;
	s->tid = TID;
	s->tstate = TSTATE;
	s->current_frame = CHUNK + 0x100;
	s->tstate_len = tlen;
	s->nsegs = 1;
	s->seg[0].addr = CHUNK;
	s->seg[0].len = CHUNK_BYTES;
	s->nfps = 2;
	s->fps[0] = (struct pbp_code_fp){ .frame = CHUNK + 0x100, .code = CODE_A, .fp = 1 };
	s->fps[1] = (struct pbp_code_fp){ .frame = CHUNK + 0x200, .code = CODE_B, .fp = 2 };
	fake_mem__read(&m->base, TSTATE, rec + sizeof(*s), tlen);
	fake_mem__read(&m->base, CHUNK, rec + sizeof(*s) + tlen, CHUNK_BYTES);
	if (copies)
		len = add_copies(m, o, rec, len);
	return native ? add_native(rec, len, fp) : len;
}

/* Reads every byte the decoder handed out of the record, for ASan to check. */
static void touch_native(const struct stack *st)
{
	volatile uint8_t sum = 0;

	if (!st->native)
		return;
	for (uint32_t i = 0; i < PBP_NATIVE_REGS; i++)
		sum += (uint8_t)st->native->regs[i];
	for (uint32_t i = 0; i < st->native->stack_len; i++)
		sum += st->native_stack[i];
	for (uint32_t i = 0; st->native_fp && i < st->native->nfp; i++)
		sum += (uint8_t)(st->native_fp[i].fp ^ st->native_fp[i].ret);
}

/* The thread's Python name, from its stack and from a Thread object at an address the
 * input chooses (its thread state's first word). */
static void name_thread(struct ctx *c, const struct py_thread *pt)
{
	char name[PY_THREAD_NAME_MAX];
	uint64_t obj;

	decoder__thread_name(c->d, c->st, name, sizeof(name));
	if (!mem__read_u64(c->mem, pt->tstate, &obj))
		py_thread_name__of_object(c->mem, c->off, obj, name, sizeof(name));
}

/* Each thread the walk finds is decoded as live sampling would, reading twice. */
static int on_thread(const struct py_thread *pt, void *arg)
{
	struct ctx *c = arg;
	const struct thread_sample t = {
		.pid = 1, .tid = pt->tid, .tstate = pt->tstate,
		.current_frame = pt->current_frame, .anchor = pt->anchor,
		.anchor_seq = pt->anchor_seq, .mem = c->mem,
		.verify = c->mem, .verify_anchor = pt->anchor, .verify_seq = pt->anchor_seq,
	};

	if (!pt->current_frame)
		return 0;
	/* Twice: the second decode meets the caches the first one filled. */
	decoder__decode_thread(c->d, &t, c->st);
	decoder__decode_thread(c->d, &t, c->st);
	name_thread(c, pt);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	const uint8_t *p = data, *end = data + size;
	uint8_t *bytes = (uint8_t *)scratch;
	struct py_interp in = { .pid = 1, .runtime = RUNTIME, .code_type = CODE_TYPE };
	struct decoder_cfg cfg = { .interp = &in, .code_cache_entries = 64 };
	struct frame_cache *fc = NULL;
	/* Small, so that the fuzzer reaches the eviction paths too. */
	struct frame_cache_budget budget = { .per_cache = 4096, .total = 8192 };
	struct fake_mem m;
	struct ctx c = { .st = &stack_buf, .mem = &m.base, .off = &in.off };
	size_t tlen, rlen = 0;
	uint8_t mode;

	if (!size)
		return 0;
	get(&p, end, &mode, 1);
	tlen = table(&p, end, mode, buf);
	if (py_offsets__from_debug(buf, tlen, &in.off))
		return 0;
	check_fits(&in.off);

	memset(scratch, 0, sizeof(scratch));
	fake_mem__init(&m, BASE, bytes, MEM_BYTES);
	build(&m, &in.off);
	if (mode & 4)
		rlen = build_record(&m, &in.off, bytes + MEM_BYTES, mode & 16, mode & 32, mode & 64);
	while (p < end) {
		uint16_t off;
		uint8_t n;

		get(&p, end, &off, sizeof(off));
		get(&p, end, &n, 1);
		off %= MEM_BYTES + REC_BYTES;
		if (n > MEM_BYTES + REC_BYTES - off)
			n = (uint8_t)(MEM_BYTES + REC_BYTES - off);
		get(&p, end, bytes + off, n);
	}

	cfg.live = &m.base;
	cfg.strs = strtab__new();
	if (!cfg.strs)
		return 0;
	if (!(mode & 8) && frame_cache__new(&in.off, 0, NULL, &budget, &fc))
		goto out;
	cfg.fcache = fc;
	if (decoder__new(&cfg, &c.d))
		goto out;
	py_threads__walk(&m.base, &in, on_thread, &c);
	if (rlen) {
		decoder__decode(c.d, bytes + MEM_BYTES, rlen, c.st);
		touch_native(c.st);
		decoder__decode(c.d, bytes + MEM_BYTES, rlen, c.st);
		touch_native(c.st);
	}
	decoder__free(c.d);
out:
	frame_cache__free(fc);
	strtab__free(cfg.strs);
	return 0;
}
