"""A CI-sized run of `benchmarks.seek_work`, so the benchmark cannot rot: a few probes for two
minutes recorded, two seeks counted on the real replay screen, then twice more on that recording
(the counts must not move from one run to the next beyond the loop's own turns: the benchmark's
point)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(recording: Path, *more: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable, "-m", "benchmarks.seek_work", "--probes", "20", "--minutes", "2",
            "--seeks", "2", "--recording", str(recording), "--json", *more,
        ],
        capture_output=True, text=True, cwd=ROOT, timeout=540,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.timeout(300)
def test_seek_work_counts_the_same_calls_each_run(tmp_path: Path) -> None:
    written = _run(tmp_path / "steady.db")
    assert written["recording"]["attempts"] == 20 * 12
    # the runs that read the recording written by the first
    first = _run(tmp_path / "steady.db")
    assert first["calls"]["seek"] > 0 and first["calls"]["repaint"] > 0
    again = _run(tmp_path / "steady.db")["calls"]
    assert again["seek"] == first["calls"]["seek"]
    # the loop turns while the frame is waited for: a few hundred calls more or less, which on
    # this small recording is a few per cent of the repaint's (a thousandth on the full one)
    assert again["repaint"] == pytest.approx(first["calls"]["repaint"], rel=0.05)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("callgrind_control") is None, reason="valgrind not installed")
def test_seek_work_counts_instructions_under_callgrind(tmp_path: Path) -> None:
    result = _run(tmp_path / "steady.db", "--callgrind")
    assert result["instructions"]["seek"] > 0 and result["instructions"]["repaint"] > 0
