/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where each CPython version keeps what the profiler reads.
 *
 * 3.11 and 3.12 publish nothing, so their offsets are built-in tables derived from
 * their headers (GCC, x86-64, default non-debug build). 3.13 and later put a
 * _Py_DebugOffsets table at the very start of _PyRuntime; that table's own layout
 * differs per minor version, so it is read through a per-version slot map chosen by
 * the table's version field. Facts the table does not carry but that are fixed by a
 * version's structs (datastack pointers after datastack_chunk, _PyStackChunk, frame
 * owner values, unicode state bits) come with that slot map. Pre-releases and
 * versions whose layout is not known here are refused instead of guessed, and every
 * value read from the target is bounds-checked before it is trusted.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cpython/py_offsets.h"

#define NONE			PBP_OFF_NONE
#define NO_OWNER		0xff
#define OBJ_SIZE_MAX		4096	/* sanity bound for object layouts */

#define PY_MAJOR(hex)		(((hex) >> 24) & 0xff)
#define PY_MINOR(hex)		(((hex) >> 16) & 0xff)
#define PY_LEVEL(hex)		(((hex) >> 4) & 0xf)
#define PY_LEVEL_FINAL		0xf

#define DEBUG_COOKIE		"xdebugpy"
#define DEBUG_COOKIE_LEN	8

/* ------------------------------------------------------------------------------ */
/* Built-in tables: 3.11 and 3.12 (no _Py_DebugOffsets).                          */
/* ------------------------------------------------------------------------------ */

/*
 * 3.11.x: checked against 3.11.2 (run live) and the 3.11.7 headers.
 * 3.12.x: derived from the 3.12.1 and 3.12.10 headers; run live against a 3.12.1 build.
 *
 * One row per field and a column per minor, so that what changed between them is in
 * one row. Neither has a per-code generation (co_version); fr_code is f_code and
 * fr_instr prev_instr; 3.11 keeps the GIL in the runtime (ceval.gil) where 3.12 has
 * each interpreter point to its own or the main one's; 3.11's PyASCIIObject still has
 * wstr, hence its longer unicode headers. Only 3.11 needs the _PyCFrame chain's link
 * and the frame's is_entry to tell the eval loop's activations apart (3.12 has an
 * entry frame on the C stack for that): _PyCFrame is { uint8_t use_tracing;
 * current_frame; previous }, and root_cframe is PyThreadState's last field, after
 * trace_info (a PyTraceInfo, 48 bytes), the datastack pointers and exc_state (16).
 */
#define BUILTIN_OFFSETS(X)						\
	/* field			3.11	3.12 */			\
	X(co_version,			NONE,	NONE)			\
	X(tested,			1,	1)			\
	X(executable_tagged,		0,	0)			\
	X(free_threaded,		0,	0)			\
	X(runtime_interpreters_head,	40,	40)			\
	X(interp_threads_head,		16,	72)			\
	X(interp_next,			0,	0)			\
	X(runtime_gil,			360,	NONE)			\
	X(interp_gil_ptr,		NONE,	384)			\
	X(gil_locked,			16,	16)			\
	X(gil_last_holder,		8,	8)			\
	X(ts_size,			360,	288)			\
	X(ts_next,			8,	8)			\
	X(ts_interp,			16,	16)			\
	X(ts_thread_id,			152,	136)			\
	X(ts_native_thread_id,		160,	144)			\
	X(ts_cframe,			56,	56)			\
	X(cframe_current_frame,		8,	0)			\
	X(cframe_previous,		16,	NONE)			\
	X(ts_root_cframe,		336,	NONE)			\
	X(ts_current_frame,		NONE,	NONE)			\
	X(ts_datastack_chunk,		296,	232)			\
	X(ts_datastack_top,		304,	240)			\
	X(ts_datastack_limit,		312,	248)			\
	X(ts_base_frame,		NONE,	NONE)			\
	X(ts_last_profiled_frame,	NONE,	NONE)			\
	X(ts_last_profiled_frame_seq,	NONE,	NONE)			\
	X(chunk_previous,		0,	0)			\
	X(chunk_size,			8,	8)			\
	X(chunk_top,			16,	16)			\
	X(chunk_data,			24,	24)			\
	X(fr_code,			32,	0)			\
	X(fr_previous,			48,	8)			\
	X(fr_instr,			56,	56)			\
	X(fr_owner,			69,	70)			\
	X(fr_is_entry,			68,	NONE)			\
	X(fr_size,			72,	72)			\
	X(owner_thread,			0,	0)			\
	X(owner_generator,		1,	1)			\
	X(owner_frame_object,		2,	2)			\
	X(owner_cstack,			NO_OWNER,	3)		\
	X(owner_interpreter,		NO_OWNER,	NO_OWNER)	\
	X(ob_type,			8,	8)			\
	X(co_filename,			112,	112)			\
	X(co_name,			120,	120)			\
	X(co_qualname,			128,	128)			\
	X(co_firstlineno,		72,	68)			\
	X(co_linetable,			136,	136)			\
	X(co_code_adaptive,		184,	192)			\
	X(co_size,			184,	192)			\
	X(unicode_length,		16,	16)			\
	X(unicode_state,		32,	32)			\
	X(unicode_ascii_data,		48,	40)			\
	X(unicode_compact_data,		72,	56)			\
	X(unicode_kind_shift,		2,	2)			\
	X(unicode_compact_bit,		5,	5)			\
	X(unicode_ascii_bit,		6,	6)			\
	X(bytes_size,			16,	16)			\
	X(bytes_sval,			32,	32)			\
	X(fr_stackpointer,		NONE,	NONE)			\
	INSTANCE_FACTS(X)						\
	ASYNCIO_FACTS(X)

