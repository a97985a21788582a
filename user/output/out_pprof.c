// SPDX-License-Identifier: GPL-2.0-only
/*
 * pprof's profile.proto, encoded by hand (pb.h) and gzip-compressed with zlib.
 * Field numbers are those of perftools.profiles in pprof's proto/profile.proto; the
 * tests decode with their own copy (tests/tools/profile.proto). The consumers (go tool
 * pprof, Pyroscope, Parca, Grafana) are strict about two things: string_table[0] is
 * "", and every id is non-zero, so ids are index + 1 and no message uses id 0.
 *
 * Python frames have no Mapping: their functions are already named, and a location
 * without a mapping (mapping_id 0) is valid and is not handed to any symbolizer.
 *
 * Native frames (--native) have one Mapping per object (path and build-id) and their
 * exact address in it, so that a reader can find the object by build-id and symbolize
 * or disassemble again. The address is the ELF vaddr in the object (func_rel + offset),
 * not where one process loaded it: a profile adds up processes that load a library at
 * different places (ASLR), and one Location per (frame, object) serves them all. So
 * every Mapping starts at 0 and covers any vaddr (memory_start 0, file_offset 0), which
 * makes address - start + file_offset, what pprof takes for a file offset, the vaddr:
 * the same number for the text of position-independent objects, whose text is mapped
 * at file offset == vaddr. has_functions tells pprof the names are there already.
 * A native frame with DWARF line info (a source, profile.h) has a Function per
 * (name, source) whose filename is the source's path and a Line with its line; its
 * address is then its function's start, the frame standing for every address of the
 * line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/gzip.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "output/out_pprof.h"
#include "base/pb.h"
#include "profile/profile_index.h"

enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	MAPPING_ID = 1,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_FILENAME = 4,
};

/* The fixed strings of the string table, at these indices; the profile's own strings
 * follow, each once, in the order first used. */
static const char *const fixed_strings[] = {
	"", "samples", "count", "cpu", "nanoseconds", "pid", "thread_id", "thread_name",
	"off_cpu", "wall",
};
enum { S_EMPTY, S_SAMPLES, S_COUNT, S_CPU, S_NANOSECONDS, S_PID, S_THREAD_ID,
       S_THREAD_NAME, S_OFF_CPU, S_WALL, S_FIXED };

/* A profile of samples has no use for the last two. */
static size_t fixed_count(const struct profile *p)
{
	return p->unit == PROFILE_NS ? S_FIXED : S_OFF_CPU;
}

struct pprof_ctx {
	const struct profile *p;
	struct profile_index ix;
	/* The strtab ids of the strings used so far, in string table order from
	 * str_base on, and their index, sized by what this profile can use (two per
	 * function, one per thread), not by the strtab, which holds every process's
	 * strings. */
	uint32_t *str_order;
	size_t nstr;
	struct hashmap str_index;
	/* The profile-wide labels' key and value string table indices (0: label left
	 * out), and their distinct strings, which come right after the fixed ones;
	 * the strtab's strings are numbered from str_base on. */
	uint64_t *label_str;
	const char **label_strings;
	size_t nlabel_strings;
	uint64_t str_base;
	/* With asyncio tasks: the "task" key's index, and per distinct frame the index
	 * of its task's name (0 for other frames). */
	uint64_t task_key;
	uint64_t *task_label;
	/*
	 * Locations: the distinct frames, then the (native frame, object) pairs a frame
	 * met in another object than its first (one base name, two builds); id = index
	 * + 1. loc_ids holds each stack's locations as ix.frame_ids holds its frames,
	 * and is ix.frame_ids in a profile without native frames.
	 */
	const uint32_t *loc_ids;
	uint32_t *own_loc_ids;
	size_t nlocs;
	struct aggregate *extra_locs;	/* depth 1: { name = frame, file = object + 1 } */
	uint32_t *loc_object;		/* per location: object + 1, 0 none; NULL: none */
	/* Mappings: the objects locations use, in the order first used; id = index + 1. */
	uint32_t *mapping_of;		/* object -> mapping id, 0: unused */
	uint32_t *mapping_object;	/* mapping index -> object */
	uint8_t *mapping_lines;		/* mapping index -> a location has a source */
	size_t nmappings;
	/* Distinct (kind, name, file), a native one with its object as a second frame
	 * { name = object + 1 }: each a stack; id = index + 1. */
	struct aggregate *functions;
	uint32_t *function_of;	/* location -> function index */
};

