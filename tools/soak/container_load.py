#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The agent's image, run as the DaemonSet runs it, following many busy containers.

Starts the agent under podman with exactly the manifest's privileges and limits
(tests/lib/containers.py builds the arguments from the manifest) and its ConfigMap's
period and rate, then N docker containers that each burn CPU in a function of their
own. For --seconds it reads, every second, the agent container's memory (its cgroup's
usage and the agent's VmRSS) and CPU time (its cgroup's cpuacct), and for each
container the time from its start to the first profile file of its process. Passes
when every container got a profile, the agent ran to the end and every profile names
its container's function; prints and writes (--json) the numbers.

    tools/soak/container_load.py --containers 20 --seconds 60
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))               # lib/, for lib.containers

import lib.containers as tc  # noqa: E402
from pprof_text import Profile  # noqa: E402


def cgroup_file(pid, controller, name):
    """@name in @pid's cgroup of the v1 @controller, or of the v2 hierarchy."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctls, path = line.split(":", 2)
        if controller in ctls.split(","):
            return Path(f"/sys/fs/cgroup/{controller}{path}/{name}")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--containers", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--json")
    args = ap.parse_args()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"pbp-container-load-{os.getpid()}"
    work.mkdir(parents=True)
    result, ok = {}, False
    with tc.prepared_images(work) as images:
        fleet = tc.Fleet(work, images)
        text = tc.MANIFEST.read_text()
        period = int(re.search(r"^\s*period = (\d+)s", text, re.M).group(1))
        agent = tc.AgentContainer(images, work, period=period)
        agent.wait_running()
        agent_pid = int(tc.sh([tc.PODMAN, "inspect", "-f", "{{.State.Pid}}",
                               agent.id]).stdout)
        mem_file = cgroup_file(agent_pid, "memory", "memory.usage_in_bytes")
        cpu_file = cgroup_file(agent_pid, "cpuacct", "cpuacct.usage")
        cpu0 = int(cpu_file.read_text())
        started = {}
        for _ in range(args.containers):
            t0 = time.time()
            c = fleet.start(tc.DOCKER, "python3", seconds=args.seconds + 4 * period)
            started[c.pid] = (c, t0)
        t_start, first, mem, rss = time.monotonic(), {}, [], []
        while time.monotonic() - t_start < args.seconds:
            mem.append(int(mem_file.read_text()))
            status = Path(f"/proc/{agent_pid}/status").read_text()
            rss.append(int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1)) * 1024)
            for pid, (c, t0) in started.items():
                if pid not in first:
                    files = agent.files(pid)
                    if files:
                        first[pid] = min(p.stat().st_mtime for p in files) - t0
            time.sleep(1)
        cpu_s = (int(cpu_file.read_text()) - cpu0) / 1e9
        running = agent.running()
        rc = agent.stop()
        wrong = [c.name for c, _ in started.values()
                 if any(tc.hot_at_line(Profile.load(p), c) < 0.5
                        for p in sorted(agent.files(c.pid))[1:-1])]
        ttf = sorted(first.values())
        result = {
            "containers": args.containers, "seconds": args.seconds, "period_s": period,
            "agent_cpu_s": round(cpu_s, 2),
            "agent_cpu_percent_of_one_cpu": round(100 * cpu_s / args.seconds, 2),
            "agent_cgroup_memory_peak_mib": round(max(mem) / 2**20, 1),
            "agent_rss_peak_mib": round(max(rss) / 2**20, 1),
            "agent_rss_last_mib": round(rss[-1] / 2**20, 1),
            "containers_profiled": len(first),
            "first_profile_s_median": round(statistics.median(ttf), 2) if ttf else None,
            "first_profile_s_max": round(max(ttf), 2) if ttf else None,
            "agent_ran_to_the_end": running, "agent_exit": rc,
            "containers_with_wrong_stacks": wrong,
        }
        ok = running and rc == 0 and len(first) == args.containers and not wrong
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print("container-load:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
