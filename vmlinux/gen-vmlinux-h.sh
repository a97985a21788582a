#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Writes vmlinux.h for CO-RE from the running kernel's BTF. Without BTF the BPF object
# could not be relocated to this kernel at load time, so say so instead of building.
set -eu
out=$1
btf=${PBP_VMLINUX_BTF:-/sys/kernel/btf/vmlinux}
if [ ! -r "$btf" ]; then
	echo "error: $btf is missing: this kernel was built without BTF (CONFIG_DEBUG_INFO_BTF=y is required)" >&2
	exit 1
fi
command -v bpftool >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
