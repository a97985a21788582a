/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Turning the calling process into one that can do little harm if what it parses
 * takes it over: an unprivileged uid (where it may change uid) with no capabilities
 * and no way to gain any, limits on memory, CPU, files and processes, and a seccomp
 * allow-list of system calls (anything else kills it). See sandbox.c.
 */
#ifndef PBP_SANDBOX_H
#define PBP_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Each limit is what is asked, or the hard limit there is if it is lower. */
struct sandbox_limits {
	uid_t uid;
	gid_t gid;
	uint64_t mem_bytes;   /* address space it may map beyond what it has (RLIMIT_AS) */
	uint32_t cpu_s;	      /* CPU seconds in all (RLIMIT_CPU: SIGXCPU, then SIGKILL) */
	uint32_t files;	      /* open descriptors (RLIMIT_NOFILE) */
	uint64_t file_bytes;  /* size of a file it writes (RLIMIT_FSIZE: its memfds) */
	pid_t parent;	      /* killed when this process ends (0: not) */
	const int *syscalls;  /* the allow-list, x86-64 numbers */
	size_t nsyscalls;
	const int *refused;   /* calls that fail with EACCES instead of killing it: those
			       * a library it runs may try on its own (libdw opens a
			       * DWARF supplement file by name) */
	size_t nrefused;
};

/* Applies @l to the calling process, for good. 0, or the negative errno of the step
 * that failed (the caller must then exit: part of it may be in force). */
int sandbox__enter(const struct sandbox_limits *l);

#endif
