// SPDX-License-Identifier: GPL-2.0-only
/*
 * The profile file; see profile_file.h and docs/profile-format.md.
 *
 * Protocol buffers (pb.h, pb_read.h) under gzip: a format that `protoc --decode_raw`
 * can show and any language can read, written with the encoder pprof already uses.
 * Strings are written in id order and every table in its own order, so that the
 * profile read back has the ids and the indices it had, which is what makes a
 * conversion give the bytes a direct write gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/gzip.h"
#include "base/pb.h"
#include "base/pb_read.h"
#include "base/strtab.h"
#include "base/vec.h"
#include "output/profile_file.h"
#include "profile/profile_index.h"

static const char MAGIC[] = "pybpfprof profile";

/* The top-level message, Profile. */
enum {
	F_MAGIC = 1,
	F_VERSION = 2,
	F_STRING = 3,		/* repeated bytes: string i is strtab id i */
	F_TARGET = 4,
	F_START_UNIX_NS = 5,
	F_DURATION_NS = 6,
	F_RATE_HZ = 7,
	F_PERIOD_NS = 8,
	F_UNIT = 9,
	F_MODE = 10,
	F_LABEL = 11,		/* Label */
	F_THREAD = 12,		/* Thread */
	F_STACK = 13,		/* Stack */
	F_TIMELINE = 14,	/* packed (t_ns, weight_ns, stack) triples */
	F_NATIVE_OBJECT = 15,	/* NativeObject */
	F_NATIVE_PROC = 16,	/* NativeProc */
	F_NATIVE_FUNCTION = 17,	/* NativeFunction */
	F_SOURCE = 18,		/* Source */
};

/* Every sub-message numbers its fields from 1, in the order of its C struct. */
enum { S1 = 1, S2, S3, S4 };

/* A stack deeper than this is no stack pybpfprof writes. */
#define DEPTH_MAX (1u << 16)

/* ---- writing --------------------------------------------------------------------- */

static void put_text(struct pb *b, uint32_t field, const char *s)
{
	if (s)
		pb__bytes(b, field, s, strlen(s));
}

/*
 * What is written of the string table and the threads: only what the profile uses,
 * renumbered in the order it had. A profile cut from a session that profiled many
 * processes (the agent's, one per process) then carries none of the others' names, and
 * a profile read back has the same order of ids, which is all a writer can see of them.
 */
struct keep {
	uint32_t *str;		/* old id -> new id + 1; 0: not written */
	size_t nstr;
	uint32_t *thread;	/* old slot -> new slot + 1 */
	size_t nthread;
};

static void mark_str(struct keep *k, uint32_t id)
{
	if (id < k->nstr)
		k->str[id] = 1;
}

static uint32_t str_id(const struct keep *k, uint32_t id)
{
	return id < k->nstr && k->str[id] ? k->str[id] - 1 : 0;
}

/* Ids that may be PROFILE_NO_NAME go out as id + 1, 0 meaning none. */
static uint64_t opt_str_id(const struct keep *k, uint32_t id)
{
	return id == PROFILE_NO_NAME ? 0 : (uint64_t)str_id(k, id) + 1;
}

/* The threads the stacks are of, and those thread frames name. */
static int mark_threads(struct keep *k, const struct profile *p)
{
	struct profile_index ix;

	if (profile_index__build_threads(&ix, p))
		return -ENOMEM;
	for (size_t i = 0; i < aggregate__count(p->agg); i++) {
		const struct agg_stack *st = aggregate__stack(p->agg, i);

		for (uint32_t f = 0; f < st->depth; f++)
			if (st->frames[f].kind == AGG_THREAD && st->frames[f].line >= 0 &&
			    (size_t)st->frames[f].line < k->nthread)
				k->thread[st->frames[f].line] = 1;
	}
	for (size_t i = 0; i < k->nthread; i++)
		if (profile_index__thread(&ix, p->threads[i].pid, p->threads[i].tid))
			k->thread[i] = 1;
	profile_index__free(&ix);
	return 0;
}

