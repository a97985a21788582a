// SPDX-License-Identifier: GPL-2.0-only
/*
 * The exporter; see export.h.
 *
 * Threads: the caller's (submit, reconfigure, flush, metrics) and one sender. The
 * queue has its own lock; everything else shared sits under e->lock. The sinks
 * belong to the sender alone: a reconfigure only leaves a new configuration, and the
 * sender rebuilds its sinks from it before its next send, so no send ever runs on a
 * sink being replaced.
 *
 * The item being sent is out of the queue while it is sent and goes back to the head
 * if the send fails, so memory is bounded by the queue's bounds plus one profile, and
 * a queue that fills up during an outage drops the oldest profile, which may be that
 * one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/export_files.h"
#include "agent/export_pyroscope.h"
#include "agent/export.h"
#include "base/log.h"
#include "agent/metrics_http.h"
#include "agent/worker.h"

#define DEFAULT_QUEUE_ITEMS 64
#define DEFAULT_QUEUE_BYTES (256ull << 20)
#define DEFAULT_BACKOFF_MS 1000
#define DEFAULT_BACKOFF_MAX_MS 60000
#define FLUSH_RETRY_MS 200
#define IDLE_WAIT_MS 1000

enum { SINK_PYROSCOPE = 1, SINK_FILES = 2 };

/* A deep copy of a struct export_cfg: one block per string, owned. */
struct cfg_copy {
	struct export_cfg c;
	char **strings;
	size_t nstrings;
	const char **headers;
};

struct export {
	struct export_queue *q;
	pthread_t thread;
	int thread_started;

	pthread_mutex_t lock;
	pthread_cond_t idle;	/* the sender finished an attempt */
	struct cfg_copy *cfg;	/* the newest configuration */
	uint64_t cfg_gen;
	int stopping;
	int64_t flush_deadline_ms;	/* monotonic; 0: no flush under way */
	struct export_metrics m;	/* except the queue's numbers */
	uint64_t dropped_unsendable;

	/* The sender's own. */
	struct pyroscope *pyroscope;
	struct export_files *files;
	uint32_t sinks;
	uint64_t sinks_gen;
	uint32_t backoff_ms;
	unsigned int seed;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cfg_copy__free(struct cfg_copy *cc)
{
	if (!cc)
		return;
	for (size_t i = 0; i < cc->nstrings; i++) {
		if (!cc->strings[i])
			continue;
		/* Tokens and passwords do not linger in freed memory. */
		memset(cc->strings[i], 0, strlen(cc->strings[i]));
		free(cc->strings[i]);
	}
	free(cc->strings);
	free(cc->headers);
	free(cc);
}

static int dup_into(struct cfg_copy *cc, const char **field)
{
	char *s;

	if (!*field)
		return 0;
	s = strdup(*field);
	if (!s)
		return -ENOMEM;
	cc->strings[cc->nstrings++] = s;
	*field = s;
	return 0;
}

static int cfg_copy__new(const struct export_cfg *cfg, struct cfg_copy **out)
{
	struct cfg_copy *cc = calloc(1, sizeof(*cc));
	const char **fields[7];
	int err = -ENOMEM;

	*out = NULL;
	if (!cc)
		return -ENOMEM;
	cc->c = *cfg;
	cc->strings = calloc(7 + cfg->npyroscope_headers, sizeof(*cc->strings));
	cc->headers = calloc(cfg->npyroscope_headers + 1, sizeof(*cc->headers));
	if (!cc->strings || !cc->headers)
		goto fail;
	fields[0] = &cc->c.app_name;
	fields[1] = &cc->c.pyroscope_url;
	fields[2] = &cc->c.pyroscope_token;
	fields[3] = &cc->c.pyroscope_user;
	fields[4] = &cc->c.pyroscope_password;
	fields[5] = &cc->c.output_dir;
	fields[6] = NULL;
	for (size_t i = 0; fields[i]; i++)
		if ((err = dup_into(cc, fields[i])))
			goto fail;
	for (size_t i = 0; i < cfg->npyroscope_headers; i++) {
		cc->headers[i] = cfg->pyroscope_headers[i];
		if ((err = dup_into(cc, &cc->headers[i])))
			goto fail;
	}
	cc->c.pyroscope_headers = cc->headers;
	if (!cc->c.queue_max_items)
		cc->c.queue_max_items = DEFAULT_QUEUE_ITEMS;
	if (!cc->c.queue_max_bytes)
		cc->c.queue_max_bytes = DEFAULT_QUEUE_BYTES;
	if (!cc->c.backoff_initial_ms)
		cc->c.backoff_initial_ms = DEFAULT_BACKOFF_MS;
	if (!cc->c.backoff_max_ms)
		cc->c.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
	if (cc->c.backoff_max_ms < cc->c.backoff_initial_ms)
		cc->c.backoff_max_ms = cc->c.backoff_initial_ms;
	*out = cc;
	return 0;
fail:
	cfg_copy__free(cc);
	return err;
}

/* The sinks a configuration asks for; the caller frees them. */
static int build_sinks(const struct export_cfg *c, struct pyroscope **py,
		       struct export_files **files)
{
	struct pyroscope_cfg pc = {
		.url = c->pyroscope_url, .token = c->pyroscope_token,
		.user = c->pyroscope_user, .password = c->pyroscope_password,
		.headers = c->pyroscope_headers, .nheaders = c->npyroscope_headers,
		.app_name = c->app_name,
	};
	int err = 0;

