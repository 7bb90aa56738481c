"""The view's agent streams under a burst: taken a loop turn at a time, the pods undecoded.

An agent's stream opened again (the screen's pods changed) sends its node's pods and the
summary of every probe at once; when many nodes' streams reopen together, the view must still
serve a key press between their frames. Each stream's bytes here are fed to the stream reader
the connection would fill, and a ticker task notes what was taken at each of its loop turns.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from probetui.agent.summary import ProbeSummary
from probetui.keys import ProbeKey
from probetui.prober.results import ResultValue
from probetui.runtime.kubernetes import node_stream
from probetui.runtime.kubernetes.agent_streams import AgentReader
from probetui.runtime.kubernetes.agents import AgentPod
from probetui.runtime.kubernetes.guard import AgentReadPaths
from probetui.runtime.kubernetes.node_stream import NodeStream
from probetui.spec.model import ProbeType
from probetui.stream import protocol as p
from probetui.stream.codec import pod_frame
from probetui.stream.rows import PodNames
from probetui.timeline.events import PROBE_ATTEMPT, SHADOW, Event
from tests.kube.emulator import container, http_get_probe, make_pod

PODS = 40


class Body:
    """What `NodeStream._frames` reads of a response: its content, filled as the socket would."""

    def __init__(self, data: bytes) -> None:
        self.content = asyncio.StreamReader()
        self.content.feed_data(data)
        self.content.feed_eof()


def _reader(nodes: list[str]) -> tuple[AgentReader, list[Event]]:
    reader = AgentReader("agent", "probetui", AgentReadPaths())
    published: list[Event] = []
    reader.publish_to = published.append
    for node in nodes:
        for i in range(PODS):
            reader.placed(f"{node}-uid-{i}", node)
    return reader, published


def _agent_pod(node: str) -> AgentPod:
    return AgentPod("probetui", f"probetui-agent-{node}", f"agent-{node}", node, 9479, "")


def _burst(node: str) -> bytes:
    """What an agent sends a reader with `summary=1` as it goes live: its pods, then the
    summary of every probe the reader does not take in full."""
    from probetui.runtime.kubernetes.observed import pod_status
    from probetui.spec.parse import pod_from_object

    out = [p.dumps(p.hello("agent", node=node, start=1.0, now=2.0))]
    for i in range(PODS):
        obj = make_pod(
            f"web-{i}",
            node=node,
            containers=[container("app", readiness=http_get_probe("/ready", 8080))],
        )
        obj["metadata"]["uid"] = f"{node}-uid-{i}"
        out.append(p.dumps(pod_frame(pod_from_object(obj, "t"), pod_status(obj), spec=True)))
    for i in range(PODS):
        key = ProbeKey(f"{node}-uid-{i}", "app", ProbeType.READINESS)
        summary = ProbeSummary(key, PodNames(key.pod_uid, "default", f"web-{i}"))
        summary.published = 1
        out.append(p.dumps(summary.frame(3.0)))
    out.append(p.dumps({"k": p.LIVE, "at": None}))
    return b"".join(out)


async def _taken_per_turn(
    reader: AgentReader, nodes: list[str], seen: Callable[[list[NodeStream]], int]
) -> list[int]:
    """Read every node's burst at once; what `seen(streams)` counts at each turn of a ticker
    task."""
    streams = [NodeStream(node, reader) for node in nodes]
    for stream in streams:
        stream.wanted = frozenset()  # the screen shows none of these pods in full
    reads = [
        asyncio.ensure_future(s._frames(_agent_pod(s.node), Body(_burst(s.node))))  # type: ignore[arg-type]
        for s in streams
    ]
    counts: list[int] = []
    while not all(r.done() for r in reads):
        counts.append(seen(streams))
        await asyncio.sleep(0)
    counts.append(seen(streams))
    await asyncio.gather(*reads)
    assert all(s.live for s in streams)
    return counts


async def test_a_burst_of_summaries_is_taken_across_loop_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a frame a turn: no clock in the test
    monkeypatch.setattr(node_stream, "TURN", 0.0, raising=False)
    nodes = ["node-1", "node-2", "node-3"]
    reader, published = _reader(nodes)
    counts = await _taken_per_turn(reader, nodes, lambda _: len(published))
    # every summary is taken, each as the view's worker state, and nothing is lost
    assert counts[-1] == PODS * len(nodes)
    assert {e.pod_uid for e in published} == {f"{n}-uid-{i}" for n in nodes for i in range(PODS)}
    # one stream's turn at a time: the ticker (a key press) ran between every two of them
    steps = [b - a for a, b in itertools.pairwise(counts)]
    assert max(steps) == 1


async def test_a_burst_of_frames_leaves_each_loop_turn_to_one_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_stream, "TURN", 0.0, raising=False)
    nodes = ["node-1", "node-2", "node-3", "node-4"]
    reader, _ = _reader(nodes)
    counts = await _taken_per_turn(reader, nodes, lambda ss: sum(s.frames for s in ss))
    # every frame after the hellos: pods, summaries and `live`
    assert counts[-1] == len(nodes) * (2 * PODS + 1)
    steps = [b - a for a, b in itertools.pairwise(counts)]
    assert max(steps) == 1


async def test_the_pods_an_agent_sends_are_passed_over_undecoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoded: list[str] = []
    loads = p.loads

    def counting(line: bytes) -> dict[str, Any]:
        frame = loads(line)
        decoded.append(frame["k"])
        return frame

    monkeypatch.setattr(p, "loads", counting)
    nodes = ["node-1", "node-2"]
    reader, published = _reader(nodes)
    counts = await _taken_per_turn(reader, nodes, lambda ss: sum(s.frames for s in ss))
    # the view reads its pods from its own watch: their frames are counted, never decoded
    assert counts[-1] == len(nodes) * (2 * PODS + 1)
    assert p.POD not in decoded
    assert sorted(set(decoded)) == [p.HELLO, p.LIVE, p.SUMMARY]
    assert len(published) == PODS * len(nodes)


async def test_a_stream_opened_again_passes_on_only_the_summaries_that_moved() -> None:
    node = "node-1"
    reader, published = _reader([node])
    stream = NodeStream(node, reader)
    stream.wanted = frozenset()
    await stream._frames(_agent_pod(node), Body(_burst(node)))  # type: ignore[arg-type]
    assert len(published) == PODS
    # opened again (the screen's pods changed): the agent sends every summary again
    await stream._frames(_agent_pod(node), Body(_burst(node)))  # type: ignore[arg-type]
    assert len(published) == PODS
    # one probe's state moved: that one goes on, as the worker's state it now is
    moved = _burst(node).replace(b'"pub":1', b'"pub":0', 1)
    await stream._frames(_agent_pod(node), Body(moved))  # type: ignore[arg-type]
    assert [e.state.published for e in published[PODS:]] == [ResultValue.SUCCESS]
    # another event of a pod: its next summary is passed on whatever it says
    attempt = Event(
        PROBE_ATTEMPT,
        4.0,
        f"{node}-uid-5",
        "default",
        "web-5",
        "app",
        ProbeType.READINESS,
        SHADOW,
        {},
    )
    reader.take(node, attempt)
    await stream._frames(_agent_pod(node), Body(_burst(node)))  # type: ignore[arg-type]
    # (and the probe whose state moved back)
    assert [e.pod_uid for e in published[PODS + 2 :]] == [f"{node}-uid-0", f"{node}-uid-5"]


async def test_a_rows_frame_seen_before_still_gives_its_workers_their_records() -> None:
    """On resume a `rows` frame stamped at or before the last one taken is not shown again,
    but its rows may carry the records that the worker's later rows repeat by reference."""
    from probetui.probe.base import Attempt, Result
    from probetui.prober.prober import ProbeOutcome
    from probetui.prober.worker import ProbeRecord, Trigger
    from probetui.stream.rows import ROWS, RowWriter
    from probetui.timeline.events import record_event

    node = "node-1"
    reader, published = _reader([node])
    uid = f"{node}-uid-0"
    pod = make_pod("web-0", node=node, containers=[container("app")])
    pod["metadata"]["uid"] = uid
    from probetui.spec.parse import pod_from_object

    spec = pod_from_object(pod, "t")
    key = ProbeKey(uid, "app", ProbeType.READINESS)

    def attempt(t: float, run: int) -> Event:
        a = Attempt("http", "http://10.0.0.1:80/h", Result.SUCCESS, "", None, 0.001, t, 200, "")
        record = ProbeRecord(
            key, t, t, Trigger.TICK, "containerd://4f1c", finished_at=t,
            outcome=ProbeOutcome(ResultValue.SUCCESS, None, (a,), None), result_run=run,
            published=ResultValue.SUCCESS, next_tick=t + 1,
        )  # fmt: skip
        return record_event(spec, record, "direct")

    writer = RowWriter()
    declare, whole = writer.encode(attempt(10.0, 1))
    _, bare = writer.encode(attempt(11.0, 2))
    assert len(bare) < len(whole)  # the second row repeats the first one's record
    body = b"".join(
        [
            p.dumps(p.hello("agent", node=node, start=1.0, now=2.0)),
            p.dumps(declare),
            p.dumps({"k": ROWS, "r": [whole], "at": 10.0}),  # taken before the cut
            p.dumps({"k": ROWS, "r": [bare], "at": 11.0}),
        ]
    )
    stream = NodeStream(node, reader, last_at=10.0)
    stream.wanted = frozenset({uid})
    await stream._frames(_agent_pod(node), Body(body))  # type: ignore[arg-type]
    assert [e.t for e in published] == [11.0]
    assert published[0].record is not None
    assert published[0].record.container_id == "containerd://4f1c"
    assert stream.last_at == 11.0


async def test_streams_a_focus_change_reopens_together_are_opened_apart() -> None:
    # each opening is a TLS handshake and a request: dozens at one instant would hold the
    # loop in one piece, and a key pressed then would wait behind all of them
    nodes = [f"node-{i}" for i in range(10)]
    reader, _ = _reader(nodes)
    streams = [NodeStream(node, reader) for node in nodes]
    for stream in streams:
        stream.wanted = frozenset()
        reader.streams[stream.node] = stream
    reader.set_focus({f"{node}-uid-0" for node in nodes})
    due = sorted(s._reopen_due.when() for s in streams if s._reopen_due is not None)
    try:
        assert len(due) == len(nodes)
        gaps = [b - a for a, b in itertools.pairwise(due)]
        assert min(gaps) >= 0.04  # half a second over ten streams
        now = asyncio.get_running_loop().time()
        assert due[0] - now <= node_stream.REOPEN_AFTER
        assert due[-1] - now <= node_stream.REOPEN_AFTER + node_stream.REOPEN_SPREAD
    finally:
        for s in streams:
            if s._reopen_due is not None:
                s._reopen_due.cancel()
