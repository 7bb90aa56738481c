"""Keep the bounded history behind the UI: attempts per probe, kubelet marks, the pods table.

The store is an engine sink. It keeps, per probe worker, a ring of every doProbe (attempt or
skip), a `ProbeHistory` (`history.py`: the bit-packed entries, their layout and the intern
table their texts share), so an hour of 15,000 workers fits in a few hundred megabytes: no
Python object per attempt. The store sizes each ring by its probe's period, feeds it the
engine's records, and keeps beside the rings the kubelet's marks per container and the pods
table. Only the last `detail` attempts of each probe keep the texts the attempt log shows
beyond the output.

Readers poll: `version` bumps on every change, each container and the pods table carry the
version of their last change, so a UI repaints only what changed since it last looked.

A replay's seek may give a probe its state without its entries (`defer`); the history then
fills itself from the recording, through `loader`, before anything reads its entries.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.results import ResultValue
from probetui.prober.status import PodSnapshot, PodStatus
from probetui.prober.worker import ProbeRecord, WorkerState
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import KUBELET_PROBE_COUNTS, WORKER_STATE, Event
from probetui.timeline.history import (
    OTHER_SKIP,
    SKIP_CODE,
    TRIGGER_CODE,
    Kind,
    ProbeHistory,
    Texts,
    kind_of,
)

# -- sizing -------------------------------------------------------------------------------

DEFAULT_CAPACITY = 3600  # per probe at most: an hour at period 1 s
# what each ring should cover: the ring is sized by the probe's period so that memory is set by
# time, not by how fast a probe runs (guarded by benchmarks/history.py)
DEFAULT_HISTORY_SECONDS = 3600.0
# slack over one entry per period: kubelet-triggered and manual attempts, skips
HISTORY_SLACK = 1.5
MIN_CAPACITY = 64
DEFAULT_DETAIL = 50  # per probe: attempts whose body, target and event text are kept
DEFAULT_MARKS = 256  # per container: starts, exits, kills, back-offs, Ready changes ...
# per probe: the kubelet's counts windows kept (a window is a minute: the last half hour)
KUBELET_WINDOWS = 30
# deferred histories filled with one that is read (`Store.materialize`)
FILL_AROUND = 63


# -- containers and pods ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mark:
    """Something that happened to a container: a start, an exit, a kill, a Ready change ..."""

    t: float
    type: str  # the event vocabulary: ContainerStarted, Killing, BackOff, ReadyChanged, ...
    source: str
    probe: str | None
    fields: dict


# what the kubelet said about probes, once per failed attempt: kept apart so that a flood of
# them never pushes the rare starts and kills out of `marks`
REPORTS = frozenset({"Unhealthy", "ProbeWarning"})


@dataclass(slots=True)
class ContainerHistory:
    key: ContainerKey
    marks: deque[Mark]
    reports: deque[Mark]
    probes: dict[ProbeType, ProbeHistory] = field(default_factory=dict)
    divergences: int = 0
    last_divergence: str = ""
    version: int = 0
    # set by a refill (`Store.settle`) that left what the list shows of it as it was: at
    # version `same_at` it lists as it did at `same_as`, so a list that looked at it since
    # need not sort it again (a replay's seek touches all 15,000 containers)
    same_as: int = -1
    same_at: int = -1

    def listed_since(self) -> int:
        """The version since which what the list shows and sorts by is as it is now."""
        return self.same_as if self.version == self.same_at else self.version

    def published(self, probe_type: ProbeType) -> ResultValue | None:
        h = self.probes.get(probe_type)
        return h.published if h is not None else None


def _listed(c: ContainerHistory, entry: PodSnapshot | None) -> tuple[object, ...]:
    """What the list shows of a container and sorts it by (`triage.groups.problem_score`,
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
class _Refill:
    """What the store held when a refill began (`Store.rebase`), taken back as it is fed."""

    pods: dict[str, PodSnapshot]
    containers: dict[ContainerKey, ContainerHistory]
    probes: dict[ProbeKey, ProbeHistory]
    order: list[str]  # the pods, in the store's order then
    listed: dict[ContainerKey, tuple[int, tuple[object, ...]]]  # (listed_since, _listed)
    added: bool = False  # a pod or container that was not there before


class Store:
    """An engine sink: bounded history of every probe and container, read by the UI."""

    def __init__(
        self,
        *,
        capacity: int = DEFAULT_CAPACITY,
        detail: int = DEFAULT_DETAIL,
        marks: int = DEFAULT_MARKS,
        history_seconds: float = DEFAULT_HISTORY_SECONDS,
    ) -> None:
        self.capacity = capacity
        self.history_seconds = history_seconds
        self.detail = detail
        self.marks_per_container = marks
        self.texts = Texts()
        self.pods: dict[str, PodSnapshot] = {}
        self.containers: dict[ContainerKey, ContainerHistory] = {}
        self.probes: dict[ProbeKey, ProbeHistory] = {}
        # container IDs seen in records: a ResultChanged names the ID, maybe not the container
        self._by_cid: dict[str, ContainerKey] = {}
        self.version = 0
        self.layout_version = 0  # pods or containers added or removed
        self.events = 0
        self._refill: _Refill | None = None
        # histories given their state and not yet their entries (`defer`), and what feeds
        # them their entries (a replay's player: the same feeding an eager seek does)
        self._deferred: dict[ProbeKey, ProbeHistory] = {}
        self.loader: Callable[[list[ProbeKey]], None] | None = None
        # per probe, the node agent's windows of the kubelet's counts beside the shadow's
        # (KubeletProbeCounts), newest last: the threshold pane sums the recent ones
        self.kubelet_counts: dict[ProbeKey, deque[Event]] = {}

    # -- Sink -------------------------------------------------------------------------

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.version += 1
        if status is None:
            self._drop_pod(pod.uid)
            self.layout_version = self.version
            return
        entry = self.pods.get(pod.uid)
        if entry is None and self._refill is not None:
            entry = self._refill.pods.pop(pod.uid, None)
            if entry is not None:
                self.pods[pod.uid] = entry
        if entry is None:
            self.pods[pod.uid] = PodSnapshot(pod, status, self.version)
            self.layout_version = self.version
            if self._refill is not None:
                self._refill.added = True
        else:
            # the same spec (a replay's seek: decoded once per recording) has the same lines
            if entry.pod is not pod and entry.pod.probed_containers() != pod.probed_containers():
                self.layout_version = self.version
            entry.pod, entry.status, entry.version = pod, status, self.version
        for c in pod.probed_containers():
            self._container(ContainerKey(pod.uid, c.name)).version = self.version

    def event(self, event: Event) -> None:
        self.events += 1
        self.version += 1
        type_ = event.type
        if type_ in ("ProbeAttempt", "ProbeSkipped"):
            self._record(event)
        elif type_ == "ResultChanged":
            self._result_changed(event)
        elif type_ == KUBELET_PROBE_COUNTS:
            self._counts(event)
        elif type_ == WORKER_STATE:
            if event.state is not None:
                key = event.state.key
                h = self.probes.get(key)  # a worker of a pod gone: nothing to keep
                if h is None and key.pod_uid in self.pods:
                    # a worker known by its state alone (a node agent's summary)
                    h = self._probe(key)
                if h is not None:
                    self._state(h, event.state)
                    self._touch(h)
        else:
            self._mark(event)

    def shaped(self, key: ProbeKey, t: float, latency: float, run: int, shape: RecordShape) -> None:
        """`event()` of a recorded doProbe given as what it shares with the other records of
        its shape and what is its own (no next tick: a recording has none): a replay's seek
        feeds 15,000 of them, and building each record, its outcome, attempt and event was a
        third of the feeding."""
        self.events += 1
        self.version += 1
        self._apply(key, t, latency, run, None, shape)

    def defer(self, key: ProbeKey, shape: RecordShape) -> None:
        """A probe's state without its entries (a replay's seek into a stretch where the probe
        did the same thing every time: what its records, all of `shape`, would leave, with a
        run under way).
        Whatever reads its entries, exact run or totals has `materialize` feed them first
        through `loader`, so it reads what feeding them at once would have left; the list
        reads the state alone, and 15,000 probes cost a seek no decoding."""
        h = self.probes.get(key)
        # its pod was fed first: the container is there (a plain tuple finds it)
        owner = self.containers.get(key[:2]) or self._container(ContainerKey(*key[:2]))
        if h is None:
            r = self._refill
            h = r.probes.pop(key, None) if r is not None else None
            if h is None:
                h = ProbeHistory(key, self.texts, self._capacity_for(key), self.detail)
            self.probes[key] = h
            owner.probes[key.probe_type] = h
            h.owner = owner
            # a history taken back keeps its old entries until it is filled: every reader
            # of them fills it first
            h.next_tick = None
        elif not h.deferred:
            raise ValueError(f"{key}: already fed, cannot be deferred")
        cid = shape[6]
        if cid and cid not in self._by_cid:
            self._by_cid[cid] = owner.key
        h.last_result, h.published, h.on_hold, h.paused = shape[7:]
        h.in_run = True
        h.defer(self)
        self._deferred[key] = h
        owner.version = self.version

    def materialize(self, keys: Iterable[ProbeKey] | None = None) -> None:
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
            h.refill(self.texts, self._capacity_for(h.key), self.detail)
        loader([h.key for h in chosen])
        self.version, self.events = version, events
        for h, owner_version, state in kept:
            if h.owner is not None:
                h.owner.version = owner_version
            if not len(h):
                # nothing fed (its pod went in between): it stands as it was given
                h.last_result, h.published, h.on_hold, h.paused, h.in_run = state

    def fill_read(self, key: ProbeKey) -> None:
        """`materialize` of a deferred history being read, and of some more: a reader of one
        often reads its neighbours next (a pane, a workload, a loop over all), and filling
        some at once costs one read of the recording, not one each."""
        if key in self._deferred:
            self.materialize([key, *itertools.islice(self._deferred, FILL_AROUND)])

    def deferred(self) -> int:
        """Histories given their state and not yet their entries."""
        return len(self._deferred)

    def deferred_keys(self, n: int) -> list[ProbeKey]:
        """Up to `n` of the deferred histories' keys, in the order they were deferred."""
        return list(itertools.islice(self._deferred, n))

    def rebase(self) -> None:
        """Begin a refill (a replay's seek): the store is empty (the versions go on rising, so
        every reader redraws), and what is fed until `settle` takes back the objects of the
        pods, containers and probes it held, emptied. Where the same pods and containers come back, in the same order, the layout
        stays (the list is not rebuilt, the larger part of a seek's repaint), and a container
        whose listed state came back as it was is marked so (`ContainerHistory.same_as`): the
        list does not sort it again."""
        if self._refill is not None:
            self.settle()
        for h in self._deferred.values():
            h.filled()  # refilled or gone with the rest: never filled from an old seek
        self._deferred.clear()
        pods = self.pods
        listed = {
            k: (c.listed_since(), _listed(c, pods.get(k.pod_uid)))
            for k, c in self.containers.items()
        }
        self._refill = _Refill(pods, self.containers, self.probes, list(pods), listed)
        self.pods, self.containers, self.probes = {}, {}, {}
        self.kubelet_counts = {}
        # a fresh intern table rather than each history giving its texts back, which would walk
        # every ring and detail slot at every seek; a history still held by a reader keeps the
        # old table and reads on
        self.texts = Texts()
        self._by_cid.clear()
        self.version += 1

    def settle(self) -> None:
        """End a refill: what was not fed again is gone."""
        r = self._refill
        if r is None:
            return
        self._refill = None
        for h in r.probes.values():
            h.owner = None  # no cycle left: freed at once, also where gc is frozen
        for c in r.containers.values():
            c.probes.clear()
        if r.added or r.pods or r.containers or list(self.pods) != r.order:
            self.layout_version = self.version
            return
        containers, pods = self.containers, self.pods
        for key, (since, was) in r.listed.items():
            c = containers.get(key)
            if c is not None and _listed(c, pods.get(key.pod_uid)) == was:
                c.same_as, c.same_at = since, c.version

    # -- the parts --------------------------------------------------------------------

    def _container(self, key: ContainerKey) -> ContainerHistory:
        c = self.containers.get(key)
        if c is None:
            r = self._refill
            c = r.containers.pop(key, None) if r is not None else None
            if c is not None:
                c.marks.clear()
                c.reports.clear()
                c.probes.clear()
                c.divergences, c.last_divergence = 0, ""
            else:
                n = self.marks_per_container
                c = ContainerHistory(key, deque(maxlen=n), deque(maxlen=n))
                if r is not None:
                    r.added = True
            self.containers[key] = c
        return c

    def _probe(self, key: ProbeKey) -> ProbeHistory:
        h = self.probes.get(key)
        if h is not None and h.deferred:
            # what comes after a deferred history's entries needs them before it
            self.materialize((key,))
        elif h is None:
            r = self._refill
            h = r.probes.pop(key, None) if r is not None else None
            if h is not None:
                h.renew(self.texts, self._capacity_for(key), self.detail)
            else:
                h = ProbeHistory(key, self.texts, self._capacity_for(key), self.detail)
            self.probes[key] = h
            owner = self._container(ContainerKey(key.pod_uid, key.container))
            owner.probes[key.probe_type] = h
            h.owner = owner
        return h

    def _capacity_for(self, key: ProbeKey) -> int:
        """Entries for `history_seconds` of this probe at its period, within [64, capacity]."""
        entry = self.pods.get(key.pod_uid)
        container = entry.pod.container(key.container) if entry is not None else None
        probe = container.probe(key.probe_type) if container is not None else None
        if probe is None or probe.period_seconds <= 0:
            return self.capacity
        wanted = int(HISTORY_SLACK * self.history_seconds / probe.period_seconds) + 1
        return max(min(wanted, self.capacity), min(MIN_CAPACITY, self.capacity))

    def _record(self, event: Event) -> None:
        record = event.record
        if record is None:
            # the engine's own skip (the runtime does not run this probe): no worker record
            if event.container is None or event.probe is None:
                return
            key = ProbeKey(event.pod_uid, event.container, ProbeType.parse(event.probe))
            h = self._probe(key)
            reason = str(event.fields.get("reason", ""))
            h.append(event.t, Kind.SKIP, 0, OTHER_SKIP, 0.0, 0, h.result_run, h.published, reason)
            if event.state is not None:
                self._state(h, event.state)
            self._touch(h)
            return
        attempt = record.outcome.attempt if record.outcome is not None else None
        self._apply(
            record.key,
            record.t,
            attempt.latency if attempt is not None else 0.0,
            record.result_run,
            record.next_tick,
            record_shape(record),
        )

    def _apply(
        self,
        key: ProbeKey,
        t: float,
        latency: float,
        run: int,
        next_tick: float | None,
        shape: RecordShape,
    ) -> None:
        kind, trig, skip, status, output, detail, cid, last, pub, on_hold, paused = shape
        h = self._probe(key)
        if cid and cid not in self._by_cid:
            self._by_cid[cid] = ContainerKey(key.pod_uid, key.container)
        h.result_run = run
        h.on_hold = on_hold
        h.published = pub
        h.next_tick = next_tick
        h.paused = paused
        if last is not None:
            h.last_result = last
        seq = h.append(t, kind, trig, skip, latency, status, run, pub, output)
        if detail is not None:
            h.set_detail(seq, *detail)
        self._touch(h)

    @staticmethod
    def _state(h: ProbeHistory, state: WorkerState) -> None:
        """The latest of a worker's state that came without a record."""
        if not state.running:
            # the worker is gone: no schedule, no pause; its last published value stays
            h.next_tick, h.paused = None, False
            return
        h.next_tick, h.paused = state.next_tick, state.paused
        if state.published is not None:
            h.published = state.published

    def _result_changed(self, event: Event) -> None:
        if event.probe is None:
            return
        cid = event.fields.get("containerID", "")
        ckey: ContainerKey | None = None
        if event.container is not None:
            ckey = ContainerKey(event.pod_uid, event.container)
        elif cid:
            ckey = self._by_cid.get(cid)
        if ckey is None:
            return
        key = ProbeKey(ckey.pod_uid, ckey.container, ProbeType.parse(event.probe))
        h = self._probe(key)
        result = _RESULT_BY_LABEL.get(str(event.fields.get("result")))
        if result is None:
            return
        # a first publication for the container is the initial value, not a change to mark
        if h.published is not None and h.published is not result:
            h.add_change(event.t, result)
        h.published = result
        self._touch(h)

    def _counts(self, event: Event) -> None:
        if event.container is None or event.probe is None:
            return
        key = ProbeKey(event.pod_uid, event.container, ProbeType.parse(event.probe))
        kept = self.kubelet_counts.get(key)
        if kept is None:
            kept = self.kubelet_counts[key] = deque(maxlen=KUBELET_WINDOWS)
        kept.append(event)
        c = self.containers.get(ContainerKey(event.pod_uid, event.container))
        if c is not None:
            c.version = self.version

    def _mark(self, event: Event) -> None:
        if event.container is None:
            return  # pod-level events have no lane
        c = self._container(ContainerKey(event.pod_uid, event.container))
        mark = Mark(event.t, event.type, event.source, event.probe, dict(event.fields))
        (c.reports if event.type in REPORTS else c.marks).append(mark)
        if event.type == "Divergence":
            c.divergences += 1
            c.last_divergence = str(event.fields.get("message", ""))
        c.version = self.version

    def _touch(self, h: ProbeHistory) -> None:
        if h.owner is not None:
            h.owner.version = self.version

    def _drop_pod(self, uid: str) -> None:
        self.pods.pop(uid, None)
        for key in [k for k in self.kubelet_counts if k.pod_uid == uid]:
            del self.kubelet_counts[key]
        for ckey in [k for k in self.containers if k.pod_uid == uid]:
            c = self.containers.pop(ckey)
            for h in c.probes.values():
                if self._deferred.pop(h.key, None) is not None:
                    h.filled()
                h.release()
                h.owner = None  # no cycle left: freed at once, also where gc is frozen
                self.probes.pop(h.key, None)
            c.probes.clear()
        for cid in [cid for cid, k in self._by_cid.items() if k.pod_uid == uid]:
            del self._by_cid[cid]

    # -- reading ----------------------------------------------------------------------

    def container(self, key: ContainerKey) -> ContainerHistory | None:
        return self.containers.get(key)

    def probe(self, key: ProbeKey) -> ProbeHistory | None:
        return self.probes.get(key)

    def changed_since(self, version: int) -> list[ContainerKey]:
        """Containers whose history or pod changed after `version`."""
        return [k for k, c in self.containers.items() if c.version > version]

    def attempts(self) -> int:
        """Entries held across all probes."""
        return sum(len(h) for h in self.probes.values())


# what a doProbe record adds to its probe's history but its time, latency, result run and next
# tick: kind, trigger, skip, HTTP status, output, the attempt log's detail (target, body, error,
# event message, tries; None for a skip or an error without an attempt), container ID, last
# result (None: unchanged, as after an error), published, on hold, paused. A steady probe's
# records share one, so a replay builds it once per recorded shape
RecordShape = tuple[
    int,
    int,
    int,
    int,
    str | None,
    tuple[str, str | None, str | None, str | None, int] | None,
    str,
    ResultValue | None,
    ResultValue | None,
    bool,
    bool,
]


def record_shape(record: ProbeRecord) -> RecordShape:
    trig = TRIGGER_CODE[record.trigger]
    outcome = record.outcome
    last: ResultValue | None = None
    detail = None
    if outcome is None:
        kind = Kind.SKIP
        skip = SKIP_CODE.get(record.skip, OTHER_SKIP) if record.skip else OTHER_SKIP
        status, output = 0, None
    else:
        kind, skip = kind_of(record), 0
        if kind != Kind.ERROR:
            last = record.last_result
        attempt = outcome.attempt
        if attempt is None:
            status, output = 0, None
        else:
            status, output = attempt.status_code or 0, attempt.output or attempt.error
            detail = (
                attempt.target,
                attempt.body,
                outcome.error,
                outcome.event.message if outcome.event is not None else None,
                len(outcome.attempts),
            )
    return (
        kind,
        trig,
        skip,
        status,
        output,
        detail,
        record.container_id,
        last,
        record.published,
        record.on_hold,
        record.paused,
    )


def _state_of(
    h: ProbeHistory,
) -> tuple[ResultValue | None, ResultValue | None, bool, bool, bool]:
    return h.last_result, h.published, h.on_hold, h.paused, h.in_run


_RESULT_BY_LABEL = {r.label: r for r in ResultValue}

__all__ = [
    "ContainerHistory",
    "Mark",
    "RecordShape",
    "Store",
    "record_shape",
]
