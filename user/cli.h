/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the subcommands' command lines share: the usage error, numbers, -v, -h and
 * getopt's complaints, and -a with the options that narrow it (record and top). Each
 * subcommand's own options and --help live in its *_cli.c, beside nothing else.
 */
#ifndef PBP_CLI_H
#define PBP_CLI_H

#include <getopt.h>

#include "proc_filter.h"

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

/* What an option handler returns when the option was taken and parsing goes on. */
#define CLI_GO_ON (-1)

/* Prints "pybpfprof: " @fmt (with @arg) and where @cmd's help is; returns EXIT_USAGE. */
int cli__usage_error(const char *cmd, const char *fmt, const char *arg);
/* A decimal in [@min, @max]; 0 or -EINVAL. */
int cli__parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *v);
/*
 * The options every subcommand has, -v and -h, and getopt's complaints about the
 * others (its '+:' / ':' optstring, opterr 0): CLI_GO_ON after -v, EXIT_OK once
 * @help is printed, EXIT_USAGE after a message naming the option.
 */
int cli__common_option(const char *cmd, const char *help, int opt, char **argv, int *verbose);
/* -v given @verbose times: warnings, then information, then debug. */
void cli__set_verbosity(int verbose);
/*
 * After the option loop of a subcommand that takes no operands: sets the verbosity;
 * 0, or EXIT_USAGE naming the first operand left in @argv.
 */
int cli__end_options(const char *cmd, int argc, char **argv, int verbose);

/* -a and what narrows it: the same options for record and top. */
enum { CLI_OPT_PID_FILTER = 512, CLI_OPT_CONTAINER, CLI_OPT_EXCLUDE, CLI_OPT_MAX_PROCESSES };
#define CLI_SELECT_LONGOPTS \
	{ "all", no_argument, NULL, 'a' }, \
	{ "pid-filter", required_argument, NULL, CLI_OPT_PID_FILTER }, \
	{ "container", required_argument, NULL, CLI_OPT_CONTAINER }, \
	{ "exclude", required_argument, NULL, CLI_OPT_EXCLUDE }, \
	{ "max-processes", required_argument, NULL, CLI_OPT_MAX_PROCESSES }

struct cli_select {
	int all;
	unsigned long max_processes;
	struct proc_filter filter;
};

/* 1 if @opt was one of CLI_SELECT_LONGOPTS (taken), 0 if not, or an exit status (> 1). */
int cli__select_option(const char *cmd, int opt, struct cli_select *sel);
/* The narrowing options mean nothing without -a: 0, or EXIT_USAGE after a message. */
int cli__select_check(const char *cmd, const struct cli_select *sel);

/* The subcommands: each parses its arguments (argv[0] is the subcommand, or "-a"
 * for record), runs, and returns the exit status. */
int record_cli__main(int argc, char **argv);
int top_cli__main(int argc, char **argv);
int dump_cli__main(int argc, char **argv);
int agent_cli__main(int argc, char **argv);

#endif
