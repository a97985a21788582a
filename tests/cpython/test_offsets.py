# SPDX-License-Identifier: GPL-2.0-only
"""Proves user/cpython/py_offsets.c against real CPython headers and live interpreters.

* test_offsets_unit: the host-only negative tests (tests/unit/test_offsets.c).
* test_readers_stay_inside_their_copies: the readers of copied structs against
  offsets that point outside the copies (tests/unit/test_field_bounds.c).
* test_offsets_warning_free: py_offsets.c and the unit test build with -Werror.
* test_offsets_match_headers: tests/unit/offsets_check.c, built once per version
  against that version's internal headers and libpython, compares every field that
  py_offsets.c returns with offsetof()/enum values/sizes. 3.13+ parse the real
  _Py_DebugOffsets of the checker's own process; those binaries are built on the
  host and run inside the Debian sid chroot that tools/test-interpreters.sh prepares.
* test_offsets_live_walk: each interpreter walks its own threads and frames through
  raw memory with the offsets (ctypes), the way the BPF program will, and compares
  with what sys._getframe() and the code objects say.

A missing interpreter, header set or library is a failure, never a skip.
"""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from lib import paths

REPO = str(paths.REPO)
OFFSETS_C = os.path.join(REPO, "user", "cpython", "py_offsets.c")
CHECK_C = os.path.join(REPO, "tests", "unit", "offsets_check.c")
UNIT_C = os.path.join(REPO, "tests", "unit", "test_offsets.c")
# user/ on the include path: its files name their headers by layer ("cpython/py_offsets.h").
CFLAGS = ["-std=gnu11", "-Wall", "-Wextra", "-O2", "-I" + os.path.join(REPO, "user")]
TRIPLET = "x86_64-linux-gnu"

from lib.interpreters import PY312_HOME, VERSIONS as MATRIX, make_interp

# 3.13 and later, and their headers, are in the sid chroot, which needs root.
pytestmark = pytest.mark.root

# 3.12 is the machine image's pyenv build, where there is one (see conftest).
HOST_VERSIONS = ["3.11"] + (["3.12"] if "3.12" in MATRIX else [])
CHROOT_VERSIONS = ["3.13", "3.14", "3.15"]

# What the bottom of a thread's frame chain is owned by (previous == NULL there).
BOTTOM_OWNER = {
    "3.11": "thread",        # the outermost Python frame itself
    "3.12": "cstack",        # a shim frame for each C -> Python entry
    "3.13": "cstack",
    "3.14": "interpreter",   # an entry frame for each C -> Python entry
    "3.15": "interpreter",   # _PyThreadStateImpl.base_frame, tstate->base_frame
}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def need(path, what):
    if not os.path.exists(path):
        pytest.fail("%s missing: %s" % (what, path))


@pytest.fixture(scope="session")
def chroot_root():
    if os.geteuid() != 0:
        pytest.fail("running 3.13+ checks needs chroot, hence root")
    r = run(["bash", os.path.join(REPO, "tools", "test-interpreters.sh")])
    if r.returncode != 0:
        pytest.fail("tools/test-interpreters.sh failed:\n" + r.stderr[-3000:])
    root = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    if not root or not os.path.isdir(root):
        pytest.fail("tools/test-interpreters.sh printed no chroot path: %r" % r.stdout)
    return root


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("offsets-build"))


@pytest.fixture(scope="session")
def chroot_dir(chroot_root):
    """A scratch directory inside the chroot, as (host path, path seen inside)."""
    host = tempfile.mkdtemp(prefix="pbp-offsets-", dir=os.path.join(chroot_root, "tmp"))
    os.chmod(host, 0o755)
    yield host, "/tmp/" + os.path.basename(host)
    shutil.rmtree(host, ignore_errors=True)


def build_cmd_pyenv(version, out):
    inc = os.path.join(PY312_HOME, "include", "python" + version)
    lib = os.path.join(PY312_HOME, "lib")
    need(os.path.join(inc, "internal", "pycore_frame.h"), "python%s internal headers" % version)
    return ["gcc"] + CFLAGS + [
        "-DPy_BUILD_CORE", "-I" + inc, CHECK_C, OFFSETS_C, "-o", out, "-L" + lib,
        "-Wl,-rpath," + lib, "-lpython" + version]


