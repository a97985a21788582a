/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The agent's settings, from a config file of "key = value" lines and from the
 * command line. Keys are the agent's long option names, so one parser serves both:
 * the command line calls agent_config__set() with the option's name and argument.
 *
 *   # comments and blank lines are ignored; quotes around a value are optional
 *   period = 10s
 *   pyroscope-url = "https://profiles.example:4040"
 *   label = team=payments          (repeatable)
 *   pyroscope-token-file = /run/secrets/pyroscope-token
 *
 * Secrets (the token and the password) are best read from a file of their own or from
 * the environment (PYBPFPROF_PYROSCOPE_TOKEN, PYBPFPROF_PYROSCOPE_PASSWORD): a command
 * line is readable by every local user. agent_config__secrets() reads them.
 */
#ifndef PBP_AGENT_CONFIG_H
#define PBP_AGENT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "session/session.h"

struct strlist {
	char **v;
	size_t n;
};

enum agent_key {
	AK_PERIOD, AK_RATE, AK_APP_NAME, AK_PYROSCOPE_URL, AK_PYROSCOPE_TOKEN,
	AK_PYROSCOPE_USER, AK_PYROSCOPE_PASSWORD, AK_PYROSCOPE_HEADER, AK_OUTPUT_DIR,
	AK_OUTPUT_MAX_MB, AK_QUEUE_MAX, AK_QUEUE_MAX_MB, AK_METRICS_ADDR, AK_LABEL,
	AK_EXCLUDE, AK_CONTAINER, AK_HOST_NAME, AK_PYROSCOPE_TOKEN_FILE,
	AK_PYROSCOPE_PASSWORD_FILE, AK_MODE, AK_MIN_BLOCK, AK_ASYNC, AK_NATIVE, AK_NATIVE_STACK,
	AK_NATIVE_UNWIND, AK_CLOCK, AK_OUTPUT_FORMAT, AK_COUNT,
};

/* native = all: --native-all */
#define AGENT_NATIVE_ALL 2

struct agent_config {
	uint32_t period_ms;		/* default 10000 */
	uint32_t rate_hz;		/* default 100 */
	enum session_mode mode;		/* default cpu */
	uint32_t min_block_us;		/* default SESSION_MIN_BLOCK_DEFAULT_US */
	int async_tasks;		/* async = on: asyncio tasks (default off) */
	int native;			/* native = on (1) or all (AGENT_NATIVE_ALL): C
					 * frames too, as record --native(-all) (off) */
	uint32_t native_stack;		/* native-stack = SIZE (PBP_NATIVE_STACK_DEFAULT) */
	enum session_native_unwind native_unwind;	/* native-unwind = auto|dwarf|fp */
	enum sampler_clock clock;	/* clock = timer|tick */
	char *app_name;			/* default "pybpfprof" */
	char *host_name;		/* the host label; NULL: gethostname() */
	char *pyroscope_url, *pyroscope_token, *pyroscope_user, *pyroscope_password;
	char *pyroscope_token_file, *pyroscope_password_file;	/* read by __secrets() */
	struct strlist pyroscope_headers;	/* "Name: value" */
	char *output_dir;
	uint64_t output_max_mb;		/* default 1024 */
	int output_pbp;			/* output-format = pbp: profile files, not pprof */
	uint32_t queue_max;		/* items; default 64 */
	uint64_t queue_max_mb;		/* default 256 */
	char *metrics_addr;		/* default "127.0.0.1:9464" */
	struct strlist labels;		/* "k=v" */
	struct strlist excludes;
	struct strlist containers;
	uint32_t set;			/* bit (1 << enum agent_key): given explicitly */
};

/* The defaults. */
int agent_config__init(struct agent_config *c);
void agent_config__free(struct agent_config *c);
/* The name of key @key (an enum agent_key), or NULL. */
const char *agent_config__name(int key);
/* The key called @key ("period", "label"...), or -1. */
int agent_config__key(const char *key);
/*
 * Sets @key from @value (repeatable keys append). On a bad key or value, -EINVAL with
 * the reason in @err ("unknown key", "period: \"x\" is not a duration like 10s").
 */
int agent_config__set(struct agent_config *c, const char *key, const char *value,
		      char *err, size_t errlen);
/* Reads @path into @c (on top of what it holds). Errors name path:line. */
int agent_config__load(struct agent_config *c, const char *path);
/* As agent_config__load() from text already read; @name is used in messages. */
int agent_config__parse(struct agent_config *c, const char *text, const char *name);
/*
 * @out = @file, with everything @cli set explicitly taking precedence: a scalar from
 * the command line replaces the file's; labels and headers are merged by key/name
 * (the command line's win); a command-line exclude or container list replaces the
 * file's. @out must be initialised; it owns copies.
 */
int agent_config__merge(struct agent_config *out, const struct agent_config *file,
			const struct agent_config *cli);
/* 0, or -EINVAL, logged, for settings that are valid alone but not together. */
int agent_config__check(const struct agent_config *c);
/*
 * The token and the password from their files (pyroscope-token-file,
 * pyroscope-password-file) or, when neither the value nor a file is given, from
 * PYBPFPROF_PYROSCOPE_TOKEN and PYBPFPROF_PYROSCOPE_PASSWORD. A file may end in one
 * newline; a secret with a control character in it is refused. -EINVAL with the reason
 * logged (never the secret), or -ENOMEM.
 */
int agent_config__secrets(struct agent_config *c);
/* "10s", "1m", "500ms", "2h", or plain seconds -> milliseconds; -EINVAL. */
int agent_config__parse_period(const char *s, uint32_t *ms);

#endif
