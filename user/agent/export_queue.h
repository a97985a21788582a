/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The profiles waiting to be exported, oldest first: a FIFO bounded both in items and
 * in bytes. A push that would pass either bound drops the oldest items (counted), so
 * memory stays bounded however long the sinks are down. One thread pushes (the
 * agent's main loop), another pops (the exporter); a mutex and a condition variable
 * make that safe.
 */
#ifndef PBP_EXPORT_QUEUE_H
#define PBP_EXPORT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* One profile as the agent hands it over: borrowed, copied by export_queue__item_new(). */
struct export_profile {
	const void *data;	/* gzip-compressed pprof (out_pprof__write) */
	size_t len;
	/* What the files sink writes instead (a profile file, profile_file.h); NULL: data */
	const void *file_data;
	size_t file_len;
	const struct profile_label *labels;	/* the series' labels (pod, container...) */
	size_t nlabels;
	int64_t start_unix_ns, end_unix_ns;
	uint32_t rate_hz;
	uint32_t pid;
	const char *app_name;	/* NULL: the exporter's configured one */
};

/* The owned copy: one allocation holding the struct, the labels and the bytes. */
struct export_item {
	struct export_item *next;
	uint8_t *data;
	size_t len;
	uint8_t *file_data;	/* NULL: the files sink writes data */
	size_t file_len;
	struct profile_label *labels;
	size_t nlabels;
	int64_t start_unix_ns, end_unix_ns;
	uint32_t rate_hz, pid;
	const char *app_name;	/* NULL when the profile named none */
	size_t size;		/* what it costs in memory: counted against the byte bound */
	uint32_t done;		/* the sinks that have it already (exporter's bit mask) */
};

struct export_item *export_queue__item_new(const struct export_profile *p);
void export_queue__item_free(struct export_item *it);

struct export_queue;

int export_queue__new(size_t max_items, size_t max_bytes, struct export_queue **out);
void export_queue__free(struct export_queue *q);
/* New bounds; items beyond them are dropped at once, oldest first. */
void export_queue__set_limits(struct export_queue *q, size_t max_items, size_t max_bytes);
/*
 * Appends @it (the queue owns it from here on, whatever happens), first dropping the
 * oldest items until it fits. Returns how many were dropped; an item larger than the
 * byte bound on its own is itself dropped, and counted, and -E2BIG returned.
 */
int export_queue__push(struct export_queue *q, struct export_item *it);
/*
 * Takes the oldest item, waiting up to @timeout_ms for one (0: no wait). NULL when
 * there is none, or when export_queue__kick() was called. The item is "in flight"
 * until it is given back with export_queue__done() or export_queue__requeue().
 */
struct export_item *export_queue__pop(struct export_queue *q, int timeout_ms);
/* A popped item was exported (or given up): frees it. */
void export_queue__done(struct export_queue *q, struct export_item *it);
/*
 * Puts a popped @it back at the head after a failed export, so order is kept. Were it
 * not for the retry it would be the oldest item, so if the queue has filled up
 * meanwhile it is the one dropped (counted); returns 1 then, else 0.
 */
int export_queue__requeue(struct export_queue *q, struct export_item *it);
/* Sleeps up to @timeout_ms, or until export_queue__kick(); pushes do not end it. */
void export_queue__sleep(struct export_queue *q, int timeout_ms);
/* Wakes a pop() or sleep() under way, or the next one to start. */
void export_queue__kick(struct export_queue *q);
/* Drops every queued item, counting them; returns how many. */
size_t export_queue__drop_all(struct export_queue *q);

struct export_queue_stats {
	size_t depth, bytes;	/* queued, not counting the item in flight */
	size_t in_flight;	/* popped and not yet given back */
	uint64_t dropped;	/* ever, by push, requeue, set_limits or drop_all */
	uint64_t pushed;	/* ever accepted */
};
void export_queue__stats(struct export_queue *q, struct export_queue_stats *s);

#endif
