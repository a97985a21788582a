// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes one fixed profile in the format named by argv[1] to standard output, for the
 * golden-file tests (tests/writers/test_writers_golden.py). The profile has what writers must
 * get right: two processes, threads with and without names, markers, a line-less
 * frame, and names that need escaping in every format (quotes, <&>, ';', non-ASCII).
 *
 * `test_writers FORMAT --large N` writes a synthetic profile of N distinct stacks
 * instead, to see how a format copes with a big profile (file size, load time).
 * `test_writers FORMAT --labels` gives the fixed profile the labels the agent adds to
 * every sample (one of them empty, so left out, and one repeating a value).
 * `test_writers FORMAT --native` writes a profile whose stacks interleave C frames
 * with Python ones (--native): objects with and without a build-id, a stripped one, an
 * offset unknown, a function without a known start, an object the session never
 * named, and one base name (libc.so.6) that is another build in another process.
 * `test_writers FORMAT --native-lines` writes native frames with DWARF line info
 * ("FUNCTION#SOURCE" in frame_spec.h): two lines of one function, a C++ name, a source
 * without a line (as with --nolineno), under a frame of an object without line info.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_spec.h"
#include "profile/profile.h"
#include "output/writers.h"

#define MAX_FRAMES 8

struct fixed_stack {
	uint32_t pid, tid;
	uint64_t count;
	const char *frames[MAX_FRAMES];	/* root first: "kind|name|file|line" */
};

static const struct fixed_stack fixed[] = {
	{ 100, 100, 50, { "P|process 100 python3 app.py", "Y|<module>|/srv/app.py|40",
			  "Y|main|/srv/app.py|31", "Y|work|/srv/app.py|12" } },
	{ 100, 100, 30, { "P|process 100 python3 app.py", "Y|<module>|/srv/app.py|40",
			  "Y|main|/srv/app.py|32",
			  "Y|dumps|/usr/lib/python3.11/json/__init__.py|231" } },
	{ 100, 101, 15, { "P|process 100 python3 app.py", "T|thread 101",
			  "Y|Worker.run|/srv/app.py|20",
			  "Y|get|/srv/venv/lib/python3.11/site-packages/requests/api.py|73" } },
	{ 100, 101, 5, { "P|process 100 python3 app.py", "T|thread 101", "M|[incomplete]",
			 "Y|<lambda>|/srv/app.py|-1" } },
	{ 200, 200, 20, { "P|process 200 python3 -c \"x<y & z\"",
			  "Y|<module>|<string>|1", "Y|f\xc3\xa9;\"q\"|<frozen a;b>|7" } },
	{ 200, 200, 4, { "P|process 200 python3 -c \"x<y & z\"", "M|[no Python frame]" } },
};

/* Which fixed stack each timeline sample added to, in time order, 10 ms apart. */
static const uint32_t timeline[] = { 0, 0, 1, 4, 0, 2, 2, 3, 1, 0, 5, 4, 0 };

#define LIBPY "libpython3.11.so.1.0"
#define ZLIBMOD "_zlib.cpython-311-x86_64-linux-gnu.so"

static const struct fixed_stack native[] = {
	{ 300, 300, 40, { "P|process 300 python3 ext.py", "Y|<module>|/srv/ext.py|5",
			  "Y|run|/srv/ext.py|9", "N|PyObject_Vectorcall|" LIBPY "|0x4a",
			  "N|zlib_compress|" ZLIBMOD "|0x90", "N|deflate|libz.so.1|0x31c",
			  "N|__memmove_avx_unaligned_erms|libc.so.6|0x2c" } },
	{ 300, 300, 25, { "P|process 300 python3 ext.py", "Y|<module>|/srv/ext.py|5",
			  "Y|run|/srv/ext.py|9", "N|PyObject_Vectorcall|" LIBPY "|0x4a",
			  "N|zlib_compress|" ZLIBMOD "|0x90", "N|deflate|libz.so.1|0x31c",
			  "N|libz.so.1+0x3a40|libz.so.1|0x22" } },
	/* C calling back into Python: a key function under sorted() */
	{ 300, 300, 10, { "P|process 300 python3 ext.py", "Y|<module>|/srv/ext.py|5",
			  "Y|run|/srv/ext.py|12", "N|list_sort|" LIBPY "|-1",
			  "Y|key|/srv/ext.py|3" } },
	{ 300, 301, 5, { "P|process 300 python3 ext.py", "T|thread 301",
			 "Y|Worker.run|/srv/ext.py|20",
			 "N|__futex_abstimed_wait_common|libc.so.6|0x102" } },
	{ 400, 400, 20, { "P|process 400 python3 other.py", "Y|<module>|/app/other.py|1",
			  "N|__memmove_avx_unaligned_erms|libc.so.6|0x2c" } },
	{ 400, 400, 3, { "P|process 400 python3 other.py", "Y|<module>|/app/other.py|1",
			 "N|f\xc3\xa9;<&>\"q\"|lib x;y<1>.so|8" } },
};