static int keep_used(struct keep *k, const struct profile *p)
{
	const struct aggregate *agg = p->agg;
	uint32_t next = 0;

	k->nstr = strtab__count(p->strs);
	k->nthread = p->nthreads;
	k->str = calloc(k->nstr ? k->nstr : 1, sizeof(*k->str));
	k->thread = calloc(k->nthread ? k->nthread : 1, sizeof(*k->thread));
	if (!k->str || !k->thread || mark_threads(k, p))
		return -ENOMEM;
	for (size_t i = 0; i < aggregate__count(agg); i++) {
		const struct agg_stack *st = aggregate__stack(agg, i);

		for (uint32_t f = 0; f < st->depth; f++) {
			mark_str(k, st->frames[f].name);
			mark_str(k, st->frames[f].file);
		}
	}
	for (size_t i = 0; i < k->nthread; i++)
		if (k->thread[i]) {
			if (p->threads[i].name != PROFILE_NO_NAME)
				mark_str(k, p->threads[i].name);
			if (p->threads[i].label != PROFILE_NO_NAME)
				mark_str(k, p->threads[i].label);
			k->thread[i] = ++next;
		}
	for (uint32_t i = 0; i < aggregate__native_objects(agg); i++) {
		struct agg_native_object o = aggregate__native_object_at(agg, i);

		mark_str(k, o.file);
		mark_str(k, o.path);
		mark_str(k, o.build_id);
	}
	for (uint32_t i = 0; i < aggregate__native_procs(agg); i++)
		mark_str(k, aggregate__native_proc_at(agg, i).file);
	for (uint32_t i = 0; i < aggregate__native_functions(agg); i++)
		mark_str(k, aggregate__native_function_at(agg, i).name);
	for (size_t i = 0; i < p->nsources; i++)
		mark_str(k, p->sources[i].file);
	next = 0;
	for (size_t i = 0; i < k->nstr; i++)
		if (k->str[i])
			k->str[i] = ++next;
	return 0;
}

static void put_stacks(struct pb *b, const struct aggregate *agg, const struct keep *k)
{
	for (size_t i = 0; i < aggregate__count(agg); i++) {
		const struct agg_stack *st = aggregate__stack(agg, i);
		size_t m = pb__open(b), frames;

		pb__uint(b, S1, st->count);
		pb__uint(b, S2, st->pid);
		pb__uint(b, S3, st->tid);
		frames = pb__open(b);
		for (uint32_t f = 0; f < st->depth; f++) {
			const struct agg_frame *fr = &st->frames[f];
			int64_t line = fr->line;

			/* A thread frame's line is its thread's slot, renumbered too. */
			if (fr->kind == AGG_THREAD && line >= 0 && (size_t)line < k->nthread &&
			    k->thread[line])
				line = k->thread[line] - 1;
			pb__varint(b, fr->kind);
			pb__varint(b, str_id(k, fr->name));
			pb__varint(b, str_id(k, fr->file));
			pb__varint(b, (uint64_t)(line + 1));
		}
		pb__close(b, S4, frames);
		pb__close(b, F_STACK, m);
	}
}

static void put_natives(struct pb *b, const struct aggregate *agg, const struct keep *k)
{
	for (uint32_t i = 0; i < aggregate__native_objects(agg); i++) {
		struct agg_native_object o = aggregate__native_object_at(agg, i);
		size_t m = pb__open(b);

		pb__uint(b, S1, str_id(k, o.file));
		pb__uint(b, S2, str_id(k, o.path));
		pb__uint(b, S3, str_id(k, o.build_id));
		pb__close(b, F_NATIVE_OBJECT, m);
	}
	for (uint32_t i = 0; i < aggregate__native_procs(agg); i++) {
		struct agg_native_proc np = aggregate__native_proc_at(agg, i);
		size_t m = pb__open(b);

		pb__uint(b, S1, np.pid);
		pb__uint(b, S2, str_id(k, np.file));
		pb__uint(b, S3, np.object);
		pb__close(b, F_NATIVE_PROC, m);
	}
	for (uint32_t i = 0; i < aggregate__native_functions(agg); i++) {
		struct agg_native_function nf = aggregate__native_function_at(agg, i);
		size_t m = pb__open(b);

		pb__uint(b, S1, nf.object);
		pb__uint(b, S2, str_id(k, nf.name));
		pb__uint(b, S3, nf.func_rel);
		pb__close(b, F_NATIVE_FUNCTION, m);
	}
}

