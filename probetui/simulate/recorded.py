"""Read a pod's recorded history as the answers of its app: what `simulate --recording` replays.

A recording holds every attempt the shadow prober made (outcome and latency, per probe) and
what the kubelet did (starts, kills, Ready changes). `RecordedPod` is that history for one pod
over a window; `AnswerBook` gives the app's answer to an attempt the model makes at a time the
recording may never have seen.

How answers are taken (docs/architecture.md, "Counterfactual simulate"):

- Every recorded container instance has a **start-up phase**: from its start to the first
  success of its startup probe (without one, of its readiness probe; without either, of its
  liveness probe; a probe-less container has none). An instance that never got there is in
  start-up for its whole life. The attempts made inside that phase are *start-up answers*,
  indexed by time since the instance started; the attempts after it are *steady answers*,
  indexed by wall time.
- An attempt of the model while its own instance number k is within the start-up phase of the
  recorded instance k (the last recorded one when the model has restarted more often) takes
  the start-up answer of instance k nearest in time since start. Otherwise it takes the steady
  answer nearest in wall time.
- The answer is **recorded** when one of that probe lies within half a recorded period (+0.5 s)
  of the time asked, in the instance asked: wherever the recorded container ran steadily there
  is one that close, whatever the phase of the model's ticks against the recorded ones. Anything else is **inferred** from the nearest answer
  there is: the model's container runs where the recorded one did not (a kill that no longer
  happens, so no restart, so no new start-up phase), it outlives its recorded instance, or it
  restarted more often than recorded. Every inferred answer is counted.
- A longer `timeoutSeconds` cannot be answered from a recording for an attempt that timed out:
  how long the app would have taken is unknown. Such an attempt still times out (at the new
  timeout) and is counted as inferred. A shorter timeout turns a recorded answer slower than it
  into a timeout, which is not inferred: the recorded latency says so.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

from probetui.probe.base import Attempt, Result
from probetui.prober.outcome import LABEL_KIND, Kind
from probetui.spec.model import Container, Pod, Probe, ProbeType
from probetui.timeline.events import Event, EventType

if TYPE_CHECKING:
    from probetui.record.reader import Recording

# which probe's first success ends an instance's start-up phase, in order of preference
STARTUP_GATES = (ProbeType.STARTUP, ProbeType.READINESS, ProbeType.LIVENESS)
SLACK = 0.5  # seconds beyond half a period within which a recorded answer still counts as such
_by_time = attrgetter("t")


@dataclass(frozen=True, slots=True)
class Answer:
    """Holds one recorded attempt: what the app said and how fast."""

    t: float  # when the attempt started (wall seconds)
    kind: int  # prober.outcome.Kind
    latency: float  # seconds
    output: str = ""
    error: str = ""
    status_code: int | None = None


@dataclass(slots=True)
class RecordedInstance:
    """Holds one container instance as recorded: its start, its end and its attempts."""

    start: float
    restart_count: int
    end: float | None = None
    startup_end: float | None = None  # when its start-up phase ended (None: never)
    answers: dict[ProbeType, list[Answer]] = field(default_factory=dict)


@dataclass(slots=True)
class RecordedContainer:
    name: str
    instances: list[RecordedInstance] = field(default_factory=list)
    kills: list[tuple[float, str]] = field(default_factory=list)  # (t, probe)
    # stopped for no probe's sake (pod deleted, probetui quitting): the history ends there
    stops: list[float] = field(default_factory=list)
    starts: list[tuple[float, int]] = field(default_factory=list)  # (t, restartCount)
    ready: list[tuple[float, bool]] = field(default_factory=list)  # Ready changes
    ready_at_since: bool = False  # Ready when the window opened

    def restarts(self) -> int:
        return sum(1 for _, n in self.starts if n > 0)


@dataclass(slots=True)
class RecordedPod:
    pod: Pod  # the spec in force at the window's start
    since: float
    until: float
    containers: dict[str, RecordedContainer]
    attempts: int = 0


def recorded_pod(
    pod: Pod,
    events: Iterable[Event],
    since: float,
    until: float,
    *,
    started_before: dict[str, tuple[float, int, bool]] | None = None,
) -> RecordedPod:
    """Return the history of `pod` from its events in [since, until] (kubelet and shadow sides).

    `started_before` gives, per container already running when the window opens, its start,
    restart count and Ready (from the status at `since`), so its first instance is not missed.
    """
    rec = RecordedPod(pod, since, until, {})
    for c in pod.probed_containers():
        rc = RecordedContainer(c.name)
        if started_before and c.name in started_before:
            start, n, ready = started_before[c.name]
            rc.instances.append(RecordedInstance(start, n))
            rc.ready_at_since = ready
        rec.containers[c.name] = rc
    # by time: which instance an attempt belongs to follows from the starts before it, and a
    # reader merges kubelet rows and per-probe chunks in an order that is only near time order
    ordered = sorted(
        [e for e in events if e.pod_uid == pod.uid and since <= e.t <= until], key=_by_time
    )
    for e in ordered:
        if e.container not in rec.containers:
            continue
        rc = rec.containers[e.container]
        if e.type == EventType.PROBE_ATTEMPT and e.probe is not None:
            inst = rc.instances[-1] if rc.instances else None
            if inst is None or inst.end is not None:
                continue  # an attempt on a container not running: nothing to learn from it
            answer = _answer(e)
            pt = e.probe
            inst.answers.setdefault(pt, []).append(answer)
            rec.attempts += 1
        elif e.type == EventType.CONTAINER_STARTED:
            n = int(e.fields.get("restartCount", 0))
            if rc.instances and rc.instances[-1].end is None:
                rc.instances[-1].end = e.t
            rc.instances.append(RecordedInstance(e.t, n))
            rc.starts.append((e.t, n))
        elif e.type == EventType.CONTAINER_EXITED:
            if rc.instances and rc.instances[-1].end is None:
                rc.instances[-1].end = e.t
        elif e.type == EventType.KILLING and e.source != "shadow":
            if e.probe:
                rc.kills.append((e.t, e.probe))
            else:
                rc.stops.append(e.t)
        elif e.type == EventType.READY_CHANGED and e.source != "shadow":
            rc.ready.append((e.t, bool(e.fields.get("ready"))))
    for c in pod.probed_containers():
        rc = rec.containers[c.name]
        for inst in rc.instances:
            # begun before the window: its start-up is not in the recording, taken as over
            inst.startup_end = inst.start if inst.start < since else _startup_end(c, inst)
            if inst.end is None:
                inst.end = until
    return rec


def _answer(e: Event) -> Answer:
    f = e.fields
    kind = LABEL_KIND.get(str(f.get("outcome")), Kind.ERROR)
    if kind == Kind.FAILURE and f.get("timedOut"):
        kind = Kind.TIMEOUT
    code = f.get("statusCode")
    return Answer(
        t=e.t,
        kind=kind,
        latency=float(f.get("latency_ms", 0.0)) / 1000.0,
        output=str(f.get("output", "")),
        error=str(f.get("error", "")),
        status_code=int(code) if code is not None else None,
    )


def _startup_end(container: Container, inst: RecordedInstance) -> float | None:
    for pt in STARTUP_GATES:
        if container.probe(pt) is None:
            continue
        for a in inst.answers.get(pt, ()):
            if a.kind in (Kind.SUCCESS, Kind.WARNING):
                return a.t
        return None  # the gate probe never succeeded: start-up all its life
    return inst.start  # no probe gates it: no start-up phase


class _ProbeAnswers:
    """Holds one probe's answers in a book, laid out for `AnswerBook.lookup`."""

    __slots__ = (
        "asked_timeout",
        "last_startup",
        "recorded_timeout",
        "slowest",
        "startup",
        "startup_t",
        "steady",
        "steady_t",
    )

    def __init__(self) -> None:
        # steady answers of every instance by wall time, start-up ones per instance, the
        # times beside each list for bisect (a day of one pod is 26,000 lookups a run)
        self.steady: list[Answer] = []
        self.steady_t: list[float] = []
        self.startup: list[list[Answer]] = []
        self.startup_t: list[list[float]] = []
        self.last_startup: Answer | None = None  # of the newest instance that has one
        self.recorded_timeout: float | None = None
        # of the answers a run asked for: the slowest latency, and whether one timed out (what
        # decides if another timeoutSeconds would have answered the same, `same_under`)
        self.slowest = 0.0
        self.asked_timeout = False


