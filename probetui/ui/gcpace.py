"""Keeps full garbage collections away from key presses.

A full collection walks every live Python object. With thousands of probe workers, their
histories and the widget tree, that is long enough to push a key press's repaint past its goal
(docs/performance.md, The screen) when it lands at the wrong moment. Nearly all of those objects
live as long as the process, so they are frozen out of the collector's way (`gc.freeze`):

- the young freeze, every couple of seconds whatever the keys do: the young generations are
  collected (a short pass) and what survives is frozen. In front of a cluster every pod's status
  is replaced every few seconds; without this the new objects pile up unfrozen and the
  collector's own full passes walk them all again (guarded by benchmarks/fleet.py);
- the full pass, at a quiet moment (no key for a while): everything is unfrozen, collected
  once and frozen again, so that cycles that died while frozen are freed. It runs when pods
  have come or gone and every 20 s given a quiet moment; and, so that memory stays bounded
  when keys never stop, every `force` seconds (two minutes) whatever the keys do. Cyclic
  garbage that dies frozen waits for the next full pass, and the longer the wait the larger
  the heap and the longer the pass; Textual's strips holding themselves in their own caches
  were most of it, which `ui/strips.py` stops (guarded by benchmarks/ui.py and
  benchmarks/fleet.py). Frequent quiet passes keep each one short; a key stream that never
  pauses for 2 s still pays the forced pass, about the walk of the live heap.

Frozen objects are still freed by reference counting; only cycles among them wait for the
next full pass.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


class GcPacer:
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
        self._frozen_at = now  # the last full pass (or the start: the runtime's settle_memory)
        self._young_at = now

    def key_pressed(self) -> None:
        self._last_key = self.clock()

    def tick(self, layout_version: int) -> bool:
        """Called on the UI timer; True when it ran a full pass."""
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
