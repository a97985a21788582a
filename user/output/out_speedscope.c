// SPDX-License-Identifier: GPL-2.0-only
/*
 * speedscope's own JSON format: frames are shared between profiles and named by
 * index; each thread is a "sampled" profile of (stack, weight) pairs. speedscope lays
 * a sampled profile's samples end to end in its time-order view, so the gaps between
 * a thread's samples are written as samples with an empty stack, which it draws as
 * nothing; the left-heavy and sandwich views show CPU time per frame exactly, as
 * count * period_ns (in wall and off-CPU profiles, the time each sample or wait
 * stands for).
 */
#include <errno.h>
#include <inttypes.h>

#include "base/json.h"
#include "output/out_speedscope.h"
#include "profile/profile_index.h"

/* A native frame's object goes into its name, as in the collapsed format: speedscope's
 * "file" is a source file, shown with a line. So a frame with DWARF line info is
 * "FUNCTION (OBJECT)" with its source in "file" and "line", as a Python frame has. */
static void put_native_name(FILE *f, const struct profile *p, const struct agg_frame *fr)
{
	fputc('"', f);
	json__chars(f, profile__name(p, fr));
	if (!profile__source(p, fr) && fr->line >= 0)
		fprintf(f, "+0x%x", (unsigned)fr->line);
	fputs(" (", f);
	json__chars(f, profile__lib(p, fr));
	fputs(")\"", f);
}

static void put_frame(FILE *f, const struct profile *p, const struct agg_frame *fr)
{
	const char *file = fr->kind == AGG_NATIVE ? profile__source(p, fr) : profile__file(p, fr);

	fputs("{\"name\":", f);
	if (fr->kind == AGG_NATIVE)
		put_native_name(f, p, fr);
	else
		json__string(f, profile__name(p, fr));
	if (file) {
		fputs(",\"file\":", f);
		json__string(f, file);
		if (fr->line >= 0)
			fprintf(f, ",\"line\":%d", fr->line);
	}
	fputc('}', f);
}

static void put_profile_name(FILE *f, const struct pi_thread *t)
{
	fprintf(f, "\"pid %" PRIu32 " thread %" PRIu32, t->pid, t->tid);
	if (t->name) {
		fputs(" (", f);
		json__chars(f, t->name);
		fputc(')', f);
	}
	fputc('"', f);
}

/*
 * A thread's samples with the time between them filled in: each step is a sample, or
 * a gap (sample NULL) when the next sample comes later than the ones before account
 * for. Less than half a period late is sampling jitter, not time off CPU; a sample
 * that comes early moves nothing, so the positions stay within about half a period
 * of the true times.
 */
struct gap_walk {
	const struct pi_sample *s;
	size_t n, i;
	uint64_t pos, period;
	int gap;
};

static void gap_walk__init(struct gap_walk *w, const struct profile_index *ix,
			   const struct pi_thread *t, uint64_t period)
{
	*w = (struct gap_walk){ .s = ix->samples + t->first, .n = t->n, .period = period };
	w->pos = t->n ? w->s[0].t_ns : 0;
}

static int gap_walk__next(struct gap_walk *w, const struct pi_sample **sample,
			  uint64_t *weight)
{
	if (w->gap) {
		*sample = NULL;
		*weight = w->s[w->i].t_ns - w->pos;
		w->pos = w->s[w->i].t_ns;
		w->gap = 0;
		return 1;
	}
	if (w->i == w->n)
		return 0;
	*sample = &w->s[w->i++];
	*weight = (*sample)->weight_ns;
	w->pos += *weight;
	w->gap = w->i < w->n && w->s[w->i].t_ns > w->pos &&
		 w->s[w->i].t_ns - w->pos > w->period / 2;
	return 1;
}

static void put_profile(FILE *f, const struct profile *p, const struct profile_index *ix,
			const struct pi_thread *t)
{
	const struct pi_sample *s;
	struct gap_walk w;
	uint64_t weight, start;
	size_t i;

	gap_walk__init(&w, ix, t, profile__tick_ns(p));
	start = w.pos;
	while (gap_walk__next(&w, &s, &weight))
		;
	fputs("{\"type\":\"sampled\",\"name\":", f);
	put_profile_name(f, t);
	fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64
		   ",\n\"samples\":[", start, w.pos);
	gap_walk__init(&w, ix, t, profile__tick_ns(p));
	for (i = 0; gap_walk__next(&w, &s, &weight); i++) {
		const uint32_t *ids = s ? profile_index__stack_frames(ix, s->stack) : NULL;
		size_t depth = s ? ix->frame_start[s->stack + 1] - ix->frame_start[s->stack] : 0;

		fputs(i ? ",[" : "[", f);
		for (size_t k = 0; k < depth; k++)
			fprintf(f, "%s%" PRIu32, k ? "," : "", ids[k]);
		fputc(']', f);
	}
	fputs("],\n\"weights\":[", f);
	gap_walk__init(&w, ix, t, profile__tick_ns(p));
	for (i = 0; gap_walk__next(&w, &s, &weight); i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", weight);
	fputs("]}", f);
}

/* speedscope opens the profile at activeProfileIndex: the busiest thread's. */
static size_t busiest_thread(const struct profile_index *ix)
{
	uint64_t best = 0;
	size_t found = 0;

	for (size_t t = 0; t < ix->nthreads; t++) {
		uint64_t sum = 0;

		for (size_t i = 0; i < ix->threads[t].n; i++)
			sum += ix->samples[ix->threads[t].first + i].weight_ns;
		if (sum > best) {
			best = sum;
			found = t;
		}
	}
	return found;
}

int out_speedscope__write(FILE *f, const struct profile *p)
{
	struct profile_index ix;
	int err = profile_index__build(&ix, p);

	if (err)
		return err;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
	      "\"exporter\":\"pybpfprof\",\"name\":", f);
	json__string(f, p->target ? p->target : "pybpfprof");
	fprintf(f, ",\"activeProfileIndex\":%zu,\n\"shared\":{\"frames\":[", busiest_thread(&ix));
	for (size_t i = 0; i < profile_index__nframes(&ix); i++) {
		fputs(i ? ",\n" : "\n", f);
		put_frame(f, p, profile_index__frame(&ix, (uint32_t)i));
	}
	fputs("]},\n\"profiles\":[", f);
	for (size_t t = 0; t < ix.nthreads; t++) {
		fputs(t ? ",\n" : "\n", f);
		put_profile(f, p, &ix, &ix.threads[t]);
	}
	fputs("]}\n", f);
	err = ferror(f) ? -EIO : 0;
	profile_index__free(&ix);
	return err;
}
