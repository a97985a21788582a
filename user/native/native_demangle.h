/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * C++ names of native functions: "_ZN3pbp4spinEm" -> "pbp::spin(unsigned long)",
 * through libstdc++'s __cxa_demangle, loaded with dlopen the first time a mangled name
 * is met, and run in a child process of its own with a deadline and a memory limit
 * (native_demangle.c says why).
 */
#ifndef PBP_NATIVE_DEMANGLE_H
#define PBP_NATIVE_DEMANGLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/hashmap.h"

/* A name asked about, and what came of it: the demangled form, or NULL (kept mangled). */
struct native_demangled {
	char *name;
	char *out;
};

struct native_demangle {
	void *lib;	/* dlopen's handle, NULL until loaded or when missing */
	char *(*fn)(const char *mangled, char *buf, size_t *len, int *status);
	int tried;	/* loaded once: a missing library is not looked for again */
	pid_t child;	/* the process that demangles, 0 when none runs */
	int fd;		/* ... and our end of the socket to it */
	unsigned int spawns;	/* children started: a name that kills each is not retried */
	/* Names kept mangled though they may be C++: too long to send, past the
	 * deadline, too large an answer, the child out of memory or dead, or no child
	 * left to ask. Once per name asked about. */
	uint64_t given_up;
	/* Every name asked about, so that each costs the child at most once. */
	struct native_demangled *seen;
	size_t nseen, cap_seen;
	struct hashmap index;
};

/*
 * The demangled form of @name, a malloc'd string in *@out. 0; -ENOENT when @name is
 * not an Itanium C++ ABI name ("_Z..."), is too long to demangle safely, or no
 * demangler is there; -EINVAL when the demangler refuses it, or gives up on it (too
 * slow, too large, or it killed the child); -ENOMEM.
 */
int native_demangle__name(struct native_demangle *d, const char *name, char **out);
/*
 * *@function by its demangled form where it has one: *@function then points at
 * *@demangled, a malloc'd string for the caller to free (NULL otherwise). 0, or
 * -ENOMEM; a name that stays mangled is no error.
 */
int native_demangle__in_place(struct native_demangle *d, const char **function,
			      char **demangled);
void native_demangle__close(struct native_demangle *d);

#endif
