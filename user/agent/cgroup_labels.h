/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a process's cgroup says about where it runs: the container id and, under the
 * kubelet, the pod UID and QoS class. The agent turns these into profile labels.
 */
#ifndef PBP_CGROUP_LABELS_H
#define PBP_CGROUP_LABELS_H

#include <sys/types.h>

struct cgroup_labels {
	char path[256];		/* the cgroup path used; "" when there was none */
	char container_id[65];	/* 64 hex digits, or "" */
	char pod_uid[40];	/* with dashes, as the API server shows it, or "" */
	char qos[16];		/* "guaranteed", "burstable", "besteffort" or "" */
};

/*
 * Parses the text of /proc/PID/cgroup. The cgroup v2 line ("0::PATH") is preferred;
 * when it is "/" or absent, the v1 name=systemd line, then any v1 line with a path
 * other than "/". Returns 0 (fields empty when unknown) or -EINVAL when no line has a
 * usable path.
 */
int cgroup_labels__parse(const char *text, struct cgroup_labels *out);
/* Reads /proc/@pid/cgroup and parses it; a negative errno when it cannot be read. A
 * container or pod label is kept only when its cgroup is root's: one in a subtree
 * delegated to a user was named by that user (see cgroup_labels.c). */
int cgroup_labels__read(pid_t pid, struct cgroup_labels *out);

#endif
