// SPDX-License-Identifier: GPL-2.0-only
/*
 * Container id, pod UID and QoS class from a cgroup path; see cgroup_labels.h.
 *
 * The kubelet names pod cgroups in one of two ways, after its cgroup driver:
 *   systemd:  /kubepods.slice/kubepods-burstable.slice/
 *             kubepods-burstable-pod<uid, '-' as '_'>.slice/cri-containerd-<id>.scope
 *   cgroupfs: /kubepods/burstable/pod<uid>/<id>
 * A guaranteed pod sits directly under kubepods (no QoS level). Container runtimes
 * name the container's own cgroup "<runtime>-<id>.scope" (systemd) or plainly "<id>";
 * plain docker uses /docker/<id> and /system.slice/docker-<id>.scope, rootful podman
 * /libpod_parent/libpod-<id> and /machine.slice/libpod-<id>.scope. Ids are always
 * 64 hex digits here, and nothing shorter is taken for one: a short hex string in a
 * path is far more often something else (a unit instance, a hash) than an id.
 *
 * The text comes from another process's /proc entry and may be anything: every scan
 * is bounded by the length it was given, and nothing is assumed to be terminated.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cgroup.h"
#include "agent/cgroup_labels.h"

#define CONTAINER_ID_LEN 64

struct span {
	const char *p;
	size_t n;
};

static int span_eq(struct span s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n == n && !memcmp(s.p, lit, n);
}

static int span_ends(struct span s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n >= n && !memcmp(s.p + s.n - n, lit, n);
}

static int all_hex(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)p[i]))
			return 0;
	return 1;
}

static void copy_id(char *dst, const char *src)
{
	for (size_t i = 0; i < CONTAINER_ID_LEN; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[CONTAINER_ID_LEN] = '\0';
}

/*
 * The container's own cgroup: "<64hex>" (docker and containerd under cgroupfs),
 * "<runtime>-<64hex>" (podman's libpod-, CRI-O's crio- under cgroupfs) or
 * "<runtime>-<64hex>.scope" (every runtime under the systemd driver). The runtime's
 * monitor sits beside the container as "libpod-conmon-<id>.scope" or
 * "crio-conmon-<id>": it runs outside the container, so it names none.
 */
static int container_id(struct span c, char *out)
{
	static const char conmon[] = "conmon-";
	const char *id;

	if (c.n == CONTAINER_ID_LEN && all_hex(c.p, c.n)) {
		copy_id(out, c.p);
		return 1;
	}
	if (span_ends(c, ".scope"))
		c.n -= 6;
	if (c.n < CONTAINER_ID_LEN + 2)
		return 0;
	id = c.p + c.n - CONTAINER_ID_LEN;
	if (id[-1] != '-' || !all_hex(id, CONTAINER_ID_LEN))
		return 0;
	if ((size_t)(id - c.p) >= sizeof(conmon) - 1 &&
	    !memcmp(id - (sizeof(conmon) - 1), conmon, sizeof(conmon) - 1))
		return 0;
	copy_id(out, id);
	return 1;
}

/* A pod UID is a UUID, or for static pods a 32-hex hash; '_' stands for '-' under
 * the systemd driver, since '-' separates the levels of a slice name. */
static int pod_uid(struct span u, char *out, size_t outlen)
{
	if (u.n < 32 || u.n >= outlen)
		return 0;
	for (size_t i = 0; i < u.n; i++) {
		char ch = u.p[i];

		if (ch == '_')
			ch = '-';
		else if (!isxdigit((unsigned char)ch) && ch != '-')
			return 0;
		out[i] = (char)tolower((unsigned char)ch);
	}
	out[u.n] = '\0';
	return 1;
}

static void set_qos(char *qos, size_t len, const char *v)
{
	snprintf(qos, len, "%s", v);
}

/* systemd driver: "[...]kubepods[-QOS]-pod<uid>.slice". */
static void systemd_pod(struct span c, struct cgroup_labels *out)
{
	static const struct { const char *prefix, *qos; } kinds[] = {
		{ "kubepods-burstable-pod", "burstable" },
		{ "kubepods-besteffort-pod", "besteffort" },
		{ "kubepods-pod", "guaranteed" },
	};
	char uid[sizeof(out->pod_uid)];

	if (!span_ends(c, ".slice"))
		return;
	c.n -= 6;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		const char *hit = NULL;
		size_t plen = strlen(kinds[k].prefix);

		/* The last occurrence: nested setups (kind) prefix the slice names. */
		for (size_t i = 0; i + plen <= c.n; i++)
			if (!memcmp(c.p + i, kinds[k].prefix, plen))
				hit = c.p + i;
		if (!hit || (hit != c.p && hit[-1] != '-'))
			continue;
		if (pod_uid((struct span){ hit + plen, (size_t)(c.p + c.n - hit - plen) }, uid,
			    sizeof(uid))) {
			memcpy(out->pod_uid, uid, sizeof(uid));
			set_qos(out->qos, sizeof(out->qos), kinds[k].qos);
		}
		return;
	}
}

