/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where CPython keeps what the profiler reads, for one interpreter version.
 *
 * 3.11 and 3.12 have no table of their own, so they come from built-in tables derived
 * from their headers. 3.13+ publish _Py_DebugOffsets at the start of _PyRuntime; its
 * own layout changes between minor versions (and between 3.15 pre-releases), so it is
 * parsed with a per-version layout chosen by its version field.
 *
 * Every offset is in bytes from the start of its struct. A field a version lacks is
 * PBP_OFF_NONE.
 */
#ifndef PBP_PY_OFFSETS_H
#define PBP_PY_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#define PBP_OFF_NONE UINT64_MAX

struct py_offsets {
	uint32_t version_hex;		/* PY_VERSION_HEX of the interpreter */
	uint8_t tested;			/* 0: derived from headers, never run live */
	uint8_t executable_tagged;	/* 3.14+: f_executable is a _PyStackRef; mask low bits */
	uint8_t free_threaded;		/* Py_GIL_DISABLED build: not supported */

	/* _PyRuntimeState */
	uint64_t runtime_interpreters_head;
	uint64_t runtime_size;		/* its size; 0: unknown (no debug offsets) */

	/* PyInterpreterState */
	uint64_t interp_threads_head;
	uint64_t interp_next;

	/*
	 * Where the GIL's state lives: inside _PyRuntime on 3.11 (runtime_gil), behind
	 * a pointer in PyInterpreterState from 3.12 on (interp_gil_ptr). A thread holds
	 * the GIL when gil_locked is non-zero and gil_last_holder names its state.
	 */
	uint64_t runtime_gil;
	uint64_t interp_gil_ptr;
	uint64_t gil_locked;		/* int, inside struct _gil_runtime_state */
	uint64_t gil_last_holder;	/* PyThreadState * */

	/* PyThreadState */
	uint64_t ts_size;		/* bytes worth copying: covers every field below */
	uint64_t ts_next;
	uint64_t ts_interp;
	uint64_t ts_thread_id;		/* pthread_t */
	uint64_t ts_native_thread_id;	/* kernel tid */
	uint64_t ts_cframe;		/* 3.11/3.12: _PyCFrame *cframe; else NONE */
	uint64_t cframe_current_frame;	/* 3.11/3.12: offset inside _PyCFrame */
	/* 3.11 only (NONE after): each activation of the eval loop keeps a _PyCFrame on
	 * the C stack, chained from tstate->cframe through previous down to the thread's
	 * own root_cframe; where an activation's frames end, is_entry (see decode_runs.c).
	 * 3.12+ mark the activation with an entry frame on the C stack instead. */
	uint64_t cframe_previous;
	uint64_t ts_root_cframe;	/* the embedded _PyCFrame root_cframe */
	uint64_t ts_current_frame;	/* 3.13+: _PyInterpreterFrame *current_frame */
	uint64_t ts_datastack_chunk;
	uint64_t ts_datastack_top;
	uint64_t ts_datastack_limit;
	uint64_t ts_base_frame;		/* 3.15+: address of the thread's base frame */
	uint64_t ts_last_profiled_frame;	/* 3.15+ */
	uint64_t ts_last_profiled_frame_seq;	/* 3.15+ */

	/* _PyStackChunk */
	uint64_t chunk_previous;
	uint64_t chunk_size;
	uint64_t chunk_top;		/* index (in PyObject* slots) of the saved top */
	uint64_t chunk_data;

	/* _PyInterpreterFrame */
	uint64_t fr_code;		/* f_code (3.11/3.12), f_executable (3.13+) */
	uint64_t fr_previous;
	uint64_t fr_instr;		/* prev_instr (3.11/3.12), instr_ptr (3.13+) */
	uint64_t fr_owner;		/* one byte */
	uint64_t fr_is_entry;		/* 3.11: bool, the first frame an activation ran */
	uint64_t fr_size;		/* fixed part, before localsplus */

	/* values of _PyInterpreterFrame.owner; 0xff where a version has no such owner */
	uint8_t owner_thread;
	uint8_t owner_generator;
	uint8_t owner_frame_object;
	uint8_t owner_cstack;		/* 3.12, 3.13: the eval loop's entry frames on the C
					 * stack (3.14 assigns its value nowhere) */
	uint8_t owner_interpreter;	/* 3.14+: those entry frames; 3.15+ also the
					 * thread's base frame, on the heap */

	/* PyObject */
	uint64_t ob_type;

	/* PyCodeObject */
	uint64_t co_filename;
	uint64_t co_name;
	uint64_t co_qualname;
	uint64_t co_firstlineno;	/* int */
	uint64_t co_linetable;		/* PyBytesObject * */
	uint64_t co_code_adaptive;	/* start of the bytecode inside the object */
	uint64_t co_size;		/* bytes from the object start to co_code_adaptive */
	uint64_t co_version;		/* 3.13+: uint32_t, a new value per code object */

