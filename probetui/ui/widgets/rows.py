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


class _Entry:
    """One pod in the index: its names, which of its containers the filter lets through, and
    its sort keys, each kept until the pod changes."""

    __slots__ = ("facts", "keys", "matched", "pos", "restarts", "rows", "scores", "title")

    def __init__(self, facts: _PodFacts, pos: int) -> None:
        self.facts = facts
        self.pos = pos  # in the store's order: build_rows' ties fall to it
        pod = facts[0]
        self.title = pod.owner_name if facts[1] else pod.name
        self.matched: tuple[int, ...] = ()  # indices into facts[3]
        self.rows: tuple[Row, ...] = ()
        self.keys: dict[str, tuple] = {}  # sort -> this pod's order in it
        self.scores: tuple[int, ...] | None = None  # problem_score per container in facts[3]
        self.restarts: tuple[int, ...] | None = None


class _Block(NamedTuple):
    order: tuple
    pos: int
    rows: tuple[Row, ...]  # the replicas' lines, without the workload's own
    members: list[str]


class RowIndex:
    """The Workloads list's rows, as `build_rows` defines them, kept up to date from one
    listing to the next: only the pods that changed since are looked at again, a filter that
    narrows the last one tests only the pods it let through, and each workload's sorted block
    is kept per order until one of its pods changes. A keystroke in the filter or an `S` then
    costs the changed pods plus a sort of the workloads (a few hundred at most), not a walk of
    every pod's containers (12 ms of each at 2,000 pods, benchmarks/fleet)."""

    def __init__(self, store: Store, cache: dict[str, _PodFacts] | None = None) -> None:
        self.store = store
        self._cache: dict[str, _PodFacts] = {} if cache is None else cache
        self._layout = -1
        self._version = -1
        self._pods: dict[str, _Entry] = {}
        self._terms: tuple[str, ...] | None = None
        self._groups: dict[str, set[str]] = {}  # group id -> its pods the filter lets through
        self._loose: set[str] = set()  # pods of no workload the filter lets through
        self._blocks: dict[str, dict[str, _Block]] = {s: {} for s in SORTS}
        self.containers = 0  # lines the filter lets through, in every pod

    def listing(
        self, terms: list[str], sort: str, collapsed: set[str] | frozenset[str] = frozenset()
    ) -> Listing:
        if sort not in self._blocks:
            raise ValueError(f"unknown sort {sort!r}; one of {', '.join(SORTS)}")
        changed = self._sync()
        self._match(tuple(terms), changed)
        blocks = self._blocks[sort]
        order: list[tuple] = []
        for gid, uids in self._groups.items():
            block = blocks.get(gid)
            if block is None:
                block = blocks[gid] = self._block(uids, sort)
            order.append((block.order, 0, block.pos, gid))
        pods = self._pods
        for uid in self._loose:
            e = pods[uid]
            order.append((self._key(e, sort), 1, e.pos, uid))
        order.sort()
        rows: list[Row] = []
        members: dict[str, list[str]] = {}
        for _, loose, _, name in order:
            if loose:
                rows += pods[name].rows
                continue
            block = blocks[name]
            members[name] = block.members
            rows.append(Row("", None, name))
            if name not in collapsed:
                rows += block.rows
        return Listing(rows, members, len(self._loose) + sum(map(len, self._groups.values())),
                       self.containers)  # fmt: skip

    # -- keeping up with the store ----------------------------------------------------------

    def _sync(self) -> set[str]:
        """The pods changed since the last listing, their names and scores brought up to date;
        all of them where pods came or went (the store's order then changes too)."""
        store = self.store
        if store.layout_version != self._layout:
            self._layout = store.layout_version
            self._groups.clear()
            self._loose.clear()
            for blocks in self._blocks.values():
                blocks.clear()
            self.containers = 0
            if len(self._cache) > 2 * len(store.pods) + 64:
                self._cache.clear()  # the gone pods' names, dropped now and then
            changed = set(store.pods)
            self._pods = {
                uid: _Entry(_facts(entry.pod, self._cache), i)
                for i, (uid, entry) in enumerate(store.pods.items())
            }
            self._terms = None  # every pod is matched anew
        else:
            changed = {k.pod_uid for k in store.changed_since(self._version)}
            changed &= self._pods.keys()
            for uid in changed:
                e = self._pods[uid]
                facts = _facts(store.pods[uid].pod, self._cache)
                if facts is not e.facts:
                    # a new spec (an owner named anew): out of its workload, matched again
                    self._drop(uid)
                    self._pods[uid] = _Entry(facts, e.pos)
                else:
                    self._forget(uid, e)
        self._version = store.version
        return changed

    def _forget(self, uid: str, e: _Entry) -> None:
        """The pod's order and its workload's blocks are no longer known."""
        e.keys.clear()
        e.scores = e.restarts = None
        gid = e.facts[1]
        if gid:
            for blocks in self._blocks.values():
                blocks.pop(gid, None)

    def _drop(self, uid: str) -> None:
        """The pod out of every list it is in."""
        e = self._pods[uid]
        if e.matched:
            self._set_matched(uid, e, ())
        self._forget(uid, e)

    def _match(self, terms: tuple[str, ...], changed: set[str]) -> None:
        """Which containers the filter lets through: the changed pods', and every pod's where
        the filter changed; only those let through before where it narrowed."""
        old = self._terms
        if terms != old:
            if old is not None and all(any(o in t for t in terms) for o in old):
                # each old term is in a new one: what it did not let through stays out
                candidates = {uid for uid, e in self._pods.items() if e.matched} | changed
            else:
                candidates = set(self._pods)
            self._terms = terms
        else:
            candidates = changed
        pods = self._pods
        for uid in candidates:
            e = pods[uid]
            shown = e.facts[3]
            if terms:
                matched = tuple(
                    i for i, (_, searched) in enumerate(shown) if all(t in searched for t in terms)
                )
            else:
                matched = tuple(range(len(shown)))
            if matched != e.matched:
                self._set_matched(uid, e, matched)

    def _set_matched(self, uid: str, e: _Entry, matched: tuple[int, ...]) -> None:
        gid = e.facts[1]
        self.containers += len(matched) - len(e.matched)
        if e.matched and not matched:
            if gid:
                uids = self._groups[gid]
                uids.discard(uid)
                if not uids:
                    del self._groups[gid]
            else:
                self._loose.discard(uid)
        elif matched and not e.matched:
            if gid:
                self._groups.setdefault(gid, set()).add(uid)
            else:
                self._loose.add(uid)
        e.matched = matched
        shown = e.facts[3]
        e.rows = tuple(Row(uid, shown[i][0].name) for i in matched)
        self._forget(uid, e)

    # -- the order ----------------------------------------------------------------------------

    def _key(self, e: _Entry, sort: str) -> tuple:
        """build_rows' order of a pod: a workload's replica by its own, among the bare pods by
        its name; the problems and restarts are those of the containers let through."""
        key = e.keys.get(sort)
        if key is not None:
            return key
        pod = e.facts[0]
        if sort == "problems":
            scores = e.scores
            if scores is None:
                entry = self.store.pods[pod.uid]
                histories = self.store.containers
                scores = e.scores = tuple(
                    problem_score(entry, c, histories.get(ContainerKey(pod.uid, c.name)))
                    for c, _ in e.facts[3]
                )
            key = (-max(scores[i] for i in e.matched), pod.namespace, e.title)
        elif sort == "restarts":
            restarts = e.restarts
            if restarts is None:
                lookup = self.store.pods[pod.uid].status.lookup
                restarts = e.restarts = tuple(
                    cs.restart_count if (cs := lookup(c.name)) is not None else 0
                    for c, _ in e.facts[3]
                )
            key = (-sum(restarts[i] for i in e.matched), pod.namespace, e.title)
        else:
            key = (pod.namespace, e.title)
        e.keys[sort] = key
        return key

    def _block(self, uids: set[str], sort: str) -> _Block:
        """A workload's replicas in order: by their own order, then name (then the store's)."""
        pods = self._pods
        replicas = sorted(
            (self._key(e, sort), e.facts[0].name, e.pos, uid) for uid in uids for e in (pods[uid],)
        )
        rows: list[Row] = []
        for *_, uid in replicas:
            rows += pods[uid].rows
        # the workload sorts by its worst replica; among equals, where the store first has it
        return _Block(
            replicas[0][0], min(r[2] for r in replicas), tuple(rows), [r[3] for r in replicas]
        )


def build_rows(
    store: Store,
    terms: list[str],
    sort: str,
    collapsed: set[str] | frozenset[str] = frozenset(),
    cache: dict[str, _PodFacts] | None = None,
) -> Listing:
    """The rows for the filter's `terms` in `sort` order: each workload's line, then its pods
    (unless collapsed); a pod's containers stay together, a workload's pods too. Workloads
    and bare pods sort by their order (`problems`: the worst container first; `restarts`: the
    most restarts first; then namespace and name; a workload by its worst replica), ties in
    the store's order. `cache`: the caller's, to keep each pod's names from one build to the
    next. A list shown again and again keeps a `RowIndex` instead."""
    return RowIndex(store, cache).listing(terms, sort, collapsed)


__all__ = [
    "SORTS",
    "Columns",
    "Listing",
    "Row",
    "RowIndex",
    "build_rows",
    "columns",
    "fit",
    "header_text",
    "label",
    "pod_state",
]
