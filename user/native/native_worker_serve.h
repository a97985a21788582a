/* SPDX-License-Identifier: GPL-2.0-only */
/* The parsing worker's main loop (native_worker_serve.c). */
#ifndef PBP_NATIVE_WORKER_SERVE_H
#define PBP_NATIVE_WORKER_SERVE_H

/* Runs the worker; its exit status. main() calls it for argv[1] NATIVE_WORKER_ARG. */
int native_worker_serve__main(void);

#endif
