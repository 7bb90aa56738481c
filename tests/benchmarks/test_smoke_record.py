"""A CI-sized run of `benchmarks.record`, so the benchmark cannot rot: the write path through
the whole engine at 40 workers, the steady probes for a few minutes of virtual time, no demo.
The figures are not held to their goals here (that is the full run's job)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks import record

pytestmark = pytest.mark.timeout(120)


def test_record_benchmark_gives_every_figure() -> None:
    result = record.compute(
        argparse.Namespace(
            skip_write_path=False,
            no_gc_freeze=False,
            workers=40,
            period=1,
            duration=0.5,
            warmup=1.0,
            steady=20,
            hours=0.05,
            demo_seconds=0,
        )
    )
    w = result["write_path"]
    assert w["recorder_failure"] is None and w["file_bytes"] > 0
    assert all(n > 0 for n in w["attempts_per_s"])
    assert w["errors"] == [0, 0]
    s = result["steady"]
    assert s["attempts"] == 20 * 180 and 0 < s["bytes_per_attempt"] < 40
    assert "24 h x 15,000 probes" in record.table(result)
