// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof agent`: profiles every Python process on the host without end and, every
 * period, cuts one pprof profile per process, labels it and hands it to the exporter
 * (Pyroscope, files). Serves its own health on a Prometheus endpoint, reloads its
 * config on SIGHUP, and on SIGTERM cuts the period short, flushes and exits.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_config.h"
#include "agent/agent_procs.h"
#include "profile/aggregate.h"
#include "base/clock.h"
#include "base/exitcodes.h"
#include "agent/export.h"
#include "base/log.h"
#include "agent/metrics_http.h"
#include "output/out_pprof.h"
#include "output/profile_file.h"
#include "session/proc_filter.h"
#include "session/session.h"

/* SIGTERM leaves 5 s before a supervisor kills: most of it for the last pushes. */
#define FLUSH_MS 3500
#define LABELS_MAX 32
/* How stale /metrics may be: Prometheus scrapes every 15 s or more. */
#define METRICS_PUBLISH_MS 1000
/* /healthz fails once the loop has not published for this long: a parse or a read
 * that holds it (a hostile target's files, say) stops profiling the node, and the
 * liveness probe restarts the agent rather than leave the node unprofiled unseen. */
#define METRICS_STALL_MS 30000

/* Set by the signal handlers, read by the loop: SIGINT or SIGTERM, and SIGHUP. */
static volatile sig_atomic_t stop_signal, reload_asked;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void on_hangup(int sig)
{
	(void)sig;
	reload_asked = 1;
}

struct agent_ctx {
	const struct agent_config *cli;	/* the command line, which wins over the file */
	const char *config_path;	/* NULL: none */
	struct agent_config cfg;	/* in force */
	struct profile_label *static_labels;	/* cfg.labels split at '=' */
	char **static_buf;
	size_t nstatic;
	struct proc_filter filter;
	struct session *session;
	struct export *exporter;
	struct metrics_http *metrics;
	struct sampler_maps maps;	/* counted once per period: a syscall per entry */
	uint64_t published_ns;		/* when /metrics was last published */
	struct agent_procs procs;
	int cut_due;		/* a PID was reused: cut before the period ends */
	char host[256];
	uint64_t period_ns, period_start_ns;
	uint64_t profiles_cut, cut_failures, reloads, reload_failures;
	int fatal;
};

/* ---- configuration ------------------------------------------------------------ */

/* The file (if any) under the command line, into @out (initialised here). */
static int load_config(const struct agent_ctx *c, struct agent_config *out)
{
	struct agent_config file;
	int err;

	err = agent_config__init(out);
	if (err)
		return err;
	err = agent_config__init(&file);
	if (!err && c->config_path)
		err = agent_config__load(&file, c->config_path);
	if (!err)
		err = agent_config__merge(out, &file, c->cli);
	if (!err)
		err = agent_config__check(out);
	if (!err)
		err = agent_config__secrets(out);
	agent_config__free(&file);
	if (err)
		agent_config__free(out);
	return err;
}

static void export_cfg_of(const struct agent_config *a, struct export_cfg *e)
{
	*e = (struct export_cfg){
		.app_name = a->app_name,
		.pyroscope_url = a->pyroscope_url,
		.pyroscope_token = a->pyroscope_token,
		.pyroscope_user = a->pyroscope_user,
		.pyroscope_password = a->pyroscope_password,
		.pyroscope_headers = (const char *const *)a->pyroscope_headers.v,
		.npyroscope_headers = a->pyroscope_headers.n,
		.output_dir = a->output_dir,
		.output_max_bytes = a->output_max_mb << 20,
		.queue_max_items = a->queue_max,
		.queue_max_bytes = a->queue_max_mb << 20,
	};
}

static void free_static_labels(struct agent_ctx *c)
{
	for (size_t i = 0; i < c->nstatic; i++)
		free(c->static_buf[i]);
	free(c->static_buf);
	free(c->static_labels);
	c->static_buf = NULL;
	c->static_labels = NULL;
	c->nstatic = 0;
}

