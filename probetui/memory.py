"""Decides when Python's cyclic garbage collector runs: the one module of probetui that
calls `gc`.

Each policy is named for the moment it serves; callers in every layer call the policy, never
`gc`. This module imports nothing of probetui, so any layer may import it.

The rules behind all of them: most of what probetui makes lives as long as the process (pods,
workers, histories, widgets) or dies by reference counting, and a full collection walks every
live object, a stall of the event loop that grows with the fleet. So what lives long is frozen
out of the collector's sight (`gc.freeze`): frozen objects are still freed by reference
counting, only cycles among them wait for a full pass that unfreezes first (`GcPacer`).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# the collector's first threshold in a process that runs probes and nothing else (a shard, a
# node agent): Python's 700 catches every attempt in flight and promotes what reference
# counting frees a moment later (benchmarks/shards.py --profile guards it)
PROBER_YOUNG = 20_000


def freeze_after_start_up() -> None:
    """Collect once, then freeze what is alive: for a runtime's first batch of pods, whose
    workers every later full collection would otherwise walk (benchmarks.engine --gc-freeze)."""
    gc.collect()
    gc.freeze()


def freeze_what_lives() -> None:
    """Freeze what is alive now, without collecting first: for what a step of work made and
    keeps (a replay's store after a seek or a slice), which young passes would walk inside
    frames."""
    gc.freeze()


@contextmanager
def no_collection_during_bulk_load() -> Iterator[bool]:
    """Hold the collector off while a bulk load makes many objects that stay or die by
    reference count (a manifest read, a replay's seek): its passes meanwhile free nothing and
    walk the growing result again and again. Yields whether the collector was on before
    (and is turned back on after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield was
    finally:
        if was:
            gc.enable()


@contextmanager
def frozen_while_used() -> Iterator[None]:
    """Freeze what is alive for the block's length, then hand it back to the collector: for
    what a command read and reads to its end (lint's objects, while the rules simulate)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def collect_young_rarely(young: int = PROBER_YOUNG) -> None:
    """Run a young collection every `young` net allocations (the older generations as
    Python's): for a process that runs probes, whose attempts in flight are not garbage."""
    gc.set_threshold(young, 10, 10)


class CollectionLog:
    """Counts the collector's passes by generation, with their total and longest seconds,
    from `start` to `stop` (a profile of where a process stalls)."""

    def __init__(self) -> None:
        # generation -> [passes, seconds, longest]
        self.passes: dict[int, list[float]] = {0: [0, 0.0, 0.0], 1: [0, 0.0, 0.0], 2: [0, 0.0, 0.0]}
        self._began = 0.0

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        took = time.perf_counter() - self._began
        row = self.passes[info["generation"]]
        row[0] += 1
        row[1] += took
        row[2] = max(row[2], took)

    def start(self) -> None:
        """Count the passes from now."""
        gc.callbacks.append(self._collected)

    def stop(self) -> None:
        """Stop counting (a second stop does nothing)."""
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)

    @staticmethod
    def thresholds() -> tuple[int, int, int]:
        """Return the collector's thresholds in force."""
        return gc.get_threshold()


class GcPacer:
    """Paces full collections while the UI runs: away from key presses, often enough that
    each stays short.

    - the young freeze, every `young` seconds whatever the keys do: the young generations
      are collected and what survives is frozen, so that the objects made as pods change do
      not pile up unfrozen for the collector's own full passes to walk;
    - the full pass, at a quiet moment (no key for `quiet` seconds, the pods unchanged for
      `settle`): everything is unfrozen, collected once and frozen again, so that cycles that
      died while frozen are freed. It runs when pods have come or gone and every `every`
      seconds given a quiet moment; and, so that memory stays bounded when keys never stop,
      every `force` seconds whatever the keys do.

    benchmarks/ui and benchmarks.fleet (key press to terminal, collector pauses) guard it.
    """

    def __init__(
        self,
        quiet: float = 2.0,
        settle: float = 5.0,
        every: float = 20.0,
        young: float = 2.0,
        force: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet  # seconds without a key press before a full pass may run
        self.settle = settle  # seconds the pods must stay as they are before a full pass
        self.every = every  # a full pass at least this often when quiet
        self.young = young  # seconds between young freezes
        self.force = force  # a full pass at least this often, keys or not
        self.clock = clock
        self.passes = 0  # full passes
        self.young_passes = 0
        now = clock()
        self._last_key = now
        self._layout: int | None = None
        self._layout_since = now
        self._frozen_layout: int | None = None
        # the last full pass (or the start: the runtime's freeze after start-up)
        self._frozen_at = now
        self._young_at = now

    def key_pressed(self) -> None:
        """Note a key press: no full pass until `quiet` seconds without one."""
        self._last_key = self.clock()

    def tick(self, layout_version: int) -> bool:
        """Run what is due, called on the UI timer; return True when it ran a full pass."""
        now = self.clock()
        if not gc.isenabled():
            return False
        if layout_version != self._layout:
            self._layout, self._layout_since = layout_version, now
        elif self._full_due(layout_version, now):
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self._frozen_layout, self._frozen_at = layout_version, now
            self._young_at = now
            self.passes += 1
            return True
        if now - self._young_at >= self.young:
            gc.collect(1)
            gc.freeze()
            self._young_at = now
            self.young_passes += 1
        return False

    def _full_due(self, layout_version: int, now: float) -> bool:
        if now - self._frozen_at >= self.force:
            return True
        if now - self._last_key < self.quiet or now - self._layout_since < self.settle:
            return False
        return self._frozen_layout != layout_version or now - self._frozen_at >= self.every


__all__ = [
    "PROBER_YOUNG",
    "CollectionLog",
    "GcPacer",
    "collect_young_rarely",
    "freeze_after_start_up",
    "freeze_what_lives",
    "frozen_while_used",
    "no_collection_during_bulk_load",
]
