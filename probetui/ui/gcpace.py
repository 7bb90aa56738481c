"""Keeps full garbage collections away from key presses.

A full collection walks every live Python object. With thousands of probe workers, their
histories and the widget tree, that is 100,000+ objects and 50-150 ms: long enough to push a
key press's repaint past 100 ms when it lands at the wrong moment. Nearly all of those objects
live as long as the process, so at a quiet moment (no key for a while) they are collected once
and then frozen out of the collector's way (`gc.freeze`). When pods have come or gone the
freeze is redone, unfrozen first, so that whatever died since is collected rather than kept.
"""

from __future__ import annotations

import gc
import time


class GcPacer:
    def __init__(self, quiet: float = 2.0, settle: float = 5.0, every: float = 600.0) -> None:
        self.quiet = quiet  # seconds without a key press before a pass may run
        self.settle = settle  # seconds the pods must stay as they are
        self.every = every  # redo at least this often (objects made since are not frozen)
        self.passes = 0
        self._last_key = time.monotonic()
        self._layout: int | None = None
        self._layout_since = time.monotonic()
        self._frozen_layout: int | None = None
        self._frozen_at = 0.0

    def key_pressed(self) -> None:
        self._last_key = time.monotonic()

    def tick(self, layout_version: int) -> bool:
        """Called on the UI timer; True when it ran a pass."""
        now = time.monotonic()
        if layout_version != self._layout:
            self._layout, self._layout_since = layout_version, now
            return False
        if not gc.isenabled() or now - self._last_key < self.quiet:
            return False
        if now - self._layout_since < self.settle:
            return False
        if self._frozen_layout == layout_version and now - self._frozen_at < self.every:
            return False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self._frozen_layout, self._frozen_at = layout_version, now
        self.passes += 1
        return True
