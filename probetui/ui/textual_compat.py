"""Holds every place probetui replaces Textual's code or reaches into its private names.

Nothing else in probetui imports a Textual private or patches a Textual class: a Textual
upgrade is reviewed here. Each override states the rule it protects;
tests/ui/test_textual_compat.py fails, naming the override to re-check, when Textual changes
what an override replaces or relies on; docs/upstream.md names the upstream change that would
let each one go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from rich.style import Style
from textual import _time, events
from textual.keys import _character_to_key
from textual.reactive import Reactive
from textual.screen import UPDATE_PERIOD
from textual.strip import Strip
from textual.timer import EventTargetGone, Timer

from probetui.ui.pacing import HASTE, frame_wait

if TYPE_CHECKING:
    from textual.widget import Widget


# -- the screen's update timer ------------------------------------------------------------


class PacedTimer(Timer):
    """Acts as a repeating timer whose ticks are at least an interval apart counted from the last
    tick (`pacing.frame_wait`); paused, it waits for `resume` and ticks then, or an interval
    after the last."""

    _hasty_until = -1.0

    def hasten(self) -> None:
        """Make the ticks asked for in the next `HASTE` seconds come at once (a key was
        pressed)."""
        self._hasty_until = _time.get_time() + HASTE

    # replaces `Timer._run`: Textual's keeps a grid of ticks from its start and, resumed
    # between two grid points, skips to the one after the next, so a frame asked for just
    # after another waited up to two intervals instead of one
    async def _run(self) -> None:
        last = -self._interval
        count = 0
        while self._repeat is None or count < self._repeat:
            await self._active.wait()
            wait = frame_wait(last, _time.get_time(), self._interval, self._hasty_until)
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
    """Mixes into a `Screen` and draws its frames on a `PacedTimer` (same period and
    callback as Textual's) and lets work wait for the next frame (`after_frame`)."""

    _paced: PacedTimer | None = None
    _after: list[Callable[[], object]] | None = None

    # replaces `Screen._update_timer` (Textual makes a plain `Timer` with `set_interval`, and
    # no argument chooses its class); the timer joins the screen's `_timers` so that it stops
    # with the screen, as one made by `set_interval` does
    @property
    def _update_timer(self) -> Timer:
        timer = self._paced
        if timer is None:
            screen: Any = self  # the Screen this mixes into
            timer = self._paced = PacedTimer(
                screen,
                UPDATE_PERIOD,
                name="screen_update",
                callback=screen._on_timer_update,
                pause=True,
            )
            timer._start()
            screen._timers.add(timer)
        return timer

    def hasten(self) -> None:
        """Draw the frames asked for just after a key press as soon as asked for."""
        self._paced_timer().hasten()

    def after_frame(self, callback: Callable[[], object]) -> None:
        """Call `callback` once the next frame is drawn, with what was asked for so far.

        Textual's `call_after_refresh` runs at once where the screen has not yet heard of its
        widgets' refreshes (each widget tells it from its own message queue), so it can come
        before the frame it was meant to follow."""
        if self._after is None:
            self._after = []
        self._after.append(callback)
        screen: Any = self
        # a frame, even where nothing else asks for one (after the messages queued now)
        screen.call_later(self._paced_timer().resume)

    def _paced_timer(self) -> PacedTimer:
        timer = self._update_timer
        assert isinstance(timer, PacedTimer)
        return timer

    # extends `Screen._on_timer_update` (the frame itself): `after_frame`'s callbacks run
    # once the frame they wait for is drawn
    def _on_timer_update(self) -> None:
        after, self._after = self._after, None
        super()._on_timer_update()  # type: ignore[misc]
        screen: Any = self
        for callback in after or ():
            screen.call_next(callback)


# -- focus without a whole repaint --------------------------------------------------------


class QuietFocusScreen:
    """Mixes into a `Screen` so its focus moves repaint only the widgets whose styles the move
    changes (Textual restyles them and they refresh)."""

    # redefines `Screen.focused` with repaint=False: Textual's composites and writes the
    # whole screen in the frame of every focus move, where the restyled widgets alone change
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)


class QuietFocusWidget:
    """Mixes into a focusable `Widget` so its focus and blur repaint only what
    `focus_repaint` repaints, not the whole widget."""

    # in place of `Widget._on_focus` and `Widget._on_blur` (prevent_default stops them): they
    # do the same and refresh the whole widget, where a list's look changes on one line
    def on_focus(self, event: events.Focus) -> None:
        event.prevent_default()
        self._quiet_focus_moved(True, events.DescendantFocus)

    def on_blur(self, event: events.Blur) -> None:
        event.prevent_default()
        self._quiet_focus_moved(False, events.DescendantBlur)

    def _quiet_focus_moved(self, focused: bool, told: type[events.Event]) -> None:
        widget: Any = self
        widget.has_focus = focused
        self.focus_repaint()
        if widget.parent is not None:
            widget.parent.post_message(told(widget))

    def focus_repaint(self) -> None:
        """Repaint what the focus changes in this widget's look (nothing by default)."""


# -- strips freed by reference counting ---------------------------------------------------

_strips_patched = False
# Textual's own `Strip.divide` and `Strip.crop_extend`, as they were before `install_strips`
STRIP_ORIGINALS: dict[str, Callable[..., Any]] = {}


def install_strips() -> bool:
    """Patch `Strip` (once per process) so that no strip holds itself in its own caches;
    return True when the patch is in place.

    Textual's `Strip.divide` at the strip's own length answers `[self]` and `crop_extend` to
    its own length answers `self`, and each caches that answer in the strip: a strip in such
    a cycle is freed by the cyclic collector only, with its segments and caches. The patch
    answers those two cases before the cache is reached (the same strips come back) and
    leaves Textual's class alone where the methods are not there."""
    global _strips_patched
    if _strips_patched:
        return True
    divide, crop_extend = Strip.__dict__.get("divide"), Strip.__dict__.get("crop_extend")
    if not callable(divide) or not callable(crop_extend):
        return False

    def divide_no_cycle(self: Strip, cuts: Iterable[int]) -> list[Strip]:
        cuts = list(cuts)
        length = self.cell_length
        if [cut for cut in cuts if cut <= length] == [length]:
            return [self]
        return divide(self, cuts)

    def crop_extend_no_cycle(self: Strip, start: int, end: int, style: Style | None) -> Strip:
        # extend_cell_length and crop both give the strip itself: nothing to cache
        if start <= 0 and end == self.cell_length:
            return self
        return crop_extend(self, start, end, style)

    divide_no_cycle.__doc__ = divide.__doc__
    crop_extend_no_cycle.__doc__ = crop_extend.__doc__
    STRIP_ORIGINALS.update(divide=divide, crop_extend=crop_extend)
    # patches `Strip.divide` and `Strip.crop_extend`: the compositor makes its strips itself,
    # so no subclass of ours could be the one it divides and crops
    Strip.divide = divide_no_cycle  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_no_cycle  # type: ignore[method-assign]
    _strips_patched = True
    return True


# -- key names ---------------------------------------------------------------------------


def character_to_key(character: str) -> str:
    """Return Textual's name for the key that types `character` ("?" -> "question_mark"),
    as its bindings spell it.

    Reads `textual.keys._character_to_key`, the one place Textual spells it: a keymap that
    names a key either way is then checked for clashes as Textual will bind it."""
    return _character_to_key(character)


__all__ = [
    "STRIP_ORIGINALS",
    "PacedScreen",
    "PacedTimer",
    "QuietFocusScreen",
    "QuietFocusWidget",
    "character_to_key",
    "install_strips",
]
