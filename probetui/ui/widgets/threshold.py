"""Show each probe as written and what it is doing now: the Threshold state pane.

Its published result, the current run in words, the countdown to the next attempt, gating, and
what the settings mean in seconds.

Below them, for the selected probe: why the shadow and the kubelet disagree, when they do or
did, and what `probetui lint` advises, worst first (the static and model rules on the pod's
spec now, the evidence rules on the store's history, from
`lint.live.Advisor`, cached and asked from the poll, never from `render`). To make room within
the pane's fixed height the other probes then take one line each. A finding that proposes a
setting can be tried in the what-if screen (its key is in the border's subtitle).
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from probetui.keys import ContainerKey, ProbeKey
from probetui.lint.live import Advice, Advisor
from probetui.lint.model import Finding, Severity
from probetui.prober.results import ResultValue
from probetui.prober.worker import Skip
from probetui.spec.model import Container, Pod, Probe, ProbeType
from probetui.timeline.events import Event, EventType, count_words
from probetui.timeline.history import Kind, ProbeHistory
from probetui.timeline.store import ContainerHistory
from probetui.ui import glyphs as g
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.describe import (
    detect_seconds,
    divergence_lines,
    duration,
    handler_text,
    latency,
    run_words,
    settings_text,
    startup_budget,
    threshold_title,
)
from probetui.ui.widgets.lines import LineCached, join_rows, split_lines, wrap_line
from probetui.ui.widgets.pane import EdgeTitle

ORDER = (ProbeType.STARTUP, ProbeType.READINESS, ProbeType.LIVENESS)
SPARK_N = 24
# the pane's height in app.tcss (11) less its border: three lines for each of three probes
HEIGHT = 11
LINES = HEIGHT - 2
# in details mode, what the right side keeps beside this pane: the container's line and the
# timeline above (app.tcss), the attempts' least height below
FIXED_ABOVE = 1 + 7
ATTEMPTS_LEAST = 4
# an advice finding's mark: the screen's failure cross for an error, its warning mark (the
# kubelet lane's Unhealthy) for a warning
# the kubelet's counts line sums the node agent's windows that ended this recently
COUNTS_SPAN = 300.0
SEVERITY_GLYPH = {
    Severity.ERROR: (g.KIND_GLYPH[Kind.FAILURE], g.BAD),
    Severity.WARNING: (g.REPORT, g.WARN),
    Severity.INFO: ("i", g.INFO),
}


def last_divergence(
    history: ContainerHistory | None, probe: ProbeType
) -> tuple[dict[str, object], str | None] | None:
    """Return the newest Divergence of the probe in the container's marks, and the DivergenceCleared
    message when the two agreed again after it."""
    if history is None:
        return None
    found: tuple[dict[str, object], str | None] | None = None
    for m in history.marks:
        # a Divergence without a probe is about Ready: readiness's verdict
        if (m.probe or ProbeType.READINESS) != probe:
            continue
        if m.type == EventType.DIVERGENCE:
            found = (m.fields, None)
        elif m.type == "DivergenceCleared" and found is not None:
            found = (found[0], str(m.fields.get("message", "agree again")))
    return found


def counts_line(windows: list[Event], now: float, span: float = COUNTS_SPAN) -> Text | None:
    """Sum the node agent's windows of the kubelet's own counts (KubeletProbeCounts) that ended
    in the last `span` seconds into one line, the shadow's beside them: "kubelet counted 12 ✓
    3 ✖ in 5 min; shadow 12 ✓ 3 ✖" (docs/agents.md). None where there are none."""
    recent = [w for w in windows if now - w.t <= span]
    if not recent:
        return None
    kubelet: dict[str, int] = {}
    shadow: dict[str, int] | None = {}
    seconds = 0.0
    for w in recent:
        seconds += float(w.fields.get("seconds") or 0.0)
        for side, into in (("kubelet", kubelet), ("shadow", shadow)):
            counts = w.fields.get(side)
            if into is None:
                continue
            if not isinstance(counts, dict):
                if side == "shadow":
                    shadow = None
                continue
            for result, n in counts.items():
                into[result] = into.get(result, 0) + int(n)
    minutes = max(1, round(seconds / 60))
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append("≡ ", style=g.INFO)
    line.append(f"kubelet counted {count_words(kubelet)} in {minutes} min; ")
    if shadow is None:
        line.append("the shadow does not run it", style=g.DIM)
    else:
        # one attempt apart is the two workers' phases (kubelet_counts.py), not a difference
        apart = abs(sum(kubelet.values()) - sum(shadow.values())) > 1
        line.append(f"shadow {count_words(shadow)}", style=g.WARN if apart else "")
    node = recent[-1].fields.get("node")
    if node:
        line.append(f" · node {node}", style=g.DIM)
    return line