/* "team=payments" -> { "team", "payments" }, copies owned by @c. */
static int split_labels(struct agent_ctx *c, const struct agent_config *a)
{
	size_t n = a->labels.n;

	c->static_labels = calloc(n ? n : 1, sizeof(*c->static_labels));
	c->static_buf = calloc(n ? n : 1, sizeof(*c->static_buf));
	if (!c->static_labels || !c->static_buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char *kv = strdup(a->labels.v[i]), *eq;

		if (!kv)
			return -ENOMEM;
		c->static_buf[c->nstatic] = kv;
		eq = strchr(kv, '=');
		if (!eq) {
			free(kv);
			continue;	/* the config parser allows none such */
		}
		*eq = '\0';
		c->static_labels[c->nstatic++] = (struct profile_label){ kv, eq + 1 };
	}
	return 0;
}

static int filter_of(const struct agent_config *a, struct proc_filter *f)
{
	int err = 0;

	for (size_t i = 0; !err && i < a->excludes.n; i++)
		err = proc_filter__add_exclude(f, a->excludes.v[i]);
	for (size_t i = 0; !err && i < a->containers.n; i++)
		err = proc_filter__add_container(f, a->containers.v[i]);
	return err;
}

/* Puts @a in force: labels, filter, period and host name. */
static int apply_config(struct agent_ctx *c, struct agent_config *a)
{
	struct proc_filter filter = { 0 };
	int err;

	err = filter_of(a, &filter);
	if (err) {
		proc_filter__free(&filter);
		return err;
	}
	free_static_labels(c);
	err = split_labels(c, a);
	if (err) {
		proc_filter__free(&filter);
		return err;
	}
	/* The session reads the filter through a pointer: change it in place. */
	proc_filter__free(&c->filter);
	c->filter = filter;
	agent_config__free(&c->cfg);
	c->cfg = *a;
	memset(a, 0, sizeof(*a));
	c->period_ns = (uint64_t)c->cfg.period_ms * 1000000ull;
	if (c->cfg.host_name)
		snprintf(c->host, sizeof(c->host), "%s", c->cfg.host_name);
	else if (gethostname(c->host, sizeof(c->host) - 1))
		snprintf(c->host, sizeof(c->host), "unknown");
	return 0;
}

static void reload(struct agent_ctx *c)
{
	struct export_cfg ec;
	struct agent_config next;
	int err;

	pr_warn("SIGHUP: reloading %s\n", c->config_path ? c->config_path : "(no config file)");
	err = load_config(c, &next);
	if (err) {
		c->reload_failures++;
		pr_warn("reload failed, the old config stays: %s\n", strerror(-err));
		return;
	}
	if (strcmp(next.metrics_addr, c->cfg.metrics_addr)) {
		pr_warn("metrics-addr: %s stays until a restart\n", c->cfg.metrics_addr);
		/* What is in force is what the socket listens on. */
		free(next.metrics_addr);
		next.metrics_addr = strdup(c->cfg.metrics_addr);
		if (!next.metrics_addr) {
			c->reload_failures++;
			agent_config__free(&next);
			pr_warn("reload failed, the old config stays: %s\n", strerror(ENOMEM));
			return;
		}
	}
	export_cfg_of(&next, &ec);
	err = export__reconfigure(c->exporter, &ec);
	if (err) {
		c->reload_failures++;
		agent_config__free(&next);
		pr_warn("reload failed, the old config stays: %s\n", strerror(-err));
		return;
	}
	if (next.rate_hz != c->cfg.rate_hz)
		pr_warn("rate: %u Hz stays until a restart (the BPF sampler runs at a fixed "
			"period)\n", c->cfg.rate_hz);
	if (next.mode != c->cfg.mode || next.min_block_us != c->cfg.min_block_us)
		pr_warn("mode: %s stays until a restart (it chooses the BPF programs)\n",
			session__mode_name(c->cfg.mode));
	if (next.clock != c->cfg.clock)
		pr_warn("clock: stays until a restart (it chooses what runs the BPF program)\n");
	if (next.async_tasks != c->cfg.async_tasks)
		pr_warn("async: %s stays until a restart\n", c->cfg.async_tasks ? "on" : "off");
	if (next.native != c->cfg.native || next.native_stack != c->cfg.native_stack ||
	    next.native_unwind != c->cfg.native_unwind)
		pr_warn("native: %s, %u bytes, stays until a restart\n",
			c->cfg.native == AGENT_NATIVE_ALL ? "all" : c->cfg.native ? "on" : "off",
			c->cfg.native_stack);
	next.rate_hz = c->cfg.rate_hz;
	next.mode = c->cfg.mode;
	next.min_block_us = c->cfg.min_block_us;
	next.async_tasks = c->cfg.async_tasks;
	next.native = c->cfg.native;
	next.native_stack = c->cfg.native_stack;
	next.native_unwind = c->cfg.native_unwind;
	next.clock = c->cfg.clock;
	err = apply_config(c, &next);
	agent_config__free(&next);
	if (err) {
		c->reload_failures++;
		pr_warn("reload failed: %s\n", strerror(-err));
		return;
	}
	c->reloads++;
	pr_warn("reloaded: period %u ms, %zu static labels\n", c->cfg.period_ms, c->nstatic);
}

