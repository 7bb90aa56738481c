"""Report what `probetui simulate` saw of a run, for people and for `--json`.

The summary of the scenario container's events (restarts, kills, readiness, Unhealthy events),
the human timeline with runs of equal attempts folded into one line, the summary table beside
a `--set` baseline, and the `--json` document.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from probetui.probe import gotext
from probetui.prober.outcome import KIND_GLYPH, LABEL_KIND, Kind
from probetui.simulate.scenario import Scenario
from probetui.spec.model import ProbeType
from probetui.timeline.events import EventType

if TYPE_CHECKING:
    from probetui.simulate.counterfactual import Counterfactual, RunSummary


class Summary:
    """Builds the summary of the scenario container's events, fed one listed event at a time."""

    def __init__(self, scenario: Scenario) -> None:
        self.name = scenario.container
        self.duration = scenario.duration
        self.kills = {pt.key: 0 for pt in ProbeType}
        self.restarts = 0
        self.unhealthy = 0
        self.first_ready: float | None = None
        self.ready_since: float | None = None
        self.ready_total = 0.0

    def add(self, e: dict[str, Any]) -> None:
        if e["container"] != self.name:
            return
        if e["type"] == EventType.KILLING and e.get("probe"):
            self.kills[e["probe"]] += 1
        elif e["type"] == EventType.CONTAINER_STARTED:
            self.restarts = e["restartCount"]
        elif e["type"] == EventType.UNHEALTHY:
            self.unhealthy += 1
        elif e["type"] == EventType.READY_CHANGED:
            if e["ready"]:
                self.ready_since = e["t"]
                if self.first_ready is None:
                    self.first_ready = e["t"]
            elif self.ready_since is not None:
                self.ready_total += e["t"] - self.ready_since
                self.ready_since = None

    def result(self, phase: str | None = None) -> dict[str, Any]:
        """Return the summary; `phase`, the pod's phase at the end, is added when given."""
        ready_total = self.ready_total
        if self.ready_since is not None:
            ready_total += self.duration - self.ready_since
        out: dict[str, Any] = {
            "restarts": self.restarts,
            "kills": dict(self.kills),
            "first_ready_at": self.first_ready,
            "ready_seconds": round(ready_total, 3),
            "unhealthy_events": self.unhealthy,
            "final_ready": self.ready_since is not None,
        }
        if phase is not None:
            out["phase"] = phase
        return out


def summarize(events: Iterable[dict[str, Any]], scenario: Scenario) -> dict[str, Any]:
    summary = Summary(scenario)
    for e in events:
        summary.add(e)
    return summary.result()


def to_json(
    result: dict[str, Any],
    baseline: dict[str, Any] | None = None,
    overrides: Iterable[str] = (),
) -> str:
    """`--json`: the run's events and summary, with the baseline's summary and the overrides
    when `--set` ran a variant beside the scenario as given; one line."""
    if baseline is not None:
        result["baseline"] = baseline
        result["overrides"] = list(overrides)
    return json.dumps(result)


