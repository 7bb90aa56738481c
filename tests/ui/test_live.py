"""The app over the real engine: real workers probing a real HTTP server on 127.0.0.1.

Real time, about a second: probes run every second, and the keys reach the workers.
"""

from __future__ import annotations

import asyncio
import time

from probetui.engine import Engine
from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.prober.worker import Trigger
from probetui.runtime.base import Runtime, RuntimeEvent, RuntimeHost
from probetui.spec.model import (
    Container,
    ContainerPort,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)
from probetui.timeline.history import Kind
from probetui.timeline.store import Store
from probetui.ui.app import ProbeApp
from probetui.ui.widgets.attempts import AttemptLog
from probetui.ui.widgets.threshold import ThresholdPane


class OnePod(Runtime):
    source = "test"

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.ended = False  # the engine stopped it: its run was cancelled and has returned

    async def run(self, host: RuntimeHost) -> None:
        cs = ContainerStatus(
            name="app", container_id="test://app-1", state=Running(time.time() - 60), started=True
        )
        host.pod_snapshot(self.pod, PodStatus(pod_ip="127.0.0.1", container_statuses=(cs,)))
        host.manager.add_pod(self.pod)
        host.report(RuntimeEvent("ContainerStarted", time.time(), self.pod, "app"))
        try:
            await asyncio.Event().wait()
        finally:
            self.ended = True


async def serve_http() -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 13\r\n"
            b"Connection: close\r\n\r\ndb is down :("
        )
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def wait_for(predicate, seconds: float = 3.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_keys_reach_the_real_workers_and_attempts_reach_the_panes() -> None:
    server = await serve_http()
    port = server.sockets[0].getsockname()[1]
    probe = Probe(
        http_get=HTTPGetAction(port=port, path="/ready"), period_seconds=1, failure_threshold=2
    )
    container = Container(
        name="app",
        ports=(ContainerPort(port),),
        readiness_probe=probe,
        liveness_probe=Probe(tcp_socket=TCPSocketAction(port=port), period_seconds=1),
    )
    pod = Pod(name="live", namespace="ns", uid="uid-live", containers=(container,))
    store = Store()
    runtime = OnePod(pod)
    engine = Engine(runtime, [store])
    app = ProbeApp(engine, store)
    key = ProbeKey("uid-live", "app", ProbeType.READINESS)
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(lambda: (h := store.probe(key)) is not None and len(h) > 0)
            await pilot.press("t")
            await wait_for(
                lambda: any(v.trigger is Trigger.USER for v in store.probe(key).recent(5))
            )
            await pilot.pause(0.15)  # one tick of the UI timer
            log = app.query_one(AttemptLog).render().plain
            assert "✖ failure" in log and " 503 " in log and "manual" in log
            assert "HTTP probe failed with statuscode: 503" in log and "db is down" in log
            assert f"→ http://127.0.0.1:{port}/ready" in log
            view = store.probe(key).recent(1)[0]
            assert view.kind == Kind.FAILURE and view.event.startswith("Readiness probe failed")

            await pilot.press("space")
            assert engine.worker(key).paused
            assert store.probe(key).paused  # the UI's side: through the store, not the worker
            await pilot.pause(0.15)
            assert "paused (space resumes)" in app.query_one(ThresholdPane).render().plain
            await pilot.press("space")
            assert not engine.worker(key).paused
            assert not store.probe(key).paused

            assert store.container(ContainerKey("uid-live", "app")) is not None
            await pilot.press("q")
            await pilot.pause()
        # q stopped the engine before the app ended: the workers, then the runtime's run
        assert runtime.ended
        assert app.return_code == 0
    finally:
        server.close()
        await server.wait_closed()