/* ---- processes and periods ----------------------------------------------------- */

static void on_process(void *ctx, const struct session_process *p, int gone)
{
	struct agent_ctx *c = ctx;

	if (gone) {
		agent_procs__gone(&c->procs, p->pid);
		return;
	}
	switch (agent_procs__seen(&c->procs, p->pid, p->start, p->cmd, p->python_version)) {
	case 0:
		break;
	case 1:		/* a reused PID: the period is cut before its samples come */
		c->cut_due = 1;
		break;
	default:
		c->fatal = -ENOMEM;
	}
}

struct stack_ref {
	uint32_t pid;
	uint32_t index;
};

static int by_pid(const void *a, const void *b)
{
	const struct stack_ref *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* One process's stacks, without the root frame that names it (the labels do). */
static int copy_stacks(const struct aggregate *from, const struct stack_ref *refs, size_t n,
		       struct aggregate *to)
{
	uint32_t index;
	int err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		const struct agg_stack *st = aggregate__stack(from, refs[i].index);
		uint32_t skip = st->depth > 1 && st->frames[0].kind == AGG_PROCESS;

		err = aggregate__add(to, st->pid, st->tid, st->frames + skip, st->depth - skip,
				     st->count, &index);
	}
	return err;
}

/* @p in memory by @write: 0 with *@buf (free()) and *@len, or a negative errno. */
static int encode(const struct profile *p, int (*write)(FILE *f, const struct profile *p),
		  char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	int err;

	if (!f)
		return -ENOMEM;
	err = write(f, p);
	if (fclose(f) && !err)
		err = -ENOMEM;
	return err;
}

static int export_one(struct agent_ctx *c, const struct profile *all,
		      const struct stack_ref *refs, size_t n)
{
	struct profile_label labels[LABELS_MAX];
	const struct agent_proc *proc = agent_procs__find(&c->procs, refs[0].pid);
	struct aggregate *agg = aggregate__new();
	struct profile one = *all;
	char *buf = NULL, *file_buf = NULL, name[192];
	size_t len = 0, file_len = 0, nl;
	int pbp = c->cfg.output_pbp && c->cfg.output_dir, err;

	if (!agg)
		return -ENOMEM;
	err = copy_stacks(all->agg, refs, n, agg);
	if (!err)	/* the objects of its native frames (--native), for pprof's mappings */
		err = aggregate__copy_natives(agg, all->agg, refs[0].pid);
	if (err)
		goto out;
	nl = c->nstatic < LABELS_MAX ? c->nstatic : LABELS_MAX;
	memcpy(labels, c->static_labels, nl * sizeof(*labels));
	if (proc)
		nl += agent_procs__labels(proc, c->host, labels + nl, LABELS_MAX - nl);
	snprintf(name, sizeof(name), "pid %u (%s)", refs[0].pid, proc ? proc->cmd : "?");
	one.agg = agg;
	one.target = name;
	one.timeline = NULL;
	one.ntimeline = 0;
	one.labels = labels;
	one.nlabels = nl;
	/* Pyroscope takes pprof; the files are profile files with output-format = pbp,
	 * which carry only this process's strings and threads (profile_file.c). */
	err = !pbp || c->cfg.pyroscope_url ? encode(&one, out_pprof__write, &buf, &len) : 0;
	if (!err && pbp)
		err = encode(&one, profile_file__write, &file_buf, &file_len);
	if (!err)
		err = export__submit(c->exporter, &(struct export_profile){
			.data = buf,
			.len = len,
			.file_data = file_buf,
			.file_len = file_len,
			.labels = labels,
			.nlabels = nl,
			.start_unix_ns = all->start_unix_ns,
			.end_unix_ns = all->start_unix_ns + (int64_t)all->duration_ns,
			.rate_hz = all->rate_hz,
			.pid = refs[0].pid,
		});
out:
	free(buf);
	free(file_buf);
	aggregate__free(agg);
	return err;
}

