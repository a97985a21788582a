"""delivery workload: one CPU-bound thread profiled at 1000 Hz for 4 s; every expected
sample must be delivered and decoded."""

import pytest

from conftest import Once, fraction, profile_workload, show, total

RATE = 1000
DURATION = 4


@pytest.fixture(scope="module")
def delivery(py, module_tmp, profiler_bin):
    return Once(lambda: profile_workload(
        module_tmp / py.id, profiler_bin, py, "delivery", rate=RATE, duration=DURATION))


def stats_of(d):
    d.run.check_ok()
    return d.run.stats()


def test_delivery_delivered_matches_expected(py, delivery):
    delivery = delivery.get()
    st = stats_of(delivery)
    exp, got = st["samples_expected"], st["samples_delivered"]
    print(f"{py.id}: expected={exp} delivered={got} decoded={st['samples_decoded']} "
          f"drops={st['ringbuf_drops']}")
    assert exp > 0, f"samples_expected is {exp}: {st}"
    assert 0.99 <= got / exp <= 1.05, f"delivered/expected = {got}/{exp} = {got / exp:.3f}"


def test_delivery_rate_is_honoured(py, delivery):
    delivery = delivery.get()
    st = stats_of(delivery)
    nominal = RATE * DURATION   # the target is busy on one CPU for the whole run
    assert 0.5 * nominal <= st["samples_delivered"] <= 1.1 * nominal, \
        f"{st['samples_delivered']} samples delivered at -r {RATE} -d {DURATION}: {st}"


def test_delivery_no_ringbuf_drops(py, delivery):
    delivery = delivery.get()
    st = stats_of(delivery)
    assert st["ringbuf_drops"] == 0, f"ringbuf_drops = {st['ringbuf_drops']}: {st}"


def test_delivery_delivered_samples_are_decoded(py, delivery):
    delivery = delivery.get()
    st = stats_of(delivery)
    assert st["samples_decoded"] >= 0.99 * st["samples_delivered"], \
        f"decoded {st['samples_decoded']} of {st['samples_delivered']} delivered: {st}"


def test_delivery_profile_is_the_spin_loop(py, delivery):
    delivery = delivery.get()
    prof = delivery.run.check_ok()
    burn = delivery.truth["lines"]["spin_burn"]
    spin = [s for s in prof if s.leaf is not None and s.leaf.name == "spin"
            and s.leaf.line == burn and not s.incomplete]
    assert fraction(total(spin), total(prof)) >= 0.95, \
        f"{total(spin)}/{total(prof)} samples in spin at line {burn}\n{show(prof)}"
