"""Draw one lane per probe type and one for the kubelet, on a shared time axis: the Timeline pane.

One cell is `scale` seconds. A cell shows the most alarming attempt that falls in it, or ▼/▲
where the published result changed; the kubelet lane shows starts, exits, kills, back-offs and
Ready changes, with a short label where there is room.
"""

from __future__ import annotations

from rich.text import Text

from probetui.keys import ContainerKey
from probetui.prober.results import ResultValue
from probetui.spec.model import ProbeType
from probetui.timeline.events import EventType
from probetui.timeline.store import ContainerHistory, Mark
from probetui.ui import glyphs as g
from probetui.ui.context import UIContext
from probetui.ui.describe import duration
from probetui.ui.widgets.lines import LineCached
from probetui.ui.widgets.pane import EdgeTitle

ZOOMS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
DEFAULT_ZOOM = 2  # 1 s a cell
LANES = (ProbeType.STARTUP, ProbeType.READINESS, ProbeType.LIVENESS)
LABEL_W = 12
TICKS = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400)


def mark_look(m: Mark) -> tuple[str, str, str]:
    """(glyph, style, label) of a kubelet-lane mark."""
    f = m.fields
    if m.type == EventType.CONTAINER_STARTED:
        n = f.get("restartCount") or 0
        return g.START, g.INFO, f"start #{n}" if n else "start"
    if m.type == EventType.CONTAINER_EXITED:
        code = f.get("exitCode")
        return g.EXIT, g.BAD if code else g.DIM, f"exit {code}" if code is not None else "exit"
    if m.type == EventType.KILLING:
        return g.KILL, g.BAD, f"kill ({m.probe})" if m.probe else "kill"
    if m.type == EventType.BACK_OFF:
        delay = f.get("delay")
        return g.BACKOFF, g.WARN, f"back-off {duration(float(delay))}" if delay else "back-off"
    if m.type == EventType.READY_CHANGED:
        if f.get("ready"):
            return g.CHANGED_UP, g.OK, "Ready"
        return g.CHANGED_DOWN, g.BAD, "NotReady"
    if m.type == EventType.STARTED_CHANGED:
        if f.get("started"):
            return g.CHANGED_UP, g.OK, "Started"
        return g.CHANGED_DOWN, g.WARN, "NotStarted"
    if m.type == EventType.DIVERGENCE:
        return g.DIVERGE, "magenta", "differs"
    if m.type in (EventType.UNHEALTHY, EventType.PROBE_WARNING):
        return g.REPORT, g.WARN, ""
    return "•", g.DIM, m.type


def tick_step(scale: float, min_cells: int = 12) -> float:
    for step in TICKS:
        if step / scale >= min_cells:
            return float(step)
    return float(TICKS[-1])


