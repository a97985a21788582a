// SPDX-License-Identifier: GPL-2.0-only
/*
 * The export queue keeps its bounds (items and bytes) by dropping the oldest, counts
 * every drop, keeps order across a failed export's requeue, and survives a producer
 * and a consumer thread racing (every item either arrives, in order, or is counted as
 * dropped). Exits non-zero on the first failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/export_queue.h"
#include "check.h"


static struct export_item *item(uint32_t seq, size_t len)
{
	static const uint8_t zeros[65536];
	struct profile_label labels[] = { { "pod_uid", "abc" }, { "command", "python3 x.py" } };
	struct export_profile p = { .data = zeros, .len = len, .labels = labels, .nlabels = 2,
				    .pid = seq, .app_name = "app", .rate_hz = 100 };
	struct export_item *it = export_queue__item_new(&p);

	CHECK(it);
	return it;
}

static uint32_t pop_seq(struct export_queue *q)
{
	struct export_item *it = export_queue__pop(q, 0);
	uint32_t seq;

	CHECK(it);
	seq = it->pid;
	export_queue__done(q, it);
	return seq;
}

static void item_copies_everything(void)
{
	uint8_t data[5] = { 1, 2, 3, 4, 5 };
	char key[8] = "k", value[8] = "v";
	struct profile_label labels[] = { { key, value }, { "empty", NULL } };
	struct export_profile p = { .data = data, .len = 5, .labels = labels, .nlabels = 2,
				    .start_unix_ns = 1, .end_unix_ns = 2, .rate_hz = 99,
				    .pid = 7 };
	struct export_item *it = export_queue__item_new(&p);

	CHECK(it);
	memset(data, 0, sizeof(data));
	strcpy(key, "x");
	strcpy(value, "y");
	CHECK(it->len == 5 && it->data[4] == 5);
	CHECK(!strcmp(it->labels[0].key, "k") && !strcmp(it->labels[0].value, "v"));
	CHECK(!strcmp(it->labels[1].value, ""));
	CHECK(!it->app_name && it->pid == 7 && it->rate_hz == 99 && it->end_unix_ns == 2);
	CHECK(it->size >= sizeof(*it) + 5);
	export_queue__item_free(it);
}

static void item_bound_drops_oldest(void)
{
	struct export_queue *q;
	struct export_queue_stats s;

	CHECK(!export_queue__new(3, 0, &q));
	for (uint32_t i = 1; i <= 5; i++)
		CHECK(export_queue__push(q, item(i, 10)) == (i > 3));
	export_queue__stats(q, &s);
	CHECK(s.depth == 3 && s.dropped == 2 && s.pushed == 5);
	CHECK(pop_seq(q) == 3 && pop_seq(q) == 4 && pop_seq(q) == 5);
	CHECK(!export_queue__pop(q, 0));
	export_queue__free(q);
}

static void byte_bound_drops_oldest(void)
{
	struct export_queue *q;
	struct export_queue_stats s;
	struct export_item *probe = item(0, 1000);
	size_t one = probe->size;

	export_queue__item_free(probe);
	/* Room for two and a half items of this size. */
	CHECK(!export_queue__new(100, one * 5 / 2, &q));
	for (uint32_t i = 1; i <= 4; i++)
		CHECK(export_queue__push(q, item(i, 1000)) >= 0);
	export_queue__stats(q, &s);
	CHECK(s.depth == 2 && s.dropped == 2 && s.bytes == 2 * one);
	/* Larger than the bound on its own: refused, counted, nothing else lost. */
	CHECK(export_queue__push(q, item(9, 4000)) == -E2BIG);
	export_queue__stats(q, &s);
	CHECK(s.depth == 2 && s.dropped == 3);
	/* Shrinking the bound drops at once. */
	export_queue__set_limits(q, 1, 0);
	export_queue__stats(q, &s);
	CHECK(s.depth == 1 && s.dropped == 4);
	CHECK(pop_seq(q) == 4);
	export_queue__free(q);
}

