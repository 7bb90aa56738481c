"""Bounded history behind the UI: attempts per probe, kubelet marks per container, the pods table.

The store is an engine sink. It keeps, per probe worker, a ring of every doProbe (attempt or
skip) stored column-wise in `array`s of small numbers, so an hour of 15,000 workers fits in a
few hundred megabytes: no Python object per attempt. Texts (output, target, body excerpt,
errors, event messages) go through one reference-counted intern table, since most attempts
repeat the previous one's text; a slot that is overwritten releases its texts. Only the last
`detail` attempts of each probe keep the texts the attempt log shows beyond the output.

Readers poll: `version` bumps on every change, each container and the pods table carry the
version of their last change, so a UI repaints only what changed since it last looked.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from probetui.probe.base import Result
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus
from probetui.prober.worker import ProbeKey, ProbeRecord, Skip, Trigger
from probetui.spec.model import Container, Pod, ProbeType
from probetui.timeline.events import Event

# -- codes stored in the columns ----------------------------------------------------------


class Kind:
    """What one doProbe did; the `kind` column. 0 is never stored."""

    SUCCESS = 1
    WARNING = 2
    FAILURE = 3
    TIMEOUT = 4  # a failure whose last try ran out of time
    ERROR = 5  # a prober error the worker discarded (docs/kubelet-behaviour.md §5.11)
    SKIP = 6  # no handler ran: initial delay, startup gating, on hold, paused, read-only ...

    ATTEMPTS = (SUCCESS, WARNING, FAILURE, TIMEOUT, ERROR)


KIND_NAMES = {
    Kind.SUCCESS: "success",
    Kind.WARNING: "warning",
    Kind.FAILURE: "failure",
    Kind.TIMEOUT: "timeout",
    Kind.ERROR: "error",
    Kind.SKIP: "skipped",
}


TRIGGERS: tuple[Trigger, ...] = tuple(Trigger)
_TRIGGER_CODE = {t: i for i, t in enumerate(TRIGGERS)}
# skip reasons: 1.. in Skip's order; OTHER_SKIP carries its reason in the output column
SKIPS: tuple[Skip, ...] = tuple(Skip)
_SKIP_CODE = {s: i + 1 for i, s in enumerate(SKIPS)}
OTHER_SKIP = 255
_RESULTS = {-1: ResultValue.UNKNOWN, 0: ResultValue.SUCCESS, 1: ResultValue.FAILURE}

MAX_RUN = 0xFFFF
BODY_EXCERPT = 2048  # characters of an HTTP body kept for the attempt log

DEFAULT_CAPACITY = 3600  # per probe at most: an hour at period 1 s
# what each ring should cover: the ring is sized by the probe's period so that memory is set by
# time, not by how fast a probe runs (15,000 probes at period 10 s: 540 entries each, not 3,600)
DEFAULT_HISTORY_SECONDS = 3600.0
# slack over one entry per period: kubelet-triggered and manual attempts, skips
HISTORY_SLACK = 1.5
MIN_CAPACITY = 64
DEFAULT_DETAIL = 50  # per probe: attempts whose body, target and event text are kept
DEFAULT_MARKS = 256  # per container: starts, exits, kills, back-offs, Ready changes ...
CHANGES = 64  # per probe: published result changes kept for ▼/▲


def kind_of(record: ProbeRecord) -> int:
    outcome = record.outcome
    if outcome is None:
        return Kind.SKIP
    attempt = outcome.attempt
    if outcome.error is not None or attempt is None:
        return Kind.ERROR
    if attempt.timed_out:
        return Kind.TIMEOUT
    if attempt.result is Result.SUCCESS:
        return Kind.SUCCESS
    if attempt.result is Result.WARNING:
        return Kind.WARNING
    return Kind.FAILURE  # failure, and unknown without an error (counted as failure)


# -- the intern table ---------------------------------------------------------------------


class Texts:
    """Strings shared by index, with reference counts so that overwritten slots free theirs.

    Index 0 is the empty string and is never freed.
    """

    __slots__ = ("_free", "_index", "_refs", "_texts")

    def __init__(self) -> None:
        self._texts: list[str] = [""]
        self._refs = array("I", [0])
        self._index: dict[str, int] = {"": 0}
        self._free: list[int] = []

    def add(self, text: str | None) -> int:
        """The index of `text`, with one more reference to it."""
        if not text:
            return 0
        i = self._index.get(text)
        if i is None:
            if self._free:
                i = self._free.pop()
                self._texts[i] = text
                self._refs[i] = 0
            else:
                i = len(self._texts)
                self._texts.append(text)
                self._refs.append(0)
            self._index[text] = i
        self._refs[i] += 1
        return i

    def release(self, i: int) -> None:
        if i == 0:
            return
        left = self._refs[i] - 1
        self._refs[i] = left
        if left == 0:
            del self._index[self._texts[i]]
            self._texts[i] = ""
            self._free.append(i)

    def __getitem__(self, i: int) -> str:
        return self._texts[i]

    def __len__(self) -> int:
        """Distinct strings held (the empty one included)."""
        return len(self._index)


# -- one probe's history ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttemptView:
    """One ring entry as the attempt log shows it (built on demand, a few dozen at a time)."""

    t: float
    kind: int
    trigger: Trigger
    skip: Skip | None
    latency: float  # seconds
    status_code: int | None
    result_run: int
    published: ResultValue | None
    output: str  # the handler's output: what the kubelet's event carries; skip reason for skips
    detail: bool = False  # the fields below are known (one of the last `detail` attempts)
    target: str = ""
    body: str = ""
    error: str = ""
    event: str = ""
    tries: int = 0

    @property
    def manual(self) -> bool:
        return self.trigger is Trigger.USER

    @property
    def is_attempt(self) -> bool:
        return self.kind != Kind.SKIP

    @property
    def skip_reason(self) -> str:
        if self.kind != Kind.SKIP:
            return ""
        return self.skip.value if self.skip is not None else self.output


# one entry: five unsigned 32-bit fields side by side in one array (see ProbeHistory)
F_T, F_LAT, F_CODE, F_STATUS, F_OUT = range(5)
REC = 5
# one kept detail: the entry's sequence number + 1 (0: empty slot), then text indices, tries
D_SEQ, D_TARGET, D_BODY, D_ERROR, D_EVENT, D_TRIES = range(6)
DREC = 6
MAX_LAT_US = 0xFFFFFFFF


class ProbeHistory:
    """Every doProbe of one worker, newest last, in a ring of `capacity` entries.

    An entry is 20 bytes in one `array("I")`, five fields side by side: time (ms after the
    history's base time: 49 days of range), latency (µs), a packed code (kind, trigger,
    published result, skip reason, result run), the HTTP status, and the output's text index.
    One array rather than one per column: with 15,000 workers every Python object counts
    twice, once in memory and once in each full pass of the garbage collector.
    """

    __slots__ = (
        "_base",
        "_changes",
        "_d",
        "_d_head",
        "_detail",
        "_head",
        "_rec",
        "_texts",
        "capacity",
        "counts",
        "key",
        "last_result",
        "last_t",
        "on_hold",
        "owner",
        "published",
        "result_run",
        "seq",
    )

    def __init__(self, key: ProbeKey, texts: Texts, capacity: int, detail: int) -> None:
        self.key = key
        self.owner: ContainerHistory | None = None  # set by the store
        self._texts = texts
        self.capacity = max(1, capacity)
        self._detail = max(0, min(detail, self.capacity))
        self._base: float | None = None
        # grows with use up to capacity entries, then wraps at _head
        self._rec = array("I")
        self._head = 0
        self.seq = 0  # entries ever appended
        # the detail ring, over attempts only, allocated on the first attempt
        self._d = array("I")
        self._d_head = 0
        # published result changes: (t, ResultValue int), bounded
        self._changes: deque[tuple[float, int]] | None = None
        # what the last record said, and totals since the worker began
        self.result_run = 0
        self.last_result: ResultValue | None = None
        self.published: ResultValue | None = None
        self.on_hold = False
        self.last_t: float | None = None
        self.counts = [0] * 7  # by Kind

    # -- writing ----------------------------------------------------------------------

    def _ms(self, t: float) -> int:
        base = self._base
        if base is None:
            # a little before the first entry, so a slightly earlier one still fits
            base = self._base = t - 60.0
        return min(max(0, round((t - base) * 1000.0)), 0xFFFFFFFF)

    def append(
        self,
        t: float,
        kind: int,
        trigger: int,
        skip: int,
        latency: float,
        status: int,
        run: int,
        published: ResultValue | None,
        output: str | None,
    ) -> int:
        """Add one entry; returns its sequence number."""
        out = self._texts.add(output)
        code = (
            kind
            | trigger << 3
            | _PUB_CODE[published] << 5
            | (skip & 0xFF) << 8
            | min(run, MAX_RUN) << 16
        )
        ms = self._ms(t)
        lat = min(max(0, round(latency * 1e6)), MAX_LAT_US)
        rec = self._rec
        if len(rec) < self.capacity * REC:
            rec.extend((ms, lat, code, status & 0xFFFF, out))
        else:
            i = self._head * REC
            self._texts.release(rec[i + F_OUT])
            rec[i] = ms
            rec[i + 1] = lat
            rec[i + 2] = code
            rec[i + 3] = status & 0xFFFF
            rec[i + 4] = out
            self._head = (self._head + 1) % self.capacity
        self.counts[kind] += 1
        self.last_t = t
        seq = self.seq
        self.seq += 1
        return seq

    def set_detail(
        self,
        seq: int,
        target: str,
        body: str | None,
        error: str | None,
        event: str | None,
        tries: int,
    ) -> None:
        if self._detail == 0:
            return
        texts = self._texts
        d = self._d
        if not d:
            d = self._d = array("I", [0]) * (self._detail * DREC)
        # a ring over attempts only: skips never push an attempt's detail out
        i = self._d_head * DREC
        self._d_head = (self._d_head + 1) % self._detail
        for f in (D_TARGET, D_BODY, D_ERROR, D_EVENT):
            texts.release(d[i + f])
        d[i + D_SEQ] = (seq + 1) & 0xFFFFFFFF
        d[i + D_TARGET] = texts.add(target)
        d[i + D_BODY] = texts.add(body[:BODY_EXCERPT] if body else None)
        d[i + D_ERROR] = texts.add(error)
        d[i + D_EVENT] = texts.add(event)
        d[i + D_TRIES] = min(tries, 255)

    def add_change(self, t: float, result: ResultValue) -> None:
        if self._changes is None:
            self._changes = deque(maxlen=CHANGES)
        self._changes.append((t, int(result)))

    def release(self) -> None:
        """Give back every text this history holds (the probe is gone)."""
        texts = self._texts
        rec, d = self._rec, self._d
        for i in range(F_OUT, len(rec), REC):
            texts.release(rec[i])
        for i in range(0, len(d), DREC):
            for f in (D_TARGET, D_BODY, D_ERROR, D_EVENT):
                texts.release(d[i + f])
        self._rec = array("I")
        self._d = array("I")

    # -- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rec) // REC

    def _time(self, ms: int) -> float:
        assert self._base is not None
        return self._base + ms / 1000.0

    @property
    def oldest_t(self) -> float | None:
        n = len(self)
        if n == 0:
            return None
        first = self._head if n == self.capacity else 0
        return self._time(self._rec[first * REC + F_T])

    def indices_back(self) -> Iterator[int]:
        """Offsets of the entries in the array, newest first."""
        n = len(self)
        if n < self.capacity:
            yield from range((n - 1) * REC, -1, -REC)
            return
        head = self._head
        yield from range((head - 1) * REC, -1, -REC)
        yield from range((n - 1) * REC, head * REC - 1, -REC)

    def window(self, start: float, end: float) -> list[tuple[float, int]]:
        """(t, kind) of the entries with start <= t < end, newest first."""
        out: list[tuple[float, int]] = []
        if self._base is None:
            return out
        base = self._base
        lo, hi = (start - base) * 1000.0, (end - base) * 1000.0
        rec = self._rec
        for i in self.indices_back():
            ms = rec[i]
            if ms >= hi:
                continue
            if ms < lo:
                break
            out.append((base + ms / 1000.0, rec[i + F_CODE] & 7))
        return out

    def changes(self, start: float, end: float) -> list[tuple[float, ResultValue]]:
        if not self._changes:
            return []
        return [(t, _RESULTS[r]) for t, r in self._changes if start <= t < end]

    def latencies(self, n: int) -> list[tuple[float, int]]:
        """(latency s, kind) of the last `n` attempts (skips left out), oldest first."""
        out: list[tuple[float, int]] = []
        rec = self._rec
        for i in self.indices_back():
            kind = rec[i + F_CODE] & 7
            if kind == Kind.SKIP:
                continue
            out.append((rec[i + F_LAT] / 1e6, kind))
            if len(out) >= n:
                break
        out.reverse()
        return out

    def last_attempt_t(self) -> float | None:
        rec = self._rec
        for i in self.indices_back():
            if rec[i + F_CODE] & 7 != Kind.SKIP:
                return self._time(rec[i])
        return None

    def last_skip(self) -> AttemptView | None:
        """The newest entry when it is a skip (why the probe is not running now)."""
        for i in self.indices_back():
            return self._view(i, {}) if self._rec[i + F_CODE] & 7 == Kind.SKIP else None
        return None

    def recent(self, n: int, until: float | None = None) -> list[AttemptView]:
        """The newest `n` entries (at or before `until`, when given), newest first, with detail
        where it is still kept."""
        d = self._d
        details = {d[j] - 1: j for j in range(0, len(d), DREC) if d[j]}
        out: list[AttemptView] = []
        seq = self.seq
        rec = self._rec
        last_ms = None if until is None or self._base is None else (until - self._base) * 1000.0
        for i in self.indices_back():
            seq -= 1
            if last_ms is not None and rec[i] > last_ms:
                continue
            out.append(self._view(i, details, seq & 0xFFFFFFFF))
            if len(out) >= n:
                break
        return out

    def _view(self, i: int, details: dict[int, int], seq: int = -1) -> AttemptView:
        texts = self._texts
        rec = self._rec
        code = rec[i + F_CODE]
        skip_code = (code >> 8) & 0xFF
        status = rec[i + F_STATUS]
        j = details.get(seq)
        detail: dict[str, object] = {}
        if j is not None:
            d = self._d
            detail = {
                "detail": True,
                "target": texts[d[j + D_TARGET]],
                "body": texts[d[j + D_BODY]],
                "error": texts[d[j + D_ERROR]],
                "event": texts[d[j + D_EVENT]],
                "tries": d[j + D_TRIES],
            }
        return AttemptView(
            t=self._time(rec[i + F_T]),
            kind=code & 7,
            trigger=TRIGGERS[(code >> 3) & 3],
            skip=SKIPS[skip_code - 1] if 0 < skip_code <= len(SKIPS) else None,
            latency=rec[i + F_LAT] / 1e6,
            status_code=status or None,
            result_run=code >> 16,
            published=_PUB_VALUE[(code >> 5) & 3],
            output=texts[rec[i + F_OUT]],
            **detail,  # type: ignore[arg-type]
        )


_PUB_CODE: dict[ResultValue | None, int] = {
    ResultValue.SUCCESS: 0,
    ResultValue.FAILURE: 1,
    ResultValue.UNKNOWN: 2,
    None: 3,
}
_PUB_VALUE: tuple[ResultValue | None, ...] = (
    ResultValue.SUCCESS,
    ResultValue.FAILURE,
    ResultValue.UNKNOWN,
    None,
)


# -- containers and pods ------------------------------------------------------------------


class ContainerKey(NamedTuple):
    pod_uid: str
    container: str


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

    def published(self, probe_type: ProbeType) -> ResultValue | None:
        h = self.probes.get(probe_type)
        return h.published if h is not None else None


@dataclass(slots=True)
class PodEntry:
    pod: Pod
    status: PodStatus
    version: int = 0

    def container_status(self, name: str) -> ContainerStatus | None:
        return self.status.lookup(name)

    def shown_containers(self) -> tuple[Container, ...]:
        """Regular containers and sidecars: the ones that can have probes."""
        return self.pod.probed_containers()


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
        self.pods: dict[str, PodEntry] = {}
        self.containers: dict[ContainerKey, ContainerHistory] = {}
        self.probes: dict[ProbeKey, ProbeHistory] = {}
        # container IDs seen in records: a ResultChanged names the ID, maybe not the container
        self._by_cid: dict[str, ContainerKey] = {}
        self.version = 0
        self.layout_version = 0  # pods or containers added or removed
        self.events = 0

    # -- Sink -------------------------------------------------------------------------

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.version += 1
        if status is None:
            self._drop_pod(pod.uid)
            self.layout_version = self.version
            return
        entry = self.pods.get(pod.uid)
        if entry is None:
            self.pods[pod.uid] = PodEntry(pod, status, self.version)
            self.layout_version = self.version
        else:
            if entry.pod.probed_containers() != pod.probed_containers():
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
        else:
            self._mark(event)

    # -- the parts --------------------------------------------------------------------

    def _container(self, key: ContainerKey) -> ContainerHistory:
        c = self.containers.get(key)
        if c is None:
            n = self.marks_per_container
            c = ContainerHistory(key, deque(maxlen=n), deque(maxlen=n))
            self.containers[key] = c
        return c

    def _probe(self, key: ProbeKey) -> ProbeHistory:
        h = self.probes.get(key)
        if h is None:
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
            self._touch(h)
            return
        key = record.key
        h = self._probe(key)
        if record.container_id and record.container_id not in self._by_cid:
            self._by_cid[record.container_id] = ContainerKey(key.pod_uid, key.container)
        h.result_run = record.result_run
        h.on_hold = record.on_hold
        h.published = record.published
        pub = record.published
        trig = _TRIGGER_CODE[record.trigger]
        outcome = record.outcome
        if outcome is None:
            skip = _SKIP_CODE.get(record.skip, OTHER_SKIP) if record.skip else OTHER_SKIP
            h.append(record.t, Kind.SKIP, trig, skip, 0.0, 0, record.result_run, pub, None)
        else:
            kind = kind_of(record)
            if kind != Kind.ERROR:
                h.last_result = record.last_result
            attempt = outcome.attempt
            if attempt is None:
                seq = h.append(record.t, kind, trig, 0, 0.0, 0, record.result_run, pub, None)
            else:
                seq = h.append(
                    record.t,
                    kind,
                    trig,
                    0,
                    attempt.latency,
                    attempt.status_code or 0,
                    record.result_run,
                    pub,
                    attempt.output or attempt.error,
                )
                h.set_detail(
                    seq,
                    attempt.target,
                    attempt.body,
                    outcome.error,
                    outcome.event.message if outcome.event is not None else None,
                    len(outcome.attempts),
                )
        self._touch(h)

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
        """Containers whose history or pod changed after `version`."""
        return [k for k, c in self.containers.items() if c.version > version]

    def attempts(self) -> int:
        """Entries held across all probes."""
        return sum(len(h) for h in self.probes.values())


_RESULT_BY_LABEL = {r.label: r for r in ResultValue}

__all__ = [
    "KIND_NAMES",
    "AttemptView",
    "ContainerHistory",
    "ContainerKey",
    "Kind",
    "Mark",
    "PodEntry",
    "ProbeHistory",
    "Store",
    "Texts",
    "kind_of",
]
