"""What the configuration changes on the screen, with the Pilot: a keymap (the keys work, the
old ones do not, help and the hints name the new ones), the top bar's reason for read-only,
themes chosen up front and switched live from the palette, and NO_COLOR."""

from __future__ import annotations

import pytest
from textual.command import CommandPalette

from probetui.keys import ProbeKey
from probetui.ui.screens.help import HelpScreen
from probetui.ui.themes import PROBETUI_THEMES
from probetui.ui.widgets.header import TopBar
from tests.ui.fakes import R, make_app

SIZE = (160, 45)
KEYMAP = {"probetui.probe-now": "ctrl+t", "probetui.help": "f1", "probetui.sort": "ctrl+s"}


async def test_a_keymap_moves_the_keys_and_help_names_the_ones_in_force() -> None:
    app, _, controls = make_app(keymap=KEYMAP)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        assert controls.calls == []
        await pilot.press("ctrl+t")
        assert controls.calls == [("probe_now", ProbeKey("uid-api", "api", R))]
        top = app.query_one(TopBar).render().plain
        assert top.rstrip().endswith("f1 help")
        assert app.screen.query_one("#workloads-pane").border_subtitle.endswith("(^s)")
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        rows = dict(app.screen.rows)
        assert rows["^t"].startswith("probe now: the selected probe")
        assert rows["f1"] == "this help" and "t" not in rows and "?" not in rows


async def test_the_top_bar_says_why_it_is_read_only() -> None:
    app, _, controls = make_app(read_only=True)
    controls.runtime.read_only_reason = "locked by PROBETUI_READ_ONLY"
    async with app.run_test(size=SIZE):
        assert "READ-ONLY  locked by PROBETUI_READ_ONLY" in app.query_one(TopBar).render().plain


async def test_a_theme_from_the_configuration_and_the_palette_switches_it_live() -> None:
    app, _, _ = make_app(theme="probetui")
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "probetui"
        assert {t.name for t in PROBETUI_THEMES} <= set(app.available_themes)
        # the palette's Theme command, as a user reaches it: ctrl+p, "theme", enter
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"theme")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"probetui-light")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.theme == "probetui-light"


def test_no_color(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """NO_COLOR: monochrome, and the glyphs still say everything (the read-only badge too)."""
    monkeypatch.setenv("NO_COLOR", "1")
    app, _, _ = make_app(read_only=True, theme="probetui")
    assert app.no_color
    assert snap_compare(app, terminal_size=SIZE)
