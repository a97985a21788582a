"""generators workload: a generator produce() consumed by consume(), and a coroutine
coro_leaf() awaited by coro_mid() under asyncio.run (its frames are reached via the
interpreter frames' `previous` chain through the C Task step)."""

import pytest

from conftest import (MODES, Once, fraction, profile_workload, same_except_leaf_line, show,
                      total, truth_frames)

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