static void put_profile(struct pb *b, const struct profile *p, const struct keep *k)
{
	size_t m;

	pb__bytes(b, F_MAGIC, MAGIC, sizeof(MAGIC) - 1);
	pb__uint(b, F_VERSION, PROFILE_FILE_VERSION);
	for (uint32_t i = 0; i < k->nstr; i++)
		if (k->str[i])
			pb__bytes(b, F_STRING, strtab__get(p->strs, i), strtab__len(p->strs, i));
	put_text(b, F_TARGET, p->target);
	pb__uint(b, F_START_UNIX_NS, (uint64_t)p->start_unix_ns);
	pb__uint(b, F_DURATION_NS, p->duration_ns);
	pb__uint(b, F_RATE_HZ, p->rate_hz);
	pb__uint(b, F_PERIOD_NS, p->period_ns);
	pb__uint(b, F_UNIT, p->unit);
	put_text(b, F_MODE, p->mode);
	for (size_t i = 0; i < p->nlabels; i++) {
		m = pb__open(b);
		put_text(b, S1, p->labels[i].key);
		put_text(b, S2, p->labels[i].value);
		pb__close(b, F_LABEL, m);
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		if (!k->thread[i])
			continue;
		m = pb__open(b);
		pb__uint(b, S1, p->threads[i].pid);
		pb__uint(b, S2, p->threads[i].tid);
		pb__uint(b, S3, opt_str_id(k, p->threads[i].name));
		pb__uint(b, S4, opt_str_id(k, p->threads[i].label));
		pb__close(b, F_THREAD, m);
	}
	put_stacks(b, p->agg, k);
	if (p->ntimeline) {
		m = pb__open(b);
		for (size_t i = 0; i < p->ntimeline; i++) {
			pb__varint(b, p->timeline[i].t_ns);
			pb__varint(b, p->timeline[i].weight_ns);
			pb__varint(b, p->timeline[i].stack);
		}
		pb__close(b, F_TIMELINE, m);
	}
	put_natives(b, p->agg, k);
	for (size_t i = 0; i < p->nsources; i++) {
		m = pb__open(b);
		pb__uint(b, S1, p->sources[i].pid);
		pb__uint(b, S2, str_id(k, p->sources[i].file));
		pb__bytes(b, S3, p->sources[i].text, p->sources[i].len);
		pb__close(b, F_SOURCE, m);
	}
}

int profile_file__write(FILE *f, const struct profile *p)
{
	struct keep k = { 0 };
	struct pb b = { 0 };
	int err = keep_used(&k, p);

	if (!err) {
		put_profile(&b, p, &k);
		err = b.err ? b.err : gzip__write(f, &b, 1);
	}
	if (!err && ferror(f))
		err = -EIO;
	pb__free(&b);
	free(k.str);
	free(k.thread);
	return err;
}

/* ---- reading --------------------------------------------------------------------- */

struct load {
	struct profile_file *pf;
	char *why;
	size_t whylen;
	size_t nstrings;
	size_t cap_threads, cap_labels, cap_sources, cap_timeline, cap_texts;
};

__attribute__((format(printf, 2, 3)))
static int bad(struct load *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->why, l->whylen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* A copy of @r's bytes as a C string, kept until profile_file__free(). */
static int keep_text(struct load *l, const struct pb_reader *r, const char **out)
{
	struct profile_file *pf = l->pf;
	size_t len = (size_t)(r->end - r->p);
	char *s;

	if (vec__reserve((void **)&pf->texts, &l->cap_texts, pf->ntexts + 1,
			 sizeof(*pf->texts), 16))
		return -ENOMEM;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, r->p, len);
	s[len] = 0;
	pf->texts[pf->ntexts++] = s;
	*out = s;
	return 0;
}

