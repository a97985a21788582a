/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A tiny HTTP server for the agent's own health: GET /metrics (Prometheus text
 * format 0.0.4) and GET /healthz. Single-threaded and non-blocking: the caller polls
 * metrics_http__fd() with its other fds and calls metrics_http__serve() when it is
 * readable. A slow or silent client costs the caller at most about 100 ms per call.
 */
#ifndef PBP_METRICS_HTTP_H
#define PBP_METRICS_HTTP_H

#include <stdint.h>
#include <stdio.h>

#define METRICS_HTTP_DEFAULT_ADDR "127.0.0.1:9464"

struct metrics_http;

/* Writes the metrics text into @f; a negative errno makes the answer a 500. */
typedef int (*metrics_render_fn)(void *ctx, FILE *f);

/*
 * Listens on @listen_addr: "HOST:PORT" with an IPv4 address, "[IPV6]:PORT", or ":PORT"
 * for every address (IPv6 and IPv4 where the host has both). NULL means
 * METRICS_HTTP_DEFAULT_ADDR. Port 0 picks a free one (see metrics_http__port()).
 */
int metrics_http__new(const char *listen_addr, struct metrics_http **out);
void metrics_http__free(struct metrics_http *m);
int metrics_http__fd(const struct metrics_http *m);
int metrics_http__port(const struct metrics_http *m);
/* Answers the connections waiting (at most a few per call); never blocks longer than
 * about 100 ms in all. Returns how many requests were answered, or a negative errno
 * when accepting failed for a reason other than "nothing waiting". */
int metrics_http__serve(struct metrics_http *m, metrics_render_fn render, void *ctx);

/* One metric with its HELP and TYPE lines: "# HELP name help\n# TYPE name type\n
 * name value\n". */
void metrics_http__metric(FILE *f, const char *name, const char *type, const char *help,
			  uint64_t value);

#endif
