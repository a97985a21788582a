"""churn workload: short-lived same-size functions churn_NNNNNN (file <churn-NNNNNN>)
whose freed code objects' memory is reused; churn_N calls burn_even/burn_odd by N's
parity. Catches a code-object cache that does not notice address reuse."""

import re

import pytest

from lib.collapsed import show, total, truth_frames
from lib.harness import Once, fraction, profile_workload

RATE = 999
DURATION = 3
NAME = re.compile(r"^churn_(\d{6})$")
FILE = re.compile(r"^<churn-(\d{6})>$")


@pytest.fixture(scope="module")
def churn(py, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / py.id, profiler_bin, py, "churn", rate=RATE, duration=DURATION))


def is_exec_body(sample, i):
    """The module body of a `<churn-N>` source, run by exec() from churn_loop: a real
    frame of its own, not a churn function."""
    f = sample.frames[i]
    return (f.name == "<module>" and f.file and FILE.match(f.file) and i > 0
            and sample.frames[i - 1].name == "churn_loop")


def churn_frames(sample):
    """(index, frame) of every frame whose name or file looks like a churn function."""
    return [(i, f) for i, f in enumerate(sample.frames)
            if (NAME.match(f.name) or (f.file and FILE.match(f.file)))
            and not is_exec_body(sample, i)]


def test_churn_frames_are_sampled(py, churn):
    churn = churn.get()
    prof = churn.run.check_ok()
    n = total([s for s in prof if churn_frames(s)])
    distinct = {f.name for s in prof for _, f in churn_frames(s)}
    assert n >= 50 and len(distinct) >= 10, \
        f"only {n} samples in {len(distinct)} distinct churn functions\n{show(prof)}"


def test_churn_name_filename_and_helper_parity_agree(py, churn):
    churn = churn.get()
    prof = churn.run.check_ok()
    call_line = churn.truth["lines"]["churn_call"]
    def_line = churn.truth["lines"]["churn_def"]
    wrong = []
    for s in prof:
        for i, f in churn_frames(s):
            mn, mf = NAME.match(f.name), f.file and FILE.match(f.file)
            if not (mn and mf and mn.group(1) == mf.group(1)):
                wrong.append((s, f"name/filename disagree: {f}"))
                continue
            # A tick that lands as the function is entered, before its first
            # instruction has run, finds it at its def line with nothing called yet.
            entering = f.line == def_line and i + 1 == len(s.frames)
            if f.line != call_line and not entering:
                wrong.append((s, f"{f.name} at line {f.line}, expected {call_line}"))
            n = int(mn.group(1))
            want = "burn_even" if n % 2 == 0 else "burn_odd"
            if i + 1 < len(s.frames) and s.frames[i + 1].name != want:
                wrong.append((s, f"{f.name} calls {s.frames[i + 1].name}, expected {want}"))
    assert not wrong, f"{len(wrong)} bad stacks:\n" + "\n".join(
        f"{why}: {s}" for s, why in wrong[:15])


def test_churn_stacks_match_truth_shape(py, churn):
    churn = churn.get()
    prof = churn.run.check_ok()
    shapes = {k: truth_frames(churn.truth["stacks"][k]) for k in ("even", "odd")}
    burn = {"even": churn.truth["lines"]["burn_even"], "odd": churn.truth["lines"]["burn_odd"]}
    got = [s for s in prof if not s.incomplete and s.leaf is not None
           and s.leaf.name in ("burn_even", "burn_odd")]
    assert total(got) > 0, f"no samples in burn_even/burn_odd\n{show(prof)}"
    good = []
    for s in got:
        kind = "even" if s.leaf.name == "burn_even" else "odd"
        exp = shapes[kind]
        if len(s.frames) != len(exp):
            continue
        m = NAME.match(s.frames[-2].name)
        if not m:
            continue
        n = m.group(1)
        # The truth shape was captured for churn_000000 / churn_000001: substitute N.
        exp = exp[:-2] + (exp[-2].__class__(f"churn_{n}", f"<churn-{n}>", exp[-2].line),
                          exp[-1].__class__(exp[-1].name, exp[-1].file, burn[kind]))
        if s.frames == exp:
            good.append(s)
    assert fraction(total(good), total(got)) >= 0.95, (
        f"{total(good)}/{total(got)} burn samples have the expected "
        f"<module>;main;churn_loop;churn_N;burn_* stack on the burn line\n"
        + show([s for s in got if s not in good]))
