"""The live path: real Manager, Worker and HTTP handler on the event loop's clock.

The one prober test on real time (about two seconds: periods are whole seconds), to show that
what the virtual-time tests pin also holds when the loop's clock and a real server drive it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from probetui.prober.clock import LoopClock
from probetui.prober.handlers import HandlerRunner
from probetui.prober.manager import Manager
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.prober.worker import ProbeRecord
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe


@pytest.fixture
async def flapping_server() -> AsyncIterator[tuple[int, dict[str, int]]]:
    state = {"status": 200}
    app = web.Application()

    async def health(_r: web.Request) -> web.Response:
        return web.Response(status=state["status"], text="state")

    app.router.add_get("/healthz", health)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1], state
    finally:
        await runner.cleanup()


async def test_readiness_worker_on_real_time(flapping_server: tuple[int, dict[str, int]]) -> None:
    """docs/kubelet-behaviour.md §4.3-5.15 live: first probe at once, then every period; a 503
    flips to Failure."""
    port, state = flapping_server
    probe = Probe(
        http_get=HTTPGetAction(port=port, path="/healthz"), period_seconds=1, failure_threshold=1
    )
    pod = Pod("web", uid="uid-web", containers=(Container("web", readiness_probe=probe),))
    clock = LoopClock()
    status = PodStatus(
        pod_ip="127.0.0.1",
        container_statuses=(
            ContainerStatus("web", "test://web-1", Running(clock.now() - 60), started=True),
        ),
    )
    records: list[ProbeRecord] = []
    changes: list[tuple[float, ResultValue]] = []
    runner = HandlerRunner()
    manager = Manager(
        clock,
        {pod.uid: status}.get,
        runner.run_probe,
        start=clock.now() - 3600,
        listener=records.append,
    )
    flipped = asyncio.Event()

    def on_update(u: object) -> None:
        changes.append((clock.now(), u.result))  # type: ignore[attr-defined]
        if len(changes) == 3:
            flipped.set()

    manager.readiness.subscribe(on_update)
    manager.add_pod(pod)
    try:
        await asyncio.sleep(1.3)
        state["status"] = 503
        await asyncio.wait_for(flipped.wait(), timeout=3)
    finally:
        await manager.shutdown()
    results = [c[1] for c in changes]
    assert results == [ResultValue.FAILURE, ResultValue.SUCCESS, ResultValue.FAILURE]
    attempts = [r for r in records if r.outcome is not None]
    assert attempts[0].outcome.attempt.status_code == 200  # type: ignore[union-attr]
    assert attempts[-1].outcome.event.message == (  # type: ignore[union-attr]
        "Readiness probe failed: HTTP probe failed with statuscode: 503"
    )
    starts = [r.t for r in attempts]
    # fixed-rate: one period apart (loop jitter allowed)
    assert all(0.9 < b - a < 1.2 for a, b in itertools.pairwise(starts))
