"""Offer the themes a user can pick: Textual's built-in ones and probetui's own.

They are chosen by `theme:` in the config file, `--theme`, or the palette's Theme command.

probetui's themes keep the borders and the cursor quiet, so that the glyphs' own colours
(green, yellow, red: `glyphs.py`) are what the eye goes to; a colour never carries meaning
alone, so NO_COLOR (Textual's monochrome filter) loses nothing.
"""

from __future__ import annotations

from textual.theme import BUILTIN_THEMES, Theme

__all__ = ["DEFAULT_THEME", "PROBETUI_THEMES", "theme_names"]

# what the app looked like before themes could be chosen; the snapshots are in it
DEFAULT_THEME = "textual-dark"

PROBETUI_THEMES: tuple[Theme, ...] = (
    Theme(
        name="probetui",
        primary="#5f6b7a",
        secondary="#3b4450",
        accent="#4aa3df",
        warning="#e5c07b",
        error="#e06c75",
        success="#98c379",
        foreground="#d7dae0",
        background="#1b1f24",
        surface="#22272e",
        panel="#2d333b",
        dark=True,
    ),
    Theme(
        name="probetui-light",
        primary="#8a94a0",
        secondary="#c8ced6",
        accent="#0b6bcb",
        warning="#9a6700",
        error="#c0303f",
        success="#1a7f37",
        foreground="#1f2328",
        background="#fbfbfc",
        surface="#f1f3f5",
        panel="#e6e9ed",
        dark=False,
    ),
)


def theme_names() -> list[str]:
    return [*(t.name for t in PROBETUI_THEMES), *BUILTIN_THEMES]
