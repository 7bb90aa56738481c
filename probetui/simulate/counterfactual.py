"""`probetui simulate --recording` asks whether other probe settings would have changed the story.

The recorded answers of the app (`recorded.py`) drive the kubelet model `simulate` runs
(`SimKubelet`: the real Manager and Workers and `PodKubelet` on virtual time), twice: with the
settings recorded, then with the `--set` overrides. The first run is a self-check: it must
reproduce the kills, restarts and Ready changes the kubelet made. Only then is the second run
worth anything, and the comparison is printed side by side.

The model's clock is wall time: virtual zero is the window's start less the container start-up
time, so each modelled start lands where the recorded one did. Container start-up time and
SIGTERM-to-exit time are taken from the recording (the medians of what it shows), the
kubelet's own reaction times are zero as in `simulate`.

The comparison leaves out a warm-up at the window's start (the container's initial delay plus
one period of each probe plus the start-up time): a container already running when the window
opens starts afresh in the model, so its first Ready is an artefact of the model, not news.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile
from probetui.probe.base import Attempt
from probetui.prober.outcome import Kind
from probetui.prober.status import PodStatus
from probetui.prober.worker import Worker
from probetui.simulate.recorded import AnswerBook, RecordedContainer, RecordedPod
from probetui.simulate.run import SimKubelet
from probetui.simulate.scenario import App, Scenario, apply_overrides
from probetui.simulate.selfcheck import MATCH_SLACK, Lives, SelfCheck, self_check
from probetui.spec.model import Container, Pod, ProbeType
from probetui.timeline.events import EventType

DEFAULT_START_AFTER = 1.0


class CounterfactualError(Exception):
    """Says why no what-if can be given; one line."""


@dataclass(slots=True)
class RunSummary:
    """Holds what one run (recorded or modelled) did to the container in the compared window."""

    kills: dict[str, int]
    restarts: int
    not_ready_seconds: float
    time_to_ready: list[float | None]  # after each start in the window: None if never ready
    kill_times: list[float] = field(default_factory=list)
    restart_times: list[float] = field(default_factory=list)
    ready_changes: list[tuple[float, bool]] = field(default_factory=list)
    answered: int = 0
    inferred: int = 0
    # the container's instances, and the kills the self-check leaves out as unseen by the
    # model (`selfcheck.py`)
    lives: Lives = field(default_factory=Lives)
    unseen_kills: set[float] = field(default_factory=set)

    @property
    def inferred_share(self) -> float:
        return self.inferred / self.answered if self.answered else 0.0

    def to_json(self) -> dict[str, Any]:
        ready = [t for t in self.time_to_ready if t is not None]
        return {
            "kills": self.kills,
            "restarts": self.restarts,
            "not_ready_seconds": round(self.not_ready_seconds, 3),
            "time_to_ready": [None if t is None else round(t, 3) for t in self.time_to_ready],
            "time_to_ready_max": round(max(ready), 3) if ready else None,
            "answers": self.answered,
            "inferred": self.inferred,
            "inferred_share": round(self.inferred_share, 4),
        }


@dataclass(slots=True)
class Counterfactual:
    container: str
    since: float
    until: float
    compared_from: float
    compared_until: float
    overrides: tuple[str, ...]
    recorded: RunSummary
    baseline: RunSummary
    check: SelfCheck
    what_if: RunSummary | None
    # starts in the window killed before their start-up ended: past each kill the recording
    # has no answer, and the replay repeats the last one (a failure), whatever the budget
    unfinished_starts: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "container": self.container,
            "since": self.since,
            "until": self.until,
            "compared_from": self.compared_from,
            "compared_until": self.compared_until,
            "overrides": list(self.overrides),
            "recorded": self.recorded.to_json(),
            "model_recorded_settings": self.baseline.to_json(),
            "self_check": self.check.to_json(),
            "what_if": self.what_if.to_json() if self.what_if is not None else None,
            "unfinished_starts": self.unfinished_starts,
        }


# -- the model -----------------------------------------------------------------------------


class _Did(NamedTuple):
    """Records one thing the modelled kubelet did that the comparison reads, on wall time."""

    t: float
    type: str
    container: str
    probe: ProbeType | None  # the probe a kill was for
    fields: dict[str, Any]


# what the comparison reads of the kubelet's doings (`_summarize_model`)
_READ = frozenset(
    {
        EventType.KILLING,
        EventType.CONTAINER_STARTED,
        EventType.CONTAINER_EXITED,
        EventType.READY_CHANGED,
    }
)


class _RecordedApp(SimKubelet):
    """Runs a SimKubelet whose app answers from the recording, on wall time shifted by `origin`.

    The comparison reads what the kubelet did, never the attempts: the run lists none of them
    (`lists_probes`), and of the kubelet's events only the kills, starts and Ready changes, as
    `_Did`s, because building the attempts' events, the result changes' and the kubelet's
    other events, and each event's copy shifted to wall time, would be much of the run's time
    (guarded by benchmarks/lint.py)."""

    lists_probes = False

    def __init__(
        self,
        scenario: Scenario,
        origin: float,
        books: dict[str, AnswerBook],
        profile: KubeletProfile = DEFAULT_PROFILE,
    ) -> None:
        super().__init__(scenario, profile)
        self.origin = origin
        self.books = books
        self.did: list[_Did] = []

    def _on_event(self, type_: str, container: str, t: float, fields: dict[str, Any]) -> None:
        if type_ in _READ:
            self.did.append(_Did(t + self.origin, type_, container, fields.get("probe"), fields))

    def run(self) -> None:
        super().run()
        self.did.sort(key=lambda d: d.t)  # stable, as the event list's sort

    def answer(self, worker: Worker, status: PodStatus, t: float) -> Attempt:
        name = worker.container.name
        book = self.books.get(name)
        if book is None:
            return super().answer(worker, status, t)
        inst = self.kubelet.instances[name]
        started = self.backend.started_at.get(name, 0.0)
        return book.attempt(
            worker.spec, worker.probe_type, self.origin + t, max(0, inst.n - 1), t - started, ""
        )


def _median(values: list[float], default: float) -> float:
    return statistics.median(values) if values else default


def _start_after(rc: RecordedContainer) -> float:
    """Tell how long the runtime took from an exit to the next start, at its quickest: a restart
    with no back-off in the way (the first of a crash loop) shows the start-up time itself."""
    gaps = []
    for a, b in zip(rc.instances, rc.instances[1:], strict=False):
        if a.end is not None and b.start >= a.end:
            gaps.append(b.start - a.end)
    return min(gaps) if gaps else DEFAULT_START_AFTER


def _stop_seconds(rc: RecordedContainer) -> float:
    """SIGTERM to exit, as the recorded kills show it."""
    out = []
    for t, _ in rc.kills:
        ends = [i.end for i in rc.instances if i.end is not None and i.end >= t]
        if ends:
            out.append(min(ends) - t)
    return _median(out, 0.0)


def _warm_up(c: Container, start_after: float) -> float:
    longest = 0.0
    for pt in ProbeType:
        p = c.probe(pt)
        if p is not None:
            longest = max(longest, p.initial_delay_seconds + p.period_seconds)
    return longest + start_after


def _model(
    rec: RecordedPod,
    pod: Pod,
    name: str,
    origin: float,
    app: App,
    attempts: dict[tuple[int, float, str], Attempt] | None = None,
    profile: KubeletProfile = DEFAULT_PROFILE,
) -> tuple[list[_Did], dict[str, AnswerBook]]:
    books = {
        c.name: AnswerBook(rec.containers[c.name], c, attempts)
        for c in rec.pod.probed_containers()
        if c.name in rec.containers
    }
    scenario = Scenario(pod=pod, container=name, duration=rec.until - origin, app=app)
    sim = _RecordedApp(scenario, origin, books, profile)
    sim.run()
    return sim.did, books


def _timeout_only(base: Pod, what_if: Pod, name: str) -> tuple[ProbeType, float, float] | None:
    """When all `what_if` changes of `base` is one probe's timeoutSeconds in container `name`:
    that probe, its recorded timeout and the new one. None when anything else differs."""
    old, new = base.container(name), what_if.container(name)
    if old is None or new is None:
        return None
    changed = [pt for pt in ProbeType if old.probe(pt) != new.probe(pt)]
    if len(changed) != 1:
        return None
    pt = changed[0]
    before, after = old.probe(pt), new.probe(pt)
    if before is None or after is None:
        return None
    if replace(before, timeout_seconds=after.timeout_seconds) != after:
        return None
    # the rest of the container and of the pod as recorded
    if replace(old, **{f"{pt.key}_probe": after}) != new:
        return None
    if replace(what_if, containers=base.containers, init_containers=base.init_containers) != base:
        return None
    if len(base.containers) != len(what_if.containers) or len(base.init_containers) != len(
        what_if.init_containers
    ):
        return None
    pairs = [
        *zip(base.containers, what_if.containers, strict=True),
        *zip(base.init_containers, what_if.init_containers, strict=True),
    ]
    if any(a != b for a, b in pairs if a.name != name):
        return None
    return pt, float(before.timeout_seconds), float(after.timeout_seconds)


def _summarize_model(
    events: list[_Did], name: str, since: float, until: float, book: AnswerBook
) -> RunSummary:
    kills: dict[str, int] = {pt.key: 0 for pt in ProbeType}
    kill_times: list[float] = []
    restart_times: list[float] = []
    starts: list[float] = []
    ready: list[tuple[float, bool]] = []
    lives = Lives()
    for e in events:
        if e.container != name:
            continue
        if e.type == EventType.KILLING and e.probe:
            if e.t >= since:
                kills[e.probe] += 1
                kill_times.append(e.t)
        elif e.type == EventType.CONTAINER_STARTED:
            starts.append(e.t)
            lives.starts.append(e.t)
            lives.ends.append(float("inf"))
            if e.fields.get("restartCount", 0) and e.t >= since:
                restart_times.append(e.t)
        elif e.type == EventType.CONTAINER_EXITED:
            if lives.ends and lives.ends[-1] == float("inf"):
                lives.ends[-1] = e.t
        elif e.type == EventType.READY_CHANGED:
            ready.append((e.t, bool(e.fields.get("ready"))))
    summary = _readiness(kills, kill_times, restart_times, starts, ready, since, until)
    summary.answered, summary.inferred = book.answered, book.inferred
    summary.lives = lives
    return summary


def _readiness(
    kills: dict[str, int],
    kill_times: list[float],
    restart_times: list[float],
    starts: list[float],
    ready: list[tuple[float, bool]],
    since: float,
    until: float,
) -> RunSummary:
    """Seconds not ready in [since, until], and the time to first Ready after each start."""
    state = False
    for t, value in ready:
        if t <= since:
            state = value
    not_ready = 0.0
    last = since
    for t, value in ready:
        if t <= since or t > until:
            continue
        if not state:
            not_ready += t - last
        state, last = value, t
    if not state:
        not_ready += until - last
    to_ready: list[float | None] = []
    for s in starts:
        if s < since:
            continue
        after = [t for t, v in ready if v and t >= s]
        to_ready.append(after[0] - s if after else None)
    changes = [(t, v) for t, v in ready if since <= t <= until]
    return RunSummary(
        kills, len(restart_times), not_ready, to_ready, kill_times, restart_times, changes
    )


def _summarize_recorded(
    rc: RecordedContainer, since: float, until: float, opened: float | None = None
) -> RunSummary:
    """Return the recording's side over [since, until]; `opened` is when the window opened (an
    instance started before it was carried in)."""
    kills: dict[str, int] = {pt.key: 0 for pt in ProbeType}
    kill_times = []
    for t, probe in rc.kills:
        if t >= since:
            kills[probe] = kills.get(probe, 0) + 1
            kill_times.append(t)
    restarts = [t for t, n in rc.starts if n > 0 and t >= since]
    ready = list(rc.ready)
    if rc.ready_at_since:
        ready.insert(0, (rc.instances[0].start if rc.instances else since, True))
    summary = _readiness(
        kills, kill_times, restarts, [t for t, _ in rc.starts], ready, since, until
    )
    first = rc.instances[0] if rc.instances else None
    summary.lives = Lives(
        [i.start for i in rc.instances],
        [i.end if i.end is not None else until for i in rc.instances],
        carried=first is not None and opened is not None and first.start < opened,
        restarted_before=first is not None and first.restart_count > 0,
    )
    return summary


def _carried_kill(rc: RecordedContainer, spec: Container, opened: float) -> float | None:
    """Return the kill of the instance carried into the window, where the failures that made it
    began before the window's first attempt of its probe (fewer than failureThreshold of them
    recorded, no success before them): the kubelet counted failures the model never saw."""
    if not rc.instances or rc.instances[0].start >= opened:
        return None
    inst = rc.instances[0]
    end = inst.end if inst.end is not None else float("inf")
    kill = next(((t, p) for t, p in rc.kills if inst.start <= t <= end), None)
    if kill is None:
        return None
    t, key = kill
    pt = ProbeType.parse(key)
    probe = spec.probe(pt)
    answers = [a for a in inst.answers.get(pt, ()) if a.t <= t]
    if probe is None or any(a.kind in (Kind.SUCCESS, Kind.WARNING) for a in answers):
        return None
    failures = sum(1 for a in answers if a.kind in (Kind.FAILURE, Kind.TIMEOUT))
    return t if failures < probe.failure_threshold else None


class Replay:
    """Holds one container's recorded history made ready for what-ifs: the model with the recorded
    settings run once and checked against the recording, then each what-if on demand (a
    finding tries a proposal and the next few over the same history)."""

    def __init__(
        self, rec: RecordedPod, container: str, profile: KubeletProfile = DEFAULT_PROFILE
    ) -> None:
        spec = rec.pod.container(container)
        rc = rec.containers.get(container)
        if spec is None or rc is None:
            names = ", ".join(rec.containers) or "none"
            raise CounterfactualError(
                f"no probed container {container!r} in the pod (it has {names})"
            )
        if not rc.instances:
            raise CounterfactualError(
                f"container {container!r} did not run in the window: nothing was recorded to replay"
            )
        self.rec, self.container, self.profile = rec, container, profile
        start_after = _start_after(rc)
        self.app = App(start_after=start_after, stop_seconds=_stop_seconds(rc), exit_after=None)
        first = rc.instances[0].start
        self.origin = max(first, rec.since) - start_after
        self.compared_from = max(rec.since, first) + _warm_up(spec, start_after)
        self.base = Scenario(
            pod=rec.pod, container=container, duration=rec.until - self.origin, app=self.app
        )
        # up to the first stop that no probe caused: what follows it is not the probes' doing
        self.compared_until = min([rec.until, *(t for t in rc.stops if t > self.compared_from)])
        self.recorded = _summarize_recorded(rc, self.compared_from, self.compared_until, rec.since)
        self.attempts: dict[tuple[int, float, str], Attempt] = {}
        self.events, self.books = _model(
            rec, rec.pod, container, self.origin, self.app, self.attempts, profile
        )
        self.baseline = self._summary(self.events, self.books)
        carried = _carried_kill(rc, spec, rec.since)
        if carried is not None:
            # and the model's kill that ends its own first instance: the same failures,
            # counted from the window's start
            self.recorded.unseen_kills.add(carried)
            first_kills = [t for t in self.baseline.kill_times if self.baseline.lives.where(t) == 0]
            self.baseline.unseen_kills.update(first_kills[:1])
        periods = [p.period_seconds for pt in ProbeType if (p := spec.probe(pt)) is not None]
        self.check = self_check(
            self.recorded,
            self.baseline,
            max(periods, default=10) + MATCH_SLACK,
            until=self.compared_until,
        )
        self.unfinished = _unfinished(rc, rec.since)

    def _summary(self, events: list[_Did], books: dict[str, AnswerBook]) -> RunSummary:
        return _summarize_model(
            events, self.container, self.compared_from, self.compared_until, books[self.container]
        )

    def counterfactual(self, overrides: list[str] | tuple[str, ...]) -> Counterfactual:
        """Return the what-if of `overrides` beside the recording and the model with its settings
        (none where the self-check refused the model)."""
        rec, container = self.rec, self.container
        what_if_pod = apply_overrides(self.base, overrides).pod if overrides else None
        what_if = None
        if what_if_pod is not None and self.check.passed:
            changed = _timeout_only(rec.pod, what_if_pod, container)
            book = self.books[container]
            if changed is not None and book.same_under(*changed):
                # the model's run is a function of the settings it reads; timeoutSeconds is
                # read only where an answer becomes an attempt, and every answer the run with
                # the recorded settings asked for becomes the same attempt under the new
                # timeout: the what-if is that same run, made again attempt for attempt
                # (inferred counts too)
                what_if = self._summary(self.events, self.books)
            else:
                events, books = _model(
                    rec, what_if_pod, container, self.origin, self.app, self.attempts, self.profile
                )
                what_if = self._summary(events, books)
        return Counterfactual(
            container,
            rec.since,
            rec.until,
            self.compared_from,
            self.compared_until,
            tuple(overrides),
            self.recorded,
            self.baseline,
            self.check,
            what_if,
            self.unfinished,
        )


def counterfactual(
    rec: RecordedPod,
    container: str,
    overrides: list[str] | tuple[str, ...],
    profile: KubeletProfile = DEFAULT_PROFILE,
) -> Counterfactual:
    """Return the recorded settings' self-check and the what-if of `overrides` (module
    docstring)."""
    return Replay(rec, container, profile).counterfactual(overrides)


def _unfinished(rc: RecordedContainer, opened: float) -> int:
    """Return the starts in the window that a kill ended before their start-up did."""
    return sum(
        1
        for inst in rc.instances
        if inst.start >= opened
        and inst.startup_end is None
        and any(inst.start <= t <= (inst.end if inst.end is not None else t) for t, _ in rc.kills)
    )


__all__ = [
    "Counterfactual",
    "CounterfactualError",
    "Replay",
    "RunSummary",
    "SelfCheck",
    "counterfactual",
    "self_check",
]
