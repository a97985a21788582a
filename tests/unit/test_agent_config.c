// SPDX-License-Identifier: GPL-2.0-only
/*
 * The agent's config file: every key, comments, quotes, repeatable keys; bad keys and
 * values refused with file:line (checked by the pytest side on stderr); command-line
 * values winning over the file's in agent_config__merge().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_config.h"
#include "check.h"


static const char good[] =
	"# the agent\n"
	"\n"
	"period = 1m\n"
	"rate=250\n"
	"  app-name = \"shop\"  \n"
	"pyroscope-url = 'https://profiles.example:4040/base'\n"
	"pyroscope-token = abc=def#not-a-comment\n"
	"pyroscope-user = 123\n"
	"pyroscope-password = \"p w\"\n"
	"pyroscope-header = X-Scope-OrgID: tenant-1\n"
	"pyroscope-header = X-Extra: 1\n"
	"output-dir = /var/lib/pybpfprof\n"
	"output-max-mb = 50\n"
	"queue-max = 10\n"
	"queue-max-mb = 32\n"
	"metrics-addr = [::1]:9999\n"
	"label = team=payments\n"
	"label = env=prod\n"
	"exclude = /usr/bin/ansible*\n"
	"host-name = node-7\n"
	"container = abcd\n"
	"pyroscope-token-file = /run/secrets/token\n"
	"pyroscope-password-file = /run/secrets/password\n"
	"mode = wall\n"
	"min-block = 250\n"
	"async = on\n"
	"native = on\n"
	"native-stack = 20K\n"
	"native-unwind = fp\n"
	"clock = tick\n"
	"output-format = pbp\n"
	"container = defg";	/* no newline at the end */

static void periods(void)
{
	static const struct { const char *s; uint32_t ms; } ok[] = {
		{ "10s", 10000 }, { "1m", 60000 }, { "500ms", 500 }, { "2h", 7200000 },
		{ "15", 15000 }, { "1.5s", 1500 },
	};
	static const char *const bad[] = { "", "s", "10x", "-1s", "0", "10 s", " 10s", "1e9h" };
	uint32_t ms;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		CHECK(!agent_config__parse_period(ok[i].s, &ms) && ms == ok[i].ms);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(agent_config__parse_period(bad[i], &ms) == -EINVAL);
}

static void parses_every_key(void)
{
	struct agent_config c;

	CHECK(!agent_config__init(&c));
	CHECK(c.period_ms == 10000 && c.rate_hz == 100 && !strcmp(c.app_name, "pybpfprof"));
	CHECK(!strcmp(c.metrics_addr, "127.0.0.1:9464"));
	CHECK(!agent_config__parse(&c, good, "good.conf"));
	CHECK(c.period_ms == 60000 && c.rate_hz == 250);
	CHECK(!strcmp(c.app_name, "shop"));
	CHECK(!strcmp(c.pyroscope_url, "https://profiles.example:4040/base"));
	CHECK(!strcmp(c.pyroscope_token, "abc=def#not-a-comment"));
	CHECK(!strcmp(c.pyroscope_user, "123") && !strcmp(c.pyroscope_password, "p w"));
	CHECK(c.pyroscope_headers.n == 2 &&
	      !strcmp(c.pyroscope_headers.v[0], "X-Scope-OrgID: tenant-1"));
	CHECK(!strcmp(c.output_dir, "/var/lib/pybpfprof") && c.output_max_mb == 50);
	CHECK(c.queue_max == 10 && c.queue_max_mb == 32);
	CHECK(!strcmp(c.metrics_addr, "[::1]:9999"));
	CHECK(c.labels.n == 2 && !strcmp(c.labels.v[1], "env=prod"));
	CHECK(c.excludes.n == 1 && c.containers.n == 2 && !strcmp(c.containers.v[1], "defg"));
	CHECK(!strcmp(c.host_name, "node-7"));
	CHECK(c.mode == SESSION_WALL && c.min_block_us == 250);
	CHECK(c.async_tasks == 1);
	CHECK(c.native == 1 && c.native_stack == 20 * 1024);
	CHECK(c.native_unwind == SESSION_UNWIND_FP);
	CHECK(c.clock == SAMPLER_CLOCK_TICK);
	CHECK(c.output_pbp == 1);
	CHECK(c.set == (1u << AK_COUNT) - 1);
	agent_config__free(&c);
	CHECK(!agent_config__init(&c));
	CHECK(agent_config__parse(&c, "native = all\n", "all.conf") == 0);
	CHECK(c.native == AGENT_NATIVE_ALL);
	agent_config__free(&c);
}

