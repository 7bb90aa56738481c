"""Turn core/v1 Events about pods (raw JSON dicts) into `RuntimeEvent`s, counted once each.

Message formats are the kubelet's (v1.35):

- `prober.go`, reason `Unhealthy`: "<Type> probe failed: <output>" and
  "<Type> probe errored and resulted in <result> state: <error>" (older kubelets:
  "<Type> probe errored: <error>"); reason `ProbeWarning`: "<Type> probe warning: <output>".
  `<Type>` is Liveness, Readiness or Startup; `<result>` a `probe.Result` (unknown, ...).
- `kuberuntime_manager.go`, reason `Killing`: "Container <name> failed liveness probe" or
  "... failed startup probe", with ", will be restarted" when it will be; a sidecar's
  "Init container <name> failed <type> probe"; "Container <name> definition changed, will be
  restarted"; and `killContainer`'s default "Stopping container <name>".
- `kuberuntime_container.go` `doBackOff`, reason `BackOff`: "Back-off restarting failed
  container <name> in pod <name>_<namespace>(<uid>)"; image pulls: "Back-off pulling image ...".
- `Started`, `Created`, `Pulled`, `Pulling`, `Failed`, ... are kept with their text as is.

The container comes from `involvedObject.fieldPath` (`spec.containers{app}`,
`spec.initContainers{init}`); for `Killing` and `BackOff` the message names it too.

Counting, after client-go's `tools/record/events_cache.go`: the kubelet records an event once
and then *patches the same object* (same name and uid) with `count + 1`, a new
`lastTimestamp` and the newest message; events created through events.k8s.io count in
`series.count` with `series.lastObservedTime` instead. So one object may arrive many times (a
watch MODIFIED per occurrence, again on every re-list): `EventCounter` keys on the uid and hands
out only the increase since it last saw the object, so nothing is shown twice.

After 10 events that differ only in message within 10 minutes, client-go records instead one
aggregate event whose message is "(combined from similar events): " + the newest message; its
key leaves out the message *and the field path*, and its patches carry count, time and message
but not `involvedObject`, so the aggregate keeps the first event's container while later
messages may be about another container of the same pod. The prefix is stripped and
`aggregated` set; for `Killing` and `BackOff` the container named in the message wins.
The kubelet's spam filter (25 events per object, then one per 5 minutes) also drops events:
counts are a lower bound, never a full record.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probetui.runtime.base import RuntimeEvent
from probetui.runtime.kubernetes.observed import parse_time
from probetui.spec.model import ContainerKind, Pod, ProbeType
from probetui.timeline.events import EventType

__all__ = [
    "AGGREGATE_PREFIX",
    "EventCounter",
    "ObservedEvent",
    "container_of_field_path",
    "kubelet_event",
    "parse_event",
    "parse_message",
]

AGGREGATE_PREFIX = "(combined from similar events): "

UNHEALTHY = EventType.UNHEALTHY
PROBE_WARNING = EventType.PROBE_WARNING
KILLING = EventType.KILLING
BACK_OFF = EventType.BACK_OFF

_PROBE = r"(?P<probe>Liveness|Readiness|Startup)"
_UNHEALTHY = (
    (re.compile(rf"{_PROBE} probe failed: ?(?P<output>.*)\Z", re.S), "failure"),
    (
        re.compile(
            rf"{_PROBE} probe errored and resulted in (?P<result>\w+) state: ?(?P<output>.*)\Z",
            re.S,
        ),
        "error",
    ),
    (re.compile(rf"{_PROBE} probe errored: ?(?P<output>.*)\Z", re.S), "error"),
    (re.compile(rf"{_PROBE} probe warning: ?(?P<output>.*)\Z", re.S), "warning"),
)
_KILL_PROBE = re.compile(
    r"(?P<who>Init container|Container) (?P<name>\S+) failed (?P<probe>liveness|startup) probe"
    r"(?P<restart>, will be restarted)?\Z"
)
_KILL_CHANGED = re.compile(
    r"Container (?P<name>\S+) definition changed(?P<restart>, will be restarted)?\Z"
)
_KILL_STOPPING = re.compile(r"Stopping container (?P<name>\S+)\Z")
_BACKOFF_RESTART = re.compile(
    r"Back-off restarting failed container (?P<name>\S+) in pod (?P<pod>.+)\Z", re.S
)
_BACKOFF_IMAGE = re.compile(r"Back-off pulling image (?P<image>.+)\Z", re.S)
_FIELD_PATH = re.compile(
    r"spec\.(?P<group>containers|initContainers|ephemeralContainers)\{(?P<name>[^}]+)\}"
)
_GROUP_KIND = {
    "containers": ContainerKind.CONTAINER,
    "initContainers": ContainerKind.INIT,
    "ephemeralContainers": ContainerKind.EPHEMERAL,
}


def container_of_field_path(field_path: str) -> tuple[str, ContainerKind] | None:
    """`spec.containers{app}` -> ("app", CONTAINER), as `GenerateContainerRef` writes it."""
    m = _FIELD_PATH.match(field_path)
    if m is None:
        return None
    return m["name"], _GROUP_KIND[m["group"]]


@dataclass(frozen=True, slots=True)
class Parsed:
    """Holds what a message says beyond its reason: probe type, container, and details for
    the UI."""

    probe: ProbeType | None = None
    container: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


def parse_message(reason: str, message: str) -> Parsed:
    """Read the kubelet's own text for `reason`; unknown texts give an empty Parsed."""
    if reason in (UNHEALTHY, PROBE_WARNING):
        for pattern, outcome in _UNHEALTHY:
            m = pattern.match(message)
            if m is None:
                continue
            details: dict[str, Any] = {"outcome": outcome, "output": m["output"]}
            if "result" in pattern.groupindex:
                details["result"] = m["result"]
            return Parsed(probe=ProbeType(m["probe"]), details=details)
        return Parsed()
    if reason == KILLING:
        if (m := _KILL_PROBE.match(message)) is not None:
            # a sidecar is always restarted, and its message says nothing about it
            restart = m["restart"] is not None or m["who"] == "Init container"
            return Parsed(
                probe=ProbeType.parse(m["probe"]),
                container=m["name"],
                details={"cause": f"{m['probe']} probe", "restart": restart},
            )
        if (m := _KILL_CHANGED.match(message)) is not None:
            return Parsed(
                container=m["name"],
                details={"cause": "definition changed", "restart": m["restart"] is not None},
            )
        if (m := _KILL_STOPPING.match(message)) is not None:
            return Parsed(container=m["name"], details={"cause": "stopping", "restart": False})
        return Parsed()
    if reason == BACK_OFF:
        if (m := _BACKOFF_RESTART.match(message)) is not None:
            return Parsed(container=m["name"], details={"backOff": "restart"})
        if (m := _BACKOFF_IMAGE.match(message)) is not None:
            return Parsed(details={"backOff": "image pull", "image": m["image"].strip('"')})
    return Parsed()


