"""Pod objects as `kubectl get pod -o json` prints them, to the engine's Pod and PodStatus."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from probetui.prober.status import PodStatus, Running, Terminated, Waiting
from probetui.runtime.kubernetes.observed import (
    ObservedPodError,
    PodSpecCache,
    kubelet_changes,
    observe_pod,
    parse_time,
    pod_status,
)
from probetui.spec.model import ContainerKind, GRPCAction, HTTPGetAction, ProbeType
from tests.runtime.kubernetes.conftest import load


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.fixture
def web() -> dict[str, Any]:
    return load("pod_web.json")


def test_parse_time_reads_time_and_microtime() -> None:
    assert parse_time("2025-03-14T09:31:03Z") == ts("2025-03-14T09:31:03")
    assert parse_time("2025-03-14T09:11:58.123456Z") == pytest.approx(
        ts("2025-03-14T09:11:58") + 0.123456
    )
    assert parse_time("2025-03-14T10:31:03+01:00") == ts("2025-03-14T09:31:03")
    assert parse_time(None) is None
    assert parse_time("") is None
    assert parse_time("yesterday") is None


def test_spec_comes_through_the_manifest_model(web: dict[str, Any]) -> None:
    pod = observe_pod(web).pod
    assert (pod.name, pod.namespace, pod.uid) == (
        "web-7d4b9c8f6d-x2kqp",
        "shop",
        "6c2b3e1e-5a7d-4c1e-9f65-2d1f8a9b0c11",
    )
    assert pod.labels == {"app": "web", "pod-template-hash": "7d4b9c8f6d"}
    assert pod.termination_grace_period_seconds == 45
    assert pod.deletion_timestamp is None
    app = pod.container("app")
    assert app is not None and app.kind is ContainerKind.CONTAINER
    assert app.liveness_probe is not None
    assert app.liveness_probe.http_get == HTTPGetAction(port="http", path="/healthz")
    assert app.liveness_probe.timeout_seconds == 2
    assert app.readiness_probe is not None
    assert app.readiness_probe.grpc == GRPCAction(port=9090, service="")
    assert app.probe(ProbeType.STARTUP) is not None
    assert app.port_by_name("http") == 8080
    # the sidecar is probed, the plain init container is not
    assert [c.name for c in pod.probed_containers()] == ["app", "proxy"]


def test_status_maps_every_field_the_prober_reads(web: dict[str, Any]) -> None:
    status = observe_pod(web).status
    assert status.phase == "Running"
    assert status.pod_ip == "10.244.1.23"
    assert status.ready_condition is False
    app = status.find("app")
    assert app is not None
    assert app.container_id.startswith("containerd://9b1f")
    assert app.state == Running(started_at=ts("2025-03-14T09:31:03"))
    assert app.last_state == Terminated(
        exit_code=137,
        reason="Error",
        started_at=ts("2025-03-14T09:25:44"),
        finished_at=ts("2025-03-14T09:31:02"),
    )
    assert (app.ready, app.started, app.restart_count) == (False, True, 3)
    migrate = status.find("migrate")
    assert migrate is not None
    assert migrate.state == Terminated(
        exit_code=0,
        reason="Completed",
        started_at=ts("2025-03-14T09:12:05"),
        finished_at=ts("2025-03-14T09:12:07"),
    )
    assert migrate.last_state is None  # "lastState": {}
    proxy = status.find("proxy")
    assert proxy is not None and proxy.running is not None and proxy.ready


def test_the_ui_gets_conditions_node_and_resource_version(web: dict[str, Any]) -> None:
    observed = observe_pod(web)
    ready = observed.condition("Ready")
    assert ready is not None
    assert (ready.status, ready.reason) == ("False", "ContainersNotReady")
    assert ready.message == "containers with unready status: [app]"
    assert ready.last_transition_time == ts("2025-03-14T09:31:02")
    assert observed.conditions[0].type == "PodReadyToStartContainers"
    assert (observed.node_name, observed.host_ip, observed.resource_version) == (
        "node-a",
        "10.0.3.17",
        "48213",
    )


def test_crash_loop_waiting_state_and_deletion(web: dict[str, Any]) -> None:
    obj = copy.deepcopy(web)
    cs = obj["status"]["containerStatuses"][0]
    cs["state"] = {
        "waiting": {
            "message": "back-off 40s restarting failed container=app "
            "pod=web-7d4b9c8f6d-x2kqp_shop(6c2b3e1e-5a7d-4c1e-9f65-2d1f8a9b0c11)",
            "reason": "CrashLoopBackOff",
        }
    }
    cs["started"] = False
    obj["metadata"]["deletionTimestamp"] = "2025-03-14T09:40:00Z"
    obj["metadata"]["deletionGracePeriodSeconds"] = 45
    observed = observe_pod(obj)
    app = observed.status.lookup("app")
    assert app is not None
    assert isinstance(app.state, Waiting)
    assert app.state.reason == "CrashLoopBackOff"
    assert app.state.message.startswith("back-off 40s restarting failed container=app")
    assert app.started is False
    assert observed.pod.deletion_timestamp == ts("2025-03-14T09:40:00")
    assert observed.pod.deletion_grace_period_seconds == 45


def test_a_pending_pod_has_no_statuses_yet() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "generation": 1},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }
    status = pod_status(obj)
    assert status == PodStatus(phase="Pending", pod_ip="")
    assert status.ready_condition is None


def test_optional_status_fields_missing_or_null() -> None:
    obj = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"containers": [{"name": "app"}]},
        "status": {
            "phase": "Running",
            "startTime": "2025-03-14T09:00:00Z",
            "containerStatuses": [
                # no containerID, no started, state {} (waiting), running without startedAt
                {"name": "app", "ready": False, "restartCount": 0, "image": "x", "state": {}},
                {"name": "b", "state": {"running": {}}, "lastState": {"waiting": {}}},
            ],
        },
    }
    status = pod_status(obj)
    app, b = status.container_statuses
    assert app.state == Waiting() and app.started is None and app.container_id == ""
    # no ID yet: the prober does not see it (docs/kubelet-behaviour.md §5.4)
    assert status.find("app") is None
    assert b.state == Running(started_at=ts("2025-03-14T09:00:00"))
    assert b.last_state is None


def test_unreadable_spec_is_one_line_naming_the_pod(web: dict[str, Any]) -> None:
    obj = copy.deepcopy(web)
    obj["spec"]["containers"][0]["livenessProbe"]["periodSeconds"] = "ten"
    with pytest.raises(ObservedPodError) as e:
        observe_pod(obj)
    assert "\n" not in str(e.value)
    assert str(e.value) == (
        'pod shop/web-7d4b9c8f6d-x2kqp: cannot read the spec: container "app": '
        'livenessProbe.periodSeconds: must be an integer, got the string "ten"'
    )
    with pytest.raises(ObservedPodError):
        observe_pod([])  # type: ignore[arg-type]


def test_spec_cache_reuses_the_parse_until_a_mutable_field_changes(web: dict[str, Any]) -> None:
    cache = PodSpecCache()
    first = observe_pod(web, cache).pod
    obj = copy.deepcopy(web)
    obj["status"]["containerStatuses"][0]["ready"] = True
    assert observe_pod(obj, cache).pod is first  # a status update: same spec object
    obj["metadata"]["labels"]["canary"] = "true"
    relabelled = observe_pod(obj, cache).pod
    assert relabelled.labels["canary"] == "true"
    assert relabelled.containers is first.containers
    # on a cluster older than v1.33 pods have no generation: the images still key the cache
    del obj["metadata"]["generation"]
    older = observe_pod(obj, cache).pod
    obj["status"]["containerStatuses"][0]["restartCount"] = 4
    assert observe_pod(obj, cache).pod is older
    obj["spec"]["containers"][0]["image"] = "ghcr.io/acme/web:1.4.3"
    app = observe_pod(obj, cache).pod.container("app")
    assert app is not None and app.image == "ghcr.io/acme/web:1.4.3"
    obj["spec"]["terminationGracePeriodSeconds"] = 1
    assert observe_pod(obj, cache).pod.termination_grace_period_seconds == 1
    assert len(cache) == 1
    cache.forget(web["metadata"]["uid"])
    assert len(cache) == 0


def test_spec_cache_is_bounded(web: dict[str, Any]) -> None:
    cache = PodSpecCache(size=3)
    for i in range(5):
        obj = copy.deepcopy(web)
        obj["metadata"]["uid"] = f"uid-{i}"
        observe_pod(obj, cache)
    assert len(cache) == 3


def test_cached_observe_parses_the_spec_once(
    web: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Status updates re-read the status only: the spec parse (the costly part) runs once per pod.

    Timings belong in benchmarks/, not in tests; this pins the structure that makes it cheap.
    """
    from probetui.spec import parse as spec_parse

    calls = []
    real = spec_parse.pod_from_object

    def counting(obj: dict[str, Any], source: str) -> Any:
        calls.append(source)
        return real(obj, source)

    monkeypatch.setattr(spec_parse, "pod_from_object", counting)
    cache = PodSpecCache()
    for i in range(50):
        obj = json.loads(json.dumps(web))
        obj["metadata"]["resourceVersion"] = str(1000 + i)
        observe_pod(obj, cache)
    assert len(calls) == 1