/* Each bad line alone; the message (file:line) goes to stderr for the pytest side. */
static void refuses_bad_lines(void)
{
	static const char *const bad[] = {
		"bogus = 1\n",
		"# fine\nperiod = soon\n",
		"\n\nrate = 0\n",
		"rate = 100000\n",
		"rate = 12abc\n",
		"queue-max = -3\n",
		"pyroscope-url = ftp://x\n",
		"label = noequals\n",
		"label = bad key=x\n",
		"pyroscope-header = no colon\n",
		"metrics-addr = 9464\n",
		"just some words\n",
		"output-max-mb = 99999999999999999999\n",
		"pyroscope-token = a\tb\n",
		"pyroscope-user = a:b\n",
		"pyroscope-password-file =\n",
		"native = yes\n",
		"native = All\n",
		"native-stack = 3K\n",
		"native-stack = 65537\n",
		"native-stack = 16M\n",
		"native-stack = -16K\n",
		"native-unwind = frames\n",
		"clock = jiffies\n",
		"output-format = json\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct agent_config c;

		CHECK(!agent_config__init(&c));
		fprintf(stderr, "case %zu: ", i);
		CHECK(agent_config__parse(&c, bad[i], "bad.conf") == -EINVAL);
		agent_config__free(&c);
	}
}

static void loads_files(void)
{
	char path[] = "/tmp/pbp-agent-config-XXXXXX";
	int fd = mkstemp(path);
	struct agent_config c;

	CHECK(fd >= 0);
	CHECK(write(fd, good, strlen(good)) == (ssize_t)strlen(good));
	close(fd);
	CHECK(!agent_config__init(&c));
	CHECK(!agent_config__load(&c, path));
	CHECK(c.rate_hz == 250);
	agent_config__free(&c);
	unlink(path);
	CHECK(!agent_config__init(&c));
	CHECK(agent_config__load(&c, path) == -ENOENT);
	agent_config__free(&c);
}

static void command_line_wins(void)
{
	struct agent_config file, cli, out;
	char err[256];

	CHECK(!agent_config__init(&file) && !agent_config__init(&cli) &&
	      !agent_config__init(&out));
	CHECK(!agent_config__parse(&file, good, "good.conf"));
	CHECK(!agent_config__set(&cli, "rate", "999", err, sizeof(err)));
	CHECK(!agent_config__set(&cli, "label", "env=staging", err, sizeof(err)));
	CHECK(!agent_config__set(&cli, "pyroscope-header", "x-scope-orgid: t2", err,
				 sizeof(err)));
	CHECK(!agent_config__set(&cli, "exclude", "/opt/x", err, sizeof(err)));
	CHECK(agent_config__set(&cli, "nope", "1", err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "unknown key \"nope\""));
	CHECK(!agent_config__merge(&out, &file, &cli));
	CHECK(out.rate_hz == 999 && out.period_ms == 60000);	/* cli, then file */
	CHECK(!strcmp(out.app_name, "shop") && !strcmp(out.pyroscope_password, "p w"));
	CHECK(out.labels.n == 2 && !strcmp(out.labels.v[0], "team=payments") &&
	      !strcmp(out.labels.v[1], "env=staging"));
	/* Header names are case-insensitive: the command line's replaces the file's. */
	CHECK(out.pyroscope_headers.n == 2 && !strcmp(out.pyroscope_headers.v[0], "X-Extra: 1") &&
	      !strcmp(out.pyroscope_headers.v[1], "x-scope-orgid: t2"));
	CHECK(out.excludes.n == 1 && !strcmp(out.excludes.v[0], "/opt/x"));
	CHECK(out.containers.n == 2);
	agent_config__free(&file);
	agent_config__free(&cli);
	agent_config__free(&out);
}

