"""Write the `WorkloadSummary` JSON line, for a script to alert on.

A workload's summary and its probes across replicas, in the headless output's vocabulary
(`timeline.events`).

One object per workload (a pod without a controller is a workload of kind `Pod`), with the
keys every line has (`type`, `ts`, `namespace`, `pod`, `container`, `probe`, `source`; the
three per-container ones are null, `source` is `probetui`: the line sums the shadow's and the
kubelet's sides up) and the summary's own. docs/architecture.md lists them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from probetui.spec.model import ProbeType
from probetui.timeline.store import Store
from probetui.triage.groups import split_group, workloads
from probetui.triage.probes import FAIL, HOLD, PASS, UNKNOWN, ProbeAcross, workload_probes

WORKLOAD_SUMMARY = "WorkloadSummary"
SOURCE = "probetui"
# among probes as bad as each other, the one whose failure costs most is named
_COST = {ProbeType.LIVENESS: 2, ProbeType.STARTUP: 1, ProbeType.READINESS: 0}
# the work between two turns of the event loop while a tick is written: a key or an event
# waits at most about this long for it, however large the fleet's tick
SLICE_SECONDS = 0.02


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 3)


def _probe_json(p: ProbeAcross) -> dict[str, Any]:
    return {
        "container": p.container,
        "probe": p.probe.key,
        "pass": p.counts[PASS],
        "fail": p.counts[FAIL],
        "onHold": p.counts[HOLD],
        "unknown": p.counts[UNKNOWN],
        "timeoutSeconds": p.timeout,
        "latency_ms": (
            {"p50": _ms(p.p50), "p90": _ms(p.p90), "p99": _ms(p.p99), "attempts": p.attempts}
            if p.attempts
            else None
        ),
        "differ": [
            {"pod": d.pod, "state": d.state, "why": d.why, "p50_ms": _ms(d.p50)} for d in p.differ
        ],
    }


def worst_probe(probes: tuple[ProbeAcross, ...]) -> ProbeAcross | None:
    """Return the probe with the most replicas failing or held (the costliest at a tie); None where
    none fails: unknown alone (nothing probed yet, or read-only) is in the counts, no alarm."""
    worst = max(
        probes,
        key=lambda p: (p.counts[FAIL] + p.counts[HOLD], _COST[p.probe]),
        default=None,
    )
    if worst is None or not worst.counts[FAIL] + worst.counts[HOLD]:
        return None
    return worst


def workload_summary(store: Store, gid: str, uids: list[str], now: float) -> dict[str, Any]:
    """Return one workload's `WorkloadSummary` object."""
    ns, kind, name = split_group(gid)
    view = workload_probes(store, gid, uids, now)
    s = view.summary
    worst = worst_probe(view.probes)
    # a replica is named only where something is wrong with it
    worst_pod = None
    if view.worst is not None and view.differing:
        entry = store.pods.get(view.worst.pod_uid)
        worst_pod = entry.pod.name if entry is not None else None
    return {
        "type": WORKLOAD_SUMMARY,
        "ts": datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds"),
        "namespace": ns,
        "pod": None,
        "container": None,
        "probe": None,
        "source": SOURCE,
        "kind": kind,
        "name": name,
        "replicas": s.replicas,
        "ready": s.ready,
        "kubeletNotReady": s.replicas - s.ready,
        "shadowNotReady": s.shadow_not_ready,
        "divergent": s.divergent,
        "restartsLastHour": view.recent_restarts,
        "worstProbe": worst.probe.key if worst is not None else None,
        "worstContainer": worst.container if worst is not None else None,
        "worstReplica": worst_pod,
        "probes": [_probe_json(p) for p in view.probes],
    }


def _line(store: Store, gid: str, uids: list[str], now: float) -> str:
    return json.dumps(
        workload_summary(store, gid, uids, now), ensure_ascii=False, separators=(",", ":")
    )


def summary_lines(store: Store, now: float) -> list[str]:
    """Return every workload's line, in namespace, kind and name order."""
    return [_line(store, gid, uids, now) for gid, uids in workloads(store).items()]


def summary_slices(store: Store, now: float, budget: float | None = None) -> Iterator[list[str]]:
    """`summary_lines` in slices of about `budget` seconds of work each (None:
    `SLICE_SECONDS`), for a writer on the event loop to let it run between them. The
    workloads are those of the store when the tick began; each line is its workload as the
    store has it when the line is made, without the pods gone meanwhile (a workload gone
    altogether has no line)."""
    budget = SLICE_SECONDS if budget is None else budget
    pods = store.pods
    batch: list[str] = []
    start = time.perf_counter()
    for gid, uids in workloads(store).items():
        present = [uid for uid in uids if uid in pods]
        if present:
            batch.append(_line(store, gid, present, now))
        if batch and time.perf_counter() - start >= budget:
            yield batch
            batch, start = [], time.perf_counter()
    if batch:
        yield batch


__all__ = [
    "SLICE_SECONDS",
    "WORKLOAD_SUMMARY",
    "summary_lines",
    "summary_slices",
    "workload_summary",
    "worst_probe",
]