	/* PyASCIIObject / PyCompactUnicodeObject */
	uint64_t unicode_length;
	uint64_t unicode_state;		/* 4-byte bitfield word */
	uint64_t unicode_ascii_data;	/* data of a compact ASCII string */
	uint64_t unicode_compact_data;	/* data of a compact non-ASCII string */
	uint8_t unicode_kind_shift;	/* bit position of 'kind' (3 bits) in state */
	uint8_t unicode_compact_bit;
	uint8_t unicode_ascii_bit;

	/* PyBytesObject */
	uint64_t bytes_size;		/* ob_size */
	uint64_t bytes_sval;

	/* For asyncio's tasks: a coroutine's own frame and state, what a suspended
	 * frame awaits (the top of its value stack: through a pointer from 3.14, an
	 * index into localsplus before), a frame's globals (3.11-3.13), a type's name, a
	 * set's table and an int's digits (3.12+). */
	uint64_t gen_iframe;
	uint64_t gen_frame_state;	/* int8_t */
	int8_t gen_awaiting_lo;		/* the states of a frame suspended in an await */
	int8_t gen_awaiting_hi;
	uint8_t stackref_tag_bits;	/* low bits of a _PyStackRef that are not address */
	uint8_t gen_awaited_depth;	/* the awaited object's slot below the stack top */
	uint64_t fr_stackpointer;
	uint64_t fr_stacktop;		/* int: localsplus slots in use */
	uint64_t fr_globals;
	uint64_t tp_name;		/* const char * */
	uint64_t set_table;
	uint64_t set_mask;
	uint64_t long_tag;		/* lv_tag: digit count << 3 | sign */
	uint64_t long_digits;

	/* An instance's attributes, for a threading.Thread's name (py_thread_name.h): a
	 * type's size, flags and, for a class, the keys its instances share; a dict's
	 * keys and values; a values array's first value; how instances keep their
	 * attributes. Facts of each version's headers, in every version. */
	uint64_t tp_basicsize;
	uint64_t tp_flags;
	uint64_t ht_cached_keys;
	uint64_t dict_keys;
	uint64_t dict_values;
	uint64_t dictvalues_values;
	uint8_t inst_layout;		/* enum py_inst_layout */
};

/* Where an instance of a class without __slots__ (Py_TPFLAGS_MANAGED_DICT) keeps its
 * attributes. */
enum py_inst_layout {
	/* 3.11: a values array (keys shared by the class) at 4 words before the object,
	 * or else a dict at 3 words before */
	PY_INST_311 = 1,
	/* 3.12: one word 3 words before: a dict, or a values array's address less one
	 * (bit 0 set) */
	PY_INST_312,
	/* 3.13+: with Py_TPFLAGS_INLINE_VALUES, a values array right after the object
	 * (tp_basicsize), while its valid byte is set; else a dict 3 words before */
	PY_INST_313,
};

/* Fills @out for a version without _Py_DebugOffsets (3.11, 3.12). -ENOTSUP otherwise. */
int py_offsets__builtin(uint32_t version_hex, struct py_offsets *out);

/*
 * Parses the _Py_DebugOffsets bytes at the start of _PyRuntime (3.13+). @buf holds
 * @len bytes read from the target. Returns -EINVAL if the cookie is wrong, -ENOTSUP
 * for a version or pre-release whose layout is unknown (never guesses), else 0.
 */
int py_offsets__from_debug(const uint8_t *buf, size_t len, struct py_offsets *out);

/* Bytes of _PyRuntime worth reading for py_offsets__from_debug(). */
#define PBP_DEBUG_OFFSETS_MAX 4096

/*
 * The most bytes of each struct that a reader copies before taking fields out of the
 * copy. py_offsets__from_debug() refuses a table with a field outside these, and the
 * readers bound every field by what they hold as well.
 */
#define PBP_CODE_COPY_MAX 512		/* PyCodeObject up to co_code_adaptive: code_cache */
#define PBP_FRAME_COPY_MAX 128		/* _PyInterpreterFrame header: decode, BPF */
#define PBP_TSTATE_COPY_MAX 2048	/* PyThreadState: pythreads, BPF */

/* Whether a frame with @owner is a shim, with no Python code of its own (3.12+: the
 * eval loop's entry frames; 3.15+ also the thread's base frame). */
static inline int py_offsets__shim_owner(const struct py_offsets *o, uint8_t owner)
{
	return (o->owner_cstack != 0xff && owner == o->owner_cstack) ||
	       (o->owner_interpreter != 0xff && owner == o->owner_interpreter);
}

#endif
