"""A CI-sized run of `benchmarks.triage`, so the benchmark cannot rot: the figures are there and
every workload got its line (no budget is held here; the full run's table says)."""

from __future__ import annotations

from benchmarks import triage


def test_triage_benchmark_runs_small() -> None:
    result = triage.run(pods=60, groups=6, attempts=10, repeat=1)
    x = result["results"]
    assert x["lines"] == 6 and x["view_p99_ms"] >= x["view_p50_ms"] > 0
    assert x["summary_tick_s"] > 0 and "triage" in triage.table(result)
