"""callbacks: the standard library calling back into Python, the way real programs make
it do all the time, in two threads at once. Each kind of call is a function kind_NAME
that makes C code call Python code many times over: sorted(key=), re.sub with a
function, json.loads(object_hook=), an sqlite3 function made with create_function,
functools.reduce, descriptors (property and a __get__ of our own), __init__ through a
call of the class, map and filter, __getattr__, __iter__ consumed by list(), a deep
pipeline of generators consumed by sum(), and itertools chains of them.

Truth: each kind_NAME times its own CPU (time.thread_time() around its body) into
truth["cpu"][NAME]; truth["process_cpu"] is the process's CPU at the same moment.
truth["chains"][CALLBACK] holds each distinct stack a callback (or the innermost
generator) was called with, as it saw it: the thread's root, the kind, the callback."""

import functools
import itertools
import json
import re
import sqlite3
import sys
import threading
import time

from pbp_common import (CpuBuckets, Truth, capture_stack, parse_args, remember_chain,
                        remember_maker)

T = None
CPU = None
SEEN = set()


def remember(name):
    """The first call of each callback by each path, in each thread, remembers its
    stack (a descriptor is reached from a property and from a plain attribute)."""
    f = sys._getframe(1)
    path = []
    while f is not None:
        path.append(f.f_code)
        f = f.f_back
    key = (name, threading.get_ident(), tuple(path))
    if key not in SEEN:
        SEEN.add(key)
        remember_chain(T, CPU.lock, name, capture_stack(None, 2))


WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi "
         "omicron pi rho sigma tau upsilon phi chi psi omega").split()
DATA = [(w * (i % 3 + 1), i * 7919 % 1000) for i, w in enumerate(WORDS * 12)]
TEXT = " ".join("%s-%d" % (w, n) for w, n in DATA)
DOC = json.dumps([{"name": w, "n": n, "tags": {"a": n % 3, "b": [n, n + 1]}}
                  for w, n in DATA])


def sort_key(item):
    remember("sort_key")
    word, n = item
    return (sum(map(ord, word)) % 17, -n, word[::-1])


def kind_sorted():
    return sorted(DATA, key=sort_key)[0]


def sub_repl(m):
    remember("sub_repl")
    word, n = m.group(1), int(m.group(2))
    return "%s:%x" % (word.upper()[:3], n * n % 4093)


def kind_re_sub():
    return len(re.sub(r"(\w+)-(\d+)", sub_repl, TEXT))


def json_hook(d):
    remember("json_hook")
    if "name" in d:
        d["score"] = sum(ord(c) for c in d["name"]) % 97 + d["n"]
    else:
        d["sum"] = sum(v if isinstance(v, int) else len(v) for v in d.values())
    return d


def kind_json_hook():
    return len(json.loads(DOC, object_hook=json_hook))


def sql_score(word, n):
    remember("sql_score")
    return sum(ord(c) * (i + 1) for i, c in enumerate(word)) % 1009 + n


def kind_sqlite(conn):
    return conn.execute("select sum(score(w, n)), max(score(w, n)) from t "
                        "where score(w, n) > 100").fetchone()


def combine(acc, item):
    remember("combine")
    word, n = item
    return (acc[0] + len(word) * n) % 1000003, max(acc[1], word)


def kind_reduce():
    return functools.reduce(combine, DATA * 2, (0, ""))


class Celsius:
    """A descriptor of our own: its __get__ is called by the interpreter's C code."""

    def __get__(self, obj, owner=None):
        remember("Celsius.__get__")
        return (obj.kelvin - 273.15) * 1.0 if obj is not None else self


class Reading:
    celsius = Celsius()

    def __init__(self, kelvin, label):
        remember("Reading.__init__")
        self.kelvin = kelvin
        self.label = label.strip().lower()
        self.parts = label.split("a")

    @property
    def fahrenheit(self):
        remember("Reading.fahrenheit")
        return self.celsius * 9 / 5 + 32


def kind_descriptors(readings):
    total = 0.0
    for r in readings:
        total += r.fahrenheit + r.celsius
    return total


def kind_type_call():
    return len([Reading(n + 200.0, w) for w, n in DATA])


def is_even(item):
    remember("is_even")
    return sum(map(ord, item[0])) % 2 == 0


