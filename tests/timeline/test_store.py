"""The timeline store: bounded rings, shared texts, change tracking, memory per attempt."""

from __future__ import annotations

import gc
import tracemalloc
from dataclasses import replace

import pytest

from probetui.keys import ContainerKey, ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.worker import ProbeRecord, Skip, Trigger
from probetui.replay.store import ReplayStore
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType
from probetui.timeline.events import SHADOW, Event
from probetui.timeline.history import Kind, record_shape
from probetui.timeline.store import Store
from tests.record.helpers import assert_same_store
from tests.timeline.synth import T0, Synth

R, L = ProbeType.READINESS, ProbeType.LIVENESS


def web_pod(name: str = "web", uid: str = "uid-web") -> Pod:
    http = HTTPGetAction(port=8080, path="/ready")
    c = Container(
        name="app",
        readiness_probe=Probe(http_get=http, period_seconds=1, failure_threshold=3),
        liveness_probe=Probe(http_get=HTTPGetAction(port=8080, path="/healthz"), period_seconds=5),
    )
    return Pod(name=name, uid=uid, containers=(c,))


def test_ring_wraps_and_keeps_the_newest_in_time_order() -> None:
    store = Store(capacity=10, detail=4)
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.start(pod, "app", T0)
    for i in range(25):
        synth.attempt(pod, "app", R, T0 + i, Result.SUCCESS)
    h = store.probe(ProbeKey(pod.uid, "app", R))
    assert h is not None and len(h) == 10 and h.seq == 25
    assert h.oldest_t == T0 + 15
    assert [t for t, _ in h.window(T0, T0 + 100)] == [T0 + i for i in range(24, 14, -1)]
    assert h.window(T0 + 20, T0 + 22) == [(T0 + 21, Kind.SUCCESS), (T0 + 20, Kind.SUCCESS)]
    assert h.counts[Kind.SUCCESS] == 25  # totals are not bounded by the ring


def test_rings_are_sized_by_time_not_by_probe_rate() -> None:
    """An hour of each probe: period 1 s fills the cap, period 5 s needs a fifth of it.

    Memory is then set by the number of probes and the hour, whatever their periods (the
    history benchmark's 15,000 workers at period 10 s: 541 entries each)."""
    store = Store(capacity=3600, history_seconds=3600)
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.start(pod, "app", T0)
    synth.attempt(pod, "app", R, T0, Result.SUCCESS)
    synth.attempt(pod, "app", ProbeType.LIVENESS, T0, Result.SUCCESS)
    readiness = store.probe(ProbeKey(pod.uid, "app", R))
    liveness = store.probe(ProbeKey(pod.uid, "app", ProbeType.LIVENESS))
    assert readiness is not None and readiness.capacity == 3600  # 1.5 x 3600 / 1, capped
    assert liveness is not None and liveness.capacity == 1081  # 1.5 x 3600 / 5, + 1


def test_only_the_last_attempts_keep_their_detail() -> None:
    store = Store(capacity=100, detail=3)
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.start(pod, "app", T0)
    for i in range(6):
        synth.attempt(pod, "app", R, T0 + i, Result.FAILURE, body=f"db down {i}")
    synth.skip(pod, "app", R, T0 + 6, Skip.PAUSED)
    h = store.probe(ProbeKey(pod.uid, "app", R))
    views = h.recent(10)
    assert [v.kind for v in views][:2] == [Kind.SKIP, Kind.FAILURE]
    assert views[0].skip_reason == "paused"
    assert [v.detail for v in views] == [False, True, True, True, False, False, False]
    v = views[1]
    assert v.body == "db down 5" and v.target == "http://127.0.0.1:8080/ready"
    assert v.output == "HTTP probe failed with statuscode: 503" and v.status_code == 503
    assert v.event == "Readiness probe failed: HTTP probe failed with statuscode: 503"
    assert v.result_run == 6 and v.published is ResultValue.FAILURE


def test_texts_are_shared_and_released_when_overwritten() -> None:
    store = Store(capacity=50, detail=5)
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.start(pod, "app", T0)
    for i in range(1000):
        synth.attempt(pod, "app", R, T0 + i, Result.FAILURE, body="same body")
    # output, target, body, event message (+ the empty string): repeated texts are stored once
    assert len(store.texts) == 5
    for i in range(1000):
        synth.attempt(pod, "app", R, T0 + 1000 + i, Result.FAILURE, output=f"unique {i}")
    # only the texts the ring still refers to are held
    assert len(store.texts) <= 50 + 5 * 4 + 1
    synth.sinks[0].pod(pod, None)  # the pod is gone: everything it held goes
    assert len(store.texts) == 1 and store.probes == {}


