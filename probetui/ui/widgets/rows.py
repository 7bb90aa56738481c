"""Decide what the Workloads list shows and in which order, apart from how it is drawn.

A row is one container; its pod's name is on it (the container's too where the pod has
several), so a screen of N lines shows N containers. The columns are laid out for the width at
hand: at the 80-column terminal's narrow pane the probe letters go and the names keep the room.
"""

from __future__ import annotations

from typing import NamedTuple

from probetui.keys import ContainerKey
from probetui.prober.status import PodSnapshot
from probetui.spec.model import Container, Pod
from probetui.timeline.store import Store
from probetui.triage.groups import group_id, problem_score
from probetui.ui.glyphs import RESTARTS

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
    """Return the column widths for `width` cells (scrollbar excluded); `ns_len` 0: no
    namespaces."""
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
    suffix = f" r s SRL  {RESTARTS}   " if cols.narrow else f" rdy st probes     {RESTARTS}   "
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
    """Return the pod's state where it is not plain Running: the phase, or Terminating."""
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
    """Holds one pod in the index: its names, which of its containers the filter lets through, and
    its order in each sort, kept until the pod changes."""

    __slots__ = (
        "facts",
        "keys",
        "keys_for",
        "matched",
        "pos",
        "restarts",
        "rows",
        "scores",
        "title",
    )

    def __init__(self, facts: _PodFacts, pos: int) -> None:
        self.facts = facts
        self.pos = pos  # in the store's order: build_rows' ties fall to it
        pod = facts[0]
        self.title = pod.owner_name if facts[1] else pod.name
        self.matched: tuple[int, ...] = ()  # indices into facts[3]; (): filtered out
        # the containers that `rows`, `keys` and the workload's blocks were made for: a pod
        # filtered out and let through again as it was needs none of them anew
        self.keys_for: tuple[int, ...] = ()
        self.rows: tuple[Row, ...] = ()
        self.keys: dict[str, tuple] = {}  # sort -> this pod's order in it
        self.scores: tuple[int, ...] | None = None  # problem_score per container in facts[3]
        self.restarts: tuple[int, ...] | None = None


_LIVE_SORTS = tuple(s for s in SORTS if s != "name")  # orders that follow the pods' state
_ALL = tuple(tuple(range(n)) for n in range(8))  # every container of a pod of n


def _same_names(a: _PodFacts, b: _PodFacts) -> bool:
    """Tell whether two facts of a pod list it alike: same workload, names and containers."""
    return (
        a[1] == b[1]
        and a[0].name == b[0].name  # the searched names are lowered; titles keep their case
        and a[0].owner_name == b[0].owner_name
        and a[2] == b[2]
        and len(a[3]) == len(b[3])
        and all(x[1] == y[1] for x, y in zip(a[3], b[3], strict=True))
    )


class _Block(NamedTuple):
    order: tuple
    pos: int
    rows: tuple[Row, ...]  # the replicas' lines, without the workload's own
    members: list[str]
    uids: frozenset[str]  # the replicas it was sorted for: another filter may want others


