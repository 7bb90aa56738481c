"""The shadow prober's lateness: what tells the user it has fallen behind its ticks."""

from __future__ import annotations

import asyncio
import tracemalloc

from probetui.cli.live import warn_when_behind
from probetui.prober.lateness import BEHIND, WINDOW, Lateness, behind_words


def test_worst_of_the_window_and_forgotten_after_it() -> None:
    late = Lateness()
    assert late.worst(100.0) == 0.0
    late.add(100.2, 0.03)
    late.add(100.7, 2.5)
    late.add(101.1, 0.01)
    assert late.worst(101.5) == 2.5
    # the bad second leaves the window WINDOW seconds later
    assert late.worst(99.9 + WINDOW) == 2.5
    assert late.worst(100.0 + WINDOW) == 0.01
    assert late.worst(101.0 + WINDOW) == 0.0


def test_memory_is_bounded_by_the_window() -> None:
    """A day of attempts takes no more memory than a minute of them: what left the window is
    gone (measured, not read from the object's insides)."""
    late = Lateness()

    def feed(start: int, seconds: int) -> None:
        for i in range(start * 10, (start + seconds) * 10):
            late.add(i / 10, 0.001 * (i % 7))

    feed(0, 60)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        feed(60, 86_400)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 4096
    assert late.worst(86_460.0) == 0.006  # and it still answers for the window


async def test_headless_warns_once_when_behind_and_once_when_caught_up() -> None:
    said: list[str] = []
    both = asyncio.Event()

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 2:
            both.set()

    values = iter([0.02, BEHIND + 1.5, 3.0, 0.04, 0.03])
    task = asyncio.ensure_future(warn_when_behind(lambda: next(values, 0.0), say, 0.001))
    await asyncio.wait_for(both.wait(), 5)
    task.cancel()
    assert said[0].startswith(behind_words(BEHIND + 1.5)) and "-n, -l" in said[0]
    assert said[1] == "shadow prober caught up with its ticks"
