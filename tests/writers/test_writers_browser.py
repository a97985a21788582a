# SPDX-License-Identifier: GPL-2.0-only
"""Our speedscope, chrome and pprof files opened by a real consumer: the speedscope app
(its npm release, installed into .cache-npm/ by tools/install-deps.sh test) in headless
Chromium, which imports all three formats. The app and the profile are served from
127.0.0.1 and the profile is loaded through the app's own URL parameter
(#profileURL=...&view=sandwich). The sandwich view lists every function of the active
profile as page text, so the test reads what a person would see: the names, the
active profile's name and how many profiles (threads) the file held. Any console
error or uncaught exception fails the test.
"""

import functools
import http.server
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lib.paths import REPO
from lib.writers import build_plain, record

sys.path.insert(0, str(REPO / "tests" / "tools"))
from cdp import Browser  # noqa: E402

# Pages opened in headless Chromium.
pytestmark = pytest.mark.browser

APP = REPO / ".cache-npm" / "node_modules" / "speedscope" / "dist" / "release"
LOAD_TIMEOUT = 30.0
IMPORT_FAILED = "Something went wrong"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """The app's files at /, the profiles directory at /profiles/."""

    def __init__(self, *args, profiles=None, **kw):
        self.profiles = profiles
        super().__init__(*args, directory=str(APP), **kw)

    def translate_path(self, path):
        path = path.split("?", 1)[0].split("#", 1)[0]
        if path.startswith("/profiles/"):
            return str(Path(self.profiles) / Path(path).name)
        return super().translate_path(path)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """(base URL, directory whose files are served under /profiles/)."""
    assert (APP / "index.html").exists(), \
        f"{APP}/index.html missing: run tools/install-deps.sh test"
    profiles = tmp_path_factory.mktemp("profiles")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, profiles=profiles))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", profiles
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


def open_in_speedscope(browser, app, name, data, expect):
    """Loads `data` as /profiles/`name`; waits until the page text holds every string
    in `expect`; returns the page text."""
    base, profiles = app
    (profiles / name).write_bytes(data)
    page = browser.new_page()
    page.navigate(f"{base}/index.html#profileURL=/profiles/{name}&view=sandwich")
    deadline = time.monotonic() + LOAD_TIMEOUT
    text = ""
    while time.monotonic() < deadline:
        text = page.evaluate("document.body.innerText") or ""
        if IMPORT_FAILED in text or all(e in text for e in expect):
            break
        time.sleep(0.2)
    errors = page.errors()
    assert not errors, f"speedscope reported errors loading {name}:\n" + "\n".join(errors)
    assert IMPORT_FAILED not in text, f"speedscope could not import {name}:\n{text[:2000]}"
    missing = [e for e in expect if e not in text]
    assert not missing, f"speedscope shows no {missing} for {name}:\n{text[:3000]}"
    return text, page.evaluate("document.title")


@pytest.fixture(scope="module")
def fixed():
    """The fixed profile's files as written (pprof still gzip-compressed)."""
    binary = build_plain()
    out = {}
    for fmt in ("speedscope", "pprof", "chrome"):
        p = subprocess.run([binary, fmt], capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        out[fmt] = p.stdout
    return out


def test_speedscope_app_shows_our_speedscope_file(browser, app, fixed):
    text, title = open_in_speedscope(
        browser, app, "fixed.speedscope.json", fixed["speedscope"],
        ["pid 100 thread 100 (python3) (1/3)", "work", "dumps", "<module>"])
    assert title == "pid 100 (python3 app.py) - speedscope"
    # Time is CPU time: thread 100 has 5 samples in work at 10 ms each.
    assert "50.00ms" in text


def test_speedscope_app_shows_our_chrome_trace(browser, app, fixed):
    open_in_speedscope(
        browser, app, "fixed.trace.json", fixed["chrome"],
        ["python3 (tid 100) (1/3)", "work (/srv/app.py:12)",
         "dumps (/usr/lib/python3.11/json/__init__.py:231)", "50.00ms"])


def test_speedscope_app_shows_our_pprof_file(browser, app, fixed):
    # pprof is one profile of all threads: the names needing escapes show here.
    open_in_speedscope(
        browser, app, "fixed.pb.gz", fixed["pprof"],
        ["work", "get", "<lambda>", 'f\u00e9;"q"', "[incomplete]",
         'process 200 python3 -c "x<y & z"', "500.00ms"])


@pytest.mark.parametrize("fmt,suffix", [("speedscope", ".speedscope.json"),
                                        ("chrome", ".trace.json"), ("pprof", ".pb.gz")])
def test_speedscope_app_shows_a_real_run(browser, app, py311, profiler_bin, tmp_path,
                                         fmt, suffix):
    rec = record(tmp_path, profiler_bin, py311, "ratio", fmt, "bpf")
    data = rec.output().read_bytes()
    open_in_speedscope(browser, app, f"ratio{suffix}", data, ["fa", "fb", "parent"])


@pytest.mark.parametrize("fmt,name", [("speedscope", "native.speedscope.json"),
                                      ("chrome", "native.trace.json"),
                                      ("pprof", "native.pb.gz")])
def test_speedscope_app_shows_native_frames(browser, app, fmt, name):
    """--native: C frames with their objects (and pprof's mappings and addresses) are
    imported like any other frame."""
    p = subprocess.run([build_plain(), fmt, "--native"], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # pprof names a function without its file (the sandwich view shows no files); the
    # others name a frame as the collapsed format does.
    expect = (["__memmove_avx_unaligned_erms", "libz.so.1+0x3a40", "list_sort",
               "deflate"] if fmt == "pprof" else
              ["__memmove_avx_unaligned_erms+0x2c (libc.so.6)",
               "libz.so.1+0x3a40+0x22 (libz.so.1)", "list_sort (libpython3.11.so.1.0)"])
    open_in_speedscope(browser, app, name, p.stdout, expect)