def test_result_changes_are_kept_but_not_the_first_publication() -> None:
    store = Store()
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.start(pod, "app", T0)  # readiness Failure: the initial value, not a change
    synth.attempt(pod, "app", R, T0 + 1, Result.SUCCESS)  # -> Success
    for i in range(3):
        synth.attempt(pod, "app", R, T0 + 2 + i, Result.FAILURE)  # third one -> Failure
    h = store.probe(ProbeKey(pod.uid, "app", R))
    changes = h.changes(T0, T0 + 100)
    assert [r for _, r in changes] == [ResultValue.SUCCESS, ResultValue.FAILURE]
    assert h.published is ResultValue.FAILURE and h.result_run == 3
    assert h.last_result is ResultValue.FAILURE


def test_versions_say_which_container_changed() -> None:
    store = Store()
    synth = Synth(store)
    a = synth.add_pod(web_pod("a", "uid-a"), T0)
    b = synth.add_pod(web_pod("b", "uid-b"), T0)
    synth.start(a, "app", T0)
    synth.start(b, "app", T0)
    layout, seen = store.layout_version, store.version
    synth.attempt(a, "app", R, T0 + 1)
    assert store.changed_since(seen) == [ContainerKey("uid-a", "app")]
    assert store.layout_version == layout  # no pod came or went
    seen = store.version
    synth.kubelet(b, "app", "Killing", T0 + 2, message="Container app failed liveness probe")
    assert store.changed_since(seen) == [ContainerKey("uid-b", "app")]
    marks = store.container(ContainerKey("uid-b", "app")).marks
    assert [m.type for m in marks][-1] == "Killing"


class _Walked(dict):
    """A containers table that counts how often it is walked whole."""

    walks = 0

    def items(self):  # type: ignore[override]
        type(self).walks += 1
        return super().items()


def test_a_poll_reads_what_changed_not_every_container() -> None:
    store = Store()
    synth = Synth(store)
    pods = [synth.add_pod(web_pod(f"p{i}", f"uid-{i}"), T0) for i in range(200)]
    for pod in pods:
        synth.start(pod, "app", T0)
    seen = store.version
    store.containers = _Walked(store.containers)
    synth.attempt(pods[7], "app", R, T0 + 1)
    synth.attempt(pods[3], "app", R, T0 + 1)
    synth.attempt(pods[7], "app", L, T0 + 1)
    assert sorted(store.changed_since(seen)) == [
        ContainerKey("uid-3", "app"),
        ContainerKey("uid-7", "app"),
    ]
    assert store.changed_since(store.version) == []
    # a screen polls ten times a second: what it asks costs the changes, not the cluster
    assert _Walked.walks == 0
    # a reader from before what the log holds still gets every change
    assert len(store.changed_since(-1)) == 200


def test_a_version_handed_back_keeps_the_changes_right() -> None:
    store = Store()
    synth = Synth(store)
    a = synth.add_pod(web_pod("a", "uid-a"), T0)
    b = synth.add_pod(web_pod("b", "uid-b"), T0)
    synth.start(a, "app", T0)
    synth.start(b, "app", T0)
    seen = store.version
    synth.attempt(a, "app", R, T0 + 1)
    kept_version = store.container(ContainerKey("uid-a", "app")).version
    # as a replay's fill does: feed, then hand the versions back
    synth.attempt(b, "app", R, T0 + 2)
    store.version = kept_version
    store.container(ContainerKey("uid-b", "app")).version = seen
    assert store.changed_since(seen) == [ContainerKey("uid-a", "app")]
    synth.attempt(b, "app", R, T0 + 3)
    assert sorted(store.changed_since(seen)) == [
        ContainerKey("uid-a", "app"),
        ContainerKey("uid-b", "app"),
    ]
    assert store.changed_since(store.version) == []


def test_unhealthy_reports_do_not_push_out_lifecycle_marks() -> None:
    store = Store(marks=8)
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.start(pod, "app", T0)
    for i in range(50):
        synth.attempt(pod, "app", R, T0 + 1 + i, Result.FAILURE)
    c = store.container(ContainerKey(pod.uid, "app"))
    assert [m.type for m in c.marks] == ["ContainerStarted"]
    assert len(c.reports) == 8


def test_divergence_counts_for_the_badge() -> None:
    store = Store()
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.kubelet(pod, "app", "Divergence", T0, message="kubelet Ready, shadow Failure")
    c = store.container(ContainerKey(pod.uid, "app"))
    assert c.divergences == 1 and c.last_divergence == "kubelet Ready, shadow Failure"


