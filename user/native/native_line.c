// SPDX-License-Identifier: GPL-2.0-only
/*
 * DWARF line info for native PCs; see native_line.h. libdwfl finds the DWARF (the
 * object's own, or its debug file by build-id or .gnu_debuglink in the target's root,
 * through native_unwind's find_debuginfo) and keeps it per module; this asks libdw for
 * the line table row and the scopes at the PC. Callers cache the answers
 * (native_sym.c): dwarf_getscopes walks the CU's DIEs, which is fine once per PC.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>

#include "native/native_line.h"

/* An attribute of @die as an unsigned number, or -1. */
static int64_t udata_of(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	if (!dwarf_attr(die, name, &attr) || dwarf_formudata(&attr, &v) || v > INT32_MAX)
		return -1;
	return (int64_t)v;
}

/*
 * The DIEs that hold @pc's code, innermost first, are lexical blocks, the inlined
 * subroutines the code was inlined through, then the subprogram it belongs to. The
 * outermost inlined subroutine's call site is the line of that subprogram the PC stands
 * for; the subprogram says where it is declared. dwarf_getscopes() alone will not do:
 * past an inlined subroutine it goes on with the scopes of the inlined function's
 * abstract definition, where its source declares it; dwarf_getscopes_die() of its
 * innermost scope gives the DIEs that hold it in the tree, as eu-addr2line -i does.
 */
static void apply_scopes(Dwarf_Die *cu, Dwarf_Addr pc, struct native_line *out)
{
	Dwarf_Die *scopes = NULL, *chain = NULL, *call = NULL;
	Dwarf_Files *files;
	size_t nfiles;
	int n, decl;

	if (dwarf_getscopes(cu, pc, &scopes) <= 0)
		goto cleanup;
	n = dwarf_getscopes_die(&scopes[0], &chain);
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&chain[i]);

		if (tag == DW_TAG_inlined_subroutine) {
			call = &chain[i];
		} else if (tag == DW_TAG_subprogram) {
			if (!dwarf_decl_line(&chain[i], &decl) && decl > 0)
				out->func_line = decl;
			break;
		}
	}
	if (call) {
		int64_t file = udata_of(call, DW_AT_call_file);
		int64_t line = udata_of(call, DW_AT_call_line);
		const char *name = NULL;

		if (file >= 0 && line > 0 && !dwarf_getsrcfiles(cu, &files, &nfiles) &&
		    (size_t)file < nfiles)
			name = dwarf_filesrc(files, (size_t)file, NULL, NULL);
		/* Without its call site the inlined line stays: better than none. */
		if (name && *name) {
			out->file = name;
			out->line = (int32_t)line;
		}
	}
cleanup:
	free(chain);
	free(scopes);
}

int native_line__find(Dwfl_Module *mod, uint64_t addr, struct native_line *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu;
	Dwarf_Line *row;
	const char *file;
	int line;

	*out = (struct native_line){ 0 };
	cu = dwfl_module_addrdie(mod, addr, &bias);
	if (!cu)
		return -ENOENT;
	row = dwarf_getsrc_die(cu, addr - bias);
	if (!row || dwarf_lineno(row, &line) || line <= 0)
		return -ENOENT;
	file = dwarf_linesrc(row, NULL, NULL);
	if (!file || !*file)
		return -ENOENT;
	out->file = file;
	out->line = line;
	apply_scopes(cu, addr - bias, out);
	return 0;
}
