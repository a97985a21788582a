// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof record`: run a sampling session until time is up, the target is gone or a
 * signal says stop, then write what was sampled in the chosen format.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exitcodes.h"
#include "log.h"
#include "proc.h"
#include "record.h"
#include "session.h"
#include "stats.h"
#include "status_line.h"

struct record_ctx {
	const struct record_opts *opts;
	struct session *session;
	FILE *out;
	char out_path[4096];
	struct run_stats stats;
	uint64_t samples;
};

static int open_output(struct record_ctx *c, pid_t pid)
{
	const char *path = c->opts->output;
	char comm[32] = "python";
	struct tm tm;
	time_t t = time(NULL);

	if (path && !strcmp(path, "-")) {
		c->out = stdout;
		snprintf(c->out_path, sizeof(c->out_path), "standard output");
		return 0;
	}
	if (!path) {
		char who[64];

		proc__comm(pid, comm, sizeof(comm));
		for (char *p = comm; *p; p++)
			if (*p == '/' || *p == ' ')
				*p = '_';
		if (pid)
			snprintf(who, sizeof(who), "%s-%d", comm, (int)pid);
		else
			snprintf(who, sizeof(who), "all");
		localtime_r(&t, &tm);
		snprintf(c->out_path, sizeof(c->out_path),
			 "pybpfprof-%s-%04d%02d%02d-%02d%02d%02d%s", who, tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			 c->opts->writer->suffix);
	} else {
		snprintf(c->out_path, sizeof(c->out_path), "%s", path);
	}
	c->out = fopen(c->out_path, "w");
	if (!c->out) {
		int err = -errno;

		pr_warn("cannot write %s: %s\n", c->out_path, strerror(-err));
		return err;
	}
	return 0;
}

static int write_results(struct record_ctx *c)
{
	struct profile p;
	int err;

	session__profile(c->session, &p);
	err = c->opts->writer->write(c->out, &p);
	if (!err && fflush(c->out))
		err = -errno;
	if (err) {
		pr_warn("writing %s: %s\n", c->out_path, strerror(-err));
		return EXIT_RUNTIME;
	}
	if (c->opts->stats_file) {
		err = stats__write_json(c->opts->stats_file, &c->stats);
		if (err) {
			pr_warn("writing %s: %s\n", c->opts->stats_file, strerror(-err));
			return EXIT_RUNTIME;
		}
	}
	return EXIT_OK;
}

static void report_end(struct record_ctx *c)
{
	const struct run_stats *s = &c->stats;

	stats__summary(stderr, s);
	if (!c->samples && !strcmp(s->mode, "live"))
		pr_warn("no samples: no Python thread of the target was %s while profiled "
			"(%llu left out%s)\n", c->opts->session.idle ? "seen" : "on a CPU",
			(unsigned long long)(s->samples_filtered + s->live.threads_idle_skipped),
			c->opts->session.idle ? "" : "; --idle keeps idle threads");
	else if (!c->samples && c->opts->session.system_wide)
		pr_warn("no samples: %s\n", s->processes ? "no Python process ran Python code "
			"on a CPU while profiled" : "no Python process was found");
	else if (!c->samples)
		pr_warn("no samples: the target ran no Python code on a CPU while profiled "
			"(%llu ticks found no Python thread, %llu no Python frame%s)\n",
			(unsigned long long)s->bpf[PBP_C_NO_TSTATE],
			(unsigned long long)s->bpf[PBP_C_NO_FRAME],
			s->samples_filtered ? ", others left out by --gil" : "");
	if (c->out != stdout)
		pr_warn("wrote %s\n", c->out_path);
	if (s->command_status >= 0) {
		if (WIFEXITED(s->command_status))
			pr_warn("command exited with status %d\n", WEXITSTATUS(s->command_status));
		else
			pr_warn("command was killed by signal %d\n", WTERMSIG(s->command_status));
	}
}

int record__run(const struct record_opts *o)
{
	struct record_ctx *c = calloc(1, sizeof(*c));
	struct session_status st;
	struct status_line sl;
	int code, err = 0;

	if (!c) {
		pr_warn("out of memory\n");
		return EXIT_RUNTIME;
	}
	c->opts = o;
	/* A path that cannot be written is found before the target is touched. */
	if ((o->session.pid || o->session.system_wide) && open_output(c, o->session.pid)) {
		code = EXIT_RUNTIME;
		goto out;
	}
	session__catch_signals();
	code = session__start(&o->session, &c->session);
	if (code)
		goto out;
	if (!c->out && open_output(c, session__pid(c->session))) {
		code = EXIT_RUNTIME;
		goto out;
	}
	/* Not with a command: it writes to the same terminal, and \r would eat its
	 * prompts. */
	status_line__init(&sl, o->session.cmd ? -1 : STDERR_FILENO);
	while (!session__stop_signal()) {
		err = session__poll(c->session, 20);
		if (err)
			break;
		if (status_line__due(&sl)) {
			session__status(c->session, &st);
			status_line__show(&sl, &st);
		}
		if (o->duration_s > 0 && session__elapsed(c->session) >= o->duration_s)
			break;
	}
	status_line__end(&sl);
	session__stop(c->session);
	session__stats(c->session, &c->stats);
	session__status(c->session, &st);
	c->samples = st.samples;
	code = write_results(c);
	report_end(c);
	if (session__command_running(c->session)) {
		/* The profile is safe on disk; now the command runs to its end, as
		 * without the profiler. */
		int status = session__wait_command(c->session);

		pr_warn("command exited with status %d\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
out:
	session__free(c->session);
	if (c->out && c->out != stdout)
		fclose(c->out);
	free(c);
	return code;
}
