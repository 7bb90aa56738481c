"""The stream protocol (docs/stream.md): frames, versions, the event and pod codecs, drops."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running, Terminated
from probetui.prober.worker import ProbeRecord, Skip, Trigger, WorkerState
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType
from probetui.stream import protocol as p
from probetui.stream.codec import PodReader, PodWriter, event_frame, event_from_frame
from probetui.stream.sender import Sender
from probetui.timeline.events import (
    Event,
    record_event,
    result_changed_event,
    worker_state_event,
)

POD = Pod(
    "web",
    namespace="ns",
    uid="uid-1",
    labels={"app": "web"},
    containers=(
        Container("app", readiness_probe=Probe(http_get=HTTPGetAction(port=80, path="/h"))),
    ),
)
KEY = ProbeKey("uid-1", "app", ProbeType.READINESS)


def _through(frame: dict) -> dict:
    line = p.dumps(frame)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    return p.loads(line)


def _attempt_record() -> ProbeRecord:
    a = Attempt(
        "http", "http://10.0.0.1:80/h", Result.FAILURE, "HTTP probe failed with statuscode: 500",
        None, 0.0123, 1000.5, 500, "oops\nline two", True,
    )  # fmt: skip
    outcome = ProbeOutcome(
        ResultValue.FAILURE, None, (a, a), ProbeEvent("Warning", "Unhealthy", "Readiness: 500")
    )
    return ProbeRecord(
        KEY, 1000.5, 1000.49, Trigger.TICK, "cid-1", outcome=outcome, finished_at=1000.51,
        result_run=2, last_result=ResultValue.FAILURE, published=ResultValue.SUCCESS,
        on_hold=True, next_tick=1001.49, paused=True,
    )  # fmt: skip


def test_an_attempt_event_round_trips_with_its_record_and_e_is_the_jsonl_object() -> None:
    event = record_event(POD, _attempt_record(), via="direct")
    frame = _through(event_frame(event))
    assert frame["e"] == json.loads(event.to_line())  # exactly what --output jsonl prints
    assert event_from_frame(frame) == event


def test_skips_state_changes_and_result_changes_round_trip() -> None:
    skip = ProbeRecord(KEY, 5.25, 5.0, Trigger.FIRST, "", skip=Skip.INITIAL_DELAY)
    state = WorkerState(
        KEY, running=True, paused=True, next_tick=6.0, published=ResultValue.UNKNOWN
    )
    events: list[Event] = [
        record_event(POD, skip),
        worker_state_event(POD, state, 5.5),
        worker_state_event(POD, WorkerState(KEY, running=False), 7.0),
        result_changed_event(POD, "app", ProbeType.READINESS, ResultValue.FAILURE, "cid", 8.0),
    ]
    for event in events:
        assert event_from_frame(_through(event_frame(event))) == event


def test_a_pod_frame_carries_the_spec_only_when_the_pod_changed() -> None:
    status = PodStatus(
        "Running",
        "10.0.0.1",
        (
            ContainerStatus(
                "app", "cid-1", Running(99.5), Terminated(1, "Error", 1.0, 2.0), True, True, 3
            ),
        ),
        ready_condition=True,
    )
    writer, reader = PodWriter(), PodReader()
    first = _through(writer.frame(POD, status))
    again = _through(writer.frame(POD, status))
    assert "spec" in first and "spec" not in again
    assert reader.read(first) == (POD, status)
    pod, back = reader.read(again)
    assert pod == POD and pod.labels == POD.labels and back == status
    gone = _through(writer.frame(POD, None))
    assert reader.read(gone) == (POD, None) and "uid-1" not in reader.pods


def test_a_hello_of_another_version_is_refused_in_one_line() -> None:
    assert p.check_hello(_through(p.hello("shard")))["v"] == p.VERSION
    with pytest.raises(p.VersionMismatch, match="version 2 from the shard, this probetui speaks 1"):
        p.check_hello({"k": p.HELLO, "v": 2, "role": "shard"})
    with pytest.raises(p.ProtocolError, match="expected a hello first"):
        p.check_hello({"k": p.EVENT})


@pytest.mark.parametrize("line", [b"nope\n", b"[1]\n", b'{"k": 3}\n', b"{" + b" " * p.MAX_FRAME])
def test_what_is_not_a_frame_is_a_protocol_error(line: bytes) -> None:
    with pytest.raises(p.ProtocolError):
        p.loads(line)


def test_commands_name_a_known_op_and_acks_echo_the_id() -> None:
    cmd = _through(p.command(7, "pause", "uid-1", "app", "readiness"))
    assert cmd == {
        "k": "cmd",
        "id": 7,
        "op": "pause",
        "uid": "uid-1",
        "c": "app",
        "probe": "readiness",
    }
    assert _through(p.ack(7, True, 1))["id"] == 7
    with pytest.raises(p.ProtocolError, match="unknown command"):
        p.command(1, "reboot", "uid-1", "app", None)


async def test_a_slow_reader_never_blocks_the_sender_and_is_told_what_it_missed() -> None:
    """Nobody reads the pipe: sends return at once, events past the limit are dropped and
    counted; once the reader catches up a `dropped` frame with the totals comes first."""
    loop = asyncio.get_running_loop()
    rfd, wfd = os.pipe()
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(wfd, "wb", 0))
    sender = Sender(transport, limit=64 * 1024)  # type: ignore[arg-type]
    event = event_frame(record_event(POD, _attempt_record()))
    sent = sum(sender.send(event) for _ in range(2000))
    assert 0 < sent < 2000 and sender.dropped["ProbeAttempt"] == 2000 - sent
    pod = PodWriter().frame(POD, PodStatus())
    assert sender.send(pod)  # never dropped
    # the reader catches up
    reader = os.fdopen(rfd, "rb", 0)
    os.set_blocking(rfd, False)
    data = b""
    while transport.get_write_buffer_size():
        await asyncio.sleep(0.001)
        data += reader.read(1 << 20) or b""
    assert sender.send(event)
    await asyncio.sleep(0.01)
    data += reader.read(1 << 20) or b""
    frames = [p.loads(line) for line in data.splitlines(keepends=True)]
    dropped = [f for f in frames if f["k"] == p.DROPPED]
    assert dropped == [{"k": "dropped", "n": 2000 - sent, "by": {"ProbeAttempt": 2000 - sent}}]
    assert frames[-1]["k"] == p.EVENT and frames[-2]["k"] == p.DROPPED
    transport.close()
    reader.close()


def test_a_shard_refuses_a_parent_of_another_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "probetui.shards.child"],
        input=p.dumps({"k": "hello", "v": 99, "role": "parent"}),
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 2
    frame = p.loads(proc.stdout.splitlines()[0])
    assert frame["k"] == p.FAIL and "version 99 from the parent" in frame["message"]


async def test_frames_are_read_in_chunks_and_a_frame_split_across_them_is_whole() -> None:
    from probetui.stream.reader import CHUNK, lines

    reader = asyncio.StreamReader()
    big = p.dumps({"k": "tail", "lines": ["x" * (CHUNK + 10)]})
    reader.feed_data(p.dumps(p.hello("shard")) + big[:100])
    reader.feed_data(big[100:] + p.dumps(p.ack(1, True)))
    reader.feed_eof()
    got = [p.loads(line) for batch in [b async for b in lines(reader)] for line in batch]
    assert [f["k"] for f in got] == ["hello", "tail", "ack"]
    assert len(got[1]["lines"][0]) == CHUNK + 10

    cut = asyncio.StreamReader()
    cut.feed_data(b'{"k":"ev')
    cut.feed_eof()
    with pytest.raises(p.ProtocolError, match="ended inside a frame"):
        async for _ in lines(cut):
            pass
