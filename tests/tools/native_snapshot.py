# SPDX-License-Identifier: GPL-2.0-only
"""Takes the native snapshot BPF will take at a sample, from outside, for tests and
measurements: stops a running thread with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT),
reads its registers, copies its stack from RSP up (through /proc/PID/mem, to the end
of the stack mapping or CAP bytes) and lets it go. Writes the file format
tests/unit/native_target.c writes ("PBPNSNP1", tid, register mask, the 17 x86-64 DWARF
registers, stack length, stack bytes).

    native_snapshot.py PID OUT [CAP]
    native_snapshot.py PID OUT [CAP] --at ADDR [--wait SECONDS]

With --at, the thread is stopped at instruction ADDR instead of wherever it is: an int3
planted there, the thread let run to it (at most --wait, 10 s; exit 3 if it did not get
there), the byte put back and RIP set
to ADDR before the copy, so that a test can unwind from an instruction a random stop
would seldom hit (the `ret` after an epilogue's pops).
"""

import ctypes
import os
import signal
import struct
import sys
import time

PTRACE_CONT = 7
PTRACE_GETREGS = 12
PTRACE_SETREGS = 13
PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000

# struct user_regs_struct (x86-64), in order.
USER_REGS = ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs "
             "eflags rsp ss fs_base gs_base ds es fs gs").split()
# DWARF register numbers 0-16.
DWARF = "rax rdx rcx rbx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 rip".split()


class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in USER_REGS]


def mapping_end(pid, addr):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= addr < hi:
                return hi
    raise RuntimeError(f"no mapping of {pid} holds {addr:#x}")


def ptrace(libc, req, pid, data=None, what=""):
    if libc.ptrace(req, pid, None, data) != 0:
        raise OSError(ctypes.get_errno(), f"{what or req} {pid}")


def run_to(libc, pid, addr, regs, timeout=10.0):
    """Lets stopped thread @pid run until it executes @addr; @regs then hold its
    registers there, the code as it was."""
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
        mem.seek(addr)
        orig = mem.read(1)
        mem.seek(addr)
        mem.write(b"\xcc")
        try:
            deadline = time.monotonic() + timeout
            ptrace(libc, PTRACE_CONT, pid, None, "PTRACE_CONT")
            while True:
                got, status = os.waitpid(pid, WALL | os.WNOHANG)
                if got and os.WIFSTOPPED(status) and os.WSTOPSIG(status) == signal.SIGTRAP:
                    break
                if got and not os.WIFSTOPPED(status):
                    raise RuntimeError(f"{pid} ended before reaching {addr:#x}")
                if got:   # another stop: go on, the signal passed on
                    ptrace(libc, PTRACE_CONT, pid, os.WSTOPSIG(status), "PTRACE_CONT")
                if time.monotonic() > deadline:
                    raise NotReached(f"{pid} did not reach {addr:#x} in {timeout} s")
                time.sleep(0.001)
        finally:
            mem.seek(addr)
            mem.write(orig)
    ptrace(libc, PTRACE_GETREGS, pid, ctypes.byref(regs), "PTRACE_GETREGS")
    if regs.rip != addr + 1:
        raise RuntimeError(f"{pid} trapped at {regs.rip:#x}, not at {addr:#x}")
    regs.rip = addr
    ptrace(libc, PTRACE_SETREGS, pid, ctypes.byref(regs), "PTRACE_SETREGS")


def snapshot(pid, cap=1 << 20, at=None, wait=10.0):
    """(registers by DWARF number, stack bytes) of thread @pid, stopped for the copy
    (at instruction @at, if given)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    ptrace(libc, PTRACE_SEIZE, pid, None, "PTRACE_SEIZE")
    try:
        ptrace(libc, PTRACE_INTERRUPT, pid, None, "PTRACE_INTERRUPT")
        os.waitpid(pid, WALL)
        regs = Regs()
        if at is not None:
            run_to(libc, pid, at, regs, wait)
        ptrace(libc, PTRACE_GETREGS, pid, ctypes.byref(regs), "PTRACE_GETREGS")
        sp = regs.rsp
        end = min(mapping_end(pid, sp), sp + cap)
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(sp)
            stack = mem.read(end - sp)
        return [getattr(regs, n) for n in DWARF], stack
    finally:
        libc.ptrace(PTRACE_DETACH, pid, None, None)


def write(path, tid, regs, stack):
    with open(path, "wb") as f:
        f.write(b"PBPNSNP1" + struct.pack("<II", tid, (1 << 17) - 1) +
                struct.pack("<17Q", *regs) + struct.pack("<Q", len(stack)) + stack)


class NotReached(RuntimeError):
    pass


def main():
    args = sys.argv[1:]
    at, wait = None, 10.0
    if "--at" in args:
        i = args.index("--at")
        at, args = int(args[i + 1], 0), args[:i] + args[i + 2:]
    if "--wait" in args:
        i = args.index("--wait")
        wait, args = float(args[i + 1]), args[:i] + args[i + 2:]
    pid, out = int(args[0]), args[1]
    cap = int(args[2]) if len(args) > 2 else 1 << 20
    try:
        regs, stack = snapshot(pid, cap, at, wait)
    except NotReached as e:
        print(e, file=sys.stderr)
        sys.exit(3)
    write(out, pid, regs, stack)
    print(f"rip {regs[16]:#x} rsp {regs[7]:#x} copied {len(stack)}")


if __name__ == "__main__":
    main()
