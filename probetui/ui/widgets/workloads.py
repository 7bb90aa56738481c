"""Draw one line per container with the Line API: the Workloads pane.

Only the visible lines are drawn, and a line is drawn again only when what it shows changed,
so thousands of containers scroll and update smoothly. Filtering and sorting ask a `RowIndex`
kept up to date from one listing to the next, which looks again only at the pods that changed,
for a list of row keys, not widgets. The list keeps its own top line rather than being a ScrollView: moving a
page is then a redraw of this widget, not a layout pass over the screen.

`WorkloadList` is one widget: its cursor, folding, keys and drawn lines all read and move the
same view state (the listed rows, the top line, what is folded); the listing itself lives
apart, in `rows.py` and `triage/`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from probetui.keys import ContainerKey
from probetui.prober.status import PodSnapshot
from probetui.triage.groups import (
    PROBE_ORDER,
    group_id,
    problem_score,
    recent_restarts,
    summarize,
    worst_member,
)
from probetui.triage.probes import workload_probes
from probetui.ui import glyphs as g
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.messages import ContainerSelected
from probetui.ui.textual_compat import QuietFocusWidget
from probetui.ui.widgets.groups import group_text
from probetui.ui.widgets.rows import (
    SORTS,
    Columns,
    Row,
    RowIndex,
    columns,
    header_text,
    label,
    pod_state,
)


class WorkloadHeader(Static):
    """Shows column names above the list, laid out as the list lays out its lines."""

    def __init__(self, workloads: WorkloadList, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workloads = workloads

    def render(self) -> Text:
        width = self.size.width - 1  # as the list: its last column is the scrollbar's
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(header_text(columns(width, self.workloads.ns_len)))
        return text


class WorkloadList(QuietFocusWidget, Widget, can_focus=True, inherit_bindings=False):
    """Lists pods and containers; the cursor selects a container for the panes on the right."""

    BINDINGS: ClassVar[list[BindingType]] = keys.WORKLOADS
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "workloads--cursor",
        "workloads--cursor-blurred",
        "workloads--group",
        "workloads--scrollbar",
    }
    DEFAULT_CSS = """
    WorkloadList {
        overflow: hidden;
    }
    WorkloadList > .workloads--cursor { background: $accent 60%; text-style: bold; }
    WorkloadList > .workloads--cursor-blurred { background: $accent 25%; }
    WorkloadList > .workloads--group { text-style: bold; }
    WorkloadList > .workloads--scrollbar { color: $text-muted; }
    """

    sort = reactive("name", init=False)

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self.rows: list[Row] = []
        self._index: dict[ContainerKey, int] | None = {}  # None: not known since the rebuild
        self.cursor = -1
        self.top = 0  # the first row shown
        self.filter = ""
        self.namespaces = 1
        self.ns_len = 0  # the namespace column's natural width; 0: no column
        self.containers = 0
        self.pods = 0
        self.members: dict[str, list[str]] = {}  # group id -> its pods
        self.collapsed: set[str] = set()
        runtime = ctx.controls.runtime
        # -A, or pods of several namespaces (a local file may hold them): the column says which
        self.all_namespaces = runtime.all_namespaces
        if runtime.observes_kubelet:
            # in front of a cluster the question is what is wrong, so that comes first
            self.set_reactive(WorkloadList.sort, "problems")
        # strips by what a line shows (not by store version: most events change nothing shown)
        self._cache: LRUCache[tuple, Strip] = LRUCache(4096)
        self._shown: dict[ContainerKey | str, tuple] = {}
        # (the widget's, the scrollbar's) while a pass draws its lines (`render_lines`)
        self._styles: tuple[Style, Style] | None = None
        self._layout = -1  # the store's layout_version at the last rebuild
        self._rows = RowIndex(ctx.store)
        self._namespaces: tuple[int, set[str]] = (-1, set())  # by the store's layout_version
        # the screen's handler, called at once instead of posting ContainerSelected: the
        # message reaches the screen three hops later, by when the cursor's two lines have
        # had a frame of their own and the panes wait for the next (Textual draws at most
        # 60 frames a second; guarded by benchmarks/ui.py). One frame then draws the cursor
        # and the panes.
        self.on_select: Callable[[ContainerSelected], None] | None = None

    # -- the row list ---------------------------------------------------------------------

    @property
    def index(self) -> dict[ContainerKey, int]:
        """Map each container to its row; made when first asked after a rebuild, since a
        keystroke in the filter needs none of it."""
        if self._index is None:
            self._index = {
                ContainerKey(row.pod_uid, row.container): i
                for i, row in enumerate(self.rows)
                if row.container is not None
            }
        return self._index

    def _find(self, row: Row) -> int | None:
        """Tell where a row is, without the index: a scan in C of the list."""
        try:
            return self.rows.index(row)
        except ValueError:
            return None

    @property
    def selected(self) -> ContainerKey | None:
        """Return the cursor's container; on a workload's line, its replica most in need of a
        look."""
        return self._row_key(self.cursor)

    # not "_key_<name>": Textual would take that for the handler of the key <name>
    def shown_pods(self) -> set[str]:
        """Return the pods of the lines on the screen now."""
        rows = self.rows[self.top : self.top + max(1, self.size.height)]
        return {row.pod_uid for row in rows if row.pod_uid}

    def selection_at(self, i: int) -> ContainerKey | None:
        """Return the container the cursor would select on line `i` (None past either end)."""
        return self._row_key(i)

    def _row_key(self, i: int) -> ContainerKey | None:
        if 0 <= i < len(self.rows):
            row = self.rows[i]
            if row.group:
                return worst_member(self.ctx.store, self.members.get(row.group, []))
            return row.key
        return None

    def rebuild(self) -> None:
        """Recompute the rows from the pods table, keeping the cursor on its container."""
        store = self.ctx.store
        keep = self.selected
        on = self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None
        height = max(1, self.size.height)
        # where the cursor stands in the view, kept across a re-sort: a workload that moved
        # must not drag the eye to the edge (re-sorts come every few seconds as problems come)
        offset = min(max(self.cursor - self.top, 0), height - 1) if on is not None else None
        before = (self.top, len(self.rows), self.ns_len)
        view = self.rows[self.top : self.top + height]
        if self._namespaces[0] != store.layout_version:
            # a pod's namespace is for good: only pods coming and going change the set
            self._namespaces = (
                store.layout_version,
                {e.pod.namespace for e in store.pods.values()},
            )
        namespaces = self._namespaces[1]
        self.namespaces = len(namespaces)
        show_ns = self.all_namespaces or self.namespaces > 1
        self.ns_len = max(map(len, namespaces), default=0) if show_ns else 0
        listing = self._rows.listing(self.filter.lower().split(), self.sort, self.collapsed)
        self.rows, self.members = listing.rows, listing.members
        self.pods, self.containers = listing.pods, listing.containers
        self._index = None
        self.top = min(self.top, max(0, len(self.rows) - self.size.height))
        cursor = None
        if on is not None and on.group:
            cursor = self._find(on)
        elif keep is not None:
            cursor = self._find(Row(keep.pod_uid, keep.container))
            if cursor is None and keep.pod_uid in store.pods:
                # its workload is collapsed: the cursor goes to the workload's line
                gid = group_id(store.pods[keep.pod_uid].pod)
                cursor = self._find(Row("", None, gid)) if gid in self.members else None
        if cursor is None:
            cursor = self._row_at(0)
        elif offset is not None:
            self.top = max(0, min(cursor - offset, len(self.rows) - height))
        # a re-sort or a filter keeps the pods' specs: the panes need no new showing unless the
        # selection moved (the right pane's redraw is most of a key's cost at 2,000 pods)
        layout, group = store.layout_version, on.group if on is not None else ""
        moved = self._row_key(cursor) != keep or self._row_group(cursor) != group
        self._set_cursor(cursor, announce=moved or layout != self._layout, rebuilt=True)
        self._layout = layout
        self._repaint(before, view)

    def _repaint(self, before: tuple[int, int, int], view: list[Row]) -> None:
        """Redraw what a rebuild changed in view: the lines whose row is another, and the
        workloads' lines (their counts follow the filter); everything where the view moved,
        the list's length changed (the scrollbar with it) or the columns did. A keystroke of a
        filter that lets the same pods through then redraws a few lines, not the screen's."""
        if before != (self.top, len(self.rows), self.ns_len):
            self._shown.clear()
            self.refresh()
            return
        width = self.size.width
        for y, row in enumerate(self.rows[self.top : self.top + len(view)]):
            if row.group or row != view[y]:
                self.refresh(Region(0, y, width, 1))

    def catch_up(self, changed: list[ContainerKey], since: int) -> None:
        """Keep the row index up with the store between listings (`RowIndex.catch_up`)."""
        self._rows.catch_up(changed, since)

    def out_of_order(self) -> bool:
        """Tell whether what was caught up since the last rebuild moved a pod in the list's
        order."""
        return self._rows.moved(self.sort)

    def refresh_keys(self, keys: list[ContainerKey]) -> None:
        """Redraw the visible lines of these containers (and their headings) whose look changed."""
        top = self.top
        bottom = min(top + self.size.height, len(self.rows))
        # the lines in view, not an index of all: a poll's cost follows the screen's height
        shown = {self.rows[y]: y for y in range(top, bottom)}
        for key in keys:
            y = shown.get(Row(key.pod_uid, key.container))
            if y is None:
                continue
            sig = self._signature(self.rows[y])
            if self._shown.get(key) != sig:
                self._shown[key] = sig
                self.refresh_line(y)
        if not self.members:
            return
        pods = self.ctx.store.pods
        touched = {group_id(pods[k.pod_uid].pod) for k in keys if k.pod_uid in pods}
        touched.discard("")
        if touched:
            for y in range(top, bottom):
                row = self.rows[y]
                if row.group in touched:
                    sig = self._signature(row)
                    if self._shown.get(row.group) != sig:
                        self._shown[row.group] = sig
                        self.refresh_line(y)

    def _signature(self, row: Row) -> tuple:
        """Everything a line shows, cheap to compute: equal signatures draw equal lines."""
        if row.group:
            members = self.members.get(row.group, [])
            summary = summarize(self.ctx.store, members)
            recent = recent_restarts(self.ctx.store, members, self.ctx.now())
            return (row, self.ns_len, row.group in self.collapsed, recent, summary)
        entry = self.ctx.store.pods.get(row.pod_uid)
        if entry is None:
            return ()
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
        if text == self.filter:
            return  # escape clears the box, whose change then says the same again
        self.filter = text
        self.rebuild()

    def watch_sort(self) -> None:
        self.rebuild()

    # -- the cursor -----------------------------------------------------------------------

    def is_problem(self, i: int) -> bool:
        row = self.rows[i]
        if row.group:
            key = worst_member(self.ctx.store, self.members.get(row.group, []))
            return key is not None and self._score(key) > 0
        return row.key is not None and self._score(row.key) > 0

    def _score(self, key: ContainerKey) -> int:
        entry = self.ctx.store.pods.get(key.pod_uid)
        c = entry.pod.container(key.container) if entry is not None else None
        if entry is None or c is None:
            return 0
        return problem_score(entry, c, self.ctx.store.containers.get(key))

    def next_problem(self, step: int) -> bool:
        """Move to the next (step 1) or previous (-1) container with something wrong, round
        the end of the list; False where there is none."""
        n = len(self.rows)
        start = self.cursor if self.cursor >= 0 else (-1 if step > 0 else 0)
        for k in range(1, n + 1):
            i = (start + step * k) % n
            if self.is_problem(i):
                self._set_cursor(i)
                return True
        return False

    def _row_at(self, i: int) -> int:
        """Return `i` when it is a line of the list, else -1 (past either end).

        Every line is a stop for the cursor: a workload's line shows its replica most in need
        of a look, so no line is skipped on the way.
        """
        return i if 0 <= i < len(self.rows) else -1

    @property
    def selected_group(self) -> str:
        """Return the workload whose line the cursor is on ("" on a container's line)."""
        return self._row_group(self.cursor)

    def _row_group(self, i: int) -> str:
        return self.rows[i].group if 0 <= i < len(self.rows) else ""

    def _set_cursor(self, cursor: int, announce: bool = False, rebuilt: bool = False) -> None:
        old = self.cursor
        if cursor == -1 and self.rows:
            cursor = self._row_at(0)
        before = self.selected if old == cursor else self._row_key(old)
        group_before = self._row_group(old)
        self.cursor = cursor
        changed = self.selected
        group = self.selected_group
        if old != cursor:
            if 0 <= old < len(self.rows):
                self.refresh_line(old)
            if cursor >= 0:
                self.refresh_line(cursor)
        if cursor >= 0:
            self._scroll_to_cursor()
        if announce or changed != before or group != group_before:
            message = ContainerSelected(changed, group, rebuilt)
            if self.on_select is not None:
                self.on_select(message)
            else:
                self.post_message(message)

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
        entry = self.ctx.store.pods.get(key.pod_uid)
        gid = group_id(entry.pod) if entry is not None else ""
        if key not in self.index and gid in self.collapsed:
            self.collapsed.discard(gid)
            self.rebuild()
        y = self.index.get(key)
        if y is None:
            return False
        self._set_cursor(y)
        return True

    def action_cursor(self, step: int) -> None:
        if not self.rows:
            return
        start = self.cursor + step if self.cursor >= 0 else 0
        nxt = self._row_at(start)
        if nxt != -1:
            self._set_cursor(nxt)

    def action_page(self, direction: int) -> None:
        if not self.rows:
            return
        # clamped to the list: a page past either end stops on its first or last line
        target = min(
            max(0, self.cursor + direction * max(1, self.size.height - 1)), len(self.rows) - 1
        )
        self._set_cursor(target)

    def _cursor_group(self) -> str:
        """Return the workload of the cursor's line: its own on a workload's line, else its
        pod's."""
        if not 0 <= self.cursor < len(self.rows):
            return ""
        row = self.rows[self.cursor]
        if row.group:
            return row.group
        entry = self.ctx.store.pods.get(row.pod_uid)
        return group_id(entry.pod) if entry is not None else ""

    def action_fold(self) -> None:
        """Collapse the cursor's workload to its line, or expand it."""
        gid = self._cursor_group()
        if not gid:
            return
        if gid in self.collapsed:
            self.collapsed.discard(gid)
        else:
            self.collapsed.add(gid)
            # the cursor's container goes out of the list: its workload's line keeps the place
            self.cursor = self.rows.index(Row("", None, gid))
        self.rebuild()

    def action_fold_all(self) -> None:
        """Collapse every workload (the overview of hundreds of pods), or expand them all."""
        everything = set(self.members)
        if everything <= self.collapsed:
            self.collapsed.clear()
        else:
            self.collapsed = everything
            gid = self._cursor_group()
            if gid:
                # the cursor's container goes out of the list: its workload's line keeps the place
                self.cursor = self.rows.index(Row("", None, gid))
        self.rebuild()

    def action_worst(self) -> None:
        """To the worst replica of the cursor's workload: its container's line, unfolded."""
        gid = self._cursor_group()
        # the probe view's worst (a slow replica counts there), so `w` goes where it says
        view = (
            workload_probes(self.ctx.store, gid, self.members.get(gid, []), self.ctx.now())
            if gid
            else None
        )
        key = view.worst if view is not None else None
        if key is None or not self.select(key):
            self.app.bell()

    def action_jump(self, where: int) -> None:
        if self.rows:
            self._set_cursor(0 if where == 0 else len(self.rows) - 1)

    def on_click(self, event: events.Click) -> None:
        y = event.y + self.top
        if 0 <= y < len(self.rows):
            self._set_cursor(y)

    def focus_repaint(self) -> None:
        """Repaint the cursor's line: the one line whose look the focus changes."""
        if 0 <= self.cursor < len(self.rows):
            self.refresh_line(self.cursor)

    def on_resize(self) -> None:
        self.top = min(self.top, max(0, len(self.rows) - self.size.height))
        if self.cursor >= 0:
            self._scroll_to_cursor()

    # -- drawing --------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        # the styles every line is drawn with, worked out once for the lines of this pass:
        # `rich_style` walks the widget's ancestors, and each line would ask for it and for the
        # scrollbar's, much of a line's cost where the line itself comes from the cache
        self._styles = self._line_styles()
        try:
            return super().render_lines(crop)
        finally:
            self._styles = None

    def _line_styles(self) -> tuple[Style, Style]:
        return self.rich_style, self.get_component_rich_style("workloads--scrollbar")

    def render_line(self, y: int) -> Strip:
        styles = self._styles or self._line_styles()
        base = styles[0]
        i = y + self.top
        if i >= len(self.rows) or self.size.width <= 1:
            return Strip.blank(self.size.width, base)
        # the last column is the scrollbar's, drawn or not, so columns line up either way
        width = self.size.width - 1
        bar = self._scrollbar(y, styles[1]) or Segment(" ", base)
        row = self.rows[i]
        entry = self.ctx.store.pods.get(row.pod_uid)
        if entry is None and not row.group:
            return Strip.blank(self.size.width, base)
        selected = i == self.cursor
        sig = self._signature(row)
        self._shown[row.key or row.group] = sig
        cache_key = (sig, width, selected, selected and self.has_focus)
        strip = self._cache.get(cache_key)
        if strip is None:
            cols = columns(width, self.ns_len)
            if entry is None:
                text = group_text(row.group, sig[-1], cols, sig[2], selected, sig[3])
            else:
                text = self._container_text(entry, row, cols, selected)
            style = base
            if row.group:
                style = base + self.get_component_rich_style("workloads--group")
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

    def _scrollbar(self, y: int, style: Style) -> Segment | None:
        """Return the last column, where the rows do not fit: a thumb shows where the view is."""
        height, total = self.size.height, len(self.rows)
        if total <= height or height <= 0:
            return None
        size = max(1, height * height // total)
        start = (height - size) * self.top // max(1, total - height)
        return Segment("┃" if start <= y < start + size else "│", style)

    def _container_text(self, entry: PodSnapshot, row: Row, cols: Columns, selected: bool) -> Text:
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


__all__ = ["SORTS", "ContainerSelected", "Row", "WorkloadHeader", "WorkloadList"]
