"""The Workloads pane: one line per container, drawn with the Line API.

Only the visible lines are drawn, and a line is drawn again only when what it shows changed,
so thousands of containers scroll and update smoothly. Filtering and sorting rebuild a list of
row keys, not widgets. The list keeps its own top line rather than being a ScrollView: moving a
page is then a redraw of this widget, not a layout pass over the screen.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from probetui.prober.status import PodSnapshot
from probetui.timeline.store import ContainerKey
from probetui.ui import glyphs as g
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.messages import ContainerSelected
from probetui.ui.widgets.rows import (
    PROBE_ORDER,
    SORTS,
    Columns,
    Row,
    build_rows,
    columns,
    header_text,
    label,
    pod_state,
    problem_score,
)


class WorkloadHeader(Static):
    """Column names above the list, laid out as the list lays out its lines."""

    def __init__(self, workloads: WorkloadList, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workloads = workloads

    def render(self) -> Text:
        width = self.size.width - 1  # as the list: its last column is the scrollbar's
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(header_text(columns(width, self.workloads.ns_len)))
        return text


class WorkloadList(Widget, can_focus=True, inherit_bindings=False):
    """Pods and containers; the cursor selects a container for the panes on the right."""

    BINDINGS: ClassVar[list[BindingType]] = keys.WORKLOADS
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "workloads--cursor",
        "workloads--cursor-blurred",
        "workloads--pod",
        "workloads--scrollbar",
    }
    DEFAULT_CSS = """
    WorkloadList {
        overflow: hidden;
    }
    WorkloadList > .workloads--cursor { background: $accent 60%; text-style: bold; }
    WorkloadList > .workloads--cursor-blurred { background: $accent 25%; }
    WorkloadList > .workloads--pod { text-style: bold; }
    WorkloadList > .workloads--scrollbar { color: $text-muted; }
    """

    sort = reactive("name", init=False)

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self.rows: list[Row] = []
        self.index: dict[ContainerKey, int] = {}
        self.cursor = -1
        self.top = 0  # the first row shown
        self.filter = ""
        self.namespaces = 1
        self.ns_len = 0  # the namespace column's natural width; 0: no column
        self.containers = 0
        runtime = ctx.controls.runtime
        # -A, or pods of several namespaces (a local file may hold them): the column says which
        self.all_namespaces = runtime.all_namespaces
        if runtime.observes_kubelet:
            # in front of a cluster the question is what is wrong, so that comes first
            self.set_reactive(WorkloadList.sort, "problems")
        # strips by what a line shows (not by store version: most events change nothing shown)
        self._cache: LRUCache[tuple, Strip] = LRUCache(4096)
        self._shown: dict[ContainerKey, tuple] = {}

    # -- the row list ---------------------------------------------------------------------

    @property
    def selected(self) -> ContainerKey | None:
        if 0 <= self.cursor < len(self.rows):
            return self.rows[self.cursor].key
        return None

    def rebuild(self) -> None:
        """Recompute the rows from the pods table, keeping the cursor on its container."""
        store = self.ctx.store
        keep = self.selected
        namespaces = {e.pod.namespace for e in store.pods.values()}
        self.namespaces = len(namespaces)
        show_ns = self.all_namespaces or self.namespaces > 1
        self.ns_len = max(map(len, namespaces), default=0) if show_ns else 0
        self.rows = build_rows(store, self.filter.lower().split(), self.sort)
        self.index = {row.key: i for i, row in enumerate(self.rows) if row.key is not None}
        self.containers = len(self.index)
        self.top = min(self.top, max(0, len(self.rows) - self.size.height))
        cursor = self.index.get(keep) if keep is not None else None
        if cursor is None:
            cursor = self._next_container(0, 1)
        self._set_cursor(cursor, announce=True)
        self._shown.clear()
        self.refresh()

    def refresh_keys(self, keys: list[ContainerKey]) -> None:
        """Redraw the visible lines of these containers (and their headings) whose look changed."""
        top = self.top
        bottom = top + self.size.height
        pods = set()
        for key in keys:
            y = self.index.get(key)
            if y is None or not top <= y < bottom:
                continue
            sig = self._signature(self.rows[y])
            if self._shown.get(key) != sig:
                self._shown[key] = sig
                self.refresh_line(y)
                pods.add(key.pod_uid)
        if pods:
            for y in range(top, min(bottom, len(self.rows))):
                row = self.rows[y]
                if row.container is None and row.pod_uid in pods:
                    self.refresh_line(y)

    def _signature(self, row: Row) -> tuple:
        """Everything a line shows, cheap to compute: equal signatures draw equal lines."""
        entry = self.ctx.store.pods.get(row.pod_uid)
        if entry is None:
            return ()
        if row.container is None:
            pod = entry.pod
            return (pod.name, pod.namespace, entry.status.phase, pod.deletion_timestamp)
        pod = entry.pod
        cs = entry.status.lookup(row.container)
        history = self.ctx.store.containers.get(ContainerKey(row.pod_uid, row.container))
        published = divergences = None
        if history is not None:
            published = tuple(history.published(pt) for pt in PROBE_ORDER)
            divergences = history.divergences > 0
        state = (cs.ready, cs.started, cs.restart_count) if cs is not None else None
        phase = (entry.status.phase, pod.deletion_timestamp)
        return (row, self.ns_len, id(pod), phase, state, published, divergences)

    def set_filter(self, text: str) -> None:
        self.filter = text
        self.rebuild()

    def watch_sort(self) -> None:
        self.rebuild()

    # -- the cursor -----------------------------------------------------------------------

    def is_problem(self, i: int) -> bool:
        row = self.rows[i]
        entry = self.ctx.store.pods.get(row.pod_uid)
        if entry is None or row.key is None:
            return False
        c = entry.pod.container(row.key.container)
        history = self.ctx.store.containers.get(row.key)
        return c is not None and problem_score(entry, c, history) > 0

    def next_problem(self, step: int) -> bool:
        """Move to the next (step 1) or previous (-1) container with something wrong, round
        the end of the list; False where there is none."""
        n = len(self.rows)
        start = self.cursor if self.cursor >= 0 else (-1 if step > 0 else 0)
        for k in range(1, n + 1):
            i = (start + step * k) % n
            if self.rows[i].container is not None and self.is_problem(i):
                self._set_cursor(i)
                return True
        return False

    def _next_container(self, start: int, step: int) -> int:
        i = start
        while 0 <= i < len(self.rows):
            if self.rows[i].container is not None:
                return i
            i += step
        return -1

    def _set_cursor(self, cursor: int, announce: bool = False) -> None:
        old = self.cursor
        if cursor == -1 and self.rows:
            cursor = self._next_container(0, 1)
        changed = self.rows[cursor].key if 0 <= cursor < len(self.rows) else None
        before = self.rows[old].key if 0 <= old < len(self.rows) else None
        self.cursor = cursor
        if old != cursor:
            if 0 <= old < len(self.rows):
                self.refresh_line(old)
            if cursor >= 0:
                self.refresh_line(cursor)
        if cursor >= 0:
            self._scroll_to_cursor()
        if announce or changed != before:
            self.post_message(ContainerSelected(changed))

    def _scroll_to_cursor(self) -> None:
        y = self.cursor
        height = max(1, self.size.height)
        # show a heading line above its first container too
        want_top = y - 1 if y > 0 and self.rows[y - 1].container is None else y
        if want_top < self.top:
            self.scroll_rows(want_top - self.top)
        elif y >= self.top + height:
            self.scroll_rows(y - height + 1 - self.top)

    def refresh_line(self, row: int) -> None:
        """Redraw one row, if it is in view."""
        y = row - self.top
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def scroll_rows(self, delta: int) -> None:
        top = min(max(0, self.top + delta), max(0, len(self.rows) - self.size.height))
        if top != self.top:
            self.top = top
            self.refresh()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.scroll_rows(3)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.scroll_rows(-3)

    def select(self, key: ContainerKey) -> bool:
        y = self.index.get(key)
        if y is None:
            return False
        self._set_cursor(y)
        return True

    def action_cursor(self, step: int) -> None:
        if not self.rows:
            return
        start = self.cursor + step if self.cursor >= 0 else 0
        nxt = self._next_container(start, step)
        if nxt != -1:
            self._set_cursor(nxt)

    def action_page(self, direction: int) -> None:
        if not self.rows:
            return
        target = min(
            max(0, self.cursor + direction * max(1, self.size.height - 1)), len(self.rows) - 1
        )
        nxt = self._next_container(target, direction)
        if nxt == -1:
            nxt = self._next_container(target, -direction)
        self._set_cursor(nxt)

    def action_jump(self, where: int) -> None:
        if self.rows:
            self._set_cursor(
                self._next_container(0, 1)
                if where == 0
                else self._next_container(len(self.rows) - 1, -1)
            )

    def on_click(self, event: events.Click) -> None:
        y = event.y + self.top
        if 0 <= y < len(self.rows):
            nxt = self._next_container(y, 1)
            if nxt != -1:
                self._set_cursor(nxt)

    def on_focus(self) -> None:
        if 0 <= self.cursor < len(self.rows):
            self.refresh_line(self.cursor)

    def on_blur(self) -> None:
        self.on_focus()

    def on_resize(self) -> None:
        self.top = min(self.top, max(0, len(self.rows) - self.size.height))
        if self.cursor >= 0:
            self._scroll_to_cursor()

    # -- drawing --------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        base = self.rich_style
        i = y + self.top
        if i >= len(self.rows) or self.size.width <= 1:
            return Strip.blank(self.size.width, base)
        # the last column is the scrollbar's, drawn or not, so columns line up either way
        width = self.size.width - 1
        bar = self._scrollbar(y) or Segment(" ", base)
        row = self.rows[i]
        entry = self.ctx.store.pods.get(row.pod_uid)
        if entry is None:
            return Strip.blank(self.size.width, base)
        selected = i == self.cursor
        sig = self._signature(row)
        if row.key is not None:
            self._shown[row.key] = sig
        cache_key = (sig, width, selected, selected and self.has_focus)
        strip = self._cache.get(cache_key)
        if strip is None:
            text = self._container_text(entry, row, width, selected)
            style = base
            if row.container is None:
                style = base + self.get_component_rich_style("workloads--pod")
            if selected:
                name = "workloads--cursor" if self.has_focus else "workloads--cursor-blurred"
                style = base + self.get_component_rich_style(name)
            segments = [
                Segment(s.text, style + s.style if s.style else style)
                for s in text.render(self.app.console)
            ]
            strip = Strip(segments).crop_extend(0, width, style)
            self._cache[cache_key] = strip
        return Strip.join([strip, Strip([bar], 1)])

    def _scrollbar(self, y: int) -> Segment | None:
        """The last column, where the rows do not fit: a thumb shows where the view is."""
        height, total = self.size.height, len(self.rows)
        if total <= height or height <= 0:
            return None
        size = max(1, height * height // total)
        start = (height - size) * self.top // max(1, total - height)
        style = self.get_component_rich_style("workloads--scrollbar")
        return Segment("┃" if start <= y < start + size else "│", style)

    def _container_text(self, entry: PodSnapshot, row: Row, width: int, selected: bool) -> Text:
        cols: Columns = columns(width, self.ns_len)
        pod = entry.pod
        c = pod.container(row.container or "")
        cs = entry.status.lookup(row.container or "")
        history = self.ctx.store.containers.get(ContainerKey(row.pod_uid, row.container or ""))
        text = Text(no_wrap=True)
        # ▸ marks the cursor for monochrome terminals, where the highlight may not show
        text.append("▸" if selected else " ")
        text.append(g.SIDECAR if c is not None and c.is_restartable_init else " ")
        if cols.ns:
            text.append(label(pod.namespace, None, cols.ns).ljust(cols.ns) + " ", style=g.DIM)
        several = len(entry.shown_containers()) > 1
        state = pod_state(entry)
        room = cols.name
        if state and room >= len(state) + 9:
            room -= len(state) + 1
        else:
            state = ""
        name = label(pod.name, row.container if several else None, room)
        text.append(name)
        if state:
            text.append(" " + state, style=g.WARN)
        text.append(" " * (cols.name - len(name) - (len(state) + 1 if state else 0)))
        ready = cs is not None and cs.ready
        started = cs is not None and bool(cs.started)
        gap = " " if cols.narrow else "  "
        text.append(gap)
        text.append(g.YES if ready else g.NO, style=g.OK if ready else g.BAD)
        text.append(gap)
        text.append(g.YES if started else g.NO, style=g.OK if started else g.WARN)
        text.append(gap)
        for pt in PROBE_ORDER:
            if not cols.narrow:
                text.append(pt.value[0])
            if c is None or c.probe(pt) is None:
                text.append(g.NO_PROBE, style=g.DIM)
            else:
                published = history.published(pt) if history is not None else None
                if published is None:
                    text.append(g.NOT_YET, style=g.DIM)
                else:
                    text.append(g.RESULT_GLYPH[published], style=g.RESULT_STYLE[published])
            if not cols.narrow:
                text.append(" ")
        restarts = cs.restart_count if cs is not None else 0
        if restarts:
            mark = f"{g.RESTARTS}{restarts}" if restarts < 1000 else f"{g.RESTARTS}999+"
            text.append(mark.rjust(4), style=g.WARN)
        else:
            text.append("    ")
        if history is not None and history.divergences:
            text.append(f" {g.DIVERGE}", style="magenta")
        return text

    def row_region(self, key: ContainerKey) -> Region | None:
        y = self.index.get(key)
        return None if y is None else Region(0, y, self.size.width, 1)


__all__ = ["SORTS", "ContainerSelected", "Row", "WorkloadHeader", "WorkloadList", "problem_score"]
