"""Simulate the consequences the model-backed rules cite: the container alone in `simulate`'s model.

Each function here runs one short scenario through the kubelet's model (the real workers on
`SimClock`, `PodKubelet`: `probetui/simulate/`) and returns what happened in numbers, which the
rules put into their messages ("simulate: 3 kills in 190 s, never Ready"). The container is
simulated alone in its pod (a sidecar beside a plain main container), with its pod's
restartPolicy and grace period: what a rule says is about its own probes, and a pod's other
containers would only make the run slower. Runs stop as soon as the answer is known, and are
memoised on the scenario: a chart rendered for ten environments asks the same question ten
times. The § items cited are docs/kubelet-behaviour.md's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache

from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile
from probetui.simulate import App, Behaviour, Scenario, SimKubelet
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType
from probetui.timeline.events import Event, EventType

# scenario time: the container starts at 0, so the numbers read as seconds since it started
_MAX_SECONDS = 900.0
# the longest run any question gets: an hour of virtual time, whatever the probe's numbers
# (an initialDelaySeconds of 2^31 with a 1 s period would otherwise tick for 68 years)
_LONGEST = 4 * _MAX_SECONDS
_KILLS_ENOUGH = 3
_IGNORES_SIGTERM = 1e6
_NEVER = 1e9
SUBJECT = "app"  # the container's name in the simulated pod
ALL = frozenset(ProbeType)
# what decides whether and when a container is killed: the probe itself, and startup, which
# holds liveness back until it succeeds (§5.10)
KILLS = frozenset((ProbeType.LIVENESS, ProbeType.STARTUP))
# the kubelet release the runs play (`lint --kubelet-version`), set around a lint by `playing`
_PROFILE: ContextVar[KubeletProfile] = ContextVar("lint_kubelet_profile", default=DEFAULT_PROFILE)


@contextmanager
def playing(profile: KubeletProfile) -> Iterator[None]:
    """Every run inside plays the kubelet `profile` describes."""
    token = _PROFILE.set(profile)
    try:
        yield
    finally:
        _PROFILE.reset(token)


@dataclass(frozen=True, slots=True)
class Run:
    """Holds what one simulated run showed of the container, times in seconds since its first
    start."""

    duration: float
    kills: tuple[tuple[float, str], ...]  # (t, probe key)
    exits: tuple[tuple[float, int], ...]  # (t, exit code)
    ready: tuple[tuple[float, bool], ...]  # Ready changes
    attempts: tuple[tuple[float, str, str], ...]  # (t, probe key, outcome)
    unhealthy: tuple[tuple[str, str], ...]  # (probe key, message), first of each probe

    def attempts_of(self, probe: ProbeType) -> list[tuple[float, str]]:
        return [(t, outcome) for t, key, outcome in self.attempts if key == probe.key]

    def first_ready(self) -> float | None:
        return next((t for t, r in self.ready if r), None)

    def message_of(self, probe: ProbeType) -> str | None:
        return next((m for key, m in self.unhealthy if key == probe.key), None)


def alone(
    pod: Pod,
    container: Container,
    keep: frozenset[ProbeType] = ALL,
    instant: frozenset[ProbeType] = frozenset(),
) -> Pod:
    """Return the pod reduced to the one container a rule is about, under fixed names and with every
    probe that reaches its target on one stand-in handler: names, texts, env and targets
    change no decision of the model (a scenario answers by probe type and time), and without
    them equal settings in different objects are one simulation. A probe whose port name
    resolves to nothing keeps its handler, since that is what makes it error (§16.4). Only the
    probe types in `keep` stay: a question about kills needs no readiness probe. The probe
    types in `instant` are answered at once, so their (positive) timeoutSeconds decides
    nothing either: it becomes 1."""
    bare = replace(
        container,
        name=SUBJECT,
        env=(),
        command=(),
        args=(),
        image=None,
        working_dir=None,
        ports=(),
        liveness_probe=_stand_in(container, ProbeType.LIVENESS, keep, instant),
        readiness_probe=_stand_in(container, ProbeType.READINESS, keep, instant),
        startup_probe=_stand_in(container, ProbeType.STARTUP, keep, instant),
    )
    regular = (Container(name="main"),) if container.is_restartable_init else (bare,)
    return Pod(
        name="lint",
        uid="lint",
        containers=regular,
        init_containers=(bare,) if container.is_restartable_init else (),
        restart_policy=pod.restart_policy,
        termination_grace_period_seconds=pod.termination_grace_period_seconds,
    )


_STAND_IN = ExecAction(command=("probe",))


def _stand_in(
    container: Container,
    probe_type: ProbeType,
    keep: frozenset[ProbeType],
    instant: frozenset[ProbeType],
) -> Probe | None:
    probe = container.probe(probe_type)
    if probe is None or probe_type not in keep:
        return None
    if probe_type in instant and probe.timeout_seconds > 0:
        # an attempt times out only when its answer takes longer (simulate/run.py)
        probe = replace(probe, timeout_seconds=1)
    port = getattr(probe.handler, "port", None)
    if isinstance(port, str) and container.port_by_name(port) is None:
        return replace(probe, exec=None, grpc=None)
    return replace(probe, exec=_STAND_IN, http_get=None, tcp_socket=None, grpc=None)


Stop = Callable[[list[Event]], bool]


def _kills_enough(events: list[Event]) -> bool:
    kills = sum(1 for e in events if e.type == EventType.KILLING)
    return kills >= _KILLS_ENOUGH or any(
        e.type == EventType.READY_CHANGED and e.fields.get("ready") for e in events
    )


def _first_exit_after_kill(events: list[Event]) -> bool:
    killed = False
    for e in events:
        killed = killed or e.type == EventType.KILLING
        if killed and e.type == EventType.CONTAINER_EXITED:
            return True
    return False


def _first_kill(events: list[Event]) -> bool:
    return any(e.type == EventType.KILLING for e in events)


def run(
    pod: Pod,
    container: Container,
    app: App,
    duration: float,
    stop: Stop | None = None,
    keep: frozenset[ProbeType] = ALL,
) -> Run:
    """Return the container alone in its pod under `app`, with the probe types in `keep`, for
    `duration` s (at most an hour) or until `stop` says so."""
    if not 0 <= duration <= _LONGEST:
        raise ValueError(f"a run of {duration:g} s: at most {_LONGEST:g} s of virtual time")
    probes = tuple(sorted(app.probes.items(), key=lambda kv: kv[0].key))
    app_key = (app.start_after, app.exit_after, app.exit_code, app.stop_seconds, app.default)
    instant = frozenset(pt for pt in ProbeType if app.behaviour(pt).latency_ms <= 0)
    pod = alone(pod, container, keep, instant)
    return _run(pod, app_key, probes, duration, stop, _PROFILE.get())


def _with(probe_type: ProbeType) -> frozenset[ProbeType]:
    """Return a probe and what gates it: startup holds liveness and readiness back (§5.10)."""
    return frozenset((probe_type, ProbeType.STARTUP))


@lru_cache(maxsize=4096)
def _run(
    pod: Pod,
    app_key: tuple[float, float | None, int, float, Behaviour],
    probes: tuple[tuple[ProbeType, Behaviour], ...],
    duration: float,
    stop: Stop | None,
    profile: KubeletProfile,
) -> Run:
    start_after, exit_after, exit_code, stop_seconds, default = app_key
    app = App(
        start_after=start_after,
        exit_after=exit_after,
        exit_code=exit_code,
        stop_seconds=stop_seconds,
        default=default,
        probes=dict(probes),
    )
    name = SUBJECT
    sim = SimKubelet(Scenario(pod=pod, container=name, duration=duration, app=app), profile)
    sim.kubelet.start()
    t = 0.0
    while t < duration:
        t = min(duration, t + 10.0)
        sim.clock.run_until(t)
        if stop is not None and stop([e for e in sim.events if e.container == name]):
            break
    events = sorted((e for e in sim.events if e.container == name), key=lambda e: e.t)
    unhealthy: dict[str, str] = {}
    for e in events:
        if e.type == EventType.UNHEALTHY and e.probe and e.probe not in unhealthy:
            unhealthy[e.probe] = str(e.fields.get("message", ""))
    return Run(
        duration=t,
        kills=tuple((e.t, e.probe or "") for e in events if e.type == EventType.KILLING),
        exits=tuple(
            (e.t, int(e.fields.get("exitCode", 0)))
            for e in events
            if e.type == EventType.CONTAINER_EXITED
        ),
        ready=tuple(
            (e.t, bool(e.fields.get("ready"))) for e in events if e.type == EventType.READY_CHANGED
        ),
        attempts=tuple(
            (e.t, e.probe or "", str(e.fields.get("outcome")))
            for e in events
            if e.type == EventType.PROBE_ATTEMPT
        ),
        unhealthy=tuple(unhealthy.items()),
    )


def _healthy(start: float = 0.0) -> App:
    return App(start_after=0.0, default=Behaviour(ready_after=start))


def _grid_after(seconds: float, period: int) -> float:
    """Return the first tick of a worker made at 0 that is at or after `seconds` (§4.3, §4.4)."""
    return math.ceil(seconds / period) * period


def budget_seconds(container: Container) -> tuple[float, ProbeType] | None:
    """When a container that never answers is killed: the startup probe's budget if it has
    one, else liveness's (initialDelay + failureThreshold periods, §5.9, §6.2-6.3)."""
    for pt in (ProbeType.STARTUP, ProbeType.LIVENESS):
        probe = container.probe(pt)
        if probe is not None:
            return probe.initial_delay_seconds + probe.failure_threshold * probe.period_seconds, pt
    return None