/* A string id that must name a string of the file. */
static int check_id(struct load *l, uint64_t id, const char *what)
{
	if (id >= l->nstrings)
		return bad(l, "%s names string %llu of %zu", what, (unsigned long long)id,
			   l->nstrings);
	return 0;
}

/* An id written as id + 1 (opt_id()). */
static int check_opt_id(struct load *l, uint64_t v, const char *what, uint32_t *id)
{
	if (!v) {
		*id = PROFILE_NO_NAME;
		return 0;
	}
	*id = (uint32_t)(v - 1);
	return check_id(l, v - 1, what);
}

/* The sub-message @r's fields 1..@n as varints into @v (others are skipped). */
static int read_fields(struct load *l, struct pb_reader *r, uint64_t *v, uint32_t n,
		       const char *what)
{
	struct pb_reader sub;
	uint64_t x;
	uint32_t field;

	memset(v, 0, n * sizeof(*v));
	while (pb_read__next(r, &field, &x, &sub))
		if (field >= 1 && field <= n && sub.p == sub.end)
			v[field - 1] = x;
	return r->err ? bad(l, "a %s is cut short or malformed", what) : 0;
}

static int fits_u32(struct load *l, const uint64_t *v, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] > UINT32_MAX)
			return bad(l, "a %s holds a value out of range", what);
	return 0;
}

static int read_head(struct load *l, uint32_t field, uint64_t v, struct pb_reader *sub)
{
	struct profile *p = &l->pf->p;
	int64_t id;

	switch (field) {
	case F_STRING:
		id = strtab__intern(l->pf->strs, (const char *)sub->p, (size_t)(sub->end - sub->p));
		if (id < 0)
			return (int)id;
		if ((size_t)id != l->nstrings)
			return bad(l, "string %zu repeats string %lld", l->nstrings, (long long)id);
		l->nstrings++;
		return 0;
	case F_TARGET:
		return keep_text(l, sub, &p->target);
	case F_MODE:
		return keep_text(l, sub, &p->mode);
	case F_START_UNIX_NS:
		p->start_unix_ns = (int64_t)v;
		return 0;
	case F_DURATION_NS:
		p->duration_ns = v;
		return 0;
	case F_RATE_HZ:
		if (v > UINT32_MAX)
			return bad(l, "the rate is out of range");
		p->rate_hz = (uint32_t)v;
		return 0;
	case F_PERIOD_NS:
		p->period_ns = v;
		return 0;
	case F_UNIT:
		if (v > PROFILE_NS)
			return bad(l, "unknown unit %llu", (unsigned long long)v);
		p->unit = (enum profile_unit)v;
		return 0;
	}
	return 0;
}

static int read_label(struct load *l, struct pb_reader *r)
{
	struct profile_file *pf = l->pf;
	struct profile_label lb = { "", "" };
	struct pb_reader sub;
	uint64_t v;
	uint32_t field;
	int err = 0;

	while (!err && pb_read__next(r, &field, &v, &sub))
		if (field == S1 || field == S2)
			err = keep_text(l, &sub, field == S1 ? &lb.key : &lb.value);
	if (!err && r->err)
		err = bad(l, "a label is malformed");
	if (!err && vec__reserve((void **)&pf->labels, &l->cap_labels, pf->p.nlabels + 1,
				 sizeof(*pf->labels), 8))
		err = -ENOMEM;
	if (!err)
		pf->labels[pf->p.nlabels++] = lb;
	return err;
}

static int read_thread(struct load *l, struct pb_reader *r)
{
	struct profile_file *pf = l->pf;
	struct profile_thread t;
	uint64_t v[4];
	int err = read_fields(l, r, v, 4, "thread");

	if (!err)
		err = fits_u32(l, v, 2, "thread");
	if (!err)
		err = check_opt_id(l, v[2], "a thread's name", &t.name);
	if (!err)
		err = check_opt_id(l, v[3], "a thread's label", &t.label);
	if (err)
		return err;
	t.pid = (uint32_t)v[0];
	t.tid = (uint32_t)v[1];
	if (vec__reserve((void **)&pf->threads, &l->cap_threads, pf->p.nthreads + 1,
			 sizeof(*pf->threads), 64))
		return -ENOMEM;
	pf->threads[pf->p.nthreads++] = t;
	return 0;
}

