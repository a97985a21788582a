/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A core's executable file mappings as native_maps, for `dump --core --native`: the
 * NT_FILE note says which file is mapped where, the PT_LOAD segments' flags which of
 * those ranges were executable, and mem_core__file_path() where each file is on this
 * host (under --sysroot, or --exe), checked against the copy of its first page the
 * core keeps.
 */
#ifndef PBP_NATIVE_CORE_H
#define PBP_NATIVE_CORE_H

#include "mem/mem_core.h"
#include "native/native_maps.h"

/* 0 and *@out; -ENOENT if the core maps no executable file; -ENOMEM. A file that
 * cannot be found is kept with its open_err set, so that its frames end walks. */
int native_core__maps(struct mem_core *c, struct native_maps **out);

#endif
