// SPDX-License-Identifier: GPL-2.0-only
/*
 * `pybpfprof agent`: its options, each also a key of the config file, and its --help;
 * agent.c runs it.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/agent_config.h"
#include "cmd/cli.h"
#include "base/exitcodes.h"

static const char agent_help[] =
	"Usage:\n"
	"  pybpfprof agent [--config FILE] [options]\n"
	"\n"
	"Profiles every CPython process on the host, as 'record -a' does, for as long as\n"
	"it runs. Every period it cuts one pprof profile per process that ran Python code\n"
	"and exports it, labelled host_name, pid, command, python_version and, from the\n"
	"process's cgroup, container_id, pod_uid and qos_class (Kubernetes); the labels\n"
	"are pprof sample labels too. For a DaemonSet or a systemd unit: see deploy/.\n"
	"\n"
	"Every option can also be a 'key = value' line of the config file, the key being\n"
	"the option's name without '--' (e.g. 'period = 30s'); the command line wins.\n"
	"\n"
	"Where profiles go (at least one):\n"
	"      --pyroscope-url URL        push to Pyroscope's /ingest (Grafana Pyroscope,\n"
	"                                 Grafana Cloud Profiles): http:// or https://\n"
	"      --app-name NAME            the application name there (default pybpfprof)\n"
	"      --pyroscope-token-file FILE  bearer token: FILE's one line, read again on\n"
	"                                 SIGHUP (or $PYBPFPROF_PYROSCOPE_TOKEN);\n"
	"      --pyroscope-user USER      or basic auth, with\n"
	"      --pyroscope-password-file FILE  (or $PYBPFPROF_PYROSCOPE_PASSWORD)\n"
	"      --pyroscope-token TOKEN, --pyroscope-password PASSWORD  work too, with a\n"
	"                                 warning: every user of the host can read a\n"
	"                                 command line. As config file keys they are\n"
	"                                 fine in a file only root can read (else a\n"
	"                                 warning). Control characters are refused.\n"
	"      --pyroscope-header 'NAME: VALUE'  an extra header, e.g. X-Scope-OrgID\n"
	"                                 (repeatable)\n"
	"      --output-dir DIR           write APP-PID-TIME.pb.gz files into DIR, made\n"
	"                                 if missing (parents too, mode 0750)\n"
	"      --output-max-mb N          keep our files in DIR under N MiB, deleting the\n"
	"                                 oldest (default 1024)\n"
	"      --output-format FORMAT     pprof (.pb.gz, the default) or pbp: profile files\n"
	"                                 (APP-PID-TIME.pbp) that 'pybpfprof report',\n"
	"                                 'convert' and 'diff' read, each with only its own\n"
	"                                 process's names; Pyroscope still gets pprof\n"
	"A push that fails is retried, backing off from 1 s to 60 s; profiles wait in a\n"
	"queue of at most --queue-max profiles (default 64) and --queue-max-mb MiB\n"
	"(default 256); when it is full the oldest is dropped and counted.\n"
	"\n"
	"Sampling and labels:\n"
	"      --period DURATION  how often to cut profiles: 10s (default), 1m, 500ms\n"
	"      --rate HZ          samples per second of each thread's CPU time (default\n"
	"                         100, at most 10000)\n"
	"      --mode MODE        cpu (default), wall or off-cpu: what each profile\n"
	"                         measures, as for 'pybpfprof record --help'; wall and\n"
	"                         off-cpu profiles carry the sample types cpu, off_cpu\n"
	"                         and wall (nanoseconds)\n"
	"      --min-block US     as for record (default " CLI_STR(SESSION_MIN_BLOCK_DEFAULT_US) ")\n"
	"      --async on|off     asyncio tasks in the stacks, as for record --async\n"
	"                         (default off; CPython 3.14+)\n"
	"      --native on|all|off  C frames too, as record --native (on) or\n"
	"                         --native-all (all); default off\n"
	"      --native-stack SIZE  bytes of C stack copied, as for record (default 16K)\n"
	"      --native-unwind HOW  auto (default), dwarf or fp: how C frames are found,\n"
	"                         as for record (fp: frame-pointer walks, for CPython\n"
	"                         3.15; auto picks them per process)\n"
	"      --clock HOW        timer (default) or tick: what times the samples, as\n"
	"                         for record (tick: the scheduler's tick, no interrupt\n"
	"                         of the agent's own; rates up to HZ; see its bias;\n"
	"                         not with mode off-cpu)\n"
	"      --label KEY=VALUE  a label for every profile, e.g. cluster=prod\n"
	"                         (repeatable)\n"
	"      --host-name NAME   the host_name label (default: the host name; in a\n"
	"                         DaemonSet, the node's name)\n"
	"      --exclude PATTERN  leave out processes whose command line matches\n"
	"      --container ID     only processes whose cgroup path holds ID\n"
	"\n"
	"Operation:\n"
	"      --config FILE      read settings from FILE, and again on SIGHUP\n"
	"      --metrics-addr HOST:PORT  serve GET /metrics (Prometheus text) and\n"
	"                         /healthz there (default 127.0.0.1:9464; ':PORT' for\n"
	"                         every address); /healthz answers 503 once sampling\n"
	"                         has been stuck for 30 s\n"
	"  -v, --verbose          more diagnostics (twice: debug)\n"
	"  -h, --help             this help\n"
	"\n"
	"Signals: SIGHUP reloads the config file (the rate, the clock, the mode, async,\n"
	"native and the metrics address need a restart); SIGTERM or Ctrl-C cuts the\n"
	"current period short, sends what is queued for up to 3.5 s and exits 0 within\n"
	"5 s.\n"
	"\n"
	"Exit status: 0 stopped by a signal; 1 unexpected failure; 2 bad command line or\n"
	"config, or an output directory that cannot be made; 6 missing privileges;\n"
	"7 the kernel lacks BTF or BPF support.\n"
	"\n"
	"Example:\n"
	"  sudo pybpfprof agent --pyroscope-url http://pyroscope:4040 --label env=prod\n";

static void secret_on_argv(const char *name, char *arg)
{
	fprintf(stderr, "pybpfprof: warning: --%s on the command line can be read by every "
		"user of this host; use --%s-file or $PYBPFPROF_%s\n", name, name,
		strcmp(name, "pyroscope-token") ? "PYROSCOPE_PASSWORD" : "PYROSCOPE_TOKEN");
	memset(arg, '*', strlen(arg));
}

static int agent_with(int argc, char **argv, struct agent_config *cli)
{
	enum { OPT_CONFIG = 1024 };
	struct option longopts[AK_COUNT + 4];
	const char *config = NULL;
	char why[160];
	int opt, idx, verbose = 0, n = 0, code;

	for (int k = 0; k < AK_COUNT; k++)
		longopts[n++] = (struct option){ agent_config__name(k), required_argument, NULL, 0 };
	longopts[n++] = (struct option){ "config", required_argument, NULL, OPT_CONFIG };
	longopts[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[n] = (struct option){ 0 };
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":vh", longopts, &idx)) != -1) {
		switch (opt) {
		case 0:
			if (agent_config__set(cli, longopts[idx].name, optarg, why, sizeof(why))) {
				fprintf(stderr, "pybpfprof: --%s (see 'pybpfprof agent --help')\n",
					why);
				return EXIT_USAGE;
			}
			if (idx == AK_PYROSCOPE_TOKEN || idx == AK_PYROSCOPE_PASSWORD)
				secret_on_argv(longopts[idx].name, optarg);
			break;
		case OPT_CONFIG:
			config = optarg;
			break;
		default:
			code = cli__common_option("agent", agent_help, opt, argv, &verbose);
			if (code != CLI_GO_ON)
				return code;
		}
	}
	code = cli__end_options("agent", argc, argv, verbose);
	if (code)
		return code;
	return agent__run(cli, config);
}

int agent_cli__main(int argc, char **argv)
{
	struct agent_config cli;
	int code;

	if (agent_config__init(&cli)) {
		fputs("pybpfprof: out of memory\n", stderr);
		return EXIT_RUNTIME;
	}
	code = agent_with(argc, argv, &cli);
	agent_config__free(&cli);
	return code;
}
