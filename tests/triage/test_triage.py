"""The triage model (probetui.triage) over a real Store filled with a worker's arithmetic: a
workload's counts now, its latency percentiles, the replicas that differ, restarts in the last
hour, and the WorkloadSummary line built from the same numbers."""

from __future__ import annotations

import json

from probetui.engine import Sink
from probetui.keys import ContainerKey
from probetui.probe.base import Result
from probetui.spec.model import Container, Pod, Probe, ProbeType
from probetui.timeline.store import Store
from probetui.triage.groups import FleetCount, fleet, recent_restarts, workloads, worst_member
from probetui.triage.probes import FAIL, HOLD, PASS, UNKNOWN, percentile, workload_probes
from probetui.triage.report import summary_lines, workload_summary
from tests.timeline.synth import T0, Synth
from tests.ui.fakes import http

R, L = ProbeType.READINESS, ProbeType.LIVENESS
GID = "shop/Deployment/search"
NOW = T0 + 300.0


def replica(s: Synth, i: int, *, timeout: int = 1, sidecar: bool = False) -> Pod:
    containers = [
        Container(
            name="app",
            readiness_probe=http(8080, "/ready", period_seconds=10, timeout_seconds=timeout),
            liveness_probe=http(8080, "/healthz", period_seconds=10, failure_threshold=3),
        )
    ]
    if sidecar:
        containers.append(Container(name="proxy", readiness_probe=Probe(period_seconds=10)))
    return s.add_pod(
        Pod(
            name=f"search-5b7c9-{i}",
            namespace="shop",
            uid=f"uid-search-{i}",
            containers=tuple(containers),
            owner_kind="Deployment",
            owner_name="search",
        ),
        T0,
    )


def search(store: Store, *, slow: float | None = None) -> Synth:
    """Five replicas: 0 and 1 pass, 2 fails readiness, 3 is held after its liveness failed
    (waiting for the kill), 4 has not been probed yet; replica 1's latency is `slow`."""
    s = Synth(store)
    for i in range(5):
        pod = replica(s, i)
        s.start(pod, "app", T0 + 1)
        if i == 4:
            continue
        for k in range(20):
            t = T0 + 5 + 10 * k
            bad = i == 2 and k >= 15
            latency = slow if i == 1 and slow is not None else 0.002 + 0.001 * (k % 3)
            s.attempt(pod, "app", R, t, Result.FAILURE if bad else Result.SUCCESS, latency=latency)
            dying = i == 3 and k >= 17
            s.attempt(pod, "app", L, t + 1, Result.FAILURE if dying else Result.SUCCESS)
    return s


def uids() -> list[str]:
    return [f"uid-search-{i}" for i in range(5)]


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 90) == 90.0
    assert percentile(values, 99) == 99.0
    assert percentile([0.3], 99) == 0.3
    assert percentile([], 50) is None


def test_counts_replicas_passing_failing_held_and_unknown_now() -> None:
    store = Store()
    search(store)
    view = workload_probes(store, GID, uids(), NOW)
    ready, live = view.probes
    assert (ready.probe, live.probe) == (R, L)
    assert ready.counts == {PASS: 3, FAIL: 1, HOLD: 0, UNKNOWN: 1}
    # replica 3's liveness failed three times: published Failure, held for the kill
    assert live.counts == {PASS: 3, FAIL: 0, HOLD: 1, UNKNOWN: 1}
    assert view.summary.replicas == 5 and not view.several


def test_the_replicas_that_differ_by_state_are_named_with_the_rest_s_state() -> None:
    store = Store()
    search(store)
    ready, live = workload_probes(store, GID, uids(), NOW).probes
    by_pod = {d.pod: d for d in ready.differ}
    assert set(by_pod) == {"search-5b7c9-2", "search-5b7c9-4"}
    assert by_pod["search-5b7c9-2"].state == FAIL and by_pod["search-5b7c9-2"].rest == PASS
    assert by_pod["search-5b7c9-4"].state == UNKNOWN
    assert {(d.pod, d.state) for d in live.differ} == {
        ("search-5b7c9-3", HOLD),
        ("search-5b7c9-4", UNKNOWN),
    }


def test_latency_percentiles_pool_every_replica_s_recent_attempts() -> None:
    store = Store()
    search(store)
    ready = workload_probes(store, GID, uids(), NOW).probes[0]
    # four probed replicas, their last 20 attempts each (the ring keeps more)
    assert ready.attempts == 80
    assert ready.p50 is not None and ready.p99 is not None
    assert abs(ready.p50 - 0.003) < 1e-6 and abs(ready.p99 - 0.004) < 1e-6
    assert ready.timeouts == (1.0,)
    assert not [d for d in ready.differ if d.why == "slow"]


def test_a_replica_far_slower_than_the_rest_differs_by_latency() -> None:
    store = Store()
    search(store, slow=0.6)
    ready = workload_probes(store, GID, uids(), NOW).probes[0]
    slow = [d for d in ready.differ if d.why == "slow"]
    assert [d.pod for d in slow] == ["search-5b7c9-1"]
    assert slow[0].p50 == 0.6 and abs(float(slow[0].rest or 0) - 0.003) < 1e-6
    # its attempts are in the pool: the p90 is near the timeout
    assert ready.p90 == 0.6