static uint64_t used_str_hash(uint32_t k, const void *ctx)
{
	const struct pprof_ctx *c = ctx;

	return hash_u64(c->str_order[k]);
}

static bool used_str_equal(uint32_t k, const void *key, const void *ctx)
{
	const struct pprof_ctx *c = ctx;

	return c->str_order[k] == *(const uint32_t *)key;
}

/* In str_order, the second string of a pair (strtab__second()): a native frame's
 * source. Strtab ids stay far below: each is a string in memory. */
#define STR_SECOND (1u << 31)

/* The string a str_order entry stands for. */
static const char *used_str(const struct pprof_ctx *c, uint32_t key)
{
	const char *s = key & STR_SECOND ? strtab__second(c->p->strs, key & ~STR_SECOND) :
					   strtab__get(c->p->strs, key);

	return s ? s : "";
}

/* A strtab id (| STR_SECOND for its second string) as a string table index, added on
 * first use. */
static uint64_t str_id(struct pprof_ctx *c, uint32_t id)
{
	size_t i = hashmap__probe(&c->str_index, hash_u64(id), used_str_equal, &id, c);

	if (!hashmap__used(&c->str_index, i)) {
		if (!*used_str(c, id))
			return S_EMPTY;
		c->str_order[c->nstr] = id;
		hashmap__set(&c->str_index, i, (uint32_t)c->nstr++);
	}
	return c->str_base + hashmap__at(&c->str_index, i);
}

/* Room for every string the profile can name: its functions' names and files (at
 * most two per location), its mappings' files and build-ids and its threads' names. */
static int index_strings(struct pprof_ctx *c)
{
	size_t most = 2 * c->nlocs + 2 * c->nmappings + c->ix.nthreads + 1, n = 16;

	while (n < 2 * most)
		n *= 2;
	c->str_order = calloc(most, sizeof(*c->str_order));
	if (!c->str_order || hashmap__resize(&c->str_index, n, used_str_hash, c))
		return -ENOMEM;
	return 0;
}

/* The string table index of s among the label strings, added if new. The profile-wide
 * labels are a handful, so a linear search does. */
static uint64_t label_string(struct pprof_ctx *c, const char *s)
{
	size_t j = 0;

	while (j < c->nlabel_strings && strcmp(c->label_strings[j], s))
		j++;
	if (j == c->nlabel_strings)
		c->label_strings[c->nlabel_strings++] = s;
	return fixed_count(c->p) + j;
}

/*
 * One string table index per distinct label string; a label with an empty key or
 * value says nothing and is left out. Then, if the profile has asyncio tasks, the key
 * "task" and each task frame's bare name, for the label that names a sample's task:
 * they are there only then, so a profile without tasks keeps its bytes.
 */
static int index_labels(struct pprof_ctx *c)
{
	const struct profile *p = c->p;
	size_t nframes = profile_index__nframes(&c->ix), ntasks = 0;

	for (size_t i = 0; i < nframes; i++)
		ntasks += profile_index__frame(&c->ix, (uint32_t)i)->kind == AGG_TASK;
	c->str_base = fixed_count(p);
	if (!p->nlabels && !ntasks)
		return 0;
	c->label_str = calloc(2 * p->nlabels + 1, sizeof(*c->label_str));
	c->label_strings = calloc(2 * p->nlabels + 1 + ntasks, sizeof(*c->label_strings));
	c->task_label = ntasks ? calloc(nframes, sizeof(*c->task_label)) : NULL;
	if (!c->label_str || !c->label_strings || (ntasks && !c->task_label))
		return -ENOMEM;
	for (size_t i = 0; i < p->nlabels; i++) {
		const char *kv[2] = { p->labels[i].key, p->labels[i].value };

		if (!kv[0] || !kv[1] || !*kv[0] || !*kv[1])
			continue;
		for (size_t k = 0; k < 2; k++)
			c->label_str[2 * i + k] = label_string(c, kv[k]);
	}
	if (ntasks)
		c->task_key = label_string(c, "task");
	for (size_t i = 0; ntasks && i < nframes; i++) {
		const struct agg_frame *fr = profile_index__frame(&c->ix, (uint32_t)i);
		const char *name = strtab__get(p->strs, fr->name);

		if (fr->kind != AGG_TASK)
			continue;
		/* Distinct frames have distinct names, so these need no search. */
		if (!strncmp(name, "task ", 5))
			name += 5;
		c->task_label[i] = fixed_count(p) + c->nlabel_strings;
		c->label_strings[c->nlabel_strings++] = name;
	}
	c->str_base = fixed_count(p) + c->nlabel_strings;
	return 0;
}