/* Ends the period: a profile per process that was sampled, then a fresh one. */
static int cut(struct agent_ctx *c)
{
	struct stack_ref *refs = NULL;
	struct profile p;
	size_t n;
	int err;

	/* A thread blocked through the period counts in it. */
	err = session__close_waits(c->session);
	if (err)
		return err;
	session__profile(c->session, &p);
	n = aggregate__count(p.agg);
	if (n) {
		refs = malloc(n * sizeof(*refs));
		if (!refs)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		refs[i] = (struct stack_ref){ aggregate__stack(p.agg, i)->pid, (uint32_t)i };
	if (n)	/* qsort's array may not be NULL, even when empty */
		qsort(refs, n, sizeof(*refs), by_pid);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && refs[j].pid == refs[i].pid; j++)
			;
		err = export_one(c, &p, refs + i, j - i);
		if (err == -ENOMEM)
			break;
		if (err) {
			c->cut_failures++;
			pr_warn("profile of pid %u: %s\n", refs[i].pid, strerror(-err));
			err = 0;
			continue;
		}
		c->profiles_cut++;
	}
	free(refs);
	agent_procs__forget_gone(&c->procs);
	session__map_entries(c->session, &c->maps);
	c->cut_due = 0;
	c->period_start_ns = clock__mono_ns();
	return err ? err : session__reset_profile(c->session);
}

/* ---- health ---------------------------------------------------------------------- */

