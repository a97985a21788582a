/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Interpreter frames and the code object they run, laid out in a fake_mem at the
 * offsets of a real layout: 3.11 and 3.12 from the built-in tables, 3.13 on from their
 * real _Py_DebugOffsets (debug_tables.h).
 */
#ifndef PBP_TEST_FAKE_FRAMES_H
#define PBP_TEST_FAKE_FRAMES_H

#include <stdint.h>

#include "check.h"
#include "debug_tables.h"
#include "fake_mem.h"
#include "fake_py.h"
#include "cpython/py_offsets.h"

#define FAKE_FRAMES_UNITS 4	/* code units of the fake code object */

static inline struct py_offsets fake_frames__offsets(unsigned int minor)
{
	struct py_offsets o;

	if (minor == 11)
		CHECK(py_offsets__builtin(0x030b02f0, &o) == 0);
	else if (minor == 12)
		CHECK(py_offsets__builtin(0x030c01f0, &o) == 0);
	else
		CHECK(py_offsets__from_debug((const uint8_t *)debug_tables[minor - 13].slots,
					     debug_tables[minor - 13].nslots * 8, &o) == 0);
	return o;
}

/* A frame at @at running @code (0: a shim) from its first instruction. */
static inline void fake_frames__put(struct fake_mem *m, const struct py_offsets *o, uint64_t at,
				    uint64_t code, uint64_t previous, uint8_t owner,
				    uint8_t is_entry)
{
	fake_mem__put_u64(m, at + o->fr_code, code);
	fake_mem__put_u64(m, at + o->fr_instr, code ? code + o->co_code_adaptive : 0);
	fake_mem__put_u64(m, at + o->fr_previous, previous);
	fake_mem__put(m, at + o->fr_owner, &owner, 1);
	if (o->fr_is_entry != PBP_OFF_NONE)
		fake_mem__put(m, at + o->fr_is_entry, &is_entry, 1);
}

/* One code object "f" of @file at @code, its strings in 0x200 bytes at @strs and its
 * line table at @linetable. */
static inline void fake_frames__code(struct fake_mem *m, const struct py_offsets *o,
				     uint64_t code, uint64_t strs, uint64_t linetable,
				     const char *file)
{
	static const uint8_t lt[] = { 0x80 | 13 << 3 | (FAKE_FRAMES_UNITS - 1), 0x00 };
	const struct fake_code c = {
		.units = FAKE_FRAMES_UNITS, .firstlineno = 3, .version = 7,
		.qualname = strs, .filename = strs + 0x100, .name = strs, .linetable = linetable,
	};

	fake_py__str(m, o, strs, "f");
	fake_py__str(m, o, strs + 0x100, file);
	fake_py__bytes(m, o, linetable, lt, sizeof(lt));
	fake_py__code(m, o, code, &c);
}

#endif
