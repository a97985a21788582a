"""`pybpfprof dump`: every Python thread's stack, from a running process and from a core.

The dumpee workload holds three threads still in known places and writes their stacks
(root first, innermost frame at its sleep/burn line) and native ids to its truth. A
dump must show exactly those stacks, innermost first, whether it reads the live
process, a core that gcore made of it, or the core the kernel writes when it dies.

Two kinds of core because they differ where it matters:
- gcore (gdb) names files as the host sees them (a chroot's files under the chroot
  path). gdb reads each memory region whole and gives up on a region it cannot read
  entirely: glibc 2.42+ (the sid chroot) puts thread-stack guard pages inside the
  stack mapping (MADV_GUARD_INSTALL), so gcore leaves those stacks out, and with them
  the C-stack entry frame every 3.12+ thread's frame chain ends in. Such stacks must
  come out with the right frames, marked incomplete, never passed off as whole.
- the kernel names files as the process saw them (inside its chroot), which only
  --sysroot resolves, and keeps thread stacks. Chroot interpreters get one by
  SIGABRT (the kernel's core_pattern must name a file, not a pipe).
"""

import os
import re
import resource
import shutil
import signal
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from lib.collapsed import Frame, truth_frames
from lib.harness import Harness, Once, OpenWatch, program_headers, wait_asleep
from lib.dump import QUICK, check_dump, parse_native_dump

GCORE_TIMEOUT = 120

EXIT_NOT_PYTHON = 4
EXIT_UNSUPPORTED = 5
EXIT_PRIVILEGES = 6
EXIT_BAD_CORE = 8
EXIT_NO_BINARY = 9

NT_FILE = 0x46494C45


# --------------------------------------------------------------------------------------
# The dump (read by lib/dump.py) against the truth

def check_matches_truth(threads, truth, text, may_be_incomplete=()):
    """Every truth thread is in the dump with exactly its stack. A thread named in
    @may_be_incomplete may instead show only its innermost frames (at least one),
    followed by an [incomplete] line."""
    for key, tid in truth["threads"].items():
        assert tid in threads, f"{key} thread {tid} missing from the dump:\n{text}"
        t = threads[tid]
        want = truth_frames(truth["stacks"][key])
        got = t.root_first()
        if key in may_be_incomplete and t.incomplete is not None:
            want = want[len(want) - len(got):] if got else ("at least one frame",)
        else:
            assert t.incomplete is None, \
                f"{key} thread {tid} incomplete: {t.incomplete}\n{text}"
        assert got == want, (f"{key} thread {tid}: stack differs\n  want (root first): "
                             f"{[str(f) for f in want]}\n  got: {[str(f) for f in got]}")
        # Python's name for it, read from its Thread object: needs the whole stack.
        if t.incomplete is None:
            assert t.name == truth["names"][key], (key, t.name, truth["names"][key], text)


# --------------------------------------------------------------------------------------
# Cores

def gcore(pid, prefix):
    """(core path, gcore's output)."""
    exe = shutil.which("gcore")
    if not exe:
        pytest.fail("gcore not found (Debian package gdb; tools/install-deps.sh test)")
    p = subprocess.run([exe, "-o", str(prefix), str(pid)], capture_output=True, text=True,
                       timeout=GCORE_TIMEOUT, stdin=subprocess.DEVNULL)
    core = Path(f"{prefix}.{pid}")
    if p.returncode != 0 or not core.exists():
        pytest.fail(f"gcore {pid} failed ({p.returncode}):\n{(p.stdout + p.stderr)[-2000:]}")
    return core, p.stdout + p.stderr