class Timeline(LineCached):
    """Draws lanes for the selected container; follows now, or stays where the user scrolled."""

    DEFAULT_CSS = """
    Timeline { height: 7; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    border_title = EdgeTitle(bottom=False)  # type: ignore[assignment]
    border_subtitle = EdgeTitle(bottom=True)  # type: ignore[assignment]

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self.key: ContainerKey | None = None
        self.probe = ProbeType.READINESS
        self.zoom = DEFAULT_ZOOM
        self.follow = True
        self.end: float | None = None  # right edge when not following
        self._drawn_col: int | None = None

    # -- state ----------------------------------------------------------------------------

    @property
    def scale(self) -> float:
        return ZOOMS[self.zoom]

    @property
    def cells(self) -> int:
        return max(1, self.size.width - LABEL_W)

    def right_edge(self) -> float:
        return self.ctx.now() if self.follow or self.end is None else self.end

    def show(self, key: ContainerKey | None, probe: ProbeType) -> None:
        if (key, probe) == (self.key, self.probe):
            # the same selection again (a re-sort keeps the cursor's container): what changed
            self.update()
            return
        self.key, self.probe = key, probe
        self.refresh()

    def set_follow(self, follow: bool) -> None:
        # staying put pins the right edge to this moment, as scrolling back pins it earlier:
        # an edge left unset went on moving with now while the title said where it stopped
        self.end = None if follow else self.right_edge()
        self.follow = follow
        self._title()
        self.refresh()

    @property
    def frozen_at(self) -> float | None:
        """Return the moment the view shows, when it stays put: what was published by then."""
        return None if self.follow else self.end

    def scroll_by(self, cells: int) -> None:
        """Move the window `cells` cells later (positive) or earlier; reaching now follows."""
        now = self.ctx.now()
        end = self.right_edge() + cells * self.scale
        if end >= now:
            self.set_follow(True)
            return
        oldest = self._oldest()
        # with a recording behind the rings, history goes back as far as it does
        if oldest is not None and self.ctx.archive is None:
            end = max(end, oldest + self.cells * self.scale / 4)
        self.follow, self.end = False, end
        self._title()
        self.refresh()

    def zoom_by(self, step: int) -> None:
        self.zoom = min(max(0, self.zoom + step), len(ZOOMS) - 1)
        self._title()
        self.refresh()

    def update(self) -> None:
        """The container's history changed: redraw the lanes that look different (an attempt
        of one probe changes its lane, not the other three)."""
        if self._lines is None:
            return  # drawn whole in the next frame anyway
        self.show_lines(self.render())

    def tick(self) -> None:
        """Called on the UI timer: in follow mode, redraw when time has moved a cell."""
        if not self.follow:
            return
        col = int(self.ctx.now() // self.scale)
        if col != self._drawn_col:
            self.update()

    def on_mount(self) -> None:
        self._title()

    def _title(self) -> None:
        where = "follow" if self.follow else f"at {self.ctx.clock(self.right_edge())}, f: follow"
        self.border_title = f"Timeline ({where}) · {duration(self.scale)}/cell"

    def _history(self) -> ContainerHistory | None:
        return self.ctx.store.containers.get(self.key) if self.key is not None else None

    def _oldest(self) -> float | None:
        history = self._history()
        if history is None:
            return None
        times = [h.oldest_t for h in history.probes.values() if h.oldest_t is not None]
        if history.marks:
            times.append(history.marks[0].t)
        return min(times) if times else None

    # -- drawing --------------------------------------------------------------------------

    def render(self) -> Text:
        now = self.ctx.now()
        end = now if self.follow or self.end is None else self.end
        scale, cells = self.scale, self.cells
        # snap the window to whole cells so cells do not shimmer as time moves
        end = (int(end // scale) + 1) * scale
        start = end - cells * scale
        self._drawn_col = int(now // scale)
        lines = [self._axis(start, end, now, cells, scale)]
        history = self._history()
        spec = self.ctx.container_spec(self.key) if self.key is not None else None
        # staying put, nothing published after the moment shown comes in: the cell of that
        # moment reaches past it, and an attempt begun before it may end after
        cut = self.frozen_at
        for pt in LANES:
            lines.append(self._lane(pt, history, spec, start, cells, scale, cut))
        lines.append(self._kubelet_lane(history, start, cells, scale, cut))
        return Text("\n").join(lines)

    def _axis(self, start: float, end: float, now: float, cells: int, scale: float) -> Text:
        row = [" "] * cells
        step = tick_step(scale)
        k = 0
        # labels relative to now, right-aligned on their cell
        first = now - ((now - end) // step + 1) * step if now > end else now
        while True:
            t = first - k * step
            k += 1
            if t < start:
                break
            c = int((t - start) / scale)
            ago = now - t
            label = "now" if ago < scale / 2 else f"-{duration(ago)}"
            left = c - len(label) + 1
            if left < 0 or any(ch != " " for ch in row[max(0, left - 1) : c + 2]):
                continue
            row[left : c + 1] = list(label)
        text = Text(" " * LABEL_W, no_wrap=True)
        text.append("".join(row), style=g.DIM)
        return text

    def _lane(
        self,
        pt: ProbeType,
        history: ContainerHistory | None,
        spec: tuple | None,
        start: float,
        cells: int,
        scale: float,
        cut: float | None = None,
    ) -> Text:
        selected = pt is self.probe
        text = Text(no_wrap=True)
        pointer = "▶" if selected else " "
        label = pt.key
        h = history.probes.get(pt) if history is not None else None
        if spec is not None and spec[1].probe(pt) is not None and h is not None and h.paused:
            label += g.PAUSED
        text.append(f"{pointer}{label:<{LABEL_W - 1}}", style="bold" if selected else "")
        if spec is None or spec[1].probe(pt) is None:
            text.append("(none)", style=g.DIM)
            return text
        if h is None:
            return text
        end = start + cells * scale
        kinds: list[int | None] = [None] * cells
        entries = h.window(start, end, published_by=cut)
        oldest = h.oldest_t
        archive = self.ctx.archive
        if archive is not None and oldest is not None and start < oldest:
            # past the ring: what the recording holds (read in the background, drawn when in)
            older = archive.window(h.key, start, oldest)
            if cut is not None:
                older = [e for e in older if e[0] <= cut]
            entries = older + entries
        for t, kind in entries:
            c = int((t - start) / scale)
            if 0 <= c < cells:
                cur = kinds[c]
                if cur is None or g.KIND_RANK[kind] > g.KIND_RANK[cur]:
                    kinds[c] = kind
        marks: dict[int, ResultValue] = {}
        stop = end + scale if cut is None else min(end + scale, cut + 1e-6)
        for t, result in h.changes(start, stop):
            c = min(int((t - start) / scale), cells - 1)
            # a change is published as its attempt finishes: draw it on that attempt's cell
            if c > 0 and kinds[c] is None and kinds[c - 1] is not None:
                c -= 1
            marks[c] = result
        for c in range(cells):
            result = marks.get(c)
            if result is not None:
                up = result is ResultValue.SUCCESS
                text.append(g.CHANGED_UP if up else g.CHANGED_DOWN, style=g.OK if up else g.BAD)
                continue
            kind = kinds[c]
            if kind is None:
                text.append(" ")
            else:
                text.append(g.KIND_GLYPH[kind], style=g.KIND_STYLE[kind])
        return text

    def _kubelet_lane(
        self,
        history: ContainerHistory | None,
        start: float,
        cells: int,
        scale: float,
        cut: float | None = None,
    ) -> Text:
        text = Text(no_wrap=True)
        text.append(f" {'kubelet':<{LABEL_W - 1}}")
        if history is None:
            return text
        end = start + cells * scale
        if cut is not None:
            end = min(end, cut + 1e-6)
        row: list[tuple[str, str] | None] = [None] * cells
        labels: list[tuple[int, str]] = []
        marks = [m for m in history.marks if start <= m.t < end]
        if self.ctx.controls.runtime.observes_kubelet:
            marks += [m for m in history.reports if start <= m.t < end]
        # the most important marks keep their own cell; a lesser one that collides moves one
        # cell right when that is free (an exit and its back-off happen at the same instant)
        for m in sorted(marks, key=lambda m: (-g.MARK_RANK.get(m.type, 0), m.t)):
            c = int((m.t - start) / scale)
            if not 0 <= c < cells:
                continue
            if row[c] is not None:
                if c + 1 < cells and row[c + 1] is None:
                    c += 1
                else:
                    continue
            glyph, style, label = mark_look(m)
            row[c] = (glyph, style)
            if label:
                labels.append((c, label))
        # labels to the right of their glyph where the cells are free, earliest first
        taken = [cell is not None for cell in row]
        chars: list[tuple[str, str] | None] = list(row)
        for c, label in sorted(labels):
            span = range(c + 1, c + 1 + len(label))
            # fits, and leaves a blank cell before whatever comes next
            if span.stop > cells or any(taken[i] for i in range(c + 1, min(cells, span.stop + 1))):
                continue
            for i, ch in zip(span, label, strict=True):
                chars[i] = (ch, g.DIM)
                taken[i] = True
        for cell in chars:
            if cell is None:
                text.append(" ")
            else:
                text.append(cell[0], style=cell[1])
        return text
