/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The parsing worker: ELF files that targets map (and so control: a file can be
 * crafted to fault, loop or blow up a parser) are parsed by a separate process that
 * runs as nobody, with no capabilities, no_new_privs, a seccomp allow-list and limits
 * on memory, CPU and descriptors (native_worker_serve.c). The profiler opens each file
 * itself, as hostile_file.c says, and hands the worker only the descriptor. A request
 * that takes longer than NATIVE_WORKER_DEADLINE_MS, or that the worker dies on, costs
 * that file: the worker is killed, the next request starts a new one, and the file
 * (device, inode) is quarantined: never handed to a parser again in this run, its
 * frames shown in no object ("[unknown]").
 *
 * Today the worker reads build-ids and tells frame-pointer builds (native_maps.h,
 * native_fpcheck.h); the unwinder's and the symbol tables' parsing (libdwfl) still run
 * in the profiler, and read only files the worker has not quarantined.
 */
#ifndef PBP_NATIVE_WORKER_H
#define PBP_NATIVE_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "native_fpcheck.h"

/* A parse of one object takes milliseconds; a busy host may stretch that a hundred
 * times. */
#define NATIVE_WORKER_DEADLINE_MS 5000
/* Files quarantined at most; past it every new failure is still refused a second try
 * by the restart limit below. */
#define NATIVE_WORKER_QUARANTINE_MAX 1024
/* Failures in a row with no answer between them, after which no worker is started
 * again in this run (a worker that cannot confine itself, a host without uid 65534). */
#define NATIVE_WORKER_FAILURES_MAX 8

struct native_worker;

struct native_worker_stats {
	uint64_t requests;    /* answered */
	uint64_t starts;      /* workers started */
	uint64_t timeouts;    /* requests past the deadline (worker killed) */
	uint64_t deaths;      /* workers that died in a request */
	uint64_t quarantined; /* files quarantined */
	uint64_t refused;     /* requests about a quarantined file */
};

/* Starts the worker now, before the caller loads BPF or opens targets: it inherits
 * nothing but its socket. 0, or a negative errno (no worker could be started). */
int native_worker__new(struct native_worker **out);
void native_worker__free(struct native_worker *w);

/*
 * native_maps__read_build_id() of the object open at @fd (@what names it in a
 * warning), done by the worker: the build-id's length (0: none), -ENOEXEC if it is not
 * an ELF object; -EPERM if the file is quarantined, -ETIMEDOUT or -ECHILD if this
 * request got it quarantined, -ECHILD if no worker can run.
 */
int native_worker__build_id(struct native_worker *w, int fd, const char *what, uint8_t *id,
			    size_t cap);
/* native_fpcheck__file() of the object open at @fd, done by the worker; errors as
 * native_worker__build_id()'s. */
int native_worker__fpcheck(struct native_worker *w, int fd, const char *what,
			   struct native_fpcheck *out);

/* Whether the file open at @fd is quarantined. */
int native_worker__quarantined(const struct native_worker *w, int fd);

/* The worker's process id, 0 if none runs now. */
pid_t native_worker__pid(const struct native_worker *w);

void native_worker__stats(const struct native_worker *w, struct native_worker_stats *st);

#endif
