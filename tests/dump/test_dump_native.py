"""`pybpfprof dump --native`: each Python thread's C frames between its Python frames,
read while the process is held for an instant, on every version.

- dumpee.py (three threads held in known places): the Python frames of each thread are
  exactly the truth's, as without --native; the sleeping threads show libc's
  nanosleep above their innermost Python frame (the burner, in the eval loop, shows
  none: the interpreter's own frames are left out); every C stack is whole (no note);
  with --native-all the main thread ends at _start and the others in libc.
- native_calls.py --qsort (ctypes calling libc's qsort with a Python comparator): a
  dump that catches compare() reads compare, then native frames with libc's qsort
  among them, then sorter and the rest of the truth's stack, in that order.
- The target is let go: no thread is left traced or stopped, the burner goes on
  burning, and the qsort workload ends on its own with status 0.
- A process another tracer holds: exit 6 with a one-line reason that names the
  tracer; a plain dump still works. (Cores: test_dump.py, with its cores.)
"""

import os
import subprocess
import sys
import time

import pytest

from lib.collapsed import truth_frames
from lib.harness import Harness, Once, seize_by_another_tracer, wait_asleep
from lib.dump import QUICK, parse_native_dump

EXIT_PRIVILEGES = 6
QSORT_TRIES = 40


def dump(h, pid, *extra):
    run = h.run_profiler(["dump", "-p", pid, *extra], timeout=QUICK)
    assert run.rc == 0 and not run.stderr.strip(), run.describe()
    return parse_native_dump(run.stdout), run.stdout


def task_states(pid):
    """{tid: (State letter, TracerPid)} of every thread of @pid."""
    out = {}
    for line in subprocess.run(["sh", "-c", f"grep -H -E '^(State|TracerPid):' "
                                f"/proc/{pid}/task/*/status"], capture_output=True,
                               text=True).stdout.splitlines():
        path, key, value = line.split(":", 2)
        tid = int(path.split("/")[4])
        st, tracer = out.get(tid, ("?", -1))
        if key == "State":
            st = value.split()[0]
        else:
            tracer = int(value)
        out[tid] = (st, tracer)
    return out


def thread_cpu_ticks(pid, tid):
    fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def dumpee_run(tmpdir, profiler, interp):
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(interp, "dumpee", seconds=300)
        wait_asleep(w.pid)
        plain, plain_text = dump(h, w.pid, "--native")
        every, every_text = dump(h, w.pid, "--native-all")
        states = task_states(w.pid)
        burner = w.truth["threads"]["burner"]
        before = thread_cpu_ticks(w.pid, burner)
        time.sleep(0.5)
        burnt = thread_cpu_ticks(w.pid, burner) - before
        alive = w.proc.poll() is None
    finally:
        h.close()
    return w.truth, (plain, plain_text), (every, every_text), states, burnt, alive


@pytest.fixture(scope="module")
def dumpee(py, module_tmp, profiler_bin):
    return Once(lambda: dumpee_run(module_tmp / f"dn-{py.id}", profiler_bin, py))


def on_cpu_cut(key, t):
    """The burner is held wherever it runs; an instruction its code's CFI does not
    describe (rare) may stop its C stack short, which must then be said, never hidden.
    The sleepers are held in a system call, where every stack is whole."""
    return key == "burner" and t.note.startswith("the C stack ends")


def test_dump_native_python_frames_are_the_truth(py, dumpee):
    truth, (threads, text), _, _, _, _ = dumpee.get()
    for key, tid in truth["threads"].items():
        assert tid in threads, f"{key} thread {tid} missing:\n{text}"
        t = threads[tid]
        assert t.python() == truth_frames(truth["stacks"][key]), \
            f"{key}: {[str(f) for f in t.python()]}\n{text}"
        assert t.note is None or on_cpu_cut(key, t), f"{key}: {t.note}\n{text}"
    assert threads[truth["threads"]["burner"]].state == "on CPU", text
    assert threads[truth["threads"]["main"]].state == "idle", text


