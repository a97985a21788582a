// SPDX-License-Identifier: GPL-2.0-only
/*
 * The Pyroscope ingest client; see export_pyroscope.h. One curl easy handle per
 * client, reused so that connections (and TLS sessions) are kept between pushes.
 * Used from the exporter's thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "agent/export_pyroscope.h"
#include "base/log.h"

#define CONNECT_TIMEOUT_MS 2000
#define TOTAL_TIMEOUT_MS 5000
#define MAX_VALUE_BYTES 200
#define NAME_MAX_BYTES 4096

struct pyroscope {
	CURL *curl;
	struct curl_slist *headers;
	char *url;		/* without a trailing '/' */
	char *app_name;
	char *userpwd;		/* "user:password" or NULL */
	char errbuf[CURL_ERROR_SIZE];
};

static int is_alnum(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* Appends @s, cleaned by @kind ('a' app, 'k' key, 'v' value); returns bytes added. */
static size_t put_clean(char *dst, size_t room, const char *s, char kind)
{
	size_t n = 0, len = strlen(s), max = kind == 'v' ? MAX_VALUE_BYTES : len;

	if (kind == 'v') {
		while (len && (*s == ' ' || *s == '\t'))
			s++, len--;
		while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		/* Cut on a UTF-8 character boundary. */
		if (len > max) {
			len = max;
			while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
				len--;
		}
	}
	for (size_t i = 0; i < len && n < room; i++) {
		unsigned char ch = (unsigned char)s[i];
		int keep;

		if (kind == 'v')
			keep = ch >= 0x20 && ch != 0x7f && !strchr(",{}=\"\\", ch);
		else
			keep = is_alnum(ch) || ch == '_' || (kind == 'a' && (ch == '.' || ch == '-'));
		dst[n++] = keep ? (char)ch : '_';
	}
	return n;
}

int export_pyroscope__series_name(const char *app, const struct profile_label *labels,
			   size_t nlabels, char *buf, size_t len)
{
	char key[128], value[MAX_VALUE_BYTES + 1];
	size_t n = 0, kn, vn;
	int first = 1;

	if (len < 2)
		return -ENOSPC;
	if (!app || !*app)
		app = "pybpfprof";
	n = put_clean(buf, len - 1, app, 'a');
	for (size_t i = 0; i < nlabels; i++) {
		if (!labels[i].key || !labels[i].value)
			continue;
		kn = put_clean(key, sizeof(key) - 1, labels[i].key, 'k');
		vn = put_clean(value, sizeof(value) - 1, labels[i].value, 'v');
		key[kn] = value[vn] = '\0';
		/* The server keeps __name__ for the app name itself. */
		if (!kn || !vn || !strcmp(key, "__name__"))
			continue;
		if (n + kn + vn + 3 >= len)
			return -ENOSPC;
		buf[n++] = first ? '{' : ',';
		memcpy(buf + n, key, kn);
		n += kn;
		buf[n++] = '=';
		memcpy(buf + n, value, vn);
		n += vn;
		first = 0;
	}
	if (n + 3 > len)
		return -ENOSPC;
	if (first)
		buf[n++] = '{';
	buf[n++] = '}';
	buf[n] = '\0';
	return (int)n;
}

void export_pyroscope__free(struct pyroscope *p)
{
	if (!p)
		return;
	if (p->curl)
		curl_easy_cleanup(p->curl);
	curl_slist_free_all(p->headers);
	free(p->url);
	free(p->app_name);
	if (p->userpwd) {
		memset(p->userpwd, 0, strlen(p->userpwd));
		free(p->userpwd);
	}
	free(p);
	curl_global_cleanup();
}

static int add_header(struct pyroscope *p, const char *h)
{
	struct curl_slist *l = curl_slist_append(p->headers, h);

	if (!l)
		return -ENOMEM;
	p->headers = l;
	return 0;
}

/* Whether @s would break out of a header line (or a basic-auth pair) it is pasted
 * into: a control character (CR, LF...), or in a user name, a ':'. */
static int unsafe_in_header(const char *s, int user)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || (user && *s == ':'))
			return 1;
	return 0;
}

