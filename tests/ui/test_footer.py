"""The key footer: the line Textual's Footer draws, kept by one widget that mounts nothing."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from probetui.ui.widgets.footer import KeyFooter


class _Keys(Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "app.mark('x')", "mark x"),
        Binding("y", "app.mark('y')", "hidden", show=False),
    ]


class _App(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "mark('t')", "probe now"),
        Binding("T", "mark('T')", "all probes"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[str] = []

    def compose(self) -> ComposeResult:
        yield _Keys("keys", id="keys")
        yield Input(id="box")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#keys").focus()

    def action_mark(self, what: str) -> None:
        self.marks.append(what)


def _line(app: _App) -> str:
    footer = app.query_one(KeyFooter)
    return "".join(s.text for s in footer.render_line(0)).rstrip()


async def test_the_footer_shows_the_keys_in_force_and_follows_the_focus() -> None:
    app = _App()
    async with app.run_test(size=(100, 6)) as pilot:
        await pilot.pause()
        line = _line(app)
        assert line.startswith(" x mark x  t probe now  T all probes ")
        assert "hidden" not in line
        assert line.endswith("▏^p palette")
        assert len(line) == 99  # the palette's key ends a cell of padding from the edge
        app.query_one("#box").focus()
        await pilot.pause()
        # the box takes printable keys: no binding of one is offered while it has the focus
        assert _line(app).split() == ["▏^p", "palette"]
        app.query_one("#keys").focus()
        await pilot.pause()
        assert _line(app) == line
        # nothing is mounted for a bindings change: the line is repainted
        assert not app.query_one(KeyFooter).children


async def test_a_click_on_a_key_presses_it() -> None:
    app = _App()
    async with app.run_test(size=(100, 6)) as pilot:
        await pilot.pause()
        line = _line(app)
        await pilot.click(KeyFooter, offset=(line.index("probe now"), 0))
        await pilot.click(KeyFooter, offset=(line.index("mark x"), 0))
        await pilot.pause()
        assert app.marks == ["t", "x"]


async def test_where_the_keys_do_not_fit_the_palette_key_covers_them() -> None:
    app = _App()
    async with app.run_test(size=(30, 6)) as pilot:
        await pilot.pause()
        line = _line(app)
        assert line.endswith("▏^p palette") and len(line) == 29
        assert line.startswith(" x mark x  t probe")
