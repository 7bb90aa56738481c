"""Group pods by workload, and sum up a workload over its replicas and the fleet over workloads.

A group is the controller the cluster names for a pod (`Pod.owner_kind`/`owner_name`: a
Deployment, StatefulSet, DaemonSet, Job, CronJob, ...). Pods without one (bare pods, a
manifest's, the demo's) stand alone. The summary answers "is it one bad replica or the whole
workload?" before any replica is read.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from probetui.keys import ContainerKey
from probetui.prober.results import ResultValue
from probetui.prober.status import PodSnapshot
from probetui.spec.model import Container, Pod, ProbeType
from probetui.timeline.events import EventType
from probetui.timeline.history import ProbeHistory
from probetui.timeline.store import ContainerHistory, Store

PROBE_ORDER = (ProbeType.STARTUP, ProbeType.READINESS, ProbeType.LIVENESS)
# which replica's result stands for the group's, per probe: the most alarming
RANK = {None: 0, ResultValue.SUCCESS: 1, ResultValue.UNKNOWN: 2, ResultValue.FAILURE: 3}
# a restart this recent counts as "restarting" in the fleet summary
RESTARTING_SECONDS = 600.0
# the window of "restarts in the last hour"
RECENT_RESTARTS_SECONDS = 3600.0
BARE = "Pod"  # the kind a pod without a controller stands under, where every pod needs one


def group_id(pod: Pod) -> str:
    """ "namespace/Kind/name" of the pod's workload, or "" for a pod that belongs to none."""
    if not pod.owner_kind:
        return ""
    return f"{pod.namespace}/{pod.owner_kind}/{pod.owner_name}"


def split_group(gid: str) -> tuple[str, str, str]:
    """(namespace, kind, name) of a group id."""
    ns, kind, name = gid.split("/", 2)
    return ns, kind, name


def workloads(store: Store) -> dict[str, list[str]]:
    """Return every pod under its workload: group id -> pod uids in name order. A pod without a
    controller is a workload of its own (`namespace/Pod/name`), so every pod is counted once."""
    out: dict[str, list[tuple[str, str]]] = {}
    for uid, entry in store.pods.items():
        pod = entry.pod
        gid = group_id(pod) or f"{pod.namespace}/{BARE}/{pod.name}"
        out.setdefault(gid, []).append((pod.name, uid))
    return {gid: [uid for _, uid in sorted(pods)] for gid, pods in sorted(out.items())}


def attempted(h: ProbeHistory | None) -> bool:
    """Tell whether the probe has had an attempt: before one it has only its initial value."""
    return h is not None and h.attempted()


def problem_score(entry: PodSnapshot, c: Container, history: ContainerHistory | None) -> int:
    """Tell how much a container needs looking at: divergence, not running or ready, failing or
    held probes, a run of failures short of the threshold, restarts. 0: nothing wrong."""
    score = 0
    cs = entry.status.lookup(c.name)
    if cs is not None:
        if cs.restart_count:
            score += 1
        if cs.running is None:
            score += 3
        elif not cs.ready:
            score += 2
    if history is not None:
        for pt, h in history.probes.items():
            if h.published is ResultValue.FAILURE:
                score += 3 if pt is not ProbeType.READINESS else 1
            elif h.last_result is ResultValue.FAILURE and h.result_run:
                score += 1  # near the threshold: failing, not yet acted on
            if h.on_hold and h.published is ResultValue.FAILURE:
                score += 2  # held for the kill (a startup probe is held after success too)
        if history.divergences:
            # the kubelet and the shadow disagree: what the cluster view is for
            score += 4
    return score


class Summary(NamedTuple):
    replicas: int
    ready: int  # the kubelet's: replicas with every container Ready
    # replicas whose readiness the shadow publishes as Failure after an attempt
    shadow_not_ready: int
    started: bool  # every container of every replica started
    divergent: int
    restarts: int
    worst: tuple[ResultValue | bool | None, ...]  # per PROBE_ORDER; False: no replica has it


def summarize(store: Store, uids: list[str]) -> Summary:
    ready = shadow = divergent = restarts = 0
    started = True
    worst: list[ResultValue | bool | None] = [False] * len(PROBE_ORDER)
    for uid in uids:
        entry = store.pods.get(uid)
        if entry is None:
            continue
        all_ready, diverged, failing = True, False, False
        for c in entry.shown_containers():
            cs = entry.status.lookup(c.name)
            all_ready = all_ready and cs is not None and cs.ready
            started = started and cs is not None and bool(cs.started)
            restarts += cs.restart_count if cs is not None else 0
            history = store.containers.get(ContainerKey(uid, c.name))
            diverged = diverged or (history is not None and history.divergences > 0)
            for i, pt in enumerate(PROBE_ORDER):
                if c.probe(pt) is None:
                    continue
                result = history.published(pt) if history is not None else None
                if pt is ProbeType.READINESS and result is ResultValue.FAILURE:
                    # the initial value is no verdict (read-only, nothing may be probed at all)
                    h = history.probes.get(pt) if history is not None else None
                    failing = failing or attempted(h)
                shown = worst[i]
                if shown is False or RANK[result] > RANK[shown]:  # type: ignore[index]
                    worst[i] = result
        ready += all_ready
        divergent += diverged
        shadow += failing
    return Summary(len(uids), ready, shadow, started, divergent, restarts, tuple(worst))