class RowIndex:
    """Keeps the Workloads list's rows, as `build_rows` defines them, kept up to date from one
    listing to the next, so that a keystroke in the filter or an `S` costs what changed, not a
    walk of every pod's containers (guarded by benchmarks/fleet.py):

    - a pod is looked at again only when it changed since (`Store.changed_since`): its order
      in each sort computed anew, and its workload's block sorted again only where that order
      moved (most changes move nothing: a probe passing again, a status stamped anew);
    - the filter is matched over a flat list of every container's searched name, a scan in C,
      and only the pods it now lets through or leaves out otherwise than before are touched.
    """

    def __init__(self, store: Store, cache: dict[str, _PodFacts] | None = None) -> None:
        self.store = store
        self._cache: dict[str, _PodFacts] = {} if cache is None else cache
        self._layout = -1
        self._version = -1
        self._pods: dict[str, _Entry] = {}
        self._terms: tuple[str, ...] | None = None
        self._flat: list[tuple[str, str, int]] | None = None  # (searched, uid, container)
        self._hits: set[tuple[str, int]] = set()  # (uid, container) the filter lets through
        self._every: set[tuple[str, int]] = set()  # every (uid, container), with _flat
        self._groups: dict[str, set[str]] = {}  # group id -> its pods the filter lets through
        self._loose: set[str] = set()  # pods of no workload the filter lets through
        self._blocks: dict[str, dict[str, _Block]] = {s: {} for s in SORTS}
        self._stale: set[str] = set()  # pods whose order may have moved since the last listing
        self._renamed: set[str] = set()  # pods renamed since, by a catch_up, to match again
        # the sorts in which a pod's order moved since that sort was last listed: a catch-up
        # that moved one leaves a listing due even where nothing changes after it
        self._moved: set[str] = set()
        self.containers = 0  # lines the filter lets through, in every pod

    def listing(
        self, terms: list[str], sort: str, collapsed: set[str] | frozenset[str] = frozenset()
    ) -> Listing:
        if sort not in self._blocks:
            raise ValueError(f"unknown sort {sort!r}; one of {', '.join(SORTS)}")
        renamed = self._sync() | self._renamed
        self._renamed = set()
        self._match(tuple(terms), renamed)
        self._reorder()
        self._moved.discard(sort)
        blocks = self._blocks[sort]
        pods = self._pods
        order: list[tuple] = []
        for gid, uids in self._groups.items():
            block = blocks.get(gid)
            if block is None or block.uids != uids:
                block = blocks[gid] = self._block(uids, sort)
            order.append((block.order, 0, block.pos, gid))
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
        pods_shown = len(self._loose) + sum(map(len, self._groups.values()))
        return Listing(rows, members, pods_shown, self.containers)

    def catch_up(self, changed: list[ContainerKey], since: int) -> None:
        """Look at the pods changed since the last listing or catch-up now, so that the next
        listing has only what changes after this to look at. The screen calls it on each
        poll, so that the pods changed between two `S` presses are spread over the polls
        rather than all computed again in the second's listing. `changed`: the
        containers changed after version `since`, which the poll has read from the store
        already (the store's scan of every container is not made twice)."""
        self._renamed |= self._sync(changed if since <= self._version else None)
        self._reorder()

    def moved(self, sort: str) -> bool:
        """Tell whether a pod's order in `sort` moved, or a pod was renamed, since that sort was
        last listed: the list shown in it is out of order until it is listed again."""
        return sort in self._moved or bool(self._renamed)

    # -- keeping up with the store ----------------------------------------------------------

    def _sync(self, changed: list[ContainerKey] | None = None) -> set[str]:
        """Bring the changed pods up to date; return those whose names changed (to be matched
        again). Where pods came or went, everything anew: the store's order changed too.
        `changed`: at least the containers changed since the last sync, if known."""
        store = self.store
        if store.layout_version != self._layout:
            self._layout = store.layout_version
            self._groups.clear()
            self._loose.clear()
            for blocks in self._blocks.values():
                blocks.clear()
            self._stale.clear()
            self._renamed.clear()
            self.containers = 0
            if len(self._cache) > 2 * len(store.pods) + 64:
                self._cache.clear()  # the gone pods' names, dropped now and then
            self._pods = {
                uid: _Entry(_facts(entry.pod, self._cache), i)
                for i, (uid, entry) in enumerate(store.pods.items())
            }
            self._terms, self._flat, self._hits = None, None, set()  # all matched anew
            self._version = store.version
            return set()
        renamed: set[str] = set()
        pods = self._pods
        if changed is None:
            changed = store.changed_since(self._version)
        containers, since = store.containers, self._version
        # a container a replay's seek refilled as it listed before is not sorted again
        for uid in {
            k.pod_uid
            for k in changed
            if (c := containers.get(k)) is None or c.listed_since() > since
        }:
            e = pods.get(uid)
            if e is None:
                continue  # a container's events about a pod not (yet) listed
            facts = _facts(store.pods[uid].pod, self._cache)
            if facts is not e.facts and not _same_names(facts, e.facts):
                # an owner named anew: out of its workload, matched again
                self._drop(uid, e)
                pods[uid] = _Entry(facts, e.pos)
                renamed.add(uid)
                continue
            e.facts = facts
            e.scores = e.restarts = None
            self._stale.add(uid)
        if renamed:
            self._flat = None  # their searched names changed
        self._version = store.version
        return renamed

    def _drop(self, uid: str, e: _Entry) -> None:
        """The pod out of every list it is in."""
        if e.matched:
            self._set_matched(uid, e, ())

    def _match(self, terms: tuple[str, ...], renamed: set[str]) -> None:
        """Tell which containers the filter lets through, where the filter or the names changed."""
        if terms == self._terms and not renamed:
            return
        self._terms = terms
        flat = self._flat
        if flat is None:
            flat = self._flat = [
                (searched, uid, i)
                for uid, e in self._pods.items()
                for i, (_, searched) in enumerate(e.facts[3])
            ]
            self._every = {(uid, i) for _, uid, i in flat}
        for t in terms:
            flat = [f for f in flat if t in f[0]]
        hits = {(uid, i) for _, uid, i in flat} if terms else self._every
        touched = {uid for uid, _ in hits ^ self._hits}
        touched |= renamed
        self._hits = hits
        pods = self._pods
        for uid in touched:
            e = pods[uid]
            n = len(e.facts[3])
            if n == 1:  # most pods: no tuple built
                matched = _ALL[1] if (uid, 0) in hits else ()
            else:
                matched = tuple(i for i in range(n) if (uid, i) in hits)
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
        if matched and matched != e.keys_for:
            # its order is over the containers let through, and its workload's lines changed
            e.keys_for = matched
            shown = e.facts[3]
            e.rows = tuple(Row(uid, shown[i][0].name) for i in matched)
            e.keys.clear()
            if gid:
                for blocks in self._blocks.values():
                    blocks.pop(gid, None)

    # -- the order ----------------------------------------------------------------------------

    def _reorder(self) -> None:
        """The changed pods' order in each sort; a workload's block is sorted again only where
        a replica's order there moved. Every sort at each listing, so that an `S` costs what
        changed since the last keystroke, not since that order was last shown."""
        pods = self._pods
        for uid in self._stale:
            e = pods.get(uid)
            if e is None:
                continue
            gid = e.facts[1]
            for sort in _LIVE_SORTS:
                before = e.keys.pop(sort, None)
                if before is None or self._key(e, sort) == before:
                    continue  # not ordered in it yet (the next listing does), or in place
                self._moved.add(sort)
                if gid:
                    # filtered out too: the block kept may come back with it
                    self._blocks[sort].pop(gid, None)
        self._stale.clear()

    def _key(self, e: _Entry, sort: str) -> tuple:
        """build_rows' order of a pod: a workload's replica by its own, among the bare pods by
        its name; the problems and restarts are those of the containers let through (the
        last ones let through, while it is filtered out: its kept block may come back)."""
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
            key = (-max(scores[i] for i in e.keys_for), pod.namespace, e.title)
        elif sort == "restarts":
            restarts = e.restarts
            if restarts is None:
                lookup = self.store.pods[pod.uid].status.lookup
                restarts = e.restarts = tuple(
                    cs.restart_count if (cs := lookup(c.name)) is not None else 0
                    for c, _ in e.facts[3]
                )
            key = (-sum(restarts[i] for i in e.keys_for), pod.namespace, e.title)
        else:
            key = (pod.namespace, e.title)
        e.keys[sort] = key
        return key

    def _block(self, uids: set[str], sort: str) -> _Block:
        """Return a workload's replicas in order: by their own order, then name (then the
        store's)."""
        pods = self._pods
        replicas = sorted(
            (self._key(e, sort), e.facts[0].name, e.pos, uid) for uid in uids for e in (pods[uid],)
        )
        rows: list[Row] = []
        for *_, uid in replicas:
            rows += pods[uid].rows
        # the workload sorts by its worst replica; among equals, where the store first has it
        return _Block(
            replicas[0][0],
            min(r[2] for r in replicas),
            tuple(rows),
            [r[3] for r in replicas],
            frozenset(uids),
        )


def build_rows(
    store: Store,
    terms: list[str],
    sort: str,
    collapsed: set[str] | frozenset[str] = frozenset(),
    cache: dict[str, _PodFacts] | None = None,
) -> Listing:
    """Return the rows for the filter's `terms` in `sort` order: each workload's line, then its pods
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
