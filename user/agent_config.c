// SPDX-License-Identifier: GPL-2.0-only
/* The agent's config file and option values; see agent_config.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_config.h"
#include "log.h"
#include "proc_filter.h"

#define LINE_MAX_BYTES 4096
#define FILE_MAX_BYTES (1 << 20)

static const char *const key_names[AK_COUNT] = {
	[AK_PERIOD] = "period", [AK_RATE] = "rate", [AK_APP_NAME] = "app-name",
	[AK_PYROSCOPE_URL] = "pyroscope-url", [AK_PYROSCOPE_TOKEN] = "pyroscope-token",
	[AK_PYROSCOPE_USER] = "pyroscope-user",
	[AK_PYROSCOPE_PASSWORD] = "pyroscope-password",
	[AK_PYROSCOPE_HEADER] = "pyroscope-header", [AK_OUTPUT_DIR] = "output-dir",
	[AK_OUTPUT_MAX_MB] = "output-max-mb", [AK_QUEUE_MAX] = "queue-max",
	[AK_QUEUE_MAX_MB] = "queue-max-mb", [AK_METRICS_ADDR] = "metrics-addr",
	[AK_LABEL] = "label", [AK_EXCLUDE] = "exclude", [AK_CONTAINER] = "container",
	[AK_HOST_NAME] = "host-name",
};

static void strlist__free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int strlist__add(struct strlist *l, const char *s)
{
	char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->v = v;
	l->v[l->n] = strdup(s);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static int set_str(char **dst, const char *s)
{
	char *copy = strdup(s);

	if (!copy)
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

int agent_config__init(struct agent_config *c)
{
	memset(c, 0, sizeof(*c));
	c->period_ms = 10000;
	c->rate_hz = 100;
	c->output_max_mb = 1024;
	c->queue_max = 64;
	c->queue_max_mb = 256;
	if (set_str(&c->app_name, "pybpfprof") || set_str(&c->metrics_addr, "127.0.0.1:9464")) {
		agent_config__free(c);
		return -ENOMEM;
	}
	return 0;
}

void agent_config__free(struct agent_config *c)
{
	free(c->app_name);
	free(c->host_name);
	free(c->pyroscope_url);
	free(c->pyroscope_token);
	free(c->pyroscope_user);
	free(c->pyroscope_password);
	free(c->output_dir);
	free(c->metrics_addr);
	strlist__free(&c->pyroscope_headers);
	strlist__free(&c->labels);
	strlist__free(&c->excludes);
	strlist__free(&c->containers);
	memset(c, 0, sizeof(*c));
}

const char *agent_config__name(int key)
{
	return key >= 0 && key < AK_COUNT ? key_names[key] : NULL;
}

int agent_config__key(const char *key)
{
	for (int i = 0; i < AK_COUNT; i++)
		if (!strcmp(key, key_names[i]))
			return i;
	return -1;
}

int agent_config__parse_period(const char *s, uint32_t *ms)
{
	static const struct { const char *unit; double ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "", 1000 },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v > 0) || isspace((unsigned char)*s))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		v *= units[i].ms;
		if (v < 1 || v > 86400000)
			return -EINVAL;
		*ms = (uint32_t)(v + 0.5);
		return 0;
	}
	return -EINVAL;
}

static int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "k=v" with a key Pyroscope and pprof both accept. */
static int valid_label(const char *s)
{
	const char *eq = strchr(s, '=');

	if (!eq || eq == s || !eq[1])
		return 0;
	for (const char *p = s; p < eq; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return 0;
	return 1;
}

static int valid_header(const char *s)
{
	const char *colon = strchr(s, ':');

	if (!colon || colon == s)
		return 0;
	for (const char *p = s; p < colon; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return 0;
	for (const char *p = s; *p; p++)
		if (*p == '\r' || *p == '\n')
			return 0;
	return 1;
}

int agent_config__set(struct agent_config *c, const char *key, const char *value,
		      char *err, size_t errlen)
{
	int k = agent_config__key(key), rc = 0;
	uint64_t u;
	uint32_t ms;
	const char *why = NULL;

	if (k < 0) {
		snprintf(err, errlen, "unknown key \"%s\"", key);
		return -EINVAL;
	}
	switch (k) {
	case AK_PERIOD:
		if (agent_config__parse_period(value, &ms))
			why = "is not a duration like 10s, 1m or 500ms";
		else if (ms < 100)
			why = "is shorter than 100ms";
		else
			c->period_ms = ms;
		break;
	case AK_RATE:
		if (parse_uint(value, 1, 10000, &u))
			why = "is not a rate in Hz from 1 to 10000";
		else
			c->rate_hz = (uint32_t)u;
		break;
	case AK_OUTPUT_MAX_MB:
	case AK_QUEUE_MAX_MB:
		if (parse_uint(value, 1, 1 << 20, &u))
			why = "is not a size in MB from 1 to 1048576";
		else
			*(k == AK_OUTPUT_MAX_MB ? &c->output_max_mb : &c->queue_max_mb) = u;
		break;
	case AK_QUEUE_MAX:
		if (parse_uint(value, 1, 100000, &u))
			why = "is not a number of profiles from 1 to 100000";
		else
			c->queue_max = (uint32_t)u;
		break;
	case AK_PYROSCOPE_URL:
		if (strncmp(value, "http://", 7) && strncmp(value, "https://", 8))
			why = "is not an http:// or https:// URL";
		else
			rc = set_str(&c->pyroscope_url, value);
		break;
	case AK_APP_NAME:
		if (!*value)
			why = "is empty";
		else
			rc = set_str(&c->app_name, value);
		break;
	case AK_HOST_NAME:
		if (!*value)
			why = "is empty";
		else
			rc = set_str(&c->host_name, value);
		break;
	case AK_PYROSCOPE_TOKEN:
		rc = set_str(&c->pyroscope_token, value);
		break;
	case AK_PYROSCOPE_USER:
		rc = set_str(&c->pyroscope_user, value);
		break;
	case AK_PYROSCOPE_PASSWORD:
		rc = set_str(&c->pyroscope_password, value);
		break;
	case AK_OUTPUT_DIR:
		if (!*value)
			why = "is empty";
		else
			rc = set_str(&c->output_dir, value);
		break;
	case AK_METRICS_ADDR:
		if (!strchr(value, ':'))
			why = "is not HOST:PORT, [IPV6]:PORT or :PORT";
		else
			rc = set_str(&c->metrics_addr, value);
		break;
	case AK_PYROSCOPE_HEADER:
		if (!valid_header(value))
			why = "is not \"Name: value\"";
		else
			rc = strlist__add(&c->pyroscope_headers, value);
		break;
	case AK_LABEL:
		if (!valid_label(value))
			why = "is not key=value with a key of letters, digits and _";
		else
			rc = strlist__add(&c->labels, value);
		break;
	case AK_EXCLUDE:
	case AK_CONTAINER:
		if (!*value)
			why = "is empty";
		else if (k == AK_CONTAINER && strlen(value) < PROC_FILTER_CONTAINER_MIN)
			why = "is too short: give 4 characters or more of a container id, a pod "
			      "UID or a cgroup name";
		else
			rc = strlist__add(k == AK_EXCLUDE ? &c->excludes : &c->containers, value);
		break;
	}
	if (why) {
		snprintf(err, errlen, "%s: \"%s\" %s", key, value, why);
		return -EINVAL;
	}
	if (rc) {
		snprintf(err, errlen, "%s: %s", key, strerror(-rc));
		return rc;
	}
	c->set |= 1u << k;
	return 0;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int agent_config__parse(struct agent_config *c, const char *text, const char *name)
{
	char line[LINE_MAX_BYTES], why[256];
	const char *p = text;
	int lineno = 0, err;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *key, *value, *eq;

		lineno++;
		if (len >= sizeof(line)) {
			pr_warn("%s:%d: line longer than %d bytes\n", name, lineno, LINE_MAX_BYTES);
			return -EINVAL;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		p = nl ? nl + 1 : p + len;
		key = trim(line);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			pr_warn("%s:%d: not \"key = value\"\n", name, lineno);
			return -EINVAL;
		}
		*eq = '\0';
		key = trim(key);
		value = trim(eq + 1);
		len = strlen(value);
		if (len >= 2 && (value[0] == '"' || value[0] == '\'') && value[len - 1] == value[0]) {
			value[len - 1] = '\0';
			value++;
		}
		err = agent_config__set(c, key, value, why, sizeof(why));
		if (err) {
			pr_warn("%s:%d: %s\n", name, lineno, why);
			return err;
		}
	}
	return 0;
}

int agent_config__load(struct agent_config *c, const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len;
	int err = 0;

	if (!f) {
		err = -errno;
		pr_warn("config %s: %s\n", path, strerror(-err));
		return err;
	}
	text = malloc(FILE_MAX_BYTES + 1);
	if (!text) {
		err = -ENOMEM;
		goto cleanup;
	}
	len = fread(text, 1, FILE_MAX_BYTES + 1, f);
	if (ferror(f) || len > FILE_MAX_BYTES) {
		err = ferror(f) ? -EIO : -EFBIG;
		pr_warn("config %s: %s\n", path, ferror(f) ? "read error" : "larger than 1 MiB");
		goto cleanup;
	}
	text[len] = '\0';
	if (memchr(text, '\0', len)) {
		pr_warn("config %s: not a text file\n", path);
		err = -EINVAL;
		goto cleanup;
	}
	err = agent_config__parse(c, text, path);
cleanup:
	free(text);
	fclose(f);
	return err;
}

/* Length of an entry's key: up to '=' (labels) or ':' (headers). */
static size_t key_len(const char *s, char sep)
{
	const char *p = strchr(s, sep);

	return p ? (size_t)(p - s) : strlen(s);
}

static int same_key(const char *a, const char *b, char sep)
{
	size_t n = key_len(a, sep);

	if (n != key_len(b, sep))
		return 0;
	return sep == ':' ? !strncasecmp(a, b, n) : !strncmp(a, b, n);
}

/* @file's entries whose key @cli does not have, then @cli's. */
static int merge_keyed(struct strlist *out, const struct strlist *file,
		       const struct strlist *cli, char sep)
{
	int err;

	strlist__free(out);
	for (size_t i = 0; i < file->n; i++) {
		int overridden = 0;

		for (size_t j = 0; j < cli->n && !overridden; j++)
			overridden = same_key(file->v[i], cli->v[j], sep);
		if (!overridden && (err = strlist__add(out, file->v[i])))
			return err;
	}
	for (size_t j = 0; j < cli->n; j++)
		if ((err = strlist__add(out, cli->v[j])))
			return err;
	return 0;
}

static int copy_list(struct strlist *out, const struct strlist *in)
{
	int err;

	strlist__free(out);
	for (size_t i = 0; i < in->n; i++)
		if ((err = strlist__add(out, in->v[i])))
			return err;
	return 0;
}

int agent_config__merge(struct agent_config *out, const struct agent_config *file,
			const struct agent_config *cli)
{
#define PICK(k) ((cli->set & (1u << (k))) ? cli : file)
	char *const *strs[][2] = {
		{ &out->app_name, &PICK(AK_APP_NAME)->app_name },
		{ &out->host_name, &PICK(AK_HOST_NAME)->host_name },
		{ &out->pyroscope_url, &PICK(AK_PYROSCOPE_URL)->pyroscope_url },
		{ &out->pyroscope_token, &PICK(AK_PYROSCOPE_TOKEN)->pyroscope_token },
		{ &out->pyroscope_user, &PICK(AK_PYROSCOPE_USER)->pyroscope_user },
		{ &out->pyroscope_password, &PICK(AK_PYROSCOPE_PASSWORD)->pyroscope_password },
		{ &out->output_dir, &PICK(AK_OUTPUT_DIR)->output_dir },
		{ &out->metrics_addr, &PICK(AK_METRICS_ADDR)->metrics_addr },
	};
	int err;

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		char **dst = (char **)strs[i][0];
		const char *src = *strs[i][1];

		free(*dst);
		*dst = NULL;
		if (src && !(*dst = strdup(src)))
			return -ENOMEM;
	}
	out->period_ms = PICK(AK_PERIOD)->period_ms;
	out->rate_hz = PICK(AK_RATE)->rate_hz;
	out->output_max_mb = PICK(AK_OUTPUT_MAX_MB)->output_max_mb;
	out->queue_max = PICK(AK_QUEUE_MAX)->queue_max;
	out->queue_max_mb = PICK(AK_QUEUE_MAX_MB)->queue_max_mb;
	err = merge_keyed(&out->labels, &file->labels, &cli->labels, '=');
	if (!err)
		err = merge_keyed(&out->pyroscope_headers, &file->pyroscope_headers,
				  &cli->pyroscope_headers, ':');
	if (!err)
		err = copy_list(&out->excludes, cli->excludes.n ? &cli->excludes : &file->excludes);
	if (!err)
		err = copy_list(&out->containers,
				cli->containers.n ? &cli->containers : &file->containers);
	out->set = file->set | cli->set;
	return err;
#undef PICK
}