# --- changes between snapshots ---------------------------------------------------------------


def _types(events: list[Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    return [(e.type, e.container, dict(e.fields)) for e in events]


def test_first_snapshot_anchors_running_containers(web: dict[str, Any]) -> None:
    observed = observe_pod(web)
    got = kubelet_changes(observed.pod, None, observed.status, now=1e9)
    kinds = [(e.type, e.container) for e in got]
    assert ("ContainerStarted", "app") in kinds
    assert ("ContainerStarted", "proxy") in kinds
    assert ("ContainerExited", "migrate") in kinds
    assert ("ReadyChanged", "app") not in kinds  # not ready, as assumed before anything is seen
    started = next(e for e in got if e.type == "ContainerStarted" and e.container == "app")
    assert started.t == ts("2025-03-14T09:31:03")
    assert started.fields["restartCount"] == 3


def test_restart_seen_as_new_id_with_last_state(web: dict[str, Any]) -> None:
    before = observe_pod(web)
    obj = copy.deepcopy(web)
    cs = obj["status"]["containerStatuses"][0]
    cs["lastState"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "Error",
            "startedAt": "2025-03-14T09:31:03Z",
            "finishedAt": "2025-03-14T09:36:40Z",
            "containerID": cs["containerID"],
        }
    }
    cs["containerID"] = "containerd://ffff"
    cs["restartCount"] = 4
    cs["started"] = False
    cs["state"] = {"running": {"startedAt": "2025-03-14T09:36:41Z"}}
    after = observe_pod(obj)
    got = _types(kubelet_changes(after.pod, before.status, after.status, now=2e9))
    assert got == [
        ("ContainerStarted", "app", {"restartCount": 4, "containerID": "containerd://ffff"}),
        ("ContainerExited", "app", {"exitCode": 137, "reason": "Error"}),
        ("StartedChanged", "app", {"started": False}),
    ]


def test_ready_and_started_changes_carry_the_observation_time(web: dict[str, Any]) -> None:
    before = observe_pod(web)
    obj = copy.deepcopy(web)
    obj["status"]["containerStatuses"][0]["ready"] = True
    after = observe_pod(obj)
    got = kubelet_changes(after.pod, before.status, after.status, now=1234.5)
    assert [(e.type, e.container, e.t, dict(e.fields)) for e in got] == [
        ("ReadyChanged", "app", 1234.5, {"ready": True})
    ]
    assert kubelet_changes(after.pod, after.status, after.status, now=1.0) == []


def test_exit_in_place_then_crash_loop_reports_the_exit_once(web: dict[str, Any]) -> None:
    running = observe_pod(web)
    obj = copy.deepcopy(web)
    cs = obj["status"]["containerStatuses"][0]
    exit_ = {
        "exitCode": 1,
        "reason": "Error",
        "startedAt": "2025-03-14T09:31:03Z",
        "finishedAt": "2025-03-14T09:32:00Z",
        "containerID": cs["containerID"],
    }
    cs["state"] = {"terminated": exit_}
    exited = observe_pod(obj)
    cs["state"] = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s ..."}}
    cs["lastState"] = {"terminated": exit_}
    waiting = observe_pod(obj)
    first = kubelet_changes(exited.pod, running.status, exited.status, now=0.0)
    assert [(e.type, e.t) for e in first] == [("ContainerExited", ts("2025-03-14T09:32:00"))]
    assert kubelet_changes(waiting.pod, exited.status, waiting.status, now=0.0) == []
