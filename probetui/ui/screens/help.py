"""The `?` screen lists every key that works where help was asked for, and the glyph legend."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from probetui.ui import glyphs as g
from probetui.ui.keys import EXPLAIN, HELP, ORDER
from probetui.ui.textual_compat import PacedScreen


def key_rows(bindings: dict[str, ActiveBinding], display) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(keys, what they do), one row per action, keys of the same action joined."""
    keys: dict[str, list[str]] = {}
    words: dict[str, str] = {}
    for active in bindings.values():
        b = active.binding
        if not active.enabled or b.action not in EXPLAIN:
            continue  # Textual's own (focus, copy ...) are not probetui's to explain
        keys.setdefault(b.action, [])
        shown = display(b)
        if shown not in keys[b.action]:
            keys[b.action].append(shown)
        words[b.action] = EXPLAIN.get(b.action, b.description or b.action)
    rank = {a: i for i, a in enumerate(ORDER)}
    actions = sorted(keys, key=lambda a: rank.get(a, len(rank)))
    return [(" ".join(keys[a]), words[a]) for a in actions]


def keys_text(rows: list[tuple[str, str]], read_only: bool) -> Text:
    text = Text()
    text.append("Keys\n", style="bold")
    width = max((len(k) for k, _ in rows), default=4) + 2
    for k, what in rows:
        text.append(f"  {k:<{width}}", style="bold " + g.INFO)
        text.append(what + "\n")
    text.append(f"  {'ctrl+p':<{width}}", style="bold " + g.INFO)
    text.append("command palette: every action above by name\n")
    if read_only:
        text.append(
            "\n  READ-ONLY: actions that would run a probe the runtime does not run are not "
            "offered;\n  exec probes are not run.\n",
            style=g.WARN,
        )
    return text


def glyphs_text() -> Text:
    text = Text()
    text.append("Glyphs\n", style="bold")
    for glyph, style, what in g.LEGEND:
        text.append(f"  {glyph:<4}", style=("bold " + style) if style else "bold")
        text.append(what + "\n")
    text.append(
        "\n  A timeline cell is a slice of time (zoom: + -);\n  several attempts in one cell show the"
        "\n  most alarming. Colours repeat the glyphs.\n",
        style=g.DIM,
    )
    return text


class HelpScreen(PacedScreen, ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = HELP

    def __init__(self, rows: list[tuple[str, str]], read_only: bool) -> None:
        super().__init__()
        self.rows = rows
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with Horizontal(id="help-box") as box:
            box.border_title = "probetui help"
            box.border_subtitle = "esc closes"
            with VerticalScroll(id="help-keys"):
                yield Static(keys_text(self.rows, self.read_only))
            with VerticalScroll(id="help-glyphs"):
                yield Static(glyphs_text())