/*
 * Instance attributes (a Thread's _name), facts of the headers of each version, 3.11
 * to 3.15, checked with offsetof against each one's own (internal) headers: PyTypeObject
 * keeps tp_basicsize and tp_flags where it always has, PyDictObject its ma_keys and
 * ma_values; PyHeapTypeObject grows (ht_cached_keys moves), and from 3.13 on a values
 * array starts with four bytes of its own (capacity, size, embedded, valid).
 */
#define INSTANCE_FACTS(X)						\
	/* field			3.11	3.12	3.13	3.14	3.15 */	\
	X(tp_basicsize,			32,	32,	32,	32,	32)	\
	X(tp_flags,			168,	168,	168,	168,	168)	\
	X(ht_cached_keys,		872,	880,	880,	880,	888)	\
	X(dict_keys,			32,	32,	32,	32,	32)	\
	X(dict_values,			40,	40,	40,	40,	40)	\
	X(dictvalues_values,		0,	0,	8,	8,	8)	\
	X(inst_layout,			PY_INST_311, PY_INST_312, PY_INST_313,		\
					PY_INST_313, PY_INST_313)

/*
 * asyncio's tasks on 3.11-3.13, which publish no table of them (py_asyncio.h): facts
 * of each version's headers, checked with offsetof by tests/unit/offsets_check.c. A
 * generator keeps its frame after its fields and its state in the byte before it;
 * a frame suspended in an await (FRAME_SUSPENDED, and from 3.13
 * FRAME_SUSPENDED_YIELD_FROM: -1 in each) has the awaited object on top of its
 * stack, stacktop slots into localsplus. An int's digits follow lv_tag from 3.12;
 * 3.11's tasks are named by a str, never an int.
 */
#define ASYNCIO_FACTS(X)						\
	/* field			3.11	3.12	3.13 */		\
	X(gen_iframe,			80,	72,	72)		\
	X(gen_frame_state,		75,	67,	67)		\
	X(gen_awaiting_lo,		-1,	-1,	-1)		\
	X(gen_awaiting_hi,		-1,	-1,	-1)		\
	X(gen_awaited_depth,		1,	1,	1)		\
	X(fr_stacktop,			64,	64,	64)		\
	X(fr_globals,			8,	24,	24)		\
	X(tp_name,			24,	24,	24)		\
	X(set_table,			40,	40,	40)		\
	X(set_mask,			32,	32,	32)		\
	X(long_tag,			NONE,	16,	16)		\
	X(long_digits,			NONE,	24,	24)

#define BUILTIN_311(field, v311, v312, ...)	.field = v311,
#define BUILTIN_312(field, v311, v312, ...)	.field = v312,

static const struct py_offsets builtin_311 = { BUILTIN_OFFSETS(BUILTIN_311) };
static const struct py_offsets builtin_312 = { BUILTIN_OFFSETS(BUILTIN_312) };

