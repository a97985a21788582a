# SPDX-License-Identifier: GPL-2.0-only
"""What /proc says of a process the tests started: its perf event descriptors, its
child, the parsing worker a profiler started, a field of its status file, its CPU time;
and the machine's steal time."""

import os
import time
from pathlib import Path


def perf_event_fds_of(pid):
    """perf event descriptors process @pid holds. One closed between listing and reading
    it is skipped: the profiler opens and closes files as it runs."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


def host_child(pid):
    """The one child of @pid (unshare's forked child, which execs the target)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(children[0]) if children else None


def worker_of(pid):
    """The pid of the parsing worker that profiler @pid started, or None."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in status and argv[1:2] == [b"__native-worker"]:
            return int(d.name)
    return None


def confined_status(worker, timeout=20):
    """The parsing worker's status file once it has confined itself, or as it is after
    @timeout seconds. It confines itself after its exec and reads no request
    before, ending with the seccomp filter: read earlier, it still has the capabilities
    it was started with."""
    deadline = time.monotonic() + timeout
    while True:
        status = Path(f"/proc/{worker}/status").read_text()
        if field(status, "Seccomp") == ["2"] or time.monotonic() >= deadline:
            return status
        time.sleep(0.01)


def cpu_seconds(pid, tid=None):
    """CPU time process @pid (all its threads), or its thread @tid, has used, in seconds:
    utime + stime of its stat file."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def field(status, name):
    """The words after NAME: in the text of a /proc status file."""
    return next(line.split(":", 1)[1].split() for line in status.splitlines()
                if line.startswith(name + ":"))


def cpu_jiffies():
    """The machine's CPU time since boot, all CPUs together, by /proc/stat's columns
    (user, nice, system, idle, iowait, irq, softirq, steal, ...), in clock ticks."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    assert fields[0] == "cpu", fields
    return [int(x) for x in fields[1:]]


def host_steal_seconds():
    """The time the hypervisor has taken from this machine's CPUs since boot, all CPUs
    together: 0 on bare metal."""
    return cpu_jiffies()[7] / os.sysconf("SC_CLK_TCK")
