// SPDX-License-Identifier: GPL-2.0-only
/* The diagnostics sink; see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

/* The verbosity chosen on the command line: the only process-wide setting, kept here
 * so that deep helpers need not carry it. */
static struct {
	enum log_level level;
	log_hook_fn hook;
	void *hook_ctx;
} log_ctx = { LOG_WARN };

void log__set_level(enum log_level level)
{
	log_ctx.level = level;
}

void log__set_hook(log_hook_fn fn, void *ctx)
{
	log_ctx.hook = fn;
	log_ctx.hook_ctx = ctx;
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
	if (log_ctx.hook) {
		char *msg = NULL;
		int n;

		va_start(ap, fmt);
		n = vasprintf(&msg, fmt, ap);
		va_end(ap);
		/* Out of memory: the message still goes out, unannounced to the hook. */
		if (n >= 0 && log_ctx.hook(log_ctx.hook_ctx, msg)) {
			free(msg);
			return;
		}
		if (n >= 0) {
			fprintf(stderr, "pybpfprof: %s", msg);
			free(msg);
			return;
		}
	}
	fputs("pybpfprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
