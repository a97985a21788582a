#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Dumps what the running interpreter says about its own location tables.

Run by the interpreter under test (CPython 3.11 or later, standard library only). It
compiles whole stdlib modules and a source written to stress the table encoding, and
for every code object records co_firstlineno, co_linetable and the start line that
co_positions() reports for each code unit. It also feeds the interpreter random but
well-formed tables through code.replace(), so that encodings the compiler rarely emits
(huge deltas, long varints, negative lines) are checked against the interpreter's own
decoder too. tests/unit/test_linetable.c then checks the C decoder against the dump.

Dump format, text, one record per line:
    # pybpfprof-positions 1 <python version>
    <firstlineno> <code units> <linetable hex or -> <lines> <name>
where <lines> is a comma-separated run-length list of "LINE" or "LINE*COUNT", with -1
for a code unit whose line is None, covering exactly <code units> code units.
"""

import argparse
import importlib.util
import random
import sys
import types

DEFAULT_MODULES = [
    "argparse", "typing", "asyncio.tasks", "asyncio.base_events", "collections",
    "json.decoder", "inspect", "dataclasses", "enum", "ast", "difflib", "tarfile",
    "zipfile", "pydoc", "_pydecimal", "unittest.mock", "email._header_value_parser",
    "http.client", "traceback", "functools", "textwrap", "re._parser", "logging",
    "subprocess", "shutil", "string", "statistics", "pathlib", "pickle", "doctest",
]

# The encoder switches forms at column 80 (short), column 128 (one-line), line deltas
# of 3 (one-line) and 64 (one-byte svarint), so the source below crosses each of them.
TRICKY = '''
import contextlib, functools

def deco(*a, **k):
    return lambda f: f

@deco(
    1,
    key=lambda x: (x,
                   x + 1),
)
@functools.lru_cache(maxsize=None)
def decorated(a, b=(lambda: 3)(), *args, c={k: v for k, v in zip("ab", "cd")}, **kw):
    total = (a +
             b -
             sum(args)
             ) * (
        len(kw)
    )
    return total

def comprehensions(xs):
    a = [x * y for x in xs if x for y in range(x) if y % 2]
    b = {x: [y for y in range(x)] for x in xs}
    c = {(x, y) for x in xs
         for y in xs
         if x != y}
    d = (
        x
        for x in xs
        if x
    )
    return a, b, c, list(d)

def loops(n):
    i = 0
    while i < n:
        if i % 3 == 0:
            i += 1
            continue
        for j in range(i):
            if j > 7:
                break
        else:
            pass
        i += 2
    return i

def very_long_line(aaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccc, dddddddddddddddddddd):
    return aaaaaaaaaaaaaaaaaaaa + bbbbbbbbbbbbbbbbbbbb + cccccccccccccccccccc + dddddddddddddddddddd + aaaaaaaaaaaaaaaaaaaa * bbbbbbbbbbbbbbbbbbbb * cccccccccccccccccccc * dddddddddddddddddddd + aaaaaaaaaaaaaaaaaaaa.bit_length()

def matching(v):
    match v:
        case {"k": [1, 2, *rest]} if rest:
            return rest
        case (0, _) | [1, _]:
            return 1
        case str() as s if len(s) > 3:
            return s
        case int(real=r, imag=0):
            return r
        case _:
            return None

def handlers(f):
    try:
        try:
            f()
        except (ValueError, TypeError) as e:
            raise RuntimeError("x") from e
        except Exception:
            return 1
        else:
            return 2
        finally:
            print("inner")
    except* OSError as eg:
        f = eg
    finally:
        print("outer")

async def asyncs(cm, it):
    async with cm as a, cm as b:
        async for x in it:
            await x
    r = [y async for y in it if await y]
    with contextlib.suppress(Exception), \\
            open("/dev/null") as fh:
        fh.read()
    return r

def gen():
    x = yield 1
    yield from range(x)
    return (yield)

class Klass(object,
            metaclass=type):
    attr = [i for i in range(3)]

    def method(self):
        return super().method()

    @property
    def prop(self):
        return (self
                .attr
                .copy())

formatted = f"""{1 +
2} and {
    "nested"!r:>{10}}"""

def gap_before():
    a = 1
''' + "\n" * 70 + '''
    b = 2
''' + "\n" * 5000 + '''
    return a + b

def back_and_forth(x):
    return (
        x
''' + "\n" * 100 + '''
        +
''' + "\n" * 200 + '''
        x
    )
''' + "\n" * 70000 + '''
def far_away(x):
    if x:
        return far_away(x - 1)
    return [lambda: x for _ in range(2)]
'''

# Syntax that older interpreters reject, each compiled only where it exists.
TRICKY_BY_VERSION = [
    ((3, 12), '''
type Alias[T] = list[T]

def generic[T: int, *Ts, **P](x: T) -> T:
    return f"{x!r:{"nested"}}" + f"{'a' + f'{x}'}"

class G[T]:
    def m(self) -> T:
        return [y for y in (1, 2)]
'''),
    ((3, 14), '''
def templates(x):
    return t"{x} and {x +
1}"

def anno(a: undefined_name) -> also_undefined:
    try:
        return 1
    finally:
        pass
'''),
]


def walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)


def rle(values):
    out = []
    prev, count = None, 0
    for v in values:
        if v == prev:
            count += 1
            continue
        if count:
            out.append(str(prev) if count == 1 else "%d*%d" % (prev, count))
        prev, count = v, 1
    if count:
        out.append(str(prev) if count == 1 else "%d*%d" % (prev, count))
    return ",".join(out)


def record(out, code, name):
    units = len(code.co_code) // 2
    lines = [-1 if p[0] is None else p[0] for p in code.co_positions()]
    if len(lines) != units:
        sys.exit("dump_positions: %s: co_positions() gave %d entries for %d code units"
                 % (name, len(lines), units))
    table = code.co_linetable.hex() or "-"
    out.write("%d %d %s %s %s\n" % (code.co_firstlineno, units, table, rle(lines),
                                      name.replace(" ", "_").replace("\n", "_")))


def module_source(modname):
    spec = importlib.util.find_spec(modname)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        sys.exit("dump_positions: no Python source for module %s" % modname)
    with open(spec.origin, "rb") as f:
        return spec.origin, f.read()


def svarint(v):
    return varint((-v << 1) | 1 if v < 0 else v << 1)


def varint(v):
    out = []
    while v >= 64:
        out.append(0x40 | (v & 63))
        v >>= 6
    out.append(v)
    return out


def random_table(rng, units, firstlineno):
    """A table covering exactly @units code units, with every entry kind."""
    tab = bytearray()
    line = firstlineno
    lo, hi = -5, 2**31 - 1
    while units:
        n = min(units, rng.randint(1, 8))
        units -= n
        kind = rng.choice([0, 3, 9, 10, 11, 12, 13, 13, 14, 14, 15])
        if kind in (13, 14):
            big = rng.random() < 0.2
            delta = rng.randint(-2**31 + 1, 2**31 - 1) if big else rng.randint(-70, 70)
            delta = max(lo - line, min(hi - line, delta))
        elif 10 <= kind <= 12:
            delta = kind - 10
            if line + delta > hi:
                kind, delta = 0, 0
        else:
            delta = 0
        tab.append(0x80 | kind << 3 | (n - 1))
        if kind <= 9:
            tab.append(rng.randrange(128))
        elif kind <= 12:
            tab += bytes([rng.randrange(128), rng.randrange(128)])
        elif kind == 13:
            tab += bytes(svarint(delta))
        elif kind == 14:
            tab += bytes(svarint(delta))
            tab += bytes(varint(rng.choice([0, 1, 63, 64, 4095, 4096, 2**20])))
            tab += bytes(varint(rng.choice([0, 1, 64, 200, 2**16])))
            tab += bytes(varint(rng.choice([0, 1, 64, 200, 2**16])))
        if kind != 15:
            line += delta
    return bytes(tab)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="dump file (default: standard output)")
    ap.add_argument("--synthetic", type=int, default=3000,
                    help="random well-formed tables to check (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("modules", nargs="*", help="stdlib modules (default: a broad set)")
    args = ap.parse_args()

    sources = [("<tricky>", TRICKY)]
    for version, src in TRICKY_BY_VERSION:
        if sys.version_info >= version:
            sources.append(("<tricky-%d.%d>" % version, src))
    for modname in args.modules or DEFAULT_MODULES:
        sources.append(module_source(modname))

    out = open(args.output, "w") if args.output else sys.stdout
    out.write("# pybpfprof-positions 1 %s\n" % sys.version.split()[0])
    codes = []
    for filename, src in sources:
        top = compile(src, filename, "exec", dont_inherit=True)
        short = filename.rsplit("/", 1)[-1]
        for code in walk(top):
            name = "%s:%s:%d" % (short, getattr(code, "co_qualname", code.co_name),
                                 code.co_firstlineno)
            record(out, code, name)
            codes.append((name, code))

    # The same code objects moved far down a file, then with random tables.
    for name, code in codes[::7]:
        record(out, code.replace(co_firstlineno=code.co_firstlineno + 1000000),
               name + "+1000000")
    rng = random.Random(args.seed)
    templates = [c for c in codes if len(c[1].co_code) >= 2]
    for i in range(args.synthetic):
        name, code = rng.choice(templates)
        first = rng.choice([0, 1, 2, 63, 64, 65536, rng.randint(1, 10**6)])
        tab = random_table(rng, len(code.co_code) // 2, first)
        record(out, code.replace(co_firstlineno=first, co_linetable=tab),
               "synthetic%d:%s" % (i, name))
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
