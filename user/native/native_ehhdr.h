/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where the function around an address starts, from an object's .eh_frame_hdr: the
 * sorted table of FDE start addresses the linker writes for unwinders. In a stripped
 * object it is the one thing left that says where functions begin, so that a
 * stripped library's samples can be named per function rather than per PC. libdw has
 * no public call for it (dwarf_frame_info() gives the range of a CFI row, not of its
 * FDE).
 */
#ifndef PBP_NATIVE_EHHDR_H
#define PBP_NATIVE_EHHDR_H

#include <stddef.h>
#include <stdint.h>

/*
 * In the .eh_frame_hdr bytes @hdr (@len of them, from the object's file; the section
 * sits at vaddr @hdr_vaddr), finds the greatest FDE start at or below @vaddr: 0 with
 * *@start, -ENOENT if none is, -EINVAL if the header is malformed or uses an encoding
 * linkers do not write (the table must be DW_EH_PE_datarel|sdata4, as GNU ld, gold,
 * lld and mold all write it). Never reads past @len. Whether that FDE covers @vaddr is
 * the caller's to check (libdw's dwarf_cfi_addrframe() finds one that does).
 */
int native_ehhdr__find(const uint8_t *hdr, size_t len, uint64_t hdr_vaddr, uint64_t vaddr,
		       uint64_t *start);

#endif
