# SPDX-License-Identifier: GPL-2.0-only
"""The agent's export side, piece by piece: cgroup labels, per-profile labels in pprof,
the bounded export queue, rotated files, the config file, the Pyroscope push and the
Prometheus endpoint. The C unit test binaries (tests/unit/test_*.c) do the work; the
HTTP ones talk to a real server on 127.0.0.1 that lib/ingest.py runs (Python's
http.server), or are scraped by a real client, and what crossed the wire is checked
here: the request line, the query, the multipart body decoded with protoc.

Both the plain and the sanitizer builds run.
"""

import gzip
import select
import socket
import subprocess
import sys
import time
import urllib.parse

import pytest

from lib.paths import REPO
from lib.ingest import Ingest, free_port, http_get, multipart_fields
from lib.units import BUILDS, assert_clean, env_for, run_unit, unit_binary

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile  # noqa: E402

# The node agent profiles every process on the host:
# `make test` runs this file with no other test beside it.
pytestmark = pytest.mark.alone

# --------------------------------------------------------------------------------------
# Self-contained units

@pytest.mark.parametrize("build", BUILDS)
def test_pprof_carries_the_profile_labels_on_every_sample(build):
    """Every sample has the profile-wide labels beside its own pid/thread labels; an
    empty label is left out; protoc, not our code, reads them back."""
    p = subprocess.run([unit_binary("test_writers", build), "pprof", "--labels"],
                       capture_output=True, timeout=60, env=env_for(build))
    assert p.returncode == 0, p.stderr
    prof = Profile.parse(gzip.decompress(p.stdout))
    want = {"hostname": "node-1", "pod_uid": "8d1a2f5c-7b1e-4c3a-9f00-1234567890ab",
            "qos": "burstable", "command": 'python3 app.py --name="a,b{c}"',
            "app": "node-1"}
    samples = list(prof.samples())
    assert len(samples) == 6
    for _, _, labels in samples:
        assert {k: labels.get(k) for k in want} == want
        assert "container_id" not in labels
        assert {"pid", "thread_id"} <= labels.keys()
    # Repeated strings are stored once.
    assert prof.strings.count("node-1") == 1


def test_config_errors_name_file_and_line():
    p = run_unit("test_agent_config", "plain")
    assert "bad.conf:1: unknown key \"bogus\"" in p.stderr
    assert "bad.conf:2: period: \"soon\"" in p.stderr
    assert "bad.conf:3: rate: \"0\"" in p.stderr


# --------------------------------------------------------------------------------------
# The Pyroscope push, to a stand-in that records every request (lib/ingest.py)

@pytest.mark.parametrize("build", BUILDS)
def test_pyroscope_push_request(build, tmp_path):
    """Path, query, headers and the multipart body of one push, as the server sees
    them; the profile decodes with protoc to the labels it was given."""
    prof = tmp_path / "p.pb.gz"
    prof.write_bytes(subprocess.run([unit_binary("test_writers", "plain"), "pprof", "--labels"],
                                    capture_output=True, check=True).stdout)
    srv = Ingest()
    try:
        p = run_unit("test_export_http", build, args=["push", srv.url + "/", str(prof)])
    finally:
        srv.stop()
    assert "status=200 err=0" in p.stdout
    (path, headers, body), = srv.requests
    url = urllib.parse.urlsplit(path)
    assert url.path == "/ingest"
    q = urllib.parse.parse_qs(url.query, strict_parsing=True)
    assert {k: v for k, v in q.items() if k != "name"} == {
        "from": ["1700000000"], "until": ["1700000011"], "format": ["pprof"],
        "sampleRate": ["99"], "spyName": ["pybpfprof"]}
    # Delimiters in values are neutralised, keys cleaned, empty and reserved labels
    # left out: the series name parses the way Pyroscope's key parser reads it.
    assert q["name"] == ["my_app_x{hostname=node-1,"
                         "command=python3 app.py --opt__a_1_b_2_ _q__x,"
                         "pod_uid=8d1a2f5c-7b1e-4c3a-9f00-1234567890ab}"]
    assert headers["Authorization"] == "Bearer tok123"
    assert headers["X-Scope-OrgID"] == "tenant-1"
    fields = multipart_fields(headers, body)
    assert set(fields) == {"profile"}
    filename, data = fields["profile"]
    assert filename == "profile.pprof"
    assert data == prof.read_bytes()
    labels = {tuple(sorted(lab.items())) for _, _, lab in Profile.parse(
        gzip.decompress(data)).samples()}
    assert all(dict(lab)["hostname"] == "node-1" for lab in labels)