#define INSTANCE_313(field, v311, v312, v313, v314, v315)	.field = v313,
#define INSTANCE_314(field, v311, v312, v313, v314, v315)	.field = v314,
#define INSTANCE_315(field, v311, v312, v313, v314, v315)	.field = v315,

/* Only the instance facts are set in these: apply_layout takes them from here. */
static const struct py_offsets instance_313 = { INSTANCE_FACTS(INSTANCE_313) };
static const struct py_offsets instance_314 = { INSTANCE_FACTS(INSTANCE_314) };
static const struct py_offsets instance_315 = { INSTANCE_FACTS(INSTANCE_315) };

#define INSTANCE_COPY(field, ...)	o->field = f->field;

/* Every row of INSTANCE_FACTS, so that a new row is copied too. */
static void instance_facts(unsigned int minor, struct py_offsets *o)
{
	const struct py_offsets *f = minor == 13 ? &instance_313 :
				     minor == 14 ? &instance_314 : &instance_315;

	INSTANCE_FACTS(INSTANCE_COPY)
}

#define ASYNCIO_313(field, v311, v312, v313)	.field = v313,

/* 3.13 publishes none of what ASYNCIO_FACTS holds: only those are set here. */
static const struct py_offsets asyncio_313 = { ASYNCIO_FACTS(ASYNCIO_313) };

#define ASYNCIO_COPY(field, ...)	o->field = asyncio_313.field;

static void asyncio_facts_313(struct py_offsets *o)
{
	ASYNCIO_FACTS(ASYNCIO_COPY)
}

/* ------------------------------------------------------------------------------ */
/* _Py_DebugOffsets layouts: 3.13+.                                               */
/* ------------------------------------------------------------------------------ */

/*
 * Positions are indexes of 8-byte slots in _Py_DebugOffsets (slot 0 is the cookie,
 * slot 1 the version), so 0 marks a field that layout does not have.
 */
struct unicode_bits {
	uint8_t kind_shift;
	uint8_t compact_bit;
	uint8_t ascii_bit;
};

struct debug_layout {
	uint8_t minor;
	uint8_t slots;			/* length of the whole table, in slots */
	uint8_t tested;			/* run live against a real interpreter */

	uint8_t free_threaded;
	uint8_t rt_size;
	uint8_t rt_interpreters_head;
	uint8_t is_size;
	uint8_t is_next;
	uint8_t is_threads_head;
	uint8_t is_ceval_gil;
	uint8_t is_gil_state;		/* the interpreter's own _gil ... */
	uint8_t is_gil_locked;		/* ... and two of its fields, also from the */
	uint8_t is_gil_holder;		/* interpreter's start */

	uint8_t ts_size;
	uint8_t ts_next;
	uint8_t ts_interp;
	uint8_t ts_current_frame;
	uint8_t ts_base_frame;
	uint8_t ts_last_profiled_frame;
	uint8_t ts_last_profiled_frame_seq;
	uint8_t ts_thread_id;
	uint8_t ts_native_thread_id;
	uint8_t ts_datastack_chunk;

	uint8_t fr_size;
	uint8_t fr_previous;
	uint8_t fr_executable;
	uint8_t fr_instr_ptr;
	uint8_t fr_localsplus;
	uint8_t fr_owner;

	uint8_t co_size;
	uint8_t co_filename;
	uint8_t co_name;
	uint8_t co_qualname;
	uint8_t co_linetable;
	uint8_t co_firstlineno;
	uint8_t co_code_adaptive;

	uint8_t ob_type;
	uint8_t co_version;		/* byte offset: a fact, not a table slot */

	uint8_t bytes_ob_size;
	uint8_t bytes_ob_sval;

	uint8_t uni_state;
	uint8_t uni_length;
	uint8_t uni_ascii_size;
	uint8_t uni_compact_size;

	uint8_t fr_stackpointer;
	uint8_t tp_name;
	uint8_t set_table;
	uint8_t set_mask;
	uint8_t long_tag;
	uint8_t long_digits;
	uint8_t gen_iframe;
	uint8_t gen_frame_state;
	int8_t gen_awaiting_lo;		/* facts: FRAME_SUSPENDED_YIELD_FROM(_LOCKED) */
	int8_t gen_awaiting_hi;
	uint8_t stackref_tag_bits;	/* fact: Py_TAG_BITS */
	uint8_t gen_awaited_depth;	/* fact: _PyGen_yf's peek below the top */

