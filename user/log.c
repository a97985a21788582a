// SPDX-License-Identifier: GPL-2.0-only
/* The diagnostics sink; see log.h. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

/* The verbosity chosen on the command line: the only process-wide setting, kept here
 * so that deep helpers need not carry it. */
static struct {
	enum log_level level;
} log_ctx = { LOG_WARN };

void log__set_level(enum log_level level)
{
	log_ctx.level = level;
}

enum log_level log__level(void)
{
	return log_ctx.level;
}

void log__print(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_ctx.level)
		return;
	fputs("pybpfprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
