# SPDX-License-Identifier: GPL-2.0-only
"""CPython's sampling profiler, run as `python3.15 -m profiling.sampling ARGS` runs it,
with one line on stderr once it has attached (its unwinder made for the PID): the
benchmark lets a target start its work only then.

The peer prints nothing when it attaches. What can be seen of it from outside
(_remote_debugging mapped, the first of its imports) comes 0.3-0.5 s of imports before
it even checks the PID on a loaded machine; a smoke target's whole work takes 0.05 s,
so a target let go on that sign had finished and exited before the peer looked for it
("Tachyon cannot find the process: Process with PID ... does not exist").
"""
import importlib
import runpy
import sys

ATTACHED = "pbp-bench: peer attached"

# As with -m: the stdlib's modules, not this script's neighbours, come first.
del sys.path[0]
sample = importlib.import_module("profiling.sampling.sample")
_init = sample.SampleProfiler.__init__


def attached_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    print(ATTACHED, file=sys.stderr, flush=True)


sample.SampleProfiler.__init__ = attached_init
sys.argv[0] = "profiling.sampling"
runpy.run_module("profiling.sampling", run_name="__main__", alter_sys=True)
