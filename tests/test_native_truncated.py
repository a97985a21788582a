"""A target that truncates a library it has mapped, while `record --native` profiles it,
cannot kill the profiler.

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
import subprocess
import sys
import time

import pytest

from conftest import Harness

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
