/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Names for native PCs: which object, which function, how far into it, through
 * libdwfl's symbol tables (.symtab, else .dynsym; the .symtab of a separate debug file
 * found by build-id when the object is stripped), C++ names demangled
 * (native_demangle.h), and the source file and line where DWARF line info has them
 * (native_line.h); cached by (build-id, address in the object) so that every process
 * mapping the same library shares the answers.
 */
#ifndef PBP_NATIVE_SYM_H
#define PBP_NATIVE_SYM_H

#include <stddef.h>
#include <stdint.h>

#include "native/native_unwind.h"

struct native_symbol {
	const char *module;   /* the object's file name, without its directory */
	const char *function; /* NULL when no symbol covers the address; demangled */
	uint64_t offset;      /* into @function */
	uint64_t rel;	      /* the address as the object's ELF vaddr (addr - load bias):
				 * what addr2line -e OBJECT takes, and pprof's address */
	uint64_t func_rel;    /* where its function starts, as a vaddr: the symbol's start,
			       * or in a stripped object the start of the FDE covering it
			       * (native_ehhdr.h; a function or its cold part); 0 if unknown */
	const char *source;   /* the source file of the address, from DWARF; NULL without
			       * line info (or without @function) */
	int32_t line;	      /* its line in @function's code (native_line.h), if @source */
	int32_t func_line;    /* where @function is declared, if @source; 0 if unknown */
};

struct native_sym;

struct native_sym_stats {
	uint64_t hits, misses, evictions;
	uint64_t unknown;  /* addresses in no known object */
	uint64_t uncached; /* in objects without a build-id */
	uint64_t demangle_given_up; /* native_demangle's given_up */
	size_t bytes;
};

/* A cache of at most @max_bytes (entries and their strings). */
int native_sym__new(size_t max_bytes, struct native_sym **out);
void native_sym__free(struct native_sym *c);
/* Names are left as the objects have them, not demangled (the parsing worker, which
 * may not start the demangler's process: its caller demangles). */
void native_sym__keep_mangled(struct native_sym *c);

/*
 * Names @addr (a native_frame's lookup address) in the process @u unwinds. The strings
 * in @out stay valid until the next call. 0, -ENOENT if @addr is in no known object
 * (out->module is then "[unknown]"), -ENOMEM.
 */
int native_sym__lookup(struct native_sym *c, const struct native_unwind *u, uint64_t addr,
		       struct native_symbol *out);

/* "function+0xOFF (module)"; without a symbol, "module+0xFUNC_REL", so that the
 * samples of one function of a stripped object add up under one name ("module+0xREL"
 * when not even CFI says where it starts); cut to @len. Returns what snprintf
 * returns. */
int native_sym__format(const struct native_symbol *s, char *buf, size_t len);

void native_sym__stats(const struct native_sym *c, struct native_sym_stats *st);

#endif
