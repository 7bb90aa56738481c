"""Show the last attempts of the selected probe, or the container's output tail: the Attempts pane.

An attempt line: time, outcome, latency, HTTP status, the output the kubelet puts in its event,
the body it leaves out, the target dialled, manual or scheduled. Runs of the same skip fold into
one line. In details mode every attempt gets a second line with the event text and errors.
"""

from __future__ import annotations

from rich.text import Text

from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.worker import Trigger
from probetui.spec.model import Probe, ProbeType
from probetui.timeline.history import KIND_NAMES, AttemptView, Kind
from probetui.ui import glyphs as g
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.describe import latency
from probetui.ui.widgets.lines import LineCached, join_rows, wrap_line
from probetui.ui.widgets.pane import EdgeTitle

SHOWN = 50  # entries read from the store per redraw
TIME_W = 10  # the time column and its gap: where a wrapped attempt's rows begin
DETAIL_BODY = 400  # characters of the body a details line shows (the store keeps more)


def excerpt(text: str, limit: int = 120) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def run_words(v: AttemptView, probe_type: ProbeType, probe: Probe | None) -> str:
    """`run 2 of 3` for an attempt of a run short of its threshold or reaching it, `run 7`
    past it. The record's run is the worker's after the attempt: a liveness failure or any
    startup result that reaches the threshold zeroes it as the kubelet holds the worker
    (worker.go doProbe, docs/kubelet-behaviour.md §5.16), so that attempt says the count
    that reached the threshold, not 0."""
    run = v.result_run
    counted = v.kind in (Kind.SUCCESS, Kind.WARNING, Kind.FAILURE, Kind.TIMEOUT)
    if probe is None or not counted:
        return f"run {run}"
    failed = v.kind in (Kind.FAILURE, Kind.TIMEOUT)
    threshold = probe.failure_threshold if failed else probe.success_threshold
    holds = probe_type is ProbeType.STARTUP or (probe_type is ProbeType.LIVENESS and failed)
    if run == 0 and holds:
        run = threshold  # the run that reached the threshold, zeroed by the hold
    return f"run {run} of {threshold}" if run <= threshold else f"run {run}"


def fold_skips(views: list[AttemptView]) -> list[tuple[AttemptView, int, float]]:
    """(newest view, how many, oldest time) with runs of the same skip reason folded."""
    out: list[tuple[AttemptView, int, float]] = []
    for v in views:
        if out and v.kind == Kind.SKIP:
            head, n, _ = out[-1]
            if head.kind == Kind.SKIP and head.skip_reason == v.skip_reason:
                out[-1] = (head, n + 1, v.t)
                continue
        out.append((v, 1, v.t))
    return out


