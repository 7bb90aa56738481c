"""The GC pacer: young freezes while keys come, full passes only at quiet moments or when
overdue (virtual clock)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from probetui.memory import GcPacer


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock()
    gc.unfreeze()  # what the pacer froze goes back to the collector for the other tests


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_keys_every_300ms_get_young_freezes_and_no_full_pass(clock: Clock) -> None:
    pacer = GcPacer(clock=clock)
    pacer.tick(1)
    for _ in range(200):  # 60 s of keys every 0.3 s, ticks every 0.1 s
        for _ in range(3):
            clock.t += 0.1
            assert not pacer.tick(1)
        pacer.key_pressed()
    assert pacer.passes == 0
    assert 25 <= pacer.young_passes <= 31  # every 2 s


def test_young_freeze_takes_survivors_out_of_the_collector(clock: Clock) -> None:
    pacer = GcPacer(clock=clock)
    pacer.tick(1)
    kept = [Cycle() for _ in range(1000)]
    frozen = gc.get_freeze_count()
    clock.t += 2.0
    pacer.tick(1)
    assert gc.get_freeze_count() >= frozen + 1000
    assert kept


def test_full_pass_at_a_quiet_moment_frees_cycles_that_died_frozen(clock: Clock) -> None:
    pacer = GcPacer(clock=clock)
    pacer.tick(1)
    doomed = [Cycle() for _ in range(1000)]
    clock.t += 2.0
    pacer.tick(1)  # young freeze: the cycles are frozen
    del doomed
    frozen = gc.get_freeze_count()
    clock.t += 5.0  # settled, no key for 7 s, the layout never frozen by a full pass
    assert pacer.tick(1)
    assert pacer.passes == 1
    assert gc.get_freeze_count() <= frozen - 1000


def test_full_pass_waits_for_quiet_then_comes_every_minute(clock: Clock) -> None:
    pacer = GcPacer(clock=clock, every=60.0)
    pacer.tick(1)
    clock.t += 6.0
    pacer.key_pressed()
    assert not pacer.tick(1)  # a key just now
    clock.t += 2.0
    assert pacer.tick(1)
    clock.t += 30.0
    assert not pacer.tick(1)  # quiet, but done 30 s ago for this layout
    clock.t += 30.0
    assert pacer.tick(1)
    pacer.tick(2)  # pods came: the pass waits for them to settle
    clock.t += 1.0
    assert not pacer.tick(2)
    clock.t += 4.0
    assert pacer.tick(2)


def test_full_pass_forced_when_keys_never_stop(clock: Clock) -> None:
    pacer = GcPacer(clock=clock, force=60.0)
    pacer.tick(1)
    full = 0
    for _ in range(700):  # 70 s, a key every 0.1 s
        clock.t += 0.1
        pacer.key_pressed()
        full += pacer.tick(1)
    assert full == 1


def test_nothing_while_the_collector_is_off(clock: Clock) -> None:
    pacer = GcPacer(clock=clock)
    gc.disable()
    try:
        clock.t += 100.0
        assert not pacer.tick(1)
        clock.t += 100.0
        assert not pacer.tick(1)
        assert pacer.young_passes == 0
    finally:
        gc.enable()
