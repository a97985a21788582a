"""What a target controls about the files and names `record --native` reads: it cannot
kill the profiler by truncating a library it has mapped, lead it out of its own root
with a debug-file link, or stall it with a C++ name whose demangled form doubles with
every few bytes.

The workload loads a library built here with debug information (so that its section
headers lie pages past its last loaded segment), and once told, cuts the file after
that segment (section headers, symbol table and debug sections go) and calls into it
for a few seconds: the code it runs stays mapped, but the file's tail is gone.
A profiler that maps the file (libdwfl does, with what it is given) faults with SIGBUS
as soon as it reads the section headers, which it does when a sample first needs the
library's call-frame information; pybpfprof hands libdwfl a private copy instead. The
profile must be written, with samples in the library's function.
"""

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from lib.collapsed import show
from lib.interpreters import make_interp
from lib.harness import Harness, OpenWatch

LIB_SRC = """
double trunc_burn(double x)
{
	for (int i = 0; i < 200000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}
"""
ATTACHED_S = 3      # the profiler has read the target's mappings by then
BURN_S = 4

WORKLOAD = r'''
import ctypes, os, struct, sys, time
copy, go, done = sys.argv[1:4]
lib = ctypes.CDLL(copy)
lib.trunc_burn.restype = ctypes.c_double
lib.trunc_burn.argtypes = [ctypes.c_double]
open(go + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
with open(copy, "rb") as f:
    head = f.read(64)
    phoff, = struct.unpack_from("<Q", head, 32)
    phentsize, phnum = struct.unpack_from("<HH", head, 54)
    f.seek(phoff)
    ph = f.read(phentsize * phnum)
end = 0
for i in range(phnum):
    p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", ph, i * phentsize)
    if p_type == 1:
        end = max(end, p_offset + p_filesz)
cut = (end + 4095) // 4096 * 4096
assert cut < os.path.getsize(copy), (cut, os.path.getsize(copy))
os.truncate(copy, cut)
open(done, "w").close()
stop = time.monotonic() + float(sys.argv[4])
while time.monotonic() < stop:
    lib.trunc_burn(1.0)
'''