	*py = NULL;
	*files = NULL;
	if (c->pyroscope_url) {
		err = export_pyroscope__new(&pc, py);
		if (err) {
			pr_warn("pyroscope URL \"%s\": %s\n", c->pyroscope_url,
				err == -EINVAL ? "not an http:// or https:// URL or a bad header" :
						 strerror(-err));
			return err;
		}
	}
	if (c->output_dir) {
		err = export_files__new(c->output_dir, c->output_max_bytes, c->output_fsync,
					c->app_name, files);
		if (err) {
			export_pyroscope__free(*py);
			*py = NULL;
		}
	}
	return err;
}

/* Sender: the sinks of the newest configuration, if it changed. */
static void refresh_sinks(struct export *e)
{
	struct pyroscope *py;
	struct export_files *files;
	int err;

	pthread_mutex_lock(&e->lock);
	if (e->sinks_gen == e->cfg_gen) {
		pthread_mutex_unlock(&e->lock);
		return;
	}
	err = build_sinks(&e->cfg->c, &py, &files);
	e->sinks_gen = e->cfg_gen;
	pthread_mutex_unlock(&e->lock);
	if (err)	/* checked when it was given; the directory may have gone since */
		return;
	export_pyroscope__free(e->pyroscope);
	export_files__free(e->files);
	e->pyroscope = py;
	e->files = files;
	e->sinks = (py ? SINK_PYROSCOPE : 0) | (files ? SINK_FILES : 0);
	e->backoff_ms = 0;
}

/* Sender: the time left to a flush under way, -1 once its deadline has passed, 0 when
 * none is under way; read whole under the lock, as the caller's thread writes it. */
static int64_t flush_left_ms(struct export *e)
{
	int64_t left = 0;

	pthread_mutex_lock(&e->lock);
	if (e->flush_deadline_ms) {
		left = e->flush_deadline_ms - now_ms();
		if (left <= 0)
			left = -1;
	}
	pthread_mutex_unlock(&e->lock);
	return left;
}

static void note_failure(struct export *e, int err, long status)
{
	e->m.last_error = err;
	if (status)
		e->m.last_http_status = status;
}

/* Sender: every sink that does not have @it yet. 0, or the first error; *permanent
 * when no retry can help. */
static int send_item(struct export *e, struct export_item *it, int timeout_ms,
		     int *permanent)
{
	long status = 0;
	int err = 0, e1;

	*permanent = 0;
	if ((e->sinks & SINK_PYROSCOPE) && !(it->done & SINK_PYROSCOPE)) {
		e1 = export_pyroscope__push(e->pyroscope, it, timeout_ms, &status);
		pthread_mutex_lock(&e->lock);
		if (status)
			e->m.last_http_status = status;
		if (e1) {
			e->m.push_failures++;
			note_failure(e, e1, status);
		} else {
			e->m.pushed++;
			it->done |= SINK_PYROSCOPE;
		}
		pthread_mutex_unlock(&e->lock);
		if (e1) {
			pr_debug("pyroscope: push of pid %u failed: %s (HTTP %ld)\n", it->pid,
				 strerror(-e1), status);
			*permanent = !export_pyroscope__retryable(e1);
			err = e1;
		}
	}
	if ((e->sinks & SINK_FILES) && !(it->done & SINK_FILES)) {
		e1 = export_files__write(e->files, it, NULL, 0);
		pthread_mutex_lock(&e->lock);
		if (e1) {
			e->m.file_failures++;
			note_failure(e, e1, 0);
		} else {
			e->m.files_written++;
			it->done |= SINK_FILES;
		}
		pthread_mutex_unlock(&e->lock);
		if (e1 && !err)
			err = e1;
	}
	return err;
}

static uint32_t next_backoff(struct export *e, uint32_t initial, uint32_t max)
{
	uint32_t delay;

	e->backoff_ms = !e->backoff_ms ? initial : e->backoff_ms > max / 2 ? max :
										e->backoff_ms * 2;
	/* Jitter: agents that lost the same server do not all come back at once. */
	delay = e->backoff_ms - (uint32_t)rand_r(&e->seed) % (e->backoff_ms / 4 + 1);
	return delay;
}

static void signal_idle(struct export *e)
{
	pthread_mutex_lock(&e->lock);
	pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
}

static void *sender(void *arg)
{
	struct export *e = arg;

	for (;;) {
		struct export_item *it;
		int64_t flush_left;
		uint32_t initial, max, delay;
		int err, permanent, stop;

		pthread_mutex_lock(&e->lock);
		stop = e->stopping;
		initial = e->cfg->c.backoff_initial_ms;
		max = e->cfg->c.backoff_max_ms;
		pthread_mutex_unlock(&e->lock);
		if (stop)
			break;
		refresh_sinks(e);
		it = export_queue__pop(e->q, IDLE_WAIT_MS);
		if (!it)
			continue;
		flush_left = flush_left_ms(e);
		if (flush_left < 0) {
			/* The flush gave up: it drops and counts what is queued. */
			export_queue__requeue(e->q, it);
			signal_idle(e);
			export_queue__sleep(e->q, FLUSH_RETRY_MS);
			continue;
		}
		err = send_item(e, it, flush_left > 0 ? (int)flush_left : 0, &permanent);
		if (!err || permanent || !e->sinks) {
			if (err) {
				pthread_mutex_lock(&e->lock);
				e->dropped_unsendable++;
				pthread_mutex_unlock(&e->lock);
				pr_warn("export: dropping the profile of pid %u: %s\n", it->pid,
					strerror(-err));
			} else {
				e->backoff_ms = 0;
			}
			export_queue__done(e->q, it);
			signal_idle(e);
			continue;
		}
		export_queue__requeue(e->q, it);
		signal_idle(e);
		delay = next_backoff(e, initial, max);
		if (flush_left_ms(e))
			delay = delay < FLUSH_RETRY_MS ? delay : FLUSH_RETRY_MS;
		export_queue__sleep(e->q, (int)delay);
	}
	return NULL;
}

int export__new(const struct export_cfg *cfg, struct export **out)
{
	struct export *e = calloc(1, sizeof(*e));
	struct pyroscope *py;
	struct export_files *files;
	pthread_condattr_t attr;
	int err;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	e->seed = (unsigned int)now_ms() ^ (unsigned int)(uintptr_t)e;
	err = cfg_copy__new(cfg, &e->cfg);
	if (err)
		goto fail_cfg;
	/* Refuse a bad configuration here, where the caller can report it. */
	err = build_sinks(&e->cfg->c, &py, &files);
	if (err)
		goto fail_cfg;
	export_pyroscope__free(py);
	export_files__free(files);
	err = export_queue__new(e->cfg->c.queue_max_items, e->cfg->c.queue_max_bytes, &e->q);
	if (err)
		goto fail_cfg;
	e->cfg_gen = 1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&e->idle, &attr);
	pthread_condattr_destroy(&attr);
	err = worker__start(&e->thread, sender, e);
	if (err)
		goto fail_thread;
	e->thread_started = 1;
	*out = e;
	return 0;
fail_thread:
	pthread_cond_destroy(&e->idle);
	pthread_mutex_destroy(&e->lock);
	export_queue__free(e->q);
fail_cfg:
	cfg_copy__free(e->cfg);
	free(e);
	return err;
}

