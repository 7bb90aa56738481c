"""A CI-sized run of `benchmarks.replay`, so the benchmark cannot rot: a few probes for two
minutes, two seeks, and the day's what-if (which the full run measures unchanged). The figures
are not held to their goals here (that is the full run's job)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import replay

pytestmark = pytest.mark.timeout(120)


def test_replay_benchmark_gives_every_figure() -> None:
    result = replay.compute(argparse.Namespace(probes=20, minutes=2.0, period=10, seeks=2))
    s, w = result["screen"], result["what_if"]
    assert s["attempts"] == 20 * 12 and s["attempts_in_store"] > 0
    assert len(s["seek_s"]) == 2 and s["step_10s_s"]
    assert w["self_check"] and w["kills"] == [24, 0] and w["attempts"] > 17000
    assert "what-if, 24 h of one pod" in replay.table(result)