def test_record_native_survives_a_library_truncated_under_it(tmp_path, profiler_bin):
    src = tmp_path / "trunc.c"
    src.write_text(LIB_SRC)
    copy = tmp_path / "libtrunc.so"
    p = subprocess.run(["gcc", "-shared", "-fPIC", "-g", "-O1", "-o", str(copy), str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, f"building the library failed:\n{p.stderr}"
    go, done = tmp_path / "go", tmp_path / "done"
    script = tmp_path / "truncating.py"
    script.write_text(WORKLOAD)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.spawn([sys.executable, str(script), str(copy), str(go), str(done), str(BURN_S)])
        deadline = time.monotonic() + 30
        while not (tmp_path / "go.ready").exists():
            assert w.poll() is None and time.monotonic() < deadline, "the workload did not start"
            time.sleep(0.02)
        out = tmp_path / "prof.txt"
        prof = subprocess.Popen([profiler_bin, "record", "-p", str(w.pid), "--native", "-r",
                                 "999", "-d", str(ATTACHED_S + BURN_S), "-f", "collapsed",
                                 "-o", str(out)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(ATTACHED_S)
        go.touch()
        try:
            _, err = prof.communicate(timeout=ATTACHED_S + BURN_S + 60)
        except subprocess.TimeoutExpired:
            prof.kill()
            pytest.fail("record --native did not end")
        assert done.exists(), "the workload never truncated its library"
        assert prof.returncode == 0, f"record --native exited {prof.returncode}:\n{err[-2000:]}"
        text = out.read_text()
        in_copy = sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                      if ";trunc_burn" in line)
        assert in_copy > 0, f"no sample in the truncated library:\n{text[:3000]}"
    finally:
        h.close()


def build_id(path):
    p = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, timeout=30)
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout)
    assert m, f"{path} has no build-id:\n{p.stdout}"
    return m.group(1)


def test_debug_file_links_resolve_inside_the_targets_root(tmp_path, profiler_bin, sid_root,
                                                          workloads_installed):
    """A debug-file link in a target's root that is absolute ('/root/...') names a file
    in the target's root, as it would for the target: record --native of a process in
    the sid chroot, whose /usr/lib/debug/.build-id entry for its libc points at a path
    that exists only on the host, does not open the host's file."""
    py = make_interp("3.15", sid_root)
    py.require()
    root = Path(py.root)
    libc = root / "usr/lib/x86_64-linux-gnu/libc.so.6"
    bid = build_id(libc)
    link = root / "usr/lib/debug/.build-id" / bid[:2] / f"{bid[2:]}.debug"
    assert not link.exists(), f"{link} exists: the test would replace a real debug file"
    host_dir = Path("/root") / f"pbp-host-only-{uuid.uuid4().hex[:8]}"
    assert not (root / host_dir.relative_to("/")).exists()
    host_dir.mkdir()
    secret = host_dir / "libc.debug"
    secret.write_text("a host file no target may name\n")
    h = Harness(tmp_path, profiler_bin)
    made = []
    try:
        for d in reversed(link.relative_to(root).parents):
            if not (root / d).exists():
                (root / d).mkdir()
                made.append(root / d)
        link.symlink_to(secret)
        w = h.start_workload(py, "deep", seconds=30)
        watch = OpenWatch(secret)
        r = h.record_pid(w.pid, rate=199, duration=2, extra=["--native"])
        opened = watch.opened()
        r.check_ok()
        assert not opened, f"record --native opened {secret} through {link}"
    finally:
        h.close()
        if link.is_symlink():
            link.unlink()
        for d in reversed(made):
            d.rmdir()
        secret.unlink()
        host_dir.rmdir()


def seq_id(n):
    """The substitution S_, S0_, S1_ ... numbered n = 0, 1, 2 ..."""
    if not n:
        return "S_"
    n -= 1
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    s = ""
    while True:
        s = digits[n % 36] + s
        n //= 36
        if not n:
            return f"S{s}_"


# f(A, B<A, A>, B<B<A, A>, B<A, A>>, ...): each argument is B of the one before, twice,
# by substitution, so each level doubles the demangled name: 2^40 times a few bytes.
DOUBLINGS = 40
EXPLODING = "_Z1f1A1BIS_S_E" + "".join(f"S0_I{seq_id(i + 2)}{seq_id(i + 2)}E"
                                       for i in range(DOUBLINGS))
HOSTILE_SRC = f"""
double hostile_burn(double x) __asm__("{EXPLODING}");
double hostile_burn(double x)
{{
	for (int i = 0; i < 200000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}}
"""
HOSTILE_WORKLOAD = r'''
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
fn = getattr(lib, sys.argv[2])
fn.restype = ctypes.c_double
fn.argtypes = [ctypes.c_double]
open(sys.argv[3], "w").close()
stop = time.monotonic() + float(sys.argv[4])
while time.monotonic() < stop:
    fn(1.0)
'''


def test_a_name_that_demangles_exponentially_stays_mangled(tmp_path, profiler_bin):
    """Samples in a function whose C++ name would demangle to 2^40 repeats: the profile
    is written in its time, small, with the name as the object has it."""
    src = tmp_path / "hostile.c"
    src.write_text(HOSTILE_SRC)
    lib = tmp_path / "libhostile.so"
    p = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, f"building the library failed:\n{p.stderr}"
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE_WORKLOAD)
    ready = tmp_path / "ready"
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.spawn([sys.executable, str(script), str(lib), EXPLODING, str(ready), "30"])
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert w.poll() is None and time.monotonic() < deadline, "the workload did not start"
            time.sleep(0.02)
        r = h.record_pid(w.pid, rate=199, duration=3, extra=["--native"])
        prof = r.check_ok()
    finally:
        h.close()
    size = os.path.getsize(r.out_path)
    assert size < (1 << 20), f"the profile is {size} bytes"
    named = [s for s in prof if any(f.name.startswith(EXPLODING) for f in s.frames)]
    assert named, f"no sample names the function as it is mangled:\n{show(prof)}"
    assert r.stats()["native_demangle_given_up"] == 1, r.stats()