/* The frame location @loc is of. */
static const struct agg_frame *loc_frame(const struct pprof_ctx *c, size_t loc)
{
	size_t nframes = profile_index__nframes(&c->ix);

	if (loc >= nframes)
		loc = aggregate__stack(c->extra_locs, loc - nframes)->frames->name;
	return profile_index__frame(&c->ix, (uint32_t)loc);
}

/* The object + 1 of location @loc, 0 if none. */
static uint32_t loc_object(const struct pprof_ctx *c, size_t loc)
{
	return c->loc_object ? c->loc_object[loc] : 0;
}

static int index_functions(struct pprof_ctx *c)
{
	int err;

	c->functions = aggregate__new();
	c->function_of = calloc(c->nlocs ? c->nlocs : 1, sizeof(*c->function_of));
	if (!c->functions || !c->function_of)
		return -ENOMEM;
	for (size_t i = 0; i < c->nlocs; i++) {
		struct agg_frame fn[2] = { *loc_frame(c, i), { .name = loc_object(c, i) } };

		fn[0].line = -1;
		err = aggregate__add(c->functions, 0, 0, fn, fn[0].kind == AGG_NATIVE ? 2 : 1, 1,
				     &c->function_of[i]);
		if (err)
			return err;
	}
	return 0;
}

static int has_native_frames(const struct profile_index *ix)
{
	for (size_t i = 0; i < profile_index__nframes(ix); i++)
		if (profile_index__frame(ix, (uint32_t)i)->kind == AGG_NATIVE)
			return 1;
	return 0;
}

/*
 * The location of frame @frame of a stack of process @pid, *@first holding per
 * distinct frame the object + 1 it was first seen in (UINT32_MAX: not yet): the frame
 * itself, or a (frame, object) pair after the distinct frames.
 */
static int native_loc(struct pprof_ctx *c, uint32_t pid, uint32_t frame, uint32_t *first,
		      uint32_t *loc)
{
	const struct agg_frame *fr = profile_index__frame(&c->ix, frame);
	struct agg_frame key = { .name = frame };
	uint32_t object;
	int err;

	*loc = frame;
	if (fr->kind != AGG_NATIVE)
		return 0;
	key.file = aggregate__native_object_of(c->p->agg, pid, fr->file, &object) ? 0
									     : object + 1;
	if (first[frame] == UINT32_MAX)
		first[frame] = key.file;
	if (first[frame] == key.file)
		return 0;
	err = aggregate__add(c->extra_locs, 0, 0, &key, 1, 1, loc);
	*loc += (uint32_t)profile_index__nframes(&c->ix);
	return err;
}

/* The objects of the locations, and a mapping for each object used, in first use. */
static int index_mappings(struct pprof_ctx *c, const uint32_t *first)
{
	size_t nframes = profile_index__nframes(&c->ix);
	size_t nobjects = aggregate__native_objects(c->p->agg);

	c->loc_object = calloc(c->nlocs, sizeof(*c->loc_object));
	c->mapping_of = calloc(nobjects ? nobjects : 1, sizeof(*c->mapping_of));
	c->mapping_object = calloc(nobjects ? nobjects : 1, sizeof(*c->mapping_object));
	c->mapping_lines = calloc(nobjects ? nobjects : 1, sizeof(*c->mapping_lines));
	if (!c->loc_object || !c->mapping_of || !c->mapping_object || !c->mapping_lines)
		return -ENOMEM;
	for (size_t i = 0; i < c->nlocs; i++) {
		uint32_t o = i < nframes ? first[i] :
			     aggregate__stack(c->extra_locs, i - nframes)->frames->file;

		c->loc_object[i] = o == UINT32_MAX ? 0 : o;
		if (!c->loc_object[i])
			continue;
		if (!c->mapping_of[o - 1]) {
			c->mapping_object[c->nmappings++] = o - 1;
			c->mapping_of[o - 1] = (uint32_t)c->nmappings;
		}
		if (profile__source(c->p, loc_frame(c, i)))
			c->mapping_lines[c->mapping_of[o - 1] - 1] = 1;
	}
	return 0;
}

