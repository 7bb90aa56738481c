"""Events as the kubelet's recorder writes them (client-go tools/record, EventCorrelator).

- A repeat of an identical event (same source, object, type, reason and message) is not a new
  object: the recorder PATCHes the existing one with `count + 1`, a new `lastTimestamp` and the
  message, so a watch sees MODIFIED (EventLogger).
- Once 10 events that differ only in message arrive for one object and reason within 10
  minutes, the next ones are folded into a single event whose message starts with
  "(combined from similar events): " (EventAggregator).
The spam filter (a token bucket per object) is not emulated: every call records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]

MAX_SIMILAR = 10
AGGREGATE_WINDOW_S = 600.0
COMBINED_PREFIX = "(combined from similar events): "


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(pod: Obj, field_path: str | None) -> Obj:
    meta = pod.get("metadata", {})
    ref: Obj = {
        "kind": "Pod",
        "namespace": meta.get("namespace", "default"),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": "v1",
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if field_path:
        ref["fieldPath"] = field_path
    return ref


@dataclass
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class _Seen:
    name: str
    count: int
    first: str


class KubeletRecorder:
    def __init__(self, write: Callable[[Obj], Obj], clock: Callable[[], float] = time.time) -> None:
        self._write = write
        self._clock = clock
        self._similar: dict[tuple[Any, ...], _Similar] = {}
        self._seen: dict[tuple[Any, ...], _Seen] = {}

    def record(
        self,
        pod: Obj,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        field_path: str | None = None,
        host: str | None = None,
        component: str = "kubelet",
    ) -> Obj:
        now = self._clock()
        node = host or pod.get("spec", {}).get("nodeName") or "node-1"
        ref = object_reference(pod, field_path)
        ref_key = tuple(sorted(ref.items()))
        similar_key = (component, node, ref_key, type, reason, component, node)

        # EventAggregator: track distinct messages for this object and reason
        similar = self._similar.get(similar_key)
        if similar is None or now - similar.last > AGGREGATE_WINDOW_S:
            similar = self._similar[similar_key] = _Similar()
        similar.messages.add(message)
        similar.last = now
        cache_key: tuple[Any, ...] = (*similar_key, message)
        if len(similar.messages) >= MAX_SIMILAR:
            similar.messages.pop()
            message = COMBINED_PREFIX + message
            cache_key = similar_key

        stamp = rfc3339(now)
        seen = self._seen.get(cache_key)
        if seen is None:
            seen = _Seen(f"{ref['name']}.{int(now * 1e9):x}", 0, stamp)
            self._seen[cache_key] = seen
        seen.count += 1
        event: Obj = {
            "metadata": {"name": seen.name, "namespace": ref["namespace"]},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": {"component": component, "host": node},
            "firstTimestamp": seen.first,
            "lastTimestamp": stamp,
            "count": seen.count,
            "type": type,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": node,
        }
        return self._write(event)