def slow_start(pod: Pod, container: Container, start_seconds: float) -> Run:
    """The app answers its probes only `start_seconds` after each start."""
    return run(pod, container, _healthy(start_seconds), _MAX_SECONDS, _kills_enough)


def _after_start(container: Container, probe: Probe) -> float:
    startup = container.startup_probe
    first = startup.period_seconds if startup is not None else 0
    return _grid_after(
        probe.initial_delay_seconds + first + 2 * probe.period_seconds, probe.period_seconds
    )


def blip(pod: Pod, container: Container) -> tuple[float, Run]:
    """One liveness attempt fails, once, well after the start; returns when and the run."""
    probe = container.liveness_probe
    assert probe is not None
    at = _after_start(container, probe)
    app = App(
        start_after=0.0,
        probes={ProbeType.LIVENESS: Behaviour(fail_between=((at, at + 1.0),))},
    )
    duration = min(at + 4 * probe.period_seconds, _LONGEST)
    return at, run(pod, container, app, duration, _first_kill, KILLS)


def hung(pod: Pod, container: Container, probe_type: ProbeType) -> Run:
    """The probe's endpoint never answers in time; the container's other probes are fine."""
    probe = container.probe(probe_type)
    assert probe is not None
    slow = Behaviour(latency_ms=(probe.timeout_seconds + 1) * 1000.0)
    app = App(start_after=0.0, probes={probe_type: slow})
    spacing = max(probe.period_seconds, probe.timeout_seconds)
    duration = probe.initial_delay_seconds + spacing * (probe.failure_threshold + 3)
    stop = None if probe_type is ProbeType.READINESS else _first_kill
    return run(pod, container, app, min(duration, _MAX_SECONDS), stop, _with(probe_type))


