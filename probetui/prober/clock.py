"""Give a worker its clock: the event loop live, virtual time in tests and simulation.

Times are float seconds. The live clock reports wall-clock seconds (so `startedAt` from a
runtime compares directly) but advances with the loop's monotonic time, so a wall-clock step
never makes a ticker fire twice or stall.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import math
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
    """Gives wall-clock seconds, scheduled on the running event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self._offset = time.time() - self._loop.time()
        # one context for every timer: the workers read no context variables, and the copy
        # call_at makes by default costs CPU on every attempt and keeps one Context per worker
        # alive for the cyclic collector to walk (guarded by benchmarks/engine.py)
        self._context = contextvars.copy_context()

    def now(self) -> float:
        return self._offset + self._loop.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable:
        return self._loop.call_at(when - self._offset, callback, context=self._context)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)


def tick_grid(t: float, align: float) -> float:
    """Round a tick at `t` up to the next multiple of `align` seconds (0: leave it).

    A node agent arms its workers' tickers on one grid so that the probes due in a slot run in
    one wake-up of its loop: a wake-up per attempt costs more than most attempts' own work
    (benchmarks.agents guards it). A timer fires a little after its time, so a tick that
    lands within a tenth of a slot past a grid point stays on that point rather than moving a
    whole slot on.
    """
    if align <= 0:
        return t
    return math.ceil((t - align / 10) / align) * align


async def sleep_on_grid(clock: Clock, delay: float, align: float) -> None:
    """Sleep at least `delay` seconds less a tenth of a slot, to a point of the `align` grid
    the workers' ticks are on (0: `delay` as it is): a node agent's once-a-second chores wake
    with its probes, not on a wake-up of their own (benchmarks.agents guards it)."""
    if align <= 0:
        await clock.sleep(delay)
        return
    now = clock.now()
    await clock.sleep(max(tick_grid(now + delay, align) - now, 0.0))


class _Timer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


# timers one instant may fire, per timer waiting at it, before virtual time is taken to be
# stuck: each worker and container fires a handful at one instant (a tick, its attempt, the
# published result, the status it triggers), a timer that keeps re-arming itself there fires
# for ever
_STALL_MIN = 100_000
_STALL_PER_TIMER = 100


class ClockStalled(RuntimeError):
    """Signals that virtual time stopped advancing: timers keep firing at one instant (a period
    or delay of zero or less re-arming itself). Raised rather than spinning for ever."""


class SimClock:
    """Keeps virtual time as a synchronous timer heap: `run_until` fires timers in (time, order)."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._heap: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()
        self._same = 0  # timers fired since virtual time last advanced
        self._waiting = 0  # the most timers waiting since then

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> _Timer:
        if when != when:
            raise ValueError("a timer at NaN seconds")
        timer = _Timer(callback)
        heapq.heappush(self._heap, (max(when, self._now), next(self._seq), timer))
        return timer

    def call_soon(self, callback: Callable[[], None]) -> _Timer:
        return self.call_at(self._now, callback)

    async def sleep(self, delay: float) -> None:  # pragma: no cover - the Clock protocol
        raise RuntimeError("SimClock runs callbacks only")

    def _pop_due(self, end: float) -> _Timer | None:
        """The next live timer due by `end`, with the clock moved to its time."""
        heap = self._heap
        while heap and heap[0][0] <= end:
            when, _, timer = heapq.heappop(heap)
            if not timer.cancelled:
                if when > self._now:
                    self._now = when
                    self._same = 0
                    self._waiting = len(heap)
                else:
                    self._same += 1
                    self._waiting = max(self._waiting, len(heap))
                    if self._same > max(_STALL_MIN, _STALL_PER_TIMER * self._waiting):
                        raise ClockStalled(
                            f"virtual time is stuck at {self._now:g} s: {self._same} timers "
                            "fired there without it advancing (a period or delay of 0 or less?)"
                        )
                return timer
        return None

    def run_until(self, end: float) -> None:
        if not math.isfinite(end):
            raise ValueError(f"run_until needs a finite end, got {end}")
        while (timer := self._pop_due(end)) is not None:
            timer.callback()
        self._now = max(self._now, end)


class VirtualClock(SimClock):
    """Extends SimClock for asyncio tests: tasks may sleep on it, and settle between timers."""

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

    @staticmethod
    async def settle(rounds: int = 20) -> None:
        """Let every task that is ready run until it waits on the clock again."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        await self.advance_to(self._now + seconds)

    async def advance_to(self, target: float) -> None:
        await self.settle()
        while (timer := self._pop_due(target)) is not None:
            timer.callback()
            await self.settle()
        self._now = max(self._now, target)
        await self.settle()
