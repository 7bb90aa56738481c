"""Pace screen updates from the last frame, not from a fixed grid of ticks.

Textual draws a screen on a timer at most MAX_FPS times a second (`Screen._update_timer`).
Its timer keeps a grid of ticks from when it started, and when a tick comes after a pause
(a refresh asked for between grid points) it skips ahead to the grid point after the next
one (`Timer._run`: `count = int(elapsed / interval + 1)`, then waits for `count + 1`). The
frame after an unscheduled one therefore comes up to two intervals later, not one, and every
key whose repaint takes two frames (the filter box's character at once, the list re-filtered
when its Changed message has gone round) would wait that long for the second one (guarded by
`benchmarks.fleet`'s filter figure). `PacedTimer` keeps the same ceiling on the rate, counted from
the last frame: a frame asked for at least an interval after the last is drawn at once, one
asked for sooner is drawn an interval after the last.

A key press is what someone waits on, so the frames asked for just after one (`hasten`:
`HASTE` seconds, the key's own and the one that follows when its work takes two) are drawn
as soon as asked for, at most `MIN_GAP` apart: the ceiling holds back the polls' and the
engine's repaints, which come within an interval before the key's about half the time and
would make its frame wait up to that interval (guarded by `benchmarks.fleet`).
"""

from __future__ import annotations

from collections.abc import Callable

from textual import _time
from textual.screen import UPDATE_PERIOD
from textual.timer import EventTargetGone, Timer

# seconds after a key press during which frames are drawn as soon as asked for
HASTE = 0.05
MIN_GAP = 0.004  # between two frames even then


class PacedTimer(Timer):
    """A repeating timer whose ticks are at least an interval apart, counted from the last
    tick (`MIN_GAP`, for `HASTE` after `hasten`); paused, it waits for `resume` and ticks
    then, or an interval after the last."""

    _hasty_until = -1.0

    def hasten(self) -> None:
        """The ticks asked for in the next `HASTE` seconds come at once (a key was pressed)."""
        self._hasty_until = _time.get_time() + HASTE

    async def _run(self) -> None:
        interval = self._interval
        last = -interval
        count = 0
        while self._repeat is None or count < self._repeat:
            await self._active.wait()
            now = _time.get_time()
            wait = last + (MIN_GAP if now < self._hasty_until else interval) - now
            if wait > 0:
                await _time.sleep(wait)
                # paused meanwhile (the frame drawn by a layout's own refresh): wait again
                await self._active.wait()
            last = _time.get_time()
            count += 1
            try:
                await self._tick(next_timer=last, count=count)
            except EventTargetGone:
                break


class PacedScreen:
    """A mixin for `Screen`: its update timer is a `PacedTimer` (same period and callback),
    and work can wait for the next frame (`after_frame`)."""

    _paced: PacedTimer | None = None
    _after: list[Callable[[], object]] | None = None

    @property
    def _update_timer(self) -> Timer:
        timer = self._paced
        if timer is None:
            screen = self  # the Screen this mixes into
            timer = self._paced = PacedTimer(
                screen,  # type: ignore[arg-type]
                UPDATE_PERIOD,
                name="screen_update",
                callback=screen._on_timer_update,
                pause=True,
            )
            timer._start()
            screen._timers.add(timer)  # type: ignore[attr-defined]
        return timer

    def hasten(self) -> None:
        """The frames asked for just after a key press are drawn as soon as asked for."""
        self._update_timer.hasten()  # type: ignore[attr-defined]

    def after_frame(self, callback: Callable[[], object]) -> None:
        """Call `callback` once the next frame is drawn, with what was asked for so far.
        Textual's `call_after_refresh` runs at once where the screen has not yet heard of
        its widgets' refreshes (each widget tells it from its own message queue), so it can
        come before the frame it was meant to follow."""
        if self._after is None:
            self._after = []
        self._after.append(callback)
        # a frame, even where nothing else asks for one (after the messages queued now)
        self.call_later(self._update_timer.resume)  # type: ignore[attr-defined]

    def _on_timer_update(self) -> None:
        after, self._after = self._after, None
        super()._on_timer_update()  # type: ignore[misc]
        for callback in after or ():
            self.call_next(callback)  # type: ignore[attr-defined]


__all__ = ["HASTE", "MIN_GAP", "PacedScreen", "PacedTimer"]
