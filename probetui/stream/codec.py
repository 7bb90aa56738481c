"""Encode the engine's `Event`s and pod snapshots as stream frames and back (docs/stream.md).

An event frame is `{"k": "event", "e": <the JSONL object>, "x": {...}}`: `e` is exactly what
`--output jsonl` prints for the event (`Event.to_json`, the one encoder), so a consumer of the
JSONL vocabulary reads `e` and nothing else; `x` carries what the JSONL line leaves out and
the UI's store and the recorder read: the pod's UID, the exact time, the worker's record behind
an attempt or skip (`ProbeRecord`) and the worker's state (`WorkerState`). Decoding gives back an
`Event` equal to the one encoded.
"""

from __future__ import annotations

from typing import Any

from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.status import PodStatus
from probetui.prober.worker import ProbeRecord, Skip, Trigger, WorkerState
from probetui.record.snapshot import status_from_json, status_json
from probetui.spec.encode import decode as decode_pod
from probetui.spec.encode import encode as encode_pod
from probetui.spec.model import Pod, ProbeType
from probetui.stream.protocol import EVENT, POD, ProtocolError
from probetui.timeline.events import Event

# the JSONL object's own keys; every other key of it is one of the event's fields
_BASE = frozenset({"type", "ts", "namespace", "pod", "container", "probe", "source"})


# -- events -----------------------------------------------------------------------------------


def event_frame(event: Event) -> dict[str, Any]:
    x: dict[str, Any] = {"uid": event.pod_uid, "t": event.t}
    if event.record is not None:
        x["rec"] = _record(event.record)
    if event.state is not None:
        x["st"] = _state(event.state)
    return {"k": EVENT, "e": event.to_json(), "x": x}


def event_from_frame(frame: dict[str, Any]) -> Event:
    try:
        e, x = frame["e"], frame["x"]
        fields = {k: v for k, v in e.items() if k not in _BASE}
        probe = ProbeType.parse(e["probe"]) if e["probe"] else None
        uid = x["uid"]
        key = ProbeKey(uid, e["container"], probe) if probe is not None else None
        rec, st = x.get("rec"), x.get("st")
        if (rec is not None or st is not None) and key is None:
            raise ProtocolError("an event with a worker's record or state names no probe")
        return Event(
            type=e["type"],
            t=x["t"],
            pod_uid=uid,
            namespace=e["namespace"],
            pod=e["pod"],
            container=e["container"],
            probe=probe,
            source=e["source"],
            fields=fields,
            record=_record_from(key, rec) if rec is not None and key is not None else None,
            state=_state_from(key, st) if st is not None and key is not None else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"event frame: {type(exc).__name__} {exc}") from None


def _record(r: ProbeRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "t": r.t,
        "at": r.scheduled_at,
        "tr": r.trigger.value,
        "cid": r.container_id,
        "run": r.result_run,
        "last": int(r.last_result),
    }
    if r.skip is not None:
        out["skip"] = r.skip.value
    if r.outcome is not None:
        out["out"] = _outcome(r.outcome)
    if r.finished_at is not None:
        out["fin"] = r.finished_at
    if r.published is not None:
        out["pub"] = int(r.published)
    if r.on_hold:
        out["hold"] = True
    if r.next_tick is not None:
        out["next"] = r.next_tick
    if r.paused:
        out["paused"] = True
    return out


def _record_from(key: ProbeKey, d: dict[str, Any]) -> ProbeRecord:
    out = d.get("out")
    pub = d.get("pub")
    return ProbeRecord(
        key=key,
        t=d["t"],
        scheduled_at=d["at"],
        trigger=Trigger(d["tr"]),
        container_id=d["cid"],
        skip=Skip(d["skip"]) if "skip" in d else None,
        outcome=_outcome_from(out) if out is not None else None,
        finished_at=d.get("fin"),
        result_run=d["run"],
        last_result=ResultValue(d["last"]),
        published=ResultValue(pub) if pub is not None else None,
        on_hold=d.get("hold", False),
        next_tick=d.get("next"),
        paused=d.get("paused", False),
    )