class AnswerBook:
    """Holds the app's answers for one container, looked up as the module docstring says."""

    def __init__(
        self,
        rc: RecordedContainer,
        recorded: Container,
        attempts: dict[tuple[int, float, str], Attempt] | None = None,
    ) -> None:
        self.rc = rc
        self.tolerance = {
            pt: (p.period_seconds if (p := recorded.probe(pt)) is not None else 10) / 2 + SLACK
            for pt in ProbeType
        }
        self.recorded_timeout = {
            pt: float(p.timeout_seconds)
            for pt in ProbeType
            if (p := recorded.probe(pt)) is not None
        }
        # one entry per probe type, so that a lookup hashes the (Python-level) enum once
        self._probes: dict[ProbeType, tuple[_ProbeAnswers, float]] = {}
        for pt in ProbeType:
            into = _ProbeAnswers()
            into.recorded_timeout = self.recorded_timeout.get(pt)
            for inst in rc.instances:
                ends = inst.startup_end if inst.startup_end is not None else float("inf")
                early = [a for a in inst.answers.get(pt, ()) if a.t < ends]
                into.steady.extend([a for a in inst.answers.get(pt, ()) if a.t >= ends])
                into.startup.append(early)
                into.startup_t.append([a.t for a in early])
                if early:
                    into.last_startup = early[-1]
            into.steady.sort(key=_by_time)  # instances may overlap by an instant
            into.steady_t = [a.t for a in into.steady]
            self._probes[pt] = (into, self.tolerance[pt])
        # where each recorded instance starts and how long its start-up took
        self._starts = [inst.start for inst in rc.instances]
        self._startup_lengths = [
            float("inf") if inst.startup_end is None else max(0.0, inst.startup_end - inst.start)
            for inst in rc.instances
        ]
        # Attempts are immutable: a book of the same recording may share them (the self-check
        # and the what-if answer from the same answers, mostly under the same timeout)
        self._attempts: dict[tuple[int, float, str], Attempt] = {} if attempts is None else attempts
        # per probe object asked about (alive while the book is): its timeout and handler
        self._terms: dict[int, tuple[float, str | None]] = {}
        self.answered = 0
        self.inferred = 0

    def lookup(
        self, pt: ProbeType, t: float, k: int, since_start: float
    ) -> tuple[Answer | None, bool]:
        """Return the answer for probe `pt` at wall time t, model instance k, `since_start` into it;
        and whether it had to be inferred."""
        into, tolerance = self._probes[pt]
        return self._lookup(into, tolerance, t, k, since_start)

    def _lookup(
        self, into: _ProbeAnswers, tolerance: float, t: float, k: int, since_start: float
    ) -> tuple[Answer | None, bool]:
        lengths = self._startup_lengths
        if lengths:
            i = min(k, len(lengths) - 1)
            if since_start < lengths[i]:
                at = self._starts[i] + since_start
                answer = _nearest(into.startup[i], into.startup_t[i], at)
                if answer is not None:
                    return answer, i != k or abs(answer.t - at) > tolerance
        answer = _nearest(into.steady, into.steady_t, t)
        if answer is not None:
            return answer, abs(answer.t - t) > tolerance
        # no steady answer at all: the last start-up answer there is
        return into.last_startup, True

    def attempt(
        self, probe: Probe, pt: ProbeType, t: float, k: int, since_start: float, target: str
    ) -> Attempt:
        """Return the Attempt the handler would report: the recorded answer under the probe's
        timeout."""
        into, tolerance = self._probes[pt]
        answer, inferred = self._lookup(into, tolerance, t, k, since_start)
        # the probe's timeout and handler, read once per probe (two properties deep)
        terms = self._terms.get(id(probe))
        if terms is None:
            terms = self._terms[id(probe)] = (float(probe.timeout_seconds), probe.handler_name)
        timeout, handler = terms
        self.answered += 1
        if answer is None:
            self.inferred += 1
            return Attempt(handler or "none", target, Result.SUCCESS, "")
        if answer.latency > into.slowest:
            into.slowest = answer.latency
        recorded = into.recorded_timeout
        if answer.kind == Kind.TIMEOUT:
            into.asked_timeout = True
            if recorded is not None and timeout > recorded:
                inferred = True  # how long past the old timeout the app took is unknown
        if inferred:
            self.inferred += 1
        key = (id(answer), timeout, handler)
        attempt = self._attempts.get(key)
        if attempt is None:
            attempt = self._attempts[key] = _as_attempt(answer, handler, timeout, target)
        return attempt

    def same_under(self, pt: ProbeType, timeout: float, other: float) -> bool:
        """Tell whether every answer of probe `pt` asked for so far reads the same under timeout
        `other` as under `timeout`: none timed out, none took longer than either (a timed out
        attempt's latency is the timeout; a slower answer than one of them times out there)."""
        into = self._probes[pt][0]
        return not into.asked_timeout and into.slowest <= min(timeout, other)