	/* Facts of this version's structs that the table does not carry. */
	uint8_t executable_tagged;
	uint8_t datastack_top_after_chunk;	/* bytes after datastack_chunk */
	uint8_t datastack_limit_after_chunk;
	uint8_t compact_after_ascii;	/* sizeof(PyCompactUnicodeObject) - PyASCIIObject */
	uint8_t chunk_previous;
	uint8_t chunk_size;
	uint8_t chunk_top;
	uint8_t chunk_data;
	uint8_t owner_thread;
	uint8_t owner_generator;
	uint8_t owner_frame_object;
	uint8_t owner_cstack;
	uint8_t owner_interpreter;
	struct unicode_bits uni_bits;		/* default build */
	struct unicode_bits uni_bits_ft;	/* Py_GIL_DISABLED build */
};

/* interned:2 kind:3 compact:1 ascii:1 in one 32-bit word */
#define UNICODE_BITS_DEFAULT	{ .kind_shift = 2, .compact_bit = 5, .ascii_bit = 6 }
/* free-threaded 3.14+: interned is a whole byte, the bitfields follow it */
#define UNICODE_BITS_FT_BYTE	{ .kind_shift = 8, .compact_bit = 11, .ascii_bit = 12 }

/* _PyStackChunk: previous, size, top, data[] in every version so far */
#define STACK_CHUNK_FACTS			\
	.chunk_previous			= 0,	\
	.chunk_size			= 8,	\
	.chunk_top			= 16,	\
	.chunk_data			= 24,	\
	.datastack_top_after_chunk	= 8,	\
	.datastack_limit_after_chunk	= 16

/*
 * The layouts of 3.13 and later, one column per minor: a field that moved between
 * versions is one number in one row, and a new version is one more column (and one
 * more LAYOUT_ macro below). 0 is a field the version does not have. co_version is
 * a byte offset in PyCodeObject, not a slot; the rows from executable_tagged on are
 * facts of the structs that the table does not carry (compact_after_ascii is
 * utf8_length and utf8; 3.15 has no shim frames, so no owner_cstack).
 *
 * 3.13.x final (identical in 3.13.0 and 3.13.18). Sections, first slot: runtime 3,
 * interpreter 6, thread 19, frame 28, code 34, object 44, ..., bytes 64, unicode 67,
 * gc 71; 73 slots.
 *
 * 3.14.x final. Sections, first slot: runtime 3, interpreter 6, thread 22, frame 31,
 * code 39, object 50, ..., bytes 74, unicode 77, gc 81, gen 83, llist 87,
 * debugger 89; 95 slots.
 *
 * 3.15.x final, the layout with last_profiled_frame_seq (pre-releases before it
 * differ and are refused). Sections, first slot: runtime 3, interpreter 6,
 * thread 22, err_stackitem 38, frame 39, code 47, object 58, type 60, heap type 66,
 * ..., bytes 86, unicode 89, gc 94, gen 99, llist 103, debugger 105; 111 slots.
 */