def build_cmd_host(version, out):
    if version == "3.12":
        return build_cmd_pyenv(version, out)
    inc = "/usr/include/python" + version
    need(os.path.join(inc, "internal", "pycore_frame.h"), "python%s internal headers" % version)
    need(os.path.join("/usr/include", TRIPLET, "python" + version, "pyconfig.h"),
         "python%s pyconfig.h" % version)
    need(os.path.join("/usr/lib", TRIPLET, "libpython%s.so" % version),
         "libpython%s.so (libpython%s-dev)" % (version, version))
    return ["gcc"] + CFLAGS + [
        "-DPy_BUILD_CORE", "-I" + inc, "-I" + os.path.join("/usr/include", TRIPLET, "python" + version),
        CHECK_C, OFFSETS_C, "-o", out, "-lpython" + version]


def build_cmd_chroot(root, version, out):
    inc_root = os.path.join(root, "usr", "include")
    inc = os.path.join(inc_root, "python" + version)
    libdir = os.path.join(root, "usr", "lib", TRIPLET)
    need(os.path.join(inc, "internal", "pycore_frame.h"), "python%s internal headers" % version)
    # python3.X/pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>; -idirafter
    # finds that in the chroot without shadowing the host's own libc headers.
    need(os.path.join(inc_root, TRIPLET, "python" + version, "pyconfig.h"),
         "python%s pyconfig.h" % version)
    need(os.path.join(libdir, "libpython%s.so.1.0" % version),
         "libpython%s.so.1.0 (libpython%s-dev)" % (version, version))
    # libpython's own dependencies are the chroot's (newer glibc, expat): leave them
    # to the dynamic linker inside the chroot.
    return ["gcc"] + CFLAGS + [
        "-DPy_BUILD_CORE", "-I" + inc, "-idirafter", inc_root, CHECK_C, OFFSETS_C,
        "-o", out, "-L" + libdir, "-l:libpython%s.so.1.0" % version,
        "-Wl,--allow-shlib-undefined"]


def compile_or_fail(cmd):
    r = run(cmd)
    if r.returncode != 0:
        pytest.fail("build failed: %s\n%s" % (" ".join(cmd), r.stderr[-4000:]))
    return r


def checker(version, build_dir, chroot_root=None, chroot_dir=None):
    """Builds offsets_check for @version; returns the command line that runs it."""
    name = "offsets_check_" + version.replace(".", "")
    out = os.path.join(build_dir, name)
    if version in HOST_VERSIONS:
        compile_or_fail(build_cmd_host(version, out))
        return [out]
    compile_or_fail(build_cmd_chroot(chroot_root, version, out))
    host_dir, inner_dir = chroot_dir
    shutil.copy2(out, os.path.join(host_dir, name))
    return ["chroot", chroot_root, inner_dir + "/" + name]


def interpreter(version, chroot_root):
    if version == "3.12":
        py = make_interp(version, (None, None))
        if py.error:
            pytest.fail(py.error)
        return py.argv
    if version in HOST_VERSIONS:
        path = "/usr/bin/python" + version
        need(path, "interpreter python%s" % version)
        return [path]
    need(os.path.join(chroot_root, "usr", "bin", "python" + version),
         "interpreter python%s in the chroot" % version)
    return ["chroot", chroot_root, "/usr/bin/python" + version]


def test_offsets_unit(build_dir):
    out = os.path.join(build_dir, "test_offsets")
    compile_or_fail(["gcc"] + CFLAGS + ["-Werror", UNIT_C, OFFSETS_C, "-o", out])
    r = run([out])
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 failed" in r.stdout, r.stdout


def test_readers_stay_inside_their_copies():
    """tests/unit/test_field_bounds.c: the code-object, frame and thread-state readers
    refuse offsets that point past the bytes they copied (test_sanitizers.py runs it
    under ASan too, where an over-read is reported rather than merely misread)."""
    r = run(["make", "-C", REPO, "build/tests/test_field_bounds"])
    assert r.returncode == 0, r.stdout + r.stderr
    r = run([os.path.join(REPO, "build", "tests", "test_field_bounds")])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test_field_bounds: all passed" in r.stdout, r.stdout


def test_offsets_warning_free(build_dir):
    """gcc always; clang too where the machine has it (the unit test is compiled
    with gcc -Werror above as well)."""
    for cc in ["gcc"] + (["clang"] if shutil.which("clang") else []):
        r = run([cc] + CFLAGS + ["-Werror", "-c", OFFSETS_C, "-o",
                                 os.path.join(build_dir, "offsets-%s.o" % cc)])
        assert r.returncode == 0, "%s warns on py_offsets.c:\n%s" % (cc, r.stderr)


