"""Take the Workloads filter's text in an Input whose growing text asks for no layout of the screen.

Textual's Input keeps its text's width as its virtual size, a reactive that asks for a layout
on change, so each character typed would reflow the whole screen (guarded by
benchmarks/fleet.py). This box's size is fixed by the stylesheet (one line, the pane's
width) and it shows no scrollbar, so a layout has nothing to move: a repaint of the box does.
Its horizontal scroll still follows the cursor, which reads the virtual size when it moves.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


class FilterBox(Input):
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)


__all__ = ["FilterBox"]