/*
 * Locations: the distinct frames, each native one with the object its first stack's
 * process maps it from, and a location more for each other object a native frame is
 * in. A profile without native frames keeps the distinct frames as they are.
 */
static int index_locations(struct pprof_ctx *c)
{
	size_t nframes = profile_index__nframes(&c->ix), nstacks = aggregate__count(c->p->agg);
	uint32_t *first = NULL;
	int err = -ENOMEM;

	c->loc_ids = c->ix.frame_ids;
	c->nlocs = nframes;
	if (!has_native_frames(&c->ix))
		return 0;
	c->own_loc_ids = calloc(c->ix.frame_start[nstacks] + 1, sizeof(*c->own_loc_ids));
	first = malloc((nframes ? nframes : 1) * sizeof(*first));
	c->extra_locs = aggregate__new();
	if (!c->own_loc_ids || !first || !c->extra_locs)
		goto out;
	memset(first, 0xff, (nframes ? nframes : 1) * sizeof(*first));
	err = 0;
	for (size_t i = 0; i < nstacks && !err; i++) {
		const struct agg_stack *s = aggregate__stack(c->p->agg, i);
		const uint32_t *ids = profile_index__stack_frames(&c->ix, (uint32_t)i);
		uint32_t *locs = c->own_loc_ids + c->ix.frame_start[i];

		for (uint32_t k = 0; k < s->depth && !err; k++)
			err = native_loc(c, s->pid, ids[k], first, &locs[k]);
	}
	if (err)
		goto out;
	c->loc_ids = c->own_loc_ids;
	c->nlocs = nframes + aggregate__count(c->extra_locs);
	err = index_mappings(c, first);
out:
	free(first);
	return err;
}

static void put_value_type(struct pb *b, uint32_t field, uint64_t type, uint64_t unit)
{
	size_t m = pb__open(b);

	pb__uint(b, VALUE_TYPE_TYPE, type);
	pb__uint(b, VALUE_TYPE_UNIT, unit);
	pb__close(b, field, m);
}

static void put_label(struct pb *b, uint64_t key, uint64_t str, uint64_t num)
{
	size_t m = pb__open(b);

	pb__uint(b, LABEL_KEY, key);
	pb__uint(b, LABEL_STR, str);
	pb__uint(b, LABEL_NUM, num);
	pb__close(b, SAMPLE_LABEL, m);
}

static void put_sample(struct pprof_ctx *c, struct pb *b, uint32_t stack)
{
	const struct agg_stack *s = aggregate__stack(c->p->agg, stack);
	const struct pi_thread *t = &c->ix.threads[c->ix.thread_of[stack]];
	const uint32_t *ids = profile_index__stack_frames(&c->ix, stack);
	const uint32_t *locs = c->loc_ids + c->ix.frame_start[stack];
	size_t m = pb__open(b), packed;

	packed = pb__open(b);
	for (uint32_t k = s->depth; k-- > 0;)	/* leaf first */
		pb__varint(b, locs[k] + 1ull);
	pb__close(b, SAMPLE_LOCATION_ID, packed);
	packed = pb__open(b);
	if (c->p->unit == PROFILE_NS) {
		/* cpu, off_cpu, wall: a stack ending in a wait is off the CPU. */
		int wait = s->depth && s->frames[s->depth - 1].kind == AGG_WAIT;

		pb__varint(b, wait ? 0 : s->count);
		pb__varint(b, wait ? s->count : 0);
		pb__varint(b, s->count);
	} else {
		pb__varint(b, s->count);
		pb__varint(b, s->count * c->p->period_ns);
	}
	pb__close(b, SAMPLE_VALUE, packed);
	put_label(b, S_PID, 0, s->pid);
	put_label(b, S_THREAD_ID, 0, s->tid);
	if (t->name_id != PROFILE_NO_NAME)
		put_label(b, S_THREAD_NAME, str_id(c, t->name_id), 0);
	for (size_t i = 0; i < c->p->nlabels; i++)
		if (c->label_str[2 * i])
			put_label(b, c->label_str[2 * i], c->label_str[2 * i + 1], 0);
	/* The task the sample ran in (or waited in) is the innermost of its chain. */
	for (uint32_t k = s->depth; c->task_label && k-- > 0;)
		if (c->task_label[ids[k]]) {
			put_label(b, c->task_key, c->task_label[ids[k]], 0);
			break;
		}
	pb__close(b, PROFILE_SAMPLE, m);
}