static int read_frames(struct load *l, struct pb_reader *r, struct agg_frame **frames,
		       size_t *cap, uint32_t *depth)
{
	uint64_t v[4];

	*depth = 0;
	while (pb_read__more(r)) {
		struct agg_frame *fr;

		for (int k = 0; k < 4; k++)
			if (pb_read__varint(r, &v[k]))
				return bad(l, "a stack's frames are cut short");
		if (*depth == DEPTH_MAX)
			return bad(l, "a stack is deeper than %u frames", DEPTH_MAX);
		if (v[0] > AGG_NATIVE)
			return bad(l, "a frame of unknown kind %llu", (unsigned long long)v[0]);
		if (check_id(l, v[1], "a frame") || check_id(l, v[2], "a frame"))
			return -EBADMSG;
		if (v[3] > (uint64_t)INT32_MAX + 1)
			return bad(l, "a frame's line is out of range");
		if (vec__reserve((void **)frames, cap, *depth + 1, sizeof(**frames), 64))
			return -ENOMEM;
		fr = &(*frames)[(*depth)++];
		*fr = (struct agg_frame){ .kind = (uint32_t)v[0], .name = (uint32_t)v[1],
					  .file = (uint32_t)v[2], .line = (int32_t)((int64_t)v[3] - 1) };
	}
	return 0;
}

static int read_stack(struct load *l, struct pb_reader *r, struct agg_frame **frames,
		      size_t *cap)
{
	struct aggregate *agg = l->pf->agg;
	size_t want = aggregate__count(agg);
	uint64_t v[3] = { 0 };
	struct pb_reader sub, fr = { 0 };
	uint32_t field, depth = 0, index;
	uint64_t x;
	int err;

	while (pb_read__next(r, &field, &x, &sub)) {
		if (field == S4)
			fr = sub;
		else if (field <= 3 && sub.p == sub.end)
			v[field - 1] = x;
	}
	if (r->err)
		return bad(l, "stack %zu is cut short or malformed", want);
	err = fits_u32(l, v + 1, 2, "stack");
	if (!err)
		err = read_frames(l, &fr, frames, cap, &depth);
	if (!err && !depth)
		err = bad(l, "stack %zu has no frames", want);
	if (!err)
		err = aggregate__add(agg, (uint32_t)v[1], (uint32_t)v[2], *frames, depth, v[0],
				     &index);
	if (!err && index != want)
		err = bad(l, "stack %zu repeats stack %u", want, index);
	return err;
}

static int read_source(struct load *l, struct pb_reader *r)
{
	struct profile_file *pf = l->pf;
	struct profile_source s = { 0 };
	struct pb_reader sub, text = { 0 };
	uint64_t v;
	uint32_t field;
	int err;

	while (pb_read__next(r, &field, &v, &sub)) {
		if (field == S1 && v <= UINT32_MAX)
			s.pid = (uint32_t)v;
		else if (field == S2)
			s.file = (uint32_t)(v > UINT32_MAX ? UINT32_MAX : v);
		else if (field == S3)
			text = sub;
	}
	if (r->err)
		return bad(l, "a source is cut short or malformed");
	err = check_id(l, s.file, "a source");
	if (!err && text.p)
		err = keep_text(l, &text, &s.text);
	if (err)
		return err;
	s.len = text.p ? (size_t)(text.end - text.p) : 0;
	if (!s.text)
		s.text = "";
	if (vec__reserve((void **)&pf->sources, &l->cap_sources, pf->p.nsources + 1,
			 sizeof(*pf->sources), 16))
		return -ENOMEM;
	pf->sources[pf->p.nsources++] = s;
	return 0;
}