def recent_restarts(store: Store, uids: list[str], now: float) -> int:
    """Restarts seen in the last hour: container starts after the first (`restartCount` > 0)
    the store has a mark of. A pod listed after it restarted shows its latest restart only,
    since the API says when that one started and no more."""
    since = now - RECENT_RESTARTS_SECONDS
    n = 0
    for uid in uids:
        entry = store.pods.get(uid)
        if entry is None:
            continue
        for c in entry.shown_containers():
            history = store.containers.get(ContainerKey(uid, c.name))
            if history is None:
                continue
            n += sum(
                1
                for m in history.marks
                if m.type == EventType.CONTAINER_STARTED
                and since <= m.t <= now
                and int(m.fields.get("restartCount") or 0) > 0
            )
    return n


def ranked(store: Store, uids: list[str]) -> list[tuple[int, ContainerKey]]:
    """Return the replicas' containers by how much they need looking at (`problem_score`), most
    first; equal ones in the order of `uids`."""
    scored: list[tuple[int, int, ContainerKey]] = []
    for uid in uids:
        entry = store.pods.get(uid)
        if entry is None:
            continue
        for c in entry.shown_containers():
            key = ContainerKey(uid, c.name)
            score = problem_score(entry, c, store.containers.get(key))
            scored.append((-score, len(scored), key))
    scored.sort()
    return [(-score, key) for score, _, key in scored]


def worst_member(store: Store, uids: list[str]) -> ContainerKey | None:
    """Return the replica's container that most needs looking at (the first, where none does)."""
    order = ranked(store, uids)
    return order[0][1] if order else None


class Fleet(NamedTuple):
    pods: int
    not_ready: int
    divergent: int
    restarting: int


def fleet(store: Store, now: float) -> Fleet:
    """Pods in all: how many are not Ready, have diverged, restarted in the last minutes or
    are waiting to start again after a restart."""
    not_ready = divergent = restarting = 0
    for entry in store.pods.values():
        down, diverged, until = _fleet_facts(store, entry)
        not_ready += down
        divergent += diverged
        restarting += now < until
    return Fleet(len(store.pods), not_ready, divergent, restarting)


def _fleet_facts(store: Store, entry: PodSnapshot) -> tuple[bool, bool, float]:
    """(not Ready, diverged, counted as restarted until): one pod's share of `fleet`; until is
    inf while a restarted container waits to start again, -inf where none restarted."""
    ready, diverged, until = True, False, -math.inf
    for c in entry.shown_containers():
        cs = entry.status.lookup(c.name)
        if cs is None or not cs.ready:
            ready = False
        if cs is not None and cs.restart_count:
            run = cs.running
            until = max(until, math.inf if run is None else run.started_at + RESTARTING_SECONDS)
        history = store.containers.get(ContainerKey(entry.pod.uid, c.name))
        if history is not None and history.divergences:
            diverged = True
    return not ready, diverged, until


class FleetCount:
    """Keeps `fleet`'s counts from one look to the next: a pod is counted again only when the
    store says it changed, so that the top bar's count each second costs what changed, not a
    walk of every pod (the restarts' window alone moves with time: the few pods that
    restarted are looked at again)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._layout = -1
        self._version = -1
        self._facts: dict[str, tuple[bool, bool, float]] = {}
        self._not_ready = 0
        self._divergent = 0
        self._restarted: dict[str, float] = {}  # pods that restarted: counted until when

    def count(self, now: float) -> Fleet:
        """Return `fleet(store, now)`."""
        store = self.store
        if store.layout_version != self._layout:
            self._layout = store.layout_version
            self._facts.clear()
            self._restarted.clear()
            self._not_ready = self._divergent = 0
            for uid, entry in store.pods.items():
                self._add(uid, _fleet_facts(store, entry))
        elif store.version != self._version:
            pods, containers, since = store.pods, store.containers, self._version
            # a container a replay's seek refilled as it listed before counts as it did: what
            # it is listed by holds all that its pod's share is worked out from
            for uid in {
                k.pod_uid
                for k in store.changed_since(since)
                if (c := containers.get(k)) is None or c.listed_since() > since
            }:
                entry = pods.get(uid)
                before = self._facts.get(uid)
                if entry is None or before is None:
                    continue  # a container of a pod not (yet) listed
                self._remove(uid, before)
                self._add(uid, _fleet_facts(store, entry))
        self._version = store.version
        restarting = sum(now < until for until in self._restarted.values())
        return Fleet(len(self._facts), self._not_ready, self._divergent, restarting)

    def _add(self, uid: str, facts: tuple[bool, bool, float]) -> None:
        self._facts[uid] = facts
        self._not_ready += facts[0]
        self._divergent += facts[1]
        if facts[2] > -math.inf:
            self._restarted[uid] = facts[2]

    def _remove(self, uid: str, facts: tuple[bool, bool, float]) -> None:
        self._not_ready -= facts[0]
        self._divergent -= facts[1]
        self._restarted.pop(uid, None)


__all__ = [
    "PROBE_ORDER",
    "RANK",
    "Fleet",
    "FleetCount",
    "Summary",
    "attempted",
    "fleet",
    "group_id",
    "problem_score",
    "ranked",
    "recent_restarts",
    "split_group",
    "summarize",
    "workloads",
    "worst_member",
]
