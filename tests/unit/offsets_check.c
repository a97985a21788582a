/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Proves user/cpython/py_offsets.c against one CPython version's own headers.
 *
 * Built once per interpreter version with that version's internal headers
 * (-DPy_BUILD_CORE) and linked with that version's libpython. Every field that
 * py_offsets.c returns is compared with offsetof(), enum values and sizes taken from
 * the real structs. 3.11 and 3.12 go through py_offsets__builtin(); 3.13+ feed
 * py_offsets__from_debug() the _Py_DebugOffsets bytes at &_PyRuntime of this very
 * process, which the runtime initializes statically. For 3.13+ the real table is
 * also mutated (bad cookie, pre-release, unknown minor) and truncated at the edge
 * of a guard page to prove the parser refuses rather than guesses or over-reads.
 *
 * One line per mismatch, a summary line, exit status 1 on any mismatch.
 * "--print" also lists every returned field as "field NAME VALUE".
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#if PY_VERSION_HEX >= 0x030e0000
#include "internal/pycore_interpframe_structs.h"
#else
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030e0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030d0000
#include "internal/pycore_genobject.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../user/cpython/py_offsets.h"

#define NONE PBP_OFF_NONE

static unsigned int checked;
static unsigned int failed;

static void check(const char *what, uint64_t got, uint64_t want)
{
	checked++;
	if (got == want)
		return;
	failed++;
	printf("MISMATCH %s: py_offsets.c says %llu (0x%llx), headers say %llu (0x%llx)\n",
	       what, (unsigned long long)got, (unsigned long long)got,
	       (unsigned long long)want, (unsigned long long)want);
}

static void expect(const char *what, int ok)
{
	checked++;
	if (ok)
		return;
	failed++;
	printf("FAILED %s\n", what);
}

#define CHECK(field, want) check(#field, o->field, (uint64_t)(want))

/* Bit position of the lowest set bit of the 4-byte state word after @set ran. */
static int state_bit(const PyASCIIObject *a)
{
	uint32_t w;

	memcpy(&w, (const char *)a + offsetof(PyASCIIObject, state), sizeof(w));
	return w ? __builtin_ctz(w) : -1;
}

static void check_unicode_bits(const struct py_offsets *o)
{
	PyASCIIObject a;

	memset(&a, 0, sizeof(a));
	a.state.kind = 7;
	CHECK(unicode_kind_shift, state_bit(&a));
	memset(&a, 0, sizeof(a));
	a.state.compact = 1;
	CHECK(unicode_compact_bit, state_bit(&a));
	memset(&a, 0, sizeof(a));
	a.state.ascii = 1;
	CHECK(unicode_ascii_bit, state_bit(&a));
}

/* What asyncio's tasks are read through: 3.11-3.13 from facts, 3.14+ from the table. */
static void check_asyncio(const struct py_offsets *o)
{
	CHECK(gen_iframe, offsetof(PyGenObject, gi_iframe));
	CHECK(gen_frame_state, offsetof(PyGenObject, gi_frame_state));
	expect("gi_frame_state is one byte", sizeof(((PyGenObject *)0)->gi_frame_state) == 1);
	CHECK(tp_name, offsetof(PyTypeObject, tp_name));
	CHECK(set_table, offsetof(PySetObject, table));
	CHECK(set_mask, offsetof(PySetObject, mask));
#if PY_VERSION_HEX >= 0x030c0000
	CHECK(long_tag, offsetof(PyLongObject, long_value.lv_tag));
	CHECK(long_digits, offsetof(PyLongObject, long_value.ob_digit));
#else
	CHECK(long_tag, NONE);
	CHECK(long_digits, NONE);
#endif
#if PY_VERSION_HEX >= 0x030e0000
	CHECK(fr_stackpointer, offsetof(_PyInterpreterFrame, stackpointer));
	CHECK(fr_stacktop, NONE);
	CHECK(fr_globals, NONE);
#else
	CHECK(fr_stackpointer, NONE);
	CHECK(fr_stacktop, offsetof(_PyInterpreterFrame, stacktop));
	expect("stacktop is an int", sizeof(((_PyInterpreterFrame *)0)->stacktop) == sizeof(int));
	CHECK(fr_globals, offsetof(_PyInterpreterFrame, f_globals));
#endif
#if PY_VERSION_HEX >= 0x030d0000
	CHECK(gen_awaiting_lo, (int8_t)FRAME_SUSPENDED_YIELD_FROM);
#else
	CHECK(gen_awaiting_lo, (int8_t)FRAME_SUSPENDED);
#endif
#if PY_VERSION_HEX >= 0x030f0000
	CHECK(gen_awaiting_hi, (int8_t)FRAME_SUSPENDED_YIELD_FROM_LOCKED);
#else
	CHECK(gen_awaiting_hi, (int8_t)o->gen_awaiting_lo);
#endif
}