static const uint32_t native_timeline[] = { 0, 0, 1, 2, 3, 0, 4, 4, 1, 5, 0, 3 };

/* What the session says of the objects and functions of the native frames. */
static const struct { uint32_t pid; const char *file, *path, *build_id; } native_objects[] = {
	{ 300, LIBPY, "/usr/lib/x86_64-linux-gnu/" LIBPY,
	  "5d1e8c2a47f03b9e6a1c0d2f3e4b5a6978c9d0e1" },
	{ 300, ZLIBMOD, "/usr/lib/python3.11/lib-dynload/" ZLIBMOD, "" },
	{ 300, "libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
	  "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c" },
	{ 300, "libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
	  "c3a1b2d4e5f60718293a4b5c6d7e8f9001122334" },
	{ 400, "libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
	  "9e8d7c6b5a49382716051f2e3d4c5b6a79881726" },
};

static const struct { uint32_t pid; const char *file, *name; uint64_t func_rel; }
native_functions[] = {
	{ 300, LIBPY, "PyObject_Vectorcall", 0x1a2b30 },
	{ 300, LIBPY, "list_sort", 0x2001f0 },
	/* zlib_compress: no start known */
	{ 300, "libz.so.1", "deflate", 0x9c70 },
	{ 300, "libz.so.1", "libz.so.1+0x3a40", 0x3a40 },
	{ 300, "libc.so.6", "__memmove_avx_unaligned_erms", 0x19e6c0 },
	{ 300, "libc.so.6", "__futex_abstimed_wait_common", 0x8f3e0 },
	{ 400, "libc.so.6", "__memmove_avx_unaligned_erms", 0x1a0340 },
};

#define EXTMOD "pbpext.cpython-313-x86_64-linux-gnu.so"
#define EXTSRC "/build/ext/pbpext.c"
#define CXXSPIN "pbp::Burner::spin(unsigned long) const#/build/cxx/pbpcxx.cc"

static const struct fixed_stack native_lines[] = {
	{ 500, 500, 30, { "P|process 500 python3 ext.py", "Y|<module>|/srv/ext.py|5",
			  "N|pbpext_burn#" EXTSRC "|" EXTMOD "|27",
			  "N|pbpext_spin#" EXTSRC "|" EXTMOD "|17" } },
	{ 500, 500, 10, { "P|process 500 python3 ext.py", "Y|<module>|/srv/ext.py|5",
			  "N|pbpext_burn#" EXTSRC "|" EXTMOD "|27",
			  "N|pbpext_spin#" EXTSRC "|" EXTMOD "|16" } },
	{ 500, 500, 6, { "P|process 500 python3 ext.py", "Y|<module>|/srv/ext.py|6",
			 "N|" CXXSPIN "|libpbpcxx.so|24" } },
	{ 500, 500, 4, { "P|process 500 python3 ext.py", "Y|<module>|/srv/ext.py|7",
			 "N|_PyObject_MakeTpCall|python3.13|0x4a",
			 "N|memcpy#../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S|"
			 "libc.so.6|-1" } },
};

static const uint32_t native_lines_timeline[] = { 0, 1, 0, 2, 3, 0 };

static const struct { uint32_t pid; const char *file, *path, *build_id; }
native_lines_objects[] = {
	{ 500, EXTMOD, "/srv/" EXTMOD, "aa11bb22cc33dd44ee55ff660011223344556677" },
	{ 500, "libpbpcxx.so", "/srv/libpbpcxx.so", "" },
	{ 500, "libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
	  "c3a1b2d4e5f60718293a4b5c6d7e8f9001122334" },
	{ 500, "python3.13", "/usr/bin/python3.13", "0badc0de0badc0de0badc0de0badc0de0badc0de" },
};

