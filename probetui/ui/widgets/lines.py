"""Draw a widget a line at a time from the Text its `render()` returns, each strip kept by line.

Textual draws a `render()` widget whole on any refresh: the Rich Text becomes Content, then
strips, every line of it, and the frame composites every line again. The right-hand panes
change a line or two at a time (the threshold pane's countdown every 100 ms poll, an attempt
log that moves down by one), so most of a frame would go to drawing lines that look the same
as before (guarded by benchmarks/ui.py).

Here `render()` is still the one place a pane says what it shows (it is called in the frame,
as before), but each of its lines is turned into a strip only when no line with the same text
and spans was drawn before at this width and style, and `show_lines` repaints only the lines
that changed. Each line goes through Textual's own path (`visualize`, `Visual.to_strips`)
with the widget's style, so the strips are those Textual would draw: the screen is unchanged.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Region
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

# strips kept per widget: a screen of lines of each pane, and the lines an update moves
CACHED = 256


def line_key(line: Text) -> tuple:
    """Tell what a line shows: equal keys draw equal strips (at one width and widget style)."""
    return (line.plain, tuple(line.spans), line.style)


class LineCached(Widget):
    """Acts as a widget whose `render()` returns a Text of lines (no wrapping: nowrap in its CSS),
    drawn with the Line API from strips kept by each line's look."""

    _lines: list[Text] | None = None  # render()'s lines as last drawn; None: call it again

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._strips: LRUCache[tuple, Strip] = LRUCache(CACHED)
        self._drawn_with: tuple = ()  # (ansi theme, native colours) the strips were made for

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> LineCached:
        # a refresh of the whole widget means its content may have changed: render() again.
        # A refresh of regions is `show_lines`' own (its lines already set) or a border's.
        if repaint and not regions:
            self._lines = None
        super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
        return self

    def show_lines(self, text: Text) -> None:
        """Show `text` (what `render()` would return now), repainting only the lines that
        differ from those drawn: the rest of the pane is neither drawn nor composited again."""
        old = self._lines
        new = split_lines(text)
        width = self.size.width
        if old is None or not self.is_mounted or width <= 0 or self.text_selection is not None:
            self.refresh()
            return
        self._lines = new
        for y in range(max(len(old), len(new))):
            if y >= len(old) or y >= len(new) or line_key(old[y]) != line_key(new[y]):
                super().refresh(Region(0, y, width, 1))

    def render_line(self, y: int) -> Strip:
        if self.text_selection is not None:
            # a mouse selection is drawn across lines: Textual's own path over the whole text
            return super().render_line(y)
        lines = self._lines
        if lines is None:
            lines = self._lines = split_lines(self.render())
        width = self.size.width
        style = self.visual_style
        if y >= len(lines) or width <= 0:
            return Strip.blank(width, style.rich_style)
        # the width in each line's key, not a reason to forget the others: `enter` switches
        # the panes between two widths and back, the strips of both are kept
        context = (self.app.ansi_theme, self.app.native_ansi_color)
        if context != self._drawn_with:
            self._strips.clear()
            self._drawn_with = context
        line = lines[y]
        key = (*line_key(line), width, style)
        strip = self._strips.get(key)
        if strip is None:
            strips = Visual.to_strips(self, visualize(self, line), width, 1, style)
            strip = strips[0] if strips else Strip.blank(width, style.rich_style)
            self._strips[key] = strip
        return strip


def wrap_line(line: Text, width: int, console: Console, indent: int = 2) -> list[Text]:
    """`line` in rows of at most `width` cells, broken between words where it can be, the
    rows after the first indented `indent` more than the line's own leading spaces: a text
    that does not fit its pane is shown whole."""
    if width <= 0 or line.cell_len <= width:
        return [line]
    plain = line.plain
    pad = min(len(plain) - len(plain.lstrip(" ")) + indent, width // 2)
    rows: list[Text] = []
    rest, room = line, width
    while rest.cell_len > room:
        wrappable = rest.copy()
        wrappable.no_wrap = False  # the line's own no_wrap would make wrap() cut it at once
        n = len(wrappable.wrap(console, room, overflow="fold")[0].plain)
        if n <= 0:
            break
        head = rest[:n]
        head.rstrip()
        rows.append(head if not rows else Text(" " * pad) + head)
        rest = rest[n:]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]
        room = width - pad
    rows.append(rest if not rows else Text(" " * pad) + rest)
    return rows


def join_rows(rows: list[Text]) -> Text:
    """Return one Text of `rows`, a line each (what `render()` returns)."""
    return Text("\n", no_wrap=True, overflow="ellipsis").join(rows)


def split_lines(text: Text) -> list[Text]:
    """Return the Text's lines, as Textual splits it when it draws the whole (blank lines kept)."""
    if "\n" not in text.plain:
        return [text]
    return list(text.split("\n", allow_blank=True))


__all__ = ["LineCached", "join_rows", "line_key", "split_lines", "wrap_line"]