int export__submit(struct export *e, const struct export_profile *p)
{
	struct export_item *it = export_queue__item_new(p);
	int err;

	pthread_mutex_lock(&e->lock);
	e->m.submitted++;
	pthread_mutex_unlock(&e->lock);
	if (!it)
		return -ENOMEM;
	err = export_queue__push(e->q, it);
	return err < 0 ? err : 0;
}

int export__reconfigure(struct export *e, const struct export_cfg *cfg)
{
	struct cfg_copy *cc, *old;
	struct pyroscope *py;
	struct export_files *files;
	int err = cfg_copy__new(cfg, &cc);

	if (err)
		return err;
	err = build_sinks(&cc->c, &py, &files);
	if (err) {
		cfg_copy__free(cc);
		return err;
	}
	export_pyroscope__free(py);
	export_files__free(files);
	export_queue__set_limits(e->q, cc->c.queue_max_items, cc->c.queue_max_bytes);
	pthread_mutex_lock(&e->lock);
	old = e->cfg;
	e->cfg = cc;
	e->cfg_gen++;
	pthread_mutex_unlock(&e->lock);
	cfg_copy__free(old);
	/* A sender sleeping out a backoff tries the new sinks now. */
	export_queue__kick(e->q);
	return 0;
}

static struct timespec abs_ms(int64_t mono_ms)
{
	return (struct timespec){ .tv_sec = mono_ms / 1000,
				  .tv_nsec = (long)(mono_ms % 1000) * 1000000L };
}

