"""An agent's attempt rows as the cluster view reads them: each attempt's fields built once,
by the host's masking (`Engine.shadow_event`), saying what they said when built twice."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from probetui.engine import masked_elsewhere
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.worker import ProbeRecord, Skip, Trigger
from probetui.redact import Redactor
from probetui.runtime.kubernetes.agent_streams import AgentReader
from probetui.runtime.kubernetes.agents import AgentPod
from probetui.runtime.kubernetes.guard import AgentReadPaths
from probetui.runtime.kubernetes.node_stream import NodeStream
from probetui.spec.model import Container, EnvVar, HTTPGetAction, Pod, Probe, ProbeType
from probetui.stream import protocol as p
from probetui.stream.rows import ROWS, RowWriter
from probetui.timeline import events as timeline
from probetui.timeline.events import Event, record_event

NODE = "node-1"
SECRET = "s3cr3t-pass-42"
POD = Pod(
    "web",
    namespace="ns",
    uid="uid-1",
    containers=(
        Container(
            "app",
            env=(EnvVar("DB_PASSWORD", SECRET),),
            readiness_probe=Probe(http_get=HTTPGetAction(port=80, path="/h")),
        ),
    ),
)
KEY = ProbeKey("uid-1", "app", ProbeType.READINESS)


def _attempt(t: float, output: str) -> ProbeRecord:
    a = Attempt("http", "http://10.0.0.1:80/h", Result.FAILURE, output, None, 0.002, t, 500, "")
    return ProbeRecord(
        KEY, t, t - 0.001, Trigger.TICK, "containerd://4f1c", finished_at=t + 0.002,
        outcome=ProbeOutcome(ResultValue.FAILURE, None, (a,), None), result_run=1,
        published=ResultValue.FAILURE, next_tick=t + 1,
    )  # fmt: skip


def _events() -> list[Event]:
    """Attempts as an agent's engine publishes them (one quoting the pod's secret and a
    credential), and a skip."""
    skip = ProbeRecord(KEY, 1003.0, 1003.0, Trigger.TICK, "containerd://4f1c", skip=Skip.PAUSED)
    return [
        record_event(POD, _attempt(1000.0, f"login as root/{SECRET} refused"), "direct"),
        record_event(POD, _attempt(1001.0, "Authorization: Bearer t0k3n-abcdef"), None),
        record_event(POD, _attempt(1002.0, "HTTP probe failed with statuscode: 500"), "direct"),
        record_event(POD, skip),
    ]


class Body:
    """What `NodeStream._frames` reads of a response: its content, filled as the socket would."""

    def __init__(self, data: bytes) -> None:
        self.content = asyncio.StreamReader()
        self.content.feed_data(data)
        self.content.feed_eof()


def _stream(events: list[Event]) -> bytes:
    writer = RowWriter()
    out = [p.dumps(p.hello("agent", node=NODE, start=1.0, now=2.0))]
    for i, event in enumerate(events):
        declare, row = writer.encode(event)
        if declare is not None:
            out.append(p.dumps(declare))
        out.append(p.dumps({"k": ROWS, "at": 1000.0 + i, "r": [row]}))
    return b"".join(out)


async def _shown(events: list[Event], whole: bool = False) -> list[str]:
    """The lines the view prints of the agent's stream of `events`: its reader's `_frames`, or
    (`whole`) the reader building each event whole before the host builds it again."""
    redactor = Redactor()
    reader = AgentReader("agent", "probetui", AgentReadPaths())
    reader.placed(POD.uid, NODE)
    shown: list[Event] = []
    reader.publish_to = lambda e: shown.append(masked_elsewhere(redactor, POD, e))
    pod = AgentPod("probetui", "probetui-agent-1", "agent-1", NODE, 9479, "")
    stream, body = NodeStream(NODE, reader), Body(_stream(events))
    if whole:
        async for kind, frame, got in stream.decoded(pod, body, resume=True):  # type: ignore[arg-type]
            stream._take(pod, kind, frame, got)
    else:
        await stream._frames(pod, body)  # type: ignore[arg-type]
    return [e.to_line() for e in shown]


async def test_each_attempt_is_built_once_and_prints_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = _events()
    expected = await _shown(events, whole=True)
    built: list[Any] = []
    attempt_fields = timeline.attempt_fields

    def counted(record: ProbeRecord, via: str | None = None) -> dict[str, Any]:
        built.append(record.t)
        return attempt_fields(record, via)

    monkeypatch.setattr(timeline, "attempt_fields", counted)
    assert await _shown(events) == expected
    # the host's build is the only one: one per attempt
    assert built == [1000.0, 1001.0, 1002.0]
    # what entered is masked where it entered
    assert len(expected) == 4
    assert all(SECRET not in line and "t0k3n" not in line for line in expected)