def test_jitter_of_a_few_milliseconds_is_no_outlier() -> None:
    store = Store()
    search(store, slow=0.009)  # three times the others' 3 ms, but only 6 ms slower
    ready = workload_probes(store, GID, uids(), NOW).probes[0]
    assert not [d for d in ready.differ if d.why == "slow"]


def test_the_worst_replica_is_the_held_one_and_sorted_first() -> None:
    store = Store()
    search(store)
    view = workload_probes(store, GID, uids(), NOW)
    held = ContainerKey("uid-search-3", "app")
    assert view.worst == held == worst_member(store, uids())
    scores = [score for score, _ in view.replicas]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_several_containers_are_counted_per_container_name() -> None:
    store = Store()
    s = Synth(store)
    for i in range(2):
        replica(s, i, sidecar=True)
    view = workload_probes(store, GID, ["uid-search-0", "uid-search-1"], NOW)
    assert view.several
    assert [(p.container, p.probe) for p in view.probes] == [("app", R), ("app", L), ("proxy", R)]


def test_restarts_in_the_last_hour_count_the_starts_after_the_first() -> None:
    store = Store()
    s = Synth(store)
    pod = replica(s, 0)
    for t in (T0 + 1, T0 + 100, T0 + 200):
        s.start(pod, "app", t)
        s.exit(pod, "app", t + 50, 137)
    assert recent_restarts(store, ["uid-search-0"], T0 + 300) == 2
    # an hour on, the first of the two restarts has left the window
    assert recent_restarts(store, ["uid-search-0"], T0 + 3750) == 1


def test_pods_without_a_controller_are_workloads_of_their_own() -> None:
    store = Store()
    s = search(store)
    s.add_pod(Pod(name="debug", namespace="shop", uid="uid-debug", containers=()), T0)
    groups = workloads(store)
    assert list(groups) == ["shop/Deployment/search", "shop/Pod/debug"]
    assert groups[GID] == uids()


def test_the_summary_line_carries_the_same_numbers() -> None:
    store = Store()
    search(store)
    line = workload_summary(store, GID, uids(), NOW)
    assert line["type"] == "WorkloadSummary" and line["ts"] == "2025-10-09T08:58:20.000+00:00"
    assert (line["namespace"], line["kind"], line["name"]) == ("shop", "Deployment", "search")
    assert set(line) >= {"pod", "container", "probe", "source"} and line["pod"] is None
    assert line["replicas"] == 5 and line["ready"] == 3 and line["kubeletNotReady"] == 2
    # replica 4 has only its readiness' initial value (Failure): no verdict, not counted
    assert line["shadowNotReady"] == 1 and line["divergent"] == 0 and line["restartsLastHour"] == 0
    # the held liveness costs most: the container is about to be killed
    assert line["worstProbe"] == "liveness" and line["worstReplica"] == "search-5b7c9-3"
    ready = line["probes"][0]
    assert (ready["probe"], ready["pass"], ready["fail"], ready["onHold"], ready["unknown"]) == (
        "readiness",
        3,
        1,
        0,
        1,
    )
    assert ready["timeoutSeconds"] == 1.0 and ready["latency_ms"]["p99"] == 4.0
    assert {d["pod"] for d in ready["differ"]} == {"search-5b7c9-2", "search-5b7c9-4"}
    lines = summary_lines(store, NOW)
    assert len(lines) == 1 and json.loads(lines[0]) == line


def test_a_healthy_workload_names_no_worst_probe_or_replica() -> None:
    store = Store()
    s = Synth(store)
    for i in range(2):
        pod = replica(s, i)
        s.start(pod, "app", T0 + 1)
        for k in range(5):
            s.attempt(pod, "app", R, T0 + 5 + 10 * k)
            s.attempt(pod, "app", L, T0 + 6 + 10 * k)
    line = workload_summary(store, GID, ["uid-search-0", "uid-search-1"], NOW)
    assert line["worstProbe"] is None and line["worstReplica"] is None
    assert all(not p["differ"] for p in line["probes"])


def test_where_nothing_is_probed_the_kubelet_s_not_ready_replica_differs() -> None:
    """Read-only through the API server the shadow probes nothing: every replica is unknown,
    and the kubelet's verdict is what sets the bad one apart."""
    store = Store()
    s = Synth(store)
    for i in range(3):
        pod = replica(s, i)
        s.start(pod, "app", T0 + 1)
        if i != 1:
            s.set_ready(pod, "app", True, T0 + 5)
    ready = workload_probes(store, GID, uids()[:3], NOW).probes[0]
    assert ready.counts[UNKNOWN] == 3
    assert [(d.pod, d.why, d.rest) for d in ready.differ] == [("search-5b7c9-1", "kubelet", True)]
    line = workload_summary(store, GID, uids()[:3], NOW)
    assert line["shadowNotReady"] == 0 and line["kubeletNotReady"] == 1
    assert line["worstReplica"] == "search-5b7c9-1"


