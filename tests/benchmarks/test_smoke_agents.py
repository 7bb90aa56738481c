"""A CI-sized run of `benchmarks.agents`, so it cannot rot: a real agent process over a few pods
on the API emulator for a few seconds, and a small ring. The figures are not held to their
goals here (the full run's table says); every figure must be there."""

from __future__ import annotations

import pytest

from benchmarks import agents

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _args(*argv: str) -> object:
    return agents._parser().parse_args(list(argv))


def test_node_mode_runs_small() -> None:
    args = _args("--pods", "4", "--period", "1", "--warmup", "3", "--duration", "2")
    result = agents.run(args)  # type: ignore[arg-type]
    assert result["mode"] == "node" and result["probes"] == 12
    assert result["attempts_per_s"] > 0 and result["agent_cores"] > 0
    assert result["rss_mb"] > 0 and result["kubelet_scrapes"] >= 1
    assert result["kubelet_scrape_errors"] == 0 and result["reader_bytes_per_s"] > 0
    assert result["agent_wakeups_per_s"] > 0 and result["agent_threads"] >= 1
    assert result["machine_busy_cores"] > 0
    assert "one node agent" in agents.table(result)


def test_ring_mode_runs_small() -> None:
    result = agents.run(_args("--mode", "ring", "--pods", "5", "--period", "60"))  # type: ignore[arg-type]
    assert result["attempts"] == 5 * 3 * 60 == result["replay_entries"]
    assert result["bytes_per_attempt"] > 0 and result["replay_mb"] > 0
    assert "ring" in agents.table(result)
