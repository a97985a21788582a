// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof record`: run a sampling session until time is up, the target is gone or a
 * signal says stop, then write what was sampled in the chosen format.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/exitcodes.h"
#include "session/host_pythons.h"
#include "base/log.h"
#include "base/outfile.h"
#include "base/proc.h"
#include "session/proc_filter.h"
#include "sample/perf_clock.h"
#include "cmd/record.h"
#include "session/session.h"
#include "session/stats.h"
#include "ui/status_line.h"

/* The one piece of process-wide state: set by the signal handler, read by the loop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	/* No SA_RESTART: a poll must return so the loop sees the flag. A hang-up (the
	 * SSH session dropped) ends the run like SIGTERM, with what was sampled
	 * written. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

struct record_ctx {
	const struct record_opts *opts;
	struct session *session;
	struct outputs outs;	/* -o FILE..., or one of the default name */
	char name[256];		/* the default name, once the target's pid is known */
	struct outfile stats_file;
	struct run_stats stats;
	uint64_t samples;
};

/* pybpfprof-COMM-PID-YYYYMMDD-HHMMSS.SUFFIX, or pybpfprof-all-... for -a. */
static void default_name(struct record_ctx *c, pid_t pid)
{
	char comm[32] = "python", who[64];
	time_t t = time(NULL);
	struct tm tm;

	proc__comm(pid, comm, sizeof(comm));
	for (char *p = comm; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
	if (pid)
		snprintf(who, sizeof(who), "%s-%d", comm, (int)pid);
	else
		snprintf(who, sizeof(who), "all");
	localtime_r(&t, &tm);
	snprintf(c->name, sizeof(c->name), "pybpfprof-%s-%04d%02d%02d-%02d%02d%02d%s", who,
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		 tm.tm_sec, c->outs.v[0].writer->suffix);
}

/*
 * Before the target is touched: the output and stats files are opened as temporaries
 * beside their final names, so a path that cannot be written fails the run before
 * it samples, and a run that fails later (no such process, a signal) leaves whatever
 * the final names held as it was. Without -o and without a pid yet (a command), the
 * name is given once the command runs.
 */
static int open_outputs(struct record_ctx *c)
{
	const struct record_opts *o = c->opts;
	int err;

	c->outs = o->outputs;
	/* Without -o there is one output, of no path yet. */
	if (!c->outs.v[0].path && (o->session.pid || o->session.system_wide)) {
		default_name(c, o->session.pid);
		c->outs.v[0].path = c->name;
	}
	err = outputs__open(&c->outs);
	if (err)
		return err;
	if (o->stats_file) {
		err = outfile__open(&c->stats_file, o->stats_file);
		if (err)
			return err;
	}
	return 0;
}

static int name_output(struct record_ctx *c)
{
	if (c->outs.v[0].path)
		return 0;
	default_name(c, session__pid(c->session));
	return outputs__name(&c->outs, c->name);
}

/* --stats-file, if asked for: written and put in place (0 or a negative errno). */
static int write_stats(struct record_ctx *c)
{
	if (!c->opts->stats_file)
		return 0;
	stats__write_json(c->stats_file.f, &c->stats);
	return outfile__commit(&c->stats_file, 0);
}

static int write_results(struct record_ctx *c)
{
	struct profile p;

	if (session__read_sources(c->session))
		pr_warn("out of memory reading the sources: the profile is written without "
			"some\n");
	session__profile(c->session, &p);
	if (outputs__write(&c->outs, &p))
		return EXIT_RUNTIME;
	if (write_stats(c))
		return EXIT_RUNTIME;
	return EXIT_OK;
}

/* --report, last, under the run's summary: on standard output unless the profile is
 * there. */
static int print_report(struct record_ctx *c)
{
	FILE *f = outputs__to_stdout(&c->outs) ? stderr : stdout;
	struct profile p;

	session__profile(c->session, &p);
	fputc('\n', f);
	if (out_report__write(f, &p, &c->opts->report_opts) || fflush(f)) {
		pr_warn("writing the report failed\n");
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

/* snprintf at @at of @buf, truncating quietly; returns the new end. */
__attribute__((format(printf, 4, 5)))
static size_t append(char *buf, size_t len, size_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (at >= len - 1)
		return at;
	va_start(ap, fmt);
	n = vsnprintf(buf + at, len - at, fmt, ap);
	va_end(ap);
	if (n < 0)
		return at;
	return (size_t)n >= len - at ? len - 1 : at + (size_t)n;
}

/*
 * -a that took no process for the whole run: an empty profile with status 0 would look
 * like an idle host, so nothing is written but the stats file, and the user hears why.
 */
static int report_none_taken(struct record_ctx *c)
{
	const struct proc_filter *f = c->opts->session.filter;
	uint32_t now = 0;
	char which[160] = "";
	size_t n = 0;

	for (size_t i = 0; f && i < f->npids; i++)
		n = append(which, sizeof(which), n, i ? ",%d" : " --pid-filter %d", (int)f->pids[i]);
	for (size_t i = 0; f && i < f->ncontainers; i++)
		n = append(which, sizeof(which), n, " --container %s", f->containers[i]);
	for (size_t i = 0; f && i < f->nexcludes; i++)
		n = append(which, sizeof(which), n, " --exclude %s", f->excludes[i]);
	if (host_pythons__count(&now))
		now = 0;
	if (which[0])
		pr_warn("no Python process passed the filters (%s) during the run (%u Python "
			"process%s run%s on the host now); nothing written\n", which + 1, now,
			now == 1 ? "" : "es", now == 1 ? "s" : "");
	else
		pr_warn("no Python process was taken during the run (%u Python process%s "
			"run%s on the host now); nothing written\n", now, now == 1 ? "" : "es",
			now == 1 ? "s" : "");
	if (write_stats(c))
		return EXIT_RUNTIME;
	return EXIT_NO_PROCESS;
}

/*
 * --subprocesses on a target that is no Python, and none of the processes it started
 * ran Python while watched: as with -a, nothing is written but the stats file.
 */
static int report_no_python(struct record_ctx *c, int timed_out)
{
	struct profile p;

	session__profile(c->session, &p);
	if (timed_out)
		pr_warn("no CPython code ran in %s or the processes it started in the run's "
			"first %g s (-d); nothing written\n", p.target, c->opts->duration_s);
	else
		pr_warn("neither %s nor any process it started ran CPython code; nothing "
			"written\n", p.target);
	if (write_stats(c))
		return EXIT_RUNTIME;
	return EXIT_NO_PROCESS;
}

static void report_end(struct record_ctx *c)
{
	const struct run_stats *s = &c->stats;

	stats__summary(stderr, s);
	if (!strcmp(s->mode, "bpf") && !s->tick_hz && s->rate_hz > perf_clock__max_rate())
		pr_warn("the kernel lowered kernel.perf_event_max_sample_rate to %u during the "
			"run (its perf interrupts took too long) and throttled the %u Hz clock to "
			"it: fewer samples than expected were taken\n", perf_clock__max_rate(),
			s->rate_hz);
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
	outputs__say_written(&c->outs);
	session__report_command(s->command_status);
}

int record__run(const struct record_opts *o)
{
	struct record_ctx *c = calloc(1, sizeof(*c));
	struct session_opts so = o->session;
	struct session_status st;
	struct status_line sl;
	int code, err = 0, timed_out = 0;

	if (!c) {
		pr_warn("out of memory\n");
		return EXIT_RUNTIME;
	}
	c->opts = o;
	c->stats_file.dirfd = -1;
	/* -d bounds the wait for a command's first Python code, counted from here;
	 * the profile then lasts -d from its start, so the time BPF takes to load
	 * under load is not taken off a short profile. */
	if (o->duration_s > 0) {
		so.deadline_ns = clock__mono_ns() + (uint64_t)(o->duration_s * 1e9);
		so.duration_s = o->duration_s;
	}
	/* First, so that a hang-up or Ctrl-C from here on ends the run through the
	 * loop, which writes what was sampled and leaves no temporary behind. */
	catch_signals();
	so.stop_signal = &stop_signal;
	if (open_outputs(c)) {
		code = EXIT_USAGE;
		goto out;
	}
	code = session__start(&so, &c->session);
	if (code)
		goto out;
	if (name_output(c)) {
		code = EXIT_USAGE;
		goto out;
	}
	/* Not with a command: it writes to the same terminal, and \r would eat its
	 * prompts. */
	status_line__init(&sl, o->session.cmd ? -1 : STDERR_FILENO);
	while (!stop_signal) {
		err = session__poll(c->session, 20);
		if (err)
			break;
		if (status_line__due(&sl)) {
			session__status(c->session, &st);
			status_line__show(&sl, &st);
		}
		if (o->duration_s > 0 && session__elapsed(c->session) >= o->duration_s) {
			timed_out = 1;
			break;
		}
	}
	status_line__end(&sl);
	session__stop(c->session);
	session__stats(c->session, &c->stats);
	session__status(c->session, &st);
	c->samples = st.samples;
	if (o->session.system_wide && !c->stats.processes) {
		code = report_none_taken(c);
		goto out;
	}
	if (o->session.subprocesses && !c->stats.processes) {
		code = report_no_python(c, timed_out);
	} else {
		code = write_results(c);
		report_end(c);
		if (!code && o->report)
			code = print_report(c);
	}
	if (session__command_running(c->session)) {
		/* The profile is safe on disk; now the command runs to its end, as
		 * without the profiler. */
		session__report_command(session__wait_command(c->session));
	}
out:
	session__free(c->session);
	/* After a commit these only close what is left; otherwise the final names keep
	 * what they held. */
	outputs__abort(&c->outs);
	outfile__abort(&c->stats_file);
	free(c);
	return code;
}