class AttemptLog(LineCached):
    DEFAULT_CSS = """
    AttemptLog { height: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    # the totals in the subtitle change with every attempt: that border line, not the log
    border_title = EdgeTitle(bottom=False)  # type: ignore[assignment]
    border_subtitle = EdgeTitle(bottom=True)  # type: ignore[assignment]

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self.key: ContainerKey | None = None
        self.probe = ProbeType.READINESS
        self.output = False  # show the container's output tail instead
        self.details = False  # two lines an attempt
        # the timeline's right edge when it is scrolled back: the log shows what led up to it
        self.until: float | None = None
        self._tail: list[str] = []

    def show(self, key: ContainerKey | None, probe: ProbeType) -> None:
        if (key, probe) == (self.key, self.probe):
            self.update()  # the same selection again: the lines that changed, if any
            return
        self.key, self.probe = key, probe
        self._title()
        self.refresh()

    def set_mode(self, *, output: bool | None = None, details: bool | None = None) -> None:
        if output is not None:
            self.output = output
        if details is not None:
            self.details = details
        self._title()
        self.refresh()

    def set_until(self, until: float | None) -> None:
        if until != self.until:
            self.until = until
            self._title()
            self.refresh()

    def poll_output(self) -> None:
        """The output tail is the runtime's memory, not the store's: look at it on the timer."""
        if not self.output or self.key is None:
            return
        tail = self.ctx.controls.runtime.output_tail(self.key.pod_uid, self.key.container)
        if tail != self._tail:
            self._tail = list(tail)
            self.refresh()

    def on_mount(self) -> None:
        self._title()

    def _title(self) -> None:
        if self.output:
            name = self.key.container if self.key is not None else ""
            self.border_title = f"Output · {name}"
            self.border_subtitle = f"{keys.shown(self.app, 'probetui.output')}: attempts"
        else:
            self.border_title = f"Attempts · {self.probe.key}" + (
                "" if self.until is None else f" · up to {self.ctx.clock(self.until)}"
            )
            output = keys.shown(self.app, "probetui.output")
            self.border_subtitle = f"{self._counts()}{output}: container output"

    def _counts(self) -> str:
        """Totals since the worker began: how often it passed, failed, timed out, errored."""
        history = self.ctx.store.containers.get(self.key) if self.key is not None else None
        h = history.probes.get(self.probe) if history is not None else None
        if h is None:
            return ""
        c = h.counts
        parts = [f"{sum(c[k] for k in Kind.ATTEMPTS)} attempts"]
        for kind in (Kind.SUCCESS, Kind.WARNING, Kind.FAILURE, Kind.TIMEOUT, Kind.ERROR):
            if c[kind]:
                parts.append(f"{c[kind]} {g.KIND_GLYPH[kind]}")
        return " ".join(parts) + " · "

    # -- drawing --------------------------------------------------------------------------

    def update(self) -> None:
        """New attempts: redraw, and the totals in the border. The container's history
        changes with each of its probes' attempts; the log shows one probe: the lines that
        changed, often none. (A new attempt moves every line down: their strips are kept.)"""
        self._title()
        if self._lines is None:
            return  # drawn whole in the next frame anyway
        self.show_lines(self.render())

    def render(self) -> Text:
        if self.output:
            return self._output_text()
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.key is None:
            text.append("no container selected", style=g.DIM)
            return text
        history = self.ctx.store.containers.get(self.key)
        h = history.probes.get(self.probe) if history is not None else None
        spec = self.ctx.container_spec(self.key)
        if spec is not None and spec[1].probe(self.probe) is None:
            text.append(f"{self.key.container} has no {self.probe.key} probe", style=g.DIM)
            return text
        if h is None or len(h) == 0:
            reason = self.ctx.not_probed(ProbeKey(self.key.pod_uid, self.key.container, self.probe))
            text.append(reason or "no attempts yet", style=g.DIM)
            return text
        height = max(1, self.size.height)
        # up to the timeline's edge: what was published by then, as the timeline draws it
        views = h.recent(SHOWN, self.until, published=True)
        if not views:
            text.append(f"no attempts up to {self.ctx.clock(self.until or 0)}", style=g.DIM)
            return text
        width = self.content_size.width if self.is_mounted else 0
        rows: list[Text] = []
        for view, n, oldest in fold_skips(views):
            if len(rows) >= height:
                break
            line = Text(no_wrap=True, overflow="ellipsis")
            self._line(line, view, n, oldest)
            lines = [line]
            if self.details and view.is_attempt:
                detail = Text(no_wrap=True, overflow="ellipsis")
                self._detail_line(detail, view)
                lines.append(detail)
            if self.details and width > 0:
                # details: every text whole, wrapped past the attempt's time
                console = self.app.console
                lines = [
                    row
                    for i, one in enumerate(lines)
                    for row in wrap_line(one, width, console, TIME_W if i == 0 else 2)
                ]
            rows += lines
        return join_rows(rows[:height])

    def _line(self, text: Text, v: AttemptView, n: int, oldest: float) -> None:
        text.append(self.ctx.clock(v.t), style=g.DIM)
        text.append("  ")
        style = g.KIND_STYLE[v.kind]
        if v.kind == Kind.SKIP:
            what = f"skipped ×{n}" if n > 1 else "skipped"
            text.append(f"{g.KIND_GLYPH[v.kind]} {what:<11} ", style=style)
            text.append(v.skip_reason, style=g.DIM)
            if n > 1:
                text.append(f" (since {self.ctx.clock(oldest)})", style=g.DIM)
            return
        text.append(f"{g.KIND_GLYPH[v.kind]} {KIND_NAMES[v.kind]:<8} ", style=style)
        text.append(f"{latency(v.latency):>9}  ")
        text.append(f"{v.status_code or '':>3}  ", style=style if v.status_code else "")
        # scheduled ticks are unmarked; the others say what started them
        if v.trigger is Trigger.USER:
            text.append("manual ", style=g.INFO + " bold")
        elif v.trigger is Trigger.KUBELET:
            text.append("kubelet-triggered ", style=g.INFO)
        elif v.trigger is Trigger.FIRST:
            text.append("first ", style=g.DIM)
        # details show the output whole and more of the body, wrapped; a line a row cuts them
        whole = self.details
        output = v.error if v.kind == Kind.ERROR and v.error else v.output
        if output:
            text.append(excerpt(output, len(output) if whole else 90))
        if v.body and v.body.strip() != (v.output or "").strip():
            # the body the kubelet leaves out of its event (where it differs from the output)
            text.append("  body: ", style=g.DIM)
            body = excerpt(v.body, DETAIL_BODY if whole else 60)
            text.append(repr(body), style=g.DIM)
        if v.target:
            text.append(f"  → {v.target}", style=g.DIM)

    def _detail_line(self, text: Text, v: AttemptView) -> None:
        text.append(" " * 10)
        if not v.detail:
            text.append("(older attempt: only the outcome and output are kept)", style=g.DIM)
            return
        parts = []
        if v.event:
            parts.append(f"event: {v.event}")
        elif v.kind in (Kind.SUCCESS,):
            parts.append("no event")
        if v.error:
            parts.append(f"error (discarded, not counted): {v.error}")
        if v.tries > 1:
            parts.append(f"{v.tries} tries")
        parts.append(self._run(v))
        parts.append(v.trigger.value)
        text.append("  ·  ".join(parts), style=g.DIM)

    def _run(self, v: AttemptView) -> str:
        """Return the attempt's run as the kubelet counted it against the threshold it heads for."""
        spec = self.ctx.container_spec(self.key) if self.key is not None else None
        probe = spec[1].probe(self.probe) if spec is not None else None
        return run_words(v, self.probe, probe)

    def _output_text(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.key is None:
            text.append("no container selected", style=g.DIM)
            return text
        lines = self._tail or list(
            self.ctx.controls.runtime.output_tail(self.key.pod_uid, self.key.container)
        )
        if not lines:
            text.append("no output kept for this container by this runtime", style=g.DIM)
            return text
        height = max(1, self.size.height)
        text.append("\n".join(lines[-height:]))
        return text
