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

A replay builds its state at a moment into a store of its own (`probetui.replay.store`),
through the same feeding, and swaps it in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field

from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.results import ResultValue
from probetui.prober.status import PodSnapshot, PodStatus
from probetui.prober.worker import WorkerState
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import (
    KUBELET_PROBE_COUNTS,
    PROBE_ATTEMPT,
    PROBE_SKIPPED,
    RESULT_CHANGED,
    WORKER_STATE,
    Event,
    EventType,
)
from probetui.timeline.history import (
    ProbeHistory,
    RecordShape,
    Texts,
    not_run_shape,
    record_shape,
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
# the change log holds at least this many changes (and twice the containers) before its older
# half is let go: a reader that looked before what it holds walks every container once
CHANGE_LOG_LEAST = 4096


# -- containers and pods ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mark:
    """Records something that happened to a container: a start, an exit, a kill, a Ready
    change ..."""

    t: float
    type: str  # the event vocabulary: ContainerStarted, Killing, BackOff, ReadyChanged, ...
    source: str
    probe: str | None
    fields: dict


# what the kubelet said about probes, once per failed attempt: kept apart so that a flood of
# them never pushes the rare starts and kills out of `marks`
REPORTS = frozenset({EventType.UNHEALTHY, EventType.PROBE_WARNING})


@dataclass(slots=True)
class ContainerHistory:
    key: ContainerKey
    marks: deque[Mark]
    reports: deque[Mark]
    probes: dict[ProbeType, ProbeHistory] = field(default_factory=dict)
    divergences: int = 0
    last_divergence: str = ""
    version: int = 0
    # set by a replay's seek that left what the list shows of it as it was: at version
    # `listed_same_at` it lists as it did at `listed_same_since`, so a list that looked at it
    # since need not sort it again (a seek touches all 15,000 containers)
    listed_same_since: int = -1
    listed_same_at: int = -1

    def listed_since(self) -> int:
        """Return the version since which what the list shows and sorts by is as it is now."""
        if self.version == self.listed_same_at:
            return self.listed_same_since
        return self.version

    def published(self, probe_type: ProbeType) -> ResultValue | None:
        """Return the result a probe of this container last published, if any."""
        h = self.probes.get(probe_type)
        return h.published if h is not None else None


class Store:
    """Keeps, as an engine sink, a bounded history of every probe and container, read by the UI."""

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
        # per probe, the node agent's windows of the kubelet's counts beside the shadow's
        # (KubeletProbeCounts), newest last: the threshold pane sums the recent ones
        self.kubelet_counts: dict[ProbeKey, deque[Event]] = {}
        # every change of a container, in version order (`_changed`): a reader polling what
        # changed since its last look reads these, not every container of the cluster
        self._log_versions: list[int] = []
        self._log: list[ContainerHistory] = []
        self._log_floor = 0  # the log holds every change made after this version
        self._log_top = 0  # the version of the last change logged
        self._log_cap = CHANGE_LOG_LEAST  # changes held before the older half is let go

    # -- Sink -------------------------------------------------------------------------

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.version += 1
        if status is None:
            self._drop_pod(pod.uid)
            self.layout_version = self.version
            return
        entry = self.pods.get(pod.uid)
        if entry is None:
            self.pods[pod.uid] = PodSnapshot(pod, status, self.version)
            self.layout_version = self.version
        else:
            # the same spec (a replay's seek: decoded once per recording) has the same lines
            if entry.pod is not pod and entry.pod.probed_containers() != pod.probed_containers():
                self.layout_version = self.version
            entry.pod, entry.status, entry.version = pod, status, self.version
        for c in pod.probed_containers():
            self._changed(self._container(ContainerKey(pod.uid, c.name)))

    def event(self, event: Event) -> None:
        self.events += 1
        self.version += 1
        type_ = event.type
        if type_ in (PROBE_ATTEMPT, PROBE_SKIPPED):
            self._record(event)
        elif type_ == RESULT_CHANGED:
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

    # -- the parts --------------------------------------------------------------------

    def _container(self, key: ContainerKey) -> ContainerHistory:
        c = self.containers.get(key)
        if c is None:
            n = self.marks_per_container
            c = self.containers[key] = ContainerHistory(key, deque(maxlen=n), deque(maxlen=n))
        return c

    def _probe(self, key: ProbeKey) -> ProbeHistory:
        h = self.probes.get(key)
        if h is None:
            h = self.probes[key] = self._new_history(key)
            owner = self._container(ContainerKey(key.pod_uid, key.container))
            owner.probes[key.probe_type] = h
            h.owner = owner
        return h

    def _new_history(self, key: ProbeKey) -> ProbeHistory:
        """Make an empty history for a probe seen for the first time."""
        return ProbeHistory(key, self.texts, self._capacity_for(key), self.detail)

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
            h.append(event.t, 0.0, h.result_run, not_run_shape(reason, h.published))
            if event.state is not None:
                self._state(h, event.state)
            self._touch(h)
            return
        h = self._probe(record.key)
        self._apply_to(
            h,
            record.t,
            record.latency,
            record.result_run,
            record.next_tick,
            record_shape(record, h.shape),
        )

    def _apply_to(
        self,
        h: ProbeHistory,
        t: float,
        latency: float,
        run: int,
        next_tick: float | None,
        shape: RecordShape,
    ) -> None:
        """Feed a doProbe record, as its numbers and its shape, to its probe's history `h`."""
        cid = shape.container_id
        if cid and cid not in self._by_cid:
            self._by_cid[cid] = ContainerKey(h.key.pod_uid, h.key.container)
        pub = shape.published
        h.result_run = run
        h.on_hold = shape.on_hold
        h.published = pub
        h.next_tick = next_tick
        h.paused = shape.paused
        last = shape.last_result
        if last is not None:
            h.last_result = last
        h.shape = shape
        h.append(t, latency, run, shape)
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
            self._changed(c)

    def _mark(self, event: Event) -> None:
        if event.container is None:
            return  # pod-level events have no lane
        c = self._container(ContainerKey(event.pod_uid, event.container))
        mark = Mark(event.t, event.type, event.source, event.probe, dict(event.fields))
        (c.reports if event.type in REPORTS else c.marks).append(mark)
        if event.type == EventType.DIVERGENCE:
            c.divergences += 1
            c.last_divergence = str(event.fields.get("message", ""))
        self._changed(c)

    def _touch(self, h: ProbeHistory) -> None:
        if h.owner is not None:
            self._changed(h.owner)

    def _changed(self, c: ContainerHistory) -> None:
        """Stamp a container with the store's version and log the change for readers."""
        v = c.version = self.version
        if v < self._log_top:
            # the version went back (a replay's fill hands its versions back): the log
            # starts again here, and a reader that looked before walks every container
            self.restart_log()
            self._log_floor = v - 1
        self._log_top = v
        log = self._log
        log.append(c)
        self._log_versions.append(v)
        if len(log) > self._log_cap:
            versions, half = self._log_versions, len(log) // 2
            self._log_floor = versions[half - 1]
            del versions[:half], log[:half]
            self._log_cap = CHANGE_LOG_LEAST + 2 * len(self.containers)

    def restart_log(self) -> None:
        """Start the change log afresh from the current version: for a store whose
        containers were swapped in whole (a replay's seek)."""
        self._log_versions.clear()
        self._log.clear()
        self._log_floor = self._log_top = self.version

    def _drop_pod(self, uid: str) -> None:
        self.pods.pop(uid, None)
        for key in [k for k in self.kubelet_counts if k.pod_uid == uid]:
            del self.kubelet_counts[key]
        for ckey in [k for k in self.containers if k.pod_uid == uid]:
            c = self.containers.pop(ckey)
            for h in c.probes.values():
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
        """Containers whose history or pod changed after `version`: from the change log,
        so a poll costs what changed since, not a walk of every container."""
        containers = self.containers
        if version < self._log_floor:
            return [k for k, c in containers.items() if c.version > version]
        start = bisect_right(self._log_versions, version)
        changed: dict[ContainerKey, None] = {}
        for c in self._log[start:]:
            key = c.key
            if c.version > version and key not in changed and containers.get(key) is c:
                changed[key] = None
        return list(changed)

    def attempts(self) -> int:
        """Entries held across all probes."""
        return sum(len(h) for h in self.probes.values())


_RESULT_BY_LABEL = {r.label: r for r in ResultValue}

__all__ = [
    "ContainerHistory",
    "Mark",
    "RecordShape",
    "Store",
    "record_shape",
]
