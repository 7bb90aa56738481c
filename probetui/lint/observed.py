"""Gather what was observed of pods' probes, as lint's `Evidence`: from a recording or a live store.

Both sources become the same thing: per pod, a `RecordedPod` (`simulate/recorded.py`: each
container's instances with their attempts, the kubelet's kills, starts and Ready changes) plus
the shadow's `Divergence` events. The evidence rules (`rules_evidence.py`) read only that, so a
recording (`probetui lint --recording FILE`), a live cluster session (`lint --cluster`, which
watches into a timeline `Store`) and the UI's own store give the same findings for the same
history. Because a `RecordedPod` is what the counterfactual replays, every source can also say
what a proposed setting would have changed (`what_if`, cached per question).

A manifest object is matched to the pods observed by namespace and by the pod's workload as the
cluster resolved it (a Deployment's pods to the Deployment), or by name for a bare Pod; the
objects of a recording alone are its pods grouped the same way (`recorded_objects`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from probetui.lint.budget import Starts
from probetui.lint.model import LintObject
from probetui.prober.outcome import KIND_NAMES, Kind
from probetui.prober.status import PodStatus
from probetui.simulate.counterfactual import Counterfactual, CounterfactualError, Replay
from probetui.simulate.recorded import RecordedContainer, RecordedPod, recorded_pod
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import Event, EventType

if TYPE_CHECKING:
    from probetui.record.reader import Recording
    from probetui.timeline.history import ProbeHistory
    from probetui.timeline.store import Store

T = TypeVar("T")
# attempts kinds that carry a latency the app took (an error never reached it)
ANSWERED = (Kind.SUCCESS, Kind.WARNING, Kind.FAILURE, Kind.TIMEOUT)
# the counterfactual's cache: a UI asks the same what-if on every repaint of its screen
_WHAT_IF_CACHE = 256
# what lint replays of a history for one finding: the stretch before and around the problem,
# so that a counterfactual's cost stays within lint's budget per object (guarded by
# benchmarks/lint.py); the UI's what-if screen replays all the session holds
REPLAY_SECONDS = 240.0
REPLAY_AFTER = 60.0


@dataclass(slots=True)
class PodHistory:
    """Holds one pod as observed: its history the counterfactual replays, and the divergences."""

    pod: Pod  # the latest spec seen (what is linted)
    rec: RecordedPod  # from the spec in force when the window opened
    divergences: list[Event] = field(default_factory=list)
    # the events `rec` was made of (the same list, not a copy): a shorter window is cut from it
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def seconds(self) -> float:
        return max(0.0, self.rec.until - self.rec.since)

    def window(self, since: float, until: float) -> RecordedPod:
        """Return the history over [since, until] within it, each container running at `since`
        carried in as the full history saw it (its start, restart count and Ready)."""
        since, until = max(since, self.rec.since), min(until, self.rec.until)
        if since <= self.rec.since and until >= self.rec.until:
            return self.rec
        before: dict[str, tuple[float, int, bool]] = {}
        for name, rc in self.rec.containers.items():
            for inst in rc.instances:
                if inst.start < since and (inst.end is None or inst.end > since):
                    ready = rc.ready_at_since
                    for t, value in rc.ready:
                        if t <= since:
                            ready = value
                    before[name] = (inst.start, inst.restart_count, ready)
        return recorded_pod(self.rec.pod, self.events, since, until, started_before=before)


@dataclass(frozen=True, slots=True)
class Seen:
    """Holds one container of one pod as observed."""

    history: PodHistory
    container: RecordedContainer
    # each probe's answers, made once: a rule reads them for its statistics, to pick the worst
    # history and to find the problem's time (not to be changed by the reader)
    _answers: dict[ProbeType, list[tuple[float, int, float]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def answers(self, probe_type: ProbeType) -> list[tuple[float, int, float]]:
        """(t, kind, latency s) of every attempt of the probe, over all instances."""
        made = self._answers.get(probe_type)
        if made is None:
            made = self._answers[probe_type] = [
                (a.t, a.kind, a.latency)
                for inst in self.container.instances
                for a in inst.answers.get(probe_type, ())
            ]
        return made

    def start_times(self) -> list[float]:
        """Seconds from each start seen in the window to the end of its start-up phase (the
        first success of its startup probe, else readiness, else liveness)."""
        since = self.history.rec.since
        return [
            inst.startup_end - inst.start
            for inst in self.container.instances
            if inst.start >= since and inst.startup_end is not None
        ]

    def survivals(self) -> list[float]:
        """Seconds each start seen in the window lived before a kill ended it unfinished (a
        lower bound of that start's length)."""
        since = self.history.rec.since
        out = []
        for inst in self.container.instances:
            if inst.start < since or inst.startup_end is not None:
                continue
            end = inst.end if inst.end is not None else inst.start
            kill = next((t for t, _ in self.container.kills if inst.start <= t <= end), None)
            if kill is not None:
                out.append(kill - inst.start)
        return out

    def never_started(self) -> int:
        """Instances started in the window that never got through start-up and were killed."""
        since = self.history.rec.since
        killed = [t for t, _ in self.container.kills]
        return sum(
            1
            for inst in self.container.instances
            if inst.start >= since
            and inst.startup_end is None
            and any(inst.start <= t <= (inst.end or t) for t in killed)
        )

    def divergences(self) -> list[Event]:
        name = self.container.name
        return [e for e in self.history.divergences if e.container == name]


class Replays:
    """Caches what-ifs already worked out, by pod spec, container and window: a finding tries a
    proposal and the next few over the same stretch of history, and the UI's advice asks again
    each time it is refreshed while that stretch stays the same. Bounded, oldest out first."""

    def __init__(self, size: int = _WHAT_IF_CACHE) -> None:
        self.size = size
        self.prepared: dict[tuple[object, ...], Replay | str] = {}
        # counterfactuals, and (keyed "model", ...) the coarser model's what-ifs
        self.answers: dict[tuple[object, ...], Any] = {}

    @staticmethod
    def _put(
        into: dict[tuple[object, ...], object], key: tuple[object, ...], value: object, size: int
    ) -> None:
        if len(into) >= size:
            into.pop(next(iter(into)))
        into[key] = value


class Observed:
    """Gives lint's `Evidence` over a set of pod histories (see the module docstring)."""

    def __init__(
        self,
        histories: Iterable[PodHistory],
        source: str,
        *,
        replay: bool = True,
        replays: Replays | None = None,
    ) -> None:
        self.source = source  # "recording night.db", "cluster default for 2m", "live session"
        # whether findings say the counterfactual's numbers (the UI's pane leaves them to its
        # what-if, and says only how a proposal fared)
        self.replay = replay
        self.histories = list(histories)
        self._by_object: dict[tuple[str, str, str], list[PodHistory]] = defaultdict(list)
        for h in self.histories:
            pod = h.pod
            self._by_object[(pod.namespace, "Pod", pod.name)].append(h)
            if pod.owner_kind and pod.owner_name:
                self._by_object[(pod.namespace, pod.owner_kind, pod.owner_name)].append(h)
        self.replays = replays if replays is not None else Replays()

    def __len__(self) -> int:
        return len(self.histories)

    def of(self, obj: LintObject) -> list[PodHistory]:
        return self._by_object.get((obj.namespace, obj.kind, obj.name), [])

    def seen(self, obj: LintObject, container: str) -> list[Seen]:
        out = []
        for h in self.of(obj):
            rc = h.rec.containers.get(container)
            if rc is not None and rc.instances:
                out.append(Seen(h, rc))
        return out

    # -- Evidence ---------------------------------------------------------------------------

    def start_seconds(self, obj: LintObject, container: str) -> float | None:
        times = [t for s in self.seen(obj, container) for t in s.start_times()]
        return max(times) if times else None

    def starts(self, obj: LintObject, container: str) -> Starts | None:
        seen = self.seen(obj, container)
        finished = [t for s in seen for t in s.start_times()]
        survived = [t for s in seen for t in s.survivals()]
        if not finished and not survived:
            return None
        return Starts(
            max(finished, default=None), len(finished), max(survived, default=None), len(survived)
        )

    # -- what a setting would have changed ---------------------------------------------------

    def what_if(
        self,
        history: PodHistory,
        container: str,
        overrides: tuple[str, ...],
        focus: float | None = None,
    ) -> Counterfactual | str:
        """Return the counterfactual of `overrides` over the pod's history, or why there is none.
        With `focus` (the time of the problem), over the REPLAY_SECONDS up to REPLAY_AFTER
        past it; without, over the whole history."""
        rec = history.rec
        since, until = rec.since, rec.until
        if focus is not None:
            until = min(rec.until, focus + REPLAY_AFTER)
            since = until - REPLAY_SECONDS
        where = (rec.pod, container, max(since, rec.since), until)
        key = (*where, tuple(overrides))
        cached = self.replays.answers.get(key)
        if cached is not None:
            return cached
        prepared = self.replays.prepared.get(where)
        if prepared is None:
            window = history.window(since, until) if focus is not None else rec
            prepared = _prepare(window, container)
            Replays._put(self.replays.prepared, where, prepared, self.replays.size)
        if isinstance(prepared, str):
            answer: Counterfactual | str = prepared
        else:
            answer = _guarded(lambda: prepared.counterfactual(list(overrides)))
        Replays._put(self.replays.answers, key, answer, self.replays.size)
        return answer


def _guarded(make: Callable[[], T]) -> T | str:
    """`make()`, or why it failed: one odd history must not stop a lint run."""
    try:
        return make()
    except (CounterfactualError, ValueError) as e:
        return str(e)
    except Exception as e:
        return f"the counterfactual could not run: {e}"


def _prepare(rec: RecordedPod, container: str) -> Replay | str:
    return _guarded(lambda: Replay(rec, container))


# -- from a recording ------------------------------------------------------------------------


def _running_before(status: PodStatus | None, t: float) -> dict[str, tuple[float, int, bool]]:
    before: dict[str, tuple[float, int, bool]] = {}
    if status is None:
        return before
    for cs in (*status.container_statuses, *status.init_container_statuses):
        if cs.running is not None and cs.running.started_at < t:
            before[cs.name] = (cs.running.started_at, cs.restart_count, cs.ready)
    return before


def from_recording(recording: Recording) -> Observed:
    """Return every pod of a recording over the time it was seen (one pass over the events)."""
    source = f"recording {recording.path.name}"
    span = recording.span()
    if span is None:
        return Observed([], source)
    by_pod: dict[str, list[Event]] = defaultdict(list)
    for e in recording.events():
        by_pod[e.pod_uid].append(e)
    histories = []
    for info in recording.pods():
        lo = max(span[0], info.first_seen)
        hi = info.deleted if info.deleted is not None else span[1]
        hi = max(hi, lo)
        try:
            first, last = recording.spec_at(info.uid, lo), recording.spec_at(info.uid, hi)
        except KeyError:
            continue
        events = by_pod.get(info.uid, [])
        before = _running_before(recording.status_at(info.uid, lo), lo)
        rec = recorded_pod(first, events, lo, hi, started_before=before)
        divergences = [e for e in events if e.type == EventType.DIVERGENCE]
        histories.append(PodHistory(last, rec, divergences, events))
    return Observed(histories, source)


def recorded_objects(observed: Observed, file: str) -> list[LintObject]:
    """Return the pods observed, as lint objects: one per workload (its newest pod's spec), one per
    bare pod, so three replicas are linted once with the evidence of all three."""
    newest: dict[tuple[str, str, str], PodHistory] = {}
    for h in observed.histories:
        pod = h.pod
        key = (
            (pod.namespace, pod.owner_kind, pod.owner_name)
            if pod.owner_kind and pod.owner_name
            else (pod.namespace, "Pod", pod.name)
        )
        if key not in newest or h.rec.since >= newest[key].rec.since:
            newest[key] = h
    out = []
    for (namespace, kind, name), h in sorted(newest.items()):
        out.append(
            LintObject(
                kind=kind,
                name=name,
                namespace=namespace,
                file=file,
                document=f"pod {h.pod.namespace}/{h.pod.name}",
                line=None,
                pod=h.pod,
                spec_path="spec",
                annotations={},
                line_of=lambda _path: None,
            )
        )
    return out


# -- from a timeline store (a live session, the UI) ---------------------------------------------


def _attempt_fields(kind: int, latency: float, error: str = "") -> dict[str, object]:
    # the labels `simulate/recorded.py` reads back: a timeout is a failure that timed out
    if kind == Kind.TIMEOUT:
        return {"outcome": "failure", "timedOut": True, "latency_ms": latency * 1000.0}
    if kind == Kind.ERROR and error:
        return {"outcome": "error", "latency_ms": latency * 1000.0, "error": error}
    label = KIND_NAMES[kind] if kind in _ANSWERED else "error"
    return {"outcome": label, "latency_ms": latency * 1000.0}


# the kinds whose word the JSON of an attempt shares with the store's (outcome.KIND_NAMES)
_ANSWERED = frozenset((Kind.SUCCESS, Kind.WARNING, Kind.FAILURE))


# how far back the newest error's text is looked for (its entry unpacked, the only one)
ERROR_TEXT_LOOKBACK = 64


def _last_error_text(h: ProbeHistory) -> str:
    """Return the newest errored attempt's words, for the advice to quote; the columns carry
    none."""
    for view in h.recent(ERROR_TEXT_LOOKBACK):
        if view.kind == Kind.ERROR:
            return view.error or view.output
    return ""


def store_events(
    store: Store, pod_uid: str, attempts: int | None = None
) -> tuple[list[Event], float | None]:
    """Return one pod's history in the store as events (its marks and its rings' attempts, the last
    `attempts` of each probe when given), and the oldest time the store still holds for it.
    Reads the store: call it where the store is fed (the event loop), never from another
    thread. The rings are read through their (t, kind) and (latency, kind) columns, which
    unpack no entry's texts: a few microseconds an attempt."""
    from probetui.keys import ContainerKey

    entry = store.pods.get(pod_uid)
    if entry is None:
        return [], None
    pod = entry.pod
    events: list[Event] = []
    oldest: float | None = None
    # where a probe's attempts were cut to the last `attempts`, the history starts at its
    # oldest kept one: before it, that probe's answers would all be missing
    floor: float | None = None
    for c in pod.probed_containers():
        ch = store.containers.get(ContainerKey(pod_uid, c.name))
        if ch is None:
            continue
        for m in ch.marks:
            events.append(
                Event(
                    m.type,
                    m.t,
                    pod_uid,
                    pod.namespace,
                    pod.name,
                    c.name,
                    m.probe,
                    m.source,
                    dict(m.fields),
                )
            )
            oldest = m.t if oldest is None else min(oldest, m.t)
        for pt, h in ch.probes.items():
            # both newest first over the same entries, skips left out of the one: zip them
            times = [t for t, kind in h.window(-math.inf, math.inf) if kind != Kind.SKIP]
            latencies = h.latencies(len(h))[::-1]
            pairs = list(zip(times, latencies, strict=False))
            if attempts is not None and len(pairs) > attempts:
                pairs = pairs[:attempts]
                floor = pairs[-1][0] if floor is None else max(floor, pairs[-1][0])
            if pairs:
                first = pairs[-1][0]
                oldest = first if oldest is None else min(oldest, first)
            error = _last_error_text(h) if any(k == Kind.ERROR for _, (_, k) in pairs) else ""
            for t, (latency, kind) in reversed(pairs):
                events.append(
                    Event(
                        EventType.PROBE_ATTEMPT,
                        t,
                        pod_uid,
                        pod.namespace,
                        pod.name,
                        c.name,
                        pt,
                        "shadow",
                        _attempt_fields(kind, latency, error),
                    )
                )
    if floor is not None and oldest is not None:
        oldest = max(oldest, floor)
    return events, oldest


def _started_before(events: list[Event], since: float) -> dict[str, tuple[float, int, bool]]:
    out: dict[str, tuple[float, int, bool]] = {}
    ready: dict[str, bool] = {}
    for e in sorted((e for e in events if e.t < since), key=lambda e: e.t):
        name = e.container
        if name is None or e.source == "shadow":
            continue
        if e.type == EventType.CONTAINER_STARTED:
            out[name] = (e.t, int(e.fields.get("restartCount", 0)), False)
        elif e.type == EventType.CONTAINER_EXITED:
            out.pop(name, None)
        elif e.type == EventType.READY_CHANGED:
            ready[name] = bool(e.fields.get("ready"))
    return {n: (t, k, ready.get(n, False)) for n, (t, k, _) in out.items()}


def pod_history(
    pod: Pod, status: PodStatus | None, events: list[Event], now: float, oldest: float | None
) -> PodHistory:
    """Return a pod's history from events already taken out of a store (`store_events`)."""
    since = min(oldest if oldest is not None else now, now)
    before = _running_before(status, since)
    # a container running since before the history began: its start-up is not in it. Where
    # the status does not say (a source without container statuses), the marks before the
    # window do: the last start not followed by an exit
    for name, started in _started_before(events, since).items():
        before.setdefault(name, started)
    rec = recorded_pod(pod, events, since, now, started_before=before)
    return PodHistory(pod, rec, [e for e in events if e.type == EventType.DIVERGENCE], events)


def from_store(
    store: Store, now: float, source: str = "live session", pod_uids: Iterable[str] | None = None
) -> Observed:
    """Return the pods of a timeline store (all, or `pod_uids`), each over what its rings hold."""
    uids = list(store.pods) if pod_uids is None else [u for u in pod_uids if u in store.pods]
    histories = []
    for uid in uids:
        entry = store.pods[uid]
        events, oldest = store_events(store, uid)
        histories.append(pod_history(entry.pod, entry.status, events, now, oldest))
    return Observed(histories, source)


__all__ = [
    "ANSWERED",
    "Observed",
    "PodHistory",
    "Replays",
    "Seen",
    "from_recording",
    "from_store",
    "pod_history",
    "recorded_objects",
    "store_events",
]
