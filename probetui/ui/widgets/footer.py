"""Draw the keys in force as one line by one widget: the key footer.

Textual's Footer is a container of one FooterKey widget per binding, and it recomposes on every
bindings change (a focus move, `enter`, "/" opening the filter): the old keys removed, new ones
mounted, and the whole screen laid out again in the frame of the key that moved the focus, too
slow for the key-press goal that benchmarks/fleet guards. Each recompose also leaked a
`data_bind` watcher per key (textual#6666). This footer is one widget that draws the same
line (each key in the key style, its description after it, the command palette's key at the
right edge behind a thin rule) and repaints it when what it would show changes: no widget is
mounted and nothing is laid out. A click on a key presses it, as on Textual's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import RenderResult
from textual.screen import Screen
from textual.widget import Widget


@dataclass(frozen=True, slots=True)
class _Key:
    key: str  # what a click presses
    display: str
    description: str
    enabled: bool


class KeyFooter(Widget, can_focus=False):
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
    }
    KeyFooter > .key-footer--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyFooter > .key-footer--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    KeyFooter > .key-footer--rule {
        color: $foreground 20%;
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "key-footer--key",
        "key-footer--description",
        "key-footer--rule",
    }
    ALLOW_SELECT = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._keys: tuple[_Key, ...] = ()
        self._palette: _Key | None = None
        # each key's columns on the line, from the last render: what a click presses
        self._spans: list[tuple[int, int, _Key]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if not screen.app.app_focus or screen is not self.screen:
            return
        keys: list[_Key] = []
        actions: set[str] = set()
        palette = None
        app = self.app
        for _, binding, enabled, _tooltip in screen.active_bindings.values():
            if binding.show and binding.action not in actions:
                # one key per action, the first bound, as Textual's footer shows them
                actions.add(binding.action)
                keys.append(
                    _Key(binding.key, app.get_key_display(binding), binding.description, enabled)
                )
        if app.ENABLE_COMMAND_PALETTE:
            found = screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, binding, enabled, _ = found
                palette = _Key(
                    binding.key, app.get_key_display(binding), binding.description, enabled
                )
        if (tuple(keys), palette) != (self._keys, self._palette):
            self._keys, self._palette = tuple(keys), palette
            self.refresh()

    def _part(self, key: _Key, styles: tuple[Style, Style]) -> Text:
        style = Style(dim=True) if not key.enabled else Style()
        text = Text.assemble((f" {key.display} ", styles[0]), no_wrap=True, end="")
        if key.description:
            text.append(f"{key.description} ", styles[1])
        text.stylize(style)
        return text

    def render(self) -> RenderResult:
        styles = (
            self.get_component_rich_style("key-footer--key"),
            self.get_component_rich_style("key-footer--description"),
        )
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, _Key]] = []
        for key in self._keys:
            part = self._part(key, styles)
            spans.append((line.cell_len, line.cell_len + part.cell_len, key))
            line.append_text(part)
        if self._palette is not None:
            # the palette's key at the right edge, as Textual's footer docks it: a rule, the
            # key without padding, then its description and a cell of padding
            palette = self._palette
            part = Text.assemble((palette.display, styles[0]), no_wrap=True, end="")
            part.append(f" {palette.description} ", styles[1])
            if not palette.enabled:
                part.stylize(Style(dim=True))
            # over the keys that do not fit, as the docked key covers them in Textual's
            at = max(0, self.size.width - part.cell_len - 1)
            line.truncate(at, pad=True)
            spans = [(a, min(b, at), k) for a, b, k in spans if a < at]
            line.append("▏", self.get_component_rich_style("key-footer--rule"))
            spans.append((at + 1, at + 1 + part.cell_len, palette))
            line.append_text(part)
        self._spans = spans
        return line

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                if key.enabled:
                    self.app.simulate_key(key.key)
                else:
                    self.app.bell()
                return


__all__ = ["KeyFooter"]
