// SPDX-License-Identifier: GPL-2.0-only
/*
 * Feature probes run before the sampling program is loaded, so that an older kernel
 * gets the one feature it lacks and the release that brought it, rather than a
 * verifier log. The list is every program type, map type and helper that
 * bpf/sample.bpf.c and its headers use beyond those of Linux 5.8; keep it in step
 * with them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sample/bpf_features.h"

struct feature {
	enum { PROG, MAP, HELPER } kind;
	int type;		/* program or map type; for a helper, its program type */
	int helper;
	const char *what;
	const char *since;
};

static const struct feature features[] = {
	{ PROG, BPF_PROG_TYPE_PERF_EVENT, 0, "perf-event BPF programs", "4.9" },
	{ PROG, BPF_PROG_TYPE_RAW_TRACEPOINT, 0, "raw tracepoint BPF programs", "4.17" },
	{ MAP, BPF_MAP_TYPE_RINGBUF, 0, "BPF ring buffers", "5.8" },
	{ MAP, BPF_MAP_TYPE_LRU_HASH, 0, "LRU hash maps", "4.10" },
	{ HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_current_task_btf,
	  "the bpf_get_current_task_btf helper", "5.11" },
	{ HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_task_pt_regs,
	  "the bpf_task_pt_regs helper", "5.15" },
	{ HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, "the bpf_loop helper", "5.17" },
	{ HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_find_vma, "the bpf_find_vma helper",
	  "5.17" },
	{ HELPER, BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_ringbuf_query,
	  "the bpf_ringbuf_query helper", "5.8" },
};

static int probe(const struct feature *f)
{
	switch (f->kind) {
	case PROG:
		return libbpf_probe_bpf_prog_type(f->type, NULL);
	case MAP:
		return libbpf_probe_bpf_map_type(f->type, NULL);
	default:
		return libbpf_probe_bpf_helper(f->type, f->helper, NULL);
	}
}

/*
 * Whether bpf() may be called at all. With the capabilities in place, a refusal here is
 * a seccomp filter (a container runtime's default profile) or a security module, and
 * every probe below would fail the same way and read as a kernel without the feature.
 */
static int bpf_refused(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno == EPERM || errno == EACCES;
}

const char *bpf_features__missing(char *buf, size_t len)
{
	struct utsname u = {};

	if (bpf_refused()) {
		snprintf(buf, len, "missing permission to call bpf(): it is refused (%s) although "
			 "the capabilities are there; a seccomp profile (a container's default "
			 "one) or a security module forbids it", strerror(errno));
		return buf;
	}

	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		/* 1: present; 0: absent; < 0: the probe itself failed, which says nothing
		 * about the feature. */
		if (probe(&features[i]) != 0)
			continue;
		uname(&u);
		snprintf(buf, len, "this kernel lacks %s (Linux %s or later; this is Linux %s)",
			 features[i].what, features[i].since, u.release);
		return buf;
	}
	return NULL;
}
