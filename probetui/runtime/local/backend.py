"""Run a pod's containers as local process groups: the `ContainerBackend` of the local runtime.

Each instance is one `ContainerProcess`, started on the event loop and watched by one task that
reports to the pod's kubelet: `started` (with the PID) or `start_failed`, then `exited` with the
exit code. A kill is `ContainerProcess.stop`: SIGTERM to the group, SIGKILL after the grace
period. `close` ends everything within a bounded time, whatever the grace periods say.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Coroutine, Mapping
from typing import Any

from probetui.kubelet.pod import PodKubelet
from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.output import OutputLine
from probetui.runtime.local.process import ContainerProcess, ContainerStartError
from probetui.runtime.local.procspec import ProcessSpec
from probetui.spec.model import Container

# one sequence for the whole probetui process: container IDs never repeat, across pods too
_ids = itertools.count(1)


class ProcessBackend:
    def __init__(
        self,
        specs: Mapping[str, ProcessSpec],
        *,
        registry: ProcessGroupRegistry | None = None,
        tail_bytes: int | None = None,
    ) -> None:
        self.specs = specs
        self.registry = registry
        self.tail_bytes = tail_bytes
        self.stop_cap: float | None = None  # set by close(): the longest grace period allowed
        self.by_id: dict[str, ContainerProcess] = {}
        # the newest instance of each container, whose output the UI shows
        self.latest: dict[str, ContainerProcess] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- ContainerBackend ---------------------------------------------------------------------

    def start(self, kubelet: PodKubelet, container: Container, restart_count: int) -> None:
        kwargs: dict[str, Any] = {"registry": self.registry}
        if self.tail_bytes is not None:
            kwargs["tail_bytes"] = self.tail_bytes
        proc = ContainerProcess(self.specs[container.name], **kwargs)
        container_id = f"local://{next(_ids)}"
        self.by_id[container_id] = proc
        self.latest[container.name] = proc
        self._spawn(self._run(kubelet, container.name, container_id, proc))

    async def _run(
        self, kubelet: PodKubelet, name: str, container_id: str, proc: ContainerProcess
    ) -> None:
        try:
            await proc.start()
        except ContainerStartError as e:
            self.by_id.pop(container_id, None)
            kubelet.start_failed(name, container_id, e.message)
            return
        kubelet.started(name, container_id, pid=proc.pid)
        try:
            code = await proc.wait()
        finally:
            self.by_id.pop(container_id, None)
        kubelet.exited(name, container_id, code)

    def kill(
        self, kubelet: PodKubelet, container: Container, container_id: str, grace: float
    ) -> None:
        proc = self.by_id.get(container_id)
        if proc is None or not proc.running:
            return
        if self.stop_cap is not None:
            grace = min(grace, self.stop_cap)
        self._spawn(self._stop(proc, grace))

    @staticmethod
    async def _stop(proc: ContainerProcess, grace: float) -> None:
        # the exit itself is reported by the instance's own task
        with contextlib.suppress(RuntimeError):
            await proc.stop(grace)

    # -- the end ------------------------------------------------------------------------------

    def begin_close(self, cap: float) -> None:
        """From now on no kill waits longer than `cap` s before SIGKILL."""
        self.stop_cap = cap

    def kill_now(self) -> None:
        for proc in list(self.by_id.values()) + list(self.latest.values()):
            proc.kill_now()

    def output_tail(self, container: str) -> list[OutputLine]:
        proc = self.latest.get(container)
        return proc.output_tail() if proc is not None else []


__all__ = ["ProcessBackend"]
