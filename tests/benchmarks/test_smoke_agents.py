"""A CI-sized run of `benchmarks.agents`, so it cannot rot: a real agent process over a few pods
on the API emulator for a few seconds, and a small ring. The figures are not held to their
goals here (the full run's table says); every figure must be there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks import agents

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _args(*argv: str) -> object:
    return agents._parser().parse_args(list(argv))


def test_node_mode_runs_small() -> None:
    args = _args("--pods", "4", "--period", "1", "--warmup", "3", "--duration", "2")
    result = agents.run(args)  # type: ignore[arg-type]
    assert result["mode"] == "node" and result["probes"] == 12
    # four pods' probes share a wake-up a second: the agent's CPU over two seconds may stay
    # under one clock tick of /proc's accounting
    assert result["attempts_per_s"] > 0 and result["agent_cores"] >= 0
    assert result["rss_mb"] > 0 and result["kubelet_scrapes"] >= 1
    assert result["kubelet_scrape_errors"] == 0 and result["reader_bytes_per_s"] > 0
    assert result["agent_wakeups_per_s"] > 0 and result["agent_threads"] >= 1
    assert result["machine_busy_cores"] > 0
    assert "one node agent" in agents.table(result)
    assert result["environment"]["reference_ms"] > 0 and "machine speed" in agents.table(result)
    assert result["agent_instructions_per_attempt"] is None


@pytest.mark.skipif(shutil.which("callgrind_control") is None, reason="valgrind not installed")
def test_node_mode_counts_instructions_under_callgrind(tmp_path: Path) -> None:
    """--callgrind: the window's instructions an attempt, the start-up left out."""
    out = tmp_path / "agent.cg"
    args = _args(
        "--pods", "2", "--period", "1", "--warmup", "3", "--duration", "2",
        "--callgrind", str(out),
    )  # fmt: skip
    result = agents.run(args)  # type: ignore[arg-type]
    assert result["attempts_per_s"] > 0
    assert result["agent_instructions_per_attempt"] > 0
    assert "(callgrind)" in agents.table(result)


def test_ring_mode_runs_small() -> None:
    result = agents.run(_args("--mode", "ring", "--pods", "5", "--period", "60"))  # type: ignore[arg-type]
    assert result["attempts"] == 5 * 3 * 60 == result["replay_entries"]
    assert result["bytes_per_attempt"] > 0 and result["replay_mb"] > 0
    assert "ring" in agents.table(result)


def test_fanin_mode_runs_small() -> None:
    """Three agents of a few pods (two in one process), the emulator relaying, the view headless
    and on the screen."""
    args = _args(
        "--mode", "fanin", "--agents", "3", "--agents-per-process", "2", "--pods-per-agent", "4",
        "--rate", "36", "--warmup", "1", "--duration", "2", "--baseline", "0.5",
    )  # fmt: skip
    result = agents.run(args)  # type: ignore[arg-type]
    assert result["mode"] == "fanin" and result["pods"] == 12 and result["probes"] == 36
    assert result["agent_processes"] == 2 and result["headless"]["stream_connections"] >= 3
    headless, screen = result["headless"], result["screen"]
    assert headless["fed_per_s"] > 0 and headless["attempts_per_s"] > 0
    assert headless["late"]["n"] > 0 and headless["client_us_per_attempt"] > 0
    # the emulator's CPU over a two-second window can stay under one clock tick of its own
    assert headless["emulator_us_per_attempt"] >= 0 and headless["relayed_bytes_per_attempt"] > 0
    assert headless["client_baseline_cores"] is not None and headless["agents_cores"] > 0
    assert screen["keys_without_repaint"] == [] and screen["key_to_repaint"]["n"] >= 2
    assert screen["relayed_bytes_per_s"] > 0 and screen["focus_pods"]
    assert screen["attempts_per_s"] > 0  # the pods shown are the Deployments', which have probes
    assert result["agent_rss_mb"] > 0 and result["emulator_rss_mb"] > 0
    assert "fan-in" in agents.table(result)


def test_fanin_summaries_client_reads_summaries_only() -> None:
    """An aggregator's reading: summaries of every probe through pods/proxy, no attempt, the
    shadow's results turned over so summaries come sooner than once a minute, and the counts
    frames of a kubelet scrape a second."""
    args = _args(
        "--mode", "fanin", "--agents", "2", "--agents-per-process", "2", "--pods-per-agent", "3",
        "--rate", "18", "--changes", "9", "--counts-every", "1", "--client", "summaries",
        "--warmup", "1", "--duration", "2", "--baseline", "0.5",
    )  # fmt: skip
    result = agents.run(args)  # type: ignore[arg-type]
    assert "headless" not in result and "screen" not in result
    m = result["summaries"]
    assert m["probes_held"] == result["probes"] == 18
    assert m["attempts_per_s"] == 0 and m["pods_asked_in_full"] == [0, 0]
    assert m["offered_per_s"] > 0 and m["summaries_per_s"] > 0
    assert m["counts_offered_per_s"] > 0 and m["counts_per_s"] > 0
    assert m["client_us_per_summary"] >= 0 and m["client_baseline_cores"] is not None
    assert (
        m["store_bytes_per_probe"] > m["values_only_bytes_per_probe"] > 0
        and m["rss_mb"] > 0
        and m["relayed_bytes_per_s"] > 0
    )
    assert "summaries: flow" in agents.table(result)


def test_fanin_shadow_turns_results_over_at_the_rate_asked() -> None:
    from benchmarks import fanin
    from probetui.agent.hub import Hub
    from probetui.agent.ring import Ring

    config = fanin.Config(agents=1, pods_per_agent=4, rate=12.0)
    shadow = fanin.SyntheticShadow(fanin.cluster(config)[fanin.node_name(0)], 12.0, 3.0)
    hub = Hub(Ring(60.0, 1000), node=fanin.node_name(0))
    shadow.publish(hub, 36)
    assert shadow.flips == 9  # one attempt in four: three probes turned over three times
    published = sorted(s.state()[0] for s in hub.summaries.values())
    assert published == [0] * 9 + [1] * 3  # ResultValue.FAILURE is 1
    # a scrape: the kubelet agreeing with the shadow, a counts frame of every probe
    from probetui.agent.counts import CountsJoin

    assert shadow.scrape(hub, CountsJoin(0.0)) == 0  # no reader attached
    frames = list(hub.counts.values())
    assert len(frames) == 12 and all(f["kubelet"] == f["shadow"] for f in frames)
    assert sum(f["shadow"]["successful"] + f["shadow"]["failed"] for f in frames) == 36


def test_fanin_cluster_spreads_each_workload_over_every_node() -> None:
    from benchmarks import fanin

    config = fanin.Config(agents=3, pods_per_agent=4, rate=36.0)
    nodes = fanin.cluster(config)
    assert sorted(nodes) == [fanin.node_name(n) for n in range(3)]
    assert all(len(pods) == 4 for pods in nodes.values())
    owners: dict[str, set[str]] = {}
    for pods in nodes.values():
        for pod in pods:
            owner = pod["metadata"]["ownerReferences"][0]["name"]
            owners.setdefault(owner, set()).add(pod["spec"]["nodeName"])
    assert len(owners) == 4 and all(found == set(nodes) for found in owners.values())
    uids = {p["metadata"]["uid"] for pods in nodes.values() for p in pods}
    assert len(uids) == 12 and all(len(u) == 36 for u in uids)
    assert config.period == 1  # 36 probes at 36 attempts/s
