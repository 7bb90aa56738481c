"""Attempt rows (docs/stream.md, "rows"): compact, batched, and decoded to the very events sent."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace

import pytest

from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.status import PodStatus
from probetui.prober.worker import ProbeRecord, Skip, Trigger
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType
from probetui.stream import protocol as p
from probetui.stream.codec import event_frame
from probetui.stream.rows import ROWS, WORKER, RowReader, RowWriter, is_row_event
from probetui.stream.sender import FLUSH_DELAY, Sender, StreamSink
from probetui.timeline.events import record_event, result_changed_event

POD = Pod(
    "web",
    namespace="ns",
    uid="uid-1",
    containers=(
        Container("app", readiness_probe=Probe(http_get=HTTPGetAction(port=80, path="/h"))),
    ),
)
KEY = ProbeKey("uid-1", "app", ProbeType.READINESS)


def _ok(t: float, run: int) -> ProbeRecord:
    a = Attempt("http", "http://10.0.0.1:80/h", Result.SUCCESS, "", None, 0.0012, t, 200, "ok")
    return ProbeRecord(
        KEY, t, t - 0.0004, Trigger.TICK, "containerd://4f1c", finished_at=t + 0.0013,
        outcome=ProbeOutcome(ResultValue.SUCCESS, None, (a,), None), result_run=run,
        published=ResultValue.SUCCESS, next_tick=t + 1,
    )  # fmt: skip


def _failing(t: float) -> ProbeRecord:
    a = Attempt(
        "http", "http://10.0.0.1:80/h", Result.FAILURE, "HTTP probe failed with statuscode: 500",
        None, 0.0123, t, 500, "oops\nline two", True,
    )  # fmt: skip
    retry = replace(a, error="connection refused", latency=0.002, started_at=t + 0.02)
    outcome = ProbeOutcome(
        ResultValue.FAILURE, None, (retry, a), ProbeEvent("Warning", "Unhealthy", "Readiness: 500")
    )
    return ProbeRecord(
        KEY, t, t - 0.01, Trigger.USER, "containerd://4f1c", outcome=outcome, finished_at=None,
        result_run=1, last_result=ResultValue.FAILURE, published=ResultValue.SUCCESS,
        on_hold=True, next_tick=None, paused=True,
    )  # fmt: skip


def _skip(t: float) -> ProbeRecord:
    return ProbeRecord(KEY, t, t, Trigger.TICK, "containerd://4f1c", skip=Skip.INITIAL_DELAY)


def _wire(writer: RowWriter, reader: RowReader, events: list) -> tuple[list, bytes]:
    """The events through a writer, one rows frame of JSON, and a reader."""
    rows = []
    for event in events:
        declare, row = writer.encode(event)
        if declare is not None:
            reader.declare(p.loads(p.dumps(declare)))
        rows.append(row)
    line = p.dumps({"k": ROWS, "r": rows})
    return reader.events(p.loads(line)), line


def test_rows_decode_to_the_very_events_the_engine_built() -> None:
    """Attempts (one try and a retried one, with an event, on hold, paused, no finish time),
    skips, with and without `via`: each decodes equal, and prints the same JSONL object."""
    events = [
        record_event(POD, _ok(1000.0, 1), "direct"),
        record_event(POD, _ok(1001.0, 2), "direct"),
        record_event(POD, _failing(1002.0), "port-forward"),
        record_event(POD, _failing(1003.0), None),
        record_event(POD, _skip(1004.0)),
        record_event(POD, _ok(1005.0, 1), "direct"),
    ]
    assert all(is_row_event(e) for e in events)
    got, _ = _wire(RowWriter(), RowReader(), events)
    assert got == events
    assert [e.to_json() for e in got] == [e.to_json() for e in events]


def test_an_attempt_like_the_last_one_is_its_times_alone() -> None:
    """Only the first row of a worker, or one whose record differs in more than its times and
    result run, carries the rest of the record: the rest are a few numbers."""
    writer, reader = RowWriter(), RowReader()
    first = [record_event(POD, _ok(1000.0, 1), "direct")]
    _, line = _wire(writer, reader, first)
    again = [record_event(POD, _ok(1000.0 + i, 1 + i), "direct") for i in range(1, 11)]
    got, line = _wire(writer, reader, again)
    assert got == again
    frame = p.loads(line)
    assert all(not isinstance(row[-1], list) for row in frame["r"])
    assert len(line) < len(p.dumps(event_frame(again[0])))  # ten rows, less than one frame


def test_a_row_not_sent_makes_the_workers_next_row_whole() -> None:
    """A row dropped for a slow reader: the reader never saw its record, so the next row of
    that worker carries it again rather than leaning on what the reader does not have."""
    writer, reader = RowWriter(), RowReader()
    _wire(writer, reader, [record_event(POD, _ok(1000.0, 1), "direct")])
    dropped = record_event(POD, _failing(1001.0), "direct")
    writer.encode(dropped)
    writer.forget(dropped)
    after = record_event(POD, _failing(1002.0), "direct")
    got, line = _wire(writer, reader, [after])
    assert got == [after] and isinstance(p.loads(line)["r"][0][-1], list)


def test_rows_of_an_unknown_worker_or_without_a_record_are_protocol_errors() -> None:
    reader = RowReader()
    with pytest.raises(p.ProtocolError, match="never declared"):
        reader.events({"k": ROWS, "r": [[7, 1.0, 1.0, None, None, 1]]})
    reader.declare({"k": WORKER, "w": 7, "uid": "u", "ns": "n", "pod": "p", "c": "c",
                    "probe": "readiness"})  # fmt: skip
    with pytest.raises(p.ProtocolError, match="carries no record"):
        reader.events({"k": ROWS, "r": [[7, 1.0, 1.0, None, None, 1]]})
    with pytest.raises(p.ProtocolError, match="wk frame"):
        reader.declare({"k": WORKER, "w": 8})


def test_other_events_are_not_rows() -> None:
    changed = result_changed_event(
        POD, "app", ProbeType.READINESS, ResultValue.FAILURE, "containerd://4f1c", 1.0
    )
    assert not is_row_event(changed)


async def test_what_is_sent_together_is_one_write_with_rows_and_frames_in_their_order() -> None:
    """What the engine sends within FLUSH_DELAY leaves in one write; a frame that is not a row
    closes the rows before it, so the reader gets everything in the order the engine sent it."""
    loop = asyncio.get_running_loop()
    rfd, wfd = os.pipe()
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(wfd, "wb", 0))
    writes: list[bytes] = []
    real_write = transport.write
    transport.write = lambda data: (writes.append(data), real_write(data))  # type: ignore[method-assign]
    sink = StreamSink(Sender(transport), rows=True)  # type: ignore[arg-type]
    sent = [record_event(POD, _ok(1000.0 + i, 1 + i), "direct") for i in range(3)]
    for event in sent[:2]:
        sink.event(event)
    sink.pod(POD, PodStatus(phase="Running"))
    sink.event(sent[2])
    await asyncio.sleep(0)
    assert writes == []  # nothing yet: it waits for what comes after it
    await asyncio.sleep(FLUSH_DELAY * 3)
    assert len(writes) == 1
    frames = [p.loads(line) for line in writes[0].splitlines(keepends=True)]
    assert [f["k"] for f in frames] == [WORKER, ROWS, "pod", ROWS]
    reader = RowReader()
    reader.declare(frames[0])
    assert reader.events(frames[1]) + reader.events(frames[3]) == sent
    transport.close()
    os.close(rfd)


class _Collect:
    """A transport that keeps what is written and never holds anything back."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