int export__flush(struct export *e, int timeout_ms)
{
	struct export_queue_stats s;
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	struct timespec until = abs_ms(deadline);
	int err = 0;

	pthread_mutex_lock(&e->lock);
	e->flush_deadline_ms = deadline;
	pthread_mutex_unlock(&e->lock);
	export_queue__kick(e->q);
	pthread_mutex_lock(&e->lock);
	for (;;) {
		export_queue__stats(e->q, &s);
		if (!s.depth && !s.in_flight)
			break;
		if (pthread_cond_timedwait(&e->idle, &e->lock, &until) == ETIMEDOUT) {
			err = -ETIMEDOUT;
			break;
		}
	}
	/* The sender sees the deadline passed and puts back what it holds; whatever
	 * is queued now is given up. A send under way ends by its own timeout, which
	 * was capped to this deadline. */
	pthread_mutex_unlock(&e->lock);
	if (err) {
		size_t n = export_queue__drop_all(e->q);

		pr_warn("export: %zu profile%s not sent before the flush timeout\n", n,
			n == 1 ? "" : "s");
	}
	pthread_mutex_lock(&e->lock);
	e->flush_deadline_ms = 0;
	pthread_mutex_unlock(&e->lock);
	return err;
}

void export__metrics(struct export *e, struct export_metrics *m)
{
	struct export_queue_stats s;

	pthread_mutex_lock(&e->lock);
	export_queue__stats(e->q, &s);
	*m = e->m;
	m->dropped = s.dropped + e->dropped_unsendable;
	m->queue_depth = s.depth + s.in_flight;
	m->queue_bytes = s.bytes;
	pthread_mutex_unlock(&e->lock);
}

void export__print_metrics(const struct export_metrics *m, FILE *f)
{
	const struct metric t[] = {
		{ "pybpfprof_export_submitted_total", "counter",
		  "Profiles handed to the exporter.", m->submitted },
		{ "pybpfprof_export_pushed_total", "counter",
		  "Profiles accepted by the Pyroscope server.", m->pushed },
		{ "pybpfprof_export_push_failures_total", "counter",
		  "Pyroscope push attempts that failed, retries included.", m->push_failures },
		{ "pybpfprof_export_files_written_total", "counter",
		  "Profiles written to the output directory.", m->files_written },
		{ "pybpfprof_export_file_failures_total", "counter",
		  "Profile files that could not be written.", m->file_failures },
		{ "pybpfprof_export_dropped_total", "counter",
		  "Profiles dropped: queue full, unsendable, or flush timeout.", m->dropped },
		{ "pybpfprof_export_queue_depth", "gauge",
		  "Profiles waiting to be exported.", m->queue_depth },
		{ "pybpfprof_export_queue_bytes", "gauge",
		  "Memory held by the profiles waiting to be exported.", m->queue_bytes },
		{ "pybpfprof_export_last_http_status", "gauge",
		  "Status of the Pyroscope server's last answer (0: none).",
		  (uint64_t)(m->last_http_status > 0 ? m->last_http_status : 0) },
	};

	metrics_http__metrics(f, t, sizeof(t) / sizeof(t[0]));
}

void export__free(struct export *e)
{
	if (!e)
		return;
	if (e->thread_started) {
		pthread_mutex_lock(&e->lock);
		e->stopping = 1;
		pthread_mutex_unlock(&e->lock);
		export_queue__kick(e->q);
		pthread_join(e->thread, NULL);
	}
	export_pyroscope__free(e->pyroscope);
	export_files__free(e->files);
	export_queue__free(e->q);
	cfg_copy__free(e->cfg);
	pthread_cond_destroy(&e->idle);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