#define DEBUG_LAYOUTS(X)						\
	/* field			3.13	3.14	3.15 */		\
	X(minor,			13,	14,	15)		\
	X(slots,			73,	95,	111)		\
	X(tested,			1,	1,	1)		\
	X(free_threaded,		2,	2,	2)		\
	X(rt_size,			3,	3,	3)		\
	X(rt_interpreters_head,		5,	5,	5)		\
	X(is_size,			6,	6,	6)		\
	X(is_next,			8,	8,	8)		\
	X(is_threads_head,		9,	9,	9)		\
	X(is_ceval_gil,			14,	15,	15)		\
	X(is_gil_state,			15,	16,	16)		\
	X(is_gil_locked,		17,	18,	18)		\
	X(is_gil_holder,		18,	19,	19)		\
	X(ts_size,			19,	22,	22)		\
	X(ts_next,			21,	24,	24)		\
	X(ts_interp,			22,	25,	25)		\
	X(ts_current_frame,		23,	26,	26)		\
	X(ts_base_frame,		0,	0,	27)		\
	X(ts_last_profiled_frame,	0,	0,	28)		\
	X(ts_last_profiled_frame_seq,	0,	0,	29)		\
	X(ts_thread_id,			24,	27,	30)		\
	X(ts_native_thread_id,		25,	28,	31)		\
	X(ts_datastack_chunk,		26,	29,	32)		\
	X(fr_size,			28,	31,	39)		\
	X(fr_previous,			29,	32,	40)		\
	X(fr_executable,		30,	33,	41)		\
	X(fr_instr_ptr,			31,	34,	42)		\
	X(fr_localsplus,		32,	35,	43)		\
	X(fr_owner,			33,	36,	44)		\
	X(co_size,			34,	39,	47)		\
	X(co_filename,			35,	40,	48)		\
	X(co_name,			36,	41,	49)		\
	X(co_qualname,			37,	42,	50)		\
	X(co_linetable,			38,	43,	51)		\
	X(co_firstlineno,		39,	44,	52)		\
	X(co_code_adaptive,		43,	48,	56)		\
	X(ob_type,			45,	51,	59)		\
	X(co_version,			92,	92,	92)		\
	X(bytes_ob_size,		65,	75,	87)		\
	X(bytes_ob_sval,		66,	76,	88)		\
	X(uni_state,			68,	78,	90)		\
	X(uni_length,			69,	79,	91)		\
	X(uni_ascii_size,		70,	80,	92)		\
	X(uni_compact_size,		0,	0,	93)		\
	X(fr_stackpointer,		0,	37,	45)		\
	X(tp_name,			0,	53,	61)		\
	X(set_table,			0,	64,	76)		\
	X(set_mask,			0,	65,	77)		\
	X(long_tag,			0,	72,	84)		\
	X(long_digits,			0,	73,	85)		\
	X(gen_iframe,			0,	85,	101)		\
	X(gen_frame_state,		0,	86,	102)		\
	X(gen_awaiting_lo,		0,	-1,	2)		\
	X(gen_awaiting_hi,		0,	-1,	3)		\
	X(stackref_tag_bits,		0,	3,	3)		\
	X(gen_awaited_depth,		0,	1,	2)		\
	X(executable_tagged,		0,	1,	1)		\
	X(compact_after_ascii,		16,	16,	0)		\
	X(owner_thread,			0,	0,	0)		\
	X(owner_generator,		1,	1,	1)		\
	X(owner_frame_object,		2,	2,	2)		\
	X(owner_cstack,			3,	4,	NO_OWNER)	\
	X(owner_interpreter,		NO_OWNER,	3,	3)

#define LAYOUT_313(field, v313, v314, v315)	.field = v313,
#define LAYOUT_314(field, v313, v314, v315)	.field = v314,
#define LAYOUT_315(field, v313, v314, v315)	.field = v315,

static const struct debug_layout layout_313 = {
	DEBUG_LAYOUTS(LAYOUT_313)
	STACK_CHUNK_FACTS,
	.uni_bits			= UNICODE_BITS_DEFAULT,
	.uni_bits_ft			= UNICODE_BITS_DEFAULT,
};

static const struct debug_layout layout_314 = {
	DEBUG_LAYOUTS(LAYOUT_314)
	STACK_CHUNK_FACTS,
	.uni_bits			= UNICODE_BITS_DEFAULT,
	.uni_bits_ft			= UNICODE_BITS_FT_BYTE,
};

static const struct debug_layout layout_315 = {
	DEBUG_LAYOUTS(LAYOUT_315)
	STACK_CHUNK_FACTS,
	.uni_bits			= UNICODE_BITS_DEFAULT,
	.uni_bits_ft			= UNICODE_BITS_FT_BYTE,
};

static const struct debug_layout *const debug_layouts[] = {
	&layout_313,
	&layout_314,
	&layout_315,
};
_Static_assert(sizeof(debug_layouts) / sizeof(debug_layouts[0]) == 3,
	       "a new layout needs its column of INSTANCE_FACTS and instance_facts()");

/* ------------------------------------------------------------------------------ */
/* Logic.                                                                         */
/* ------------------------------------------------------------------------------ */

/* A released interpreter of a given minor; alpha/beta/rc layouts are not frozen. */
static bool is_final(uint32_t version_hex, unsigned int minor)
{
	return PY_MAJOR(version_hex) == 3 && PY_MINOR(version_hex) == minor &&
	       PY_LEVEL(version_hex) == PY_LEVEL_FINAL;
}

int py_offsets__builtin(uint32_t version_hex, struct py_offsets *out)
{
	const struct py_offsets *t;

	if (!out)
		return -EINVAL;
	if (is_final(version_hex, 11))
		t = &builtin_311;
	else if (is_final(version_hex, 12))
		t = &builtin_312;
	else
		return -ENOTSUP;
	*out = *t;
	out->version_hex = version_hex;
	return 0;
}

