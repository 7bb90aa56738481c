"""lint's simulations (lint/simulated.py): what makes two questions one simulation, and what
keeps them apart."""

from __future__ import annotations

from dataclasses import replace

from probetui.lint import simulated
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType


def _pod(timeout: int) -> tuple[Pod, Container]:
    probe = Probe(
        exec=ExecAction(("check",)), period_seconds=10, timeout_seconds=timeout, failure_threshold=3
    )
    c = Container(name="app", command=("x",), liveness_probe=probe, readiness_probe=probe)
    return Pod("web", containers=(c,)), c


def test_the_timeout_of_a_probe_answered_at_once_is_no_second_simulation() -> None:
    simulated._run.cache_clear()
    runs = [simulated.slow_start(*_pod(timeout), 45.0) for timeout in (1, 3, 5)]
    assert simulated._run.cache_info().misses == 1
    assert runs[0] == runs[1] == runs[2]


def test_a_slow_answer_keeps_the_timeouts_apart() -> None:
    simulated._run.cache_clear()
    short, long = (simulated.hung(*_pod(t), ProbeType.LIVENESS) for t in (1, 5))
    assert simulated._run.cache_info().misses == 2
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
