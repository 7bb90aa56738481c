"""The kubelet's prober unit-test fixture (`common_test.go`), as plain builders."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeOutcome, map_attempts
from probetui.prober.results import ResultsManager
from probetui.prober.status import ContainerStatus, PodStatus, Running, Terminated, Waiting
from probetui.prober.worker import ProbeRecord, Worker
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType

POD_UID = "pOd_UiD"
CONTAINER = "cOnTaInEr_NaMe"
CONTAINER_ID = "test://cOnTaInEr_Id"


def probe(**fields: object) -> Probe:
    """An exec probe with every zero field replaced: timeout 1, period 1, thresholds 1/1."""
    base = Probe(
        exec=ExecAction(("true",)),
        timeout_seconds=1,
        period_seconds=1,
        success_threshold=1,
        failure_threshold=1,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def pod_with(
    probe_type: ProbeType, p: Probe, *, restart_policy: str = "Never", **pod_fields: object
) -> Pod:
    attr = {
        ProbeType.LIVENESS: "liveness_probe",
        ProbeType.READINESS: "readiness_probe",
        ProbeType.STARTUP: "startup_probe",
    }[probe_type]
    container = Container(name=CONTAINER, **{attr: p})  # type: ignore[arg-type]
    return Pod(
        name="test_pod",
        uid=POD_UID,
        containers=(container,),
        restart_policy=restart_policy,
        **pod_fields,  # type: ignore[arg-type]
    )


def running_status(now: float = 0.0, *, started: bool = True, cid: str = CONTAINER_ID) -> PodStatus:
    return PodStatus(
        phase="Running",
        pod_ip="127.0.0.1",
        container_statuses=(
            ContainerStatus(name=CONTAINER, container_id=cid, state=Running(now), started=started),
        ),
    )


def waiting_status(cid: str = CONTAINER_ID) -> PodStatus:
    return PodStatus(
        container_statuses=(ContainerStatus(name=CONTAINER, container_id=cid, state=Waiting()),)
    )


def terminated_status(exit_code: int = 0, cid: str = CONTAINER_ID) -> PodStatus:
    return PodStatus(
        container_statuses=(
            ContainerStatus(name=CONTAINER, container_id=cid, state=Terminated(exit_code)),
        )
    )


def new_worker(probe_type: ProbeType, p: Probe | None = None, **pod_fields: object) -> Worker:
    pod = pod_with(probe_type, p or probe(), **pod_fields)
    return Worker(pod, pod.containers[0], probe_type, ResultsManager())


def outcome(probe_type: ProbeType, code: str, output: str = "") -> ProbeOutcome:
    """S, F, W, U (unknown, no error) or E (an error) as the prober maps them."""
    result = {"S": Result.SUCCESS, "F": Result.FAILURE, "W": Result.WARNING, "U": Result.UNKNOWN}
    if code == "E":
        attempt = Attempt("exec", "x", Result.UNKNOWN, output, error="boom")
    else:
        attempt = Attempt("exec", "x", result[code], output)
    return map_attempts(probe_type, [attempt])


def do_probe(w: Worker, status: PodStatus | None, code: str = "S", now: float = 0.0) -> bool:
    """One synchronous doProbe with the fake prober answering `code`; returns keepGoing."""
    step = w.begin(status, now)
    if step.probe:
        w.finish(outcome(w.probe_type, code))
    return step.keep_going


def count_records(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The time of every doProbe record the workers build from now on (a listener's or not):
    what a run that lists nothing must leave empty."""
    built: list[float] = []

    class CountedRecord(ProbeRecord):
        __slots__ = ()

        def __init__(self, **fields: Any) -> None:
            built.append(fields["t"])
            super().__init__(**fields)

    monkeypatch.setattr("probetui.prober.worker.ProbeRecord", CountedRecord)
    return built
