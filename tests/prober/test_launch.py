"""The manager's live launch: each probe a task that resumes its worker when the probe returns.

Pins what the worker is told when the probe returns, raises or is cancelled at shutdown
(`Manager.launch_task`), with a stand-in for the handlers on the loop's real clock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from probetui.prober.clock import LoopClock
from probetui.prober.manager import Manager
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.prober.worker import ProbeRecord, Worker
from probetui.spec.model import Container, Pod, Probe, TCPSocketAction


def _pod() -> Pod:
    probe = Probe(tcp_socket=TCPSocketAction(port=1), period_seconds=60)
    return Pod("web", uid="uid-web", containers=(Container("web", readiness_probe=probe),))


def _manager(clock: LoopClock, run_probe: object, records: list[ProbeRecord]) -> Manager:
    status = PodStatus(
        pod_ip="127.0.0.1",
        container_statuses=(
            ContainerStatus("web", "test://web-1", Running(clock.now() - 60), started=True),
        ),
    )
    # started an hour ago: no start-up jitter, the first probe runs at once
    return Manager(
        clock,
        {"uid-web": status}.get,
        run_probe,  # type: ignore[arg-type]
        start=clock.now() - 3600,
        listener=records.append,
    )


class _Launched:
    """A stand-in for the handlers: notes each probe's task, then runs `body`."""

    def __init__(self, body: Callable[[], Awaitable[ProbeOutcome]]) -> None:
        self.body = body
        self.tasks: list[asyncio.Task[object]] = []
        self.started = asyncio.Event()

    async def __call__(self, worker: Worker, status: PodStatus) -> ProbeOutcome:
        self.tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        self.started.set()
        return await self.body()

    async def first(self) -> None:
        """Wait for the first probe's task to start, then to end."""
        await asyncio.wait_for(self.started.wait(), 2)
        done, _ = await asyncio.wait(self.tasks, timeout=2)
        assert done == set(self.tasks)


async def test_a_returned_probe_resumes_its_worker() -> None:
    clock = LoopClock()
    records: list[ProbeRecord] = []

    async def succeed() -> ProbeOutcome:
        await asyncio.sleep(0)
        return ProbeOutcome(ResultValue.SUCCESS, None, (), None)

    run_probe = _Launched(succeed)
    manager = _manager(clock, run_probe, records)
    manager.add_pod(_pod())
    await run_probe.first()
    assert len(records) == 1
    assert records[0].outcome is not None and records[0].outcome.result is ResultValue.SUCCESS
    worker = next(iter(manager.workers.values()))
    assert not worker.in_flight
    assert manager._tasks == {}
    await manager.shutdown()


async def test_a_probe_that_raises_is_logged_and_counts_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = LoopClock()
    records: list[ProbeRecord] = []

    async def boom() -> ProbeOutcome:
        raise RuntimeError("boom")

    run_probe = _Launched(boom)
    manager = _manager(clock, run_probe, records)
    with caplog.at_level(logging.ERROR, logger="probetui.prober.manager"):
        manager.add_pod(_pod())
        await run_probe.first()
    assert manager._tasks == {}
    worker = next(iter(manager.workers.values()))
    # no record, nothing counted, and the worker free for its next tick
    assert records == []
    assert worker.probe_total == {"successful": 0, "failed": 0, "unknown": 0}
    assert not worker.in_flight
    assert any("raised" in r.getMessage() for r in caplog.records)
    await manager.shutdown()


async def test_shutdown_cancels_a_probe_in_flight_without_a_record() -> None:
    clock = LoopClock()
    records: list[ProbeRecord] = []
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def run_probe(worker: Worker, status: PodStatus) -> ProbeOutcome:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        raise AssertionError("not cancelled")

    manager = _manager(clock, run_probe, records)
    manager.add_pod(_pod())
    await asyncio.wait_for(started.wait(), 2)
    await manager.shutdown()
    assert cancelled == [True]
    assert records == []
    assert manager._tasks == {}
