"""Work out the start-up budget a container needs, from what is known of its starts.

The budget is proven on the kubelet's model before it is proposed.

What is known of a container's starts (`Starts`): the slowest start seen to finish (from the
container's start to its gate probe's first success), the longest a start lived before a kill
ended it unfinished (a lower bound: that start needed longer), and a start declared in the
`probetui.io/start-seconds` annotation. `propose` turns them into a failureThreshold for the
probe that kills a slow start (the startup probe, else liveness; or a startupProbe to add) and
runs it through `simulated.slow_start`, `probetui simulate`'s model of an app that answers its
probes only that long after each start. A proposal is made only once the model's container is
no longer killed and gets Ready; until then the threshold is raised one period at a time, and
where no threshold in reach does it, `propose` says so instead.

Where no start was seen to finish and none is declared, all that is known is that each start
took longer than it lived: the proposal is a guess above the longest survival (twice it, and
at least GUESS_EXTRA more), said to be a guess, and checked by the model against what the
kills prove: a start at least as long as the longest survival.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from probetui.lint import simulated
from probetui.lint.rules_static import seconds
from probetui.simulate.scenario import App, Behaviour
from probetui.spec.model import Container, Pod, Probe, ProbeType
from probetui.timeline.events import Event, EventType

# a start that was never seen to end says only that it takes longer than it lived: the guess
# errs long, since a budget too long only delays noticing a start that hangs, while one too
# short restarts every start, for ever
GUESS_FACTOR = 2.0
GUESS_EXTRA = 30.0
# how many thresholds past the first candidate the search tries before it gives up
SEARCH_STEPS = 30
# a model run stops at this many kills: the crash loop is plain by then
KILLS_ENOUGH = 3
RUN_SECONDS = 900.0  # at most, of model time


@dataclass(frozen=True, slots=True)
class Starts:
    """Holds what is known of one container's starts (seconds from its start to its gate probe's
    first success); None where nothing of the kind is known."""

    finished: float | None = None  # the slowest start seen to finish
    finished_count: int = 0
    survived: float | None = None  # the longest a start lived before a kill ended it unfinished
    killed: int = 0  # starts killed before they finished
    declared: float | None = None  # probetui.io/start-seconds

    @property
    def need(self) -> float | None:
        """Return the start the budget must cover: the longest of those known."""
        known = [v for v in (self.finished, self.survived, self.declared) if v is not None]
        return max(known, default=None)

    @property
    def guess(self) -> bool:
        """Only kills are known: no start seen to finish, none declared that they allow."""
        if self.survived is None or self.finished is not None:
            return False
        return self.declared is None or self.declared <= self.survived

    def words(self) -> str:
        """'no start has finished yet; the longest survived 9 s before its kill', or what was
        seen and declared."""
        parts = []
        if self.finished is not None:
            n = self.finished_count
            parts.append(
                f"took up to {seconds(round(self.finished, 1))} to start "
                f"({n} start{'s' if n != 1 else ''} seen)"
            )
        if self.survived is not None:
            n = self.killed
            if self.guess:
                parts.append(
                    f"no start has finished yet ({n} killed); the longest survived "
                    f"{seconds(round(self.survived, 1))} before its kill"
                )
            else:
                parts.append(
                    f"{n} start{'s' if n != 1 else ''} killed before they ended (the longest "
                    f"lived {seconds(round(self.survived, 1))})"
                )
        return "; ".join(parts)


def wanted_seconds(starts: Starts, factor: float = 1.0, extra: float = 0.0) -> float | None:
    """Return the budget to aim for: `factor` x the start needed, plus `extra` seconds; or the guess
    where only kills are known (module docstring)."""
    need = starts.need
    if need is None:
        return None
    if starts.guess:
        return max(GUESS_FACTOR * need, need + GUESS_EXTRA)
    return factor * need + extra


@dataclass(frozen=True, slots=True)
class Settled:
    """Records a model run's stop: the third kill, or the start over (a success of the probe that
    kills slow starts, since the last kill) and the container Ready where a probe gates it.
    Frozen, so that lint's memo of runs can key on it."""

    killer: str  # the probe key: startup, else liveness
    gated: bool  # a readiness or startup probe decides Ready (else Ready is running)

    def __call__(self, events: list[Event]) -> bool:
        kills, answered, ready = 0, False, not self.gated
        for e in events:
            if e.type == EventType.KILLING:
                kills, answered, ready = kills + 1, False, not self.gated
            elif e.type == EventType.PROBE_ATTEMPT and e.probe == self.killer:
                answered = answered or e.fields.get("outcome") == "success"
            elif e.type == EventType.READY_CHANGED and e.fields.get("ready"):
                ready = True
        return kills >= KILLS_ENOUGH or (answered and ready)


def gated(container: Container) -> bool:
    return container.readiness_probe is not None or container.startup_probe is not None


def start_run(pod: Pod, container: Container, start: float) -> simulated.Run:
    """Return the kubelet's model of the container alone, its app answering every probe only `start`
    seconds after each start: until its third kill, or until the start is over."""
    killer = _killer(container)
    if killer is None:
        raise ValueError(f"no startup or liveness probe on {container.name!r}")
    app = App(start_after=0.0, default=Behaviour(ready_after=start))
    stop = Settled(killer[0].key, gated(container))
    return simulated.run(pod, container, app, RUN_SECONDS, stop)


