"""Turn a stored shape back into events: the reader's half of `codec.py`.

`Template` holds one shape with its texts resolved and its values typed, so that an item costs
one `ProbeRecord` (and its outcome and attempt) built from the template and the item's times.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.steady import SteadyPart
from probetui.prober.worker import ProbeRecord, Skip, Trigger, WorkerState
from probetui.record.codec import (
    ATTEMPT,
    NOT_RUN,
    RECORD_KINDS,
    RESULT,
    SKIPPED,
    US,
    WORKER,
    Item,
)
from probetui.spec.model import ProbeType
from probetui.timeline.events import (
    PROBE_ATTEMPT,
    PROBE_SKIPPED,
    RESULT_CHANGED,
    SHADOW,
    WORKER_STATE,
    Event,
    attempt_fields,
    result_fields,
    skipped_fields,
)
from probetui.timeline.history import RecordShape, record_shape

# which event type each item kind is
EVENT_TYPE = {
    ATTEMPT: PROBE_ATTEMPT,
    SKIPPED: PROBE_SKIPPED,
    NOT_RUN: PROBE_SKIPPED,
    WORKER: WORKER_STATE,
    RESULT: RESULT_CHANGED,
}
ITEM_TYPES = frozenset(EVENT_TYPE.values())


@dataclass(frozen=True, slots=True)
class ProbeRef:
    """Holds what an item's event says about where it happened."""

    key: ProbeKey
    namespace: str
    pod: str
    container: str
    probe: ProbeType


def _result(value: int | None) -> ResultValue | None:
    return None if value is None else ResultValue(value)


