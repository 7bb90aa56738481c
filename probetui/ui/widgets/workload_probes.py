"""Show a group's probes across its replicas in the detail area: the workload's probe view.

What it answers, per probe (and per container where the pods have several): how many replicas
pass, fail, are on hold or unknown now; how slow the probe is over every replica's recent
attempts, against its timeout; and which replicas differ from the rest. The numbers come from
`triage.probes`, the same model the `WorkloadSummary` line is written from; this widget only
draws them.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.outcome import KIND_GLYPH, Kind
from probetui.prober.results import ResultValue
from probetui.triage.probes import (
    FAIL,
    HOLD,
    PASS,
    UNKNOWN,
    Differ,
    ProbeAcross,
    WorkloadProbes,
    workload_probes,
)
from probetui.ui import glyphs as g
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.describe import duration, latency
from probetui.ui.widgets.groups import group_title
from probetui.ui.widgets.rows import fit

# (state, glyph, word, style): the glyphs are the list's, so the view reads in monochrome too
LOOK = (
    (PASS, g.RESULT_GLYPH[ResultValue.SUCCESS], "pass", g.OK),
    (FAIL, g.RESULT_GLYPH[ResultValue.FAILURE], "fail", g.BAD),
    (HOLD, g.PAUSED, "on hold", g.BAD),
    (UNKNOWN, g.NOT_YET, "unknown", g.DIM),
)
STATE_WORDS = {PASS: "passes", FAIL: "fails", HOLD: "is on hold", UNKNOWN: "is unknown"}
REST_WORDS = {PASS: "pass", FAIL: "fail", HOLD: "are on hold", UNKNOWN: "are unknown"}
# the p99 at this share of the timeout is said in words: the next slow day times out
NEAR = 0.8
WIDE = 60  # cells from which the counts carry their words
MAX_DIFFER = 3  # replicas named per probe; the rest are counted


class WorkloadProbeView(Widget):
    """Shows a workload's probes across its replicas; redrawn by the screen when a replica
    changed."""

    DEFAULT_CSS = """
    WorkloadProbeView { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self.gid = ""
        self.uids: list[str] = []
        self.view: WorkloadProbes | None = None

    def show(self, gid: str, uids: list[str]) -> None:
        self.gid, self.uids = gid, list(uids)
        self.update()

    def update(self) -> None:
        """Recompute from the store and redraw (the screen calls this when a replica changed)."""
        if not self.gid:
            self.view = None
            return
        self.view = workload_probes(self.ctx.store, self.gid, self.uids, self.ctx.now())
        _, title = group_title(self.gid)
        n = self.view.summary.replicas
        self.border_title = f"{title} · {n} replica{'s' if n != 1 else ''} · probes"
        self.border_subtitle = f"{keys.shown(self.app, 'probetui.worst-replica')} worst replica"
        self.refresh()

    def covers(self, keys_changed: list[ContainerKey]) -> bool:
        """Tell whether any of these containers is one of the shown workload's."""
        uids = set(self.uids)
        return any(k.pod_uid in uids for k in keys_changed)

    def render(self) -> Text:
        view = self.view
        if view is None:
            return Text("")
        width = max(20, self.size.width)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append_text(self._summary_line(view, width >= WIDE))
        text.append("\n")
        text.append_text(self._worst_line(view, width))
        for probe in view.probes:
            text.append("\n\n")
            text.append_text(self._probe_lines(probe, view.several, width))
        if not view.probes:
            text.append("\n\nno replica has a probe")
        used = text.plain.count("\n") + 1
        room = self.size.height - used - 2  # a blank line and the heading
        if view.probes and room >= 2:
            text.append("\n\n")
            text.append_text(self._replicas(view, width, room))
        return text

    def _summary_line(self, view: WorkloadProbes, wide: bool) -> Text:
        s = view.summary
        text = Text()
        ready = s.ready == s.replicas
        text.append(
            f"{g.YES if ready else g.NO} {s.ready}/{s.replicas} Ready", g.OK if ready else g.BAD
        )
        text.append(" · ")
        text.append(f"{g.DIVERGE} {s.divergent}", style="magenta" if s.divergent else "")
        text.append(" · ")
        shadow = s.shadow_not_ready
        text.append(
            f"{g.RESULT_GLYPH[ResultValue.FAILURE]} {shadow} shadow not ready"
            if wide
            else f"{g.RESULT_GLYPH[ResultValue.FAILURE]} {shadow} shadow",
            style=g.BAD if shadow else "",
        )
        recent = view.recent_restarts
        text.append(" · ")
        text.append(
            f"{g.RESTARTS} {recent} in the last hour" if wide else f"{g.RESTARTS} {recent}/1h",
            style=g.WARN if recent else "",
        )
        return text

    def _replicas(self, view: WorkloadProbes, width: int, room: int) -> Text:
        """Return one line a replica's container, worst first: its state on each probe of the view
        and its median latency on the first probe, so the odd one stands out by eye."""
        store = self.ctx.store
        text = Text()
        # a line is one container, so a column is a probe type: its state on that container
        types = list(dict.fromkeys(p.probe for p in view.probes))
        by = {(p.container, p.probe): p for p in view.probes}
        name_room = max(8, min(40, width - 4 - 2 * len(types) - 14))
        text.append("replicas".ljust(2 + name_room), style="bold")
        text.append(" r", style=g.DIM)
        for pt in types:
            text.append(" " + pt.value[0], style=g.DIM)
        text.append(f"  {'p50':>8}", style=g.DIM)
        if width >= WIDE:
            text.append(f" {view.probes[0].probe.key}", style=g.DIM)
        shown = view.replicas
        if len(shown) > room - 1:
            shown = shown[: max(0, room - 2)]
        for _, key in shown:
            entry = store.pods.get(key.pod_uid)
            if entry is None:
                continue
            cs = entry.status.lookup(key.container)
            ready = cs is not None and cs.ready
            name = entry.pod.name + (f"/{key.container}" if view.several else "")
            text.append("\n  ")
            text.append(fit(name, name_room).ljust(name_room))
            text.append(" ")
            text.append(g.YES if ready else g.NO, style=g.OK if ready else g.BAD)
            for pt in types:
                across = by.get((key.container, pt))
                state = across.states.get(key) if across is not None else None
                text.append(" ")
                if state is None:
                    text.append(g.NO_PROBE, style=g.DIM)
                    continue
                look = next(x for x in LOOK if x[0] == state)
                text.append(look[1], style=look[3])
            first = by.get((key.container, types[0]))
            median = first.medians.get(key) if first is not None else None
            text.append(f"  {latency(median):>8}" if median is not None else " " * 10, style=g.DIM)
            restarts = cs.restart_count if cs is not None else 0
            if restarts:
                text.append(f" {g.RESTARTS}{restarts}", style=g.WARN)
            history = store.containers.get(key)
            if history is not None and history.divergences:
                text.append(f" {g.DIVERGE}", style="magenta")
        if len(shown) < len(view.replicas):
            text.append(f"\n  and {len(view.replicas) - len(shown)} more", style=g.DIM)
        return text

    def _worst_line(self, view: WorkloadProbes, width: int) -> Text:
        text = Text()
        key = view.worst
        entry = self.ctx.store.pods.get(key.pod_uid) if key is not None else None
        if key is None or entry is None:
            return text
        name = entry.pod.name + (f"/{key.container}" if view.several else "")
        text.append("worst replica ", style=g.DIM)
        text.append(fit(name, max(8, width - 14)), style="bold")
        return text

    def _probe_lines(self, p: ProbeAcross, several: bool, width: int) -> Text:
        wide = width >= WIDE
        text = Text()
        head = p.probe.key + (f" · {p.container}" if several else "")
        text.append(head.ljust(12 if not several else len(head) + 1), style="bold")
        for state, glyph, word, style in LOOK:
            count = p.counts[state]
            if not count and state in (HOLD, UNKNOWN) and not wide:
                continue  # at 80 columns the empty ones give way
            text.append(" ")
            text.append(f"{glyph}{count}", style=style if count else g.DIM)
            # held or unknown replicas are rare and say the most: their word stays at 80 too
            if wide or count or state in (PASS, FAIL):
                text.append(f" {word}", style="" if count else g.DIM)
        text.append("\n  ")
        text.append_text(self._latency(p, wide))
        shown = p.differ[:MAX_DIFFER]
        for d in shown:
            text.append("\n  ")
            text.append_text(self._differ(d, width))
        if len(p.differ) > len(shown):
            text.append(f"\n  and {len(p.differ) - len(shown)} more replicas differ", style=g.DIM)
        if not p.differ and sum(p.counts.values()) > 1:
            text.append("\n  every replica alike", style=g.DIM)
        return text

    def _latency(self, p: ProbeAcross, wide: bool) -> Text:
        text = Text()
        timeout = p.timeout
        if p.p50 is None or p.p90 is None or p.p99 is None:
            # where the shadow does not run the probe (read-only, say), that is the news
            key = next(iter(p.states), None)
            reason = (
                self.ctx.not_probed(ProbeKey(key.pod_uid, key.container, p.probe)) if key else None
            )
            text.append(f"{reason or 'no attempt yet'} · timeout {duration(timeout)}", style=g.DIM)
            return text
        sep = "  " if wide else " "
        text.append("latency " if wide else "", style=g.DIM)
        for name, value in (("p50", p.p50), ("p90", p.p90), ("p99", p.p99)):
            style = g.BAD if value >= NEAR * timeout else ""
            text.append(f"{name} ", style=g.DIM)
            text.append(latency(value).replace(" ", "") if not wide else latency(value), style)
            text.append(sep)
        timeouts = "/".join(duration(t) for t in sorted(p.timeouts)) or duration(timeout)
        text.append(f"of timeout {timeouts}" if wide else f"of {timeouts}", style=g.DIM)
        if p.p99 >= NEAR * timeout:
            text.append(" near timeout" if wide else " near", style=g.BAD)
        if wide:
            text.append(f"  ({p.attempts} attempts)", style=g.DIM)
        return text

    def _differ(self, d: Differ, width: int) -> Text:
        wide = width >= WIDE
        text = Text()
        if d.why == "state":
            look = next(x for x in LOOK if x[0] == d.state)
            text.append(f"{look[1]} ", style=look[3])
            rest = REST_WORDS[str(d.rest)]
            tail = (
                f" {STATE_WORDS[d.state]}; the rest {rest}" if wide else f" {look[2]}, rest {rest}"
            )
        elif d.why == "kubelet":
            text.append(f"{g.YES if not d.rest else g.NO} ", style=g.OK if not d.rest else g.BAD)
            word = "Ready" if not d.rest else "not Ready"
            other = "not" if not d.rest else "Ready"
            tail = f" {word} by the kubelet; the rest {other}" if wide else f" kubelet: {word}"
        else:
            text.append(f"{KIND_GLYPH[Kind.TIMEOUT]} ", style=g.WARN)
            mine = latency(d.p50 or 0.0)
            rest = latency(float(d.rest or 0.0))
            if wide:
                tail = f" slow: p50 {mine}, the rest {rest}"
            else:
                tail = f" p50 {mine.replace(' ', '')}, rest {rest.replace(' ', '')}"
        room = max(8, width - 2 - 2 - len(tail))
        text.append(fit(d.pod, room))
        text.append(tail, style="" if d.why == "state" else g.DIM)
        return text


__all__ = ["WorkloadProbeView"]
