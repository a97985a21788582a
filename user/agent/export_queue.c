// SPDX-License-Identifier: GPL-2.0-only
/* The bounded export queue; see export_queue.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/export_queue.h"

struct export_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* an item arrived, or a kick */
	struct export_item *head, *tail;
	size_t depth, bytes, max_items, max_bytes, in_flight;
	uint64_t dropped, pushed;
	uint64_t kicks;		/* a generation: waiters return when it changes */
	uint64_t kicks_seen;	/* the generation the last waiter returned for */
};

static size_t str_size(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static char *put_str(char **cursor, const char *s)
{
	char *dst = *cursor;
	size_t n = strlen(s) + 1;

	memcpy(dst, s, n);
	*cursor += n;
	return dst;
}

struct export_item *export_queue__item_new(const struct export_profile *p)
{
	size_t size = sizeof(struct export_item) + p->nlabels * sizeof(struct profile_label) +
		      str_size(p->app_name) + p->len + (p->file_data ? p->file_len : 0);
	struct export_item *it;
	char *cursor;

	for (size_t i = 0; i < p->nlabels; i++)
		size += str_size(p->labels[i].key ? p->labels[i].key : "") +
			str_size(p->labels[i].value ? p->labels[i].value : "");
	it = calloc(1, size);
	if (!it)
		return NULL;
	it->size = size;
	it->labels = (struct profile_label *)(it + 1);
	it->nlabels = p->nlabels;
	cursor = (char *)(it->labels + p->nlabels);
	for (size_t i = 0; i < p->nlabels; i++) {
		it->labels[i].key = put_str(&cursor, p->labels[i].key ? p->labels[i].key : "");
		it->labels[i].value =
			put_str(&cursor, p->labels[i].value ? p->labels[i].value : "");
	}
	if (p->app_name)
		it->app_name = put_str(&cursor, p->app_name);
	it->data = (uint8_t *)cursor;
	it->len = p->len;
	if (p->len)
		memcpy(it->data, p->data, p->len);
	if (p->file_data) {
		it->file_data = it->data + p->len;
		it->file_len = p->file_len;
		if (p->file_len)
			memcpy(it->file_data, p->file_data, p->file_len);
	}
	it->start_unix_ns = p->start_unix_ns;
	it->end_unix_ns = p->end_unix_ns;
	it->rate_hz = p->rate_hz;
	it->pid = p->pid;
	return it;
}

void export_queue__item_free(struct export_item *it)
{
	free(it);
}

int export_queue__new(size_t max_items, size_t max_bytes, struct export_queue **out)
{
	struct export_queue *q = calloc(1, sizeof(*q));
	pthread_condattr_t attr;
	int err;

	*out = NULL;
	if (!q)
		return -ENOMEM;
	err = -pthread_mutex_init(&q->lock, NULL);
	if (err)
		goto fail_mutex;
	/* Timed waits on the monotonic clock: a wall-clock step must not stretch them. */
	err = -pthread_condattr_init(&attr);
	if (err)
		goto fail_cond;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	err = -pthread_cond_init(&q->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (err)
		goto fail_cond;
	q->max_items = max_items ? max_items : 1;
	q->max_bytes = max_bytes ? max_bytes : SIZE_MAX;
	*out = q;
	return 0;
fail_cond:
	pthread_mutex_destroy(&q->lock);
fail_mutex:
	free(q);
	return err;
}

void export_queue__free(struct export_queue *q)
{
	struct export_item *it, *next;

	if (!q)
		return;
	for (it = q->head; it; it = next) {
		next = it->next;
		export_queue__item_free(it);
	}
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* Under the lock. */
static struct export_item *take_head(struct export_queue *q)
{
	struct export_item *it = q->head;

	if (!it)
		return NULL;
	q->head = it->next;
	if (!q->head)
		q->tail = NULL;
	it->next = NULL;
	q->depth--;
	q->bytes -= it->size;
	return it;
}

/* Under the lock: drops the oldest until @more items of @more_bytes fit. */
static int make_room(struct export_queue *q, size_t more, size_t more_bytes)
{
	int dropped = 0;

	while (q->head && (q->depth + more > q->max_items ||
			   q->bytes + more_bytes > q->max_bytes)) {
		export_queue__item_free(take_head(q));
		q->dropped++;
		dropped++;
	}
	return dropped;
}

void export_queue__set_limits(struct export_queue *q, size_t max_items, size_t max_bytes)
{
	pthread_mutex_lock(&q->lock);
	q->max_items = max_items ? max_items : 1;
	q->max_bytes = max_bytes ? max_bytes : SIZE_MAX;
	make_room(q, 0, 0);
	pthread_mutex_unlock(&q->lock);
}

int export_queue__push(struct export_queue *q, struct export_item *it)
{
	int dropped;

	pthread_mutex_lock(&q->lock);
	if (it->size > q->max_bytes) {
		q->dropped++;
		pthread_mutex_unlock(&q->lock);
		export_queue__item_free(it);
		return -E2BIG;
	}
	dropped = make_room(q, 1, it->size);
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->depth++;
	q->bytes += it->size;
	q->pushed++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return dropped;
}

void export_queue__done(struct export_queue *q, struct export_item *it)
{
	pthread_mutex_lock(&q->lock);
	q->in_flight--;
	pthread_mutex_unlock(&q->lock);
	export_queue__item_free(it);
}

int export_queue__requeue(struct export_queue *q, struct export_item *it)
{
	pthread_mutex_lock(&q->lock);
	q->in_flight--;
	if (q->depth + 1 > q->max_items || q->bytes + it->size > q->max_bytes) {
		q->dropped++;
		pthread_mutex_unlock(&q->lock);
		export_queue__item_free(it);
		return 1;
	}
	it->next = q->head;
	q->head = it;
	if (!q->tail)
		q->tail = it;
	q->depth++;
	q->bytes += it->size;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

static struct timespec deadline_after(int timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Under the lock: consumes a pending kick. */
static int kicked(struct export_queue *q)
{
	if (q->kicks == q->kicks_seen)
		return 0;
	q->kicks_seen = q->kicks;
	return 1;
}

struct export_item *export_queue__pop(struct export_queue *q, int timeout_ms)
{
	struct timespec until = deadline_after(timeout_ms > 0 ? timeout_ms : 0);
	struct export_item *it = NULL;

	pthread_mutex_lock(&q->lock);
	while (!q->head && !kicked(q) && timeout_ms > 0)
		if (pthread_cond_timedwait(&q->cond, &q->lock, &until) == ETIMEDOUT)
			break;
	it = take_head(q);
	if (it)
		q->in_flight++;
	pthread_mutex_unlock(&q->lock);
	return it;
}

void export_queue__sleep(struct export_queue *q, int timeout_ms)
{
	struct timespec until = deadline_after(timeout_ms > 0 ? timeout_ms : 0);

	pthread_mutex_lock(&q->lock);
	while (!kicked(q) && timeout_ms > 0)
		if (pthread_cond_timedwait(&q->cond, &q->lock, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&q->lock);
}

void export_queue__kick(struct export_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->kicks++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

size_t export_queue__drop_all(struct export_queue *q)
{
	size_t n = 0;

	pthread_mutex_lock(&q->lock);
	while (q->head) {
		export_queue__item_free(take_head(q));
		q->dropped++;
		n++;
	}
	pthread_mutex_unlock(&q->lock);
	return n;
}

void export_queue__stats(struct export_queue *q, struct export_queue_stats *s)
{
	pthread_mutex_lock(&q->lock);
	s->depth = q->depth;
	s->bytes = q->bytes;
	s->in_flight = q->in_flight;
	s->dropped = q->dropped;
	s->pushed = q->pushed;
	pthread_mutex_unlock(&q->lock);
}