def kills_words(run: simulated.Run, gated: bool = True) -> str:
    """'3 kills in 60 s, never Ready', 'no kill, Ready at 21 s' ('Ready' only where a probe
    gates it: without, a container is Ready the moment it runs)."""
    n = len(run.kills)
    ready = run.first_ready()
    if not n:
        if gated and ready is not None:
            return f"no kill, Ready at {seconds(round(ready, 1))}"
        return "no kill"
    said = f"{n} kill{'s' if n != 1 else ''} in {seconds(round(run.duration))}"
    if gated:
        said += f", Ready at {seconds(round(ready, 1))}" if ready is not None else ", never Ready"
    return said


@dataclass(frozen=True, slots=True)
class Proposal:
    """Proposes a start-up budget the model showed to end the kills of a start of `start`
    seconds."""

    probe: ProbeType  # whose failureThreshold: startup (to raise, or `added`) or liveness
    added: bool  # a startupProbe to add, like the liveness probe but for its threshold
    period: int
    delay: int
    failure_threshold: int
    start: float  # the start the model ran: the app answers this long after each start
    guess: bool
    now: simulated.Run  # the model with the settings as they are
    then: simulated.Run  # the model with the proposal
    gated_now: bool  # whether Ready means more than running, now and with the proposal
    gated_then: bool

    @property
    def seconds(self) -> int:
        return self.delay + self.failure_threshold * self.period

    def then_words(self) -> str:
        return kills_words(self.then, self.gated_then)

    def model_words(self) -> str:
        """'a 20 s start: now 3 kills in 60 s; with failureThreshold 13 no kill, Ready at
        21 s' (the model's runs in words)."""
        then = f"with failureThreshold {self.failure_threshold} {self.then_words()}"
        if self.guess:
            # the kills prove only a lower bound: what the model shows is that the guess is
            # not disproved by them
            return f"a start of {seconds(round(self.start, 1))}, all the kills prove: {then}"
        now = kills_words(self.now, self.gated_now)
        return f"a {seconds(round(self.start, 1))} start: now {now}; {then}"


def _killer(container: Container) -> tuple[ProbeType, Probe] | None:
    for pt in (ProbeType.STARTUP, ProbeType.LIVENESS):
        probe = container.probe(pt)
        if probe is not None:
            return pt, probe
    return None


def with_threshold(
    pod: Pod, container: Container, pt: ProbeType, threshold: int, *, add: bool = False
) -> tuple[Pod, Container]:
    """Return the pod with `pt`'s failureThreshold at `threshold`; with `add`, a startupProbe added
    like the liveness probe (its handler, period and timeout, no initial delay)."""
    if add:
        live = container.liveness_probe
        assert live is not None
        probe = replace(
            live,
            initial_delay_seconds=0,
            success_threshold=1,
            failure_threshold=threshold,
            termination_grace_period_seconds=None,
        )
        changed = replace(container, startup_probe=probe)
    else:
        current = container.probe(pt)
        assert current is not None
        changed = replace(
            container, **{f"{pt.key}_probe": replace(current, failure_threshold=threshold)}
        )

    def swap(cs: tuple[Container, ...]) -> tuple[Container, ...]:
        return tuple(changed if c.name == container.name else c for c in cs)

    return replace(
        pod, containers=swap(pod.containers), init_containers=swap(pod.init_containers)
    ), changed


def _ends_the_kills(run: simulated.Run, gated: bool) -> bool:
    return not run.kills and (not gated or run.first_ready() is not None)


def propose(
    pod: Pod, container: Container, starts: Starts, wanted: float, *, add_startup: bool = False
) -> Proposal | str:
    """Return the smallest failureThreshold at or above `wanted` seconds of budget that the model
    shows ends the kills of a start of `starts.need` (module docstring); a startupProbe to add
    with `add_startup` (where the container has none). A one-line reason where there is none."""
    need = starts.need
    killer = _killer(container)
    if need is None or killer is None:
        return "nothing is known of the container's start, or no probe kills it"
    pt, probe = killer
    add = add_startup and container.startup_probe is None and container.liveness_probe is not None
    if add:
        pt, delay = ProbeType.STARTUP, 0
    else:
        delay = probe.initial_delay_seconds
    period = max(1, probe.period_seconds)
    first = max(
        1 if add else probe.failure_threshold + 1,
        math.ceil(max(0.0, wanted - delay) / period),
    )
    now = then = start_run(pod, container, need)
    new_c = container
    for threshold in range(first, first + SEARCH_STEPS):
        new_pod, new_c = with_threshold(pod, container, pt, threshold, add=add)
        then = start_run(new_pod, new_c, need)
        if _ends_the_kills(then, gated(new_c)):
            return Proposal(
                pt,
                add,
                period,
                delay,
                threshold,
                need,
                starts.guess,
                now,
                then,
                gated(container),
                gated(new_c),
            )
    last = first + SEARCH_STEPS - 1
    return (
        f"no failureThreshold from {first} to {last} ends the kills in the kubelet's model of a "
        f"{seconds(round(need, 1))} start ({kills_words(then, gated(new_c))} at {last}): the "
        "start-up budget is not what kills it"
    )


__all__ = [
    "GUESS_EXTRA",
    "GUESS_FACTOR",
    "Proposal",
    "Settled",
    "Starts",
    "gated",
    "kills_words",
    "propose",
    "start_run",
    "wanted_seconds",
    "with_threshold",
]