_RESULTS = {
    Kind.SUCCESS: Result.SUCCESS,
    Kind.WARNING: Result.WARNING,
    Kind.FAILURE: Result.FAILURE,
}


def _as_attempt(answer: Answer, handler_name: str | None, timeout: float, target: str) -> Attempt:
    handler = handler_name or "none"
    if answer.kind == Kind.TIMEOUT or answer.latency > timeout:
        out = answer.output if answer.kind == Kind.TIMEOUT else "timeout"
        return Attempt(handler, target, Result.FAILURE, out, latency=timeout, timed_out=True)
    result = _RESULTS.get(answer.kind, Result.UNKNOWN)
    error = (answer.error or "error") if result is Result.UNKNOWN else None
    # positional (handler, target, result, output, error, latency, started_at, status_code):
    # keywords cost twice as much, and a day of one pod builds 17,000 per run
    return Attempt(
        handler, target, result, answer.output, error, answer.latency, 0.0, answer.status_code
    )


def _nearest(answers: list[Answer] | None, times: list[float] | None, t: float) -> Answer | None:
    """Return the answer nearest to t in a list sorted by time (`times` beside it)."""
    if not answers or times is None:
        return None
    j = bisect.bisect_left(times, t)
    if j == 0:
        return answers[0]
    if j == len(times) or t - times[j - 1] <= times[j] - t:
        return answers[j - 1]
    return answers[j]


