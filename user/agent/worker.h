/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helper threads (the exporter's sender, the metrics server). They start with every
 * signal blocked, so SIGHUP, SIGTERM and SIGINT always reach the main thread, whose
 * loop is the one that acts on them, and never interrupt a helper's system call.
 */
#ifndef PBP_WORKER_H
#define PBP_WORKER_H

#include <pthread.h>

/* pthread_create() with every signal blocked in the new thread; 0 or a negative errno. */
int worker__start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
