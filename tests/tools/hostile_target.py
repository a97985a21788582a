# SPDX-License-Identifier: GPL-2.0-only
"""A process that sets a trap for whatever looks for its interpreter (run as an
unprivileged user by tests/hardening/test_hostile_targets.py).

It maps a file named `python` in DIR, which makes the file a candidate for holding
_PyRuntime, and then:
  fifo       unlinks it and makes a FIFO at the `python (deleted)` name that
             /proc/PID/maps now shows: opening that name blocks;
  symlink:T  the same with a symbolic link to T at that name;
  truncate   keeps a large ELF file whose .symtab is sparse and 128 MiB long, and
             truncates it as soon as anyone opens it (inotify IN_OPEN): a reader that
             mmaps it gets SIGBUS.
It runs until killed. DIR/status gets "ready" once the trap is set, then a line
"truncated" each time it truncated. The test starts it under a copy of CPython whose
name holds no "python", through the dynamic loader, so that the trap file is the only
candidate in its maps: the profiler keeps looking at it while it waits for an
interpreter to appear."""

import ctypes
import mmap
import os
import struct
import sys
import time

SYMTAB_OFF = 4096
SYMTAB_SIZE = 24 * ((128 << 20) // 24)     # whole symbols
IN_OPEN = 0x20


def write_elf(path):
    shstr = b"\0.symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0_PyRuntime\0"
    phoff, shoff = 64, 64 + 56
    shstr_off = shoff + 4 * 64
    str_off = shstr_off + len(shstr)
    ehdr = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) +
            struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, shoff, 0, 64, 56, 1, 64, 4, 3))
    phdr = struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, SYMTAB_OFF, SYMTAB_OFF, 4096)

    def shdr(name, typ, off, size, link=0, entsize=0):
        return struct.pack("<IIQQQQIIQQ", name, typ, 0, 0, off, size, link, 0, 1, entsize)

    shdrs = (shdr(0, 0, 0, 0) +
             shdr(1, 2, SYMTAB_OFF, SYMTAB_SIZE, link=2, entsize=24) +   # .symtab
             shdr(9, 3, str_off, len(strtab)) +                          # .strtab
             shdr(17, 3, shstr_off, len(shstr)))                         # .shstrtab
    with open(path, "wb") as f:
        f.write(ehdr + phdr + shdrs + shstr + strtab)
        f.truncate(SYMTAB_OFF + SYMTAB_SIZE)    # sparse: the symbols are all zero


def main():
    mode, d = sys.argv[1], sys.argv[2]
    status = os.path.join(d, "status")
    path = os.path.join(d, "python")
    if mode == "truncate":
        write_elf(path)
    else:
        with open(path, "wb") as f:
            f.write(b"\0" * 4096)
    fd = os.open(path, os.O_RDONLY)
    keep = mmap.mmap(fd, 4096, mmap.MAP_PRIVATE, mmap.PROT_READ)
    os.close(fd)
    if mode == "fifo":
        os.unlink(path)
        os.mkfifo(path + " (deleted)")
    elif mode.startswith("symlink:"):
        os.unlink(path)
        os.symlink(mode.split(":", 1)[1], path + " (deleted)")
    with open(status, "a") as f:
        f.write("ready\n")
    if mode != "truncate":
        while True:
            time.sleep(3600)
    libc = ctypes.CDLL(None, use_errno=True)
    ino = libc.inotify_init()
    while True:
        wd = libc.inotify_add_watch(ino, path.encode(), IN_OPEN)
        if ino < 0 or wd < 0:
            sys.exit(f"inotify: {os.strerror(ctypes.get_errno())}")
        os.read(ino, 4096)
        os.truncate(path, 0)
        with open(status, "a") as f:
            f.write("truncated\n")
        # The next look finds the whole file again (our own opens unwatched).
        libc.inotify_rm_watch(ino, wd)
        os.read(ino, 4096)      # IN_IGNORED
        write_elf(path)
    del keep


if __name__ == "__main__":
    main()