static const struct { uint32_t pid; const char *file, *name; uint64_t func_rel; }
native_lines_functions[] = {
	{ 500, EXTMOD, "pbpext_burn#" EXTSRC, 0x1150 },
	{ 500, EXTMOD, "pbpext_spin#" EXTSRC, 0x1120 },
	{ 500, "libpbpcxx.so", CXXSPIN, 0x110a },
	{ 500, "libc.so.6", "memcpy#../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S",
	  0x19e6c0 },
	{ 500, "python3.13", "_PyObject_MakeTpCall", 0x1f3a20 },
};

/* A fixed-seed generator: the large profile is the same on every run. */
static uint32_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*state >> 33);
}

static struct agg_frame large_frame(struct strtab *strs, uint32_t fn)
{
	static const char *const dirs[] = {
		"/srv/app/mod%u.py", "/usr/lib/python3.13/json/part%u.py",
		"/srv/venv/lib/python3.13/site-packages/pkg%u/core.py",
	};
	char name[32], file[96];

	snprintf(name, sizeof(name), "fn_%u", fn);
	snprintf(file, sizeof(file), dirs[fn % 3], fn / 3 % 50);
	return (struct agg_frame){ .kind = AGG_PYTHON,
				   .name = spec_intern(strs, name, strlen(name)),
				   .file = spec_intern(strs, file, strlen(file)),
				   .line = (int32_t)(10 + fn % 400) };
}

/*
 * @n distinct stacks under one process frame, 6 to 29 Python frames deep. Shallow
 * frames come from few functions and deep ones from many, so stacks share prefixes
 * like real ones do; counts are skewed, so some stacks are wide and most are thin.
 */
static int add_large(struct aggregate *agg, struct strtab *strs, size_t n)
{
	struct agg_frame frames[32];
	uint64_t state = 42;
	static const char proc[] = "process 1 python3 big.py";

	frames[0] = (struct agg_frame){ .kind = AGG_PROCESS,
					.name = spec_intern(strs, proc, strlen(proc)), .line = -1 };
	while (aggregate__count(agg) < n) {
		uint32_t depth = 7 + next_random(&state) % 23;
		uint64_t count = 1 + (next_random(&state) % 64 == 0 ? next_random(&state) % 500 :
				      next_random(&state) % 3);

		for (uint32_t d = 1; d < depth; d++)
			frames[d] = large_frame(strs, next_random(&state) % (2 + 3 * d * d));
		if (aggregate__add(agg, 1, 1, frames, depth, count, NULL))
			return -1;
	}
	return 0;
}

struct fixture {
	const struct fixed_stack *stacks;
	size_t nstacks;
	const uint32_t *timeline;
	size_t ntimeline;
	struct { uint32_t pid, tid; const char *name; } threads[3];
	const char *target;
};

static const struct fixture fixtures[] = {
	{ fixed, sizeof(fixed) / sizeof(fixed[0]), timeline,
	  sizeof(timeline) / sizeof(timeline[0]),
	  { { 100, 100, "python3" }, { 100, 101, "worker-1" }, { 200, 200, NULL } },
	  "pid 100 (python3 app.py)" },
	{ native, sizeof(native) / sizeof(native[0]), native_timeline,
	  sizeof(native_timeline) / sizeof(native_timeline[0]),
	  { { 300, 300, "python3" }, { 300, 301, "worker" }, { 400, 400, NULL } },
	  "pid 300 (python3 ext.py)" },
	{ native_lines, sizeof(native_lines) / sizeof(native_lines[0]), native_lines_timeline,
	  sizeof(native_lines_timeline) / sizeof(native_lines_timeline[0]),
	  { { 500, 500, "python3" }, { 500, 501, NULL }, { 500, 502, NULL } },
	  "pid 500 (python3 ext.py)" },
};

#define MAX_TIMELINE 16

static uint32_t intern(struct strtab *strs, const char *s)
{
	return spec_intern(strs, s, strlen(s));
}

/* A fixture's stacks, threads and timeline. */
static int add_fixture(struct aggregate *agg, struct strtab *strs, const struct fixture *fx,
		       struct profile_thread *pt, struct profile_sample *samples)
{
	struct agg_frame frames[MAX_FRAMES];

	for (size_t i = 0; i < fx->nstacks; i++) {
		const struct fixed_stack *s = &fx->stacks[i];
		uint32_t n = 0;

		while (n < MAX_FRAMES && s->frames[n]) {
			spec_parse_frame(strs, s->frames[n], &frames[n]);
			n++;
		}
		if (aggregate__add(agg, s->pid, s->tid, frames, n, s->count, NULL))
			return -1;
	}
	for (size_t i = 0; i < 3; i++) {
		pt[i].pid = fx->threads[i].pid;
		pt[i].tid = fx->threads[i].tid;
		pt[i].name = fx->threads[i].name ? intern(strs, fx->threads[i].name)
						 : PROFILE_NO_NAME;
	}
	for (size_t i = 0; i < fx->ntimeline; i++)
		samples[i] = (struct profile_sample){ .t_ns = i * 10000000ull,
						      .weight_ns = 10000000ull,
						      .stack = fx->timeline[i] };
	return 0;
}