static void put_mapping(struct pprof_ctx *c, struct pb *b, uint32_t i)
{
	struct agg_native_object o = aggregate__native_object_at(c->p->agg,
								  c->mapping_object[i]);
	size_t m = pb__open(b);

	pb__uint(b, MAPPING_ID, i + 1ull);
	/* Any vaddr: signed readers (Java's longs) must see a positive limit. */
	pb__uint(b, MAPPING_MEMORY_LIMIT, INT64_MAX);
	pb__uint(b, MAPPING_FILENAME, str_id(c, o.path));
	pb__uint(b, MAPPING_BUILD_ID, str_id(c, o.build_id));
	pb__uint(b, MAPPING_HAS_FUNCTIONS, 1);
	/* Lines from DWARF: a reader need not look for them again. pb__uint leaves 0 out. */
	pb__uint(b, MAPPING_HAS_FILENAMES, c->mapping_lines[i]);
	pb__uint(b, MAPPING_HAS_LINE_NUMBERS, c->mapping_lines[i]);
	pb__close(b, PROFILE_MAPPING, m);
}

/* A native location's mapping and address: its function's start + the offset, or the
 * start when the offset is unknown; none when the session did not say where it is. */
static void put_native_address(struct pprof_ctx *c, struct pb *b, const struct agg_frame *fr,
			       uint32_t object)
{
	uint64_t func_rel;

	if (!object)
		return;
	pb__uint(b, LOCATION_MAPPING_ID, c->mapping_of[object - 1]);
	if (aggregate__native_func_rel(c->p->agg, object - 1, fr->name, &func_rel))
		return;
	/* With a source line, the line is no offset: the function's start stands for
	 * the addresses of that line. */
	if (!profile__source(c->p, fr) && fr->line > 0)
		func_rel += (uint64_t)fr->line;
	pb__uint(b, LOCATION_ADDRESS, func_rel);
}

static void put_location(struct pprof_ctx *c, struct pb *b, uint32_t loc)
{
	const struct agg_frame *fr = loc_frame(c, loc);
	size_t m = pb__open(b), line;

	pb__uint(b, LOCATION_ID, loc + 1ull);
	if (fr->kind == AGG_NATIVE)
		put_native_address(c, b, fr, loc_object(c, loc));
	line = pb__open(b);
	pb__uint(b, LINE_FUNCTION_ID, c->function_of[loc] + 1ull);
	/* A native frame's "line" is its offset, which the address holds, unless the
	 * frame has a source. */
	if ((fr->kind != AGG_NATIVE || profile__source(c->p, fr)) && fr->line > 0)
		pb__uint(b, LINE_LINE, (uint64_t)fr->line);
	pb__close(b, LOCATION_LINE, line);
	pb__close(b, PROFILE_LOCATION, m);
}

static void put_function(struct pprof_ctx *c, struct pb *b, uint32_t fn)
{
	const struct agg_frame *fr = aggregate__stack(c->functions, fn)->frames;
	uint64_t name = str_id(c, fr->name);
	uint32_t object = fr->kind == AGG_NATIVE ? fr[1].name : 0;
	size_t m = pb__open(b);

	pb__uint(b, FUNCTION_ID, fn + 1ull);
	/* No system_name: Python names are not mangled, and a reader that sees the two
	 * equal "demangles" the system name; Go's pprof does, and takes a name in angle
	 * brackets (<module>, <lambda>) for C++ template arguments, leaving it empty. */
	pb__uint(b, FUNCTION_NAME, name);
	/* A native function's file is its source, from DWARF, else its object's path,
	 * or base name if unknown. */
	if (fr->kind == AGG_NATIVE && profile__source(c->p, fr))
		pb__uint(b, FUNCTION_FILENAME, str_id(c, fr->name | STR_SECOND));
	else if (object)
		pb__uint(b, FUNCTION_FILENAME,
			 str_id(c, aggregate__native_object_at(c->p->agg, object - 1).path));
	else if (fr->kind == AGG_PYTHON || fr->kind == AGG_NATIVE)
		pb__uint(b, FUNCTION_FILENAME, str_id(c, fr->file));
	pb__close(b, PROFILE_FUNCTION, m);
}

