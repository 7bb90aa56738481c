"""Turn pods as the API server reports them (raw JSON dicts) into the engine's (Pod, PodStatus).

The watch hands over `json.loads` output, never generated models: building those costs many
times the JSON decoding. The spec goes through the manifest parser (`probetui.spec.parse`), the
same defaults and types as a manifest file, without validation (the API server validated it).
Probes are immutable in a pod spec, so `PodSpecCache` reuses the parsed spec per `uid` until
one of the few mutable fields the model holds changes; only the metadata the model carries
(labels, deletion, owner) is refreshed each time. Status fields map one to one to `probetui.prober.status`; times become epoch seconds.

`kubelet_changes` turns two successive statuses of a pod into the kubelet's observed changes
(`ContainerStarted` with `restartCount`, `ContainerExited`, `StartedChanged`, `ReadyChanged`),
named as `probetui simulate` names them.
"""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from probetui.prober.status import (
    ContainerState,
    ContainerStatus,
    PodStatus,
    Running,
    Terminated,
    Waiting,
)
from probetui.runtime.base import RuntimeEvent
from probetui.spec import parse as spec_parse
from probetui.spec.errors import ManifestError
from probetui.spec.model import Pod
from probetui.timeline.events import EventType

__all__ = [
    "ObservedPod",
    "ObservedPodError",
    "PodCondition",
    "PodSpecCache",
    "container_status",
    "kubelet_changes",
    "observe_pod",
    "parse_time",
    "pod_status",
]


class ObservedPodError(Exception):
    """Signals a pod object from the API that cannot be read; one line naming the pod and the
    field."""