#define ADD_NATIVES(agg, strs, objects, functions)                                    \
	do {                                                                             \
		for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)        \
			if (aggregate__native_object(agg, objects[i].pid,                \
						     intern(strs, objects[i].file),      \
						     intern(strs, objects[i].path),      \
						     intern(strs, objects[i].build_id))) \
				return -1;                                               \
		for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)    \
			if (aggregate__native_function(                                  \
				    agg, functions[i].pid, intern(strs, functions[i].file),  \
				    spec_native_name(strs, functions[i].name),               \
				    functions[i].func_rel))                                  \
				return -1;                                               \
	} while (0)

/* The objects and function starts of a native fixture, as the session gives them. */
static int add_natives(struct aggregate *agg, struct strtab *strs, int lines)
{
	if (lines)
		ADD_NATIVES(agg, strs, native_lines_objects, native_lines_functions);
	else
		ADD_NATIVES(agg, strs, native_objects, native_functions);
	return 0;
}

int main(int argc, char **argv)
{
	struct profile_thread pt[3];
	struct profile_sample samples[MAX_TIMELINE];
	struct strtab *strs = strtab__new();
	struct aggregate *agg = aggregate__new();
	const struct writer *w = argc >= 2 ? writers__find(argv[1]) : NULL;
	size_t large = argc == 4 && !strcmp(argv[2], "--large") ? strtoul(argv[3], NULL, 0) : 0;
	int labels = argc == 3 && !strcmp(argv[2], "--labels");
	int lines = argc == 3 && !strcmp(argv[2], "--native-lines");
	int natives = (argc == 3 && !strcmp(argv[2], "--native")) || lines;
	const struct fixture *fx = &fixtures[natives + lines];
	static const struct profile_label agent_labels[] = {
		{ "hostname", "node-1" }, { "container_id", "" },
		{ "pod_uid", "8d1a2f5c-7b1e-4c3a-9f00-1234567890ab" },
		{ "qos", "burstable" }, { "command", "python3 app.py --name=\"a,b{c}\"" },
		{ "app", "node-1" },
	};
	struct profile p = {
		.agg = agg,
		.strs = strs,
		.threads = pt,
		.nthreads = 3,
		.timeline = samples,
		.ntimeline = fx->ntimeline,
		.target = fx->target,
		.start_unix_ns = 1700000000123456789ll,
		.duration_ns = 1500000000ull,
		.rate_hz = 100,
		.period_ns = 10000000ull,
	};
	int err;

	_Static_assert(sizeof(timeline) / sizeof(timeline[0]) <= MAX_TIMELINE &&
		       sizeof(native_timeline) / sizeof(native_timeline[0]) <= MAX_TIMELINE &&
		       sizeof(native_lines_timeline) / sizeof(native_lines_timeline[0]) <=
			       MAX_TIMELINE,
		       "timelines fit");
	/* The large profile has no timeline to give. */
	if (!w || !strs || !agg || (argc != 2 && !large && !labels && !natives) ||
	    (large && w->timeline)) {
		fprintf(stderr, "usage: test_writers FORMAT [--large STACKS | --labels | --native |"
				" --native-lines]\n");
		return 2;
	}
	if (large) {
		pt[0] = (struct profile_thread){ .pid = 1, .tid = 1, .name = PROFILE_NO_NAME };
		p.nthreads = 1;
		p.timeline = NULL;
		p.ntimeline = 0;
		p.target = "pid 1 (python3 big.py)";
		p.duration_ns = 600000000000ull;
		p.rate_hz = 1000;
		p.period_ns = 1000000ull;
		if (add_large(agg, strs, large))
			return 1;
	} else if (add_fixture(agg, strs, fx, pt, samples) ||
		   (natives && add_natives(agg, strs, lines))) {
		return 1;
	}
	if (labels) {
		p.labels = agent_labels;
		p.nlabels = sizeof(agent_labels) / sizeof(agent_labels[0]);
	}
	err = w->write(stdout, &p);
	aggregate__free(agg);
	strtab__free(strs);
	return err ? 1 : 0;
}
