/* SPDX-License-Identifier: GPL-2.0-only */
/* `pybpfprof agent`: continuous system-wide profiling, a profile per process per period. */
#ifndef PBP_AGENT_H
#define PBP_AGENT_H

struct agent_config;

/*
 * Runs until SIGTERM or SIGINT, then flushes what it holds. @cli: the settings the
 * command line gave (they win over @config_path's, which is read again on SIGHUP).
 * Returns the exit status (exitcodes.h).
 */
int agent__run(const struct agent_config *cli, const char *config_path);

#endif
