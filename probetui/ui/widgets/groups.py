"""Draw a workload's line in the Workloads list from its `triage.groups.Summary`.

Pods without a workload (bare pods, a manifest's, the demo's) have no such line: they stand
alone, one line per container as everywhere. The group's line answers "is it one bad replica
or the whole workload?" before any replica is read.
"""

from __future__ import annotations

from rich.text import Text

from probetui.prober.results import ResultValue
from probetui.triage.groups import PROBE_ORDER, Summary, split_group
from probetui.ui import glyphs as g
from probetui.ui.widgets.rows import Columns, fit

# kubectl's short names, so the kind costs a few cells
SHORT = {
    "Deployment": "deploy",
    "StatefulSet": "sts",
    "DaemonSet": "ds",
    "ReplicaSet": "rs",
    "Job": "job",
    "CronJob": "cj",
    "ReplicationController": "rc",
}


def group_title(gid: str) -> tuple[str, str]:
    """(namespace, "deploy payments") for a group id."""
    ns, kind, name = split_group(gid)
    return ns, f"{SHORT.get(kind, kind.lower())} {name}"


def group_text(
    gid: str, s: Summary, cols: Columns, collapsed: bool, selected: bool, restarts: int
) -> Text:
    """`▸+ deploy payments 3/5 ✖2 ≠1   ✗  ✓  S· R✖ L●  ↺7 ≠`, in the container lines' columns:
    ready / started for all replicas, each probe's worst published result, and `restarts`:
    the replicas' restarts in the last hour (`groups.recent_restarts`, as the probe view says),
    not their lifetime counts, which keep a crash of last week on the line for good."""
    ns, title = group_title(gid)
    text = Text(no_wrap=True)
    text.append("▸" if selected else " ")
    text.append("+" if collapsed else "-", style=g.DIM)
    if cols.ns:
        text.append(fit(ns, cols.ns).ljust(cols.ns) + " ", style=g.DIM)
    # the counts, most telling first; the later ones give way to the name at narrow widths
    parts = [(f" {s.ready}/{s.replicas}", "" if s.ready == s.replicas else g.BAD)]
    if s.divergent:
        parts.append((f" {g.DIVERGE}{s.divergent}", "magenta"))
    if s.shadow_not_ready:
        parts.append((f" {g.RESULT_GLYPH[ResultValue.FAILURE]}{s.shadow_not_ready}", g.BAD))
    bare = title.split(" ", 1)[1]
    while len(parts) > 1 and cols.name - sum(len(p) for p, _ in parts) < min(len(bare), 10):
        parts.pop()
    tail = Text()
    for part, style in parts:
        tail.append(part, style=style)
    room = cols.name - tail.cell_len
    if room < 6:
        tail, room = Text(), cols.name
    if len(title) > room:
        kind = title[: -len(bare) - 1]
        # a Deployment's kind goes first: most workloads are one, so a bare name reads as one;
        # the others keep theirs while the name keeps a few cells (a Job is not a Deployment)
        if kind == SHORT["Deployment"] or room - len(kind) - 1 < min(len(bare), 8):
            title = bare  # the fold mark says it is a workload; the name says which
        else:
            title = f"{kind} {fit(bare, room - len(kind) - 1)}"
    name = fit(title, room)
    text.append(name)
    text.append_text(tail)
    text.append(" " * (cols.name - len(name) - tail.cell_len))
    gap = " " if cols.narrow else "  "
    ready = s.ready == s.replicas
    text.append(gap)
    text.append(g.YES if ready else g.NO, style=g.OK if ready else g.BAD)
    text.append(gap)
    text.append(g.YES if s.started else g.NO, style=g.OK if s.started else g.WARN)
    text.append(gap)
    for pt, result in zip(PROBE_ORDER, s.worst, strict=True):
        if not cols.narrow:
            text.append(pt.value[0])
        if result is False:
            text.append(g.NO_PROBE, style=g.DIM)
        elif result is None or result is True:
            text.append(g.NOT_YET, style=g.DIM)
        else:
            text.append(g.RESULT_GLYPH[result], style=g.RESULT_STYLE[result])
        if not cols.narrow:
            text.append(" ")
    if restarts:
        mark = f"{g.RESTARTS}{restarts}" if restarts < 1000 else f"{g.RESTARTS}999+"
        text.append(mark.rjust(4), style=g.WARN)
    else:
        text.append("    ")
    if s.divergent:
        text.append(f" {g.DIVERGE}", style="magenta")
    return text