static uint64_t slot(const uint8_t *buf, unsigned int idx)
{
	uint64_t v;

	memcpy(&v, buf + (size_t)idx * sizeof(v), sizeof(v));
	return v;
}

/* Value of an optional slot, NONE where the layout lacks the field. */
static uint64_t opt_slot(const uint8_t *buf, unsigned int idx)
{
	return idx ? slot(buf, idx) : NONE;
}

/* Field [@off, @off + @width) lies inside a struct of @size bytes. */
static bool fits(uint64_t off, uint64_t width, uint64_t size)
{
	return off != NONE && off < size && width <= size - off;
}

static bool fits_opt(uint64_t off, uint64_t width, uint64_t size)
{
	return off == NONE || fits(off, width, size);
}

/* Sizes of the structs, as the table states them, for bounds checks. */
struct struct_sizes {
	uint64_t runtime;
	uint64_t interp;
	uint64_t frame;
	uint64_t code;
};

/*
 * The values came from another process: refuse a table that points outside the
 * structs it describes, so that nothing downstream trusts a corrupt table. Where a
 * reader takes fields out of a bounded copy of a struct (PBP_*_COPY_MAX), the fields
 * must lie inside that copy too, not merely inside the struct as the table sizes it.
 */
static int sanity_check(const struct py_offsets *o, const struct struct_sizes *s)
{
	const uint64_t ptr = sizeof(uint64_t);
	const uint64_t ts = o->ts_size;

	if (!fits(o->runtime_interpreters_head, ptr, s->runtime) ||
	    !fits(o->interp_next, ptr, s->interp) ||
	    !fits(o->interp_threads_head, ptr, s->interp) ||
	    !fits(o->interp_gil_ptr, ptr, s->interp) || o->gil_locked > OBJ_SIZE_MAX ||
	    o->gil_last_holder > OBJ_SIZE_MAX)
		return -EINVAL;

	if (!fits(o->ts_next, ptr, ts) || !fits(o->ts_interp, ptr, ts) ||
	    !fits(o->ts_thread_id, ptr, ts) || !fits(o->ts_native_thread_id, ptr, ts) ||
	    !fits(o->ts_current_frame, ptr, ts) || !fits(o->ts_datastack_chunk, ptr, ts) ||
	    !fits(o->ts_datastack_top, ptr, ts) || !fits(o->ts_datastack_limit, ptr, ts) ||
	    !fits_opt(o->ts_base_frame, ptr, ts) ||
	    !fits_opt(o->ts_last_profiled_frame, ptr, ts) ||
	    !fits_opt(o->ts_last_profiled_frame_seq, ptr, ts))
		return -EINVAL;

	if (o->fr_size > s->frame || o->fr_size > PBP_FRAME_COPY_MAX ||
	    !fits(o->fr_code, ptr, o->fr_size) ||
	    !fits(o->fr_previous, ptr, o->fr_size) || !fits(o->fr_instr, ptr, o->fr_size) ||
	    !fits(o->fr_owner, 1, o->fr_size))
		return -EINVAL;

	/* The code object is read up to co_size; ob_size follows ob_type. */
	if (s->code > OBJ_SIZE_MAX || !fits(o->co_code_adaptive, 1, s->code) ||
	    o->co_size > PBP_CODE_COPY_MAX || !fits(o->ob_type, 2 * ptr, o->co_size) ||
	    !fits(o->co_filename, ptr, o->co_size) || !fits(o->co_name, ptr, o->co_size) ||
	    !fits(o->co_qualname, ptr, o->co_size) ||
	    !fits(o->co_linetable, ptr, o->co_size) ||
	    !fits(o->co_firstlineno, sizeof(int32_t), o->co_size) ||
	    !fits_opt(o->co_version, sizeof(uint32_t), o->co_size))
		return -EINVAL;

	/* The str's cached hash follows its length (the fingerprint before 3.13). */
	if (o->unicode_ascii_data > OBJ_SIZE_MAX ||
	    !fits(o->ob_type, ptr, o->unicode_ascii_data) ||
	    !fits(o->unicode_length, 2 * ptr, o->unicode_ascii_data) ||
	    !fits(o->unicode_state, sizeof(uint32_t), o->unicode_ascii_data) ||
	    o->unicode_compact_data <= o->unicode_ascii_data ||
	    o->unicode_compact_data > OBJ_SIZE_MAX)
		return -EINVAL;

	if (o->bytes_sval > OBJ_SIZE_MAX || !fits(o->bytes_size, ptr, o->bytes_sval))
		return -EINVAL;

	if (!fits_opt(o->fr_stackpointer, ptr, o->fr_size) ||
	    !fits_opt(o->fr_stacktop, sizeof(int32_t), o->fr_size) ||
	    !fits_opt(o->fr_globals, ptr, o->fr_size) ||
	    !fits_opt(o->tp_name, ptr, OBJ_SIZE_MAX) || !fits_opt(o->set_table, ptr, OBJ_SIZE_MAX) ||
	    !fits_opt(o->set_mask, ptr, OBJ_SIZE_MAX) || !fits_opt(o->long_tag, ptr, OBJ_SIZE_MAX) ||
	    !fits_opt(o->long_digits, sizeof(uint32_t), OBJ_SIZE_MAX) ||
	    !fits_opt(o->gen_frame_state, 1, OBJ_SIZE_MAX) ||
	    !fits_opt(o->gen_iframe, o->fr_size, OBJ_SIZE_MAX))
		return -EINVAL;
	return 0;
}