class Timeline:
    """Builds the human timeline, fed one listed event at a time: `add` returns the lines it
    completes, `close` the rest. Runs of identical attempts (and their events) fold into one
    line, kept as their first and last attempt and a count, whatever their length."""

    def __init__(self) -> None:
        # per (container, probe): the run's first attempt, its last, how many
        self._runs: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any], int]] = {}
        self._messages: dict[tuple[str, str], str] = {}

    def add(self, e: dict[str, Any]) -> list[str]:
        lines: list[str] = []
        runs = self._runs
        if e["type"] == EventType.PROBE_ATTEMPT:
            key = (e["container"], e["probe"])
            run = runs.get(key)
            if run is not None and (
                run[1]["outcome"] != e["outcome"] or run[1].get("timedOut") != e.get("timedOut")
            ):
                self._flush(key, lines)
                run = None
            runs[key] = (e, e, 1) if run is None else (run[0], e, run[2] + 1)
            return lines
        if (
            e["type"] in (EventType.UNHEALTHY, EventType.PROBE_WARNING)
            and (e["container"], e["probe"]) in runs
        ):
            self._messages.setdefault((e["container"], e["probe"]), e["message"])
            return lines
        # an event of the pod (no container) ends every run, so the lines stay in time order
        for key in [k for k in runs if k[0] == e["container"] or not e["container"]]:
            self._flush(key, lines)
        lines.append(f"{e['t']:>15.1f}  {e['container']:<10} {_describe(e)}")
        return lines

    def close(self) -> list[str]:
        lines: list[str] = []
        for key in list(self._runs):
            self._flush(key, lines)
        return lines

    def _flush(self, key: tuple[str, str], lines: list[str]) -> None:
        run = self._runs.pop(key, None)
        message = self._messages.pop(key, "")
        if run is None:
            return
        first, last, n = run
        span = f"{first['t']:.1f}" if n == 1 else f"{first['t']:.1f}-{last['t']:.1f}"
        glyph = KIND_GLYPH[LABEL_KIND.get(first["outcome"], Kind.ERROR)]
        count = f" x{n}" if n > 1 else ""
        extra = " (timeout)" if first.get("timedOut") else ""
        extra += " manual" if first.get("manual") else ""
        text = (
            f"{first['probe']:<9} {glyph} {first['outcome']}{count}{extra}, run {last['resultRun']}"
        )
        if message:
            text += f"  [{message}]"
        lines.append(f"{span:>15}  {first['container']:<10} {text}")


def render_timeline(events: Iterable[dict[str, Any]]) -> list[str]:
    """Human timeline: runs of identical attempts (and their events) folded into one line."""
    timeline = Timeline()
    lines: list[str] = []
    for e in events:
        lines += timeline.add(e)
    return lines + timeline.close()


class JsonWriter:
    """Writes `--json` as the run goes: the bytes `to_json` makes of the whole result, without
    holding the events."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.out.write('{"events": [')
        self._first = True

    def add(self, e: dict[str, Any]) -> None:
        self.out.write(json.dumps(e) if self._first else ", " + json.dumps(e))
        self._first = False

    def close(
        self,
        summary: dict[str, Any],
        baseline: dict[str, Any] | None = None,
        overrides: Iterable[str] = (),
        extra: dict[str, Any] | None = None,
    ) -> None:
        """The document's end; `extra`'s keys whose value is not None follow the summary, in
        the order `to_json` writes a whole result's."""
        self.out.write('], "summary": ' + json.dumps(summary))
        for key, value in (extra or {}).items():
            if value is not None:
                self.out.write(f", {json.dumps(key)}: {json.dumps(value)}")
        if baseline is not None:
            self.out.write(', "baseline": ' + json.dumps(baseline))
            self.out.write(', "overrides": ' + json.dumps(list(overrides)))
        self.out.write("}\n")


def _describe(e: dict[str, Any]) -> str:
    kind = e["type"]
    if kind == EventType.CONTAINER_STARTED:
        return f"container started (restartCount {e['restartCount']})"
    if kind == EventType.CONTAINER_EXITED:
        return f"container exited with code {e['exitCode']} ({e['reason']})"
    if kind == EventType.RESULT_CHANGED:
        return f"{e['probe']} result -> {e['result']}"
    if kind == EventType.READY_CHANGED:
        return "Ready" if e["ready"] else "NotReady"
    if kind == EventType.STARTED_CHANGED:
        return "Started" if e["started"] else "not Started"
    if kind == EventType.BACK_OFF:
        return f"BackOff {gotext.go_duration(e['delay'])}: {e['message']}"
    if kind == EventType.POD_DELETED:
        return f"pod deleted, deletionGracePeriodSeconds {e['gracePeriod']}"
    if kind == "KubeletRestarted":
        return "kubelet restarted: running containers adopted, probe workers started again"
    if kind == "KubeletLog":
        # as klog writes it in the kubelet's log
        return f'kubelet log: "{e["message"]}" probe="{e["probe"].capitalize()}"'
    return f"{kind}: {e.get('message', '')}"


