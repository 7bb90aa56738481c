"""Gather one workload's probes across its replicas.

What the workload's probe view shows and the `WorkloadSummary` line counts.

Per container name and probe type: how many replicas pass, fail, are on hold (a liveness or
startup failure acted on, waiting for the new container) or are unknown now (no result, or
none from an attempt yet: an initial value says nothing about the replica); the latency
percentiles over every replica's recent attempts against the probe's timeoutSeconds; and the
replicas that differ from the rest, by state (the failing one among passing ones) or by
latency (one replica far slower than the others, or near its timeout while they are not).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import NamedTuple

from probetui.keys import ContainerKey
from probetui.prober.outcome import Kind
from probetui.prober.results import ResultValue
from probetui.spec.model import ProbeType
from probetui.timeline.history import ProbeHistory
from probetui.timeline.store import Store
from probetui.triage.groups import (
    PROBE_ORDER,
    Summary,
    attempted,
    ranked,
    recent_restarts,
    summarize,
)

# the attempts of each replica the percentiles are taken over: recent enough to say how the
# probe does now, enough of them that one slow attempt is not the p90
RECENT = 20
# a replica is a latency outlier when its median is this many times the others' median ...
OUTLIER_FACTOR = 3.0
# ... and this much slower in absolute terms (1 ms against 4 ms is noise, not a finding)
OUTLIER_MARGIN = 0.010
# or when its median is this share of the timeout while the others' is under half of it
NEAR_TIMEOUT = 0.5
MIN_ATTEMPTS = 3  # a replica's median needs this many attempts to be compared

PASS, FAIL, HOLD, UNKNOWN = "pass", "fail", "hold", "unknown"
STATES = (PASS, FAIL, HOLD, UNKNOWN)


class Differ(NamedTuple):
    """Describes a replica that differs from the rest on one probe, and how."""

    key: ContainerKey
    pod: str
    state: str  # its state now (STATES)
    # "state": its state is not the others'; "slow": its latency is not theirs; "kubelet": the
    # kubelet's Ready is not theirs (readiness only)
    why: str
    p50: float | None  # its own median latency of recent attempts, s
    # the others' state (why "state"), median latency ("slow") or Ready ("kubelet")
    rest: str | float | bool | None


class ProbeAcross(NamedTuple):
    container: str
    probe: ProbeType
    counts: dict[str, int]  # STATES -> replicas in that state now
    timeouts: tuple[float, ...]  # the replicas' timeoutSeconds, distinct, most common first
    p50: float | None  # over every replica's recent attempts, s
    p90: float | None
    p99: float | None
    attempts: int  # how many latencies the percentiles are taken over
    differ: tuple[Differ, ...]
    states: dict[ContainerKey, str]  # each replica's state now
    medians: dict[ContainerKey, float]  # each replica's median latency, where it has enough

    @property
    def timeout(self) -> float:
        return self.timeouts[0] if self.timeouts else 1.0


class WorkloadProbes(NamedTuple):
    gid: str
    summary: Summary
    probes: tuple[ProbeAcross, ...]
    several: bool  # the pods have several containers: the view names the container
    # (problem score, container), worst first: by score, then those that differ from the rest
    replicas: tuple[tuple[int, ContainerKey], ...]
    recent_restarts: int  # container restarts in the last hour (`groups.recent_restarts`)

    @property
    def worst(self) -> ContainerKey | None:
        """Return the replica's container that most needs looking at: the highest problem score
        (`groups.problem_score`), else one that differs from the rest (a slow one)."""
        return self.replicas[0][1] if self.replicas else None

    @property
    def differing(self) -> bool:
        """Tell whether anything sets the worst replica apart from the others."""
        if not self.replicas:
            return False
        score, key = self.replicas[0]
        return score > 0 or any(d.key == key for p in self.probes for d in p.differ)


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Return the nearest-rank `p`th percentile of values sorted ascending (None for none)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def state_of(h: ProbeHistory | None) -> str:
    """Return a replica's state on one probe now. Before its first attempt a probe has only its
    initial value (readiness Failure, liveness Success): nothing to judge the replica by yet."""
    if h is None or h.published is None or h.published is ResultValue.UNKNOWN:
        return UNKNOWN
    if not attempted(h):
        return UNKNOWN
    if h.published is ResultValue.FAILURE:
        return HOLD if h.on_hold else FAIL
    return PASS


def recent_latencies(h: ProbeHistory | None, n: int = RECENT) -> list[float]:
    """Latencies (s) of the last `n` attempts that reached the container: a prober error the
    worker discarded has no latency worth the name; a timeout counts at its full length."""
    if h is None:
        return []
    return [lat for lat, kind in h.latencies(n) if kind != Kind.ERROR]


def _majority(states: list[str]) -> str:
    counts = Counter(states)
    # a tie goes to passing: with one failing replica of two, the failing one is the news
    return max(STATES, key=lambda s: (counts[s], s == PASS))


def _median(values: list[float]) -> float | None:
    return percentile(sorted(values), 50.0)


def _kubelet_differ(
    states: list[tuple[ContainerKey, str, str]],
    ready: dict[ContainerKey, bool],
    named: set[ContainerKey],
    medians: dict[ContainerKey, float],
) -> list[Differ]:
    """Replicas the kubelet holds not Ready while most are Ready, or the other way round: where
    the shadow cannot probe (read-only), the kubelet's verdict is the one that tells them apart."""
    if len(ready) < 2:
        return []
    usual = sum(ready.values()) * 2 >= len(ready)  # a tie goes to Ready, as above to passing
    return [
        Differ(key, pod, state, "kubelet", medians.get(key), usual)
        for key, pod, state in states
        if ready[key] != usual and key not in named
    ]