static int apply_layout(const struct debug_layout *l, const uint8_t *buf, uint32_t version,
			struct py_offsets *out)
{
	const struct struct_sizes sizes = {
		.runtime = slot(buf, l->rt_size),
		.interp = slot(buf, l->is_size),
		.frame = slot(buf, l->fr_size),
		.code = slot(buf, l->co_size),
	};
	uint64_t ft = slot(buf, l->free_threaded);
	uint64_t ts_struct = slot(buf, l->ts_size);
	uint64_t chunk = slot(buf, l->ts_datastack_chunk);
	uint64_t ascii_size = slot(buf, l->uni_ascii_size);
	struct py_offsets o;
	int ret;

	if (ft > 1 || chunk > PBP_TSTATE_COPY_MAX)
		return -EINVAL;

	memset(&o, 0, sizeof(o));
	o.version_hex = version;
	o.runtime_size = sizes.runtime;
	o.tested = l->tested;
	o.executable_tagged = l->executable_tagged;
	o.free_threaded = (uint8_t)ft;

	o.runtime_interpreters_head = slot(buf, l->rt_interpreters_head);
	o.interp_threads_head = slot(buf, l->is_threads_head);
	o.interp_next = slot(buf, l->is_next);
	o.runtime_gil = NONE;
	o.interp_gil_ptr = slot(buf, l->is_ceval_gil);
	/* The table names fields of the interpreter's embedded _gil; the pointer may
	 * lead to another interpreter's (a shared GIL), so keep them relative. */
	o.gil_locked = slot(buf, l->is_gil_locked) - slot(buf, l->is_gil_state);
	o.gil_last_holder = slot(buf, l->is_gil_holder) - slot(buf, l->is_gil_state);

	/*
	 * Copy the whole public PyThreadState, which holds every field we read; a
	 * larger one is cut at PBP_TSTATE_COPY_MAX, and sanity_check() then insists
	 * that every field still fits.
	 */
	o.ts_size = ts_struct < PBP_TSTATE_COPY_MAX ? ts_struct : PBP_TSTATE_COPY_MAX;
	o.ts_next = slot(buf, l->ts_next);
	o.ts_interp = slot(buf, l->ts_interp);
	o.ts_thread_id = slot(buf, l->ts_thread_id);
	o.ts_native_thread_id = slot(buf, l->ts_native_thread_id);
	o.ts_cframe = NONE;
	o.cframe_current_frame = NONE;
	o.cframe_previous = NONE;
	o.ts_root_cframe = NONE;
	o.ts_current_frame = slot(buf, l->ts_current_frame);
	o.ts_datastack_chunk = chunk;
	o.ts_datastack_top = chunk + l->datastack_top_after_chunk;
	o.ts_datastack_limit = chunk + l->datastack_limit_after_chunk;
	o.ts_base_frame = opt_slot(buf, l->ts_base_frame);
	o.ts_last_profiled_frame = opt_slot(buf, l->ts_last_profiled_frame);
	o.ts_last_profiled_frame_seq = opt_slot(buf, l->ts_last_profiled_frame_seq);