def render_summary(summary: dict[str, Any], baseline: dict[str, Any] | None = None) -> list[str]:
    rows = [
        ("restarts", lambda s: str(s["restarts"])),
        ("kills (liveness)", lambda s: str(s["kills"]["liveness"])),
        ("kills (startup)", lambda s: str(s["kills"]["startup"])),
        (
            "first ready at",
            lambda s: "never" if s["first_ready_at"] is None else f"{s['first_ready_at']:g}s",
        ),
        ("ready seconds", lambda s: f"{s['ready_seconds']:g}"),
        ("Unhealthy events", lambda s: str(s["unhealthy_events"])),
        ("ready at the end", lambda s: "yes" if s["final_ready"] else "no"),
        ("pod phase", lambda s: s.get("phase", "-")),
    ]
    if baseline is None:
        return [f"  {label:<18} {fmt(summary)}" for label, fmt in rows]
    out = [f"  {'':<18} {'baseline':>12} {'with --set':>12}"]
    out += [f"  {label:<18} {fmt(baseline):>12} {fmt(summary):>12}" for label, fmt in rows]
    return out


def render_counterfactual(cf: Counterfactual) -> list[str]:
    """Return the side-by-side text: recorded, the model with the recorded settings, the what-if."""
    c = cf.check
    lines = [
        f"self-check (model with the recorded settings against the recording, "
        f"{cf.compared_from - cf.since:.0f}s to {cf.compared_until - cf.since:.0f}s into the "
        "window):",
        f"  kills {c.kills[0]}/{c.kills[1]} matched, restarts {c.restarts[0]}/{c.restarts[1]}, "
        f"Ready changes {c.ready[0]}/{c.ready[1]}; worst offset {c.worst_offset:.1f}s",
    ]
    notes = [c.left_out_words()] if c.left_out_words() else []
    if c.tied_restarts:
        n = c.tied_restarts
        notes.append(
            f"{n} restart{'s' if n != 1 else ''} at a back-off window's edge, where the kubelet "
            "goes either way"
        )
    if notes:
        lines.append("  " + "; ".join(notes))
    if not c.passed:
        lines.append(f"  FAILED: {c.why}; no what-if is given where the model does not fit")
        return lines
    lines.append("  passed")
    cols = [("recorded", cf.recorded), ("model", cf.baseline)]
    if cf.what_if is not None:
        cols.append(("what-if", cf.what_if))
    lines.append("")
    lines.append(f"{'':<24}" + "".join(f"{name:>12}" for name, _ in cols))

    def row(label: str, values: list[str]) -> None:
        lines.append(f"{label:<24}" + "".join(f"{v:>12}" for v in values))

    for pt in ProbeType:
        if any(s.kills.get(pt.key) for _, s in cols):
            row(f"kills ({pt.key})", [str(s.kills.get(pt.key, 0)) for _, s in cols])
    row("restarts", [str(s.restarts) for _, s in cols])
    row("seconds not ready", [f"{s.not_ready_seconds:.0f}" for _, s in cols])

    def worst(s: RunSummary) -> str:
        ready = [t for t in s.time_to_ready if t is not None]
        never = sum(1 for t in s.time_to_ready if t is None)
        text = f"{max(ready):.0f}s" if ready else "-"
        return text + (f" ({never} never)" if never else "")

    row("slowest start to Ready", [worst(s) for _, s in cols])
    if cf.what_if is not None:
        lines.append("")
        lines.append(
            f"{cf.what_if.inferred_share:.1%} of the what-if's answers inferred "
            f"({cf.what_if.inferred} of {cf.what_if.answered}); the model with the recorded "
            f"settings inferred {cf.baseline.inferred_share:.1%}"
        )
        if cf.unfinished_starts:
            n = cf.unfinished_starts
            lines.append(
                f"{n} start{'s' if n != 1 else ''} killed before {'they' if n != 1 else 'it'} "
                "finished: past each kill the recording has no answer and the replay repeats "
                "the last failure, so it cannot say whether a longer start-up budget lets a "
                "start finish (probetui lint --recording proposes one the kubelet's model "
                "proves)"
            )
    return lines