def failing(pod: Pod, container: Container, probe_type: ProbeType) -> Run:
    """Every attempt of one probe fails (a server that cannot answer it); the others pass."""
    probe = container.probe(probe_type)
    assert probe is not None
    app = App(start_after=0.0, probes={probe_type: Behaviour(ready_after=_NEVER)})
    duration = probe.initial_delay_seconds + probe.period_seconds * (probe.failure_threshold + 8)
    return run(pod, container, app, min(duration, _MAX_SECONDS), _kills_enough, _with(probe_type))


def unresolved(pod: Pod, container: Container, probe_type: ProbeType) -> Run:
    """Return a healthy app: what the probe's own target makes of it (a port that resolves to
    nothing errors on every attempt, §16.4)."""
    probe = container.probe(probe_type)
    assert probe is not None
    duration = probe.initial_delay_seconds + probe.period_seconds * 10
    return run(pod, container, _healthy(), min(duration, _MAX_SECONDS), None, _with(probe_type))


def stuck_kill(pod: Pod, container: Container, probe_type: ProbeType) -> Run:
    """The probe always fails and the app ignores SIGTERM: how long the kill takes."""
    probe = container.probe(probe_type)
    assert probe is not None
    app = App(
        start_after=0.0,
        stop_seconds=_IGNORES_SIGTERM,
        probes={probe_type: Behaviour(ready_after=_NEVER)},
    )
    grace = max(
        probe.termination_grace_period_seconds or 0, pod.termination_grace_period_seconds or 0
    )
    duration = (
        probe.initial_delay_seconds
        + probe.period_seconds * (probe.failure_threshold + 2)
        + grace
        + 10
    )
    return run(pod, container, app, min(duration, _LONGEST), _first_exit_after_kill, KILLS)


OUTAGE_SECONDS = 60.0


def outage(pod: Pod, container: Container) -> tuple[float, Run]:
    """Liveness fails for a minute, as it would beside readiness if both check what is down:
    the kills that readiness alone would not have caused."""
    liveness = container.liveness_probe
    assert liveness is not None
    at = _after_start(container, liveness)
    app = App(
        start_after=0.0,
        probes={ProbeType.LIVENESS: Behaviour(fail_between=((at, at + OUTAGE_SECONDS),))},
    )
    return at, run(pod, container, app, min(at + OUTAGE_SECONDS, _LONGEST), None, KILLS)