async def test_rows_whose_bodies_change_every_time_never_make_a_frame_over_the_limit() -> None:
    """A row carries its record's rest, bodies and all, whenever that changed: a body with a
    clock in it changes on every attempt. The sender must count those bytes, or the rows
    gathered before a flush make one frame past MAX_FRAME, which the reader refuses."""
    sink = StreamSink(Sender(_Collect()), rows=True)  # type: ignore[arg-type]
    body = "x" * 10_000
    for i in range(300):
        record = _ok(1000.0 + i, 1 + i)
        a = record.outcome.attempts[0]  # type: ignore[union-attr]
        outcome = replace(record.outcome, attempts=(replace(a, body=f"{i:05d}{body}"),))  # type: ignore[type-var]
        sink.event(record_event(POD, replace(record, outcome=outcome), "direct"))
    sink.sender.flush()
    lines = b"".join(sink.sender.transport.writes).splitlines()  # type: ignore[attr-defined]
    assert max(len(line) for line in lines) <= p.MAX_FRAME
    reader = RowReader()
    events = []
    for line in lines:
        frame = p.loads(line)
        if frame["k"] == WORKER:
            reader.declare(frame)
        else:
            events.extend(reader.events(frame))
    assert len(events) == 300 and events[-1].record.outcome.attempts[0].body.startswith("00299")