def parse_time(value: object) -> float | None:
    """Return an API time (RFC 3339 `Time`, or `MicroTime` with microseconds) as epoch seconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


@dataclass(frozen=True, slots=True)
class PodCondition:
    type: str
    status: str  # "True", "False", "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None


@dataclass(frozen=True, slots=True)
class ObservedPod:
    """Holds one pod object as seen: what the engine takes, plus what the UI shows beside it."""

    pod: Pod
    status: PodStatus
    conditions: tuple[PodCondition, ...] = ()
    node_name: str = ""
    host_ip: str = ""
    resource_version: str = ""
    # pod-level status reason/message (e.g. Evicted, DeadlineExceeded)
    reason: str = ""
    message: str = ""

    def condition(self, type_: str) -> PodCondition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None


# --- status -----------------------------------------------------------------------------------


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _terminated(t: Mapping[str, Any]) -> Terminated:
    return Terminated(
        exit_code=_int(t.get("exitCode")),
        reason=_str(t.get("reason")),
        started_at=parse_time(t.get("startedAt")),
        finished_at=parse_time(t.get("finishedAt")),
    )


def _state(state: Mapping[str, Any], fallback_start: float) -> ContainerState:
    # the API sets one of the three; none set means waiting (v1.ContainerState's doc)
    running = state.get("running")
    if isinstance(running, dict):
        started = parse_time(running.get("startedAt"))
        return Running(started_at=fallback_start if started is None else started)
    terminated = state.get("terminated")
    if isinstance(terminated, dict):
        return _terminated(terminated)
    waiting = _dict(state.get("waiting"))
    return Waiting(reason=_str(waiting.get("reason")), message=_str(waiting.get("message")))


def container_status(d: Mapping[str, Any], fallback_start: float = 0.0) -> ContainerStatus:
    """Return one `containerStatuses[]` / `initContainerStatuses[]` entry.

    `fallback_start` stands in for a running state without `startedAt` (not seen from a real
    kubelet; the pod's `startTime` is the closest bound).
    """
    last = _dict(d.get("lastState")).get("terminated")
    started = d.get("started")
    return ContainerStatus(
        name=_str(d.get("name")),
        container_id=_str(d.get("containerID")),
        state=_state(_dict(d.get("state")), fallback_start),
        last_state=_terminated(last) if isinstance(last, dict) else None,
        started=started if isinstance(started, bool) else None,
        ready=d.get("ready") is True,
        restart_count=_int(d.get("restartCount")),
    )


def _conditions(status: Mapping[str, Any]) -> tuple[PodCondition, ...]:
    out: list[PodCondition] = []
    for c in status.get("conditions") or ():
        if not isinstance(c, dict):
            continue
        out.append(
            PodCondition(
                type=_str(c.get("type")),
                status=_str(c.get("status")),
                reason=_str(c.get("reason")),
                message=_str(c.get("message")),
                last_transition_time=parse_time(c.get("lastTransitionTime")),
            )
        )
    return tuple(out)


def _ready_condition(conditions: tuple[PodCondition, ...]) -> bool | None:
    for c in conditions:
        if c.type == "Ready":
            # the kubelet reads only ConditionTrue as ready (podutil.IsPodReady)
            return c.status == "True"
    return None


def pod_status(obj: Mapping[str, Any]) -> PodStatus:
    """Return the `status` of a pod object as the prober reads it."""
    status = _dict(obj.get("status"))
    start = parse_time(status.get("startTime")) or 0.0

    def group(key: str) -> tuple[ContainerStatus, ...]:
        return tuple(
            container_status(d, start) for d in status.get(key) or () if isinstance(d, dict)
        )

    return PodStatus(
        phase=_str(status.get("phase")) or "Pending",
        pod_ip=_str(status.get("podIP")),
        container_statuses=group("containerStatuses"),
        init_container_statuses=group("initContainerStatuses"),
        ready_condition=_ready_condition(_conditions(status)),
    )


# --- spec -------------------------------------------------------------------------------------


def _describe(obj: Mapping[str, Any]) -> str:
    meta = _dict(obj.get("metadata"))
    return f"pod {_str(meta.get('namespace')) or '?'}/{_str(meta.get('name')) or '?'}"


def _parse_spec(obj: Mapping[str, Any]) -> Pod:
    # The manifest parser takes plain dicts (no line bookkeeping needed). It is the one place
    # that knows the Pod model's defaults, so the API's objects go through it as files do.
    meta = _dict(obj.get("metadata"))
    source = f"namespace {_str(meta.get('namespace')) or '?'}"
    try:
        pod = spec_parse.pod_from_object(dict(obj), source)
    except ManifestError as e:
        where = [f'{e.container_kind} "{e.container}"'] if e.container else []
        where += [e.field] if e.field else []
        at = f"{': '.join(where)}: " if where else ""
        raise ObservedPodError(f"{_describe(obj)}: cannot read the spec: {at}{e.detail}") from None
    return _with_owner(pod, meta)


def _with_metadata(pod: Pod, obj: Mapping[str, Any]) -> Pod:
    """Return the cached spec with this object's labels, deletion fields and owner."""
    meta = _dict(obj.get("metadata"))
    # an owner changes rarely (orphaned, adopted), so the common case stays a comparison
    pod = _with_owner(pod, meta)
    labels = _dict(meta.get("labels"))
    deletion = parse_time(meta.get("deletionTimestamp"))
    grace = meta.get("deletionGracePeriodSeconds")
    grace = grace if isinstance(grace, int) and not isinstance(grace, bool) else None
    if (
        labels == pod.labels
        and deletion == pod.deletion_timestamp
        and grace == pod.deletion_grace_period_seconds
    ):
        return pod
    return dataclasses.replace(
        pod,
        labels={k: v for k, v in labels.items() if isinstance(v, str)},
        deletion_timestamp=deletion,
        deletion_grace_period_seconds=grace,
    )


# a CronJob's Jobs are named <cronjob>-<scheduled time in minutes since the epoch>
_CRONJOB_JOB = re.compile(r"^(?P<cronjob>.+)-(?P<minutes>\d{8,})$")


def owner_of(meta: Mapping[str, Any]) -> tuple[str, str]:
    """Return the workload a pod belongs to, from its own metadata alone (no request): its
    controller reference, with a ReplicaSet taken to its Deployment where the ReplicaSet's name is
    the Deployment's name and the pod's `pod-template-hash` (as the Deployment controller names
    them), and a Job to its CronJob where the Job's name ends in the CronJob controller's
    scheduled-time suffix. ("", "") for a bare pod."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return "", ""
    owned = [r for r in refs if isinstance(r, dict) and r.get("kind") and r.get("name")]
    # the managing controller where one is marked; else the first owner (a hand-made ref)
    ref = next((r for r in owned if r.get("controller") is True), owned[0] if owned else None)
    if ref is None:
        return "", ""
    kind, name = _str(ref.get("kind")), _str(ref.get("name"))
    if kind == "ReplicaSet":
        labels = _dict(meta.get("labels"))
        hash_ = _str(labels.get("pod-template-hash"))
        if hash_ and name.endswith("-" + hash_) and len(name) > len(hash_) + 1:
            return "Deployment", name[: -len(hash_) - 1]
    elif kind == "Job":
        m = _CRONJOB_JOB.match(name)
        if m is not None:
            return "CronJob", m["cronjob"]
    return kind, name


def _with_owner(pod: Pod, meta: Mapping[str, Any]) -> Pod:
    kind, name = owner_of(meta)
    if kind == pod.owner_kind and name == pod.owner_name:
        return pod
    return dataclasses.replace(pod, owner_kind=kind, owner_name=name)


def _spec_key(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    """Tell what can change in a live pod's spec that the Pod model holds.

    Pod updates may change only images, `activeDeadlineSeconds`, tolerations and
    `terminationGracePeriodSeconds` (`ValidatePodUpdate`); resizes touch resources alone. Only
    images and the grace period are in the model. `metadata.generation` is added too: pods have
    it only since v1.33 (KEP-5067), so it cannot be the whole key.
    """
    meta = _dict(obj.get("metadata"))
    spec = _dict(obj.get("spec"))
    images = tuple(
        c.get("image")
        for key in ("containers", "initContainers")
        for c in spec.get(key) or ()
        if isinstance(c, dict)
    )
    return meta.get("generation"), spec.get("terminationGracePeriodSeconds"), images


class PodSpecCache:
    """Keeps parsed specs by uid, reused while `_spec_key` holds; bounded, least recently used
    first."""

    def __init__(self, size: int = 16384) -> None:
        self._size = size
        self._specs: OrderedDict[str, tuple[tuple[Any, ...], Pod]] = OrderedDict()

    def pod(self, obj: Mapping[str, Any]) -> Pod:
        uid = _str(_dict(obj.get("metadata")).get("uid"))
        key = _spec_key(obj)
        cached = self._specs.get(uid) if uid else None
        if cached is not None and cached[0] == key:
            self._specs.move_to_end(uid)
            return _with_metadata(cached[1], obj)
        pod = _parse_spec(obj)
        if uid:
            self._specs[uid] = (key, pod)
            self._specs.move_to_end(uid)
            while len(self._specs) > self._size:
                self._specs.popitem(last=False)
        return pod

    def forget(self, uid: str) -> None:
        self._specs.pop(uid, None)

    def __len__(self) -> int:
        return len(self._specs)


def observe_pod(obj: Mapping[str, Any], cache: PodSpecCache | None = None) -> ObservedPod:
    """A pod object from a list or a watch event to what the engine and the UI need."""
    if not isinstance(obj, dict):
        raise ObservedPodError(f"expected a pod object, got a {type(obj).__name__}")
    pod = cache.pod(obj) if cache is not None else _parse_spec(obj)
    status = _dict(obj.get("status"))
    meta = _dict(obj.get("metadata"))
    return ObservedPod(
        pod=pod,
        status=pod_status(obj),
        conditions=_conditions(status),
        node_name=_str(_dict(obj.get("spec")).get("nodeName")),
        host_ip=_str(status.get("hostIP")),
        resource_version=_str(meta.get("resourceVersion")),
        reason=_str(status.get("reason")),
        message=_str(status.get("message")),
    )


# --- changes between two snapshots ------------------------------------------------------------


def _changes_of(
    pod: Pod, before: ContainerStatus | None, after: ContainerStatus, now: float
) -> list[RuntimeEvent]:
    out: list[RuntimeEvent] = []
    name = after.name
    running = after.running
    # a created container is reported waiting with its ID already set, so compare states too
    if running is not None and (
        before is None or before.running is None or before.container_id != after.container_id
    ):
        out.append(
            RuntimeEvent(
                EventType.CONTAINER_STARTED,
                running.started_at or now,
                pod,
                name,
                fields={"restartCount": after.restart_count, "containerID": after.container_id},
            )
        )
    # an exit shows either as the current state or, after a quick restart, as lastState
    exited = after.terminated
    if exited is None and before is not None and after.restart_count > before.restart_count:
        exited = after.last_state
    was = before.terminated if before is not None else None
    if exited is not None and (was is None or was.finished_at != exited.finished_at):
        out.append(
            RuntimeEvent(
                EventType.CONTAINER_EXITED,
                exited.finished_at or now,
                pod,
                name,
                fields={"exitCode": exited.exit_code, "reason": exited.reason},
            )
        )
    if (before.started if before else None) != after.started and after.started is not None:
        out.append(
            RuntimeEvent(
                EventType.STARTED_CHANGED, now, pod, name, fields={"started": after.started}
            )
        )
    if (before.ready if before else False) != after.ready:
        out.append(
            RuntimeEvent(EventType.READY_CHANGED, now, pod, name, fields={"ready": after.ready})
        )
    return out


def kubelet_changes(
    pod: Pod, before: PodStatus | None, after: PodStatus, now: float
) -> list[RuntimeEvent]:
    """Tell what the kubelet changed between two observed statuses of one pod.

    `now` stamps the changes the API carries no time for (ready, started): the moment they were
    observed. The first snapshot of a pod (`before` None) reports its running containers as
    started, so the timeline has an anchor for each instance.
    """
    out: list[RuntimeEvent] = []
    for group_after, group_before in (
        (after.init_container_statuses, before.init_container_statuses if before else ()),
        (after.container_statuses, before.container_statuses if before else ()),
    ):
        previous = {s.name: s for s in group_before}
        for s in group_after:
            out.extend(_changes_of(pod, previous.get(s.name), s, now))
    return out
