// SPDX-License-Identifier: GPL-2.0-only
/* The diagnostics sink; see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"

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
	char *msg = NULL;
	va_list ap, aq;

	if (level > log_ctx.level)
		return;
	va_start(ap, fmt);
	if (log_ctx.hook) {
		va_copy(aq, ap);
		if (vasprintf(&msg, fmt, aq) < 0)
			msg = NULL;
		va_end(aq);
	}
	/* No hook, or out of memory: the message still goes out. */
	if (!msg) {
		fputs("pybpfprof: ", stderr);
		vfprintf(stderr, fmt, ap);
	} else if (!log_ctx.hook(log_ctx.hook_ctx, msg)) {
		fprintf(stderr, "pybpfprof: %s", msg);
	}
	va_end(ap);
	free(msg);
}