def weigh(item):
    remember("weigh")
    return len(item[0]) * item[1] % 101


def kind_map_filter():
    return sum(map(weigh, filter(is_even, DATA * 2)))


class Lazy:
    def __init__(self, base):
        self.base = base

    def __getattr__(self, name):
        remember("Lazy.__getattr__")
        if name.startswith("f_"):
            return len(name) * self.base % 97
        raise AttributeError(name)


def kind_getattr(objs):
    names = ["f_" + w for w in WORDS]
    return sum(getattr(o, n) for o in objs for n in names)


class Bag:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        for word, n in self.items:
            remember("Bag.__iter__")
            yield word.upper() + str(n % 10)


def kind_iter_list():
    return sum(len(list(Bag(DATA))) for _ in range(2))


def stage_source(items):
    for word, n in items:
        remember("stage_source")
        yield word, n


def stage(upstream, depth):
    for word, n in upstream:
        yield word, (n * 31 + len(word)) % 1009


def kind_generators():
    pipe = stage_source(DATA)
    for depth in range(12, -1, -1):
        pipe = stage(pipe, depth)
    return sum(n for _, n in pipe)


def making(qualname, value):
    """@value, after remembering the caller's path as one that calls the generator
    function @qualname (its frame is briefly the parent of @qualname's)."""
    remember_maker(T, CPU.lock, qualname, capture_stack(None, 2))
    return value


def pairs(items):
    for word, n in items:
        remember("pairs")
        yield n, len(word)


def kind_itertools():
    chained = itertools.chain.from_iterable(pairs(making("pairs", DATA[i::3]))
                                            for i in range(3))
    products = itertools.starmap(lambda a, b: a * b % 1013, chained)
    running = itertools.accumulate(products, lambda x, y: (x + y) % 100003)
    return list(itertools.islice(itertools.compress(running, itertools.cycle([1, 0, 1])),
                                 0, None, 2))[-1]


KINDS = ("sorted", "re_sub", "json_hook", "sqlite", "reduce", "descriptors", "type_call",
         "map_filter", "getattr", "iter_list", "generators", "itertools")


def run_kinds(stop):
    conn = sqlite3.connect(":memory:")
    conn.create_function("score", 2, sql_score)
    conn.execute("create table t (w text, n integer)")
    conn.executemany("insert into t values (?, ?)", DATA)
    readings = [Reading(n + 200.0, w) for w, n in DATA]
    objs = [Lazy(n) for _, n in DATA[:20]]
    calls = {
        "sorted": kind_sorted, "re_sub": kind_re_sub, "json_hook": kind_json_hook,
        "sqlite": lambda: kind_sqlite(conn), "reduce": kind_reduce,
        "descriptors": lambda: kind_descriptors(readings), "type_call": kind_type_call,
        "map_filter": kind_map_filter, "getattr": lambda: kind_getattr(objs),
        "iter_list": kind_iter_list, "generators": kind_generators,
        "itertools": kind_itertools,
    }
    while time.monotonic() < stop:
        for name in KINDS:
            t0 = time.thread_time()
            calls[name]()
            CPU.add(name, time.thread_time() - t0)


def main():
    global T, CPU
    args = parse_args()
    T = Truth(args.truth)
    CPU = CpuBuckets(T, KINDS)
    T["chains"] = {}
    T["bucket_functions"] = {k: ["kind_" + k] for k in KINDS}
    T["kinds"] = list(KINDS)
    stop = time.monotonic() + args.seconds
    threading.Thread(target=publish_when_ready, name="publisher", daemon=True).start()
    worker = threading.Thread(target=run_kinds, args=(stop,), name="kinds", daemon=True)
    worker.start()
    run_kinds(stop)
    worker.join()
    return args.exit_code


def publish_when_ready():
    """The truth goes out once both threads have called every callback, and again every
    0.1 s, from this thread, which no bucket's function runs on."""
    callbacks = 14
    while True:
        seen = list(SEEN)
        if len({t for _, t, _ in seen}) >= 2 and len({n for n, _, _ in seen}) >= callbacks:
            break
        time.sleep(0.02)
    while True:
        CPU.publish()
        time.sleep(0.1)

if __name__ == "__main__":
    sys.exit(main())