def test_engine_skip_without_a_record_is_kept_with_its_reason() -> None:
    store = Store()
    pod = web_pod()
    store.event(
        Event(
            "ProbeSkipped",
            T0,
            pod.uid,
            pod.namespace,
            pod.name,
            "app",
            "liveness",
            SHADOW,
            {"reason": "not run: read-only"},
        )
    )
    h = store.probe(ProbeKey(pod.uid, "app", L))
    assert h.recent(1)[0].skip_reason == "not run: read-only"


@pytest.mark.slow  # tracemalloc slows every allocation: about two seconds
def test_bytes_per_attempt(capsys) -> None:  # type: ignore[no-untyped-def]
    """100,000 attempts over 100 probes into an empty store, everything it allocates counted.

    The figure goes in the report (`pytest -s` shows it). One record per probe is reused with
    its time moved on, so that what tracemalloc sees is the store and not the test's objects.
    """
    attempt = Attempt("http", "http://127.0.0.1:8080/ready", Result.SUCCESS, latency=0.002)
    outcome = ProbeOutcome(ResultValue.SUCCESS, None, (attempt,), None)
    events = []
    for i in range(100):
        key = ProbeKey(f"uid-{i}", "app", R)
        record = ProbeRecord(
            key,
            T0,
            T0,
            Trigger.TICK,
            f"c{i}",
            outcome=outcome,
            result_run=1,
            last_result=ResultValue.SUCCESS,
            published=ResultValue.SUCCESS,
        )
        events.append(
            Event(
                "ProbeAttempt", T0, key.pod_uid, "ns", "p", "app", "readiness", SHADOW, {}, record
            )
        )
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = Store(capacity=1000, detail=50)
    for j in range(1000):
        t = T0 + j
        for event in events:
            object.__setattr__(event.record, "t", t)
            store.event(event)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per = (after - before) / 100_000
    with capsys.disabled():
        print(f"\nstore: {per:.1f} bytes per attempt (100 probes x 1,000 attempts, all included)")
    assert store.attempts() == 100_000
    assert per < 40


class Tape:
    """A sink that keeps what it is fed, to feed it again to a store."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def pod(self, *args: object) -> None:
        self.calls.append(("pod", args))

    def event(self, *args: object) -> None:
        self.calls.append(("event", args))

    def into(self, store: Store) -> None:
        for name, args in self.calls:
            getattr(store, name)(*args)


def _two_moments() -> tuple[Tape, Tape, list[Pod]]:
    """Three pods as a replay's seek finds them at two moments: all passing at the first; at
    the second, b's readiness has failed its threshold and a and c pass as before."""
    pods = [web_pod(n, f"uid-{n}") for n in "abc"]
    first, second = Tape(), Tape()
    for tape, t, failing in ((first, T0, ""), (second, T0 + 100, "b")):
        synth = Synth(tape)
        for p in pods:
            synth.add_pod(p, T0)
            synth.start(p, "app", T0)  # the same container instance at both
            for i in range(4):
                bad = p.name == failing and i > 0
                synth.attempt(p, "app", R, t + 1 + i, Result.FAILURE if bad else Result.SUCCESS)
    return first, second, pods


def test_a_refill_takes_the_objects_back_and_says_what_lists_as_before() -> None:
    """A replay's seek fills a fresh store that takes back the screen's store's objects
    (`fresh_for_seek` ... `swap_in`): the screen's store ends as a store fed only
    what was fed since, the layout stays where the pods are the same, and a container whose
    listed state is as before is marked so, and is not sorted again by the list."""
    from probetui.ui.widgets import rows

    first, second, _ = _two_moments()
    store = ReplayStore()
    first.into(store)
    index = rows.RowIndex(store)
    assert [r.pod_uid for r in index.listing([], "problems").rows] == ["uid-a", "uid-b", "uid-c"]
    held = store.container(ContainerKey("uid-a", "app"))
    layout, before = store.layout_version, store.version
    refill = store.fresh_for_seek()
    assert not refill.pods and not refill.probes
    second.into(refill)
    store.swap_in(refill)
    fresh = Store()
    second.into(fresh)
    assert_same_store(fresh, store)
    assert store.layout_version == layout
    assert store.container(ContainerKey("uid-a", "app")) is held  # taken back, refilled
    since = {k.pod_uid: c.listed_since() for k, c in store.containers.items()}
    assert since["uid-a"] <= before and since["uid-c"] <= before
    assert since["uid-b"] > before
    scored: list[str] = []
    score = rows.problem_score

    def counting(entry, c, history):  # type: ignore[no-untyped-def]
        scored.append(entry.pod.uid)
        return score(entry, c, history)

    rows.problem_score = counting  # type: ignore[assignment]
    try:
        listed = index.listing([], "problems").rows
    finally:
        rows.problem_score = score  # type: ignore[assignment]
    assert [r.pod_uid for r in listed] == ["uid-b", "uid-a", "uid-c"]
    assert scored == ["uid-b"]  # a and c listed as before: not scored again


