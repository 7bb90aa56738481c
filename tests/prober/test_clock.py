"""The virtual clock refuses to spin (prober/clock.py): timers that keep firing at one instant
raise instead of looping for ever, and a worker refuses a period that would make its ticker
do that."""

from __future__ import annotations

import math

import pytest

from probetui.prober.clock import ClockStalled, SimClock
from probetui.prober.results import ResultsManager
from probetui.prober.worker import Worker
from probetui.spec.model import ProbeType
from tests.prober.fixtures import pod_with, probe

# more than the clock lets one instant fire; the test's own bound, so that a clock without
# one returns instead of hanging the suite
_PLENTY = 1_000_000


def test_a_timer_re_arming_itself_at_the_same_instant_raises() -> None:
    clock = SimClock()
    fired = 0

    def again() -> None:
        nonlocal fired
        fired += 1
        if fired < _PLENTY:
            clock.call_at(clock.now() - 1.0, again)  # a ticker with periodSeconds -1

    clock.call_at(5.0, again)
    with pytest.raises(ClockStalled, match="stuck at 5 s"):
        clock.run_until(10.0)
    assert fired < _PLENTY


def test_many_timers_at_one_instant_that_end_are_not_a_stall() -> None:
    """Each worker fires a handful of timers at one instant; a fleet of them is no stall."""
    clock = SimClock()
    fired = 0

    def chain(left: int) -> None:
        nonlocal fired
        fired += 1
        if left:
            clock.call_soon(lambda: chain(left - 1))

    for _ in range(30_000):
        clock.call_at(1.0, lambda: chain(5))
    clock.run_until(2.0)
    assert fired == 180_000
    assert clock.now() == 2.0


def test_time_must_be_a_number_and_an_end_finite() -> None:
    clock = SimClock()
    with pytest.raises(ValueError, match="NaN"):
        clock.call_at(math.nan, lambda: None)
    for end in (math.inf, math.nan):
        with pytest.raises(ValueError, match="finite end"):
            clock.run_until(end)


@pytest.mark.parametrize("period", [0, -1])
def test_a_worker_refuses_a_period_below_one_second(period: int) -> None:
    """The API server refuses periodSeconds -1 and defaulting makes 0 into 10; a Pod built
    past both (lint's model, a recording) must not start a ticker that never advances."""
    pod = pod_with(ProbeType.LIVENESS, probe(period_seconds=period))
    worker = Worker(pod, pod.containers[0], ProbeType.LIVENESS, ResultsManager())
    with pytest.raises(ValueError, match="a period of at least 1 s"):
        worker.start(SimClock(), lambda uid: None, lambda *a: None)