@dataclass(frozen=True, slots=True)
class ObservedEvent:
    """Holds one core/v1 Event about a pod, read."""

    uid: str  # metadata.uid (namespace/name when absent): stable across count updates
    namespace: str
    name: str
    reason: str
    type: str  # "Normal" or "Warning"
    message: str  # without the aggregation prefix
    pod_namespace: str
    pod_name: str
    pod_uid: str
    t: float | None  # the last occurrence
    first_t: float | None
    count: int  # occurrences so far, >= 1
    component: str = ""  # source.component or reportingComponent: "kubelet", ...
    host: str = ""  # the node, for kubelet events
    container: str | None = None
    container_kind: ContainerKind | None = None
    probe: ProbeType | None = None
    aggregated: bool = False
    resource_version: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def from_kubelet(self) -> bool:
        return self.component == "kubelet"


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _positive(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def parse_event(obj: Mapping[str, Any]) -> ObservedEvent | None:
    """Return a core/v1 Event dict, or None when it is not about a Pod."""
    involved = _dict(obj.get("involvedObject"))
    if _str(involved.get("kind")) != "Pod":
        return None
    meta = _dict(obj.get("metadata"))
    namespace = _str(meta.get("namespace"))
    name = _str(meta.get("name"))
    reason = _str(obj.get("reason"))
    message = _str(obj.get("message"))
    aggregated = message.startswith(AGGREGATE_PREFIX)
    if aggregated:
        message = message[len(AGGREGATE_PREFIX) :]

    series = _dict(obj.get("series"))
    count = _positive(series.get("count")) or _positive(obj.get("count")) or 1
    t = (
        parse_time(series.get("lastObservedTime"))
        or parse_time(obj.get("lastTimestamp"))
        or parse_time(obj.get("eventTime"))
        or parse_time(obj.get("firstTimestamp"))
        or parse_time(meta.get("creationTimestamp"))
    )
    first_t = parse_time(obj.get("firstTimestamp")) or parse_time(obj.get("eventTime"))

    parsed = parse_message(reason, message)
    by_path = container_of_field_path(_str(involved.get("fieldPath")))
    container, kind = by_path if by_path is not None else (None, None)
    if parsed.container is not None and (container is None or aggregated):
        if parsed.container != container:
            kind = None  # the message does not say which list the container is in
        container = parsed.container

    source = _dict(obj.get("source"))
    return ObservedEvent(
        uid=_str(meta.get("uid")) or f"{namespace}/{name}",
        namespace=namespace,
        name=name,
        reason=reason,
        type=_str(obj.get("type")),
        message=message,
        pod_namespace=_str(involved.get("namespace")) or namespace,
        pod_name=_str(involved.get("name")),
        pod_uid=_str(involved.get("uid")),
        t=t,
        first_t=first_t,
        count=count,
        component=_str(source.get("component")) or _str(obj.get("reportingComponent")),
        host=_str(source.get("host")) or _str(obj.get("reportingInstance")),
        container=container,
        container_kind=kind,
        probe=parsed.probe,
        aggregated=aggregated,
        resource_version=_str(meta.get("resourceVersion")),
        details=parsed.details,
    )


class EventCounter:
    """Counts how many occurrences of each event object were handed out; bounded by uid.

    client-go's recorder keeps 4096 events per process and events live an hour (the API
    server's default TTL), so a few thousand entries per watched namespace are plenty; an
    evicted event seen again counts in full once more.
    """

    def __init__(self, size: int = 8192) -> None:
        self._size = size
        self._seen: OrderedDict[str, int] = OrderedDict()

    def observe(self, event: ObservedEvent) -> int:
        """Occurrences not handed out before (0: nothing new, e.g. the same object re-listed)."""
        seen = self._seen.get(event.uid, 0)
        increment = max(event.count - seen, 0)
        self._seen[event.uid] = max(seen, event.count)
        self._seen.move_to_end(event.uid)
        while len(self._seen) > self._size:
            self._seen.popitem(last=False)
        return increment

    def forget(self, uid: str) -> None:
        """The event object was deleted (TTL): its uid will not come back."""
        self._seen.pop(uid, None)

    def __len__(self) -> int:
        return len(self._seen)


def kubelet_event(event: ObservedEvent, pod: Pod, increment: int, now: float) -> RuntimeEvent:
    """Return the engine's event for `increment` new occurrences of `event` on `pod`.

    `type` is the event's reason (Unhealthy, ProbeWarning, Killing, BackOff, Started, ...);
    `now` stands in for an event that carries no time at all.
    """
    fields: dict[str, Any] = {
        "message": event.message,
        "eventType": event.type,
        "count": event.count,
        "increment": increment,
        "eventUid": event.uid,
    }
    if event.aggregated:
        fields["aggregated"] = True
    if event.first_t is not None and event.count > 1:
        fields["firstSeen"] = event.first_t
    fields.update(event.details)
    return RuntimeEvent(
        type=event.reason,
        t=event.t if event.t is not None else now,
        pod=pod,
        container=event.container,
        probe=event.probe,
        fields=fields,
        source="kubelet" if event.from_kubelet else event.component or "kubelet",
    )