def test_a_second_seek_compares_with_what_lists_now_not_with_the_last_seek() -> None:
    """The screen's store keeps what each container listed when a seek was swapped in, for the
    next seek to take back: a container that changed since (played on after the seek) is
    looked at as it lists now, so a seek that puts it back where it was is a change."""
    first, second, pods = _two_moments()
    store = ReplayStore()
    first.into(store)
    refill = store.fresh_for_seek()
    second.into(refill)
    store.swap_in(refill)
    played = Tape()
    synth = Synth(played)
    synth.add_pod(pods[0], T0)
    synth.start(pods[0], "app", T0)  # the same container instance, as in both moments
    played.calls.clear()
    for i in range(4):
        synth.attempt(pods[0], "app", R, T0 + 110 + i, Result.FAILURE)  # a fails on playing
    played.into(store)
    before = store.version
    refill = store.fresh_for_seek()
    second.into(refill)  # back to where a passed
    store.swap_in(refill)
    since = {k.pod_uid: c.listed_since() for k, c in store.containers.items()}
    assert since["uid-a"] > before  # listed otherwise than just before the seek
    assert since["uid-b"] <= before and since["uid-c"] <= before


def test_a_refill_drops_what_is_not_fed_again_and_lays_the_list_out_anew() -> None:
    first, second, pods = _two_moments()
    store = ReplayStore()
    first.into(store)
    layout = store.layout_version
    refill = store.fresh_for_seek()
    # the seek's moment before pod c was created, and b's liveness never attempted
    for name, args in second.calls:
        if name == "pod" and args[0] is pods[2]:
            continue
        if name == "event" and args[0].pod_uid == "uid-c":  # type: ignore[attr-defined]
            continue
        if name == "event" and args[0].probe == "liveness":  # type: ignore[attr-defined]
            continue
        getattr(refill, name)(*args)
    store.swap_in(refill)
    assert "uid-c" not in store.pods
    assert ContainerKey("uid-c", "app") not in store.containers
    assert not any(k.pod_uid == "uid-c" for k in store.probes)
    assert store.layout_version > layout
    b = store.container(ContainerKey("uid-b", "app"))
    assert b is not None and L not in b.probes
    assert ProbeKey("uid-b", "app", L) not in store.probes


def test_a_refill_lays_the_list_out_anew_where_a_pod_came_back_with_other_probes() -> None:
    """A seek that finds the same pods in the same order still moves the layout where a pod's
    spec probes its containers otherwise than before (its lines say what is probed)."""
    first, _, pods = _two_moments()
    store = ReplayStore()
    first.into(store)
    layout = store.layout_version
    app = pods[1].containers[0]
    slower = replace(app, readiness_probe=replace(app.readiness_probe, period_seconds=10))
    b = replace(pods[1], containers=(slower,))
    refill = store.fresh_for_seek()
    for name, args in first.calls:
        if name == "pod" and args[0] is pods[1]:
            args = (b, *args[1:])
        getattr(refill, name)(*args)
    store.swap_in(refill)
    assert store.layout_version > layout
    assert store.pods["uid-b"].pod is b
    fresh = ReplayStore()
    first.into(fresh)
    refill = fresh.fresh_for_seek()
    first.into(refill)
    layout = fresh.layout_version
    fresh.swap_in(refill)
    assert fresh.layout_version == layout  # the same specs: the layout stays


def test_a_steady_probes_records_share_one_shape() -> None:
    """A steady probe's records differ only in their numbers: their shape is one object, kept
    by the history and read by name; a record that differs in its steady part has its own."""
    store = Store()
    synth = Synth(store)
    pod = synth.add_pod(web_pod(), T0)
    synth.start(pod, "app", T0)
    first = synth.attempt(pod, "app", R, T0, Result.SUCCESS, latency=0.002)
    h = store.probe(ProbeKey(pod.uid, "app", R))
    assert h is not None and h.shape is not None
    shape = h.shape
    assert (shape.kind, shape.status, shape.last_result) == (Kind.SUCCESS, 200, ResultValue.SUCCESS)
    second = synth.attempt(pod, "app", R, T0 + 1, Result.SUCCESS, latency=0.009)
    assert h.shape is shape and record_shape(second, record_shape(first)) == shape
    synth.attempt(pod, "app", R, T0 + 2, Result.FAILURE)
    assert h.shape is not shape and h.shape.status == 503
