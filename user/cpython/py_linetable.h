/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython 3.11+ location table (co_linetable) parsing: which source line an
 * instruction belongs to. The table comes from another process, so the parser never
 * reads past @len and rejects malformed input instead of trusting it.
 */
#ifndef PBP_PY_LINETABLE_H
#define PBP_PY_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Sets *@line to the line of the instruction at code-unit index @instr (byte offset
 * / 2) of a code object whose co_firstlineno is @firstlineno, or to -1 if that
 * instruction has no line. Returns 0, -ENOENT if @instr lies past the table's end,
 * or -EINVAL if the table is malformed.
 */
int py_linetable__line(const uint8_t *tab, size_t len, int firstlineno, uint32_t instr,
		    int *line);

#endif
