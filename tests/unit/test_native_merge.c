/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * native_merge__interleave(): native and Python frames in one stack.
 *
 * Each case is a native walk written as text, innermost first, one token per frame,
 * MODULE[:NAME], and runs of Python frames, each placed by the frame its c_addr
 * falls in (or an explicit address); the result is rendered as text ("n3" native
 * frame 3, "p2" Python frame 2) and compared with what the case says, in both modes.
 * The modules: I the interpreter (python3.X), C libc, F libffi/ctypes, X an extension,
 * ? unknown (0). Then every boundary of a frame's area, inconsistent input of every
 * kind, and random stacks checked against the rules rather than a literal answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "native/native_merge.h"

#define MAXF 64
#define MAXR 32
#define SP0 0x7ffd00001000ull
#define FRAME_BYTES 0x100

struct scase {
	struct native_merge_frame frames[MAXF];
	uint32_t nframes;
	struct py_run runs[MAXR];
	uint32_t nruns;
	int complete;
};

static uint32_t module_id(char c)
{
	switch (c) {
	case 'I': return 1;
	case 'C': return 2;
	case 'F': return 3;
	case 'X': return 4;
	default: return 0;
	}
}

/* "I I C ? I": frame i at SP0 + i * FRAME_BYTES. */
static void natives(struct scase *s, const char *spec)
{
	s->nframes = 0;
	for (const char *p = spec; *p; p++) {
		if (*p == ' ')
			continue;
		CHECK(s->nframes < MAXF);
		s->frames[s->nframes].sp = SP0 + (uint64_t)s->nframes * FRAME_BYTES;
		s->frames[s->nframes].module = module_id(*p);
		s->nframes++;
	}
}

/* An address in frame @f's area (@off bytes in). */
static uint64_t in_frame(uint32_t f, uint64_t off)
{
	return SP0 + (uint64_t)f * FRAME_BYTES + off;
}

/* Runs of @len frames each, the k-th in native frame at[k] (-1: c_addr 0). */
static void runs(struct scase *s, const int *len, const int *at, uint32_t n)
{
	uint32_t first = 0;

	s->nruns = n;
	for (uint32_t k = 0; k < n; k++) {
		s->runs[k].first = first;
		s->runs[k].n = (uint32_t)len[k];
		s->runs[k].c_addr = at[k] < 0 ? 0 : in_frame((uint32_t)at[k], 0x40);
		first += (uint32_t)len[k];
	}
}

static enum native_merge_result merge(const struct scase *s, int all, char *text, size_t size)
{
	struct native_merge_item out[MAXF + 256];
	const struct native_merge_in in = {
		.frames = s->frames, .nframes = s->nframes, .complete = s->complete,
		.runs = s->runs, .nruns = s->nruns, .all = all,
	};
	enum native_merge_result r;
	uint32_t n, placed, tail = 0;
	size_t at = 0;

