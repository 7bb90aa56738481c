"""The resources the emulator serves: kinds, scope, selectable fields, and how a view is encoded.

`events` is stored once, as core/v1 Events (one etcd key per event, as upstream) and served by
two views: core/v1 and events.k8s.io/v1, converted on the way out like the apiserver does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


def _get(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def pod_fields(pod: Obj) -> dict[str, str]:
    """pkg/registry/core/pod: PodToSelectableFields."""
    names = (
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
    out = {name: _text(_get(pod, name)) for name in names}
    out["spec.hostNetwork"] = "true" if _get(pod, "spec.hostNetwork") else "false"
    ips = _get(pod, "status.podIPs") or []
    # upstream exposes status.podIPs as the first IP only
    out["status.podIPs"] = _text(ips[0].get("ip")) if ips else ""
    return out


def event_fields(event: Obj) -> dict[str, str]:
    """pkg/registry/core/event: ToSelectableFields (source is source.component)."""
    out = {
        "metadata.name": _text(_get(event, "metadata.name")),
        "metadata.namespace": _text(_get(event, "metadata.namespace")),
        "reason": _text(event.get("reason")),
        "reportingComponent": _text(event.get("reportingComponent")),
        "source": _text(_get(event, "source.component")),
        "type": _text(event.get("type")),
    }
    for key in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
        out[f"involvedObject.{key}"] = _text(_get(event, f"involvedObject.{key}"))
    return out


def namespace_fields(ns: Obj) -> dict[str, str]:
    return {
        "metadata.name": _text(_get(ns, "metadata.name")),
        "status.phase": _text(_get(ns, "status.phase")),
    }


# events.k8s.io/v1 selects with the new names; they map onto the stored core fields.
_EVENTS_V1_FIELD_ALIASES = {
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
}


def _events_v1_fields(event: Obj) -> dict[str, str]:
    core = event_fields(event)
    out = dict(core)
    for new, old in _EVENTS_V1_FIELD_ALIASES.items():
        out[new] = core[old]
    return out


def core_event_to_events_v1(event: Obj) -> Obj:
    """The events.k8s.io/v1 encoding of a stored core/v1 Event (pkg/apis/events/v1 conversion)."""
    mapping = (
        ("metadata", "metadata"),
        ("eventTime", "eventTime"),
        ("series", "series"),
        ("reportingComponent", "reportingController"),
        ("reportingInstance", "reportingInstance"),
        ("action", "action"),
        ("reason", "reason"),
        ("involvedObject", "regarding"),
        ("related", "related"),
        ("message", "note"),
        ("type", "type"),
        ("source", "deprecatedSource"),
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
        ("count", "deprecatedCount"),
    )
    out: Obj = {"kind": "Event", "apiVersion": "events.k8s.io/v1"}
    for old, new in mapping:
        value = event.get(old)
        if value in (None, "", {}, 0) and new != "eventTime":
            continue
        out[new] = value
    return out


@dataclass(frozen=True)
class ResourceType:
    """One resource as one API group/version serves it."""

    group: str
    version: str
    name: str  # plural, as in the URL
    kind: str
    namespaced: bool
    storage: str  # the store's collection this view reads
    singular: str
    short_names: tuple[str, ...] = ()
    fields: Callable[[Obj], dict[str, str]] = field(default=lambda _o: {})
    # stored object -> the encoding this view serves (sets kind and apiVersion)
    encode: Callable[[Obj], Obj] | None = None
    subresources: tuple[tuple[str, str], ...] = ()  # (name, kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def supports_field(self, name: str) -> bool:
        return name in self.fields({})

    def to_wire(self, obj: Obj) -> Obj:
        """The object with the TypeMeta a watch event or single GET carries."""
        if self.encode is not None:
            return self.encode(obj)
        out = {"kind": self.kind, "apiVersion": self.api_version}
        out.update((k, v) for k, v in obj.items() if k not in ("kind", "apiVersion"))
        return out

    def list_item(self, obj: Obj) -> Obj:
        """An item of a List: the apiserver leaves kind and apiVersion off each item."""
        wire = self.to_wire(obj)
        return {k: v for k, v in wire.items() if k not in ("kind", "apiVersion")}

    def bookmark(self, rv: int, *, initial_events_end: bool = False) -> Obj:
        """The empty object a BOOKMARK carries: only TypeMeta and the resourceVersion."""
        metadata: Obj = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_events_end:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj: Obj = {"kind": self.kind, "apiVersion": self.api_version, "metadata": metadata}
        if self.kind == "Pod":
            obj["spec"] = {"containers": None}
            obj["status"] = {}
        elif self.kind == "Event" and not self.group:
            obj.update(
                involvedObject={},
                source={},
                firstTimestamp=None,
                lastTimestamp=None,
                eventTime=None,
                reportingComponent="",
                reportingInstance="",
            )
        elif self.kind == "Event":
            obj["eventTime"] = None
        elif self.kind == "Namespace":
            obj["spec"] = {}
            obj["status"] = {}
        return obj


PODS = ResourceType(
    "",
    "v1",
    "pods",
    "Pod",
    True,
    "pods",
    "pod",
    ("po",),
    pod_fields,
    subresources=(
        ("exec", "PodExecOptions"),
        ("portforward", "PodPortForwardOptions"),
        ("proxy", "PodProxyOptions"),
    ),
)
EVENTS = ResourceType("", "v1", "events", "Event", True, "events", "event", ("ev",), event_fields)
NAMESPACES = ResourceType(
    "", "v1", "namespaces", "Namespace", False, "namespaces", "namespace", ("ns",), namespace_fields
)
NODES = ResourceType(
    "",
    "v1",
    "nodes",
    "Node",
    False,
    "nodes",
    "node",
    ("no",),
    lambda n: {
        "metadata.name": _text(_get(n, "metadata.name")),
        "spec.unschedulable": "true" if _get(n, "spec.unschedulable") else "false",
    },
)
EVENTS_V1 = ResourceType(
    "events.k8s.io",
    "v1",
    "events",
    "Event",
    True,
    "events",
    "event",
    ("ev",),
    _events_v1_fields,
    encode=core_event_to_events_v1,
)

REPLICASETS = ResourceType(
    "apps",
    "v1",
    "replicasets",
    "ReplicaSet",
    True,
    "replicasets",
    "replicaset",
    ("rs",),
    lambda r: {
        "metadata.name": _text(_get(r, "metadata.name")),
        "metadata.namespace": _text(_get(r, "metadata.namespace")),
    },
)
SECRETS = ResourceType(
    "",
    "v1",
    "secrets",
    "Secret",
    True,
    "secrets",
    "secret",
    (),
    lambda s: {
        "metadata.name": _text(_get(s, "metadata.name")),
        "metadata.namespace": _text(_get(s, "metadata.namespace")),
        "type": _text(s.get("type")),
    },
)
RESOURCES: dict[tuple[str, str, str], ResourceType] = {
    (r.group, r.version, r.name): r
    for r in (PODS, EVENTS, NAMESPACES, NODES, EVENTS_V1, REPLICASETS, SECRETS)
}
# the views that read one stored collection, so a change fans out to each view's watchers
STORAGES = ("pods", "events", "namespaces", "nodes", "replicasets", "secrets")


def discovery_resources(group: str, version: str) -> list[Obj]:
    """APIResourceList.resources for one group/version: what is implemented, and only that."""
    out: list[Obj] = []
    for r in RESOURCES.values():
        if (r.group, r.version) != (group, version):
            continue
        entry: Obj = {
            "name": r.name,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": ["get", "list", "watch"],
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.kind == "Pod":
            entry["categories"] = ["all"]
        out.append(entry)
        for sub, kind in r.subresources:
            verbs = ["get"] if sub == "proxy" else ["create", "get"]
            out.append(
                {
                    "name": f"{r.name}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
    return sorted(out, key=lambda e: e["name"])