static uint64_t rss_bytes(void)
{
	unsigned long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%lu %lu", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void print_metrics(FILE *f, const struct agent_ctx *c, const struct session_status *st,
			  const struct run_stats *rs)
{
	const struct sampler_maps *maps = &c->maps;
	const struct metric before[] = {
		{ "pybpfprof_samples_total", "counter",
		  "Stacks sampled and aggregated", st->samples },
		{ "pybpfprof_samples_incomplete_total", "counter",
		  "Stacks that could not be decoded to their first frame", st->incomplete },
		{ "pybpfprof_decode_errors_total", "counter",
		  "Records that could not be decoded at all",
		  rs->samples_delivered > rs->decode.samples ?
		  rs->samples_delivered - rs->decode.samples : 0 },
		{ "pybpfprof_drops_total", "counter",
		  "Samples lost before decoding (ring buffer full, process gone)", st->drops },
		{ "pybpfprof_process_event_drops_total", "counter",
		  "Process start/exit events lost", rs->bpf[PBP_C_EVENT_DROPS] },
		{ "pybpfprof_processes", "gauge",
		  "Python processes being profiled", st->processes },
		{ "pybpfprof_processes_seen_total", "counter",
		  "Python processes profiled since the start", st->processes_seen },
		{ "pybpfprof_processes_skipped_total", "counter",
		  "Python processes left out because max-processes was reached",
		  st->processes_skipped },
		{ "pybpfprof_threads", "gauge",
		  "Threads sampled in the current period", st->threads },
	};
	/* After pybpfprof_bpf_map_entries, which has a line per map and so no row. */
	const struct metric after[] = {
		{ "pybpfprof_profiles_cut_total", "counter",
		  "Per-process profiles made at period ends", c->profiles_cut },
		{ "pybpfprof_profile_failures_total", "counter",
		  "Per-process profiles that could not be made", c->cut_failures },
		{ "pybpfprof_config_reloads_total", "counter",
		  "Config reloads (SIGHUP) that took effect", c->reloads },
		{ "pybpfprof_config_reload_failures_total", "counter",
		  "Config reloads refused (the old config stayed)", c->reload_failures },
		{ "pybpfprof_resident_memory_bytes", "gauge",
		  "Resident memory of the agent", rss_bytes() },
		{ "pybpfprof_code_cache_hits_total", "counter",
		  "Code objects found in the code caches", rs->codes.hits },
		{ "pybpfprof_code_cache_misses_total", "counter",
		  "Code objects looked for in the code caches and read", rs->codes.misses },
		{ "pybpfprof_code_cache_evictions_total", "counter",
		  "Code cache entries dropped to stay within the byte budgets",
		  rs->codes.evictions },
		{ "pybpfprof_code_cache_bytes", "gauge",
		  "Bytes the code caches hold, line tables included", rs->code_cache_bytes },
		{ "pybpfprof_frame_cache_bytes", "gauge",
		  "Bytes the frame caches hold", rs->frame_cache_bytes },
		{ "pybpfprof_strings", "gauge",
		  "Strings interned (function, file, process and thread names)", rs->strings },
		{ "pybpfprof_string_bytes", "gauge",
		  "Bytes the string table holds", rs->string_bytes },
	};

	metrics_http__metrics(f, before, sizeof(before) / sizeof(before[0]));
	fprintf(f, "# HELP pybpfprof_bpf_map_entries Entries in the BPF maps at the last period end\n"
		"# TYPE pybpfprof_bpf_map_entries gauge\n"
		"pybpfprof_bpf_map_entries{map=\"targets\"} %u\n"
		"pybpfprof_bpf_map_entries{map=\"threads\"} %u\n"
		"pybpfprof_bpf_map_entries{map=\"fcache\"} %u\n",
		maps->targets, maps->threads, maps->fcache);
	metrics_http__metrics(f, after, sizeof(after) / sizeof(after[0]));
}

static int render(void *ctx, FILE *f)
{
	struct agent_ctx *c = ctx;
	struct session_status st;
	struct export_metrics em;
	struct run_stats rs;

	session__status(c->session, &st);
	session__stats(c->session, &rs);
	export__metrics(c->exporter, &em);
	print_metrics(f, c, &st, &rs);
	export__print_metrics(&em, f);
	return 0;
}

/* Renders here, on the sampling thread, which owns what is rendered; the server thread
 * only copies the text. */
static void publish(struct agent_ctx *c)
{
	int err = metrics_http__publish(c->metrics, render, c);

	if (err)
		pr_debug("metrics: %s\n", strerror(-err));
	c->published_ns = clock__mono_ns();
}

/* ---- the loop -------------------------------------------------------------------- */