static void check_all(const struct py_offsets *o)
{
	uint64_t end = 0;

	CHECK(version_hex, PY_VERSION_HEX);
	CHECK(tested, 1);	/* every table is run live by the suite */
	CHECK(executable_tagged, PY_VERSION_HEX >= 0x030e0000);
#ifdef Py_GIL_DISABLED
	CHECK(free_threaded, 1);
#else
	CHECK(free_threaded, 0);
#endif

	CHECK(runtime_interpreters_head, offsetof(_PyRuntimeState, interpreters.head));
	CHECK(interp_threads_head, offsetof(PyInterpreterState, threads.head));
	CHECK(interp_next, offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX < 0x030c0000
	CHECK(runtime_gil, offsetof(_PyRuntimeState, ceval.gil));
	CHECK(interp_gil_ptr, NONE);
#else
	CHECK(runtime_gil, NONE);
	CHECK(interp_gil_ptr, offsetof(PyInterpreterState, ceval.gil));
#endif
	CHECK(gil_locked, offsetof(struct _gil_runtime_state, locked));
	CHECK(gil_last_holder, offsetof(struct _gil_runtime_state, last_holder));

	CHECK(ts_size, sizeof(PyThreadState));
	CHECK(ts_next, offsetof(PyThreadState, next));
	CHECK(ts_interp, offsetof(PyThreadState, interp));
	CHECK(ts_thread_id, offsetof(PyThreadState, thread_id));
	CHECK(ts_native_thread_id, offsetof(PyThreadState, native_thread_id));
#if PY_VERSION_HEX < 0x030c0000
	CHECK(cframe_previous, offsetof(_PyCFrame, previous));
	CHECK(ts_root_cframe, offsetof(PyThreadState, root_cframe));
	CHECK(fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
	expect("is_entry is one byte", sizeof(((_PyInterpreterFrame *)0)->is_entry) == 1);
#else
	CHECK(cframe_previous, NONE);
	CHECK(ts_root_cframe, NONE);
	CHECK(fr_is_entry, NONE);
#endif
#if PY_VERSION_HEX < 0x030d0000
	CHECK(ts_cframe, offsetof(PyThreadState, cframe));
	CHECK(cframe_current_frame, offsetof(_PyCFrame, current_frame));
	CHECK(ts_current_frame, NONE);
#else
	CHECK(ts_cframe, NONE);
	CHECK(cframe_current_frame, NONE);
	CHECK(ts_current_frame, offsetof(PyThreadState, current_frame));
#endif
	CHECK(ts_datastack_chunk, offsetof(PyThreadState, datastack_chunk));
	CHECK(ts_datastack_top, offsetof(PyThreadState, datastack_top));
	CHECK(ts_datastack_limit, offsetof(PyThreadState, datastack_limit));
#if PY_VERSION_HEX >= 0x030f0000
	CHECK(ts_base_frame, offsetof(PyThreadState, base_frame));
	CHECK(ts_last_profiled_frame, offsetof(PyThreadState, last_profiled_frame));
	CHECK(ts_last_profiled_frame_seq, offsetof(PyThreadState, last_profiled_frame_seq));
#else
	CHECK(ts_base_frame, NONE);
	CHECK(ts_last_profiled_frame, NONE);
	CHECK(ts_last_profiled_frame_seq, NONE);
#endif

	/* ts_size must cover every thread-state field the profiler reads */
	{
		const uint64_t f[] = {
			o->ts_next, o->ts_interp, o->ts_thread_id, o->ts_native_thread_id,
			o->ts_cframe, o->ts_current_frame, o->ts_datastack_chunk,
			o->ts_datastack_top, o->ts_datastack_limit, o->ts_base_frame,
			o->ts_last_profiled_frame, o->ts_last_profiled_frame_seq,
		};

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			if (f[i] != NONE && f[i] + 8 > end)
				end = f[i] + 8;
		expect("ts_size covers every thread-state field", o->ts_size >= end);
		expect("ts_size <= 2048", o->ts_size <= 2048);
	}

	CHECK(chunk_previous, offsetof(_PyStackChunk, previous));
	CHECK(chunk_size, offsetof(_PyStackChunk, size));
	CHECK(chunk_top, offsetof(_PyStackChunk, top));
	CHECK(chunk_data, offsetof(_PyStackChunk, data));

#if PY_VERSION_HEX >= 0x030d0000
	CHECK(fr_code, offsetof(_PyInterpreterFrame, f_executable));
	CHECK(fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
#else
	CHECK(fr_code, offsetof(_PyInterpreterFrame, f_code));
	CHECK(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
#endif
	CHECK(fr_previous, offsetof(_PyInterpreterFrame, previous));
	CHECK(fr_owner, offsetof(_PyInterpreterFrame, owner));
	CHECK(fr_size, offsetof(_PyInterpreterFrame, localsplus));
	expect("owner is one byte", sizeof(((_PyInterpreterFrame *)0)->owner) == 1);

	CHECK(owner_thread, FRAME_OWNED_BY_THREAD);
	CHECK(owner_generator, FRAME_OWNED_BY_GENERATOR);
	CHECK(owner_frame_object, FRAME_OWNED_BY_FRAME_OBJECT);
	/* 3.12-3.14 have shim frames; 3.15 dropped them */
#if PY_VERSION_HEX >= 0x030c0000 && PY_VERSION_HEX < 0x030f0000
	CHECK(owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
	CHECK(owner_cstack, 0xff);
#endif
#if PY_VERSION_HEX >= 0x030e0000
	CHECK(owner_interpreter, FRAME_OWNED_BY_INTERPRETER);
#else
	CHECK(owner_interpreter, 0xff);
#endif

	CHECK(ob_type, offsetof(PyObject, ob_type));

	CHECK(co_filename, offsetof(PyCodeObject, co_filename));
	CHECK(co_name, offsetof(PyCodeObject, co_name));
	CHECK(co_qualname, offsetof(PyCodeObject, co_qualname));
	CHECK(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	CHECK(co_linetable, offsetof(PyCodeObject, co_linetable));
	CHECK(co_code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
	CHECK(co_size, offsetof(PyCodeObject, co_code_adaptive));
#if PY_VERSION_HEX >= 0x030d0000
	CHECK(co_version, offsetof(PyCodeObject, co_version));
#else
	CHECK(co_version, PBP_OFF_NONE);
#endif

	CHECK(unicode_length, offsetof(PyASCIIObject, length));
	CHECK(unicode_state, offsetof(PyASCIIObject, state));
	CHECK(unicode_ascii_data, sizeof(PyASCIIObject));
	CHECK(unicode_compact_data, sizeof(PyCompactUnicodeObject));
	check_unicode_bits(o);

	CHECK(bytes_size, offsetof(PyVarObject, ob_size));
	CHECK(bytes_sval, offsetof(PyBytesObject, ob_sval));
	check_asyncio(o);
}

#define FIELDS(X)							\
	X(version_hex) X(tested) X(executable_tagged) X(free_threaded)	\
	X(runtime_interpreters_head) X(interp_threads_head) X(interp_next) \
	X(ts_size) X(ts_next) X(ts_interp) X(ts_thread_id)		\
	X(ts_native_thread_id) X(ts_cframe) X(cframe_current_frame)	\
	X(cframe_previous) X(ts_root_cframe) X(fr_is_entry)		\
	X(ts_current_frame) X(ts_datastack_chunk) X(ts_datastack_top)	\
	X(ts_datastack_limit) X(ts_base_frame) X(ts_last_profiled_frame) \
	X(ts_last_profiled_frame_seq) X(chunk_previous) X(chunk_size)	\
	X(chunk_top) X(chunk_data) X(fr_code) X(fr_previous) X(fr_instr) \
	X(fr_owner) X(fr_size) X(owner_thread) X(owner_generator)	\
	X(owner_frame_object) X(owner_cstack) X(owner_interpreter)	\
	X(ob_type) X(co_filename) X(co_name) X(co_qualname)		\
	X(co_firstlineno) X(co_linetable) X(co_code_adaptive) X(co_size) X(co_version) \
	X(unicode_length) X(unicode_state) X(unicode_ascii_data)	\
	X(unicode_compact_data) X(unicode_kind_shift) X(unicode_compact_bit) \
	X(unicode_ascii_bit) X(bytes_size) X(bytes_sval)

static void print_fields(const struct py_offsets *o)
{
#define PRINT_FIELD(f) printf("field %s %llu\n", #f, (unsigned long long)o->f);
	FIELDS(PRINT_FIELD)
#undef PRINT_FIELD
}

#if PY_VERSION_HEX >= 0x030d0000
/*
 * Places @len bytes of @src so that they end exactly at a PROT_NONE page: any read
 * past @len faults.
 */
static const uint8_t *at_guard(uint8_t *area, size_t page, const uint8_t *src, size_t len)
{
	uint8_t *dst = area + page - len;

	memcpy(dst, src, len);
	return dst;
}

static uint64_t rnd(void)
{
	static uint64_t s = 0x2545f4914f6cdd1dULL;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

/*
 * The real table with a few slots (after cookie and version) overwritten by random
 * values: the parser may accept or refuse, but must not fault, and what it accepts
 * must keep every field inside the structs it copies.
 */
static void fuzz_real_table(uint8_t *area, size_t page, const uint8_t *raw, size_t full)
{
	uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	unsigned int accepted = 0, bad = 0;
	size_t slots = full / 8;

	for (int i = 0; i < 100000; i++) {
		struct py_offsets o;
		int n = 1 + (int)(rnd() % 3);

		memcpy(buf, raw, full);
		while (n--) {
			uint64_t x = (rnd() & 3) ? rnd() % 4096 : rnd();

			memcpy(buf + 8 * (2 + rnd() % (slots - 2)), &x, 8);
		}
		if (py_offsets__from_debug(at_guard(area, page, buf, full), full, &o))
			continue;
		accepted++;
		if (o.ts_size > 2048 || o.ts_current_frame + 8 > o.ts_size ||
		    o.ts_datastack_limit + 8 > o.ts_size || o.ts_next + 8 > o.ts_size ||
		    o.ts_native_thread_id + 8 > o.ts_size || o.fr_owner >= o.fr_size ||
		    o.fr_instr + 8 > o.fr_size || o.fr_code + 8 > o.fr_size ||
		    o.co_firstlineno + 4 > o.co_size || o.free_threaded > 1)
			bad++;
	}
	checked++;
	if (bad) {
		failed++;
		printf("FAILED %u mutated tables accepted with fields outside their structs\n",
		       bad);
	}
	printf("mutated real tables: %u of 100000 accepted, all consistent: %s\n", accepted,
	       bad ? "no" : "yes");
}

static void check_debug_table(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t raw[PBP_DEBUG_OFFSETS_MAX];
	uint8_t bad[PBP_DEBUG_OFFSETS_MAX];
	size_t full = sizeof(_Py_DebugOffsets);
	struct py_offsets o;
	uint64_t version;
	uint8_t *area;
	size_t len;
	int ret;

	expect("_Py_DebugOffsets sits at the start of _PyRuntime",
	       offsetof(_PyRuntimeState, debug_offsets) == 0);
	expect("_Py_DebugOffsets fits PBP_DEBUG_OFFSETS_MAX", full <= sizeof(raw));
	if (full > sizeof(raw) || page < sizeof(raw))
		return;
	memcpy(raw, &_PyRuntime, sizeof(raw));

	area = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (area == MAP_FAILED || mprotect(area + page, page, PROT_NONE)) {
		expect("guard page set up", 0);
		return;
	}

	/* The real table, exactly as long as the struct, ending at the guard page. */
	ret = py_offsets__from_debug(at_guard(area, page, raw, full), full, &o);
	expect("py_offsets__from_debug(real table) == 0", ret == 0);

	/* Every shorter prefix is refused and never read past its end. */
	for (len = 0; len < full; len++) {
		ret = py_offsets__from_debug(at_guard(area, page, raw, len), len, &o);
		if (ret >= 0) {
			printf("FAILED truncated table of %zu bytes accepted\n", len);
			failed++;
		}
	}
	checked++;

	memcpy(bad, raw, sizeof(bad));
	bad[0] ^= 0x20;
	expect("bad cookie -> -EINVAL", py_offsets__from_debug(bad, full, &o) == -EINVAL);

	/* same minor, release candidate: layout not known, refused */
	memcpy(bad, raw, sizeof(bad));
	version = (PY_VERSION_HEX & ~0xffULL) | 0xc1;
	memcpy(bad + 8, &version, sizeof(version));
	expect("pre-release -> -ENOTSUP", py_offsets__from_debug(bad, full, &o) == -ENOTSUP);

	memcpy(bad, raw, sizeof(bad));
	version = 0x031000f0;
	memcpy(bad + 8, &version, sizeof(version));
	expect("3.16 -> -ENOTSUP", py_offsets__from_debug(bad, full, &o) == -ENOTSUP);

	fuzz_real_table(area, page, raw, full);

	ret = py_offsets__builtin(PY_VERSION_HEX, &o);
	expect("py_offsets__builtin(own version) -> -ENOTSUP", ret == -ENOTSUP);

	ret = py_offsets__from_debug(raw, sizeof(raw), &o);
	expect("py_offsets__from_debug(real table, 4096 bytes) == 0", ret == 0);
	munmap(area, 2 * page);
}
#endif

int main(int argc, char **argv)
{
	int print = argc > 1 && !strcmp(argv[1], "--print");
	struct py_offsets o;
	int ret;

	memset(&o, 0xa5, sizeof(o));
#if PY_VERSION_HEX >= 0x030d0000
	check_debug_table();
	ret = py_offsets__from_debug((const uint8_t *)&_PyRuntime, sizeof(_Py_DebugOffsets), &o);
#else
	expect("pre-release of this minor -> -ENOTSUP",
	       py_offsets__builtin((PY_VERSION_HEX & ~0xffU) | 0xb2, &o) == -ENOTSUP);
	ret = py_offsets__builtin(PY_VERSION_HEX, &o);
#endif
	expect("py_offsets.c accepts this interpreter", ret == 0);
	if (ret == 0) {
		check_all(&o);
		if (print)
			print_fields(&o);
	}
	printf("offsets_check %s%s: %u checks, %u mismatches\n", PY_VERSION,
#ifdef Py_GIL_DISABLED
	       " (free-threaded)",
#else
	       "",
#endif
	       checked, failed);
	return failed ? 1 : 0;
}
