"""Text that does not fit its pane: the threshold pane's state wraps where rows are free,
details (enter) show every line whole, wrapped, and what the top bar has no room for is said
whole in a toast (docs/screen.md). At 160 and at 120 columns."""

from __future__ import annotations

import pytest

from probetui.ui.screens.main import MainScreen
from probetui.ui.widgets.attempts import AttemptLog
from probetui.ui.widgets.header import TopBar
from probetui.ui.widgets.threshold import ThresholdPane
from tests.ui.fakes import make_app
from tests.ui.test_app import CRASHY

SIZES = [(160, 50), (120, 40)]


def words(widget) -> str:  # type: ignore[no-untyped-def]
    """What a pane draws, as one line: its rows as drawn (cut where they are), joined."""
    rows = [widget.render_line(y).text for y in range(widget.size.height)]
    return " ".join(" ".join(rows).split())


def screen(app) -> MainScreen:  # type: ignore[no-untyped-def]
    assert isinstance(app.screen, MainScreen)
    return app.screen


@pytest.mark.parametrize("size", SIZES)
async def test_the_probe_state_wraps_where_the_pane_has_rows(size: tuple[int, int]) -> None:
    app, _, _ = make_app()
    async with app.run_test(size=size) as pilot:
        screen(app).workloads.select(CRASHY)
        await pilot.pause()
        await pilot.pause(0.15)  # the poll's advice
        text = words(app.query_one(ThresholdPane))
        # "probing resum…" was cut at the pane's edge
        assert (
            "on hold: Failure published, the kubelet restarts the container; probing resumes "
            "with the next container" in text
        )


@pytest.mark.parametrize("size", SIZES)
async def test_details_show_every_line_whole(size: tuple[int, int]) -> None:
    app, _, _ = make_app()
    async with app.run_test(size=size) as pilot:
        screen(app).workloads.select(CRASHY)
        await pilot.pause(0.15)
        await pilot.press("enter")
        await pilot.pause(0.15)
        pane = app.query_one(ThresholdPane)
        text = words(pane)
        assert pane.advice is not None
        findings = pane.advice.for_probe(pane.selected)  # type: ignore[arg-type]
        assert findings
        for f in findings:
            assert f"{f.rule.id}: {' '.join(f.hit.message.split())}" in text, f.rule.id
            assert f"fix: {' '.join(f.fix.split())}" in text, f.rule.id
        assert "dials http://127.0.0.1:18082/healthz" in text
        assert "…" not in text
        log = app.query_one(AttemptLog)
        assert log.size.height >= 4  # the pane grew, the attempts kept their room
        lines = words(log)
        assert (
            'event: Liveness probe failed: Get "http://127.0.0.1:18082/healthz": context '
            "deadline exceeded · run 3 of 3 · tick" in lines
        )
        assert "…" not in lines
        await pilot.press("escape")  # back: the pane's own height again
        await pilot.pause()
        assert pane.outer_size.height == 11


@pytest.mark.parametrize("size", SIZES)
async def test_what_the_top_bar_cannot_hold_is_said_whole(size: tuple[int, int]) -> None:
    # "pause: this is a recording: nothing i…": a reason cut at the bar's edge
    app, _, _ = make_app()
    reason = (
        "pause: this is a recording: nothing is probed or paused in a replay; "
        "the cursor's keys move through it"
    )
    async with app.run_test(size=size, notifications=True) as pilot:
        await pilot.pause()
        screen(app).say(reason, warning=True)
        await pilot.pause()
        toasts = [" ".join(str(t.render()).split()) for t in app.screen.query("Toast")]
        assert reason in toasts
        bar = app.query_one(TopBar).render().plain
        assert bar.rstrip().endswith("? help") and len(bar) <= size[0]
        screen(app).say("paused")  # what fits is said in the bar alone
        await pilot.pause()
        assert "paused" in app.query_one(TopBar).render().plain
        assert len(app.screen.query("Toast")) == 1


async def test_the_bar_gives_the_restart_words_way_before_its_right_side() -> None:
    # a replay's file name is long: "restarted in 10m" pushed "? help" off a 120-column bar
    app, _, controls = make_app()
    controls.runtime.source = "replay /srv/recordings/tuesday-night.db  (demo)"
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.query_one(TopBar).render().plain
        assert len(bar) <= 120 and bar.rstrip().endswith("? help")
        assert bar.split(" · ")[-1].startswith("1 ↺")
    app, _, _ = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "1 restarted in 10m" in app.query_one(TopBar).render().plain
