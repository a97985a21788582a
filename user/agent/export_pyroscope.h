/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pushes one profile to a Pyroscope server (or anything that speaks its ingest API:
 * Grafana Cloud Profiles, Alloy's pyroscope.receive_http):
 *
 *   POST {url}/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof
 *        &sampleRate=HZ&spyName=pybpfprof
 *   Content-Type: multipart/form-data; the gzipped pprof is the file field "profile"
 *
 * The series name has no escaping of its own (the server splits it at '{', ',', '='
 * and '}'), so keys and values are sanitised here before the whole name is
 * percent-encoded; see export_pyroscope__series_name().
 */
#ifndef PBP_EXPORT_PYROSCOPE_H
#define PBP_EXPORT_PYROSCOPE_H

#include <stddef.h>

#include "agent/export_queue.h"

struct pyroscope_cfg {
	const char *url;	/* "http://host:4040", https too; a path prefix is kept */
	const char *token;	/* "Authorization: Bearer TOKEN", or NULL */
	const char *user, *password;	/* basic auth (Grafana Cloud), or NULL */
	const char *const *headers;	/* extra "Name: value" (X-Scope-OrgID: tenant) */
	size_t nheaders;
	const char *app_name;	/* for items that name none; NULL: "pybpfprof" */
};

struct pyroscope;

/* Copies @cfg. -EINVAL when the URL is not http(s)://. */
int export_pyroscope__new(const struct pyroscope_cfg *cfg, struct pyroscope **out);
void export_pyroscope__free(struct pyroscope *p);
/*
 * Sends @it, giving up after @timeout_ms (at most 5 s; connecting at most 2 s).
 * Returns 0 on a 2xx answer; otherwise a negative errno: -ECONNREFUSED,
 * -ETIMEDOUT, -EHOSTUNREACH or -EIO (transport or TLS), -EAGAIN (5xx, 408, 429: worth
 * retrying), -EPERM (401, 403) or -EINVAL (another 4xx: the server will never take
 * it). *@http_status gets the status, 0 when there was no answer.
 */
int export_pyroscope__push(struct pyroscope *p, const struct export_item *it, int timeout_ms,
		    long *http_status);
/* Whether an error of export_pyroscope__push() may go away by itself (retry) or not (drop). */
int export_pyroscope__retryable(int err);
/*
 * "APP{key=value,...}" into @buf: the app name keeps [A-Za-z0-9_.-], keys keep
 * [A-Za-z0-9_], values lose control characters and the name's delimiters , { } = "
 * \ (each made '_'), surrounding blanks, and anything past 200 bytes; labels left
 * empty are left out. Returns the length, or -ENOSPC when @len is too small.
 */
int export_pyroscope__series_name(const char *app, const struct profile_label *labels,
			   size_t nlabels, char *buf, size_t len);

#endif