/* cgroupfs driver: ".../kubepods[/QOS]/pod<uid>". */
static void cgroupfs_pod(struct span c, struct span parent, struct span grandparent,
			 struct cgroup_labels *out)
{
	char uid[sizeof(out->pod_uid)];
	const char *qos;

	if (c.n < 4 || memcmp(c.p, "pod", 3) || span_ends(c, ".slice"))
		return;
	if (span_eq(parent, "kubepods"))
		qos = "guaranteed";
	else if (span_eq(grandparent, "kubepods") &&
		 (span_eq(parent, "burstable") || span_eq(parent, "besteffort")))
		qos = parent.p[1] == 'u' ? "burstable" : "besteffort";
	else
		return;
	if (pod_uid((struct span){ c.p + 3, c.n - 3 }, uid, sizeof(uid))) {
		memcpy(out->pod_uid, uid, sizeof(uid));
		set_qos(out->qos, sizeof(out->qos), qos);
	}
}

static void from_span(struct span path, struct cgroup_labels *out)
{
	struct span parent = { "", 0 }, grandparent = { "", 0 };
	const char *end = path.p + path.n, *p = path.p;

	out->container_id[0] = out->pod_uid[0] = out->qos[0] = '\0';
	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		struct span c = { p, (size_t)((slash ? slash : end) - p) };

		if (c.n) {
			container_id(c, out->container_id);
			systemd_pod(c, out);
			cgroupfs_pod(c, parent, grandparent, out);
			grandparent = parent;
			parent = c;
		}
		p = slash ? slash + 1 : end;
	}
}

/* "ID:CONTROLLERS:PATH" -> its parts; 0 if the line is not of that form. */
static int split_line(struct span line, struct span *id, struct span *ctl, struct span *path)
{
	const char *c1 = memchr(line.p, ':', line.n), *c2;

	if (!c1)
		return 0;
	c2 = memchr(c1 + 1, ':', (size_t)(line.p + line.n - c1 - 1));
	if (!c2)
		return 0;
	*id = (struct span){ line.p, (size_t)(c1 - line.p) };
	*ctl = (struct span){ c1 + 1, (size_t)(c2 - c1 - 1) };
	*path = (struct span){ c2 + 1, (size_t)(line.p + line.n - c2 - 1) };
	return path->n > 0 && path->p[0] == '/';
}

int cgroup_labels__parse(const char *text, struct cgroup_labels *out)
{
	/* Candidates in order of preference: v2, v1 name=systemd, any other v1. */
	struct span best[3] = { { NULL, 0 }, { NULL, 0 }, { NULL, 0 } };
	const char *p = text, *end = text + strlen(text);

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct span line = { p, (size_t)((nl ? nl : end) - p) }, id, ctl, path;
		int rank;

		p = nl ? nl + 1 : end;
		if (!split_line(line, &id, &ctl, &path) || span_eq(path, "/"))
			continue;
		if (span_eq(id, "0") && ctl.n == 0)
			rank = 0;
		else if (span_eq(ctl, "name=systemd"))
			rank = 1;
		else
			rank = 2;
		if (!best[rank].p)
			best[rank] = path;
	}
	for (int i = 0; i < 3; i++) {
		if (!best[i].p)
			continue;
		/* An overlong path still names its ids; it is only not kept whole. */
		if (best[i].n < sizeof(out->path)) {
			memcpy(out->path, best[i].p, best[i].n);
			out->path[best[i].n] = '\0';
		}
		from_span(best[i], out);
		return 0;
	}
	return -EINVAL;
}

/*
 * A container runtime or the kubelet makes its cgroups as root; a user to whom systemd
 * delegated a subtree owns every cgroup below it, and may name one
 * "docker-<64 hex>.scope" or "...-pod<uid>.slice". Labels are kept only when the
 * cgroup is root's; one that cannot be looked at (an agent in a cgroup namespace of
 * its own sees other paths) keeps them, as the path is all there is to go on.
 */
static void vouch(struct cgroup_labels *l)
{
	struct stat st;
	int fd;

	if ((!l->container_id[0] && !l->pod_uid[0]) || l->path[0] != '/')
		return;
	fd = cgroup__open(l->path);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && st.st_uid != 0)
		l->container_id[0] = l->pod_uid[0] = l->qos[0] = '\0';
	close(fd);
}

int cgroup_labels__read(pid_t pid, struct cgroup_labels *out)
{
	char path[64], buf[8192];
	size_t len = 0;
	ssize_t n;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < sizeof(buf) - 1) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	err = cgroup_labels__parse(buf, out);
	if (!err)
		vouch(out);
cleanup:
	close(fd);
	return err;
}
