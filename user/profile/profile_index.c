// SPDX-License-Identifier: GPL-2.0-only
/* Threads, per-thread sample order and distinct frames of a profile; see
 * profile_index.h. */
#include <errno.h>
#include <stdlib.h>

#include "profile/profile_index.h"

static int by_pid_tid(const void *a, const void *b)
{
	const struct pi_thread *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int by_time(const void *a, const void *b)
{
	const struct pi_sample *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static struct pi_thread *find_thread(const struct profile_index *ix, uint32_t pid,
				     uint32_t tid)
{
	struct pi_thread key = { .pid = pid, .tid = tid };

	return bsearch(&key, ix->threads, ix->nthreads, sizeof(key), by_pid_tid);
}

/* Threads are those the stacks name; the profile's thread list only names them. */
static int index_threads(struct profile_index *ix, const struct profile *p)
{
	size_t nstacks = aggregate__count(p->agg), n = 0;

	ix->threads = calloc(nstacks ? nstacks : 1, sizeof(*ix->threads));
	ix->thread_of = calloc(nstacks ? nstacks : 1, sizeof(*ix->thread_of));
	if (!ix->threads || !ix->thread_of)
		return -ENOMEM;
	for (size_t i = 0; i < nstacks; i++) {
		const struct agg_stack *s = aggregate__stack(p->agg, i);

		ix->threads[i] = (struct pi_thread){ .pid = s->pid, .tid = s->tid,
						     .name_id = PROFILE_NO_NAME };
	}
	qsort(ix->threads, nstacks, sizeof(*ix->threads), by_pid_tid);
	for (size_t i = 0; i < nstacks; i++)
		if (!n || by_pid_tid(&ix->threads[n - 1], &ix->threads[i]))
			ix->threads[n++] = ix->threads[i];
	ix->nthreads = n;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct pi_thread *t = find_thread(ix, p->threads[i].pid, p->threads[i].tid);

		if (t && p->threads[i].name != PROFILE_NO_NAME) {
			t->name = strtab__get(p->strs, p->threads[i].name);
			t->name_id = p->threads[i].name;
		}
	}
	for (size_t i = 0; i < nstacks; i++) {
		const struct agg_stack *s = aggregate__stack(p->agg, i);

		ix->thread_of[i] = (uint32_t)(find_thread(ix, s->pid, s->tid) - ix->threads);
	}
	return 0;
}

static int index_samples(struct profile_index *ix, const struct profile *p)
{
	size_t nstacks = aggregate__count(p->agg);
	size_t n = p->ntimeline ? p->ntimeline : nstacks;
	size_t *fill = calloc(ix->nthreads ? ix->nthreads : 1, sizeof(*fill));
	int err = -ENOMEM;

	ix->samples = calloc(n ? n : 1, sizeof(*ix->samples));
	if (!fill || !ix->samples)
		goto out;
	ix->nsamples = n;
	for (size_t i = 0; i < n; i++) {
		uint32_t stack = p->ntimeline ? p->timeline[i].stack : (uint32_t)i;

		if (stack >= nstacks) {
			err = -EINVAL;
			goto out;
		}
		ix->threads[ix->thread_of[stack]].n++;
	}
	for (size_t t = 1; t < ix->nthreads; t++)
		ix->threads[t].first = ix->threads[t - 1].first + ix->threads[t - 1].n;
	for (size_t i = 0; i < n; i++) {
		uint32_t stack = p->ntimeline ? p->timeline[i].stack : (uint32_t)i;
		uint32_t t = ix->thread_of[stack];
		struct pi_sample *s = &ix->samples[ix->threads[t].first + fill[t]];
		uint64_t weight = aggregate__stack(p->agg, stack)->count * p->period_ns;

		s->stack = stack;
		if (p->ntimeline) {
			s->t_ns = p->timeline[i].t_ns;
			s->weight_ns = p->timeline[i].weight_ns;
		} else {
			s->t_ns = fill[t] ? s[-1].t_ns + s[-1].weight_ns : 0;
			s->weight_ns = weight;
		}
		fill[t]++;
	}
	/* The timeline is in the order samples were decoded, which records from several
	 * CPUs can leave slightly out of time order. */
	for (size_t t = 0; p->ntimeline && t < ix->nthreads; t++)
		qsort(ix->samples + ix->threads[t].first, ix->threads[t].n,
		      sizeof(*ix->samples), by_time);
	err = 0;
out:
	free(fill);
	return err;
}

static int index_frames(struct profile_index *ix, const struct profile *p)
{
	size_t nstacks = aggregate__count(p->agg), total = 0;
	int err;

	ix->frames = aggregate__new();
	ix->frame_start = calloc(nstacks + 1, sizeof(*ix->frame_start));
	if (!ix->frames || !ix->frame_start)
		return -ENOMEM;
	for (size_t i = 0; i < nstacks; i++) {
		ix->frame_start[i] = total;
		total += aggregate__stack(p->agg, i)->depth;
	}
	ix->frame_start[nstacks] = total;
	ix->frame_ids = calloc(total ? total : 1, sizeof(*ix->frame_ids));
	if (!ix->frame_ids)
		return -ENOMEM;
	for (size_t i = 0; i < nstacks; i++) {
		const struct agg_stack *s = aggregate__stack(p->agg, i);

		for (uint32_t k = 0; k < s->depth; k++) {
			struct agg_frame fr = s->frames[k];

			/* Only a Python frame has a file and a line, and a native one an
			 * object and an offset; whatever the other kinds hold there must not
			 * split one frame into several. */
			if (fr.kind != AGG_PYTHON && fr.kind != AGG_NATIVE) {
				fr.file = 0;
				fr.line = -1;
			}
			err = aggregate__add(ix->frames, 0, 0, &fr, 1, 1,
					     &ix->frame_ids[ix->frame_start[i] + k]);
			if (err)
				return err;
		}
	}
	return 0;
}

int profile_index__build_threads(struct profile_index *ix, const struct profile *p)
{
	int err;

	*ix = (struct profile_index){ 0 };
	err = index_threads(ix, p);
	if (err)
		profile_index__free(ix);
	return err;
}

int profile_index__build(struct profile_index *ix, const struct profile *p)
{
	int err;

	*ix = (struct profile_index){ 0 };
	err = index_threads(ix, p);
	if (!err)
		err = index_samples(ix, p);
	if (!err)
		err = index_frames(ix, p);
	if (err)
		profile_index__free(ix);
	return err;
}

const struct pi_thread *profile_index__thread(const struct profile_index *ix, uint32_t pid,
					     uint32_t tid)
{
	return find_thread(ix, pid, tid);
}

void profile_index__free(struct profile_index *ix)
{
	free(ix->threads);
	free(ix->samples);
	free(ix->thread_of);
	aggregate__free(ix->frames);
	free(ix->frame_ids);
	free(ix->frame_start);
	*ix = (struct profile_index){ 0 };
}
