"""A CI-sized run of `benchmarks.replay_keys`, so the benchmark cannot rot: a few probes for two
minutes recorded, the replay screen playing at 100x for a few seconds with keys pressed. The
figures are not held to their goals here (that is the full run's job)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from benchmarks import replay_keys

pytestmark = pytest.mark.timeout(120)


def test_replay_keys_benchmark_presses_keys_while_playing(tmp_path: Path) -> None:
    args = argparse.Namespace(
        probes=20, minutes=2.0, period=10, duration=2.0, speed=100.0, at=5.0,
        recording=str(tmp_path / "steady.db"),
    )  # fmt: skip
    result = replay_keys.compute(args)
    assert result["recording"]["attempts"] == 20 * 12
    assert result["key_to_repaint"]["n"] > 0 and not result["keys_without_repaint"]
    assert result["speed_reached"] > 0 and result["slices"]["n"] > 0
    assert "key press to repaint" in replay_keys.table(result)
