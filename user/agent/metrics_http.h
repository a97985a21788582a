/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A tiny HTTP server for the agent's own health: GET /metrics (Prometheus text
 * format 0.0.4) and GET /healthz. It runs on a thread of its own, so no client, slow
 * or silent, ever holds up the caller's loop, and it answers /metrics with the text
 * the caller last published (metrics_http__publish()), never by calling into the
 * caller. Up to METRICS_HTTP_MAX_CLIENTS connections are served at once, each with its
 * own deadline; when all are taken, a new one replaces the oldest that has not sent
 * its request yet, so silent clients cannot shut others out.
 */
#ifndef PBP_METRICS_HTTP_H
#define PBP_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define METRICS_HTTP_DEFAULT_ADDR "127.0.0.1:9464"
#define METRICS_HTTP_MAX_CLIENTS 64

struct metrics_http;

/* Writes the metrics text into @f; 0 or a negative errno. */
typedef int (*metrics_render_fn)(void *ctx, FILE *f);

/*
 * Listens on @listen_addr: "HOST:PORT" with an IPv4 address, "[IPV6]:PORT", or ":PORT"
 * for every address (IPv6 and IPv4 where the host has both). NULL means
 * METRICS_HTTP_DEFAULT_ADDR. Port 0 picks a free one (see metrics_http__port()).
 * Serves from then on: /metrics answers 503 until the first metrics_http__publish().
 */
int metrics_http__new(const char *listen_addr, struct metrics_http **out);
/* Stops serving (waits for the server thread) and closes every connection. */
void metrics_http__free(struct metrics_http *m);
/* The port listened on. A test hook: the agent never asks, but a test that listens on
 * port 0 must learn which port it got. */
int metrics_http__port(const struct metrics_http *m);
/* Calls @render on the caller's thread and makes its text the /metrics answer from
 * now on. On an error the text before stays. */
int metrics_http__publish(struct metrics_http *m, metrics_render_fn render, void *ctx);
/* From now on /healthz answers 503 once more than @ms have passed since the last
 * publish (or since this call, before the first): the publisher's loop is stuck, and a
 * liveness probe should say so. 0, the default: never. */
void metrics_http__set_stall(struct metrics_http *m, uint32_t ms);

/* One metric with its HELP and TYPE lines: "# HELP name help\n# TYPE name type\n
 * name value\n". */
void metrics_http__metric(FILE *f, const char *name, const char *type, const char *help,
			  uint64_t value);

/* A row of a table of metrics: adding a metric is adding a row. */
struct metric {
	const char *name, *type, *help;
	uint64_t value;
};

/* The @n metrics of @m in order, each as metrics_http__metric() writes it. */
void metrics_http__metrics(FILE *f, const struct metric *m, size_t n);

#endif
