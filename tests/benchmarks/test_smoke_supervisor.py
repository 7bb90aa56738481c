"""A CI-sized run of the supervisor benchmark, so it cannot rot: every figure is there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)


def test_supervisor_benchmark_reports_start_cpu_and_memory(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    argv = ["--starts", "3", "--resident", "2", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.supervisor", *argv],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    for mode in ("supervised", "direct"):
        assert result[mode]["start"]["n"] == 3
        assert result[mode]["cpu_ms_per_start"] > 0
    assert result["supervisor_memory"]["private_mb"] > 0