static int start(struct agent_ctx *c)
{
	struct export_cfg ec;
	struct session_opts so;
	struct agent_config a;
	int err;

	err = load_config(c, &a);
	if (err) {
		if (err != -EINVAL)
			pr_warn("reading the config: %s\n", strerror(-err));
		return err == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	if (!a.pyroscope_url && !a.output_dir) {
		agent_config__free(&a);
		pr_warn("nowhere to send profiles: give --pyroscope-url or --output-dir (or set "
			"them in --config)\n");
		return EXIT_USAGE;
	}
	if (a.output_pbp && !a.output_dir) {
		agent_config__free(&a);
		pr_warn("output-format pbp is the format of --output-dir's files, and there is "
			"no --output-dir (Pyroscope takes pprof)\n");
		return EXIT_USAGE;
	}
	err = apply_config(c, &a);
	agent_config__free(&a);
	if (err) {
		pr_warn("applying the config: %s\n", strerror(-err));
		return EXIT_RUNTIME;
	}
	export_cfg_of(&c->cfg, &ec);
	err = export__new(&ec, &c->exporter);
	if (err) {
		/* A sink that cannot be set up has said why, naming its URL or directory:
		 * one line. What is left is the system's. */
		if (err == -ENOMEM || err == -EAGAIN)
			pr_warn("cannot export profiles: %s\n", strerror(-err));
		return EXIT_USAGE;
	}
	err = metrics_http__new(c->cfg.metrics_addr, &c->metrics);
	if (err) {
		pr_warn("cannot serve metrics on %s: %s\n", c->cfg.metrics_addr, strerror(-err));
		return EXIT_RUNTIME;
	}
	so = (struct session_opts){
		.rate_hz = c->cfg.rate_hz,
		.mode = c->cfg.mode,
		.min_block_us = c->cfg.min_block_us,
		.async_tasks = c->cfg.async_tasks,
		.native = !!c->cfg.native,
		.native_all = c->cfg.native == AGENT_NATIVE_ALL,
		/* The default size is the session's own choice: a stack copy's, or the
		 * smaller one beside a frame-pointer walk (native-unwind auto). */
		.native_stack = c->cfg.native_stack == PBP_NATIVE_STACK_DEFAULT ? 0 :
				c->cfg.native_stack,
		.native_unwind = c->cfg.native_unwind,
		.clock = c->cfg.clock,
		.stack_cap = PBP_STACK_DEFAULT,
		.ringbuf_mb = 16,
		.system_wide = 1,
		.filter = &c->filter,
		.on_process = on_process,
		.on_process_ctx = c,
	};
	err = session__start(&so, &c->session);
	if (err)
		return err;
	c->period_start_ns = clock__mono_ns();
	session__map_entries(c->session, &c->maps);
	publish(c);
	metrics_http__set_stall(c->metrics, METRICS_STALL_MS);
	pr_warn("agent running: a profile per process every %u ms, metrics on http://%s/metrics\n",
		c->cfg.period_ms, c->cfg.metrics_addr);
	return 0;
}

static int run(struct agent_ctx *c)
{
	int err;

	while (!stop_signal) {
		err = session__poll(c->session, 20);
		if (err < 0)
			return err;
		if (c->fatal)
			return c->fatal;
		if (reload_asked) {
			reload_asked = 0;
			reload(c);
			publish(c);
		}
		if (c->cut_due || clock__mono_ns() - c->period_start_ns >= c->period_ns) {
			err = cut(c);
			if (err)
				return err;
			publish(c);
		}
		if (clock__mono_ns() - c->published_ns >= METRICS_PUBLISH_MS * 1000000ull)
			publish(c);
	}
	return 0;
}

int agent__run(const struct agent_config *cli, const char *config_path)
{
	struct sigaction stop = { .sa_handler = on_stop_signal };
	struct sigaction sa = { .sa_handler = on_hangup };
	struct agent_ctx *c = calloc(1, sizeof(*c));
	int code, err;

	if (!c) {
		pr_warn("out of memory\n");
		return EXIT_RUNTIME;
	}
	c->cli = cli;
	c->config_path = config_path;
	agent_config__init(&c->cfg);
	/* No SA_RESTART: a poll must return so the loop sees the flag. */
	sigemptyset(&stop.sa_mask);
	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGTERM, &stop, NULL);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	code = start(c);
	if (code)
		goto out;
	err = run(c);
	session__stop(c->session);
	/* Whatever the reason, the period so far is not lost. */
	if (cut(c) == 0 && export__flush(c->exporter, FLUSH_MS))
		pr_warn("could not send every profile before exiting\n");
	code = EXIT_OK;
	if (err) {
		pr_warn("agent stopped: %s\n", strerror(-err));
		code = EXIT_RUNTIME;
	}
	pr_warn("agent stopped%s: %llu profiles made\n",
		stop_signal ? " on a signal" : "", (unsigned long long)c->profiles_cut);
out:
	session__free(c->session);
	export__free(c->exporter);
	metrics_http__free(c->metrics);
	agent_procs__free(&c->procs);
	free_static_labels(c);
	proc_filter__free(&c->filter);
	agent_config__free(&c->cfg);
	free(c);
	return code;
}