	o.chunk_previous = l->chunk_previous;
	o.chunk_size = l->chunk_size;
	o.chunk_top = l->chunk_top;
	o.chunk_data = l->chunk_data;

	o.fr_code = slot(buf, l->fr_executable);
	o.fr_previous = slot(buf, l->fr_previous);
	o.fr_instr = slot(buf, l->fr_instr_ptr);
	o.fr_owner = slot(buf, l->fr_owner);
	o.fr_is_entry = NONE;
	o.fr_size = slot(buf, l->fr_localsplus);

	o.owner_thread = l->owner_thread;
	o.owner_generator = l->owner_generator;
	o.owner_frame_object = l->owner_frame_object;
	o.owner_cstack = l->owner_cstack;
	o.owner_interpreter = l->owner_interpreter;

	o.ob_type = slot(buf, l->ob_type);

	o.co_filename = slot(buf, l->co_filename);
	o.co_name = slot(buf, l->co_name);
	o.co_qualname = slot(buf, l->co_qualname);
	o.co_firstlineno = slot(buf, l->co_firstlineno);
	o.co_linetable = slot(buf, l->co_linetable);
	o.co_code_adaptive = slot(buf, l->co_code_adaptive);
	o.co_size = o.co_code_adaptive;
	o.co_version = l->co_version;

	o.fr_stackpointer = opt_slot(buf, l->fr_stackpointer);
	o.tp_name = opt_slot(buf, l->tp_name);
	o.set_table = opt_slot(buf, l->set_table);
	o.set_mask = opt_slot(buf, l->set_mask);
	o.long_tag = opt_slot(buf, l->long_tag);
	o.long_digits = opt_slot(buf, l->long_digits);
	o.gen_iframe = opt_slot(buf, l->gen_iframe);
	o.gen_frame_state = opt_slot(buf, l->gen_frame_state);
	o.gen_awaiting_lo = l->gen_awaiting_lo;
	o.gen_awaiting_hi = l->gen_awaiting_hi;
	o.stackref_tag_bits = l->stackref_tag_bits;
	o.gen_awaited_depth = l->gen_awaited_depth;
	o.fr_stacktop = o.fr_globals = NONE;
	if (l->minor == 13)
		asyncio_facts_313(&o);

	o.unicode_length = slot(buf, l->uni_length);
	o.unicode_state = slot(buf, l->uni_state);
	o.unicode_ascii_data = ascii_size;
	o.unicode_compact_data = l->uni_compact_size ? slot(buf, l->uni_compact_size) :
			ascii_size + l->compact_after_ascii;
	if (ft) {
		o.unicode_kind_shift = l->uni_bits_ft.kind_shift;
		o.unicode_compact_bit = l->uni_bits_ft.compact_bit;
		o.unicode_ascii_bit = l->uni_bits_ft.ascii_bit;
	} else {
		o.unicode_kind_shift = l->uni_bits.kind_shift;
		o.unicode_compact_bit = l->uni_bits.compact_bit;
		o.unicode_ascii_bit = l->uni_bits.ascii_bit;
	}

	o.bytes_size = slot(buf, l->bytes_ob_size);
	o.bytes_sval = slot(buf, l->bytes_ob_sval);
	instance_facts(l->minor, &o);

	ret = sanity_check(&o, &sizes);
	if (ret)
		return ret;
	*out = o;
	return 0;
}

int py_offsets__from_debug(const uint8_t *buf, size_t len, struct py_offsets *out)
{
	const struct debug_layout *l = NULL;
	uint64_t version;
	size_t i;

	if (!buf || !out)
		return -EINVAL;
	if (len < DEBUG_COOKIE_LEN || memcmp(buf, DEBUG_COOKIE, DEBUG_COOKIE_LEN))
		return -EINVAL;
	if (len < 2 * sizeof(uint64_t))
		return -EINVAL;
	version = slot(buf, 1);
	if (version > UINT32_MAX)
		return -ENOTSUP;

	for (i = 0; i < sizeof(debug_layouts) / sizeof(debug_layouts[0]); i++) {
		if (is_final((uint32_t)version, debug_layouts[i]->minor)) {
			l = debug_layouts[i];
			break;
		}
	}
	if (!l)
		return -ENOTSUP;
	if (len < (size_t)l->slots * sizeof(uint64_t))
		return -EINVAL;
	return apply_layout(l, buf, (uint32_t)version, out);
}