static char *write_temp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/pbp-agent-secret-XXXXXX");
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* A secret's file: one line, its newline dropped; more lines or control characters
 * refused. */
static int secret_from_file(const char *text, char **token)
{
	struct agent_config c;
	char *path = write_temp(text), err[256];
	int rc;

	CHECK(!agent_config__init(&c));
	CHECK(!agent_config__set(&c, "pyroscope-token-file", path, err, sizeof(err)));
	rc = agent_config__secrets(&c);
	*token = c.pyroscope_token ? strdup(c.pyroscope_token) : NULL;
	agent_config__free(&c);
	unlink(path);
	return rc;
}

static void secrets(void)
{
	struct agent_config file, cli, out;
	char err[256], *tok;

	/* Refused without being echoed: it is a secret, and a line break would split
	 * the message. */
	CHECK(!agent_config__init(&cli));
	CHECK(agent_config__set(&cli, "pyroscope-token", "abc\r\nX-Evil: 1", err,
				sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "control character") && !strstr(err, "Evil") && !strchr(err, '\n'));
	CHECK(agent_config__set(&cli, "pyroscope-password", "p\n", err, sizeof(err)) ==
	      -EINVAL);
	CHECK(agent_config__set(&cli, "pyroscope-user", "u\r", err, sizeof(err)) == -EINVAL);
	CHECK(!agent_config__set(&cli, "pyroscope-user", "u", err, sizeof(err)));

	CHECK(secret_from_file("tok-1\n", &tok) == 0 && !strcmp(tok, "tok-1"));
	free(tok);
	CHECK(secret_from_file("tok-2", &tok) == 0 && !strcmp(tok, "tok-2"));
	free(tok);
	CHECK(secret_from_file("tok-3\r\n", &tok) == 0 && !strcmp(tok, "tok-3"));
	free(tok);
	CHECK(secret_from_file("tok\n\n", &tok) == -EINVAL);
	CHECK(secret_from_file("tok\nX-Evil: 1\n", &tok) == -EINVAL);
	CHECK(secret_from_file("\n", &tok) == -EINVAL);

	/* A secret and its file are one setting: the command line's file wins over the
	 * config file's value; both in one place are refused. */
	CHECK(!agent_config__init(&file) && !agent_config__init(&out));
	CHECK(!agent_config__parse(&file, "pyroscope-token = from-file\n", "f.conf"));
	CHECK(!agent_config__set(&cli, "pyroscope-token-file", "/nonexistent/token", err,
				 sizeof(err)));
	CHECK(!agent_config__merge(&out, &file, &cli));
	CHECK(!out.pyroscope_token && !strcmp(out.pyroscope_token_file, "/nonexistent/token"));
	CHECK(agent_config__secrets(&out) == -EINVAL);	/* no such file */
	agent_config__free(&out);
	CHECK(!agent_config__set(&file, "pyroscope-token-file", "/x", err, sizeof(err)));
	CHECK(agent_config__secrets(&file) == -EINVAL);	/* both */
	agent_config__free(&file);
	agent_config__free(&cli);

	/* The environment, when nothing else gives one. */
	CHECK(!agent_config__init(&out));
	setenv("PYBPFPROF_PYROSCOPE_TOKEN", "env-tok", 1);
	setenv("PYBPFPROF_PYROSCOPE_PASSWORD", "env-pw", 1);
	CHECK(!agent_config__set(&out, "pyroscope-password", "given", err, sizeof(err)));
	CHECK(!agent_config__secrets(&out));
	CHECK(!strcmp(out.pyroscope_token, "env-tok") && !strcmp(out.pyroscope_password, "given"));
	agent_config__free(&out);
	setenv("PYBPFPROF_PYROSCOPE_TOKEN", "env\rtok", 1);
	CHECK(!agent_config__init(&out));
	CHECK(agent_config__secrets(&out) == -EINVAL);
	agent_config__free(&out);
	unsetenv("PYBPFPROF_PYROSCOPE_TOKEN");
	unsetenv("PYBPFPROF_PYROSCOPE_PASSWORD");
}

int main(void)
{
	periods();
	parses_every_key();
	refuses_bad_lines();
	loads_files();
	command_line_wins();
	secrets();
	printf("test_agent_config: ok\n");
	return 0;
}
