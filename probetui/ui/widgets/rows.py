"""What the Workloads list shows and in which order, apart from how it is drawn.

A row is one container; its pod's name is on it (the container's too where the pod has
several), so a screen of N lines shows N containers. The columns are laid out for the width at
hand: at the 80-column terminal's narrow pane the probe letters go and the names keep the room.
"""

from __future__ import annotations

from typing import NamedTuple

from probetui.prober.status import PodSnapshot
from probetui.spec.model import Container, Pod
from probetui.timeline.store import ContainerKey, Store
from probetui.triage.groups import group_id, problem_score

SORTS = ("name", "problems", "restarts")
# cells right of the name: ready, started, the probes, restarts, divergence
WIDE_SUFFIX = 23
NARROW_SUFFIX = 14
PREFIX = 2  # the cursor mark and the sidecar mark
# below this many cells for the names the probe letters go (they are in the header)
WIDE_NAMES = 18


class Row(NamedTuple):
    pod_uid: str  # "" on a group's line
    container: str | None  # None: a group's line
    group: str = ""  # the group's id (groups.group_id), on its line

    @property
    def key(self) -> ContainerKey | None:
        return ContainerKey(self.pod_uid, self.container) if self.container is not None else None


class Columns(NamedTuple):
    narrow: bool
    ns: int  # 0: no namespace column
    name: int


def columns(width: int, ns_len: int) -> Columns:
    """The column widths for `width` cells (scrollbar excluded); `ns_len` 0: no namespaces."""
    names = width - PREFIX - WIDE_SUFFIX
    narrow = names - (min(ns_len, names // 3) + 1 if ns_len else 0) < WIDE_NAMES
    names = width - PREFIX - (NARROW_SUFFIX if narrow else WIDE_SUFFIX)
    ns = 0
    if ns_len:
        # the namespace gives way to the pod name, which is what tells replicas apart
        ns = max(3, min(ns_len, names // 3))
        names -= ns + 1
    return Columns(narrow, ns, max(4, names))


def header_text(cols: Columns) -> str:
    ns = ("namespace" if cols.ns >= 9 else "ns"[: cols.ns]).ljust(cols.ns) + " " if cols.ns else ""
    name = "pod[/container]" if cols.name >= 15 else "pod"
    suffix = " r s SRL  ↺   " if cols.narrow else " rdy st probes     ↺   "
    return " " * PREFIX + ns + name[: cols.name].ljust(cols.name) + suffix


def fit(text: str, width: int) -> str:
    """`text` in `width` cells: cut in the middle, since replicas' names differ at the end."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    tail = min(5, (width - 1) // 2)
    return text[: width - 1 - tail] + "…" + (text[-tail:] if tail else "")


def label(pod: str, container: str | None, width: int) -> str:
    """`pod` or `pod/container`, shortening the pod name first: the container name is short
    and says which line of the pod this is."""
    if container is None:
        return fit(pod, width)
    full = f"{pod}/{container}"
    if len(full) <= width:
        return full
    keep = min(len(container), max(1, width // 2 - 1))
    return fit(pod, max(1, width - keep - 1)) + "/" + fit(container, keep)


def pod_state(entry: PodSnapshot) -> str:
    """The pod's state where it is not plain Running: the phase, or Terminating."""
    if entry.pod.deletion_timestamp is not None:
        return "Terminating"
    phase = entry.status.phase
    return "" if phase == "Running" else phase


class Listing(NamedTuple):
    rows: list[Row]
    members: dict[str, list[str]]  # group id -> its pods' uids, in order (collapsed too)
    pods: int  # that the filter lets through, collapsed ones included
    containers: int


# what a pod's rows need of its spec, kept while the Pod object is the same one
_PodFacts = tuple[Pod, str, str, tuple[tuple[Container, str], ...]]


def _facts(pod: Pod, cache: dict[str, _PodFacts] | None) -> _PodFacts:
    facts = cache.get(pod.uid) if cache is not None else None
    if facts is None or facts[0] is not pod:
        name = f"{pod.namespace}/{pod.owner_name}/{pod.name}".lower()
        shown = tuple((c, f"{name}/{c.name.lower()}") for c in pod.probed_containers())
        facts = (pod, group_id(pod), name, shown)
        if cache is not None:
            cache[pod.uid] = facts
    return facts


def build_rows(
    store: Store,
    terms: list[str],
    sort: str,
    collapsed: set[str] | frozenset[str] = frozenset(),
    cache: dict[str, _PodFacts] | None = None,
) -> Listing:
    """The rows for the filter's `terms` in `sort` order: each workload's line, then its pods
    (unless collapsed); a pod's containers stay together, a workload's pods too. `cache`: the
    caller's, to keep each pod's names from one build to the next (a filter's keystrokes)."""
    units: dict[str, tuple[tuple, list[tuple[tuple, str, list[Row]]]]] = {}
    loose: list[tuple[tuple, list[Row]]] = []
    pods = containers = 0
    if cache is not None and len(cache) > 2 * len(store.pods) + 64:
        # pods come and go: the gone ones' facts are dropped now and then, not at each build
        cache.clear()
    problems = sort == "problems"
    # a container's status is looked up only for the order that needs it: at 2,000 pods that is
    # a tenth of each filter keystroke's rebuild
    by_restarts = sort == "restarts"
    histories = store.containers
    for entry in store.pods.values():
        pod, gid, _, shown = _facts(entry.pod, cache)
        rows: list[Row] = []
        worst = restarts = 0
        lookup = entry.status.lookup
        for c, searched in shown:
            if terms and not all(t in searched for t in terms):
                continue
            rows.append(Row(pod.uid, c.name))
            if problems:
                worst = max(
                    worst, problem_score(entry, c, histories.get(ContainerKey(pod.uid, c.name)))
                )
            if by_restarts:
                cs = lookup(c.name)
                restarts += cs.restart_count if cs is not None else 0
        if not rows:
            continue
        pods += 1
        containers += len(rows)
        # a group sorts by its worst pod, among the bare pods, by the name it shows
        title = pod.owner_name if gid else pod.name
        if problems:
            order: tuple = (-worst, pod.namespace, title)
        elif sort == "restarts":
            order = (-restarts, pod.namespace, title)
        else:
            order = (pod.namespace, title)
        if not gid:
            loose.append((order, rows))
            continue
        unit = units.get(gid)
        if unit is None:
            units[gid] = (order, [(order, pod.name, rows)])
        else:
            unit[1].append((order, pod.name, rows))
            if sort != "name":
                units[gid] = (min(unit[0], order), unit[1])
    blocks: list[tuple[tuple, int, list[Row]]] = [(o, 1, r) for o, r in loose]
    members: dict[str, list[str]] = {}
    for gid, (order, replicas) in units.items():
        replicas.sort(key=lambda p: (p[0], p[1]))
        members[gid] = [rows[0].pod_uid for _, _, rows in replicas]
        block = [Row("", None, gid)]
        if gid not in collapsed:
            block += [row for _, _, rows in replicas for row in rows]
        blocks.append((order, 0, block))
    blocks.sort(key=lambda b: (b[0], b[1]))
    return Listing([row for _, _, rows in blocks for row in rows], members, pods, containers)


__all__ = [
    "SORTS",
    "Columns",
    "Listing",
    "Row",
    "build_rows",
    "columns",
    "fit",
    "header_text",
    "label",
    "pod_state",
]
