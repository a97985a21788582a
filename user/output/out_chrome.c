// SPDX-License-Identifier: GPL-2.0-only
/*
 * Chrome's trace-event JSON. Samples become a flame chart in time: a frame stays open
 * while consecutive samples of its thread keep it (and every frame above it) and no
 * gap lies between them, so a function that runs for 50 ms is one 50 ms event, not
 * fifty. A thread's events are written sorted by start, parents before children, as
 * the trace viewers expect; timestamps are exact ("%llu.%03u" of nanoseconds, no
 * floating point), so the same profile gives the same bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "base/json.h"
#include "output/out_chrome.h"
#include "profile/profile_index.h"
#include "base/vec.h"

struct span {
	uint64_t start, end;
	uint32_t depth, frame;
};

struct chrome_ctx {
	const struct profile *p;
	struct profile_index ix;
	/* Each distinct frame's JSON members (name, cat, args), written once. */
	char *frame_json;
	size_t *frame_at;
	/* The frames open on the current thread, and the spans closed so far. */
	uint32_t *open_frame;
	uint64_t *open_start;
	uint32_t nopen;
	struct span *spans;
	size_t nspans, spans_cap;
};

/* After the name: "+0xOFF (OBJECT)", or "(SOURCE:LINE)" with DWARF line info, and
 * args that say the same in fields (the source's whole path). */
static void put_native_json(FILE *f, const struct profile *p, const struct agg_frame *fr)
{
	const char *lib = profile__lib(p, fr), *src = profile__source(p, fr);

	if (!src && fr->line >= 0)
		fprintf(f, "+0x%x", (unsigned)fr->line);
	fputs(" (", f);
	json__chars(f, src ? profile__base_name(src) : lib);
	if (src && fr->line >= 0)
		fprintf(f, ":%d", fr->line);
	fputs(")\",\"cat\":\"native\",\"args\":{\"object\":", f);
	json__string(f, lib);
	if (src) {
		fputs(",\"file\":", f);
		json__string(f, src);
	}
	if (fr->line >= 0)
		fprintf(f, src ? ",\"line\":%d" : ",\"offset\":%d", fr->line);
	fputc('}', f);
}

/* The name is as in the collapsed format, so that names match between the two. */
static void put_frame_json(FILE *f, const struct profile *p, const struct agg_frame *fr)
{
	const char *file = profile__file(p, fr);

	fputs("\"name\":\"", f);
	json__chars(f, profile__name(p, fr));
	if (fr->kind == AGG_NATIVE) {
		put_native_json(f, p, fr);
		return;
	}
	if (!file) {
		fputs("\",\"cat\":\"pybpfprof\"", f);
		return;
	}
	fputs(" (", f);
	json__chars(f, file);
	if (fr->line >= 0)
		fprintf(f, ":%d", fr->line);
	fputs(")\",\"cat\":\"python\",\"args\":{\"file\":", f);
	json__string(f, file);
	if (fr->line >= 0)
		fprintf(f, ",\"line\":%d", fr->line);
	fputc('}', f);
}

static int build_frame_json(struct chrome_ctx *c)
{
	size_t n = profile_index__nframes(&c->ix), len = 0;
	FILE *m;

	c->frame_at = calloc(n + 1, sizeof(*c->frame_at));
	if (!c->frame_at)
		return -ENOMEM;
	m = open_memstream(&c->frame_json, &len);
	if (!m)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		c->frame_at[i] = (size_t)ftell(m);
		put_frame_json(m, c->p, profile_index__frame(&c->ix, (uint32_t)i));
		fputc(0, m);
	}
	if (ferror(m)) {
		fclose(m);
		return -ENOMEM;
	}
	return fclose(m) ? -errno : 0;
}

static int close_frames(struct chrome_ctx *c, uint32_t keep, uint64_t at)
{
	while (c->nopen > keep) {
		c->nopen--;
		int err = vec__reserve((void **)&c->spans, &c->spans_cap, c->nspans + 1,
				       sizeof(*c->spans), 1024);

		if (err)
			return err;
		c->spans[c->nspans++] = (struct span){
			.start = c->open_start[c->nopen],
			.end = at,
			.depth = c->nopen,
			.frame = c->open_frame[c->nopen],
		};
	}
	return 0;
}

