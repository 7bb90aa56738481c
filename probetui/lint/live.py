"""Give the lint advice for one container of a live session: what the UI shows.

`Advisor` answers "what would `probetui lint` say about this container now": the static and
model rules on the pod's spec as it is now, and the evidence rules on the store's history of
the pod (`observed.from_store`'s reading). It is asked from the UI's poll, never from a
render: it reads the store (which is only safe where the store is fed, the event loop) and
caches each container's answer until the pod's spec changes or, while its history moves on,
for `REFRESH` seconds. The evidence rules here prove their proposals on the kubelet's model as
lint does (a few minutes of history around the problem, the replays kept across refreshes),
but leave the counterfactual's numbers out of their messages (`replay=False`): replaying the
whole history side by side is the what-if screen's work, when asked for.

Findings are ordered worst first: severity, then evidence before manifest-only (what was seen
beats what may happen), then rule id.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from probetui.keys import ContainerKey
from probetui.lint import simulated
from probetui.lint.model import Finding, Rule
from probetui.lint.observed import (
    Observed,
    PodHistory,
    Replays,
    pod_history,
    recorded_objects,
    store_events,
)
from probetui.prober.outcome import Kind
from probetui.simulate.scenario import App, Behaviour
from probetui.spec.model import ProbeType
from probetui.timeline.store import Store

REFRESH = 5.0  # seconds a container's advice stands while its history moves on
# the attempts of each probe the advice reads: bounds what one computation costs on the
# event loop, whatever the rings hold (an hour at period 1 s)
ATTEMPTS = 900
_CACHE = 512  # containers whose advice is kept


@dataclass(frozen=True, slots=True)
class Advice:
    findings: tuple[Finding, ...]  # worst first
    observed: Observed  # the pod's history, for the what-if
    at: float

    def for_probe(self, probe: ProbeType) -> list[Finding]:
        """Return the findings about this probe, and those about the container as a whole."""
        return [f for f in self.findings if f.hit.probe in (probe, None)]


def worst_first(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-f.severity.rank, not f.rule.needs_evidence, f.rule.id))


class Advisor:
    def __init__(
        self,
        store: Store,
        now: Callable[[], float],
        rules: Sequence[Rule] | None = None,
    ) -> None:
        from probetui.lint.registry import select

        self.store = store
        self.now = now
        self.rules = list(rules) if rules is not None else select()
        self._cache: dict[ContainerKey, tuple[object, int, Advice]] = {}
        # the proposals' replays, kept across refreshes: while the stretch of history around
        # a problem stays the same, trying a proposal again costs nothing
        self._replays = Replays()

    def advice(self, key: ContainerKey) -> Advice | None:
        """Return the container's advice, from the cache while it stands (module docstring)."""
        entry = self.store.pods.get(key.pod_uid)
        history = self.store.containers.get(key)
        if entry is None or entry.pod.container(key.container) is None:
            return None
        version = history.version if history is not None else 0
        now = self.now()
        cached = self._cache.get(key)
        if cached is not None:
            pod, seen_version, advice = cached
            if pod is entry.pod and (seen_version == version or now - advice.at < REFRESH):
                return advice
        advice = self._compute(key, now)
        if len(self._cache) >= _CACHE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = (entry.pod, version, advice)
        return advice

    def last(self, key: ContainerKey) -> Advice | None:
        """Return the advice last worked out for the container, as it was, without working it out
        again (None where there is none for its pod as it stands)."""
        entry = self.store.pods.get(key.pod_uid)
        cached = self._cache.get(key)
        if entry is None or cached is None or cached[0] is not entry.pod:
            return None
        return cached[2]

    def _compute(self, key: ContainerKey, now: float) -> Advice:
        from probetui.lint.registry import run

        entry = self.store.pods[key.pod_uid]
        events, oldest = store_events(self.store, key.pod_uid, ATTEMPTS)
        history = pod_history(entry.pod, entry.status, events, now, oldest)
        observed = Observed([history], "live session", replay=False, replays=self._replays)
        objects = recorded_objects(observed, "live")
        found = [
            f
            for f in run(objects, self.rules, observed)
            if f.hit.container in (key.container, None)
        ]
        return Advice(tuple(worst_first(found)), observed, now)


# -- the fallback what-if: the model over the probe's recent attempts ------------------------

MODEL_SECONDS = 900.0  # the recent history the fallback replays, at most


@dataclass(frozen=True, slots=True)
class ModelSide:
    """Holds what one run of the model did over the recent history."""

    kills: int
    exits: int
    not_ready_seconds: float
    first_ready: float | None
    losses: int = 0  # Ready lost (true to false)


@dataclass(frozen=True, slots=True)
class ModelWhatIf:
    seconds: float
    before: ModelSide  # the settings as they are
    after: ModelSide  # with the proposal


def _side(run: simulated.Run, duration: float) -> ModelSide:
    ready, last, not_ready, losses = False, 0.0, 0.0, 0
    for t, value in run.ready:
        if not ready:
            not_ready += t - last
        losses += ready and not value
        ready, last = value, t
    if not ready:
        not_ready += duration - last
    return ModelSide(len(run.kills), len(run.exits), not_ready, run.first_ready(), losses)


def model_what_if(
    history: PodHistory, container: str, overrides: tuple[str, ...]
) -> ModelWhatIf | str:
    """`probetui simulate`'s model over the last MODEL_SECONDS of the container's attempts,
    with its settings and with `overrides`: each failed or timed-out attempt becomes a failing
    stretch of one period around its time, each probe answers in its median latency. Coarser
    than the counterfactual (no instance bookkeeping, no self-check), so only where that
    cannot answer."""
    from probetui.simulate.scenario import Scenario, ScenarioError, apply_overrides

    spec = history.pod.container(container)
    rc = history.rec.containers.get(container)
    if spec is None or rc is None:
        return f"no probed container {container!r} in the pod"
    until = history.rec.until
    since = max(history.rec.since, until - MODEL_SECONDS)
    duration = until - since
    if duration <= 0:
        return "no history to replay yet"
    probes: dict[ProbeType, Behaviour] = {}
    for pt in ProbeType:
        probe = spec.probe(pt)
        if probe is None:
            continue
        answers = [a for inst in rc.instances for a in inst.answers.get(pt, ()) if a.t >= since]
        half = probe.period_seconds / 2.0
        fails = tuple(
            (a.t - since - half, a.t - since + half)
            for a in answers
            if a.kind in (Kind.FAILURE, Kind.TIMEOUT)
        )
        latencies = [a.latency for a in answers if a.kind in (Kind.SUCCESS, Kind.WARNING)]
        latency = statistics.median(latencies) * 1000.0 if latencies else 0.0
        probes[pt] = Behaviour(fail_between=fails, latency_ms=latency)
    app = App(start_after=0.0, probes=probes)
    try:
        after_pod = apply_overrides(
            Scenario(pod=history.pod, container=container, duration=duration, app=app), overrides
        ).pod
    except ScenarioError as e:
        return str(e)
    after_spec = after_pod.container(container)
    assert after_spec is not None
    before = simulated.run(history.pod, spec, app, duration)
    after = simulated.run(after_pod, after_spec, app, duration)
    return ModelWhatIf(duration, _side(before, duration), _side(after, duration))


__all__ = [
    "REFRESH",
    "Advice",
    "Advisor",
    "ModelSide",
    "ModelWhatIf",
    "model_what_if",
    "worst_first",
]