def across(store: Store, uids: list[str], container: str, probe: ProbeType) -> ProbeAcross:
    """Return one probe of one container name over the replicas (`uids`) whose pods have it."""
    states: list[tuple[ContainerKey, str, str]] = []
    medians: dict[ContainerKey, float] = {}
    pooled: list[float] = []
    timeouts: Counter[float] = Counter()
    ready: dict[ContainerKey, bool] = {}  # the kubelet's Ready of each replica's container
    for uid in uids:
        entry = store.pods.get(uid)
        c = entry.pod.container(container) if entry is not None else None
        spec = c.probe(probe) if c is not None else None
        if entry is None or spec is None:
            continue
        key = ContainerKey(uid, container)
        history = store.containers.get(key)
        h = history.probes.get(probe) if history is not None else None
        states.append((key, entry.pod.name, state_of(h)))
        cs = entry.status.lookup(container)
        ready[key] = cs is not None and cs.ready
        timeouts[float(spec.timeout_seconds)] += 1
        lats = recent_latencies(h)
        pooled += lats
        if len(lats) >= MIN_ATTEMPTS:
            medians[key] = _median(lats) or 0.0
    counts = {s: 0 for s in STATES}
    for _, _, state in states:
        counts[state] += 1
    usual = _majority([s for _, _, s in states])
    timeout = timeouts.most_common(1)[0][0] if timeouts else 1.0
    differ: list[Differ] = []
    for key, pod, state in states:
        if state != usual:
            differ.append(Differ(key, pod, state, "state", medians.get(key), usual))
            continue
        mine = medians.get(key)
        others = [m for k, m in medians.items() if k != key]
        rest = _median(others) if others else None
        if mine is None or rest is None:
            continue
        slower = mine >= OUTLIER_FACTOR * rest and mine - rest >= OUTLIER_MARGIN
        near = mine >= NEAR_TIMEOUT * timeout and rest < NEAR_TIMEOUT * timeout / 2
        if slower or near:
            differ.append(Differ(key, pod, state, "slow", mine, rest))
    if probe is ProbeType.READINESS:
        differ += _kubelet_differ(states, ready, {d.key for d in differ}, medians)
    pooled.sort()
    return ProbeAcross(
        container,
        probe,
        counts,
        tuple(t for t, _ in timeouts.most_common()),
        percentile(pooled, 50.0),
        percentile(pooled, 90.0),
        percentile(pooled, 99.0),
        len(pooled),
        tuple(differ),
        {key: state for key, _, state in states},
        medians,
    )


def workload_probes(store: Store, gid: str, uids: list[str], now: float) -> WorkloadProbes:
    """Return every probe of the workload across its replicas as of `now`, in the pods' container
    order, then startup, readiness, liveness."""
    names: dict[str, set[ProbeType]] = {}
    for uid in uids:
        entry = store.pods.get(uid)
        if entry is None:
            continue
        for c in entry.shown_containers():
            names.setdefault(c.name, set()).update(pt for pt in PROBE_ORDER if c.probe(pt))
    probes = tuple(
        across(store, uids, name, pt)
        for name, types in names.items()
        for pt in PROBE_ORDER
        if pt in types
    )
    differ = {d.key for p in probes for d in p.differ}
    order = ranked(store, uids)
    # stable: equal scores keep the list's order, the differing ones first among them
    replicas = sorted(order, key=lambda r: (-r[0], r[1] not in differ))
    return WorkloadProbes(
        gid,
        summarize(store, uids),
        probes,
        len(names) > 1,
        tuple(replicas),
        recent_restarts(store, uids, now),
    )


__all__ = [
    "FAIL",
    "HOLD",
    "PASS",
    "STATES",
    "UNKNOWN",
    "Differ",
    "ProbeAcross",
    "WorkloadProbes",
    "across",
    "percentile",
    "recent_latencies",
    "state_of",
    "workload_probes",
]
