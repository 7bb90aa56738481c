"""Pods under their workload in the Workloads list: the group's id, its summary and its line.

A group is the controller the cluster names for a pod (`Pod.owner_kind`/`owner_name`: a
Deployment, StatefulSet, DaemonSet, Job, CronJob, ...). Pods without one (bare pods, a
manifest's, the demo's) stand alone, one line per container as everywhere. The group's line
answers "is it one bad replica or the whole workload?" before any replica is read.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text

from probetui.prober.results import ResultValue
from probetui.spec.model import ProbeType
from probetui.timeline.store import ContainerKey, Store
from probetui.ui import glyphs as g
from probetui.ui.widgets.rows import PROBE_ORDER, Columns, fit, problem_score

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
# which replica's result stands for the group's, per probe: the most alarming
RANK = {None: 0, ResultValue.SUCCESS: 1, ResultValue.UNKNOWN: 2, ResultValue.FAILURE: 3}


def group_title(gid: str) -> tuple[str, str]:
    """(namespace, "deploy payments") for a group id."""
    ns, kind, name = gid.split("/", 2)
    return ns, f"{SHORT.get(kind, kind.lower())} {name}"


class Summary(NamedTuple):
    replicas: int
    ready: int  # the kubelet's: replicas with every container Ready
    shadow_not_ready: int  # replicas whose readiness the shadow publishes as Failure
    started: bool  # every container of every replica started
    divergent: int
    restarts: int
    worst: tuple[ResultValue | bool | None, ...]  # per PROBE_ORDER; False: no replica has it


def summarize(store: Store, uids: list[str]) -> Summary:
    ready = shadow = divergent = restarts = 0
    started = True
    worst: list[ResultValue | bool | None] = [False] * len(PROBE_ORDER)
    for uid in uids:
        entry = store.pods.get(uid)
        if entry is None:
            continue
        all_ready, diverged, failing = True, False, False
        for c in entry.shown_containers():
            cs = entry.status.lookup(c.name)
            all_ready = all_ready and cs is not None and cs.ready
            started = started and cs is not None and bool(cs.started)
            restarts += cs.restart_count if cs is not None else 0
            history = store.containers.get(ContainerKey(uid, c.name))
            diverged = diverged or (history is not None and history.divergences > 0)
            for i, pt in enumerate(PROBE_ORDER):
                if c.probe(pt) is None:
                    continue
                result = history.published(pt) if history is not None else None
                if pt is ProbeType.READINESS and result is ResultValue.FAILURE:
                    failing = True
                shown = worst[i]
                if shown is False or RANK[result] > RANK[shown]:  # type: ignore[index]
                    worst[i] = result
        ready += all_ready
        divergent += diverged
        shadow += failing
    return Summary(len(uids), ready, shadow, started, divergent, restarts, tuple(worst))


def worst_member(store: Store, uids: list[str]) -> ContainerKey | None:
    """The replica's container that most needs looking at (the first, where none does)."""
    best: tuple[int, ContainerKey] | None = None
    for uid in uids:
        entry = store.pods.get(uid)
        if entry is None:
            continue
        for c in entry.shown_containers():
            key = ContainerKey(uid, c.name)
            score = problem_score(entry, c, store.containers.get(key))
            if best is None or score > best[0]:
                best = (score, key)
    return best[1] if best is not None else None


def group_text(gid: str, s: Summary, cols: Columns, collapsed: bool, selected: bool) -> Text:
    """`▸+ deploy payments 3/5 ✖2 ≠1   ✗  ✓  S· R✖ L●  ↺7 ≠`, in the container lines' columns:
    ready / started for all replicas, each probe's worst published result, restarts summed."""
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
        title = bare  # the fold mark says it is a workload; the name says which
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
    if s.restarts:
        mark = f"{g.RESTARTS}{s.restarts}" if s.restarts < 1000 else f"{g.RESTARTS}999+"
        text.append(mark.rjust(4), style=g.WARN)
    else:
        text.append("    ")
    if s.divergent:
        text.append(f" {g.DIVERGE}", style="magenta")
    return text
