"""Draw a bordered pane whose titles repaint only the border line they are on.

Textual repaints a whole widget when its border title changes, and for a container that is
every line of its region, children composited again with it: the Workloads pane's title
carries the filter ("/svc-4") and the subtitle the order, so each filter keystroke and each
`S` would redraw all of the pane's lines (guarded by benchmarks/fleet.py). The title is on the
top border line and the subtitle on the bottom one: those lines are what changes. The
right-hand panes take the same titles: the attempt log sets its counts on every new attempt,
and Textual repaints the whole widget on every set, changed or not.
"""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical
from textual.content import Content, ContentType
from textual.geometry import Region
from textual.widget import Widget


class EdgeTitle:
    """Replaces Widget.border_title's descriptor, refreshing only its own border line."""

    def __init__(self, bottom: bool) -> None:
        self.bottom = bottom

    def __set_name__(self, owner: type[Widget], name: str) -> None:
        self._internal_name = f"_{name}"  # where Widget keeps it: the styles cache reads it

    def __set__(self, obj: Widget, title: Text | ContentType | None) -> None:
        if isinstance(title, Text):
            title = Content.from_rich_text(title)
        new = None if title is None else obj.render_str(title).expand_tabs(4).split()[0]
        old = getattr(obj, self._internal_name, None)
        # by markup: Content's == compares the plain text alone, a new style would be lost
        if (None if new is None else new.markup) == (None if old is None else old.markup):
            return
        setattr(obj, self._internal_name, new)
        width, height = obj.outer_size
        if height < 2:
            obj.refresh()  # not laid out yet, or no room for two border lines
            return
        # refresh() takes regions inside the border: the border's lines are outside them
        x, y = obj.content_offset
        obj.refresh(Region(-x, (height - 1 if self.bottom else 0) - y, width, 1))

    def __get__(self, obj: Widget, objtype: type[Widget] | None = None) -> str | None:
        title = getattr(obj, self._internal_name, None)
        return None if title is None else title.markup


class Pane(Vertical):
    border_title = EdgeTitle(bottom=False)  # type: ignore[assignment]
    border_subtitle = EdgeTitle(bottom=True)  # type: ignore[assignment]


__all__ = ["EdgeTitle", "Pane"]