@pytest.fixture(scope="session")
def offsets_of(build_dir, request):
    """version -> (checker command, parsed "--print" fields)."""
    cache = {}

    def get(version):
        if version not in cache:
            # tools/test-interpreters.sh also installs the host's python3.11
            root = request.getfixturevalue("chroot_root")
            cdir = None
            if version not in HOST_VERSIONS:
                cdir = request.getfixturevalue("chroot_dir")
            cmd = checker(version, build_dir, root, cdir)
            r = run(cmd + ["--print"])
            fields = {}
            for line in r.stdout.splitlines():
                if line.startswith("field "):
                    _, name, value = line.split()
                    fields[name] = int(value)
            cache[version] = (cmd, r, fields)
        return cache[version]
    return get


@pytest.mark.parametrize("version", HOST_VERSIONS + CHROOT_VERSIONS)
def test_offsets_match_headers(version, offsets_of):
    cmd, r, fields = offsets_of(version)
    assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr)
    assert " 0 mismatches" in r.stdout, r.stdout
    assert "offsets_check %s." % version in r.stdout, r.stdout
    assert fields, "no fields printed"


# Runs inside the interpreter under test: argv[1] the offsets as JSON, argv[2] the
# owner expected at the bottom of every thread's frame chain.
WALKER = r'''
import ctypes, json, sys, threading, types

O = json.loads(sys.argv[1])
BOTTOM = sys.argv[2]
NONE = (1 << 64) - 1
CODE_TYPE = id(types.CodeType)
u64 = lambda a: ctypes.c_uint64.from_address(a).value
u32 = lambda a: ctypes.c_uint32.from_address(a).value
u8 = lambda a: ctypes.c_uint8.from_address(a).value
i32 = lambda a: ctypes.c_int32.from_address(a).value
api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
RUNTIME = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))
OWNERS = {O["owner_" + k]: k for k in
          ("thread", "generator", "frame_object", "cstack", "interpreter")
          if O["owner_" + k] != 0xff}
seen = {"generator": 0, "kinds": set(), "bottoms": set(), "threads": 0}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def pystr(a):
    st = u32(a + O["unicode_state"])
    kind = (st >> O["unicode_kind_shift"]) & 7
    check((st >> O["unicode_compact_bit"]) & 1, "str at %#x not compact" % a)
    ascii_ = (st >> O["unicode_ascii_bit"]) & 1
    data = a + (O["unicode_ascii_data"] if ascii_ else O["unicode_compact_data"])
    raw = ctypes.string_at(data, u64(a + O["unicode_length"]) * kind)
    seen["kinds"].add("ascii" if ascii_ else kind)
    return raw.decode({1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind])


def pybytes(a):
    return ctypes.string_at(a + O["bytes_sval"], u64(a + O["bytes_size"]))


def line_of(co, idx):
    for start, end, line in co.co_lines():
        if start <= 2 * idx < end:
            return line
    return None


def raw_chain(ts):
    if O["ts_cframe"] != NONE:
        f = u64(u64(ts + O["ts_cframe"]) + O["cframe_current_frame"])
    else:
        f = u64(ts + O["ts_current_frame"])
    chain = []
    while f:
        code = u64(f + O["fr_code"])
        if O["executable_tagged"]:
            code &= ~3
        chain.append((f, u8(f + O["fr_owner"]), code, u64(f + O["fr_instr"])))
        f = u64(f + O["fr_previous"])
    return chain


def snapshot(where):
    pyframes = []
    fr = sys._getframe(0)
    while fr:
        pyframes.append(fr)
        fr = fr.f_back
    ts = api.PyThreadState_Get()
    verify(where, ts, raw_chain(ts), pyframes)


def stack_mapping(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= addr < hi:
                return line.split()[5] if len(line.split()) > 5 else ""
    return None


def check_activations(where, ts, chain):
    """What user/decode/decode_runs.c relies on: each activation of the eval loop is marked
    on the C stack, inner ones lower. 3.11: frames with is_entry end the runs, and the
    _PyCFrame chain from tstate->cframe names each run's innermost frame, inner ones
    first, down to tstate's root_cframe. 3.12+: entry frames (shims), never in the
    thread state, except 3.15's base frame, the only one with no previous."""
    marks = []
    if O["fr_is_entry"] != NONE:
        cf, root, top = u64(ts + O["ts_cframe"]), ts + O["ts_root_cframe"], None
        for (f, own, code, instr) in chain:
            if top is None:
                top = f
                # The innermost activation is this code's: its current_frame moves
                # with every call made here. The outer ones wait in a C call.
                check(cf != root and (not marks or u64(cf + O["cframe_current_frame"]) == f),
                      "%s: cframe %#x does not name run top %#x" % (where, cf, f))
                marks.append(cf)
            if u8(f + O["fr_is_entry"]):
                cf, top = u64(cf + O["cframe_previous"]), None
        check(top is None and cf == root, "%s: cframe chain does not end at root_cframe" % where)
    else:
        for (f, own, code, instr) in chain:
            if OWNERS.get(own) not in ("cstack", "interpreter"):
                continue
            if O["ts_base_frame"] != NONE and u64(f + O["fr_previous"]) == 0:
                check(f == u64(ts + O["ts_base_frame"]), "%s: a shim with no previous" % where)
                continue
            check(not ts <= f < ts + O["ts_size"], "%s: entry frame in the thread state" % where)
            marks.append(f)
    check(marks == sorted(set(marks)), "%s: activations not rising: %s" % (where, marks))
    if threading.current_thread() is threading.main_thread():
        check(all(stack_mapping(m) == "[stack]" for m in marks),
              "%s: activations not on the main thread's stack" % where)
    seen["activations"] = max(seen.get("activations", 0), len(marks))


def verify(where, ts, chain, pyframes):
    full_chain = chain
    me = id(snapshot.__code__)
    codes = [c for (_, own, c, _) in chain]
    check(me in codes, "%s: snapshot() not on the raw chain" % where)
    chain = chain[codes.index(me):]
    py = iter(pyframes)
    for (f, own, code, instr) in chain:
        name = OWNERS.get(own)
        check(name is not None, "%s: unknown owner %d" % (where, own))
        if name in ("cstack", "interpreter"):
            continue
        fr = next(py, None)
        check(fr is not None, "%s: raw chain longer than sys._getframe()" % where)
        co = fr.f_code
        check(code == id(co), "%s: frame %#x has code %#x, expected %s" % (where, f, code, co))
        check(u64(code + O["ob_type"]) == CODE_TYPE, "%s: ob_type" % where)
        check(pystr(u64(code + O["co_qualname"])) == co.co_qualname, "%s: co_qualname" % where)
        check(pystr(u64(code + O["co_name"])) == co.co_name, "%s: co_name" % where)
        check(pystr(u64(code + O["co_filename"])) == co.co_filename, "%s: co_filename" % where)
        check(i32(code + O["co_firstlineno"]) == co.co_firstlineno, "%s: firstlineno" % where)
        check(pybytes(u64(code + O["co_linetable"])) == co.co_linetable, "%s: linetable" % where)
        idx = (instr - code - O["co_code_adaptive"]) // 2
        check(0 <= idx < len(co.co_code) // 2, "%s: %s instr index %d" % (where, co.co_qualname, idx))
        if fr is not pyframes[0]:
            check(line_of(co, idx) == fr.f_lineno,
                  "%s: %s line %s from instr, f_lineno %s" % (where, co.co_qualname,
                                                            line_of(co, idx), fr.f_lineno))
        if name == "generator":
            seen["generator"] += 1
            check(co.co_flags & 0x2a0, "%s: generator-owned frame of a plain function" % where)
    check(next(py, None) is None, "%s: sys._getframe() longer than the raw chain" % where)

    # bottom of the chain
    bottom, own = chain[-1][0], chain[-1][1]
    check(OWNERS.get(own) == BOTTOM, "%s: bottom frame owner %s, expected %s" % (where, OWNERS.get(own), BOTTOM))
    seen["bottoms"].add(OWNERS.get(own))
    if O["ts_base_frame"] != NONE:
        check(u64(ts + O["ts_base_frame"]) == bottom, "%s: tstate->base_frame is not the bottom" % where)

    check_activations(where, ts, full_chain)

    # thread ids, the runtime's interpreter and thread lists
    check(u64(ts + O["ts_thread_id"]) == threading.get_ident(), "%s: thread_id" % where)
    check(u64(ts + O["ts_native_thread_id"]) == threading.get_native_id(), "%s: native_thread_id" % where)
    interp = u64(RUNTIME + O["runtime_interpreters_head"])
    check(u64(interp + O["interp_next"]) == 0, "%s: a second interpreter?" % where)
    check(u64(ts + O["ts_interp"]) == interp, "%s: tstate->interp" % where)
    t, n = u64(interp + O["interp_threads_head"]), 0
    found = False
    while t and n < 1000:
        found = found or t == ts
        t, n = u64(t + O["ts_next"]), n + 1
    check(found, "%s: tstate not in interp->threads" % where)
    seen["threads"] = max(seen["threads"], n)

    # data stack: thread-owned frames live in the chunks
    chunk = u64(ts + O["ts_datastack_chunk"])
    top, limit = u64(ts + O["ts_datastack_top"]), u64(ts + O["ts_datastack_limit"])
    check(chunk + O["chunk_data"] <= top <= limit, "%s: datastack top/limit" % where)
    check(chunk + u64(chunk + O["chunk_size"]) == limit, "%s: chunk size" % where)
    chunks = []
    c = chunk
    while c:
        chunks.append((c + O["chunk_data"], c + u64(c + O["chunk_size"])))
        c = u64(c + O["chunk_previous"])
    for (f, own, _, _) in chain:
        if OWNERS.get(own) == "thread":
            check(any(lo <= f < hi for lo, hi in chunks), "%s: frame %#x not in a chunk %s" % (where, f, [(hex(a), hex(b)) for a, b in chunks]))
            check(not (chunk <= f < limit) or f < top, "%s: frame %#x above top" % (where, f))


# Functions with non-ASCII names (1-, 2- and 4-byte kinds), built from escapes so
# that this file stays ASCII.
ns = {"snapshot": snapshot}
exec(compile("def caf\u00e9(w):\n    snapshot(w)\n"
             "def \u51fd\u6570(w):\n    caf\u00e9(w)\n"
             "def \U00010400(w):\n    \u51fd\u6570(w)\n", "<unicode names>", "exec"), ns)
deepest = ns["\U00010400"]


def plain(w):
    deepest(w)
    return 1


def gen():
    snapshot("generator")
    yield 1


def gen_outer():
    yield from gen()


async def coro():
    snapshot("coroutine")


plain("main thread")
next(gen_outer())
try:
    coro().send(None)
except StopIteration:
    pass
errors = []


def in_thread():
    try:
        plain("second thread")
    except AssertionError as e:
        errors.append(e)


th = threading.Thread(target=in_thread)
th.start()
th.join()
if errors:
    raise errors[0]
check(seen["generator"] >= 3, "generator frames not reached through previous: %r" % seen)
check(seen["activations"] >= 2, "no C re-entry of the eval loop seen: %r" % seen)
check({"ascii", 1, 2, 4} <= seen["kinds"], "string kinds not all seen: %r" % seen["kinds"])
print("walk ok:", sys.version.split()[0], json.dumps({k: sorted(map(str, v)) if isinstance(v, set) else v
                                                      for k, v in seen.items()}))
'''


