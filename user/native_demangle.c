// SPDX-License-Identifier: GPL-2.0-only
/*
 * C++ demangling; see native_demangle.h.
 *
 * Why __cxa_demangle from libstdc++, and through dlopen: it is GCC's own demangler
 * (libiberty's cp-demangle.c, built into libstdc++), the one c++filt and gdb use, kept
 * up to date with the ABI by the compiler's authors; hand-written code would lag them.
 * libiberty-dev would give the same code as a static library, but as one more build
 * dependency for every host; linking -lstdc++ would load the C++ runtime into every run
 * for the few profiles that meet a C++ frame. libstdc++.so.6 is on every Debian system
 * (apt itself needs it), so loading it on the first mangled name costs nothing until
 * then, and a host without it still profiles, with mangled names.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "native_demangle.h"

/*
 * The demangler keeps two components per byte of the name on the stack (a VLA in
 * cp-demangle.c's d_demangle_callback, about 24 bytes each), and names come from
 * objects of other users: longer names stay mangled so that one cannot use up our
 * stack. 4 KiB of name is ~200 KiB of stack, well inside the 8 MiB of the main thread,
 * which names frames, and longer than the mangled names of even PyTorch's templates.
 */
#define DEMANGLE_MAX_NAME 4096

static void load(struct native_demangle *d)
{
	d->tried = 1;
	d->lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (!d->lib)
		return;
	/* POSIX's way to turn dlsym's object pointer into a function pointer. */
	*(void **)&d->fn = dlsym(d->lib, "__cxa_demangle");
	if (!d->fn) {
		dlclose(d->lib);
		d->lib = NULL;
	}
}

int native_demangle__name(struct native_demangle *d, const char *name, char **out)
{
	int status = 0;
	char *r;

	*out = NULL;
	if (strncmp(name, "_Z", 2) || strnlen(name, DEMANGLE_MAX_NAME) == DEMANGLE_MAX_NAME)
		return -ENOENT;
	if (!d->tried)
		load(d);
	if (!d->fn)
		return -ENOENT;
	r = d->fn(name, NULL, NULL, &status);
	if (status == -1)
		return -ENOMEM;
	if (status || !r) {
		free(r);
		return -EINVAL;
	}
	*out = r;
	return 0;
}

void native_demangle__close(struct native_demangle *d)
{
	if (d->lib)
		dlclose(d->lib);
	*d = (struct native_demangle){ 0 };
}
