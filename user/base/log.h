/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One sink for diagnostics. Errors meant for the user are a single line starting with
 * "pybpfprof: "; -v raises the level so pr_info/pr_debug appear; libbpf's own
 * messages are routed here too.
 */
#ifndef PBP_LOG_H
#define PBP_LOG_H

enum log_level { LOG_WARN, LOG_INFO, LOG_DEBUG };

void log__set_level(enum log_level level);
enum log_level log__level(void);
void log__print(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A hook that sees each message (formatted, without the "pybpfprof: " prefix) before it
 * is printed. It returns 0 to have it printed, after making room for it (record's
 * status line erases itself), or 1 when it took the message (top holds messages while
 * its screen is up). NULL removes it.
 */
typedef int (*log_hook_fn)(void *ctx, const char *msg);
void log__set_hook(log_hook_fn fn, void *ctx);

#define pr_warn(...) log__print(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log__print(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log__print(LOG_DEBUG, __VA_ARGS__)

#endif