def from_recording(
    recording: Recording, pod_ref: str, since: str | None, until: str | None
) -> RecordedPod:
    """Return the pod `NS/NAME` (or `NAME`, when one pod has it) of a recording over [since, until].

    ValueError (one line) for a pod the recording does not hold, or a window outside it."""
    from probetui.record.timespec import parse_time

    span = recording.span()
    if span is None:
        raise ValueError(f"{recording.path}: the recording holds no events yet")
    namespace, _, name = pod_ref.rpartition("/")
    pods = [p for p in recording.pods() if p.name == name and namespace in ("", p.namespace)]
    if not pods:
        known = sorted({f"{p.namespace}/{p.name}" for p in recording.pods()})
        listed = ", ".join(known[:8]) + (" ..." if len(known) > 8 else "") or "none"
        raise ValueError(f"--pod {pod_ref}: not in the recording (it has {listed})")
    if len({(p.namespace, p.name) for p in pods}) > 1:
        raise ValueError(f"--pod {pod_ref}: in several namespaces; give it as NAMESPACE/NAME")
    # a name reused by a new pod (a StatefulSet's): the newest one seen in the window
    lo = parse_time(since, span) if since else span[0]
    hi = parse_time(until, span) if until else span[1]
    if hi <= lo:
        raise ValueError(f"--until is not after --since ({hi - lo:+.0f}s): nothing to replay")
    chosen = [p for p in pods if p.first_seen <= hi and p.last_seen >= lo] or pods
    info = max(chosen, key=lambda p: p.first_seen)
    lo, hi = max(lo, info.first_seen), min(hi, info.last_seen)
    pod = recording.spec_at(info.uid, lo)
    status = recording.status_at(info.uid, lo)
    before: dict[str, tuple[float, int, bool]] = {}
    if status is not None:
        for cs in (*status.container_statuses, *status.init_container_statuses):
            if cs.running is not None and cs.running.started_at < lo:
                before[cs.name] = (cs.running.started_at, cs.restart_count, cs.ready)
    # the answers are read from the attempts' fields: their records are not built
    events = recording.events(since=lo, until=hi, pod_uids=[info.uid], records=False)
    return recorded_pod(pod, events, lo, hi, started_before=before)


__all__ = [
    "Answer",
    "AnswerBook",
    "RecordedContainer",
    "RecordedInstance",
    "RecordedPod",
    "from_recording",
    "recorded_pod",
]