	CHECK(native_merge__interleave(&in, out, sizeof(out) / sizeof(out[0]), &n, &r) == 0);
	/* The runs not placed are the output's last items, Python frames only: where a
	 * caller marks the walk's cut. */
	placed = native_merge__placed(&in);
	CHECK(placed <= s->nruns && (r != NATIVE_MERGE_MATCHED || placed == s->nruns));
	for (uint32_t k = placed; r == NATIVE_MERGE_CUT && k < s->nruns; k++)
		tail += s->runs[k].n;
	CHECK(tail <= n);
	for (uint32_t i = n - tail; i < n; i++)
		CHECK(out[i].kind == NATIVE_MERGE_PYTHON && out[i].index >= s->runs[placed].first);
	text[0] = 0;
	for (uint32_t i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(text + at, size - at, "%s%c%u", i ? " " : "",
				       out[i].kind == NATIVE_MERGE_NATIVE ? 'n' : 'p', out[i].index);
	return r;
}

static void expect(const char *what, const struct scase *s, enum native_merge_result want_r,
		   const char *want_default, const char *want_all)
{
	char got[2048];
	enum native_merge_result r;

	r = merge(s, 0, got, sizeof(got));
	CHECK_MSG(r == want_r && !strcmp(got, want_default), "%s: default gave %s [%s], want %s [%s]",
		  what, native_merge__result_name(r), got, native_merge__result_name(want_r),
		  want_default);
	r = merge(s, 1, got, sizeof(got));
	CHECK_MSG(r == want_r && !strcmp(got, want_all), "%s: all gave %s [%s], want %s [%s]", what,
		  native_merge__result_name(r), got, native_merge__result_name(want_r), want_all);
}

/*
 * The model stack: a Python function calls sorted() with a Python key that calls
 * os.write:
 *   0 C write          libc
 *   1 I os_write       the interpreter's C function Python called
 *   2 I eval           activation 0: key's frames p0 p1
 *   3 I vectorcall     plumbing
 *   4 I list_sort      plumbing of sorted() (C code between the activations)
 *   5 I eval           activation 1: p2 p3 p4
 *   6 I PyEval_EvalCode
 *   7 I Py_RunMain
 *   8 C __libc_start_main
 *   9 I _start
 */
static void test_model(void)
{
	const int len[] = { 2, 3 }, at[] = { 2, 5 };
	struct scase s = { .complete = 1 };

	natives(&s, "C I I I I I I I C I");
	runs(&s, len, at, 2);
	expect("model", &s, NATIVE_MERGE_MATCHED, "n0 n1 p0 p1 p2 p3 p4",
	       "n0 n1 p0 p1 n2 n3 n4 p2 p3 p4 n5 n6 n7 n8 n9");

	/* The innermost frame is the eval loop itself: nothing above the activation. */
	natives(&s, "I I I I I I");
	{
		const int l2[] = { 2, 1 }, a2[] = { 0, 3 };

		runs(&s, l2, a2, 2);
	}
	expect("sample in the eval loop", &s, NATIVE_MERGE_MATCHED, "p0 p1 p2",
	       "p0 p1 n0 n1 n2 p2 n3 n4 n5");
}

/* Between activations other objects' frames stay (ctypes/libffi calling back, libc's
 * qsort calling a comparator, an extension); the interpreter's and unknown ones: the
 * interpreter's go, unknown (JIT, a library mapped since) stay. */
static void test_between(void)
{
	const int len[] = { 1, 1, 1 }, at[] = { 1, 5, 8 };
	struct scase s = { .complete = 1 };

	/*  0 C memcpy  1 I eval  2 F ffi_closure  3 C qsort  4 I cfunc  5 I eval
	 *  6 ? jit  7 I call  8 I eval  9 I main  10 C start */
	natives(&s, "C I F C I I ? I I I C");
	runs(&s, len, at, 3);
	expect("other objects between", &s, NATIVE_MERGE_MATCHED, "n0 p0 n2 n3 p1 n6 p2",
	       "n0 p0 n1 n2 n3 n4 p1 n5 n6 n7 p2 n8 n9 n10");

	/* An extension module calling back into Python: its frames stay. */
	natives(&s, "X I X X I I I");
	{
		const int l2[] = { 2, 2 }, a2[] = { 1, 4 };

		runs(&s, l2, a2, 2);
	}
	expect("extension callback", &s, NATIVE_MERGE_MATCHED, "n0 p0 p1 n2 n3 p2 p3",
	       "n0 p0 p1 n1 n2 n3 p2 p3 n4 n5 n6");

	/* Activations of unknown module (0): nothing between them is taken for
	 * plumbing. */
	natives(&s, "C ? I ? ?");
	{
		const int l2[] = { 1, 1 }, a2[] = { 1, 4 };

		s.complete = 1;
		runs(&s, l2, a2, 2);
	}
	expect("unknown activation module", &s, NATIVE_MERGE_MATCHED, "n0 p0 n2 n3 p1",
	       "n0 p0 n1 n2 n3 p1 n4");
}

/* A walk that ended before an activation: the runs from there on follow as Python
 * frames only. */
static void test_cut(void)
{
	struct scase s = { .complete = 0 };
	const int len[] = { 2, 1, 2 };

	natives(&s, "C I I I C I");
	{
		/* run 1 beyond the last frame's sp (which may be inside that frame or
		 * past it: unknown without its top), run 2 too */
		const int at[] = { 2, 5, 7 };

		runs(&s, len, at, 3);
		s.runs[2].c_addr = in_frame(9, 0);
	}
	expect("walk ended early", &s, NATIVE_MERGE_CUT, "n0 n1 p0 p1 n4 p2 p3 p4",
	       "n0 n1 p0 p1 n2 n3 n4 n5 p2 p3 p4");

	/* The same walk, complete: the last frame's area has no top. */
	s.complete = 1;
	s.runs[2].c_addr = 0;
	{
		const int at[] = { 2, 5, -1 };

		runs(&s, len, at, 3);
	}
	expect("unknown place after a match", &s, NATIVE_MERGE_CUT, "n0 n1 p0 p1 n4 p2 p3 p4",
	       "n0 n1 p0 p1 n2 n3 n4 p2 n5 p3 p4");

	/* Nothing placed: every native frame, then the Python frames. */
	{
		const int at[] = { -1, -1, -1 };

		runs(&s, len, at, 3);
	}
	expect("no place known", &s, NATIVE_MERGE_CUT, "n0 n1 n2 n3 n4 n5 p0 p1 p2 p3 p4",
	       "n0 n1 n2 n3 n4 n5 p0 p1 p2 p3 p4");

	/* No native frames at all. */
	s.nframes = 0;
	{
		const int at[] = { 2, 5, 7 };

		runs(&s, len, at, 3);
	}
	expect("no native frames", &s, NATIVE_MERGE_CUT, "p0 p1 p2 p3 p4", "p0 p1 p2 p3 p4");

	/* The walk is as deep as the frame limit, the innermost activation beyond it. */
	s.complete = 0;
	natives(&s, "C C C");
	{
		const int at[] = { 5, 6, 7 };

		runs(&s, len, at, 3);
	}
	expect("all beyond", &s, NATIVE_MERGE_CUT, "n0 n1 n2 p0 p1 p2 p3 p4",
	       "n0 n1 n2 p0 p1 p2 p3 p4");
}

/* Input that does not hold together: only the Python frames. */
static void test_unmatched(void)
{
	const char *py = "p0 p1 p2";
	const int len[] = { 2, 1 };
	struct scase s = { .complete = 1 };

	natives(&s, "C I I I I");
	{
		const int at[] = { 1, 3 };

		runs(&s, len, at, 2);
	}
	expect("control", &s, NATIVE_MERGE_MATCHED, "n0 p0 p1 p2", "n0 p0 p1 n1 n2 p2 n3 n4");

	s.runs[0].c_addr = SP0 - 8; /* below the innermost frame's sp */
	expect("below the walk", &s, NATIVE_MERGE_UNMATCHED, py, py);

	s.runs[0].c_addr = in_frame(3, 0x10); /* two activations in one frame */
	expect("two in one frame", &s, NATIVE_MERGE_UNMATCHED, py, py);

	s.runs[0].c_addr = in_frame(3, 0x10); /* out of order */
	s.runs[1].c_addr = in_frame(1, 0x10);
	expect("out of order", &s, NATIVE_MERGE_UNMATCHED, py, py);

	/* Stack pointers that fall, or repeat, or are unknown. */
	s.runs[0].c_addr = in_frame(1, 0x10);
	s.runs[1].c_addr = in_frame(3, 0x10);
	s.frames[2].sp = s.frames[1].sp;
	expect("a repeated sp", &s, NATIVE_MERGE_UNMATCHED, py, py);
	s.frames[2].sp = s.frames[1].sp - 8;
	expect("a falling sp", &s, NATIVE_MERGE_UNMATCHED, py, py);
	s.frames[2].sp = 0;
	expect("an unknown sp", &s, NATIVE_MERGE_UNMATCHED, py, py);

	/* Cut, but a later run's place below the walk's end, or out of order. */
	natives(&s, "C I I I I");
	s.complete = 0;
	{
		const int at[] = { 1, 9 };

		runs(&s, len, at, 2);
	}
	expect("cut control", &s, NATIVE_MERGE_CUT, "n0 p0 p1 p2", "n0 p0 p1 n1 n2 n3 n4 p2");
	{
		const int l3[] = { 1, 1, 1 }, at[] = { 6, 2, -1 };

		runs(&s, l3, at, 3);
	}
	expect("beyond, then inside", &s, NATIVE_MERGE_UNMATCHED, py, py);
	{
		const int l3[] = { 1, 1, 1 }, at[] = { 9, -1, 7 };

		runs(&s, l3, at, 3);
	}
	expect("beyond, out of order", &s, NATIVE_MERGE_UNMATCHED, py, py);

	/* A complete walk whose last frame took an activation: nothing beyond it. */
	s.complete = 1;
	{
		const int at[] = { 4, 9 };

		runs(&s, len, at, 2);
	}
	expect("past the outermost", &s, NATIVE_MERGE_UNMATCHED, py, py);
}

/* A frame's area is [sp, next sp): its first and last byte are its own. */
static void test_boundaries(void)
{
	const int len[] = { 1 }, at[] = { 2 };
	struct scase s = { .complete = 0 };

	natives(&s, "C I I I I");
	runs(&s, len, at, 1);
	s.runs[0].c_addr = s.frames[2].sp;
	expect("first byte", &s, NATIVE_MERGE_MATCHED, "n0 n1 p0", "n0 n1 p0 n2 n3 n4");
	s.runs[0].c_addr = s.frames[3].sp - 1;
	expect("last byte", &s, NATIVE_MERGE_MATCHED, "n0 n1 p0", "n0 n1 p0 n2 n3 n4");
	s.runs[0].c_addr = s.frames[3].sp;
	expect("next frame's first byte", &s, NATIVE_MERGE_MATCHED, "n0 n1 n2 p0",
	       "n0 n1 n2 p0 n3 n4");
	s.runs[0].c_addr = s.frames[4].sp - 1;
	expect("last frame but one", &s, NATIVE_MERGE_MATCHED, "n0 n1 n2 p0", "n0 n1 n2 p0 n3 n4");
	s.runs[0].c_addr = s.frames[4].sp; /* the last frame, whose top is unknown */
	expect("last frame, walk cut", &s, NATIVE_MERGE_CUT, "n0 n1 n2 n3 n4 p0",
	       "n0 n1 n2 n3 n4 p0");
	s.complete = 1;
	expect("last frame, walk complete", &s, NATIVE_MERGE_MATCHED, "n0 n1 n2 n3 p0",
	       "n0 n1 n2 n3 p0 n4");
	s.runs[0].c_addr = UINT64_MAX;
	expect("top of the address space", &s, NATIVE_MERGE_MATCHED, "n0 n1 n2 n3 p0",
	       "n0 n1 n2 n3 p0 n4");
	s.runs[0].c_addr = s.frames[0].sp - 1;
	expect("just below the walk", &s, NATIVE_MERGE_UNMATCHED, "p0", "p0");
}

/* No Python frames: the native stack as it is. Empty runs: an activation caught
 * entering or leaving has no frames; in the default mode it simply goes. */
static void test_no_python(void)
{
	struct scase s = { .complete = 1 };

	natives(&s, "C I I");
	expect("no runs", &s, NATIVE_MERGE_MATCHED, "n0 n1 n2", "n0 n1 n2");
	{
		const int len[] = { 0 }, at[] = { 9 }; /* even where it would not match */

		runs(&s, len, at, 1);
	}
	expect("only an empty run", &s, NATIVE_MERGE_MATCHED, "n0 n1 n2", "n0 n1 n2");

	natives(&s, "C I I I I");
	{
		const int len[] = { 0, 2 }, at[] = { 1, 3 };

		runs(&s, len, at, 2);
	}
	expect("empty innermost run", &s, NATIVE_MERGE_MATCHED, "n0 p0 p1",
	       "n0 n1 n2 p0 p1 n3 n4");

	s.nframes = 0;
	s.nruns = 0;
	expect("nothing at all", &s, NATIVE_MERGE_MATCHED, "", "");
}

/* Arguments: counts without arrays, runs past 2^32 frames, room too small. */
static void test_arguments(void)
{
	struct native_merge_item out[16];
	struct native_merge_frame f[2] = { { SP0, 1 }, { SP0 + 64, 1 } };
	struct py_run r[2] = { { 0, 2, SP0 + 8 }, { 2, 1, 0 } };
	struct native_merge_in in = { .frames = f, .nframes = 2, .runs = r, .nruns = 2 };
	enum native_merge_result res;
	uint32_t n = 99;

	CHECK(native_merge__interleave(&in, out, 5, &n, &res) == 0 && n == 3);
	CHECK(native_merge__interleave(&in, out, 4, &n, &res) == -ENOSPC && n == 0);
	CHECK(native_merge__interleave(&in, NULL, 5, &n, &res) == -EINVAL);
	in.frames = NULL;
	CHECK(native_merge__interleave(&in, out, 16, &n, &res) == -EINVAL);
	in.frames = f;
	in.runs = NULL;
	CHECK(native_merge__interleave(&in, out, 16, &n, &res) == -EINVAL);
	in.runs = r;
	r[1].first = UINT32_MAX;
	CHECK(native_merge__interleave(&in, out, 16, &n, &res) == -EINVAL);
	/* Frames of many runs that sum past 2^32 without any one passing it. */
	r[0] = (struct py_run){ 0, UINT32_MAX - 1, SP0 + 8 };
	r[1] = (struct py_run){ 0, UINT32_MAX - 1, 0 };
	CHECK(native_merge__interleave(&in, out, 16, &n, &res) == -ENOSPC);
	CHECK(native_merge__interleave(&in, out, UINT32_MAX, &n, &res) == -ENOSPC);
	CHECK(!strcmp(native_merge__result_name(NATIVE_MERGE_CUT), "cut"));
	CHECK(!strcmp(native_merge__result_name((enum native_merge_result)7), "?"));
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Random stacks built to match (activations in rising frames, modules at random):
 * MATCHED in both modes; default keeps every frame above the innermost activation,
 * drops everything below the outermost, and between activations exactly the
 * activations' own modules; all keeps every native frame in order with each run just
 * before its activation. Every Python frame appears once, in order, in both.
 */
static void check_random_matched(const struct scase *s, const uint32_t *act)
{
	struct native_merge_item out[MAXF + 256];
	const struct native_merge_in base = {
		.frames = s->frames, .nframes = s->nframes, .complete = s->complete,
		.runs = s->runs, .nruns = s->nruns,
	};
	uint32_t total = s->runs[s->nruns - 1].first + s->runs[s->nruns - 1].n;

	for (int all = 0; all < 2; all++) {
		struct native_merge_in in = base;
		enum native_merge_result r;
		uint32_t n, py = 0, nat = 0, k = 0;

		in.all = all;
		CHECK(native_merge__interleave(&in, out, MAXF + 256, &n, &r) == 0);
		CHECK(r == NATIVE_MERGE_MATCHED);
		for (uint32_t i = 0; i < n; i++) {
			if (out[i].kind == NATIVE_MERGE_PYTHON) {
				CHECK(out[i].index == py++);
				continue;
			}
			/* native frame f: which activation range it is in */
			uint32_t f = out[i].index;

			while (k < s->nruns && act[k] < f)
				k++;
			if (all) {
				CHECK(f == nat++);
				/* its run's frames just before an activation */
				if (k < s->nruns && act[k] == f)
					CHECK(py == s->runs[k].first + s->runs[k].n);
				continue;
			}
			CHECK(f >= nat);
			nat = f + 1;
			CHECK(k < s->nruns && act[k] != f); /* no activation, nothing below */
			if (k) {
				uint32_t m = s->frames[f].module;

				CHECK(!m || (m != s->frames[act[k - 1]].module &&
					     m != s->frames[act[k]].module));
			}
		}
		CHECK(py == total);
		if (all)
			CHECK(nat == s->nframes);
		else /* every frame above the innermost activation is there */
			CHECK(n >= act[0] + total && out[act[0] ? act[0] - 1 : 0].index ==
							     (act[0] ? act[0] - 1 : 0));
	}
}

static void test_random(void)
{
	uint64_t seed = 0x2545f4914f6cdd1dull;

	for (int round = 0; round < 20000; round++) {
		struct scase s = { .complete = 1 };
		uint32_t act[MAXR], first = 0;
		uint32_t f = 0;

		s.nframes = 1 + (uint32_t)(rnd(&seed) % MAXF);
		for (uint32_t i = 0; i < s.nframes; i++) {
			s.frames[i].sp = (i ? s.frames[i - 1].sp : SP0) + 8 + rnd(&seed) % 512;
			s.frames[i].module = (uint32_t)(rnd(&seed) % 4);
		}
		for (s.nruns = 0; s.nruns < MAXR && f < s.nframes; s.nruns++) {
			uint32_t k = s.nruns, hi;

			f += (uint32_t)(rnd(&seed) % 4);
			if (f >= s.nframes)
				break;
			act[k] = f;
			hi = f + 1 < s.nframes ? (uint32_t)(s.frames[f + 1].sp - s.frames[f].sp) : 64;
			s.runs[k].c_addr = s.frames[f].sp + rnd(&seed) % hi;
			s.runs[k].first = first;
			s.runs[k].n = 1 + (uint32_t)(rnd(&seed) % 5);
			first += s.runs[k].n;
			f++;
		}
		if (!s.nruns)
			continue;
		check_random_matched(&s, act);

		/* Then the same stack damaged at random: any answer, never a crash, an
		 * overrun or an item that names nothing. */
		for (int d = 0; d < 4; d++) {
			struct native_merge_item out[MAXF + 256];
			struct native_merge_in in = {
				.frames = s.frames, .nframes = s.nframes, .runs = s.runs,
				.nruns = s.nruns, .complete = (int)(rnd(&seed) & 1),
				.all = (int)(rnd(&seed) & 1),
			};
			enum native_merge_result r;
			uint32_t n;

			if (rnd(&seed) & 1)
				s.runs[rnd(&seed) % s.nruns].c_addr = rnd(&seed) & 1 ? 0 : rnd(&seed);
			else
				s.frames[rnd(&seed) % s.nframes].sp = rnd(&seed);
			CHECK(native_merge__interleave(&in, out, MAXF + 256, &n, &r) == 0);
			CHECK(n <= s.nframes + first);
			for (uint32_t i = 0; i < n; i++)
				CHECK(out[i].kind == NATIVE_MERGE_NATIVE ? out[i].index < s.nframes :
									   out[i].index < first);
			if (r == NATIVE_MERGE_UNMATCHED)
				CHECK(n == first);
		}
	}
	printf("random: 20000 stacks matched by the rules, damaged ones survived\n");
}

int main(void)
{
	test_model();
	test_between();
	test_cut();
	test_unmatched();
	test_boundaries();
	test_no_python();
	test_arguments();
	test_random();
	if (check_failures)
		return 1;
	printf("test_native_merge: all passed\n");
	return 0;
}
