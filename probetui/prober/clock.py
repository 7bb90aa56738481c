"""The clock a worker runs on: the event loop live, virtual time in tests and simulation.

Times are float seconds. The live clock reports wall-clock seconds (so `startedAt` from a
runtime compares directly) but advances with the loop's monotonic time, so a wall-clock step
never makes a ticker fire twice or stall.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable: ...

    async def sleep(self, delay: float) -> None: ...


class LoopClock:
    """Wall-clock seconds, scheduled on the running event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self._offset = time.time() - self._loop.time()

    def now(self) -> float:
        return self._offset + self._loop.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable:
        return self._loop.call_at(when - self._offset, callback)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)


class _Timer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """Time moves only when told to; timers fire in time order, tasks settle between them."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._heap: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer(when, callback)
        heapq.heappush(self._heap, (when, next(self._seq), timer))
        return timer

    async def sleep(self, delay: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(None)

        timer = self.call_at(self._now + max(0.0, delay), wake)
        try:
            await fut
        finally:
            timer.cancel()

    def next_deadline(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    @staticmethod
    async def settle(rounds: int = 20) -> None:
        """Let every task that is ready run until it waits on the clock again."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        await self.advance_to(self._now + seconds)

    async def advance_to(self, target: float) -> None:
        await self.settle()
        while True:
            when = self.next_deadline()
            if when is None or when > target:
                break
            _, _, timer = heapq.heappop(self._heap)
            self._now = max(self._now, when)
            timer.callback()
            await self.settle()
        self._now = max(self._now, target)
        await self.settle()