def kernel_core(proc, cwd_host, dest):
    """Kills @proc with SIGABRT so that the kernel dumps its core into its working
    directory (@cwd_host on the host), and moves the core to @dest."""
    pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|") or "/" in pattern or "%" in pattern.replace("%p", ""):
        pytest.fail(f"kernel core_pattern {pattern!r}: these tests need a plain file name "
                    f"such as 'core' (cores relative to the dying process's directory)")
    uses_pid = Path("/proc/sys/kernel/core_uses_pid").read_text().strip() == "1"
    name = pattern.replace("%p", str(proc.pid))
    if uses_pid and "%p" not in pattern:
        name += f".{proc.pid}"
    core = Path(cwd_host) / name
    if core.exists():
        core.unlink()
    resource.prlimit(proc.pid, resource.RLIMIT_CORE,
                     (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    proc.send_signal(signal.SIGABRT)
    proc.wait(GCORE_TIMEOUT)
    if not core.exists():
        pytest.fail(f"no kernel core at {core} after SIGABRT (exit {proc.returncode})")
    shutil.move(str(core), str(dest))
    return Path(dest)


def core_paths(core):
    """The paths a core's NT_FILE note names (for assertion messages)."""
    data = Path(core).read_bytes()
    for ptype, off, filesz in program_headers(data):
        pos = off
        while ptype == 4 and pos + 12 <= off + filesz:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            desc = pos + 12 + ((namesz + 3) & ~3)
            if ntype == NT_FILE:
                count, = struct.unpack_from("<Q", data, desc)
                blob = data[desc + 16 + 24 * count:desc + descsz]
                return [n.decode(errors="replace") for n in blob.split(b"\0")[:count]]
            pos = desc + ((descsz + 3) & ~3)
    return []


# --------------------------------------------------------------------------------------
# One dumpee per interpreter: a live dump, its core and the core rewritten kernel-style

@dataclass
class Dumped:
    truth: dict
    live: object            # Run of `dump -p`
    core: Path              # made by gcore
    gcore_lost_stacks: bool  # gcore could not save some thread stacks
    kernel_core: Path       # made by the kernel (gcore's, for the host interpreter)
    exe: str                # the interpreter binary as the target names it
    host_exe: str           # ... and where it is on the host


def dump_workload(tmpdir, profiler, interp):
    h = Harness(tmpdir, profiler)
    try:
        w = h.start_workload(interp, "dumpee", seconds=300)
        # The truth file appears inside Truth.write (its rename); wait for the main
        # thread to be back in the sleep the truth describes.
        wait_asleep(w.pid)
        live = h.run_profiler(["dump", "-p", w.pid], timeout=QUICK)
        core, log = gcore(w.pid, Path(tmpdir) / "dumpee")
        if w.proc.poll() is not None:
            pytest.fail(f"dumpee died while dumped:\n{w.output()}")
        kcore = core
        if interp.root != "/":
            # chroot(1) starts the interpreter in the chroot's root directory.
            kcore = kernel_core(w.proc, interp.root, Path(tmpdir) / "dumpee-kernel.core")
    finally:
        h.close()
    exe = w.truth["executable"]
    return Dumped(w.truth, live, core, "Memory read failed for corefile section" in log,
                  kcore, exe, str(interp.host_path(exe)))


@pytest.fixture(scope="module")
def dumped(py, module_tmp, profiler_bin):
    return Once(lambda: dump_workload(module_tmp / py.id, profiler_bin, py))


def run_dump(harness, *args):
    return harness.run_profiler(["dump"] + [str(a) for a in args], timeout=QUICK)


# --------------------------------------------------------------------------------------
# Live process

def test_dump_live_stacks_match_truth(py, dumped):
    d = dumped.get()
    _, threads = check_dump(d.live)
    check_matches_truth(threads, d.truth, d.live.stdout)


def test_dump_live_header_names_process_and_version(py, dumped):
    d = dumped.get()
    header, _ = check_dump(d.live)
    assert header.startswith(f"Process {d.truth['pid']}: CPython "), header
    assert f" {d.truth['python_version']} " in header, header


def test_dump_live_run_states_from_proc(py, dumped):
    d = dumped.get()
    _, threads = check_dump(d.live)
    tids = d.truth["threads"]
    assert threads[tids["burner"]].state == "on CPU", d.live.stdout
    assert threads[tids["main"]].state == "idle", d.live.stdout
    assert threads[tids["sleeper"]].state == "idle", d.live.stdout


def test_dump_live_gil_holder_is_the_burner(py, dumped):
    d = dumped.get()
    _, threads = check_dump(d.live)
    holders = [tid for tid, t in threads.items() if t.gil]
    assert holders == [d.truth["threads"]["burner"]], d.live.stdout


# --------------------------------------------------------------------------------------
# Core, as gcore wrote it

def core_args(py, d):
    """3.11 needs nothing; a chroot interpreter's core gets its --sysroot."""
    return ["--core", d.core] + ([] if py.root == "/" else ["--sysroot", py.root])


def test_dump_core_stacks_match_truth(py, dumped, harness):
    d = dumped.get()
    run = run_dump(harness, *core_args(py, d))
    header, threads = check_dump(run)
    lost = ("sleeper", "burner") if d.gcore_lost_stacks else ()
    check_matches_truth(threads, d.truth, run.stdout, may_be_incomplete=lost)
    assert header.startswith(f"Core {d.core} of process {d.truth['pid']}: CPython "), header
    assert f" {d.truth['python_version']} " in header, header


def test_dump_kernel_core_stacks_match_truth(py, dumped, harness):
    d = dumped.get()
    args = ["--core", d.kernel_core] + ([] if py.root == "/" else ["--sysroot", py.root])
    run = run_dump(harness, *args)
    _, threads = check_dump(run)
    check_matches_truth(threads, d.truth, run.stdout)


@pytest.mark.parametrize("flag", ["--native", "--native-all"])
def test_dump_kernel_core_native_stacks(py, dumped, harness, flag):
    """--native from the kernel's core (it keeps thread stacks): registers from each
    thread's NT_PRSTATUS, objects from NT_FILE under --sysroot. The Python frames are
    the truth's; the sleepers show libc's nanosleep above them; with --native-all the
    main thread ends at _start."""
    d = dumped.get()
    args = ["--core", d.kernel_core] + ([] if py.root == "/" else ["--sysroot", py.root])
    run = run_dump(harness, *args, flag)
    assert run.rc == 0 and not run.stderr.strip(), run.describe()
    threads = parse_native_dump(run.stdout)
    for key, tid in d.truth["threads"].items():
        t = threads[tid]
        assert t.python() == truth_frames(d.truth["stacks"][key]), run.stdout
        assert t.note is None, f"{key}: {t.note}\n{run.stdout}"
    for key in ("main", "sleeper"):
        above = threads[d.truth["threads"][key]].natives_before_python()
        assert any("nanosleep" in func and obj == "libc.so.6" for func, obj in above), \
            f"{key}: {above}\n{run.stdout}"
    if flag == "--native-all":
        last = threads[d.truth["threads"]["main"]].items[-1]
        assert last[:2] == ("c", "_start"), f"main ends {last}\n{run.stdout}"


def test_dump_core_says_run_state_unknown(py, dumped, harness):
    d = dumped.get()
    run = run_dump(harness, *core_args(py, d))
    header, threads = check_dump(run)
    assert "does not record which threads were on a CPU" in header, header
    states = {t.state for t in threads.values()}
    assert states == {"on-CPU state unknown"}, run.stdout


@pytest.mark.parametrize("which", ["gcore", "kernel"])
def test_dump_core_gil_holder_is_the_burner(py, dumped, harness, which):
    d = dumped.get()
    core = d.core if which == "gcore" else d.kernel_core
    run = run_dump(harness, "--core", core, "--sysroot", py.root)
    _, threads = check_dump(run)
    holders = [tid for tid, t in threads.items() if t.gil]
    assert holders == [d.truth["threads"]["burner"]], run.stdout


def test_dump_core_with_exe(py, dumped, harness):
    d = dumped.get()
    run = run_dump(harness, "--core", d.kernel_core, "--exe", d.host_exe)
    _, threads = check_dump(run)
    check_matches_truth(threads, d.truth, run.stdout)


# --------------------------------------------------------------------------------------
# Core with the target's own paths (kernel-style), resolved only through --sysroot

def sysroot_for(py, d, tmp_path):
    """The interpreter's root: the chroot, or for the host interpreter a directory
    holding just a link to its binary at the path the core names. Either way the
    kernel core names the binary relative to it."""
    if py.root != "/":
        return py.root
    root = tmp_path / "sysroot"
    if py.prefix:
        # libpython and the extension modules live beside the binary.
        link = root / py.prefix.lstrip("/")
        link.parent.mkdir(parents=True)
        link.symlink_to(py.prefix)
        return str(root)
    link = root / d.exe.lstrip("/")
    link.parent.mkdir(parents=True)
    link.symlink_to(d.host_exe)
    return str(root)


def test_dump_core_resolves_paths_under_sysroot(py, dumped, harness, tmp_path):
    d = dumped.get()
    run = run_dump(harness, "--core", d.kernel_core, "--sysroot", sysroot_for(py, d, tmp_path))
    _, threads = check_dump(run)
    check_matches_truth(threads, d.truth, run.stdout)


def test_dump_core_binary_missing_under_sysroot_exits_9(py, dumped, harness, tmp_path):
    d = dumped.get()
    empty = tmp_path / "empty-root"
    empty.mkdir()
    run = run_dump(harness, "--core", d.kernel_core, "--sysroot", empty)
    msg = run.check_error(EXIT_NO_BINARY)
    want = f"binary not found: {empty}{d.exe}"
    assert msg.startswith(f"pybpfprof: {want} ("), f"{msg!r} does not start with {want!r}"
    assert "--exe" in msg, msg


def test_dump_core_without_options_looks_where_the_core_says(py, dumped, harness):
    """The host interpreter's core names /usr/bin/python3.11, which is right here; a
    chroot interpreter's kernel-style core names a path the host lacks."""
    d = dumped.get()
    run = run_dump(harness, "--core", d.kernel_core)
    if py.root == "/":
        _, threads = check_dump(run)
        check_matches_truth(threads, d.truth, run.stdout)
        return
    msg = run.check_error(EXIT_NO_BINARY)
    assert f"binary not found: {d.exe} " in msg, \
        f"{msg!r} (core names {core_paths(d.kernel_core)[:3]})"


def test_dump_core_wrong_exe_exits_9(py, dumped, harness):
    """A wrong --exe is refused where the binary holds the runtime; with a shared
    libpython the binary is not needed, and the dump goes on from libpython."""
    d = dumped.get()
    run = run_dump(harness, "--core", d.kernel_core, "--exe", "/bin/true")
    if py.prefix:
        _, threads = check_dump(run)
        check_matches_truth(threads, d.truth, run.stdout)
        return
    msg = run.check_error(EXIT_NO_BINARY)
    assert "/bin/true" in msg and "--exe" in msg, msg


# --------------------------------------------------------------------------------------
# Bad input (one interpreter is enough)

@pytest.fixture(scope="module")
def core311(py311, module_tmp, profiler_bin):
    def make():
        h = Harness(module_tmp / "core311", None)
        try:
            p = h.spawn(py311.argv + ["-c", "import time; time.sleep(120)"])
            wait_asleep(p.pid)
            return gcore(p.pid, module_tmp / "core311" / "sleep311")[0]
        finally:
            h.close()
    return Once(make)


def test_dump_truncated_core_exits_8(harness, core311, tmp_path):
    core = core311.get()
    cut = tmp_path / "truncated.core"
    data = core.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    msg = run_dump(harness, "--core", cut).check_error(EXIT_BAD_CORE)
    assert "truncated" in msg, msg


def test_dump_core_cut_inside_headers_exits_8(harness, core311, tmp_path):
    cut = tmp_path / "headers.core"
    cut.write_bytes(core311.get().read_bytes()[:100])
    run_dump(harness, "--core", cut).check_error(EXIT_BAD_CORE)


@pytest.mark.parametrize("kind", ["text", "empty", "elf-executable", "missing"])
def test_dump_not_a_core_exits_8(harness, tmp_path, kind):
    path = tmp_path / f"{kind}.core"
    if kind == "text":
        path.write_text("this is not a core\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "elf-executable":
        path = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else "/bin/true"
    msg = run_dump(harness, "--core", path).check_error(EXIT_BAD_CORE)
    assert str(path) in msg, msg


def core_note(ntype, desc, name=b"CORE"):
    nm = name + b"\0"
    nm += b"\0" * (-len(nm) % 4)
    desc += b"\0" * (-len(desc) % 4)
    return struct.pack("<III", len(name) + 1, len(desc), ntype) + nm + desc


def core_with_files(path, names, thread=False):
    """An x86-64 ELF core holding an NT_FILE note that maps each of @names (and with
    @thread, one thread's NT_PRSTATUS, so that it is read as far as its files)."""
    n = len(names)
    desc = struct.pack("<QQ", n, 4096) + b"".join(
        struct.pack("<QQQ", 0x10000000 + 0x2000 * i, 0x10001000 + 0x2000 * i, 0)
        for i in range(n)) + b"".join(name.encode() + b"\0" for name in names)
    prstatus = bytearray(336)
    struct.pack_into("<i", prstatus, 32, 4242)     # pr_pid
    notes = (core_note(1, bytes(prstatus)) if thread else b"") + core_note(NT_FILE, desc)
    ehdr = (b"\x7fELF\x02\x01\x01" + b"\0" * 9 +
            struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, 1, 64, 0, 0))
    phdr = struct.pack("<IIQQQQQQ", 4, 0, 64 + 56, 0, 0, len(notes), 0, 4)
    Path(path).write_bytes(ehdr + phdr + notes)
    return path


def secret_file(d, mode=0o600):
    """A file named like a libpython that only root may read, in a directory only root
    may enter."""
    d.mkdir(mode=0o700)
    f = d / "libpython3.11.so.1.0"
    f.write_text("not for the core's owner\n")
    f.chmod(mode)
    return f


def test_dump_core_opens_what_it_names_with_its_owners_rights(harness, tmp_path):
    """A core owned by nobody that names a file only root may read: dump, run as root,
    does not open it, and says why it could not."""
    secret = secret_file(tmp_path / "secret")
    core = core_with_files(tmp_path / "nobody.core", [str(secret)], thread=True)
    os.chown(core, 65534, 65534)
    watch = OpenWatch(secret)
    p = subprocess.run(harness.profiler_argv(["dump", "--core", core]), capture_output=True,
                       text=True, timeout=60)
    assert not watch.opened(), f"dump opened {secret} for a core of uid 65534:\n{p.stderr}"
    assert p.returncode == EXIT_PRIVILEGES and "permission denied" in p.stderr, \
        f"exit {p.returncode}:\n{p.stderr}"


def test_dump_core_names_cannot_climb_out_of_the_sysroot(harness, tmp_path):
    """A core of root's naming '/../outside/libpython...' under --sysroot S: nothing
    outside S is opened."""
    sysroot = tmp_path / "sysroot"
    sysroot.mkdir()
    outside = secret_file(tmp_path / "outside", mode=0o644)
    core = core_with_files(tmp_path / "climb.core", ["/../outside/libpython3.11.so.1.0"],
                           thread=True)
    watch = OpenWatch(outside)
    p = subprocess.run(harness.profiler_argv(["dump", "--core", core, "--sysroot", sysroot]),
                       capture_output=True, text=True, timeout=60)
    assert not watch.opened(), f"dump opened {outside}, outside --sysroot:\n{p.stderr}"
    assert p.returncode > 0, f"exit {p.returncode}:\n{p.stderr}"


# Files a core names: looked up by name once each (it was a scan of those seen so far,
# which at this count took minutes of CPU).
MANY_FILES = 300000
MANY_FILES_CPU_S = 30


def test_dump_core_naming_many_files_costs_no_more_than_reading_them(harness, tmp_path):
    core = core_with_files(tmp_path / "many.core", [f"/lib/f{i:07d}.so" for i in range(MANY_FILES)])

    def cap_cpu():
        resource.setrlimit(resource.RLIMIT_CPU, (MANY_FILES_CPU_S, MANY_FILES_CPU_S))

    p = subprocess.run(harness.profiler_argv(["dump", "--core", core]), capture_output=True,
                       text=True, timeout=300, preexec_fn=cap_cpu)
    assert p.returncode in (EXIT_NOT_PYTHON, EXIT_BAD_CORE), \
        f"exit {p.returncode} (a signal if negative):\n{p.stderr[-2000:]}"


def test_dump_core_of_non_python_process_exits_4(harness, tmp_path):
    sleeper = harness.spawn(["sleep", "120"])
    wait_asleep(sleeper.pid)
    core, _ = gcore(sleeper.pid, tmp_path / "sleep")
    msg = run_dump(harness, "--core", core).check_error(EXIT_NOT_PYTHON)
    assert "not of a CPython process" in msg, msg


def test_dump_core_of_deleted_binary_exits_9_and_exe_recovers(harness, py311, tmp_path):
    exe = tmp_path / "bin" / "python3.11"
    exe.parent.mkdir()
    shutil.copyfile("/usr/bin/python3.11", exe)
    exe.chmod(0o755)
    p = harness.spawn([str(exe), "-c", "import time; time.sleep(120)"])
    wait_asleep(p.pid)
    core, _ = gcore(p.pid, tmp_path / "deleted")
    exe.unlink()
    msg = run_dump(harness, "--core", core).check_error(EXIT_NO_BINARY)
    assert msg.startswith(f"pybpfprof: binary not found: {exe} ("), msg
    run = run_dump(harness, "--core", core, "--exe", "/usr/bin/python3.11")
    _, threads = check_dump(run)
    assert threads[p.pid].frames == [Frame("<module>", "<string>", 1)], run.stdout


def test_dump_core_of_unsupported_version_exits_5(harness, tmp_path):
    from lib.paths import FIXTURES
    exe = tmp_path / "python3.10"
    cc = subprocess.run(["gcc", "-O0", "-rdynamic", "-o", str(exe),
                         str(FIXTURES / "fake_python.c")], capture_output=True, text=True)
    assert cc.returncode == 0, f"gcc failed: {cc.stderr}"
    fake = harness.spawn([str(exe), "120"])
    wait_asleep(fake.pid)
    core, _ = gcore(fake.pid, tmp_path / "fake")
    msg = run_dump(harness, "--core", core).check_error(EXIT_UNSUPPORTED)
    assert "3.11" in msg, msg


def test_dump_live_non_python_exits_4(harness):
    sleeper = harness.spawn(["sleep", "30"])
    wait_asleep(sleeper.pid)
    run_dump(harness, "-p", sleeper.pid).check_error(EXIT_NOT_PYTHON)


def test_dump_live_no_such_pid_exits_3(harness):
    p = subprocess.Popen(["true"])
    p.wait()
    run_dump(harness, "-p", p.pid).check_error(3)


@pytest.mark.parametrize("args", [
    [],
    ["-p", "1", "--core", "/tmp/core"],
    ["-p", "1", "--exe", "/usr/bin/python3.11"],
    ["--core"],
    ["--core", "/tmp/core", "extra"],
], ids=["no-target", "pid-and-core", "exe-without-core", "core-without-value", "extra-arg"])
def test_dump_usage_error_exits_2(harness, args):
    run_dump(harness, *args).check_error(2)


def test_help_documents_dump_exit_codes(profiler_bin):
    for argv in ([profiler_bin, "--help"], [profiler_bin, "dump", "--help"]):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=QUICK).stdout
        for code in ("8", "9"):
            assert re.search(rf"(^|\s){code}\s", out), f"{argv}: exit {code} undocumented"
        assert "--core" in out and "dump" in out


def test_dump_is_clean_under_sanitizers(py, dumped, tmp_path):
    """dump of both cores, and of a core cut short, with the sanitizer build."""
    from lib.units import SAN_ENV, SAN_REPORT, san_binary
    d = dumped.get()
    cut = tmp_path / "cut.core"
    cut.write_bytes(d.kernel_core.read_bytes()[:1 << 20])
    for core, rc in ((d.core, 0), (d.kernel_core, 0), (cut, EXIT_BAD_CORE)):
        argv = [san_binary("pybpfprof"), "dump", "--core", str(core), "--sysroot", py.root]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=QUICK, env=SAN_ENV)
        report = [m for m in SAN_REPORT if m in p.stderr]
        assert not report, f"{' '.join(argv)}: sanitizer report:\n{p.stderr[-4000:]}"
        assert p.returncode == rc, f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr[-2000:]}"
