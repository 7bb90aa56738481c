"""core/v1 Events (the shape `kubectl get events -o json` prints) to KubeletEvents."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from probetui.kubelet.kuberuntime import backoff_event_message, container_probe_action
from probetui.prober.prober import map_attempts
from probetui.prober.results import ResultValue
from probetui.runtime.kubernetes.events import (
    EventCounter,
    ObservedEvent,
    container_of_field_path,
    kubelet_event,
    parse_event,
    parse_message,
)
from probetui.runtime.kubernetes.observed import observe_pod
from probetui.spec.model import Container, ContainerKind, Pod, ProbeType
from tests.runtime.kubernetes.conftest import load


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.fixture
def items() -> list[dict[str, Any]]:
    return load("events.json")["items"]


def by_reason(items: list[dict[str, Any]], reason: str, n: int = 0) -> dict[str, Any]:
    return [i for i in items if i["reason"] == reason][n]


def parsed(obj: dict[str, Any]) -> ObservedEvent:
    ev = parse_event(obj)
    assert ev is not None
    return ev


# --- the kubelet's texts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "probe", "details"),
    [
        (
            "Liveness probe failed: HTTP probe failed with statuscode: 500",
            ProbeType.LIVENESS,
            {"outcome": "failure", "output": "HTTP probe failed with statuscode: 500"},
        ),
        (
            "Readiness probe failed: ",  # an empty output keeps the space
            ProbeType.READINESS,
            {"outcome": "failure", "output": ""},
        ),
        (
            "Startup probe failed: cat: can't open '/tmp/started': No such file or directory\n",
            ProbeType.STARTUP,
            {
                "outcome": "failure",
                "output": "cat: can't open '/tmp/started': No such file or directory\n",
            },
        ),
        (
            "Readiness probe errored and resulted in unknown state: rpc error: code = "
            "NotFound desc = failed to exec in container: container is in CONTAINER_EXITED state",
            ProbeType.READINESS,
            {
                "outcome": "error",
                "result": "unknown",
                "output": "rpc error: code = NotFound desc = failed to exec in container: "
                "container is in CONTAINER_EXITED state",
            },
        ),
        (
            'Liveness probe errored: strconv.Atoi: parsing "http": invalid syntax',
            ProbeType.LIVENESS,
            {"outcome": "error", "output": 'strconv.Atoi: parsing "http": invalid syntax'},
        ),
    ],
)
def test_unhealthy_messages(message: str, probe: ProbeType, details: dict[str, Any]) -> None:
    p = parse_message("Unhealthy", message)
    assert p.probe is probe
    assert dict(p.details) == details


def test_probe_warning_message() -> None:
    p = parse_message(
        "ProbeWarning", "Readiness probe warning: Probe terminated redirects, Response body: "
    )
    assert p.probe is ProbeType.READINESS
    assert p.details["outcome"] == "warning"


@pytest.mark.parametrize(
    ("message", "container", "probe", "restart", "cause"),
    [
        ("Container app failed liveness probe, will be restarted", "app", "liveness", True, None),
        ("Container app failed startup probe, will be restarted", "app", "startup", True, None),
        ("Container app failed liveness probe", "app", "liveness", False, None),  # Never
        ("Init container proxy failed startup probe", "proxy", "startup", True, None),
        ("Stopping container app", "app", None, False, "stopping"),
        (
            "Container app definition changed, will be restarted",
            "app",
            None,
            True,
            "definition changed",
        ),
    ],
)
def test_killing_messages(
    message: str, container: str, probe: str | None, restart: bool, cause: str | None
) -> None:
    p = parse_message("Killing", message)
    assert p.container == container
    assert p.probe is (ProbeType.parse(probe) if probe else None)
    assert p.details["restart"] is restart
    assert p.details["cause"] == (cause or f"{probe} probe")


def test_killing_and_backoff_texts_of_our_own_kubelet_model_parse_back() -> None:
    """The local runtime's texts (probetui.kubelet.kuberuntime) are upstream's: both directions."""
    pod = Pod(name="web", namespace="shop", uid="u-1", restart_policy="Never")
    app = Container(name="app")
    sidecar = Container(name="proxy", kind=ContainerKind.INIT, restart_policy="Always")
    for c, pod_ in ((app, pod), (app, Pod(name="web", uid="u-1")), (sidecar, pod)):
        for liveness, startup in ((ResultValue.FAILURE, None), (None, ResultValue.FAILURE)):
            d = container_probe_action(c, pod_, running=True, liveness=liveness, startup=startup)
            if d.message is None:
                continue
            p = parse_message("Killing", d.message)
            assert p.container == c.name, d.message
            assert p.probe is ProbeType.parse(d.reason or ""), d.message
            assert p.details["restart"] is d.restart, d.message
    text = backoff_event_message("app", pod)
    assert text == "Back-off restarting failed container app in pod web_shop(u-1)"
    assert parse_message("BackOff", text).container == "app"


def test_prober_event_texts_of_our_own_prober_parse_back() -> None:
    from probetui.probe.base import Attempt, Result

    cases = [
        (Result.FAILURE, None, "failure"),
        (Result.WARNING, None, "warning"),
        (Result.UNKNOWN, "connection reset", "error"),
    ]
    for result, error, outcome in cases:
        attempt = Attempt(handler="http", target="t", result=result, output="out", error=error)
        mapped = map_attempts(ProbeType.STARTUP, [attempt])
        assert mapped.event is not None
        p = parse_message(mapped.event.reason, mapped.event.message)
        assert p.probe is ProbeType.STARTUP
        assert p.details["outcome"] == outcome


def test_backoff_messages() -> None:
    restart = parse_message(
        "BackOff",
        "Back-off restarting failed container app in pod web_shop(6c2b3e1e-5a7d-4c1e)",
    )
    assert (restart.container, restart.details["backOff"]) == ("app", "restart")
    image = parse_message("BackOff", 'Back-off pulling image "ghcr.io/acme/web:1.4.3"')
    assert image.container is None
    assert dict(image.details) == {"backOff": "image pull", "image": "ghcr.io/acme/web:1.4.3"}


def test_unknown_texts_give_nothing() -> None:
    assert parse_message("Unhealthy", "something else entirely").probe is None
    assert (
        parse_message("Killing", 'Container is in "unknown" state, try killing it').container
        is None
    )
    assert parse_message("Pulled", 'Container image "x" already present on machine').details == {}


def test_field_paths() -> None:
    assert container_of_field_path("spec.containers{app}") == ("app", ContainerKind.CONTAINER)
    assert container_of_field_path("spec.initContainers{init-db}") == (
        "init-db",
        ContainerKind.INIT,
    )
    assert container_of_field_path("spec.ephemeralContainers{debugger-x7}") == (
        "debugger-x7",
        ContainerKind.EPHEMERAL,
    )
    assert container_of_field_path("") is None
    assert container_of_field_path("metadata.name") is None


# --- whole events ----------------------------------------------------------------------------


def test_unhealthy_event_is_matched_to_container_and_probe(items: list[dict[str, Any]]) -> None:
    ev = parsed(items[0])
    assert (ev.reason, ev.type, ev.container, ev.container_kind, ev.probe) == (
        "Unhealthy",
        "Warning",
        "app",
        ContainerKind.CONTAINER,
        ProbeType.LIVENESS,
    )
    assert (ev.pod_namespace, ev.pod_name, ev.pod_uid) == (
        "shop",
        "web-7d4b9c8f6d-x2kqp",
        "6c2b3e1e-5a7d-4c1e-9f65-2d1f8a9b0c11",
    )
    assert ev.uid == "0d6f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a51"
    assert ev.count == 3
    assert ev.t == ts("2025-03-14T09:31:02")
    assert ev.first_t == ts("2025-03-14T09:30:42")
    assert ev.from_kubelet and ev.host == "node-a"
    assert ev.details["output"].startswith('Get "http://10.244.1.23:8080/healthz"')


def test_sidecar_killing_event(items: list[dict[str, Any]]) -> None:
    ev = parsed(by_reason(items, "Killing", 1))
    assert (ev.container, ev.container_kind, ev.probe) == (
        "proxy",
        ContainerKind.INIT,
        ProbeType.STARTUP,
    )
    assert ev.details["restart"] is True


def test_aggregated_event_strips_the_prefix(items: list[dict[str, Any]]) -> None:
    ev = parsed(by_reason(items, "Unhealthy", 2))
    assert ev.aggregated
    assert ev.message == "Readiness probe failed: HTTP probe failed with statuscode: 503"
    assert ev.probe is ProbeType.READINESS
    assert ev.count == 12


def test_aggregated_killing_trusts_the_message_over_the_field_path(
    items: list[dict[str, Any]],
) -> None:
    obj = copy.deepcopy(by_reason(items, "Killing"))
    # the aggregate keeps the first event's involvedObject; the newest message is about "proxy"
    obj["message"] = "(combined from similar events): Init container proxy failed liveness probe"
    ev = parsed(obj)
    assert ev.aggregated
    assert (ev.container, ev.container_kind, ev.probe) == ("proxy", None, ProbeType.LIVENESS)


def test_series_event_from_events_k8s_io(items: list[dict[str, Any]]) -> None:
    ev = parsed(by_reason(items, "FailedScheduling"))
    assert ev.count == 3
    assert ev.t == pytest.approx(ts("2025-03-14T09:12:01") + 0.654321)
    assert ev.first_t == pytest.approx(ts("2025-03-14T09:11:58") + 0.123456)
    assert ev.component == "default-scheduler"
    assert not ev.from_kubelet
    assert ev.container is None


def test_events_about_other_kinds_are_skipped(items: list[dict[str, Any]]) -> None:
    assert parse_event(by_reason(items, "SuccessfulCreate")) is None
    assert parse_event({}) is None


def test_times_fall_back_in_order() -> None:
    obj: dict[str, Any] = {
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u"},
        "metadata": {"name": "p.1", "namespace": "ns", "creationTimestamp": "2025-01-01T00:00:03Z"},
        "reason": "Started",
    }
    assert parsed(obj).t == ts("2025-01-01T00:00:03")
    obj["firstTimestamp"] = "2025-01-01T00:00:02Z"
    assert parsed(obj).t == ts("2025-01-01T00:00:02")
    obj["eventTime"] = "2025-01-01T00:00:04.000001Z"
    assert parsed(obj).t == pytest.approx(ts("2025-01-01T00:00:04") + 1e-6)
    obj["lastTimestamp"] = "2025-01-01T00:00:05Z"
    assert parsed(obj).t == ts("2025-01-01T00:00:05")
    obj["series"] = {"count": 2, "lastObservedTime": "2025-01-01T00:00:06.000000Z"}
    assert parsed(obj).t == ts("2025-01-01T00:00:06")
    assert parsed(obj).uid == "ns/p.1"  # no uid: namespace/name still identifies it
    assert parsed(obj).count == 2


# --- counting: each occurrence once ----------------------------------------------------------


def test_an_event_patched_in_place_counts_only_the_increase(items: list[dict[str, Any]]) -> None:
    counter = EventCounter()
    obj = copy.deepcopy(items[0])
    assert counter.observe(parsed(obj)) == 3  # first sight: all of it is new to us
    assert counter.observe(parsed(obj)) == 0  # the same object again (re-list, resync)
    obj["count"] = 4
    obj["lastTimestamp"] = "2025-03-14T09:31:12Z"
    obj["metadata"]["resourceVersion"] = "48400"
    assert counter.observe(parsed(obj)) == 1
    obj["count"] = 6
    assert counter.observe(parsed(obj)) == 2  # a missed update: both occurrences, once
    stale = copy.deepcopy(items[0])  # an older copy arriving late must not count again
    assert counter.observe(parsed(stale)) == 0
    assert counter.observe(parsed(obj)) == 0


def test_series_counts_the_same_way() -> None:
    obj: dict[str, Any] = {
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u"},
        "metadata": {"name": "p.1", "namespace": "ns", "uid": "e1"},
        "reason": "Unhealthy",
        "message": "Readiness probe failed: timeout",
        "eventTime": "2025-01-01T00:00:00.000000Z",
    }
    counter = EventCounter()
    assert counter.observe(parsed(obj)) == 1  # no series yet: one occurrence
    obj["series"] = {"count": 2, "lastObservedTime": "2025-01-01T00:00:10.000000Z"}
    assert counter.observe(parsed(obj)) == 1
    obj["series"] = {"count": 5, "lastObservedTime": "2025-01-01T00:00:40.000000Z"}
    assert counter.observe(parsed(obj)) == 3


def test_distinct_objects_count_separately_and_forget_frees(items: list[dict[str, Any]]) -> None:
    counter = EventCounter(size=4)
    pod_events = [parsed(i) for i in items if parse_event(i) is not None]
    total = sum(counter.observe(ev) for ev in pod_events)
    assert total == sum(ev.count for ev in pod_events)
    assert len(counter) == 4  # bounded
    counter.forget(pod_events[-1].uid)
    assert len(counter) == 3


def test_kubelet_event_for_the_engine(items: list[dict[str, Any]]) -> None:
    pod = observe_pod(load("pod_web.json")).pod
    counter = EventCounter()
    ev = parsed(by_reason(items, "Killing"))
    ke = kubelet_event(ev, pod, counter.observe(ev), now=0.0)
    assert (ke.type, ke.pod, ke.container, ke.probe, ke.source) == (
        "Killing",
        pod,
        "app",
        ProbeType.LIVENESS,
        "kubelet",
    )
    assert ke.t == ts("2025-03-14T09:31:02")
    assert dict(ke.fields) == {
        "message": "Container app failed liveness probe, will be restarted",
        "eventType": "Normal",
        "count": 1,
        "increment": 1,
        "eventUid": "1e7a2b3c-4d5e-4f60-9b1c-2d3e4f5a6b52",
        "cause": "liveness probe",
        "restart": True,
    }
    agg = parsed(by_reason(items, "Unhealthy", 2))
    fields = kubelet_event(agg, pod, 12, now=0.0).fields
    assert fields["aggregated"] is True
    assert fields["firstSeen"] == ts("2025-03-14T09:28:00")
    sched = parsed(by_reason(items, "FailedScheduling"))
    assert kubelet_event(sched, pod, 3, now=0.0).source == "default-scheduler"
    untimed = parsed({"involvedObject": {"kind": "Pod"}, "metadata": {}, "reason": "Started"})
    assert kubelet_event(untimed, pod, 1, now=42.0).t == 42.0
