"""Pack the shadow's attempts and skips as short arrays, many to a frame: compact attempt rows.

An addition within version 1 (docs/stream.md, "rows"), used when the client's hello asks for
it. Nearly every frame of a busy engine is a worker's `ProbeAttempt`, and nearly every attempt
of a worker says what its last one said but for its times and its result run: the same pod,
container, probe, target, status code, output and verdict. So:

- a worker is declared once per connection (`wk` frame: its number `w`, the pod's UID,
  namespace and name, the container and the probe), and its rows name it by `w`;
- a row is `[w, t, at, fin, next, run, latency, started, ...]` (the times and the result run:
  what changes on every attempt; one latency and start per try), followed by the rest of the
  record as one array only when that rest differs from the worker's previous row;
- the rows gathered for one write (`sender.Sender`, 10 ms) go in one `rows` frame, one
  line for all of them.

The reader gives back the very `Event` the engine's sinks got: the record is rebuilt field by
field, and the event from it by `record_event`, the one builder the engine itself calls (an
attempt's event is a pure function of the pod's names, the record and how it was reached). Only
events that builder made travel as rows (`is_row_event`); anything else stays an `event` frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.steady import SteadyPart
from probetui.prober.worker import ProbeRecord, Skip, Trigger
from probetui.spec.model import ProbeType
from probetui.stream.protocol import ProtocolError
from probetui.timeline.events import (
    PROBE_ATTEMPT,
    PROBE_SKIPPED,
    SHADOW,
    Event,
    record_event,
    record_shell,
)

ROWS = "rows"  # {"k": "rows", "r": [row, ...]}
WORKER = "wk"  # {"k": "wk", "w": 3, "uid": ..., "ns": ..., "pod": ..., "c": ..., "probe": ...}
ROW_TYPES = frozenset({PROBE_ATTEMPT, PROBE_SKIPPED})
# a row's leading cells before the tries' times: w, t, at, fin, next, run
_HEAD = 6
# a row's byte size as the sender guesses it before encoding (for its drop rule)
ROW_BYTES = 160


def is_row_event(event: Event) -> bool:
    """An event `record_event` built (a worker's doProbe record), which a row carries whole."""
    return (
        event.record is not None
        and event.state is None
        and event.type in ROW_TYPES
        and event.source == SHADOW
        and event.probe is not None
    )


class RowWriter:
    """Acts as the engine's side: events to `wk` frames and rows, per connection."""

    def __init__(self) -> None:
        self._ids: dict[ProbeKey, int] = {}
        # per worker number: the rest of its last row as sent (None: send it next time)
        self._rest: list[tuple[Any, ...] | None] = []

    def encode(self, event: Event) -> tuple[dict[str, Any] | None, list[Any]]:
        """(the `wk` frame to send first, or None; the row). `event` is a row event."""
        return self.encode_parts(*row_parts(event))

    def encode_parts(
        self, key: ProbeKey, names: PodNames, head: list[Any], rest: tuple[Any, ...]
    ) -> tuple[dict[str, Any] | None, list[Any]]:
        """(the `wk` frame to send first, or None; the row) from `row_parts`' pieces: an
        event split once can be encoded for many connections, or kept and encoded later."""
        w = self._ids.get(key)
        declare = None
        if w is None:
            w = self._ids[key] = len(self._rest)
            self._rest.append(None)
            declare = {
                "k": WORKER,
                "w": w,
                "uid": names.uid,
                "ns": names.namespace,
                "pod": names.name,
                "c": key.container,
                "probe": key.probe_type.key,
            }
        row: list[Any] = [w, *head]
        last = self._rest[w]
        if last is not rest and last != rest:
            self._rest[w] = rest
            row.append(rest)
        return declare, row

    def forget_key(self, key: ProbeKey) -> None:
        """A row of this worker was not sent: its next row carries its rest again."""
        w = self._ids.get(key)
        if w is not None:
            self._rest[w] = None

    def forget(self, event: Event) -> None:
        """The row of `event` was not sent (dropped for a slow reader): the worker's next row
        carries its rest again, since the reader never saw this one's."""
        if event.record is not None:
            self.forget_key(event.record.key)


@dataclass(frozen=True, slots=True)
class PodNames:
    """Holds what `record_event` reads of a pod, and what a `wk` frame names."""

    uid: str
    namespace: str
    name: str


def row_parts(event: Event) -> tuple[ProbeKey, PodNames, list[Any], tuple[Any, ...]]:
    """A row event split into its worker, its pod's names, the row's numbers after `w` (times,
    run, each try's latency and start) and the rest of its record (what the row carries only
    when it changed), as `RowWriter.encode_parts` takes them.

    The rest is made once per steady part of the record and `via`, and kept on the part: the
    rows of a steady probe share one rest, the same object."""
    record = event.record
    assert record is not None
    head: list[Any] = [
        record.t,
        record.scheduled_at,
        record.finished_at,
        record.next_tick,
        record.result_run,
    ]
    part = record.steady
    via = None
    if part.probed:
        via = event.fields.get("via")
        # each try's numbers off the record, so a steady attempt builds no outcome
        if part.tries:
            head.extend(record.earlier)
            head.append(record.latency)
            head.append(record.started_at)
    kept = part.rest
    if kept is not None and kept[0] == via:
        rest = kept[1]
    else:
        rest = _rest_of(record, via)
        part.rest = (via, rest)
    return record.key, PodNames(event.pod_uid, event.namespace, event.pod), head, rest


def _rest_of(record: ProbeRecord, via: str | None) -> tuple[Any, ...]:
    """A row's rest: everything of `record` but its numbers, and how it was reached."""
    part = record.steady  # what the rest holds is the part's alone
    outcome = part.outcome
    if outcome is None:
        out = None
    else:
        tries = tuple(
            (
                a.handler,
                a.target,
                a.result.value,
                a.output,
                a.error,
                a.status_code,
                a.body,
                a.timed_out,
            )
            for a in outcome.attempts
        )
        ev = outcome.event
        out = (
            int(outcome.result),
            outcome.error,
            None if ev is None else (ev.type, ev.reason, ev.message),
            tries,
        )
    return (
        part.trigger.value,
        part.container_id,
        int(part.last_result),
        None if part.skip is None else part.skip.value,
        None if part.published is None else int(part.published),
        part.on_hold,
        part.paused,
        via,
        out,
    )


@dataclass(slots=True)
class _Worker:
    key: ProbeKey
    pod: PodNames
    # the last rest, decoded: trigger, cid, last, skip, pub, hold, paused, via, and the
    # outcome's (result, error, event, tries' fixed parts) or None
    rest: tuple[Any, ...] | None = None
    # the steady part of the records built from that rest, made with the first of them
    part: SteadyPart | None = None


class RowReader:
    """Acts as the client's side: `wk` and `rows` frames back to the engine's `Event`s, per
    connection (a new engine process starts a new table).

    With `records_only`, an event carries its record and no fields (`record_shell`): for a
    host that builds each such event again from its masked record (`RuntimeHost.shadow_event`),
    so that an attempt's fields are built once, by it."""

    def __init__(self, records_only: bool = False) -> None:
        self._workers: dict[int, _Worker] = {}
        self._records_only = records_only

    def declare(self, frame: dict[str, Any]) -> None:
        try:
            key = ProbeKey(frame["uid"], frame["c"], ProbeType.parse(frame["probe"]))
            pod = PodNames(frame["uid"], frame["ns"], frame["pod"])
            self._workers[int(frame["w"])] = _Worker(key, pod)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"wk frame: {type(exc).__name__} {exc}") from None

    def events(self, frame: dict[str, Any]) -> list[Event]:
        try:
            return [self._event(row) for row in frame["r"]]
        except ProtocolError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ProtocolError(f"rows frame: {type(exc).__name__} {exc}") from None

    def pass_over(self, frame: dict[str, Any]) -> None:
        """Take a `rows` frame without its events (one shown already): the records its rows
        carry stay each worker's last, which its later rows repeat by leaving them out."""
        try:
            for row in frame["r"]:
                worker = self._workers.get(row[0])
                if worker is None:
                    raise ProtocolError(f"a row of worker {row[0]!r}, never declared")
                if isinstance(row[-1], list):
                    worker.rest = _rest_from(row[-1])
                    worker.part = None
        except ProtocolError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ProtocolError(f"rows frame: {type(exc).__name__} {exc}") from None

    def _event(self, row: list[Any]) -> Event:
        worker = self._workers.get(row[0])
        if worker is None:
            raise ProtocolError(f"a row of worker {row[0]!r}, never declared")
        if isinstance(row[-1], list):
            worker.rest = _rest_from(row[-1])
            worker.part = None
            end = len(row) - 1
        elif worker.rest is None:
            raise ProtocolError(f"worker {row[0]!r}'s first row carries no record")
        else:
            end = len(row)
        via = worker.rest[7]
        part = worker.part
        if part is not None:
            # every record of one rest says the same but for its numbers: one steady part for
            # all, and no outcome built for any but the first
            record = self._record_of(worker, row, end, part)
        else:
            record = self._first_record(worker, row, end)
            worker.part = record.steady
        if self._records_only:
            return record_shell(worker.pod, record)  # type: ignore[arg-type]
        return record_event(worker.pod, record, via)  # type: ignore[arg-type]

    @staticmethod
    def _record_of(worker: _Worker, row: list[Any], end: int, part: SteadyPart) -> ProbeRecord:
        """Return the record of a row whose rest is its worker's last: its numbers and `part`."""
        n = end - _HEAD
        tries = part.tries
        if n != 2 * tries:
            raise ProtocolError(f"a row of worker {row[0]!r} with {n} try times")
        # a skip's row carries no try times: its record's are a skip's zeros
        latency, started_at = (row[end - 2], row[end - 1]) if tries else (0.0, 0.0)
        return ProbeRecord(
            worker.key,
            row[1],
            row[2],
            finished_at=row[3],
            result_run=row[5],
            next_tick=row[4],
            latency=latency,
            started_at=started_at,
            earlier=tuple(row[_HEAD : end - 2]) if tries > 1 else (),
            steady=part,
        )

    @staticmethod
    def _first_record(worker: _Worker, row: list[Any], end: int) -> ProbeRecord:
        """Return the record of a row whose rest is new: built of the rest and its numbers."""
        assert worker.rest is not None
        trigger, cid, last, skip, pub, hold, paused, _, out = worker.rest
        outcome = None
        if out is not None:
            result, error, ev, tries = out
            if end - _HEAD != 2 * len(tries):
                raise ProtocolError(f"a row of worker {row[0]!r} with {end - _HEAD} try times")
            attempts = tuple(
                Attempt(h, tgt, res, output, err, row[i], row[i + 1], code, body, timed_out)
                for i, (h, tgt, res, output, err, code, body, timed_out) in zip(
                    range(_HEAD, end, 2), tries, strict=True
                )
            )
            outcome = ProbeOutcome(result, error, attempts, ev)
        return ProbeRecord(
            key=worker.key,
            t=row[1],
            scheduled_at=row[2],
            trigger=trigger,
            container_id=cid,
            skip=skip,
            outcome=outcome,
            finished_at=row[3],
            result_run=row[5],
            last_result=last,
            published=pub,
            on_hold=hold,
            next_tick=row[4],
            paused=paused,
        )


def _rest_from(v: list[Any]) -> tuple[Any, ...]:
    trigger, cid, last, skip, pub, hold, paused, via, out = v
    outcome = None
    if out is not None:
        result, error, ev, tries = out
        outcome = (
            ResultValue(result),
            error,
            ProbeEvent(*ev) if ev is not None else None,
            tuple(
                (h, tgt, Result(res), output, err, code, body, bool(timed_out))
                for h, tgt, res, output, err, code, body, timed_out in tries
            ),
        )
    return (
        Trigger(trigger),
        str(cid),
        ResultValue(last),
        Skip(skip) if skip is not None else None,
        ResultValue(pub) if pub is not None else None,
        bool(hold),
        bool(paused),
        via,
        outcome,
    )


__all__ = [
    "ROWS",
    "ROW_BYTES",
    "WORKER",
    "PodNames",
    "RowReader",
    "RowWriter",
    "is_row_event",
    "row_parts",
]
