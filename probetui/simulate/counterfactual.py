"""`probetui simulate --recording`: would other probe settings have changed what happened?

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
from probetui.prober.status import PodStatus
from probetui.prober.worker import Worker
from probetui.simulate.recorded import AnswerBook, RecordedContainer, RecordedPod
from probetui.simulate.run import SimKubelet
from probetui.simulate.scenario import App, Scenario, apply_overrides
from probetui.spec.model import Container, Pod, ProbeType

# a recorded event and the model's are the same one when this close, beyond one probe period
MATCH_SLACK = 2.0
# the share of recorded Ready changes the model must reproduce (flaps near a threshold edge
# can split one way or the other by a tick)
READY_MATCH = 0.9
DEFAULT_START_AFTER = 1.0


class CounterfactualError(Exception):
    """Why no what-if can be given; one line."""


@dataclass(slots=True)
class RunSummary:
    """What one run (recorded or modelled) did to the container in the compared window."""

    kills: dict[str, int]
    restarts: int
    not_ready_seconds: float
    time_to_ready: list[float | None]  # after each start in the window: None if never ready
    kill_times: list[float] = field(default_factory=list)
    restart_times: list[float] = field(default_factory=list)
    ready_changes: list[tuple[float, bool]] = field(default_factory=list)
    answered: int = 0
    inferred: int = 0

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
class SelfCheck:
    kills: tuple[int, int, int]  # (matched, recorded, modelled)
    restarts: tuple[int, int, int]
    ready: tuple[int, int, int]
    worst_offset: float  # seconds between a recorded event and the model's, at most
    passed: bool
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kills": dict(zip(("matched", "recorded", "modelled"), self.kills, strict=True)),
            "restarts": dict(zip(("matched", "recorded", "modelled"), self.restarts, strict=True)),
            "ready_changes": dict(
                zip(("matched", "recorded", "modelled"), self.ready, strict=True)
            ),
            "worst_offset_seconds": round(self.worst_offset, 3),
            "passed": self.passed,
            "why": self.why,
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
        }


# -- the model -----------------------------------------------------------------------------


class _Did(NamedTuple):
    """One thing the modelled kubelet did that the comparison reads, on wall time."""

    t: float
    type: str
    container: str
    probe: str | None  # the probe a kill was for
    fields: dict[str, Any]


# what the comparison reads of the kubelet's doings (`_summarize_model`)
_READ = frozenset({"Killing", "ContainerStarted", "ReadyChanged"})


class _RecordedApp(SimKubelet):
    """SimKubelet whose app answers from the recording, on wall time shifted by `origin`.

    The comparison reads what the kubelet did, never the attempts: the run lists none of them
    (`lists_probes`), and of the kubelet's events only the kills, starts and Ready changes, as
    `_Did`s (building the attempts' events was half the run's time over a day; the result
    changes' and the kubelet's other events, and each event's copy shifted to wall time, a
    tenth of the calls of lint's 4 minute replay)."""

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
            # the probe as the played event's would name it (RuntimeEvent.played)
            probe = fields.get("probe")
            key = ProbeType.parse(probe).key if probe else None
            self.did.append(_Did(t + self.origin, type_, container, key, fields))

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
    """How long the runtime took from an exit to the next start, at its quickest: a restart
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
    for e in events:
        if e.container != name:
            continue
        if e.type == "Killing" and e.probe:
            if e.t >= since:
                kills[e.probe] += 1
                kill_times.append(e.t)
        elif e.type == "ContainerStarted":
            starts.append(e.t)
            if e.fields.get("restartCount", 0) and e.t >= since:
                restart_times.append(e.t)
        elif e.type == "ReadyChanged":
            ready.append((e.t, bool(e.fields.get("ready"))))
    summary = _readiness(kills, kill_times, restart_times, starts, ready, since, until)
    summary.answered, summary.inferred = book.answered, book.inferred
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


def _summarize_recorded(rc: RecordedContainer, since: float, until: float) -> RunSummary:
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
    return _readiness(kills, kill_times, restarts, [t for t, _ in rc.starts], ready, since, until)


def _match(
    recorded: list[float], modelled: list[float], tolerance: float, until: float | None = None
) -> tuple[int, float, int, int]:
    """Pairs of a recorded and a modelled time within `tolerance`, greedily in time order: how
    many, the largest offset among them, and how many recorded and modelled times count. An
    unpaired time within `tolerance` of `until` (the window's end) does not count: its
    counterpart may fall just past the window (a kill the model makes a second before the
    recording stopped, the kubelet's a second after)."""
    used = [False] * len(modelled)
    paired = [False] * len(recorded)
    matched, worst = 0, 0.0
    for j, t in enumerate(recorded):
        best, best_d = -1, tolerance
        for i, m in enumerate(modelled):
            d = abs(m - t)
            if not used[i] and d <= best_d:
                best, best_d = i, d
        if best >= 0:
            used[best] = paired[j] = True
            matched += 1
            worst = max(worst, best_d)
    edge = float("inf") if until is None else until - tolerance

    def counted(times: list[float], done: list[bool]) -> int:
        return sum(1 for t, d in zip(times, done, strict=True) if d or t <= edge)

    return matched, worst, counted(recorded, paired), counted(modelled, used)


def self_check(
    recorded: RunSummary, model: RunSummary, tolerance: float, until: float | None = None
) -> SelfCheck:
    k, wk, nk_rec, nk_mod = _match(recorded.kill_times, model.kill_times, tolerance, until)
    r, wr, nr_rec, nr_mod = _match(
        recorded.restart_times, model.restart_times, tolerance + MATCH_SLACK, until
    )
    rec_ready = [t for t, _ in recorded.ready_changes]
    mod_ready = [t for t, _ in model.ready_changes]
    y, wy, ny_rec, ny_mod = _match(rec_ready, mod_ready, tolerance, until)
    kills = (k, nk_rec, nk_mod)
    restarts = (r, nr_rec, nr_mod)
    ready = (y, ny_rec, ny_mod)
    why = ""
    if k != kills[1] or k != kills[2]:
        why = f"the model kills {kills[2]} times where the kubelet killed {kills[1]} ({k} match)"
    elif r != restarts[1] or r != restarts[2]:
        why = (
            f"the model restarts {restarts[2]} times where the container restarted "
            f"{restarts[1]} ({r} match)"
        )
    elif ready[1] and (y < READY_MATCH * ready[1] or y < READY_MATCH * ready[2]):
        why = (
            f"the model changes Ready {ready[2]} times where the kubelet did {ready[1]} ({y} match)"
        )
    return SelfCheck(kills, restarts, ready, max(wk, wr, wy), not why, why)


def counterfactual(
    rec: RecordedPod,
    container: str,
    overrides: list[str] | tuple[str, ...],
    profile: KubeletProfile = DEFAULT_PROFILE,
) -> Counterfactual:
    spec = rec.pod.container(container)
    rc = rec.containers.get(container)
    if spec is None or rc is None:
        names = ", ".join(rec.containers) or "none"
        raise CounterfactualError(f"no probed container {container!r} in the pod (it has {names})")
    if not rc.instances:
        raise CounterfactualError(
            f"container {container!r} did not run in the window: nothing was recorded to replay"
        )
    start_after = _start_after(rc)
    app = App(start_after=start_after, stop_seconds=_stop_seconds(rc), exit_after=None)
    first = rc.instances[0].start
    origin = max(first, rec.since) - start_after
    compared_from = max(rec.since, first) + _warm_up(spec, start_after)
    base = Scenario(pod=rec.pod, container=container, duration=rec.until - origin, app=app)
    what_if_pod = apply_overrides(base, overrides).pod if overrides else None
    # up to the first stop that no probe caused: what follows it is not the probes' doing
    compared_until = min([rec.until, *(t for t in rc.stops if t > compared_from)])
    recorded = _summarize_recorded(rc, compared_from, compared_until)
    attempts: dict[tuple[int, float, str], Attempt] = {}
    events, books = _model(rec, rec.pod, container, origin, app, attempts, profile)
    baseline = _summarize_model(events, container, compared_from, compared_until, books[container])
    periods = [p.period_seconds for pt in ProbeType if (p := spec.probe(pt)) is not None]
    check = self_check(
        recorded, baseline, max(periods, default=10) + MATCH_SLACK, until=compared_until
    )
    what_if = None
    if what_if_pod is not None and check.passed:
        changed = _timeout_only(rec.pod, what_if_pod, container)
        book = books[container]
        if changed is not None and book.same_under(*changed):
            # the model's run is a function of the settings it reads; timeoutSeconds is read
            # only where an answer becomes an attempt, and every answer the run with the
            # recorded settings asked for becomes the same attempt under the new timeout: the
            # what-if is that same run, made again attempt for attempt (inferred counts too)
            what_if = _summarize_model(events, container, compared_from, compared_until, book)
        else:
            events, books = _model(rec, what_if_pod, container, origin, app, attempts, profile)
            what_if = _summarize_model(
                events, container, compared_from, compared_until, books[container]
            )
    return Counterfactual(
        container,
        rec.since,
        rec.until,
        compared_from,
        compared_until,
        tuple(overrides),
        recorded,
        baseline,
        check,
        what_if,
    )


__all__ = [
    "Counterfactual",
    "CounterfactualError",
    "RunSummary",
    "SelfCheck",
    "counterfactual",
    "self_check",
]