@pytest.mark.parametrize("build", BUILDS)
def test_exporter_outage_bounds_queue_then_delivers_in_order(build):
    """Server down: pushes fail and are retried, the queue stays at its bound and the
    oldest profiles are dropped and counted. Server up: the queued ones arrive, in
    order, and nothing else."""
    port = free_port()
    items, qmax = 12, 4
    proc = subprocess.Popen([unit_binary("test_export_http", build), "outage",
                             f"http://127.0.0.1:{port}", str(items), str(qmax)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env_for(build))
    srv = None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "the exporter never reported the outage"
        line = proc.stdout.readline()
        assert line.startswith("down:"), line + proc.stderr.read()
        srv = Ingest(port)
        proc.stdin.write("up\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        if srv:
            srv.stop()
    assert_clean(subprocess.CompletedProcess(proc.args, proc.returncode, out, err),
                 "test_export_http outage")
    seqs = []
    for path, _, _ in srv.requests:
        name = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["name"][0]
        assert name.startswith("outage{seq=")
        seqs.append(int(name[len("outage{seq="):-1]))
    assert seqs == list(range(items - qmax + 1, items + 1))
    assert f"pybpfprof_export_dropped_total {items - qmax}" in out
    assert f"pybpfprof_export_pushed_total {qmax}" in out


@pytest.mark.parametrize("build", BUILDS)
def test_exporter_flush_gives_up_in_time(build):
    p = run_unit("test_export_http", build,
                 args=["flush-timeout", f"http://127.0.0.1:{free_port()}"])
    assert "flush gave up" in p.stdout
    assert "3 profiles not sent before the flush timeout" in p.stderr


# --------------------------------------------------------------------------------------
# The metrics endpoint, scraped by a plain client

@pytest.mark.parametrize("build", BUILDS)
def test_metrics_endpoint(build):
    proc = subprocess.Popen([unit_binary("test_export_http", build), "metrics", "127.0.0.1:0"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env_for(build))
    try:
        port = int(proc.stdout.readline().strip().split("=")[1])
        status, headers, body = http_get(port, "/metrics")
        assert status == 200
        assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "# HELP pybpfprof_export_pushed_total " in body
        assert "# TYPE pybpfprof_export_pushed_total counter\n" in body
        assert "\npybpfprof_export_pushed_total 7\n" in body
        assert "\npybpfprof_export_queue_depth 3\n" in body
        assert "\npybpfprof_renders_total 1\n" in body
        assert http_get(port, "/healthz")[:1] == (200,)
        assert http_get(port, "/healthz")[2] == "ok\n"
        assert http_get(port, "/nope")[0] == 404
        # More silent clients than the server keeps (METRICS_HTTP_MAX_CLIENTS, 64):
        # each new connection displaces the oldest one still silent, so scrapes get
        # through, answered from the text last published.
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]
        proc.stdin.write("again\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "published 2\n"
        status, _, body = http_get(port, "/metrics", timeout=20)
        assert status == 200 and "pybpfprof_renders_total 2\n" in body
        assert http_get(port, "/healthz", timeout=20)[0] == 200
        closed = []
        for s in silent:
            s.settimeout(0)
            try:
                closed.append(s.recv(1) == b"")
            except BlockingIOError:
                closed.append(False)
            s.close()
        # 16 had to go for the rest and one for the first request, whose slot, free
        # again once it was answered, served the second; the newest stayed.
        assert closed == [True] * (80 - 64 + 1) + [False] * (64 - 1), closed
        # A publisher that stops publishing for longer than its stall limit is
        # reported stuck by /healthz, and healthy again once it publishes.
        proc.stdin.write("stall 1500\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "stall set\n"
        time.sleep(2.0)
        status, _, body = http_get(port, "/healthz", timeout=20)
        assert status == 503 and body.startswith("stalled: nothing published for "), body
        proc.stdin.write("again\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "published 3\n"
        assert http_get(port, "/healthz", timeout=20)[:1] == (200,)
        out, err = proc.communicate(timeout=30)  # closes stdin: the server stops
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_clean(subprocess.CompletedProcess(proc.args, proc.returncode, out, err),
                 "test_export_http metrics")
