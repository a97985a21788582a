"""deep workload: 601 recurse() frames, burning in leaf()."""

import pytest

from lib.collapsed import same_except_leaf_line, show, total, truth_frames
from lib.interpreters import MODES
from lib.harness import Once, fraction, profile_workload

RATE = 499
DURATION = 3


@pytest.fixture(scope="module")
def deep(py, mode, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / f"{py.id}-{mode}", profiler_bin, py, "deep", rate=RATE, duration=DURATION,
        extra=MODES[mode]))


def leaf_samples(prof):
    return [s for s in prof if any(f.name == "leaf" for f in s.frames)]


def test_deep_stacks_have_full_recursion_depth(py, deep):
    deep = deep.get()
    prof = deep.run.check_ok()
    want = deep.truth["recurse_frames"]
    assert want >= 500
    got = leaf_samples(prof)
    assert total(got) >= 100, f"too few samples in leaf\n{show(prof)}"
    good = [s for s in got if not s.incomplete and s.frames[0].name == "<module>"
            and sum(f.name == "recurse" for f in s.frames) == want]
    bad = [s for s in got if s not in good]
    depths = sorted({(s.incomplete, sum(f.name == "recurse" for f in s.frames)) for s in bad})
    assert fraction(total(good), total(got)) >= 0.90, (
        f"{total(good)}/{total(got)} leaf samples are complete with {want} recurse frames; "
        f"others (incomplete?, depth): {depths[:20]}\n{show(bad, 5)}")


def test_deep_stacks_match_truth_frame_by_frame(py, deep):
    deep = deep.get()
    prof = deep.run.check_ok()
    expected = truth_frames(deep.truth["stacks"]["leaf"])
    got = [s for s in leaf_samples(prof) if not s.incomplete]
    good = [s for s in got if same_except_leaf_line(s.frames, expected)]
    assert total(got) > 0, f"no complete leaf samples\n{show(prof, 5)}"
    assert fraction(total(good), total(got)) >= 0.95, (
        f"{total(good)}/{total(got)} complete leaf samples equal the truth stack "
        f"({len(expected)} frames)\n{show([s for s in got if s not in good], 5)}")
    burn = deep.truth["lines"]["leaf_burn"]
    on_line = total([s for s in good if s.leaf.line == burn])
    assert fraction(on_line, total(good)) >= 0.95, f"{on_line}/{total(good)} on line {burn}"


def test_deep_incomplete_samples_are_rare(py, deep):
    deep = deep.get()
    prof = deep.run.check_ok()
    stats = deep.run.stats()
    decoded = stats["samples_decoded"]
    incomplete = stats["samples_incomplete"]
    in_profile = total([s for s in prof if s.incomplete])
    print(f"{py.id}: samples_incomplete={incomplete} decoded={decoded} "
          f"[incomplete] in profile={in_profile}")
    assert decoded > 0, f"no samples decoded: {stats}"
    assert fraction(incomplete, decoded) <= 0.05, \
        f"samples_incomplete {incomplete} of {decoded} decoded (> 5%)"
    assert fraction(in_profile, total(prof)) <= 0.05, \
        f"{in_profile}/{total(prof)} profile samples are [incomplete]"
