# SPDX-License-Identifier: GPL-2.0-only
"""Takes the native snapshot BPF will take at a sample, from outside, for tests and
measurements: stops a running thread with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT),
reads its registers, copies its stack from RSP up (through /proc/PID/mem, to the end
of the stack mapping or CAP bytes) and lets it go. Writes the file format
tests/unit/native_target.c writes ("PBPNSNP1", tid, register mask, the 17 x86-64 DWARF
registers, stack length, stack bytes).

    native_snapshot.py PID OUT [CAP]
"""

import ctypes
import os
import struct
import sys

PTRACE_GETREGS = 12
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


def snapshot(pid, cap=1 << 20):
    """(registers by DWARF number, stack bytes) of thread @pid, stopped for the copy."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0:
        raise OSError(ctypes.get_errno(), f"PTRACE_SEIZE {pid}")
    try:
        if libc.ptrace(PTRACE_INTERRUPT, pid, None, None) != 0:
            raise OSError(ctypes.get_errno(), f"PTRACE_INTERRUPT {pid}")
        os.waitpid(pid, WALL)
        regs = Regs()
        if libc.ptrace(PTRACE_GETREGS, pid, None, ctypes.byref(regs)) != 0:
            raise OSError(ctypes.get_errno(), f"PTRACE_GETREGS {pid}")
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


def main():
    pid, out = int(sys.argv[1]), sys.argv[2]
    cap = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20
    regs, stack = snapshot(pid, cap)
    write(out, pid, regs, stack)
    print(f"rip {regs[16]:#x} rsp {regs[7]:#x} copied {len(stack)}")


if __name__ == "__main__":
    main()