int export_pyroscope__new(const struct pyroscope_cfg *cfg, struct pyroscope **out)
{
	struct pyroscope *p;
	char *auth = NULL;
	size_t n;
	int err;

	*out = NULL;
	if (!cfg->url || (strncmp(cfg->url, "http://", 7) && strncmp(cfg->url, "https://", 8)))
		return -EINVAL;
	/* The config parser refuses these too; the request must not depend on it. */
	if (unsafe_in_header(cfg->token, 0) || unsafe_in_header(cfg->user, 1) ||
	    unsafe_in_header(cfg->password, 0)) {
		pr_warn("pyroscope: a control character in the token, user or password, or a "
			"':' in the user\n");
		return -EINVAL;
	}
	/* Reference-counted by curl; thread-safe in the curl versions we build with. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p) {
		curl_global_cleanup();
		return -ENOMEM;
	}
	err = -ENOMEM;
	p->url = strdup(cfg->url);
	p->app_name = strdup(cfg->app_name && *cfg->app_name ? cfg->app_name : "pybpfprof");
	p->curl = curl_easy_init();
	if (!p->url || !p->app_name || !p->curl)
		goto fail;
	n = strlen(p->url);
	while (n > 8 && p->url[n - 1] == '/')
		p->url[--n] = '\0';
	if (cfg->user && *cfg->user) {
		if (asprintf(&p->userpwd, "%s:%s", cfg->user,
			     cfg->password ? cfg->password : "") < 0) {
			p->userpwd = NULL;
			goto fail;
		}
	}
	if (cfg->token && *cfg->token) {
		if (asprintf(&auth, "Authorization: Bearer %s", cfg->token) < 0) {
			auth = NULL;
			goto fail;
		}
		err = add_header(p, auth);
		memset(auth, 0, strlen(auth));
		free(auth);
		if (err)
			goto fail;
	}
	for (size_t i = 0; i < cfg->nheaders; i++) {
		if (!strchr(cfg->headers[i], ':')) {
			pr_warn("pyroscope: header \"%s\" is not \"Name: value\"\n", cfg->headers[i]);
			err = -EINVAL;
			goto fail;
		}
		err = add_header(p, cfg->headers[i]);
		if (err)
			goto fail;
	}
	/* No 100-continue round trip: servers answer the whole request anyway. */
	err = add_header(p, "Expect:");
	if (err)
		goto fail;
	*out = p;
	return 0;
fail:
	export_pyroscope__free(p);
	return err;
}

int export_pyroscope__retryable(int err)
{
	return err != -EINVAL && err != -EPERM;
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ctx)
{
	(void)ptr;
	(void)ctx;
	return size * nmemb;
}

static int curl_err(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static int status_err(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	if (status == 401 || status == 403)
		return -EPERM;
	if (status >= 400 && status < 500 && status != 408 && status != 429)
		return -EINVAL;
	return -EAGAIN;
}

static char *ingest_url(struct pyroscope *p, const struct export_item *it)
{
	char name[NAME_MAX_BYTES], *url = NULL, *ename;
	int n = export_pyroscope__series_name(it->app_name ? it->app_name : p->app_name, it->labels,
				       it->nlabels, name, sizeof(name));
	long long from = it->start_unix_ns / 1000000000LL;
	long long until = (it->end_unix_ns + 999999999LL) / 1000000000LL;

	if (n < 0)
		return NULL;
	if (until <= from)
		until = from + 1;
	ename = curl_easy_escape(p->curl, name, n);
	if (!ename)
		return NULL;
	if (asprintf(&url, "%s/ingest?name=%s&from=%lld&until=%lld&format=pprof"
		     "&sampleRate=%u&spyName=pybpfprof", p->url, ename, from, until,
		     it->rate_hz ? it->rate_hz : 100) < 0)
		url = NULL;
	curl_free(ename);
	return url;
}

int export_pyroscope__push(struct pyroscope *p, const struct export_item *it, int timeout_ms,
		    long *http_status)
{
	curl_mime *mime = NULL;
	curl_mimepart *part;
	char *url = ingest_url(p, it);
	long total = timeout_ms > 0 && timeout_ms < TOTAL_TIMEOUT_MS ? timeout_ms :
								    TOTAL_TIMEOUT_MS;
	CURLcode rc;
	int err;

	*http_status = 0;
	if (!url)
		return -ENOMEM;
	err = -ENOMEM;
	mime = curl_mime_init(p->curl);
	part = mime ? curl_mime_addpart(mime) : NULL;
	if (!part || curl_mime_name(part, "profile") || curl_mime_filename(part, "profile.pprof") ||
	    curl_mime_type(part, "application/octet-stream") ||
	    curl_mime_data(part, (const char *)it->data, it->len))
		goto cleanup;
	curl_easy_reset(p->curl);
	p->errbuf[0] = '\0';
	curl_easy_setopt(p->curl, CURLOPT_URL, url);
	curl_easy_setopt(p->curl, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->headers);
	curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "pybpfprof");
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, p->errbuf);
	/* Signals stay the agent's: curl must not use SIGALRM for its timeouts. */
	curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 total < CONNECT_TIMEOUT_MS ? total : (long)CONNECT_TIMEOUT_MS);
	curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, total);
	curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, discard);
	/* Only http(s), also after a redirect; and none followed, since a redirect to
	 * another host would take the credentials along. */
	curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(p->curl, CURLOPT_FOLLOWLOCATION, 0L);
	if (p->userpwd) {
		curl_easy_setopt(p->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(p->curl, CURLOPT_USERPWD, p->userpwd);
	}
	rc = curl_easy_perform(p->curl);
	if (rc != CURLE_OK) {
		err = curl_err(rc);
		pr_debug("pyroscope: %s: %s\n", p->url,
			 p->errbuf[0] ? p->errbuf : curl_easy_strerror(rc));
		goto cleanup;
	}
	curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, http_status);
	err = status_err(*http_status);
cleanup:
	/* The handle must not keep pointers to what is freed here. */
	curl_easy_setopt(p->curl, CURLOPT_MIMEPOST, NULL);
	curl_mime_free(mime);
	free(url);
	return err;
}
