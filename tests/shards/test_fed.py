"""Fed mode (`probetui.shards.fed`): the source runs once, in the parent; each pod's snapshots
and manager calls go to the shard that owns it, whose workers probe a real loopback server.

Real time, a few seconds: the probes run at period 1 s in real shard processes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.runtime.base import Runtime, RuntimeEvent, RuntimeHost
from probetui.shards.placement import shard_of
from probetui.shards.pool import ShardPool
from probetui.spec.model import Container, Pod, Probe, TCPSocketAction
from probetui.timeline.events import Event

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


async def until(cond: Callable[[], Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


def pod(i: int, port: int) -> tuple[Pod, PodStatus]:
    probe = Probe(tcp_socket=TCPSocketAction(port=port), period_seconds=1)
    p = Pod(
        f"f{i}",
        namespace="ns",
        uid=f"fed-{i}",
        containers=(Container("app", readiness_probe=probe),),
    )
    status = PodStatus(
        "Running",
        "127.0.0.1",
        (ContainerStatus("app", f"c://{i}", Running(time.time() - 60), started=True),),
    )
    return p, status


class Source(Runtime):
    """Reports its pods as a cluster source does: snapshot, then the manager; deletes on ask."""

    source = "fed-test"
    via = "direct"

    def __init__(self, pods: list[tuple[Pod, PodStatus]]) -> None:
        self.initial = pods
        self.host: RuntimeHost | None = None

    async def run(self, host: RuntimeHost) -> None:
        self.host = host
        for p, status in self.initial:
            host.pod_snapshot(p, status)
            host.manager.add_pod(p, api_status=status)
        host.report(RuntimeEvent("Scheduled", time.time(), self.initial[0][0], "app"))
        await asyncio.Event().wait()

    def delete(self, p: Pod) -> None:
        assert self.host is not None
        self.host.manager.remove_pod(p)
        self.host.pod_deleted(p.uid)


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.gone: list[str] = []

    def event(self, event: Event) -> None:
        self.events.append(event)

    def pod(self, p: Pod, status: PodStatus | None) -> None:
        if status is None:
            self.gone.append(p.uid)

    def attempts(self, uid: str, after: float = 0.0) -> int:
        return sum(
            1 for e in self.events if e.type == "ProbeAttempt" and e.pod_uid == uid and e.t > after
        )


async def test_the_source_runs_once_and_each_pod_is_probed_by_its_shard() -> None:
    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pods = [pod(i, port) for i in range(6)]
    source, sink = Source(pods), Sink()
    pool = ShardPool(source, [sink], shards=2, mode="fed")
    run = asyncio.ensure_future(pool.run())
    try:
        await until(lambda: all(sink.attempts(p.uid) for p, _ in pods), 30)
        ok = [e for e in sink.events if e.type == "ProbeAttempt"]
        assert all(e.fields["result"] == "Success" for e in ok)
        # what the source reported itself came straight to the sinks
        assert any(e.type == "Scheduled" for e in sink.events)
        assert {shard_of(p.uid, 2) for p, _ in pods} == {0, 1}
        # a deleted pod: its snapshot goes, its workers stop
        gone, _ = pods[0]
        source.delete(gone)
        await until(lambda: gone.uid in sink.gone, 5)
        stopped = time.time() + 0.2
        # a restarted shard is told the pods it had (snapshots and adds), and probes them again
        victim = pool.shards[shard_of(pods[1][0].uid, 2)]
        old = victim.pid
        assert old is not None
        os.kill(old, signal.SIGKILL)
        killed = time.time()
        await until(lambda: victim.alive and victim.pid != old, 30)
        mine = [p for p, _ in pods[1:] if shard_of(p.uid, 2) == victim.index]
        await until(lambda: all(sink.attempts(p.uid, killed) for p in mine), 30)
        assert sink.attempts(gone.uid, stopped) == 0
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        server.close()
    assert not pool.pids()


async def test_a_slow_reader_loses_events_counted_and_told_never_blocking_the_shard() -> None:
    """This process stops reading for a while (a sink that blocks the loop): the shard goes on
    probing on time, drops what does not fit its buffer, and the count arrives as a notice."""

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pods = [pod(i, port) for i in range(300)]

    class Stall(Sink):
        stalled = False

        def event(self, event: Event) -> None:
            super().event(event)
            if not self.stalled and event.type == "ProbeAttempt":
                self.stalled = True
                time.sleep(2.0)  # the UI process busy: nothing is read meanwhile

    sink = Stall()
    pool = ShardPool(Source(pods), [sink], shards=1, mode="fed", buffer=16 * 1024)
    run = asyncio.ensure_future(pool.run())
    try:
        await until(lambda: pool.dropped > 0, 20)
        assert any("events dropped" in n and "EventsDropped" in n for n in pool.notices)
        # the gap reaches the sinks (the recorder, the JSONL) as an event of its own
        gaps = [e for e in sink.events if e.type == "EventsDropped"]
        assert gaps and sum(int(e.fields["count"]) for e in gaps) == pool.dropped
        assert gaps[0].fields["byType"].get("ProbeAttempt", 0) > 0
        # the shard kept its ticks: attempts after the stall were late by little
        after = time.time()
        await until(lambda: sum(sink.attempts(p.uid, after) > 0 for p, _ in pods) > 250, 10)
        late = [
            e.record.t - e.record.scheduled_at
            for e in sink.events
            if e.record is not None and e.t > after and e.type == "ProbeAttempt"
        ]
        assert late and sorted(late)[len(late) // 2] < 0.25
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        server.close()


@pytest.mark.parametrize("rows", [True, False], ids=["rows", "event-frames"])
async def test_attempts_arrive_whole_as_rows_or_as_event_frames(rows: bool) -> None:
    """The shards send attempts as rows when asked (docs/stream.md), event frames when not;
    either way the sinks get the same events: the record behind each, the JSONL fields."""

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pods = [pod(i, port) for i in range(4)]
    sink = Sink()
    pool = ShardPool(Source(pods), [sink], shards=2, mode="fed", rows=rows)
    run = asyncio.ensure_future(pool.run())
    try:
        await until(lambda: all(sink.attempts(p.uid) >= 2 for p, _ in pods), 30)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        server.close()
    attempts = [e for e in sink.events if e.type == "ProbeAttempt"]
    for e in attempts:
        assert e.record is not None and e.record.outcome is not None
        assert e.fields["result"] == "Success" and e.fields["handler"] == "tcp"
        assert e.fields["target"] == f"127.0.0.1:{port}" and e.fields["via"] == "direct"
        assert e.namespace == "ns" and e.pod == f"f{e.pod_uid.split('-')[1]}"
        assert e.record.result_run >= 1 and e.record.container_id.startswith("c://")
