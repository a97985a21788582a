/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Real _Py_DebugOffsets tables, as the 8-byte slots at the start of _PyRuntime of the
 * Debian sid interpreters (x86-64, default build) up to each layout's length: the
 * starting point from which tests and fuzzers make hostile tables that the parser
 * must refuse or, if it accepts them, that the readers must survive.
 */
#ifndef PBP_TEST_DEBUG_TABLES_H
#define PBP_TEST_DEBUG_TABLES_H

#include <stdint.h>

/* 3.13.18: 73 slots */
static const uint64_t debug_table_313[] = {
	0x7970677562656478, 0x30d12f0, 0, 283408, 608, 632, 194984, 7272, 7264, 7344, 7400,
	7656, 7640, 7648, 16, 7752, 0, 7768, 7760, 312, 0, 8, 16, 72, 152, 160, 232, 32, 80,
	8, 0, 56, 72, 70, 208, 112, 120, 128, 136, 68, 52, 96, 104, 200, 16, 8, 416, 24, 88,
	168, 32, 24, 16, 40, 24, 16, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32, 16,
	40, 240, 200,
};

/* 3.14.10: 95 slots */
static const uint64_t debug_table_314[] = {
	0x7970677562656478, 0x30e0af0, 0, 316616, 784, 808, 225864, 7280, 7272, 7344, 7360,
	7408, 7688, 7672, 7680, 16, 7784, 0, 7800, 7792, 7992, 0, 832, 0, 8, 16, 72, 152, 160,
	232, 32, 88, 8, 0, 56, 80, 74, 64, 0, 216, 112, 120, 128, 136, 68, 52, 96, 104, 208,
	0, 16, 8, 416, 24, 88, 168, 40, 32, 16, 40, 24, 16, 200, 24, 40, 32, 48, 32, 40, 24,
	16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40, 264, 192, 160, 24, 72, 67, 0, 8, 24, 304,
	8076, 0, 4, 512,
};

/* 3.15.2: 111 slots */
static const uint64_t debug_table_315[] = {
	0x7970677562656478, 0x30f02f0, 0, 346568, 912, 936, 226240, 7272, 7264, 7336, 7352,
	7400, 7592, 7576, 7584, 16, 7736, 0, 7752, 7744, 7944, 0, 888, 0, 8, 16, 72, 80, 88,
	96, 176, 184, 256, 32, 36, 40, 136, 288, 0, 88, 8, 0, 56, 80, 74, 64, 0, 216, 112,
	120, 128, 136, 68, 52, 96, 104, 208, 0, 16, 8, 424, 24, 88, 168, 32, 288, 944, 888,
	40, 32, 16, 40, 24, 16, 200, 24, 40, 32, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32,
	64, 32, 16, 40, 56, 176, 112, 120, 1120, 104, 160, 24, 72, 67, 0, 8, 24, 344, 8028, 0,
	4, 512,
};

struct debug_table {
	const uint64_t *slots;
	unsigned int nslots;
};

#define DEBUG_TABLE(t) { (t), sizeof(t) / sizeof((t)[0]) }

static const struct debug_table debug_tables[] = {
	DEBUG_TABLE(debug_table_313),
	DEBUG_TABLE(debug_table_314),
	DEBUG_TABLE(debug_table_315),
};

#define DEBUG_TABLES (sizeof(debug_tables) / sizeof(debug_tables[0]))

/* 3.13's slots that the copy bounds are about (user/cpython/py_offsets.c, layout_313). */
#define SLOT_313_CODE_SIZE	34
#define SLOT_313_CO_FILENAME	35
#define SLOT_313_CO_QUALNAME	37
#define SLOT_313_CO_CODE_ADAPTIVE 43
#define SLOT_313_OB_TYPE	45
#define SLOT_313_UNI_ASCII_SIZE	70
#define SLOT_313_FRAME_SIZE	28
#define SLOT_313_FR_LOCALSPLUS	32

#endif