def test_dump_native_sleepers_show_libc_nanosleep(py, dumpee):
    truth, (threads, text), _, _, _, _ = dumpee.get()
    for key in ("main", "sleeper"):
        above = threads[truth["threads"][key]].natives_before_python()
        assert any("nanosleep" in func and obj == "libc.so.6" for func, obj in above), \
            f"{key}: {above}\n{text}"


def test_dump_native_all_ends_at_thread_start(py, dumpee):
    truth, _, (threads, text), _, _, _ = dumpee.get()
    for key, tid in truth["threads"].items():
        t = threads[tid]
        assert t.python() == truth_frames(truth["stacks"][key]), text
        if t.note is not None:
            assert on_cpu_cut(key, t), f"{key}: {t.note}\n{text}"
            continue
        # Other threads start in libc (start_thread, clone3: named unless libc is
        # stripped, as sid's is).
        last = t.items[-1]
        ok = last[1] == "_start" if key == "main" else \
            "libc.so.6" in (last[1].split("+")[0], last[2])
        assert last[0] == "c" and ok, \
            f"{key}: ends {last}\n{text}"


def test_dump_native_lets_the_target_go(py, dumpee):
    _, _, _, states, burnt, alive = dumpee.get()
    assert alive, "the dumpee died"
    held = {tid: s for tid, s in states.items() if s[0] in "tT" or s[1] != 0}
    assert not held, f"threads left stopped or traced: {held}"
    assert burnt > 0, "the burner did not burn after the dumps"


def test_dump_native_qsort_reads_python_libc_python(py, harness):
    # Long enough for every dump on a loaded machine: the workload is ended by the test
    # once they are done, not by its clock in the middle of one.
    w = harness.start_workload(py, "native_calls", "--mode", "qsort", seconds=600, wait=True)
    want = truth_frames(w.truth["stacks"]["compare"])
    # Every dump, not only the first in compare(): the process is held, so none may
    # come out incomplete (dump() refuses such a line), wherever it was caught.
    seen, texts = None, []
    for _ in range(QSORT_TRIES):
        threads, text = dump(harness, w.pid, "--native")
        t = threads[w.pid]
        py_frames = t.python()
        if not seen and py_frames and py_frames[-1].name == "compare":
            seen, seen_text = t, text
        texts.append(text)
    assert seen, f"no dump caught compare() in {QSORT_TRIES}:\n{texts[-1]}"
    text = seen_text
    got = seen.python()
    assert tuple(f.name for f in got) == tuple(f.name for f in want), \
        f"{[str(f) for f in got]} want {[str(f) for f in want]}\n{text}"
    i_cmp = next(i for i, it in enumerate(seen.items) if it[0] == "py")
    i_sorter = next(i for i, it in enumerate(seen.items)
                    if it[0] == "py" and it[1].name == "sorter")
    between = seen.items[i_cmp + 1:i_sorter]
    assert all(it[0] == "c" for it in between) and \
        any(it[1].startswith("qsort") and it[2] == "libc.so.6" for it in between), \
        f"between compare and sorter: {between}\n{text}"
    assert seen.note is None, text
    assert w.proc.poll() is None, f"the workload ended during the dumps:\n{w.output()}"
    w.proc.kill()
    w.proc.wait(60)


def test_dump_native_of_a_traced_process_exits_6(py311, harness):
    w = harness.start_workload(py311, "dumpee", seconds=300, wait=True)
    tracer = seize_by_another_tracer(harness, w.pid)
    run = harness.run_profiler(["dump", "-p", w.pid, "--native"], timeout=QUICK)
    assert run.rc == EXIT_PRIVILEGES, run.describe()
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and f"traced by process {tracer.pid}" in lines[0], run.describe()
    assert not run.stdout.strip(), run.describe()
    threads, _ = dump(harness, w.pid)
    assert w.truth["threads"]["main"] in threads