static int read_native_object(struct load *l, struct pb_reader *r)
{
	uint64_t v[3];
	int err = read_fields(l, r, v, 3, "native object");

	for (int k = 0; !err && k < 3; k++)
		err = check_id(l, v[k], "a native object");
	if (!err)
		err = aggregate__put_native_object(l->pf->agg, (struct agg_native_object){
			(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2] });
	return err == -EEXIST ? bad(l, "a native object is named twice") : err;
}

static int read_native_proc(struct load *l, struct pb_reader *r)
{
	uint64_t v[3];
	int err = read_fields(l, r, v, 3, "native mapping");

	if (!err)
		err = fits_u32(l, v, 3, "native mapping");
	if (!err)
		err = check_id(l, v[1], "a native mapping");
	if (!err)
		err = aggregate__put_native_proc(l->pf->agg, (struct agg_native_proc){
			(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2] });
	if (err == -EEXIST || err == -ENOENT)
		return bad(l, "a native mapping is repeated or names no object");
	return err;
}

static int read_native_function(struct load *l, struct pb_reader *r)
{
	uint64_t v[3];
	int err = read_fields(l, r, v, 3, "native function");

	if (!err)
		err = fits_u32(l, v, 1, "native function");
	if (!err)
		err = check_id(l, v[1], "a native function");
	if (!err)
		err = aggregate__put_native_function(l->pf->agg, (struct agg_native_function){
			(uint32_t)v[0], (uint32_t)v[1], v[2] });
	if (err == -EEXIST || err == -ENOENT)
		return bad(l, "a native function is repeated or names no object");
	return err;
}

static int read_timeline(struct load *l, struct pb_reader *r)
{
	struct profile_file *pf = l->pf;
	size_t nstacks = aggregate__count(pf->agg);
	uint64_t v[3];

	while (pb_read__more(r)) {
		for (int k = 0; k < 3; k++)
			if (pb_read__varint(r, &v[k]))
				return bad(l, "the timeline is cut short");
		if (v[2] >= nstacks)
			return bad(l, "the timeline names stack %llu of %zu",
				   (unsigned long long)v[2], nstacks);
		if (vec__reserve((void **)&pf->timeline, &l->cap_timeline, pf->p.ntimeline + 1,
				 sizeof(*pf->timeline), 4096))
			return -ENOMEM;
		pf->timeline[pf->p.ntimeline++] = (struct profile_sample){
			.t_ns = v[0], .weight_ns = v[1], .stack = (uint32_t)v[2] };
	}
	return 0;
}

/*
 * The fields in three passes, each over the whole message, so that every id is checked
 * against a table already complete whatever order a writer put the fields in: strings
 * and scalars; then threads, stacks, objects, labels and sources; then what names
 * stacks and objects.
 */
static int read_pass(struct load *l, const uint8_t *data, size_t len, int pass)
{
	struct pb_reader r = pb_read__init(data, len), sub;
	struct agg_frame *frames = NULL;
	size_t cap = 0;
	uint64_t v;
	uint32_t field;
	int err = 0;

	while (!err && pb_read__next(&r, &field, &v, &sub)) {
		if (pass == 0) {
			err = read_head(l, field, v, &sub);
		} else if (pass == 1) {
			err = field == F_LABEL ? read_label(l, &sub) :
			      field == F_THREAD ? read_thread(l, &sub) :
			      field == F_STACK ? read_stack(l, &sub, &frames, &cap) :
			      field == F_NATIVE_OBJECT ? read_native_object(l, &sub) :
			      field == F_SOURCE ? read_source(l, &sub) : 0;
		} else {
			err = field == F_NATIVE_PROC ? read_native_proc(l, &sub) :
			      field == F_NATIVE_FUNCTION ? read_native_function(l, &sub) :
			      field == F_TIMELINE ? read_timeline(l, &sub) : 0;
		}
	}
	free(frames);
	if (!err && r.err)
		err = bad(l, "the file is cut short or malformed");
	return err;
}