@pytest.mark.parametrize("version", HOST_VERSIONS + CHROOT_VERSIONS)
def test_offsets_live_walk(version, offsets_of, build_dir, request):
    _, r, fields = offsets_of(version)
    assert r.returncode == 0 and fields, "offsets_check failed:\n" + r.stdout + r.stderr
    if version in HOST_VERSIONS:
        root = None
        script = os.path.join(build_dir, "walker.py")
        inner = script
    else:
        root = request.getfixturevalue("chroot_root")
        host_dir, inner_dir = request.getfixturevalue("chroot_dir")
        script = os.path.join(host_dir, "walker.py")
        inner = inner_dir + "/walker.py"
    with open(script, "w") as f:
        f.write(WALKER)
    cmd = interpreter(version, root) + [inner, json.dumps(fields), BOTTOM_OWNER[version]]
    if root:
        # The walker finds its stack in /proc/self/maps, which a fresh chroot lacks: it
        # gets one in a mount namespace of its own, which no other run can unmount.
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               'mount -t proc proc "$0/proc" && exec "$@"', root] + cmd
    w = run(cmd)
    assert w.returncode == 0, "walker failed on %s:\n%s%s" % (version, w.stdout, w.stderr[-4000:])
    assert "walk ok: " + version in w.stdout, w.stdout
