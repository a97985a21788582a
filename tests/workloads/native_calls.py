"""native_calls: Python -> C -> Python, for --native.

--ext: c_caller() alternately has the test extension pbpext call callback() from C
(pbpext_call), which burns in Python, and burn in C itself (pbpext_burn ->
pbpext_spin), half the time each.
--qsort: sorter() sorts with libc's qsort through ctypes, with compare() as the
comparison function, which burns in Python.
--cxx: cxx_caller() burns in C++ through ctypes: pbpcxx_burn() of the library --lib
names (tests/fixtures/pbpcxx.cc), in pbp::Burner::spin.
--ext-dir DIR: import pbpext from DIR first (a build of it with -g).
Truth: the Python stacks at each burn (root first), and the burn lines."""

import ctypes
import sys
import time

from pbp_common import Truth, burn_line, deadline_after, parse_args

T = None
N_PY = 20_000          # callback iterations per call (about a millisecond)
N_C = 3_000_000        # pbpext_spin iterations per burn (about as long as the calls)
N_CMP = 2_000          # compare() iterations per comparison


def callback():
    if "callback" not in T.data["stacks"]: T.stack("callback", LINE_CALLBACK)
    i = 0
    while i < N_PY: i += 1  # BURN:callback
    return i


def c_caller(deadline):
    import pbpext
    T.stack("c_burn", LINE_C_CALLER_BURN)
    while True:
        pbpext.call(callback, 5)
        pbpext.burn(N_C)  # BURN:c_caller
        T.write()
        if time.monotonic() >= deadline:
            break


def cxx_caller(deadline, lib_path):
    lib = ctypes.CDLL(lib_path)
    lib.pbpcxx_burn.argtypes = [ctypes.c_ulong]
    lib.pbpcxx_burn.restype = ctypes.c_ulong
    T.stack("cxx_burn", LINE_CXX_CALLER)
    while True:
        lib.pbpcxx_burn(N_C)  # BURN:cxx_caller
        T.write()
        if time.monotonic() >= deadline:
            break


def compare(a, b):
    if "compare" not in T.data["stacks"]: T.stack("compare", LINE_COMPARE)
    i = 0
    while i < N_CMP: i += 1  # BURN:compare
    return a[0] - b[0]


CMPFUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                           ctypes.POINTER(ctypes.c_int))


def sorter(deadline):
    libc = ctypes.CDLL(None)
    libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMPFUNC]
    libc.qsort.restype = None
    cmp = CMPFUNC(compare)
    while True:
        arr = (ctypes.c_int * 64)(*range(64, 0, -1))
        libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), cmp)  # BURN:sorter
        T.write()
        if time.monotonic() >= deadline:
            break


LINE_CALLBACK = burn_line(callback, "callback")
LINE_C_CALLER_BURN = burn_line(c_caller, "c_caller")
LINE_COMPARE = burn_line(compare, "compare")
LINE_SORTER = burn_line(sorter, "sorter")
LINE_CXX_CALLER = burn_line(cxx_caller, "cxx_caller")


def main():
    global T
    def more(p):
        p.add_argument("--mode", choices=("ext", "qsort", "cxx"), default="ext")
        p.add_argument("--ext-dir", default=None)
        p.add_argument("--lib", default=None)
    args = parse_args(more)
    T = Truth(args.truth)
    T["mode"] = args.mode
    T.line("callback_burn", LINE_CALLBACK)
    T.line("c_caller_burn", LINE_C_CALLER_BURN)
    T.line("compare_burn", LINE_COMPARE)
    T.line("sorter_call", LINE_SORTER)
    T.line("cxx_caller_burn", LINE_CXX_CALLER)
    if args.ext_dir:
        sys.path.insert(0, args.ext_dir)
    deadline = deadline_after(args.seconds)
    if args.mode == "ext":
        c_caller(deadline)
    elif args.mode == "cxx":
        cxx_caller(deadline, args.lib)
    else:
        sorter(deadline)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