class Template:
    __slots__ = (
        "_fields",
        "_part",
        "_shape",
        "attempt",
        "head",
        "kind",
        "node",
        "outcome",
        "state",
        "via",
    )

    def __init__(self, body: list[Any], text: Callable[[int | None], str | None]) -> None:
        self.kind: str = body[0]
        self.via: str | None = None
        self.node: str | None = None  # the node whose agent made an attempt
        self.attempt: tuple[Any, ...] | None = None
        self.outcome: tuple[Any, ...] | None = None
        self.state: tuple[Any, ...] = ()
        self.head: tuple[Any, ...] = ()
        # an attempt's fields but its result run and latency, the same for every item of the
        # shape: built from the first item, copied for the next (a seek builds 20,000)
        self._fields: dict[str, Any] | None = None
        # what a record of the shape adds to a store's history (`shape_of`), built once
        self._shape: RecordShape | None = None
        # the steady part every record of the shape carries, made with the first of them
        self._part: SteadyPart | None = None
        kind = self.kind
        if kind in RECORD_KINDS:
            trigger, cid, last, published, on_hold, paused = body[1:7]
            self.head = (
                Trigger(trigger),
                cid,
                ResultValue(last),
                _result(published),
                on_hold,
                paused,
            )
            if kind == SKIPPED:
                self.state = (Skip(body[7]) if body[7] is not None else None,)
            else:
                via, result, error, tries, ev, a = body[7:13]
                self.via = via
                if len(body) > 13:  # absent from shapes recorded before nodes were kept
                    self.node = body[13]
                event = ProbeEvent(ev[0], ev[1], text(ev[2]) or "") if ev is not None else None
                self.outcome = (ResultValue(result), text(error), tries, event)
                if a is not None:
                    handler, target, res, output, err, code, excerpt, timed_out = a
                    self.attempt = (
                        handler,
                        text(target) or "",
                        Result(res),
                        text(output) or "",
                        text(err),
                        code,
                        text(excerpt),
                        timed_out,
                    )
        elif kind == NOT_RUN:
            self.state = (text(body[1]) or "", body[2], body[3], _result(body[4]))
        elif kind == WORKER:
            self.state = (body[1], body[2], _result(body[3]))
        else:  # R
            self.state = (body[1], body[2])

    def record(self, key: ProbeKey, item: Item) -> ProbeRecord:
        t = item.t / US
        part = self._part
        if part is not None:
            # every record of the shape says the same but for its numbers: the part of the first
            if self.kind != ATTEMPT:
                return ProbeRecord(key, t, item.tick / US, result_run=item.run, steady=part)
            latency = item.latency / US
            # an error without a try has no try's numbers; only an attempt's last try is
            # recorded, the earlier ones of a retried attempt being copies of it
            tried = self.attempt is not None
            tries = self.outcome[2] if self.outcome is not None else 1
            return ProbeRecord(
                key,
                t,
                item.tick / US,
                finished_at=t + latency,
                result_run=item.run,
                latency=latency if tried else 0.0,
                started_at=t if tried else 0.0,
                earlier=(latency, t) * (max(1, tries) - 1) if tried else (),
                steady=part,
            )
        trigger, cid, last, published, on_hold, paused = self.head
        outcome: ProbeOutcome | None = None
        skip: Skip | None = None
        finished: float | None = None
        if self.kind == ATTEMPT:
            assert self.outcome is not None
            result, error, tries, event = self.outcome
            latency = item.latency / US
            attempts: tuple[Attempt, ...] = ()
            a = self.attempt
            if a is not None:
                handler, target, res, output, err, code, body, timed_out = a
                one = Attempt(handler, target, res, output, err, latency, t, code, body, timed_out)
                # only the last try is recorded: the earlier ones of a retried attempt are copies
                attempts = (one,) * max(1, tries)
            outcome = ProbeOutcome(result, error, attempts, event)
            finished = t + latency
        else:
            skip = self.state[0]
        # positional, in the fields' order: cheaper than keywords on a frozen dataclass, and a
        # seek builds many (the round-trip tests compare every field)
        record = ProbeRecord(
            key,
            t,
            item.tick / US,
            trigger,
            cid,
            skip,
            outcome,
            finished,
            item.run,
            last,
            published,
            on_hold,
            None,
            paused,
        )
        self._part = record.steady
        return record

    def steady(self, key: ProbeKey) -> RecordShape | None:
        """Return what every record of this shape leaves a history at (the state a replay's
        seek gives a probe it defers): an attempt's whose result counts; None for a skip or
        an error, which leave the last result as the record before them had it."""
        if self.kind != ATTEMPT:
            return None
        shape = self._shape
        if shape is None:
            # the shape of a record is the same whatever the item: none of its times or run
            shape = self._shape = record_shape(self.record(key, Item(0, 0, 0, 1, 0)))
        return shape if shape.last_result is not None else None

    def shape_of(self, key: ProbeKey, item: Item) -> RecordShape | None:
        """Return what a doProbe record of this shape adds to its probe's history but its own
        times, latency and run (built once per shape); None where the item is no record."""
        kind = self.kind
        if kind != ATTEMPT and kind != SKIPPED:
            return None
        shape = self._shape
        if shape is None:
            shape = self._shape = record_shape(self.record(key, item))
        return shape

    def event(self, ref: ProbeRef, item: Item, records: bool = True) -> Event:
        """The item's event; without `records`, an attempt's fields alone (its ProbeRecord
        is not built once the shape's fields are known: a reader of fields is spared it)."""
        kind = self.kind
        t = item.t / US
        key = ref.key

        def ev(type_: str, fields: dict[str, Any], **extra: Any) -> Event:
            return Event(
                type_,
                t,
                key.pod_uid,
                ref.namespace,
                ref.pod,
                ref.container,
                ref.probe,
                SHADOW,
                fields,
                **extra,
            )

        if kind == ATTEMPT:
            base = self._fields
            record = self.record(key, item) if records or base is None else None
            if base is None:
                assert record is not None
                fields = attempt_fields(record, self.via)
                if self.node is not None:
                    fields["node"] = self.node  # last, as the agent reader sets it live
                self._fields = dict(fields)
            else:
                # a copy keeps the keys' order; setting an existing key keeps its place
                fields = base.copy()
                fields["resultRun"] = item.run
                if "latency_ms" in fields:
                    fields["latency_ms"] = round(item.latency / US * 1000.0, 3)
            return Event(
                PROBE_ATTEMPT,
                t,
                key.pod_uid,
                ref.namespace,
                ref.pod,
                ref.container,
                ref.probe,
                SHADOW,
                fields,
                record if records else None,
            )
        if kind == SKIPPED:
            record = self.record(key, item)
            return ev(PROBE_SKIPPED, skipped_fields(record), record=record)
        if kind == NOT_RUN:
            reason, running, paused, published = self.state
            state = WorkerState(key, running, paused, None, published)
            return ev(PROBE_SKIPPED, {"reason": reason}, state=state)
        if kind == WORKER:
            running, paused, published = self.state
            return ev(WORKER_STATE, {}, state=WorkerState(key, running, paused, None, published))
        label, cid = self.state
        return ev(RESULT_CHANGED, result_fields(label, cid))


__all__ = ["EVENT_TYPE", "ITEM_TYPES", "ProbeRef", "Template"]
