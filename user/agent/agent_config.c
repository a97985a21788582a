// SPDX-License-Identifier: GPL-2.0-only
/* The agent's config file and option values; see agent_config.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_config.h"
#include "base/log.h"
#include "base/names.h"
#include "session/proc_filter.h"

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
	[AK_HOST_NAME] = "host-name", [AK_PYROSCOPE_TOKEN_FILE] = "pyroscope-token-file",
	[AK_PYROSCOPE_PASSWORD_FILE] = "pyroscope-password-file",
	[AK_MODE] = "mode", [AK_MIN_BLOCK] = "min-block", [AK_ASYNC] = "async",
	[AK_NATIVE] = "native", [AK_NATIVE_STACK] = "native-stack",
	[AK_NATIVE_UNWIND] = "native-unwind", [AK_CLOCK] = "clock",
	[AK_OUTPUT_FORMAT] = "output-format",
};

#define SECRET_MAX_BYTES 16384

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

static void free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

/* Control characters would end an HTTP header line early (CR, LF) or mangle it. */
static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int agent_config__init(struct agent_config *c)
{
	memset(c, 0, sizeof(*c));
	c->period_ms = 10000;
	c->rate_hz = 100;
	c->min_block_us = SESSION_MIN_BLOCK_DEFAULT_US;
	c->native_stack = PBP_NATIVE_STACK_DEFAULT;
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
	free_secret(c->pyroscope_token);
	free(c->pyroscope_user);
	free_secret(c->pyroscope_password);
	free(c->pyroscope_token_file);
	free(c->pyroscope_password_file);
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
	int i = names__index(key_names, AK_COUNT, key);

	return i < 0 ? -1 : i;
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
	case AK_MODE:
		if (session__parse_mode(value, &c->mode))
			why = "is not cpu, wall or off-cpu";
		break;
	case AK_ASYNC:
		if (!strcmp(value, "on") || !strcmp(value, "off"))
			c->async_tasks = !strcmp(value, "on");
		else
			why = "is not on or off";
		break;
	case AK_NATIVE:
		if (!strcmp(value, "all"))
			c->native = AGENT_NATIVE_ALL;
		else if (!strcmp(value, "on") || !strcmp(value, "off"))
			c->native = !strcmp(value, "on");
		else
			why = "is not on, all or off";
		break;
	case AK_NATIVE_STACK:
		if (session__parse_native_stack(value, &c->native_stack))
			why = "is not a size from 4K to 64K (bytes, or with K)";
		break;
	case AK_NATIVE_UNWIND:
		if (session__parse_native_unwind(value, &c->native_unwind))
			why = "is not auto, dwarf or fp";
		break;
	case AK_CLOCK:
		/* The agent profiles every process: no clock per thread. */
		if (sampler__parse_clock(value, &c->clock) || c->clock == SAMPLER_CLOCK_THREAD)
			why = "is not timer or tick";
		break;
	case AK_MIN_BLOCK:
		if (parse_uint(value, 0, SESSION_MIN_BLOCK_MAX_US, &u))
			why = "is not a number of microseconds from 0 to 1000000";
		else
			c->min_block_us = (uint32_t)u;
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
	case AK_PYROSCOPE_PASSWORD:
	case AK_PYROSCOPE_USER:
		/* Never echo a secret, nor a line break, back into a log. */
		if (has_control(value)) {
			snprintf(err, errlen, "%s: has a control character (CR, LF, tab...) in it",
				 key);
			return -EINVAL;
		}
		if (k == AK_PYROSCOPE_USER && strchr(value, ':'))
			why = "has a ':' in it (basic auth ends the user name there)";
		else
			rc = set_str(k == AK_PYROSCOPE_TOKEN ? &c->pyroscope_token :
				     k == AK_PYROSCOPE_USER ? &c->pyroscope_user :
				     &c->pyroscope_password, value);
		break;
	case AK_PYROSCOPE_TOKEN_FILE:
	case AK_PYROSCOPE_PASSWORD_FILE:
		if (!*value)
			why = "is empty";
		else
			rc = set_str(k == AK_PYROSCOPE_TOKEN_FILE ? &c->pyroscope_token_file :
				     &c->pyroscope_password_file, value);
		break;
	case AK_OUTPUT_FORMAT:
		if (strcmp(value, "pprof") && strcmp(value, "pbp"))
			why = "is not pprof or pbp";
		else
			c->output_pbp = !strcmp(value, "pbp");
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

/* A secret in a file that others may read is no secret: say so (and go on: it is the
 * admin's call, and a refusal would stop profiling over a mode bit). */
static void warn_if_readable(int fd, const char *what, const char *path)
{
	struct stat st;

	if (!fstat(fd, &st) && (st.st_mode & (S_IRGRP | S_IROTH)))
		pr_warn("%s %s holds a secret but %s can read it (mode %04o): chmod 600 it\n",
			what, path, st.st_mode & S_IROTH ? "every user" : "its group",
			(unsigned int)(st.st_mode & 07777));
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
	if (!err && (c->set & (1u << AK_PYROSCOPE_TOKEN | 1u << AK_PYROSCOPE_PASSWORD)))
		warn_if_readable(fileno(f), "config", path);
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
	/* A secret and its file are one setting: the command line's, if it gives either. */
#define PICK2(k1, k2) ((cli->set & (1u << (k1) | 1u << (k2))) ? cli : file)
	char *const *strs[][2] = {
		{ &out->app_name, &PICK(AK_APP_NAME)->app_name },
		{ &out->host_name, &PICK(AK_HOST_NAME)->host_name },
		{ &out->pyroscope_url, &PICK(AK_PYROSCOPE_URL)->pyroscope_url },
		{ &out->pyroscope_token, &PICK2(AK_PYROSCOPE_TOKEN,
						AK_PYROSCOPE_TOKEN_FILE)->pyroscope_token },
		{ &out->pyroscope_token_file, &PICK2(AK_PYROSCOPE_TOKEN,
						     AK_PYROSCOPE_TOKEN_FILE)->pyroscope_token_file },
		{ &out->pyroscope_user, &PICK(AK_PYROSCOPE_USER)->pyroscope_user },
		{ &out->pyroscope_password, &PICK2(AK_PYROSCOPE_PASSWORD,
						   AK_PYROSCOPE_PASSWORD_FILE)->pyroscope_password },
		{ &out->pyroscope_password_file,
		  &PICK2(AK_PYROSCOPE_PASSWORD,
			 AK_PYROSCOPE_PASSWORD_FILE)->pyroscope_password_file },
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
	out->mode = PICK(AK_MODE)->mode;
	out->min_block_us = PICK(AK_MIN_BLOCK)->min_block_us;
	out->async_tasks = PICK(AK_ASYNC)->async_tasks;
	out->native = PICK(AK_NATIVE)->native;
	out->native_stack = PICK(AK_NATIVE_STACK)->native_stack;
	out->native_unwind = PICK(AK_NATIVE_UNWIND)->native_unwind;
	out->clock = PICK(AK_CLOCK)->clock;
	out->output_max_mb = PICK(AK_OUTPUT_MAX_MB)->output_max_mb;
	out->output_pbp = PICK(AK_OUTPUT_FORMAT)->output_pbp;
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
#undef PICK2
#undef PICK
}

int agent_config__check(const struct agent_config *c)
{
	/* record and top refuse the same pair (cli__clock_check). */
	if (c->clock != SAMPLER_CLOCK_TIMER && c->mode == SESSION_OFF_CPU) {
		pr_warn("clock: tick times on-CPU samples, and mode off-cpu takes none: use "
			"mode = wall, or clock = timer\n");
		return -EINVAL;
	}
	return 0;
}

/* @path's content, less one final newline, into *@out; the reason logged otherwise,
 * naming the setting @key that gave the path. */
static int read_secret(const char *path, const char *key, char **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), err = 0;
	char *buf = NULL;
	struct stat st;
	ssize_t n;

	if (fd < 0) {
		err = -errno;
		pr_warn("%s %s: %s\n", key, path, strerror(-err));
		return err == -ENOMEM ? err : -EINVAL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		pr_warn("%s %s: not a regular file\n", key, path);
		err = -EINVAL;
		goto out;
	}
	warn_if_readable(fd, key, path);
	buf = malloc(SECRET_MAX_BYTES + 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	n = read(fd, buf, SECRET_MAX_BYTES + 1);
	if (n < 0 || n > SECRET_MAX_BYTES) {
		pr_warn("%s %s: %s\n", key, path,
			n < 0 ? strerror(errno) : "larger than 16 KiB");
		err = -EINVAL;
		goto out;
	}
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n && buf[n - 1] == '\r')
		buf[--n] = '\0';
	if (!n || has_control(buf) || memchr(buf, '\0', (size_t)n)) {
		pr_warn("%s %s: %s\n", key, path, !n ? "is empty" :
			"has a control character (CR, LF, tab...) or more than one line");
		err = -EINVAL;
		goto out;
	}
	*out = buf;
	buf = NULL;
out:
	if (buf)
		explicit_bzero(buf, SECRET_MAX_BYTES + 1);
	free(buf);
	close(fd);
	return err;
}

/* One secret: its file, else the value given, else the environment's. */
static int secret(char **value, const char *file, int key, int file_key, const char *env)
{
	const char *e;
	char *got = NULL;
	int err;

	if (file && *value) {
		pr_warn("give %s or %s, not both\n", key_names[key], key_names[file_key]);
		return -EINVAL;
	}
	if (file) {
		err = read_secret(file, key_names[file_key], &got);
		if (err)
			return err;
	} else if (!*value && (e = getenv(env)) && *e) {
		if (has_control(e)) {
			pr_warn("%s: has a control character (CR, LF, tab...) in it\n", env);
			return -EINVAL;
		}
		got = strdup(e);
		if (!got)
			return -ENOMEM;
	} else {
		return 0;
	}
	free_secret(*value);
	*value = got;
	return 0;
}

int agent_config__secrets(struct agent_config *c)
{
	int err = secret(&c->pyroscope_token, c->pyroscope_token_file, AK_PYROSCOPE_TOKEN,
			 AK_PYROSCOPE_TOKEN_FILE, "PYBPFPROF_PYROSCOPE_TOKEN");

	if (!err)
		err = secret(&c->pyroscope_password, c->pyroscope_password_file,
			     AK_PYROSCOPE_PASSWORD, AK_PYROSCOPE_PASSWORD_FILE,
			     "PYBPFPROF_PYROSCOPE_PASSWORD");
	return err;
}