/* The file must open with the magic, then give a version this build reads. */
static int read_magic(struct load *l, const uint8_t *data, size_t len)
{
	struct pb_reader r = pb_read__init(data, len), sub;
	uint64_t v, version = 0;
	uint32_t field;

	if (!pb_read__next(&r, &field, &v, &sub) || field != F_MAGIC ||
	    (size_t)(sub.end - sub.p) != sizeof(MAGIC) - 1 || memcmp(sub.p, MAGIC, sizeof(MAGIC) - 1))
		return bad(l, "not a pybpfprof profile file");
	while (pb_read__next(&r, &field, &v, &sub))
		if (field == F_VERSION && sub.p == sub.end)
			version = v;
	if (version > PROFILE_FILE_VERSION) {
		snprintf(l->why, l->whylen, "a profile file of format version %llu; this "
			 "pybpfprof reads version %d", (unsigned long long)version,
			 PROFILE_FILE_VERSION);
		return -EPROTO;
	}
	return version ? 0 : bad(l, "a profile file without a version");
}

/* What the writers divide by and look up must make sense. */
static int check_profile(struct load *l)
{
	struct profile *p = &l->pf->p;

	if (!p->rate_hz || !p->period_ns)
		return bad(l, "a profile without a sampling rate");
	if (!p->mode || (strcmp(p->mode, "cpu") && strcmp(p->mode, "wall") &&
			 strcmp(p->mode, "off-cpu")))
		return bad(l, "a profile of an unknown mode");
	if ((p->unit == PROFILE_TICKS) != !strcmp(p->mode, "cpu"))
		return bad(l, "a profile whose unit does not fit its mode");
	return 0;
}

static int open_input(const char *path, char *why, size_t whylen)
{
	struct stat st;
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) :
				     dup(STDIN_FILENO);

	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -errno;
	}
	/* A FIFO or a pipe is read as it comes; a directory or a device is no profile. */
	if (fstat(fd, &st) || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
		close(fd);
		snprintf(why, whylen, "not a regular file");
		return -EINVAL;
	}
	return fd;
}

int profile_file__parse(const uint8_t *data, size_t len, struct profile_file *pf, char *why,
			size_t whylen)
{
	struct load l = { .pf = pf, .why = why, .whylen = whylen };
	int err;

	*pf = (struct profile_file){ 0 };
	why[0] = 0;
	pf->strs = strtab__new();
	pf->agg = aggregate__new();
	err = pf->strs && pf->agg ? read_magic(&l, data, len) : -ENOMEM;
	for (int pass = 0; !err && pass < 3; pass++)
		err = read_pass(&l, data, len, pass);
	if (!err)
		err = check_profile(&l);
	if (err == -ENOMEM)
		snprintf(why, whylen, "out of memory");
	if (err) {
		profile_file__free(pf);
		return err;
	}
	pf->p.agg = pf->agg;
	pf->p.strs = pf->strs;
	pf->p.threads = pf->threads;
	pf->p.timeline = pf->timeline;
	pf->p.labels = pf->labels;
	pf->p.sources = pf->sources;
	return 0;
}

int profile_file__load(const char *path, struct profile_file *pf, char *why, size_t whylen)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int fd, err;

	*pf = (struct profile_file){ 0 };
	why[0] = 0;
	fd = open_input(path, why, whylen);
	if (fd < 0)
		return fd;
	err = gzip__read(fd, PROFILE_FILE_MAX, &data, &len);
	close(fd);
	if (err == -EBADMSG)
		snprintf(why, whylen, "not a pybpfprof profile file (not gzip, or cut short)");
	else if (err == -EFBIG)
		snprintf(why, whylen, "holds more than %u MiB once inflated",
			 PROFILE_FILE_MAX >> 20);
	else if (err)
		snprintf(why, whylen, "%s", strerror(-err));
	if (!err)
		err = profile_file__parse(data, len, pf, why, whylen);
	free(data);
	return err;
}

void profile_file__free(struct profile_file *pf)
{
	aggregate__free(pf->agg);
	strtab__free(pf->strs);
	free(pf->threads);
	free(pf->timeline);
	free(pf->labels);
	free(pf->sources);
	for (size_t i = 0; i < pf->ntexts; i++)
		free(pf->texts[i]);
	free(pf->texts);
	*pf = (struct profile_file){ 0 };
}
