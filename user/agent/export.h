/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The agent's export side in one object: profiles are submitted from the main loop
 * (copied into a bounded queue, never waiting on the network) and a background
 * thread sends each, in order, to every configured sink (a Pyroscope server, a
 * directory of rotated files). A failed send keeps the profile at the head of the
 * queue and is retried with exponential backoff (1 s, doubling, at most 60 s, with
 * jitter); meanwhile new profiles queue up to the bounds, past which the oldest are
 * dropped and counted. Errors a retry cannot fix (a 4xx answer) drop the profile.
 *
 *	struct export *e;
 *	export__new(&cfg, &e);
 *	every period, per process: export__submit(e, &(struct export_profile){...});
 *	on SIGHUP:  export__reconfigure(e, &new_cfg);
 *	on SIGTERM: export__flush(e, 4000); export__free(e);
 */
#ifndef PBP_EXPORT_H
#define PBP_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/export_queue.h"

struct export_cfg {
	const char *app_name;		/* for profiles that name none */
	/* Pyroscope sink; none when pyroscope_url is NULL. */
	const char *pyroscope_url;
	const char *pyroscope_token;
	const char *pyroscope_user, *pyroscope_password;
	const char *const *pyroscope_headers;	/* "Name: value" */
	size_t npyroscope_headers;
	/* Files sink; none when output_dir is NULL. */
	const char *output_dir;
	uint64_t output_max_bytes;	/* 0: no cap */
	int output_fsync;
	/* Queue bounds; 0: 64 items, 256 MiB. */
	size_t queue_max_items;
	uint64_t queue_max_bytes;
	/* Retry backoff; 0: 1000 ms doubling up to 60000 ms. */
	uint32_t backoff_initial_ms, backoff_max_ms;
};

struct export_metrics {
	uint64_t submitted;	/* profiles handed to export__submit() */
	uint64_t pushed;	/* accepted by the Pyroscope server */
	uint64_t push_failures;	/* Pyroscope attempts that failed (each retry counts) */
	uint64_t files_written;
	uint64_t file_failures;
	uint64_t dropped;	/* queue full, unsendable, or left when a flush timed out */
	uint64_t queue_depth;	/* waiting, including one being sent */
	uint64_t queue_bytes;
	int last_error;		/* negative errno of the last failure, 0 if none yet */
	long last_http_status;	/* of the last Pyroscope answer, 0 if none */
};

struct export;

/* Checks and copies @cfg (a bad URL or a missing directory is -EINVAL or the open's
 * error) and starts the thread. */
int export__new(const struct export_cfg *cfg, struct export **out);
/* Copies @p into the queue; never blocks on the network. -E2BIG when the profile
 * alone is larger than the byte bound (dropped, counted), -ENOMEM. */
int export__submit(struct export *e, const struct export_profile *p);
/* A new configuration (SIGHUP); on error the old one stays. Queued profiles go to
 * the new sinks. */
int export__reconfigure(struct export *e, const struct export_cfg *cfg);
/* Sends what is queued, giving up after @timeout_ms: whatever is still queued then
 * is dropped and counted. 0 when everything went out, -ETIMEDOUT otherwise. */
int export__flush(struct export *e, int timeout_ms);
void export__metrics(struct export *e, struct export_metrics *m);
/* The metrics in Prometheus text format, names prefixed "pybpfprof_export_". */
void export__print_metrics(const struct export_metrics *m, FILE *f);
/* Stops the thread (an export under way ends within its timeout) and frees
 * everything; queued profiles are dropped: flush first to send them. */
void export__free(struct export *e);

#endif
