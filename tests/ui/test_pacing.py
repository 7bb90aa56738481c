"""The screens' update timer: frames at most an interval apart from the last one, never a
grid point skipped (probetui.ui.pacing, ui/textual_compat.PacedTimer; Textual's own timer skips to the grid point after the
next when resumed between two)."""

from __future__ import annotations

import asyncio
import itertools

from textual import _time
from textual.app import App
from textual.timer import Timer

from probetui.ui.pacing import HASTE, MIN_GAP
from probetui.ui.textual_compat import PacedTimer

INTERVAL = 0.1  # long enough that a loaded machine's late wake-ups (some ms) do not blur it


async def _ticks_of(
    timer_class: type[Timer], resumes: list[float], hastened: frozenset[int] = frozenset()
) -> list[float]:
    """Resume a paused timer after each delay of `resumes` (from the start, in seconds) and
    return when it ticked, each tick pausing it again, as the screen's update does; before
    the resumes numbered in `hastened`, a key press (`PacedTimer.hasten`)."""
    ticks: list[float] = []
    app = App[None]()
    async with app.run_test():
        timer: Timer

        def tick() -> None:
            ticks.append(_time.get_time())
            timer.pause()

        timer = timer_class(app, INTERVAL, callback=tick, pause=True)
        timer._start()
        start = _time.get_time()
        try:
            for i, at in enumerate(resumes):
                await asyncio.sleep(max(0.0, start + at - _time.get_time()))
                if i in hastened:
                    timer.hasten()  # type: ignore[attr-defined]
                timer.resume()
            await asyncio.sleep(3 * INTERVAL)
        finally:
            timer.stop()
    return [t - start for t in ticks]


async def test_a_frame_asked_for_after_a_quiet_spell_is_drawn_at_once() -> None:
    ticks = await _ticks_of(PacedTimer, [0.0, 2.4 * INTERVAL])
    assert len(ticks) == 2
    assert ticks[0] < 0.3 * INTERVAL
    assert 2.3 * INTERVAL <= ticks[1] < 2.7 * INTERVAL


async def test_a_frame_asked_for_soon_after_one_waits_an_interval_from_it_not_two() -> None:
    ticks = await _ticks_of(PacedTimer, [0.0, 0.1 * INTERVAL])
    assert len(ticks) == 2
    gap = ticks[1] - ticks[0]
    # (an asyncio sleep may wake a fraction of a millisecond early)
    assert 0.9 * INTERVAL <= gap < 1.3 * INTERVAL


async def test_textual_own_timer_is_the_one_that_skips_a_grid_point() -> None:
    # why the module exists: resumed long after its last tick (as after any quiet spell of
    # the screen), Textual's timer ticks at once, then skips to the grid point after the next
    # one (6 intervals in, 1.5 after its tick); the paced one draws one interval after it
    resumes = [0.0, 4.5 * INTERVAL, 4.6 * INTERVAL]
    # a busy machine wakes the resume late, which shortens Textual's gap and not the paced
    # one's: the skip need show only once in three tries
    for _ in range(3):
        textual = await _ticks_of(Timer, resumes)
        assert len(textual) == 3
        if textual[2] - textual[1] > 1.4 * INTERVAL:
            break
    assert textual[2] - textual[1] > 1.4 * INTERVAL
    paced = await _ticks_of(PacedTimer, resumes)
    assert len(paced) == 3
    assert paced[2] - paced[1] < 1.3 * INTERVAL


def test_every_screen_of_the_app_draws_on_a_paced_timer() -> None:
    from probetui.ui.screens.help import HelpScreen
    from probetui.ui.screens.main import MainScreen
    from probetui.ui.screens.replay import ReplayScreen
    from probetui.ui.screens.whatif import WhatIfScreen
    from probetui.ui.textual_compat import PacedScreen

    for screen in (MainScreen, ReplayScreen, HelpScreen, WhatIfScreen):
        owner = next(c for c in screen.__mro__ if "_update_timer" in c.__dict__)
        assert owner is PacedScreen, screen.__name__


async def test_frames_asked_for_just_after_a_key_press_are_drawn_at_once() -> None:
    # a key's repaint (its own frame, then the one its work asks for) does not wait behind
    # the ceiling that a poll's frame drawn just before it set; later frames do again
    resumes = [0.0, 0.1 * INTERVAL, 0.2 * INTERVAL, 0.3 * INTERVAL + HASTE]
    ticks = await _ticks_of(PacedTimer, resumes, hastened=frozenset({1}))
    assert len(ticks) == 4
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert gaps[0] < 0.5 * INTERVAL and gaps[1] < 0.5 * INTERVAL
    assert gaps[1] >= 0.9 * MIN_GAP
    assert gaps[2] >= 0.9 * INTERVAL