/*
 * The message in field order, in three parts: the string table can be written only
 * once everything that names a string has been encoded, and the fields after it name
 * one more (the comment).
 */
static int encode(struct pprof_ctx *c, struct pb *head, struct pb *strs, struct pb *tail)
{
	const struct profile *p = c->p;
	uint64_t comment = S_EMPTY;

	if (p->unit == PROFILE_NS) {
		/* Wall and off-CPU modes: time, in three views; readers default to the
		 * last, wall. */
		put_value_type(head, PROFILE_SAMPLE_TYPE, S_CPU, S_NANOSECONDS);
		put_value_type(head, PROFILE_SAMPLE_TYPE, S_OFF_CPU, S_NANOSECONDS);
		put_value_type(head, PROFILE_SAMPLE_TYPE, S_WALL, S_NANOSECONDS);
	} else {
		put_value_type(head, PROFILE_SAMPLE_TYPE, S_SAMPLES, S_COUNT);
		put_value_type(head, PROFILE_SAMPLE_TYPE, S_CPU, S_NANOSECONDS);
	}
	for (size_t i = 0; i < aggregate__count(p->agg); i++)
		put_sample(c, head, (uint32_t)i);
	for (size_t i = 0; i < c->nmappings; i++)
		put_mapping(c, head, (uint32_t)i);
	for (size_t i = 0; i < c->nlocs; i++)
		put_location(c, head, (uint32_t)i);
	for (size_t i = 0; i < aggregate__count(c->functions); i++)
		put_function(c, head, (uint32_t)i);
	if (p->target)
		comment = c->str_base + c->nstr;
	for (size_t i = 0; i < fixed_count(p); i++)
		pb__bytes(strs, PROFILE_STRING_TABLE, fixed_strings[i], strlen(fixed_strings[i]));
	for (size_t i = 0; i < c->nlabel_strings; i++)
		pb__bytes(strs, PROFILE_STRING_TABLE, c->label_strings[i],
			  strlen(c->label_strings[i]));
	for (size_t i = 0; i < c->nstr; i++) {
		const char *s = used_str(c, c->str_order[i]);

		pb__bytes(strs, PROFILE_STRING_TABLE, s, strlen(s));
	}
	if (p->target)
		pb__bytes(strs, PROFILE_STRING_TABLE, p->target, strlen(p->target));
	pb__uint(tail, PROFILE_TIME_NANOS, (uint64_t)p->start_unix_ns);
	pb__uint(tail, PROFILE_DURATION_NANOS, p->duration_ns);
	put_value_type(tail, PROFILE_PERIOD_TYPE, S_CPU, S_NANOSECONDS);
	pb__uint(tail, PROFILE_PERIOD, profile__tick_ns(p));
	pb__uint(tail, PROFILE_COMMENT, comment);
	return head->err ? head->err : strs->err ? strs->err : tail->err;
}

int out_pprof__write(FILE *f, const struct profile *p)
{
	struct pprof_ctx c = { .p = p };
	struct pb parts[3] = { { 0 } };
	int err = profile_index__build(&c.ix, p);

	if (err)
		return err;
	err = index_locations(&c);
	if (!err)
		err = index_strings(&c);
	if (!err)
		err = index_labels(&c);
	if (!err)
		err = index_functions(&c);
	if (!err)
		err = encode(&c, &parts[0], &parts[1], &parts[2]);
	if (!err)
		err = gzip__write(f, parts, 3);
	if (!err && ferror(f))
		err = -EIO;
	for (size_t i = 0; i < 3; i++)
		pb__free(&parts[i]);
	hashmap__free(&c.str_index);
	free(c.str_order);
	free(c.function_of);
	free(c.own_loc_ids);
	aggregate__free(c.extra_locs);
	free(c.loc_object);
	free(c.mapping_of);
	free(c.mapping_object);
	free(c.mapping_lines);
	free(c.label_str);
	free(c.label_strings);
	free(c.task_label);
	aggregate__free(c.functions);
	profile_index__free(&c.ix);
	return err;
}
