// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgroup_labels on the /proc/PID/cgroup texts real hosts produce (both kubelet cgroup
 * drivers, containerd, CRI-O, docker, plain systemd services, cgroup v1 and v2) and
 * on garbage: overlong lines, no newline, no path, short hex that is not an id.
 * Exits non-zero on the first mismatch, naming it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cgroup_labels.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UID "8d1a2f5c-7b1e-4c3a-9f00-1234567890ab"
#define UID_ "8d1a2f5c_7b1e_4c3a_9f00_1234567890ab"

struct want {
	const char *name, *text;
	int err;
	const char *path, *id, *pod, *qos;
};

static const struct want cases[] = {
	{ "systemd driver, burstable, containerd",
	  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" ID64 ".scope\n",
	  0, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" ID64 ".scope", ID64, UID, "burstable" },
	{ "systemd driver, besteffort, CRI-O",
	  "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	  ".slice/crio-" ID64 ".scope\n",
	  0, NULL, ID64, UID, "besteffort" },
	{ "systemd driver, guaranteed, docker",
	  "0::/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID64 ".scope\n",
	  0, NULL, ID64, UID, "guaranteed" },
	{ "systemd driver, cri-o prefix, upper-case hex",
	  "0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-o-"
	  "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF.scope\n",
	  0, NULL, ID64, UID, "guaranteed" },
	{ "kind: kubelet nested under another slice",
	  "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	  "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID64 ".scope\n",
	  0, NULL, ID64, UID, "besteffort" },
	{ "cgroupfs driver, burstable",
	  "0::/kubepods/burstable/pod" UID "/" ID64 "\n",
	  0, "/kubepods/burstable/pod" UID "/" ID64, ID64, UID, "burstable" },
	{ "cgroupfs driver, besteffort",
	  "0::/kubepods/besteffort/pod" UID "/" ID64 "\n", 0, NULL, ID64, UID, "besteffort" },
	{ "cgroupfs driver, guaranteed",
	  "0::/kubepods/pod" UID "/" ID64 "\n", 0, NULL, ID64, UID, "guaranteed" },
	{ "static pod: 32-hex UID",
	  "0::/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" ID64 "\n",
	  0, NULL, ID64, "0123456789abcdef0123456789abcdef", "burstable" },
	{ "pod cgroup itself (no container yet)",
	  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice\n",
	  0, NULL, "", UID, "burstable" },
	{ "plain docker, cgroupfs", "0::/docker/" ID64 "\n", 0, "/docker/" ID64, ID64, "", "" },
	{ "plain docker, systemd", "0::/system.slice/docker-" ID64 ".scope\n",
	  0, NULL, ID64, "", "" },
	{ "rootful podman, cgroupfs (v1 and v2 alike)",
	  "0::/libpod_parent/libpod-" ID64 "\n", 0, "/libpod_parent/libpod-" ID64, ID64, "", "" },
	{ "rootful podman, cgroupfs, v1 only",
	  "9:name=systemd:/libpod_parent/libpod-" ID64 "\n8:pids:/libpod_parent/libpod-" ID64
	  "\n0::/\n", 0, NULL, ID64, "", "" },
	{ "rootful podman, systemd", "0::/machine.slice/libpod-" ID64 ".scope\n",
	  0, NULL, ID64, "", "" },
	{ "podman --cgroups=split: the container's leaf under its scope",
	  "0::/machine.slice/libpod-" ID64 ".scope/container\n", 0, NULL, ID64, "", "" },
	{ "podman pod, systemd",
	  "0::/machine.slice/machine-libpod_pod_" ID64B ".slice/libpod-" ID64 ".scope\n",
	  0, NULL, ID64, "", "" },
	{ "rootless podman",
	  "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64
	  ".scope\n", 0, NULL, ID64, "", "" },
	{ "podman's monitor, systemd: no container",
	  "0::/machine.slice/libpod-conmon-" ID64 ".scope\n", 0, NULL, "", "", "" },
	{ "podman's monitor, cgroupfs: no container",
	  "0::/libpod_parent/conmon\n", 0, NULL, "", "", "" },
	{ "CRI-O, cgroupfs driver",
	  "0::/kubepods/burstable/pod" UID "/crio-" ID64 "\n", 0, NULL, ID64, UID, "burstable" },
	{ "CRI-O's monitor, cgroupfs driver: the pod, no container",
	  "0::/kubepods/burstable/pod" UID "/crio-conmon-" ID64 "\n", 0, NULL, "", UID,
	  "burstable" },
	{ "docker seen from another cgroup namespace",
	  "0::/../../docker/" ID64 "\n", 0, NULL, ID64, "", "" },
	{ "a dash and 64 hex digits with nothing before: no id",
	  "0::/x/-" ID64 "\n", 0, NULL, "", "", "" },
	{ "a systemd service: no container",
	  "0::/system.slice/ssh.service\n", 0, "/system.slice/ssh.service", "", "", "" },
	{ "user session: no container",
	  "0::/user.slice/user-1000.slice/session-3.scope\n", 0, NULL, "", "", "" },
	{ "short hex is not an id",
	  "0::/system.slice/docker-0123456789ab.scope\n", 0, NULL, "", "", "" },
	{ "65 hex digits are not an id",
	  "0::/docker/" ID64 "0\n", 0, NULL, "", "", "" },
	{ "pod-like name outside kubepods is no pod",
	  "0::/other/burstable/pod" UID "/x\n", 0, NULL, "", "", "" },
	{ "cgroup v1: name=systemd preferred over other controllers",
	  "12:cpu,cpuacct:/docker/" ID64B "\n"
	  "1:name=systemd:/kubepods/burstable/pod" UID "/" ID64 "\n",
	  0, "/kubepods/burstable/pod" UID "/" ID64, ID64, UID, "burstable" },
	{ "cgroup v1: any controller when name=systemd is /",
	  "11:memory:/docker/" ID64 "\n1:name=systemd:/\n", 0, "/docker/" ID64, ID64, "", "" },
	{ "hybrid: v2 line '/' falls back to v1",
	  "12:pids:/kubepods/pod" UID "/" ID64 "\n0::/\n", 0, NULL, ID64, UID, "guaranteed" },
	{ "v2 preferred over v1 when it names a cgroup",
	  "1:name=systemd:/docker/" ID64B "\n0::/docker/" ID64 "\n", 0, NULL, ID64, "", "" },
	{ "no newline at the end", "0::/docker/" ID64, 0, NULL, ID64, "", "" },
	{ "the last container scope wins (conmon above the container)",
	  "0::/machine.slice/libpod-" ID64B ".scope/container/docker-" ID64 ".scope\n",
	  0, NULL, ID64, "", "" },
	{ "empty", "", -EINVAL, "", "", "", "" },
	{ "only root cgroups", "0::/\n1:name=systemd:/\n", -EINVAL, "", "", "", "" },
	{ "no colons", "garbage without any structure\n", -EINVAL, "", "", "", "" },
	{ "path not absolute", "0::docker/" ID64 "\n", -EINVAL, "", "", "", "" },
	{ "newlines only", "\n\n\n", -EINVAL, "", "", "", "" },
};

static int check(const char *name, const char *what, const char *got, const char *want)
{
	if (want && strcmp(got, want)) {
		fprintf(stderr, "FAIL %s: %s = \"%s\", want \"%s\"\n", name, what, got, want);
		return 1;
	}
	return 0;
}

static int run(const struct want *w, const char *text)
{
	struct cgroup_labels l;
	int err = cgroup_labels__parse(text, &l), bad = 0;

	if (err != w->err) {
		fprintf(stderr, "FAIL %s: returned %d, want %d\n", w->name, err, w->err);
		return 1;
	}
	bad |= check(w->name, "path", l.path, w->path);
	bad |= check(w->name, "container_id", l.container_id, w->id);
	bad |= check(w->name, "pod_uid", l.pod_uid, w->pod);
	bad |= check(w->name, "qos", l.qos, w->qos);
	return bad;
}

/* A path longer than the path field: not kept, but its ids are still found. */
static int overlong(void)
{
	size_t pad = 5000;
	char *text = malloc(pad + 300);
	struct cgroup_labels l;
	int err, bad = 0;

	if (!text)
		return 1;
	strcpy(text, "0::/");
	memset(text + 4, 'a', pad);
	strcpy(text + 4 + pad, "/docker-" ID64 ".scope\n");
	err = cgroup_labels__parse(text, &l);
	bad |= err != 0;
	bad |= check("overlong line", "path", l.path, "");
	bad |= check("overlong line", "container_id", l.container_id, ID64);
	/* A whole line of hex: never an id of any length but 64. */
	strcpy(text, "0::/");
	memset(text + 4, 'f', pad);
	text[4 + pad] = '\0';
	err = cgroup_labels__parse(text, &l);
	bad |= err != 0;
	bad |= check("overlong hex", "container_id", l.container_id, "");
	free(text);
	if (bad)
		fprintf(stderr, "FAIL overlong line (err %d)\n", err);
	return bad;
}

/* Our own process: readable, and a result either way (CI may run in a container). */
static int self(void)
{
	struct cgroup_labels l;
	int err = cgroup_labels__read(getpid(), &l);

	if (err && err != -EINVAL) {
		fprintf(stderr, "FAIL reading our own cgroup: %s\n", strerror(-err));
		return 1;
	}
	if (cgroup_labels__read(0x7ffffff0, &l) != -ENOENT) {
		fprintf(stderr, "FAIL reading a missing pid did not give -ENOENT\n");
		return 1;
	}
	printf("own cgroup: \"%s\" container \"%s\"\n", l.path, l.container_id);
	return 0;
}

/* Where cgroup v2 is mounted: alone, or beside the v1 hierarchies. */
static const char *v2_mount(void)
{
	static const char *const at[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	struct statfs st;

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (!statfs(at[i], &st) && st.f_type == CGROUP2_SUPER_MAGIC)
			return at[i];
	return NULL;
}

/*
 * A cgroup named like a Docker container's, made once by root and once owned by a user
 * (as a subtree systemd delegates to a user is): a process in root's is labelled with
 * the container, one in the user's is not.
 */
static int forged(void)
{
	const char *id = "3f5e2b1c9d8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
	const char *mnt = v2_mount();
	char base[128], dir[256], procs[300], pid[32];
	const uid_t owners[] = { 0, 65534 };
	int bad = 0;

	if (geteuid() || !mnt) {
		fprintf(stderr, "FAIL forged: needs root and cgroup v2 (euid %d, v2 at %s)\n",
			(int)geteuid(), mnt ? mnt : "none");
		return 1;
	}
	snprintf(base, sizeof(base), "%s/pbp-labels-%d", mnt, (int)getpid());
	if (mkdir(base, 0755)) {
		fprintf(stderr, "FAIL forged: mkdir %s: %s\n", base, strerror(errno));
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/docker-%s.scope", base, id);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
		struct cgroup_labels l;
		pid_t child;
		int fd, want = owners[i] == 0;

		if (mkdir(dir, 0755) || chown(dir, owners[i], owners[i])) {
			fprintf(stderr, "FAIL forged: making %s: %s\n", dir, strerror(errno));
			bad = 1;
			break;
		}
		child = fork();
		if (!child) {
			pause();
			_exit(0);
		}
		snprintf(pid, sizeof(pid), "%d", (int)child);
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, pid, strlen(pid)) < 0) {
			fprintf(stderr, "FAIL forged: moving %s into %s: %s\n", pid, dir,
				strerror(errno));
			bad = 1;
		} else if (cgroup_labels__read(child, &l) ||
			   !!l.container_id[0] != want ||
			   (want && strcmp(l.container_id, id))) {
			fprintf(stderr, "FAIL forged: cgroup of uid %u: container \"%s\"\n",
				(unsigned int)owners[i], l.container_id);
			bad = 1;
		}
		if (fd >= 0)
			close(fd);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		if (rmdir(dir))
			bad = 1;
	}
	rmdir(base);
	if (!bad)
		printf("a container cgroup of a user is not labelled\n");
	return bad;
}

int main(void)
{
	int bad = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bad |= run(&cases[i], cases[i].text);
	bad |= overlong();
	bad |= self();
	bad |= forged();
	if (!bad)
		printf("test_cgroup_labels: %zu cases ok\n", sizeof(cases) / sizeof(cases[0]) + 4);
	return bad;
}