static void requeue_keeps_order_or_drops_itself(void)
{
	struct export_queue *q;
	struct export_queue_stats s;
	struct export_item *it;

	CHECK(!export_queue__new(3, 0, &q));
	for (uint32_t i = 1; i <= 3; i++)
		export_queue__push(q, item(i, 10));
	it = export_queue__pop(q, 0);
	CHECK(it && it->pid == 1);
	export_queue__stats(q, &s);
	CHECK(s.depth == 2 && s.in_flight == 1);
	CHECK(export_queue__requeue(q, it) == 0);
	export_queue__stats(q, &s);
	CHECK(s.depth == 3 && s.in_flight == 0);
	CHECK(pop_seq(q) == 1 && pop_seq(q) == 2);
	/* Failed export of 3 while two newer items filled the queue: 3 is the oldest. */
	it = export_queue__pop(q, 0);
	export_queue__push(q, item(4, 10));
	export_queue__push(q, item(5, 10));
	export_queue__push(q, item(6, 10));
	CHECK(export_queue__requeue(q, it) == 1);
	export_queue__stats(q, &s);
	CHECK(s.depth == 3 && s.dropped == 1 && s.in_flight == 0);
	CHECK(pop_seq(q) == 4);
	CHECK(export_queue__drop_all(q) == 2);
	export_queue__stats(q, &s);
	CHECK(s.depth == 0 && s.bytes == 0 && s.dropped == 3);
	export_queue__free(q);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *kick_later(void *q)
{
	struct timespec d = { 0, 50 * 1000000L };

	nanosleep(&d, NULL);
	export_queue__kick(q);
	return NULL;
}

static void waits_end_on_timeout_and_kick(void)
{
	struct export_queue *q;
	pthread_t t;
	double t0;

	CHECK(!export_queue__new(3, 0, &q));
	t0 = now_s();
	CHECK(!export_queue__pop(q, 50));
	CHECK(now_s() - t0 >= 0.04);
	CHECK(!pthread_create(&t, NULL, kick_later, q));
	t0 = now_s();
	export_queue__sleep(q, 20000);
	CHECK(now_s() - t0 < 10);
	pthread_join(t, NULL);
	/* A kick with no waiter is kept for the next wait. */
	export_queue__kick(q);
	t0 = now_s();
	CHECK(!export_queue__pop(q, 20000));
	CHECK(now_s() - t0 < 10);
	export_queue__free(q);
}

#define RACE_ITEMS 20000

static void *produce(void *q)
{
	for (uint32_t i = 1; i <= RACE_ITEMS; i++)
		export_queue__push(q, item(i, i % 300));
	return NULL;
}

static void producer_and_consumer_race(void)
{
	struct export_queue *q;
	struct export_queue_stats s;
	uint32_t last = 0, got = 0;
	pthread_t t;

	CHECK(!export_queue__new(16, 8192, &q));
	CHECK(!pthread_create(&t, NULL, produce, q));
	while (last < RACE_ITEMS) {
		struct export_item *it = export_queue__pop(q, 1000);

		CHECK(it);
		CHECK(it->pid > last);	/* order kept, nothing twice */
		last = it->pid;
		got++;
		export_queue__done(q, it);
		export_queue__stats(q, &s);
		CHECK(s.depth <= 16 && s.bytes <= 8192);
	}
	pthread_join(t, NULL);
	export_queue__stats(q, &s);
	CHECK(s.depth == 0);
	CHECK(got + s.dropped == RACE_ITEMS);
	printf("race: %u delivered, %llu dropped\n", got, (unsigned long long)s.dropped);
	export_queue__free(q);
}

int main(void)
{
	item_copies_everything();
	item_bound_drops_oldest();
	byte_bound_drops_oldest();
	requeue_keeps_order_or_drops_itself();
	waits_end_on_timeout_and_kick();
	producer_and_consumer_race();
	printf("test_export_queue: ok\n");
	return 0;
}