def sparkline(samples: list[tuple[float, int]], timeout: float) -> Text:
    """Latency of recent attempts against the timeout: █ is the timeout (and a timeout)."""
    text = Text()
    for value, kind in samples:
        if kind == Kind.TIMEOUT:
            text.append(g.SPARK[-1], style=g.BAD)
            continue
        level = 0 if timeout <= 0 else min(len(g.SPARK) - 1, int(value / timeout * len(g.SPARK)))
        text.append(g.SPARK[level], style=g.KIND_STYLE.get(kind, ""))
    return text


def gate_words(skip: Skip | None, reason: str) -> str:
    if skip is Skip.INITIAL_DELAY:
        return "in its initial delay"
    if skip is Skip.NOT_STARTED:
        return "gated: waiting for the startup probe"
    if skip is Skip.ON_HOLD:
        return "on hold until a new container"
    if skip is Skip.PAUSED:
        return "paused (space resumes)"
    if skip is Skip.NOT_RUNNING:
        return "container not running"
    if skip is Skip.NOT_CREATED:
        return "container not created yet"
    if skip is Skip.STARTED:
        return "done: the container has started"
    return reason


class ThresholdPane(LineCached):
    DEFAULT_CSS = """
    ThresholdPane { height: 11; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    # the what-if hint comes and goes with the advice: its border line, not the pane
    border_title = EdgeTitle(bottom=False)  # type: ignore[assignment]
    border_subtitle = EdgeTitle(bottom=True)  # type: ignore[assignment]

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self.key: ContainerKey | None = None
        self.probe = ProbeType.READINESS
        self._last: Text | None = None
        self._hint_for = self.probe  # the probe whose advice the subtitle's hint is about
        self.advisor = Advisor(ctx.store, ctx.now)
        self.advice: Advice | None = None  # the selected container's, as last drawn
        self.selected: ProbeType | None = None  # the probe the advice is for, as last drawn
        self.whole = False  # details mode: every line whole, wrapped
        self._wanted = 0  # the rows the lines need, wrapped whole

    def show(self, key: ContainerKey | None, probe: ProbeType) -> None:
        self.key, self.probe = key, probe
        # a key's own frame shows the advice last worked out for this container, if any:
        # working it out again (every REFRESH seconds while its history moves)
        # is left to the next poll, a tenth of a second later, not put between the key and
        # its frame
        self.tick(fresh_advice=False)

    def tick(self, fresh_advice: bool = True) -> None:
        """Redraw the lines whose words changed (the countdown moves every poll: its line,
        not the pane's nine). The height is fixed in CSS, so a redraw never lays the screen
        out again."""
        text = self._text(fresh_advice)
        self._subtitle(self._hint_for)
        last = self._last
        if last is None or text.plain != last.plain or text.spans != last.spans:
            self._last = text
            self.show_lines(text)
        self.fit()

    def on_mount(self) -> None:
        self.border_title = "Threshold state"

    def render(self) -> Text:
        if self._last is None:
            self._last = self._text()
            self._subtitle(self._hint_for)
        return self._last

    # -- words ----------------------------------------------------------------------------

    def _text(self, fresh_advice: bool = True) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        self.border_title = threshold_title(self.ctx.kubelet_played(self.key))
        self.advice = self.selected = None
        self._hint_for = self.probe  # no advice: no hint
        if self.key is None:
            text.append("no container selected", style=g.DIM)
            return text
        spec = self.ctx.container_spec(self.key)
        if spec is None:
            text.append("the pod is gone", style=g.DIM)
            return text
        pod, container = spec
        probes = [(pt, container.probe(pt)) for pt in ORDER if container.probe(pt) is not None]
        if not probes:
            text.append("this container has no probes: it is Ready once it runs", style=g.DIM)
            return text
        history = self.ctx.store.containers.get(self.key)
        advice = None if fresh_advice else self.advisor.last(self.key)
        self.advice = advice if advice is not None else self.advisor.advice(self.key)
        selected = self.probe if any(pt is self.probe for pt, _ in probes) else probes[0][0]
        self.selected = selected
        extra = self._extra_lines(history, selected)
        # each probe's lines, and whether the line wraps where rows are free: its state (the
        # run in words) does; the probe as written and its settings' meaning are cut first
        lines: list[tuple[Text, bool]] = []
        for pt, probe in probes:
            assert probe is not None
            h = history.probes.get(pt) if history is not None else None
            block = Text(no_wrap=True, overflow="ellipsis")
            if extra and pt is not selected and not self.whole:
                self._probe_line(block, pt, probe, h)
                lines.append((block, False))
            else:
                self._probe_block(block, pod, container, pt, probe, h)
                lines += [(line, i == 1) for i, line in enumerate(split_lines(block))]
        self._hint_for = selected
        width = self.content_size.width if self.is_mounted else 0
        cap = max(LINES, self.content_size.height if self.is_mounted else 0)
        blocks = [line for line, _ in lines]
        if width > 0 and self.whole:
            # details: every line whole, the pane as high as they need (`fit`)
            console = self.app.console
            rows = [row for line in blocks + extra for row in wrap_line(line, width, console)]
            self._wanted = len(rows)
            return join_rows(rows)
        if width > 0:
            # a state that does not fit wraps while the rows last; past them it is cut, and
            # details (enter) show it whole
            console = self.app.console
            wrapped = [
                row
                for line, wraps in lines
                for row in (wrap_line(line, width, console) if wraps else [line])
            ]
            if len(wrapped) + len(extra) <= cap:
                blocks = wrapped
        room = cap - len(blocks)
        if len(extra) > room:
            more = len(extra) - room + 1
            extra = [
                *extra[: max(0, room - 1)],
                Text(f"… {more} more: enter shows them whole", style=g.DIM),
            ]
        elif width > 0:
            extra = fill_rows(extra, room, width, self.app.console)
        return join_rows(blocks + extra)

    def set_whole(self, whole: bool) -> None:
        """Details mode: every line whole, wrapped, the pane as high as they need."""
        if whole == self.whole:
            return
        self.whole = whole
        self._wanted = 0
        self._last = None
        if not whole:
            self.styles.height = None  # the stylesheet's fixed height again
        self.refresh()
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """In details mode, the pane's height to the rows its lines need, leaving the attempts
        below their least (a layout only where that height changes)."""
        if not self.whole or not self._wanted or self.parent is None:
            return
        free = self.parent.size.height - FIXED_ABOVE - ATTEMPTS_LEAST
        height = max(HEIGHT, min(self._wanted + 2, free))
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height

    def proposals(self) -> list[Finding]:
        """Return the findings for the selected probe that propose a setting, worst first."""
        if self.advice is None or self.selected is None:
            return []
        return [f for f in self.advice.for_probe(self.selected) if f.hit.overrides]

    def _subtitle(self, probe: ProbeType) -> None:
        findings = self.advice.for_probe(probe) if self.advice is not None else []
        hint = ""
        if any(f.hit.overrides for f in findings):
            hint = f"{keys.shown(self.app, 'probetui.what-if')} what-if"
        if self.border_subtitle != hint:
            self.border_subtitle = hint

    def _extra_lines(self, history: ContainerHistory | None, probe: ProbeType) -> list[Text]:
        """Return the divergence and the advice for the selected probe, a Text a line."""
        lines: list[Text] = []
        if self.key is not None:
            windows = self.ctx.store.kubelet_counts.get(
                ProbeKey(self.key.pod_uid, self.key.container, probe)
            )
            counted = counts_line(list(windows), self.ctx.now()) if windows else None
            if counted is not None:
                lines.append(counted)
        div = last_divergence(history, probe)
        if div is not None:
            fields, cleared = div
            since = fields.get("since")
            clock = self.ctx.clock(float(since)) if isinstance(since, int | float) else None
            for i, words in enumerate(divergence_lines(fields, cleared, clock)):
                line = Text(no_wrap=True, overflow="ellipsis")
                line.append(f"{g.DIVERGE} " if i == 0 else "  ", style="magenta")
                line.append(words, style="magenta" if i == 0 and not cleared else "")
                lines.append(line)
        findings = self.advice.for_probe(probe) if self.advice is not None else []
        for f in findings:
            lines.append(finding_line(f))
        return lines

    def _probe_line(
        self,
        text: Text,
        pt: ProbeType,
        probe: Probe,
        h: ProbeHistory | None,
    ) -> None:
        """A probe that is not selected, in one line, while the selected one's advice shows."""
        text.append(" ")
        text.append(f"{pt.key:<10} ", style="bold")
        published = h.published if h is not None else None
        if published is None:
            text.append(f"{g.NOT_YET} none yet", style=g.DIM)
        else:
            text.append(
                f"{g.RESULT_GLYPH[published]} {published.label}", style=g.RESULT_STYLE[published]
            )
        text.append("  " + handler_text(probe), style=g.DIM)

    def _probe_block(
        self,
        text: Text,
        pod: Pod,
        container: Container,
        pt: ProbeType,
        probe: Probe,
        h: ProbeHistory | None,
    ) -> None:
        assert self.key is not None
        key = ProbeKey(self.key.pod_uid, self.key.container, pt)
        selected = pt is self.probe
        now = self.ctx.now()
        text.append("▶" if selected else " ", style="bold")
        text.append(f"{pt.key:<10} ", style="bold")
        text.append(handler_text(probe))
        text.append("  " + settings_text(probe), style=g.DIM)

        # line 2: published result, the run in words, the next attempt
        text.append("\n   ")
        published = h.published if h is not None else None
        if published is None:
            text.append(f"{g.NOT_YET} none yet", style=g.DIM)
        else:
            text.append(
                f"{g.RESULT_GLYPH[published]} {published.label}",
                style=g.RESULT_STYLE[published] + " bold",
            )
        state = _state(h)
        # the short facts first (they must not be cut off), then the run in words
        not_probed = self.ctx.not_probed(key)
        nxt = _next_attempt(h, probe, now)
        if nxt is not None and not_probed is None:
            text.append(" · ")
            text.append(f"next in {max(0.0, nxt - now):.1f}s", style=g.INFO)
        gate = None
        skip = h.last_skip() if h is not None else None
        if not_probed is not None:
            gate = not_probed
        elif h is not None and h.paused:
            gate = "paused (space resumes)"
        elif skip is not None and not (state[2] and skip.skip is Skip.ON_HOLD):
            gate = gate_words(skip.skip, skip.skip_reason)
            if skip.skip is Skip.INITIAL_DELAY:
                gate += self._delay_left(probe, now)
        if gate:
            text.append(" · ")
            text.append(gate, style=g.WARN)
        if h is not None or not_probed is None:
            # a probe never run here has no run to put in words: the reason it is not run says
            # why there is no result (not that the container was never created)
            text.append(" · ")
            text.append(
                run_words(
                    pt,
                    probe,
                    pod,
                    container,
                    published=published,
                    last_result=state[0],
                    result_run=state[1],
                    on_hold=state[2],
                )
            )

        # line 3: what the settings mean, latency against the timeout, the target dialled
        text.append("\n   ")
        if pt is ProbeType.STARTUP or (
            pt is ProbeType.LIVENESS and container.startup_probe is None
        ):
            # without a startup probe, liveness alone decides how long the app may take to start
            label = "startup budget" if pt is ProbeType.STARTUP else "must start within"
            text.append(
                f"{label} {duration(startup_budget(probe))} "
                f"(delay {probe.initial_delay_seconds}s + {probe.period_seconds}s × "
                f"{probe.failure_threshold})"
            )
            if pt is ProbeType.LIVENESS:
                text.append(f" · detect a failure in {duration(detect_seconds(probe))}")
        else:
            text.append(
                f"detect a failure in {duration(detect_seconds(probe))} "
                f"({probe.period_seconds}s × {probe.failure_threshold})"
            )
        if h is not None:
            samples = h.latencies(SPARK_N)
            if samples:
                text.append(" · latency ")
                text.append_text(sparkline(samples, float(probe.timeout_seconds)))
                worst = max(v for v, _ in samples)
                text.append(f" max {latency(worst)} of {probe.timeout_seconds}s", style=g.DIM)
            target = _last_target(h)
            if target:
                text.append(f" · dials {target}", style=g.DIM)

    def _delay_left(self, probe: Probe, now: float) -> str:
        assert self.key is not None
        entry = self.ctx.pod_entry(self.key.pod_uid)
        cs = entry.status.lookup(self.key.container) if entry is not None else None
        if cs is None or cs.running is None:
            return ""
        left = cs.running.started_at + probe.initial_delay_seconds - now
        return f": first attempt in {duration(max(0.0, left))}" if left > 0 else ""


def fill_rows(lines: list[Text], room: int, width: int, console: Console) -> list[Text]:
    """Return the lines wrapped to the pane's width while its rows last, worst first: a finding's
    fix is what the reader needs and sits at its end, so a row each would cut it off while
    rows below stay empty. Every line keeps at least one row; one that loses rows ends in …"""
    out: list[Text] = []
    for i, line in enumerate(lines):
        left = room - len(out) - (len(lines) - i - 1)  # a row kept for each line still to come
        wrappable = line.copy()
        wrappable.no_wrap = False  # the line's own no_wrap would make wrap() cut it at once
        rows = list(wrappable.wrap(console, max(10, width - 2), overflow="fold"))
        if len(rows) > left:
            rows = rows[:left]
            last = rows[-1]
            last.truncate(max(1, width - 3), overflow="crop")
            last.append("…", style=g.DIM)
        for j, row in enumerate(rows):
            row.no_wrap = True
            row.overflow = "ellipsis"
            out.append(Text("  ").append_text(row) if j else row)
    return out


def finding_line(f: Finding) -> Text:
    """Return one finding: severity glyph, rule id, the message, the fix."""
    glyph, style = SEVERITY_GLYPH[f.severity]
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{glyph} ", style=style + " bold")
    line.append(f"{f.rule.id}: ", style=style)
    line.append(f.hit.message)
    line.append(f" · fix: {f.fix}", style=g.DIM)
    return line


def _state(h: ProbeHistory | None) -> tuple[ResultValue | None, int, bool]:
    """(last result, result run, on hold), as the worker's last record left them."""
    if h is not None:
        return h.last_result, h.result_run, h.on_hold
    return None, 0, False


def _next_attempt(h: ProbeHistory | None, probe: Probe, now: float) -> float | None:
    if h is None:
        return None
    if h.next_tick is not None:
        # a running worker's schedule, as its last record or state left it
        if h.paused:
            return None
        nxt = h.next_tick
        period = float(probe.period_seconds)
        if nxt < now and period > 0:
            # passed while an attempt runs: its ticker has armed the next one on the same grid
            nxt += period * (1 + int((now - nxt) // period))
        return nxt
    # no running worker (a recorded session, a stopped worker): estimate from the last entry
    if h.last_t is None:
        return None
    nxt = h.last_t + probe.period_seconds
    return nxt if nxt >= now else None


def _last_target(h: ProbeHistory) -> str:
    for view in h.recent(8):
        if view.target:
            return view.target
    return ""
