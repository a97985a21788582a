"""generators workload: a generator produce() consumed by consume(), and a coroutine
coro_leaf() awaited by coro_mid() under asyncio.run (its frames are reached via the
interpreter frames' `previous` chain through the C Task step), and a chain of generators
deeper than a sample follows outside the chunks."""

import pytest

from lib.collapsed import same_except_leaf_line, show, total, truth_frames
from lib.interpreters import MODES
from lib.harness import Once, fraction, profile_workload

RATE = 999
DURATION = 3


@pytest.fixture(scope="module")
def gens(py, mode, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / f"{py.id}-{mode}", profiler_bin, py, "generators", rate=RATE,
        duration=DURATION, extra=MODES[mode]))


def check_chain(prof, truth, leaf, parent):
    expected = truth_frames(truth["stacks"][leaf])
    burn = truth["lines"][f"{leaf}_burn"]
    assert expected[-1].name == leaf and expected[-2].name == parent
    assert expected[0].name == "<module>"
    got = [s for s in prof if s.leaf is not None and s.leaf.name == leaf]
    assert total(got) > 0, f"no samples ending in {leaf}\n{show(prof)}"
    pair = [s for s in got if len(s.frames) >= 2 and s.frames[-2] == expected[-2]]
    assert fraction(total(pair), total(got)) >= 0.95, (
        f"only {total(pair)}/{total(got)} {leaf} samples sit directly under "
        f"{expected[-2]}\n{show(got)}")
    complete = [s for s in got if not s.incomplete]
    good = [s for s in complete if same_except_leaf_line(s.frames, expected)
            and s.leaf.line == burn]
    assert fraction(total(good), total(complete)) >= 0.95, (
        f"{leaf}: {total(good)}/{total(complete)} complete samples equal the truth stack\n  "
        + ";".join(map(str, expected)) + f"\nprofile:\n{show(got)}")


def test_generator_frame_sits_under_its_consumer(py, gens):
    gens = gens.get()
    check_chain(gens.run.check_ok(), gens.truth, "produce", "consume")


def test_coroutine_frame_sits_under_awaiting_coroutine(py, gens):
    gens = gens.get()
    check_chain(gens.run.check_ok(), gens.truth, "coro_leaf", "coro_mid")


def test_generators_deeper_than_followed_are_flagged_not_cut_short(py, mode, gens):
    """A burn under DEEP nested generators, each frame in its own object, outside the
    chunks: more than a sample follows (PBP_FRAMES_MAX, and a live reading's as many).
    Such a stack is whole or flagged with the reason, never reported complete with
    part of the chain missing."""
    gens = gens.get()
    prof, stats = gens.run.check_ok(), gens.run.stats()
    depth = gens.truth["deep"]
    got = [s for s in prof if s.leaf is not None and s.leaf.name == "deep_leaf"]
    short = [s for s in got if not s.incomplete
             and sum(f.name == "nest" for f in s.frames) != depth + 1]
    assert not short, (f"{total(short)} deep_leaf samples reported complete without "
                       f"their {depth + 1} nest frames\n{show(short, 3)}")
    reasons = stats["incomplete_reasons"]
    flagged = reasons["frames_outside_chunks_cut"] + reasons["too_deep"]
    assert flagged > 0, (f"no sample flagged as deeper than followed, of "
                         f"{total(got)} deep_leaf samples; reasons: {reasons}")
