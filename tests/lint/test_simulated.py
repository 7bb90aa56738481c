"""lint's simulations (lint/simulated.py): what makes two questions one simulation, and what
keeps them apart."""

from __future__ import annotations

from dataclasses import replace

import pytest

from probetui.lint import simulated
from probetui.simulate import SimKubelet
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType


def _pod(timeout: int, grace: int | None = None) -> tuple[Pod, Container]:
    probe = Probe(
        exec=ExecAction(("check",)), period_seconds=10, timeout_seconds=timeout, failure_threshold=3
    )
    c = Container(name="app", command=("x",), liveness_probe=probe, readiness_probe=probe)
    return Pod("web", containers=(c,), termination_grace_period_seconds=grace), c


def _simulations(monkeypatch: pytest.MonkeyPatch) -> list[Pod]:
    """The simulations lint runs from here on (the pod of each): what its memo did not hold."""
    made: list[Pod] = []

    class Counted(SimKubelet):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            made.append(self.pod)

    monkeypatch.setattr(simulated, "SimKubelet", Counted)
    return made


# each test's pods have a grace period no other question has (it is part of what lint's memo
# is keyed on, and changes none of these runs): the simulations counted are the test's own,
# whatever the memo holds from the tests before


def test_the_timeout_of_a_probe_answered_at_once_is_no_second_simulation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = _simulations(monkeypatch)
    runs = [simulated.slow_start(*_pod(timeout, grace=17), 45.0) for timeout in (1, 3, 5)]
    assert len(made) == 1
    assert runs[0] == runs[1] == runs[2]


def test_a_slow_answer_keeps_the_timeouts_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _simulations(monkeypatch)
    short, long = (simulated.hung(*_pod(t, grace=19), ProbeType.LIVENESS) for t in (1, 5))
    assert len(made) == 2
    assert short.kills[0][0] < long.kills[0][0]


def test_a_timeout_of_zero_or_less_is_simulated_as_written() -> None:
    pod, c = _pod(1)
    broken = replace(c, liveness_probe=replace(c.liveness_probe, timeout_seconds=-1))
    assert (
        simulated.alone(pod, broken, instant=frozenset(ProbeType))
        .containers[0]
        .liveness_probe.timeout_seconds
        == -1
    )  # type: ignore[union-attr]


@pytest.mark.timeout(30)
def test_no_question_runs_past_an_hour_of_virtual_time() -> None:
    """A liveness failureThreshold 1 with initialDelaySeconds 2^31 at a 1 s period asked for a
    blip 68 years in, ticking every second on the way (lint never ended); the outage question
    likewise. Each run stops at an hour, and the blip is simply not reached."""
    huge = Probe(
        exec=ExecAction(("check",)),
        period_seconds=1,
        timeout_seconds=1,
        failure_threshold=1,
        initial_delay_seconds=2**31 - 1,
    )
    c = Container(name="app", command=("x",), liveness_probe=huge, readiness_probe=huge)
    pod = Pod("web", containers=(c,), termination_grace_period_seconds=23)
    at, run = simulated.blip(pod, c)
    assert at > 2**31 and run.duration <= 3600 and not run.kills
    at, run = simulated.outage(pod, c)
    assert run.duration <= 3600 and not run.kills
    with pytest.raises(ValueError, match="at most 3600 s"):
        simulated.run(pod, c, simulated.App(), 3601.0)
