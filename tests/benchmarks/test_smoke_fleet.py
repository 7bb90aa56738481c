"""A CI-sized run of `benchmarks.fleet`, so it cannot rot: the real cluster view (the
kubernetes runtime, the engine, the app on the null terminal) over a small fleet on the API
emulator in its own process, for about a second of key presses while it edits pods. The
figures are not held to their goals here (the full run's table says); every figure must be
there and every key must have repainted."""

from __future__ import annotations

import pytest

from benchmarks import fleet

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_fleet_benchmark_runs_small() -> None:
    config = fleet.Config(
        pods=40, workloads=8, duration=1.0, warmup=0.3, updates_per_s=20.0, pause=(0.0, 0.05)
    )
    result = fleet.run(config)
    assert result["keys_without_repaint"] == []
    assert result["key_to_repaint"]["n"] >= len(fleet.MOVE_KEYS)
    # a round of moves is followed by a sort and the filter typed and left
    assert result["filter_sort_to_repaint"]["n"] >= 2 + len(fleet.FILTER_TEXT)
    assert 0 < result["first_full_screen_s"] < 30
    # a workload's line for each of the 8, and a line for each container (sidecars on 4 pods)
    assert result["rows"] == 8 + 40 + 4
    assert result["updates_per_s"] > 0
    assert "fleet" in fleet.table(result)


def test_the_fleet_has_every_controller_kind_and_its_wrong_replicas() -> None:
    pods = fleet.cluster_pods(2000, 100, port=8080, closed=9)
    kinds = {p["metadata"]["ownerReferences"][0]["kind"] for p in pods}
    assert kinds == {"ReplicaSet", "StatefulSet", "DaemonSet", "Job"}
    deployment = next(p for p in pods if p["metadata"]["name"].startswith("svc-0-"))
    assert deployment["metadata"]["labels"]["pod-template-hash"] == fleet.HASH
    refused = [
        p for p in pods if p["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] == 9
    ]
    not_ready = [p for p in refused if not p["status"]["containerStatuses"][0]["ready"]]
    # one workload down on both sides; divergent replicas fail for the shadow alone
    assert len(not_ready) == 20 and 0 < len(refused) - len(not_ready) < 100