DEEP_THREADS = 160
DEEP_BYTES = 900 << 10        # C stack each thread holds while it sleeps
DEEP_SRC = r"""
#include <alloca.h>
#include <string.h>
#include <unistd.h>

void deep_wait(unsigned int seconds)
{
	volatile char *p = alloca(DEEP_BYTES);

	memset((char *)p, 1, DEEP_BYTES);
	sleep(seconds);
	p[0] = 0;
}
"""
# Runs argv[2:] and writes its peak RSS (KiB) to argv[1]; exits with its status.
PEAK_OF = r"""
import os, sys
pid = os.fork()
if not pid:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
DEEP_WORKLOAD = r"""
import ctypes, sys, threading, time
lib = ctypes.CDLL(sys.argv[1])
threading.stack_size(4 << 20)
for _ in range(int(sys.argv[2])):
    threading.Thread(target=lib.deep_wait, args=(600,), daemon=True).start()
time.sleep(600)
"""


def test_dump_native_holds_all_stack_copies_to_its_budget(tmp_path, profiler_bin):
    """160 threads each sleeping under 900 KiB of C stack: the copies of all of them
    together stop at DUMP_NATIVE_STACKS (64 MiB). The threads past it are still listed
    and say where their C stack ends; the dump's own memory stays well under the sum."""
    src = tmp_path / "deep.c"
    src.write_text(DEEP_SRC)
    lib = tmp_path / "libdeep.so"
    p = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", f"-DDEEP_BYTES={DEEP_BYTES}",
                        "-o", str(lib), str(src)], capture_output=True, text=True)
    assert p.returncode == 0, f"building the library failed:\n{p.stderr}"
    script = tmp_path / "deep.py"
    script.write_text(DEEP_WORKLOAD)
    h = Harness(tmp_path, profiler_bin)
    try:
        w = h.spawn([sys.executable, str(script), str(lib), str(DEEP_THREADS)])
        deadline = time.monotonic() + 60
        while len(os.listdir(f"/proc/{w.pid}/task")) < DEEP_THREADS + 1:
            assert w.poll() is None and time.monotonic() < deadline, "the threads did not start"
            time.sleep(0.05)
        for tid in os.listdir(f"/proc/{w.pid}/task"):
            wait_asleep(w.pid, int(tid))
        # The dump's peak memory, as its own parent sees it: a child counts its
        # parent's pages until it execs, so it is started by a small process, not
        # by the test's.
        peak_file = tmp_path / "peak"
        outs = [tmp_path / "dump.out", tmp_path / "dump.err"]
        with open(outs[0], "w") as fo, open(outs[1], "w") as fe:
            p = subprocess.run([sys.executable, "-c", PEAK_OF, str(peak_file)] +
                               h.profiler_argv(["dump", "-p", str(w.pid), "--native"]),
                               stdout=fo, stderr=fe, timeout=QUICK)
    finally:
        h.close()
    out, err = (f.read_text() for f in outs)
    assert p.returncode == 0 and not err.strip(), f"exit {p.returncode}: {err}"
    peak = int(peak_file.read_text()) << 10
    threads = parse_native_dump(out)
    assert len(threads) == DEEP_THREADS + 1, out[:2000]
    others = [t for t in threads.values() if t.tid != w.pid]
    whole = [t for t in others if t.note is None and ("c", "deep_wait", "libdeep.so") in t.items]
    cut = [t for t in others if t not in whole]
    # Each whole copy holds a little more than DEEP_BYTES, and the main thread's goes
    # first: as many as fit in the budget, less one or two.
    fit = (64 << 20) // DEEP_BYTES
    assert fit - 2 <= len(whole) <= fit, (len(whole), len(cut), out[:3000])
    assert all(t.note and t.note.startswith("the C stack ends here") for t in cut), \
        [t.note for t in cut]
    # The copies alone, uncapped, would be 140 MiB; the rest of the dump takes about 25.
    assert peak < (64 + 64) << 20, f"dump --native peaked at {peak >> 20} MiB"
