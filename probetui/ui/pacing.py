"""Decides when the screen's next frame is drawn: an interval after the last, and at once
just after a key press.

Textual draws a screen at most MAX_FPS times a second (`UPDATE_PERIOD` apart). Here the
ceiling is counted from the last frame, not from a grid of ticks: a frame asked for at least
an interval after the last is drawn at once, one asked for sooner an interval after the last
(Textual's own timer skips to the grid point after the next when resumed between two, so a
frame that follows an unscheduled one waited up to two intervals).

A key press is what someone waits on, so the frames asked for in the `HASTE` seconds after
one (its own, and the one that follows when its work takes two) are drawn as soon as asked
for, at most `MIN_GAP` apart: the ceiling holds back the polls' and the engine's repaints,
not a key's. `benchmarks.fleet` (key press to terminal) guards both rules.

The timer and the screen that apply this are Textual overrides: `ui/textual_compat.py`.
"""

from __future__ import annotations

# seconds after a key press during which frames are drawn as soon as asked for
HASTE = 0.05
MIN_GAP = 0.004  # between two frames even then


def frame_wait(last: float, now: float, interval: float, hasty_until: float) -> float:
    """Return how long a frame asked for at `now` waits after the frame drawn at `last`:
    until `interval` after it (`MIN_GAP` before `hasty_until`); zero or less draws at once."""
    return last + (MIN_GAP if now < hasty_until else interval) - now


__all__ = ["HASTE", "MIN_GAP", "frame_wait"]