/* The spans of one thread's samples, into c->spans. */
static int thread_spans(struct chrome_ctx *c, const struct pi_thread *t)
{
	const struct pi_sample *s = c->ix.samples + t->first;
	uint64_t end = 0;
	int err = 0;

	c->nspans = 0;
	c->nopen = 0;
	for (size_t i = 0; i < t->n && !err; i++) {
		const uint32_t *ids = profile_index__stack_frames(&c->ix, s[i].stack);
		uint32_t depth = aggregate__stack(c->p->agg, s[i].stack)->depth, same = 0;
		uint64_t len = s[i].weight_ns;

		if (i + 1 < t->n && s[i + 1].t_ns - s[i].t_ns < len)
			len = s[i + 1].t_ns - s[i].t_ns;
		if (!len)	/* a duplicate timestamp: nothing to show */
			continue;
		if (s[i].t_ns == end)
			while (same < c->nopen && same < depth && c->open_frame[same] == ids[same])
				same++;
		err = close_frames(c, same, end);
		for (uint32_t k = same; k < depth; k++) {
			c->open_frame[k] = ids[k];
			c->open_start[k] = s[i].t_ns;
		}
		c->nopen = depth;
		end = s[i].t_ns + len;
	}
	return err ? err : close_frames(c, 0, end);
}

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static void put_us(FILE *f, const char *key, uint64_t ns)
{
	fprintf(f, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

/* The process's name as its process frame gives it, else its pid. */
static void put_process_name(FILE *f, const struct chrome_ctx *c, uint32_t pid)
{
	for (size_t i = 0; i < aggregate__count(c->p->agg); i++) {
		const struct agg_stack *s = aggregate__stack(c->p->agg, i);

		for (uint32_t k = 0; s->pid == pid && k < s->depth; k++)
			if (s->frames[k].kind == AGG_PROCESS) {
				json__string(f, profile__name(c->p, &s->frames[k]));
				return;
			}
	}
	fprintf(f, "\"pid %" PRIu32 "\"", pid);
}

/* The tracks: every process and thread named, before any event. */
static void put_metadata(FILE *f, const struct chrome_ctx *c)
{
	for (size_t i = 0; i < c->ix.nthreads; i++) {
		const struct pi_thread *t = &c->ix.threads[i];

		if (!i || c->ix.threads[i - 1].pid != t->pid) {
			fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
				   ",\"tid\":%" PRIu32 ",\"ts\":0,\"args\":{\"name\":",
				i ? ",\n" : "\n", t->pid, t->pid);
			put_process_name(f, c, t->pid);
			fputs("}}", f);
		}
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32
			   ",\"tid\":%" PRIu32 ",\"ts\":0,\"args\":{\"name\":", t->pid, t->tid);
		if (t->name)
			json__string(f, t->name);
		else
			fprintf(f, "\"thread %" PRIu32 "\"", t->tid);
		fputs("}}", f);
	}
}

/* A thread's events follow the metadata, so each starts with a comma. */
static int put_events(FILE *f, struct chrome_ctx *c, const struct pi_thread *t)
{
	int err = thread_spans(c, t);

	if (err)
		return err;
	if (c->nspans)	/* qsort's array may not be NULL, even when empty */
		qsort(c->spans, c->nspans, sizeof(*c->spans), by_start);
	for (size_t i = 0; i < c->nspans; i++) {
		const struct span *s = &c->spans[i];

		fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, t->pid,
			t->tid);
		put_us(f, "ts", s->start);
		put_us(f, "dur", s->end - s->start);
		fputc(',', f);
		fputs(c->frame_json + c->frame_at[s->frame], f);
		fputc('}', f);
	}
	return 0;
}

int out_chrome__write(FILE *f, const struct profile *p)
{
	struct chrome_ctx c = { .p = p };
	size_t depth = 1;
	int err = profile_index__build(&c.ix, p);

	if (err)
		return err;
	for (size_t i = 0; i < aggregate__count(p->agg); i++)
		if (aggregate__stack(p->agg, i)->depth > depth)
			depth = aggregate__stack(p->agg, i)->depth;
	err = -ENOMEM;
	c.open_frame = calloc(depth, sizeof(*c.open_frame));
	c.open_start = calloc(depth, sizeof(*c.open_start));
	if (!c.open_frame || !c.open_start)
		goto out;
	err = build_frame_json(&c);
	if (err)
		goto out;
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"exporter\":\"pybpfprof\",\"target\":", f);
	json__string(f, p->target ? p->target : "");
	fprintf(f, ",\"start_unix_ns\":\"%" PRId64 "\",\"rate_hz\":%" PRIu32 "},\n"
		   "\"traceEvents\":[",
		p->start_unix_ns, p->rate_hz);
	put_metadata(f, &c);
	for (size_t t = 0; t < c.ix.nthreads && !err; t++)
		err = put_events(f, &c, &c.ix.threads[t]);
	fputs("]}\n", f);
	if (!err && ferror(f))
		err = -EIO;
out:
	free(c.frame_json);
	free(c.frame_at);
	free(c.open_frame);
	free(c.open_start);
	free(c.spans);
	profile_index__free(&c.ix);
	return err;
}
