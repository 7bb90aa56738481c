"""Define the one event type everything downstream of the engine reads, and its one encoder.

The vocabulary is `probetui simulate`'s: `ProbeAttempt`, `ResultChanged`, `ContainerStarted`,
`ContainerExited`, `Killing`, `BackOff`, `Unhealthy`, `ProbeWarning`, `StartedChanged`,
`ReadyChanged`; plus `ProbeSkipped` (a doProbe that ran no handler; the timeline draws it,
the headless output leaves it out, as simulate does) and, from the cluster source,
`Divergence`.

The shadow's events (a doProbe record, a published result change, a worker's state) are built
here and nowhere else: the live engine and `probetui simulate` both call these functions, so
the two cannot drift apart in what an attempt or a result change says. The kubelet's own
events come from the runtime (a real kubelet's from the API, a played one's from `PodKubelet`)
and only pass through `runtime_event`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from probetui.keys import EventType, ProbeKey
from probetui.prober.outcome import outcome_label
from probetui.prober.results import ResultValue
from probetui.prober.worker import ProbeRecord, WorkerState
from probetui.spec.model import Pod, ProbeType

if TYPE_CHECKING:
    from probetui.runtime.base import RuntimeEvent

SHADOW = "shadow"  # probetui's own workers
KUBELET = "kubelet"  # the kubelet, real (cluster) or played (local runtime)


# the members the per-attempt paths name, bound once: looking a member up on its enum class
# costs several times the comparison it is used in
PROBE_ATTEMPT = EventType.PROBE_ATTEMPT
PROBE_SKIPPED = EventType.PROBE_SKIPPED
RESULT_CHANGED = EventType.RESULT_CHANGED
WORKER_STATE = EventType.WORKER_STATE
EVENTS_DROPPED = EventType.EVENTS_DROPPED
KUBELET_PROBE_COUNTS = EventType.KUBELET_PROBE_COUNTS

# events the headless output does not print
NOT_IN_JSONL = frozenset({PROBE_SKIPPED, WORKER_STATE})


@dataclass(slots=True)
class Event:
    type: EventType | str  # a kubelet event seen on a cluster keeps its own reason
    t: float  # wall-clock seconds
    pod_uid: str
    namespace: str
    pod: str
    container: str | None
    probe: ProbeType | None  # a str too: "liveness", "readiness", "startup"
    source: str
    fields: dict[str, Any] = field(default_factory=dict)
    # the worker's record behind a ProbeAttempt / ProbeSkipped: the store keeps it for the UI
    record: ProbeRecord | None = None
    # the worker's state where no record carries it (WorkerState, the engine's own skips)
    state: WorkerState | None = None

    def shifted(self, seconds: float) -> Event:
        """The same event `seconds` later, its record's times too: a simulation's events (on
        virtual time from 0) written as a recording of wall time, for tests and benchmarks."""
        r = self.record
        if r is not None:
            r = replace(
                r,
                t=r.t + seconds,
                scheduled_at=r.scheduled_at + seconds,
                finished_at=None if r.finished_at is None else r.finished_at + seconds,
                next_tick=None if r.next_tick is None else r.next_tick + seconds,
            )
        return replace(self, t=self.t + seconds, record=r)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "ts": datetime.fromtimestamp(self.t, UTC).isoformat(timespec="milliseconds"),
            "namespace": self.namespace,
            "pod": self.pod,
            "container": self.container,
            "probe": self.probe,
            "source": self.source,
        }
        out.update(self.fields)
        return out

    def to_line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))


def attempt_fields(record: ProbeRecord, via: str | None = None) -> dict[str, Any]:
    """A ProbeAttempt's fields, named as in `probetui simulate --json` and `probetui check`.

    All but the result run and the latency come from the record's steady part: made once per
    part and `via`, kept on the part as the keys and the values apart, and zipped again for each
    record of it (the keys' order kept; setting a key that is there keeps its place). Two tuples
    of plain values, which the cyclic collector stops tracking, where a dict would stay tracked
    on each of 15,000 probes' parts."""
    part = record.steady
    kept = part.fields
    if kept is not None and kept[0] == via:
        fields = dict(zip(kept[1], kept[2], strict=True))
        fields["resultRun"] = record.result_run
        if part.tries:  # the latency off the record: a steady attempt builds no outcome
            fields["latency_ms"] = round(record.latency * 1000.0, 3)
        return fields
    fields = _attempt_fields(record, via)
    names = tuple(fields)
    part.fields = (via, _NAMES.setdefault(names, names), tuple(fields.values()))
    return fields


# the distinct orders of an attempt's field names (a few dozen at most: which of the optional
# fields it has), shared by every part
_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _attempt_fields(record: ProbeRecord, via: str | None) -> dict[str, Any]:
    outcome = record.outcome
    assert outcome is not None
    attempt = outcome.attempt
    fields: dict[str, Any] = {
        "outcome": outcome_label(outcome),
        "result": outcome.result.label,
        "resultRun": record.result_run,
        "trigger": record.trigger.value,
        "manual": record.manual,
        "tries": len(outcome.attempts),
    }
    if attempt is not None:
        fields.update(
            handler=attempt.handler,
            target=attempt.target,
            latency_ms=attempt.latency_ms,
            output=attempt.output,
        )
        if attempt.status_code is not None:
            fields["statusCode"] = attempt.status_code
        if attempt.timed_out:
            fields["timedOut"] = True
    if outcome.error is not None:
        fields["error"] = outcome.error
    if outcome.event is not None:
        fields["event"] = outcome.event.message
    if via is not None:
        fields["via"] = via
    return fields


def _shadow(
    type_: EventType,
    t: float,
    pod: Pod,
    key: ProbeKey,
    fields: dict[str, Any] | None = None,
    record: ProbeRecord | None = None,
    state: WorkerState | None = None,
) -> Event:
    return Event(
        type_,
        t,
        pod.uid,
        pod.namespace,
        pod.name,
        key.container,
        key.probe_type,
        SHADOW,
        fields if fields is not None else {},
        record,
        state,
    )


def skipped_fields(record: ProbeRecord) -> dict[str, Any]:
    """A ProbeSkipped's fields for a doProbe that ran no handler (the recording's reader too)."""
    return {"reason": record.skip.value if record.skip else "", "trigger": record.trigger}


def result_fields(label: str, container_id: str) -> dict[str, Any]:
    """A ResultChanged's fields (the recording's reader too)."""
    return {"result": label, "containerID": container_id}


def record_event(pod: Pod, record: ProbeRecord, via: str | None = None) -> Event:
    """A worker's doProbe record: the shadow's `ProbeAttempt`, or `ProbeSkipped` when no
    handler ran. `via` says how the attempt reached the container (JSONL's `via`)."""
    if not record.steady.probed:
        return _shadow(PROBE_SKIPPED, record.t, pod, record.key, skipped_fields(record), record)
    return _shadow(PROBE_ATTEMPT, record.t, pod, record.key, attempt_fields(record, via), record)


def record_shell(pod: Pod, record: ProbeRecord) -> Event:
    """Build a worker's doProbe record as `record_event`'s event without its fields, for a host
    that builds an elsewhere-run attempt again from its record (`RuntimeHost.shadow_event`)."""
    type_ = PROBE_ATTEMPT if record.steady.probed else PROBE_SKIPPED
    return _shadow(type_, record.t, pod, record.key, None, record)


def not_probed_event(pod: Pod, state: WorkerState, t: float, reason: str) -> Event:
    """A tick the runtime would not let run (observe-only): no handler, no record."""
    return _shadow(PROBE_SKIPPED, t, pod, state.key, {"reason": reason}, state=state)


def worker_state_event(pod: Pod, state: WorkerState, t: float) -> Event:
    """A worker paused, resumed or exited: what the UI shows of it, without a record."""
    return _shadow(WORKER_STATE, t, pod, state.key, state=state)


def result_changed_event(
    pod: Pod,
    container: str | None,
    probe_type: ProbeType,
    result: ResultValue,
    container_id: str,
    t: float,
) -> Event:
    """The shadow's results cache published a new value for a container."""
    return Event(
        RESULT_CHANGED,
        t,
        pod.uid,
        pod.namespace,
        pod.name,
        container,
        probe_type,
        SHADOW,
        result_fields(result.label, container_id),
    )


def runtime_event(event: RuntimeEvent) -> Event:
    """What a runtime reported (the kubelet's doings, or the shadow's `Divergence`)."""
    pod = event.pod
    return Event(
        type=event.type,
        t=event.t,
        pod_uid=pod.uid,
        namespace=pod.namespace,
        pod=pod.name,
        container=event.container,
        probe=event.probe,
        source=event.source,
        fields=dict(event.fields),
    )


_COUNT_GLYPHS = (("successful", "✓"), ("failed", "✖"))


def count_words(counts: dict[str, int]) -> str:
    """A KubeletProbeCounts side in words: `12 ✓ 3 ✖` (and `1 ?` where some were unknown)."""
    parts = [f"{counts.get(result, 0)} {glyph}" for result, glyph in _COUNT_GLYPHS]
    if counts.get("unknown"):
        parts.append(f"{counts['unknown']} ?")
    return " ".join(parts)


def dropped_event(shard: int, count: int, total: int, by_type: Any, t: float) -> Event:
    """A shard dropped `count` events for a reader too slow to take them (`total` so far):
    about no pod, so every sink keeps it as a mark of the gap (the store ignores it)."""
    fields = {"shard": shard, "count": count, "total": total, "byType": dict(by_type or {})}
    return Event(EVENTS_DROPPED, t, "", "", "", None, None, SHADOW, fields)


__all__ = [
    "EVENTS_DROPPED",
    "KUBELET",
    "KUBELET_PROBE_COUNTS",
    "NOT_IN_JSONL",
    "PROBE_ATTEMPT",
    "PROBE_SKIPPED",
    "RESULT_CHANGED",
    "SHADOW",
    "WORKER_STATE",
    "Event",
    "EventType",
    "attempt_fields",
    "count_words",
    "dropped_event",
    "not_probed_event",
    "record_event",
    "record_shell",
    "result_changed_event",
    "result_fields",
    "runtime_event",
    "skipped_fields",
    "worker_state_event",
]
