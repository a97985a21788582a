/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * C++ names of native functions: "_ZN3pbp4spinEm" -> "pbp::spin(unsigned long)",
 * through libstdc++'s __cxa_demangle, loaded with dlopen the first time a mangled name
 * is met (native_demangle.c says why).
 */
#ifndef PBP_NATIVE_DEMANGLE_H
#define PBP_NATIVE_DEMANGLE_H

#include <stddef.h>

struct native_demangle {
	void *lib;	/* dlopen's handle, NULL until loaded or when missing */
	char *(*fn)(const char *mangled, char *buf, size_t *len, int *status);
	int tried;	/* loaded once: a missing library is not looked for again */
};

/*
 * The demangled form of @name, a malloc'd string in *@out. 0; -ENOENT when @name is
 * not an Itanium C++ ABI name ("_Z..."), is too long to demangle safely, or no
 * demangler is there; -EINVAL when the demangler refuses it; -ENOMEM.
 */
int native_demangle__name(struct native_demangle *d, const char *name, char **out);
void native_demangle__close(struct native_demangle *d);

#endif
