"""The store a replay's screen reads, and how a seek builds the state at a moment into a fresh one.

`ReplayStore` is a timeline `Store` (the live read model: the same feeding, the same reading)
with what only a replay needs:

- a recorded doProbe is fed as its shape and its own numbers (`feed_shape`), without building
  its record and event;
- a seek builds the state at the cursor into a fresh store (`fresh_for_seek`) and swaps it in
  (`swap_in`): the screen reads one store object throughout, and sees the new state with one
  version bump. The fresh store takes back the objects of the pods, containers and probes the
  old state held, emptied, as it is fed: where the same pods come back in the same order the
  list keeps its layout (at 15,000 containers a relayout is a large part of a seek's repaint),
  and a container whose listed state came back as it was is marked so
  (`ContainerHistory.listed_same_since`), so the list does not sort it again;
- a probe that did the same thing all through a seek's window may be given its state without
  its entries (`defer_entries`); its `LazyHistory` is filled from the recording, through
  `loader`, before anything reads its entries (`fill_read`, `fill_deferred`), and no version
  moves, since the entries are what was always there to read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.results import ResultValue
from probetui.prober.status import PodSnapshot, PodStatus
from probetui.replay.lazy import LazyHistory
from probetui.spec.model import Pod
from probetui.timeline.history import RecordShape
from probetui.timeline.store import (
    DEFAULT_CAPACITY,
    DEFAULT_DETAIL,
    DEFAULT_HISTORY_SECONDS,
    DEFAULT_MARKS,
    ContainerHistory,
    Store,
)

# deferred histories filled with one that is read (`ReplayStore.fill_read`)
FILL_AROUND = 63


def listed(c: ContainerHistory, entry: PodSnapshot | None) -> tuple[object, ...]:
    """Return what the list shows of a container and sorts it by (`triage.groups.problem_score`,
    the rows' cells): its pod's spec and status, divergences, and per probe the published and
    last result, whether a run is under way, the hold and the pause."""
    probes = c.probes
    if entry is None:
        head: tuple[object, ...] = (None, None, c.divergences)
    else:
        head = (entry.pod, entry.status, c.divergences)
    if len(probes) == 1:
        # most containers have one probe: the same, without a generator (two passes over
        # 15,000 of them in a seek)
        for pt, h in probes.items():
            return (*head, pt, h.published, h.last_result, h.in_run, h.on_hold, h.paused)
    out = list(head)
    for pt, h in probes.items():
        out += (pt, h.published, h.last_result, h.in_run, h.on_hold, h.paused)
    return tuple(out)


@dataclass(slots=True)
class _TakenBack:
    """Keeps what the screen's store held when a seek began, taken back by the fresh store
    as fed."""

    pods: dict[str, PodSnapshot]
    containers: dict[ContainerKey, ContainerHistory]
    probes: dict[ProbeKey, LazyHistory]
    order: list[str]  # the pods, in the store's order then
    listed: dict[ContainerKey, tuple[int, tuple[object, ...]]]  # (listed_since, listed)
    added: bool = False  # a pod or container that was not there before


class ReplayStore(Store):
    """Acts as a `Store` fed from a recording: by shapes, rebuilt fresh at each seek, filled
    lazily."""

    def __init__(
        self,
        *,
        capacity: int = DEFAULT_CAPACITY,
        detail: int = DEFAULT_DETAIL,
        marks: int = DEFAULT_MARKS,
        history_seconds: float = DEFAULT_HISTORY_SECONDS,
    ) -> None:
        super().__init__(
            capacity=capacity, detail=detail, marks=marks, history_seconds=history_seconds
        )
        self._taken: _TakenBack | None = None
        # histories given their state and not yet their entries (`defer_entries`), and what
        # feeds them their entries (the player: the same feeding an eager seek does)
        self._deferred: dict[ProbeKey, LazyHistory] = {}
        self.loader: Callable[[list[ProbeKey]], None] | None = None
        # the store whose readers fill the deferred histories: this one, or the screen's
        # where this is a seek's fresh store (its histories are read once it is swapped in)
        self._filler: ReplayStore = self
        # what each container listed when the last seek was swapped in, at its version then:
        # the next seek takes it back as it stands where that version has not moved
        self._listed: dict[ContainerKey, tuple[int, tuple[object, ...]]] = {}

    # -- a seek: a fresh store, swapped in ------------------------------------------------

    def fresh_for_seek(self) -> ReplayStore:
        """Make an empty store for a seek: its versions go on from this one's, and it takes
        back this one's pods, containers and probes, emptied, as they are fed again."""
        for h in self._deferred.values():
            h.filled()  # refilled or gone with the rest: never filled from an old seek
        self._deferred.clear()
        fresh = ReplayStore(
            capacity=self.capacity,
            detail=self.detail,
            marks=self.marks_per_container,
            history_seconds=self.history_seconds,
        )
        pods, known = self.pods, self._listed
        was = {}
        for k, c in self.containers.items():
            seen = known.get(k)
            if seen is None or seen[0] != c.version:
                seen = (0, listed(c, pods.get(k.pod_uid)))
            was[k] = (c.listed_since(), seen[1])
        probes = cast(dict[ProbeKey, LazyHistory], self.probes)
        fresh._taken = _TakenBack(dict(pods), dict(self.containers), dict(probes), list(pods), was)
        fresh.version = self.version + 1
        fresh.layout_version = self.layout_version
        fresh.events = self.events
        fresh.loader = self.loader
        fresh._filler = self
        return fresh

    def swap_in(self, fresh: ReplayStore) -> None:
        """Take `fresh` (made by this store's `fresh_for_seek`) as this store's state in one
        step, one version bump for its readers: what was not fed again is gone."""
        r, fresh._taken = fresh._taken, None
        self.pods, self.containers, self.probes = fresh.pods, fresh.containers, fresh.probes
        self.kubelet_counts = fresh.kubelet_counts
        # a fresh intern table rather than each history giving its texts back: that walked
        # every ring and detail slot; a history still held by a reader keeps the old table
        self.texts = fresh.texts
        self._by_cid = fresh._by_cid
        self.events = fresh.events
        self._deferred, fresh._deferred = fresh._deferred, {}
        self.layout_version = fresh.layout_version
        self.version = fresh.version
        self.restart_log()  # the containers are fresh's: a reader from before walks them all
        if r is None:
            return
        for h in r.probes.values():
            h.owner = None  # no cycle left: freed at once, also where gc is frozen
        for c in r.containers.values():
            c.probes.clear()
        self._listed = {}
        if r.added or r.pods or r.containers or list(self.pods) != r.order:
            self.layout_version = self.version
            return
        containers, pods, now = self.containers, self.pods, self._listed
        for key, (since, was) in r.listed.items():
            c = containers.get(key)
            if c is None:
                continue
            shown = listed(c, pods.get(key.pod_uid))
            now[key] = (c.version, shown)
            if shown == was:
                c.listed_same_since, c.listed_same_at = since, c.version

    # -- feeding ----------------------------------------------------------------------

    def feed_shape(
        self, key: ProbeKey, t: float, latency: float, run: int, shape: RecordShape
    ) -> None:
        """Feed a recorded doProbe as what it shares with the other records of its shape and
        what is its own (no next tick: a recording has none), as `event()` of its event
        would: a seek feeds 15,000 of them, and building each record and event was a third
        of the feeding."""
        self.events += 1
        self.version += 1
        self._apply_to(self._probe(key), t, latency, run, None, shape)

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        r = self._taken
        if r is None or status is None:
            Store.pod(self, pod, status)
            return
        uid = pod.uid
        entry = self.pods.get(uid)
        if entry is None:
            entry = r.pods.pop(uid, None)
            if entry is None:
                r.added = True
                Store.pod(self, pod, status)
                return
            self.pods[uid] = entry
        # a seek feeds its fresh store every pod: a taken-back entry is updated here as
        # `Store.pod` updates one, its containers stamped, not logged, without a call each
        self.version += 1
        v = self.version
        if entry.pod is not pod and entry.pod.probed_containers() != pod.probed_containers():
            self.layout_version = v
        entry.pod, entry.status, entry.version = pod, status, v
        for c in pod.probed_containers():
            self._container(ContainerKey(uid, c.name)).version = v

    def _container(self, key: ContainerKey) -> ContainerHistory:
        c = self.containers.get(key)
        if c is None:
            r = self._taken
            c = r.containers.pop(key, None) if r is not None else None
            if c is None:
                if r is not None:
                    r.added = True
                return super()._container(key)
            c.marks.clear()
            c.reports.clear()
            c.probes.clear()
            c.divergences, c.last_divergence = 0, ""
            self.containers[key] = c
        return c

    def _probe(self, key: ProbeKey) -> LazyHistory:
        # every history of a replay's store is a LazyHistory (made here and in
        # `defer_entries`)
        h: LazyHistory | None = self.probes.get(key)  # type: ignore[assignment]
        if h is not None:
            if h.deferred:
                # what comes after a deferred history's entries needs them before it
                self.fill_deferred((key,))
            return h
        r = self._taken
        h = r.probes.pop(key, None) if r is not None else None
        if h is not None:
            h.renew(self.texts, self._capacity_for(key), self.detail)
        else:
            h = LazyHistory(key, self.texts, self._capacity_for(key), self.detail)
        self.probes[key] = h
        owner = self._container(ContainerKey(key.pod_uid, key.container))
        owner.probes[key.probe_type] = h
        h.owner = owner
        return h

    def _drop_pod(self, uid: str) -> None:
        for ckey in [k for k in self.containers if k.pod_uid == uid]:
            for h in self.containers[ckey].probes.values():
                if self._deferred.pop(h.key, None) is not None:
                    cast(LazyHistory, h).filled()
        super()._drop_pod(uid)

    def _changed(self, c: ContainerHistory) -> None:
        if self._taken is not None:
            # a store built for a seek is swapped in whole, and the change log starts again
            # there (`swap_in`): its containers need their version stamped, not logged
            c.version = self.version
            return
        Store._changed(self, c)

    # -- deferred entries -------------------------------------------------------------------

    def defer_entries(self, key: ProbeKey, shape: RecordShape) -> None:
        """Give a probe the state its records, all of `shape`, would leave (a run under way)
        without its entries: a seek into a stretch where the probe did the same thing every
        time. Whatever reads its entries, exact run or totals has them fed first; the list
        reads the state alone, and 15,000 probes cost a seek no decoding."""
        h: LazyHistory | None = self.probes.get(key)  # type: ignore[assignment]
        # its pod was fed first: the container is there (a plain tuple finds it)
        owner = self.containers.get(key[:2]) or self._container(ContainerKey(*key[:2]))
        if h is None:
            r = self._taken
            h = r.probes.pop(key, None) if r is not None else None
            if h is None:
                h = LazyHistory(key, self.texts, self._capacity_for(key), self.detail)
            self.probes[key] = h
            owner.probes[key.probe_type] = h
            h.owner = owner
            # a history taken back keeps its old entries until it is filled: every reader
            # of them fills it first
            h.next_tick = None
        elif not h.deferred:
            raise ValueError(f"{key}: already fed, cannot be deferred")
        cid = shape.container_id
        if cid and cid not in self._by_cid:
            self._by_cid[cid] = owner.key
        h.last_result, h.published = shape.last_result, shape.published
        h.on_hold, h.paused = shape.on_hold, shape.paused
        h.in_run = True
        h.defer(self._filler)
        self._deferred[key] = h
        if self._taken is not None:
            owner.version = self.version  # a seek's fresh store stamps, as `_changed` does
        else:
            self._changed(owner)

    def fill_deferred(self, keys: Iterable[ProbeKey] | None = None) -> None:
        """Fill deferred histories (all of them without `keys`): each emptied and fed by the
        loader. Their state comes back as it was, so no reader's version moves: the entries
        are what was always there to read."""
        deferred = self._deferred
        if not deferred:
            return
        if keys is None:
            chosen = list(deferred.values())
            deferred.clear()
        else:
            chosen = [h for k in keys if (h := deferred.pop(k, None)) is not None]
        if not chosen:
            return
        loader = self.loader
        if loader is None:
            raise RuntimeError("deferred histories and nothing to fill them")
        version, events = self.version, self.events
        kept = []
        for h in chosen:
            h.filled()
            kept.append((h, h.owner.version if h.owner is not None else 0, _state_of(h)))
            h.empty_for_filling(self.texts, self._capacity_for(h.key), self.detail)
        loader([h.key for h in chosen])
        self.version, self.events = version, events
        for h, owner_version, state in kept:
            if h.owner is not None:
                h.owner.version = owner_version
            if not len(h):
                # nothing fed (its pod went in between): it stands as it was given
                h.last_result, h.published, h.on_hold, h.paused, h.in_run = state

    def fill_read(self, key: ProbeKey) -> None:
        """`fill_deferred` of a deferred history being read, and of some more: a reader of
        one often reads its neighbours next (a pane, a workload, a loop over all), and
        filling some at once costs one read of the recording, not one each."""
        if key in self._deferred:
            self.fill_deferred([key, *itertools.islice(self._deferred, FILL_AROUND)])

    def deferred(self) -> int:
        """Count the histories given their state and not yet their entries."""
        return len(self._deferred)

    def deferred_keys(self, n: int) -> list[ProbeKey]:
        """Return up to `n` of the deferred histories' keys, in the order they were deferred."""
        return list(itertools.islice(self._deferred, n))


def _state_of(
    h: LazyHistory,
) -> tuple[ResultValue | None, ResultValue | None, bool, bool, bool]:
    return h.last_result, h.published, h.on_hold, h.paused, h.in_run


__all__ = ["FILL_AROUND", "ReplayStore", "listed"]
