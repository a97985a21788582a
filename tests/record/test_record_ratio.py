"""ratio workload: parent() calls fa() and fb() alternately with 3:1 CPU time."""

import pytest

from lib.collapsed import same_except_leaf_line, show, total, truth_frames
from lib.interpreters import MODES
from lib.harness import RATIO_CLOCK, Once, fraction, profile_workload, spent_fa_share

RATE = 999
DURATION = 3


@pytest.fixture(scope="module")
def ratio(py, mode, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / f"{py.id}-{mode}", profiler_bin, py, "ratio",
        ("--clock", RATIO_CLOCK[mode]), rate=RATE, duration=DURATION, extra=MODES[mode]))


def leaf_samples(samples, name):
    return [s for s in samples if s.leaf is not None and s.leaf.name == name]


def test_ratio_fa_and_fb_stacks_are_module_main_parent(py, ratio):
    ratio = ratio.get()
    prof = ratio.run.check_ok()
    for fn in ("fa", "fb"):
        expected = truth_frames(ratio.truth["stacks"][fn])
        assert expected[0].name == "<module>" and expected[-2].name == "parent"
        got = leaf_samples(prof, fn)
        complete = [s for s in got if not s.incomplete]
        good = [s for s in complete if same_except_leaf_line(s.frames, expected)]
        assert total(complete) > 0, (
            f"no complete stack ending in {fn}; expected\n  "
            + ";".join(map(str, expected)) + f"\nprofile:\n{show(prof)}")
        assert fraction(total(good), total(complete)) >= 0.99, (
            f"{fn}: only {total(good)}/{total(complete)} complete samples have the "
            "expected stack\n  " + ";".join(map(str, expected))
            + f"\nother stacks:\n{show([s for s in complete if s not in good])}")
    leafs = leaf_samples(prof, "fa") + leaf_samples(prof, "fb")
    incomplete = total([s for s in leafs if s.incomplete])
    assert fraction(incomplete, total(leafs)) <= 0.05, \
        f"{incomplete}/{total(leafs)} fa/fb samples are [incomplete]"


def test_ratio_fa_gets_75_percent_of_fa_plus_fb(py, ratio):
    ratio = ratio.get()
    prof = ratio.run.check_ok()
    fa = total(leaf_samples(prof, "fa"))
    fb = total(leaf_samples(prof, "fb"))
    assert fa + fb >= 300, f"too few samples to judge (fa={fa}, fb={fb})\n{show(prof)}"
    share = fa / (fa + fb)
    want = spent_fa_share(ratio.workload, ratio.truth)
    assert abs(share - want) <= 0.05, (
        f"fa share {share:.3f} (fa={fa}, fb={fb}), the workload spent {want:.3f} (+- 0.05; "
        f"its iterations promise {ratio.truth['expected_fa_share']:.2f})\n{show(prof)}")


def test_ratio_samples_sit_on_burn_lines(py, ratio):
    ratio = ratio.get()
    prof = ratio.run.check_ok()
    for fn in ("fa", "fb"):
        burn = ratio.truth["lines"][f"{fn}_burn"]
        got = leaf_samples(prof, fn)
        on_line = total([s for s in got if s.leaf.line == burn])
        assert total(got) > 0, f"no samples in {fn}\n{show(prof)}"
        assert fraction(on_line, total(got)) >= 0.95, (
            f"{fn}: {on_line}/{total(got)} samples on burn line {burn}\n{show(got)}")
