"""The engine wires a runtime to the prober and its sinks (docs/architecture.md, Data flow).

Real time, under a second: one TCP readiness probe against a real listener on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import io
import json
import time

from probetui.engine import Engine
from probetui.keys import ProbeKey
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.runtime.base import Runtime, RuntimeEvent, RuntimeHost
from probetui.spec.model import Container, ContainerPort, Pod, Probe, ProbeType, TCPSocketAction
from probetui.timeline.events import Event
from probetui.timeline.jsonl import JsonlWriter


class StaticRuntime(Runtime):
    """One running pod that never changes; probes go to loopback."""

    source = "test"

    def __init__(self, pod: Pod) -> None:
        self.pod = pod

    async def run(self, host: RuntimeHost) -> None:
        cs = ContainerStatus(
            name="app",
            container_id="test://app-1",
            state=Running(time.time() - 3600),
            started=True,
        )
        status = PodStatus(phase="Running", pod_ip="127.0.0.1", container_statuses=(cs,))
        host.pod_snapshot(self.pod, status)
        host.manager.add_pod(self.pod)
        host.report(RuntimeEvent("ContainerStarted", time.time(), self.pod, "app"))
        await asyncio.Event().wait()


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.pods: list[tuple[Pod, PodStatus | None]] = []

    def event(self, event: Event) -> None:
        self.events.append(event)

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.pods.append((pod, status))


async def test_engine_records_attempts_result_changes_and_kubelet_events() -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe = Probe(tcp_socket=TCPSocketAction(port=port), period_seconds=1, timeout_seconds=1)
    container = Container(name="app", ports=(ContainerPort(port),), readiness_probe=probe)
    pod = Pod(name="p", namespace="ns", uid="uid-1", containers=(container,))
    rec, out = Recorder(), io.StringIO()
    engine = Engine(StaticRuntime(pod), [rec, JsonlWriter(out)])
    task = asyncio.create_task(engine.run())
    try:
        for _ in range(200):
            await asyncio.sleep(0.01)
            if any(e.fields.get("result") == "Success" for e in rec.events):
                break
        # the user's "probe now" goes through the engine to the worker
        assert engine.probe_now(ProbeKey("uid-1", "app", ProbeType.READINESS))
        await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        server.close()
    types = [e.type for e in rec.events]
    assert "ContainerStarted" in types and "ResultChanged" in types
    attempts = [e for e in rec.events if e.type == "ProbeAttempt"]
    assert attempts[0].fields["handler"] == "tcp"
    assert attempts[0].fields["target"] == f"127.0.0.1:{port}"
    assert attempts[0].fields["outcome"] == "success"
    assert any(e.fields["manual"] for e in attempts)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {"type", "ts", "pod", "container", "probe"} <= set(lines[0])
    # readiness starts as Failure (initialValue), then flips on the first success
    changes = [x["result"] for x in lines if x["type"] == "ResultChanged"]
    assert changes == ["Failure", "Success"]
    assert rec.pods[0][1] is not None and rec.pods[0][1].pod_ip == "127.0.0.1"


class ClosingRuntime(StaticRuntime):
    """Its probes wait on a path it closes when it stops, as the cluster runtime's API clients."""

    def __init__(self, pod: Pod) -> None:
        super().__init__(pod)
        self.closed = asyncio.Event()
        self.in_flight = asyncio.Event()

    async def run(self, host: RuntimeHost) -> None:
        try:
            await super().run(host)
        finally:
            self.closed.set()
            await asyncio.sleep(0.05)  # closing a client session takes the loop a moment

    async def reach(self, pod: Pod, container: Container, host: str, port: int) -> tuple[str, int]:
        from probetui.probe.util import ReachError

        self.in_flight.set()
        await self.closed.wait()
        raise ReachError("Session is closed")


async def test_on_the_way_out_workers_stop_before_the_runtime_closes_their_paths() -> None:
    """Seen on the real cluster: at SIGINT the runtime closed its API clients first, and the
    attempts in flight were published as errors ("Session is closed")."""
    probe = Probe(tcp_socket=TCPSocketAction(port=9), period_seconds=1, timeout_seconds=1)
    container = Container(name="app", ports=(ContainerPort(9),), readiness_probe=probe)
    pod = Pod(name="p", namespace="ns", uid="uid-1", containers=(container,))
    runtime, rec = ClosingRuntime(pod), Recorder()
    task = asyncio.create_task(Engine(runtime, [rec]).run())
    await asyncio.wait_for(runtime.in_flight.wait(), 2)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert runtime.closed.is_set()
    assert [e.fields.get("error") for e in rec.events if e.type == "ProbeAttempt"] == []


async def test_the_store_keeps_what_the_ui_shows_of_a_worker() -> None:
    """Next tick, pause and the published value travel in the engine's events: the store has
    them without a Worker (the UI reads nothing else)."""
    from probetui.timeline.store import Store

    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe = Probe(tcp_socket=TCPSocketAction(port=port), period_seconds=1, timeout_seconds=1)
    container = Container(name="app", ports=(ContainerPort(port),), readiness_probe=probe)
    pod = Pod(name="p", namespace="ns", uid="uid-1", containers=(container,))
    store = Store()
    engine = Engine(StaticRuntime(pod), [store])
    key = ProbeKey("uid-1", "app", ProbeType.READINESS)
    task = asyncio.create_task(engine.run())
    try:
        for _ in range(200):
            await asyncio.sleep(0.01)
            if (h := store.probe(key)) is not None and h.next_tick is not None:
                break
        h = store.probe(key)
        assert h is not None
        worker = engine.worker(key)
        assert worker is not None
        assert (h.next_tick, h.paused, h.published) == (
            worker.next_tick,
            False,
            worker.published,
        )
        assert engine.set_paused(key, True)
        assert h.paused and h.next_tick == worker.next_tick  # at once, before any tick
        assert engine.set_paused(key, False)
        assert not h.paused
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        server.close()
    # the worker stopped with the engine: no schedule left to show, the last result kept
    assert h.next_tick is None and not h.paused and h.published is not None