def _outcome(o: ProbeOutcome) -> dict[str, Any]:
    out: dict[str, Any] = {"r": int(o.result), "a": [_attempt(a) for a in o.attempts]}
    if o.error is not None:
        out["err"] = o.error
    if o.event is not None:
        out["ev"] = [o.event.type, o.event.reason, o.event.message]
    return out


def _outcome_from(d: dict[str, Any]) -> ProbeOutcome:
    ev = d.get("ev")
    return ProbeOutcome(
        result=ResultValue(d["r"]),
        error=d.get("err"),
        attempts=tuple(_attempt_from(a) for a in d["a"]),
        event=ProbeEvent(*ev) if ev is not None else None,
    )


def _attempt(a: Attempt) -> list[Any]:
    # positional: an attempt is most of every frame, and its keys would be half of it
    return [
        a.handler,
        a.target,
        a.result.value,
        a.output,
        a.error,
        a.latency,
        a.started_at,
        a.status_code,
        a.body,
        a.timed_out,
    ]


def _attempt_from(v: list[Any]) -> Attempt:
    handler, target, result, output, error, latency, started, code, body, timed_out = v
    return Attempt(
        handler, target, Result(result), output, error, latency, started, code, body, timed_out
    )


def _state(s: WorkerState) -> dict[str, Any]:
    out: dict[str, Any] = {"run": s.running}
    if s.paused:
        out["paused"] = True
    if s.next_tick is not None:
        out["next"] = s.next_tick
    if s.published is not None:
        out["pub"] = int(s.published)
    return out


def _state_from(key: ProbeKey, d: dict[str, Any]) -> WorkerState:
    pub = d.get("pub")
    return WorkerState(
        key,
        running=d["run"],
        paused=d.get("paused", False),
        next_tick=d.get("next"),
        published=ResultValue(pub) if pub is not None else None,
    )


# -- pods -------------------------------------------------------------------------------------


def pod_frame(pod: Pod, status: PodStatus | None, *, spec: bool) -> dict[str, Any]:
    """`spec`: send the pod's manifest (first time, or it changed); else the reader's last."""
    frame: dict[str, Any] = {
        "k": POD,
        "uid": pod.uid,
        "status": status_json(status) if status is not None else None,
    }
    if spec:
        frame["spec"] = encode_pod(pod)
        frame["src"] = pod.source
    return frame


class PodReader:
    """Reads pod frames back to `(pod, status)`, keeping each pod's last spec (frames omit it when
    it has not changed)."""

    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}

    def read(self, frame: dict[str, Any]) -> tuple[Pod, PodStatus | None]:
        uid = frame.get("uid")
        try:
            if "spec" in frame:
                pod = decode_pod(frame["spec"], frame.get("src", ""))
                self.pods[uid] = pod  # type: ignore[index]
            else:
                pod = self.pods[uid]  # type: ignore[index]
            raw = frame["status"]
            status = status_from_json(raw) if raw is not None else None
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"pod frame for {uid!r}: {type(exc).__name__} {exc}") from None
        if status is None:
            self.pods.pop(pod.uid, None)
        return pod, status


class PodWriter:
    """Writes pod snapshots to frames, the spec only when the pod object is a new one."""

    def __init__(self) -> None:
        self._sent: dict[str, Pod] = {}

    def frame(self, pod: Pod, status: PodStatus | None) -> dict[str, Any]:
        fresh = self._sent.get(pod.uid) is not pod
        if status is None:
            self._sent.pop(pod.uid, None)
        else:
            self._sent[pod.uid] = pod
        return pod_frame(pod, status, spec=fresh)

    def forget(self) -> None:
        """The reader starts over (a new connection): send every spec again."""
        self._sent.clear()


__all__ = ["PodReader", "PodWriter", "event_frame", "event_from_frame", "pod_frame"]