def fleet_of(sink: Sink, workloads_: int, replicas: int) -> Synth:
    s = Synth(sink)
    for w in range(workloads_):
        for i in range(replicas):
            pod = s.add_pod(
                Pod(
                    name=f"svc-{w}-{i}",
                    namespace="shop",
                    uid=f"uid-svc-{w}-{i}",
                    containers=(Container(name="app", readiness_probe=http(8080, "/ready")),),
                    owner_kind="Deployment",
                    owner_name=f"svc-{w}",
                ),
                T0,
            )
            s.start(pod, "app", T0 + 1)
            s.attempt(pod, "app", R, T0 + 5, Result.FAILURE if i == 0 else Result.SUCCESS)
    return s


def test_a_summary_tick_comes_in_slices_of_the_same_lines() -> None:
    """A tick is made a slice at a time (the loop is served between them): the same lines in
    the same order; with no time to spare, one workload a slice."""
    from probetui.triage.report import summary_slices

    store = Store()
    fleet_of(store, 12, 3)
    slices = list(summary_slices(store, NOW, budget=0))
    assert [len(b) for b in slices] == [1] * 12
    assert [line for b in slices for line in b] == summary_lines(store, NOW)
    assert len(list(summary_slices(store, NOW, budget=60))) == 1


def test_a_slice_reads_the_store_as_it_is_when_its_line_is_made() -> None:
    """Pods gone between two slices are not counted in the later lines; a workload gone
    altogether has none."""
    from probetui.triage.report import summary_slices

    store = Store()
    s = fleet_of(store, 3, 3)
    slices = summary_slices(store, NOW, budget=0)
    first = json.loads(next(slices)[0])
    assert (first["name"], first["replicas"]) == ("svc-0", 3)
    store.pod(s.pods["uid-svc-1-2"], None)
    for i in range(3):
        store.pod(s.pods[f"uid-svc-2-{i}"], None)
    rest = [json.loads(line) for b in slices for line in b]
    assert [(x["name"], x["replicas"]) for x in rest] == [("svc-1", 2)]


class _Walked(dict):
    """A pods table that counts how often it is walked whole."""

    walks = 0

    def values(self):  # type: ignore[override]
        type(self).walks += 1
        return super().values()

    def items(self):  # type: ignore[override]
        type(self).walks += 1
        return super().items()


def test_the_fleet_count_follows_the_store_and_counts_again_only_what_changed() -> None:
    from tests.ui.fakes import T_END, build, build_fleet

    store = Store()
    synth = build(store, False)
    build_fleet(synth)
    counter = FleetCount(store)
    assert counter.count(T_END) == fleet(store, T_END)
    # the restarts' window moves with time alone
    assert counter.count(T_END + 3600) == fleet(store, T_END + 3600)
    store.pods = _Walked(store.pods)
    crashy = next(p.pod for p in store.pods.values() if p.pod.name.startswith("crashy"))
    before = counter.count(T_END)
    synth.kubelet(crashy, "worker", "Divergence", T_END, source="kubelet", message="diverged")
    walks = _Walked.walks
    assert counter.count(T_END) == fleet(store, T_END)
    assert counter.count(T_END).divergent == before.divergent + 1
    assert _Walked.walks == walks + 1  # `fleet` walked the pods, the count did not
    # a pod gone: counted anew
    synth.sinks[0].pod(crashy, None)
    assert counter.count(T_END) == fleet(store, T_END)


def test_the_fleet_count_after_a_seek_looks_again_only_at_pods_listed_otherwise() -> None:
    """A replay's seek refills every container of its store: the count looks again only at
    the pods whose listed state is not as it was (here a divergence), and stays `fleet`'s."""
    from probetui.replay.store import ReplayStore
    from probetui.triage import groups

    app = Container(name="app", readiness_probe=http(8080, "/ready"))
    pods = [Pod(name=f"api-{i}", uid=f"uid-api-{i}", containers=(app,)) for i in range(3)]

    def moment(store: Store, diverged: bool) -> None:
        s = Synth(store)
        for p in pods:
            s.add_pod(p, T0)
            s.start(p, "app", T0)
            s.attempt(p, "app", ProbeType.READINESS, T0 + 1)
        if diverged:
            s.kubelet(pods[1], "app", "Divergence", T0 + 2, source="kubelet", message="diverged")

    store = ReplayStore()
    moment(store, diverged=False)
    counter = FleetCount(store)
    assert counter.count(NOW) == fleet(store, NOW)
    fresh = store.fresh_for_seek()
    moment(fresh, diverged=True)
    store.swap_in(fresh)
    looked: list[str] = []
    facts = groups._fleet_facts

    def counting(store: Store, entry):  # type: ignore[no-untyped-def]
        looked.append(entry.pod.uid)
        return facts(store, entry)

    groups._fleet_facts = counting  # type: ignore[assignment]
    try:
        counted = counter.count(NOW)
    finally:
        groups._fleet_facts = facts  # type: ignore[assignment]
    assert counted == fleet(store, NOW)
    assert counted.divergent == 1
    assert looked == ["uid-api-1"]
