"""Carry the shadow's verdicts across the stream, for the cluster's divergence check.

The divergence check (`runtime/kubernetes/divergence.py`) runs in the parent, beside the watch,
and asks the prober's manager three things per probe: the worker's container ID, whether it has
reached a threshold against it (`result_is_own`), and the published result for that container.
In fed mode the workers live in the shards, so each shard sends a `verdict` frame whenever one of
those changes for a worker (`VerdictSink`, in the shard), and `Verdicts` (in the parent) answers the
check's questions from them: `readiness`/`startup` (`.get(container_id)`) and `get_worker`,
the same shapes the in-process manager has, so the check itself is the same code.

Verdict frames are never dropped for a slow reader (only `event` frames are), so the parent's
view is behind the shard's by the pipe's latency, never by an overload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probetui.keys import ProbeKey
from probetui.prober.results import ResultValue
from probetui.spec.model import ProbeType
from probetui.stream.protocol import VERDICT

# the probe types whose results the API shows beside the kubelet's (ready, started)
TRACKED = (ProbeType.READINESS, ProbeType.STARTUP)


def verdict_frame(
    key: ProbeKey, container_id: str, result_is_own: bool, published: ResultValue | None
) -> dict[str, Any]:
    return {
        "k": VERDICT,
        "uid": key.pod_uid,
        "c": key.container,
        "probe": key.probe_type.key,
        "cid": container_id,
        "j": result_is_own,
        "pub": None if published is None else int(published),
    }


def gone_frame(key: ProbeKey) -> dict[str, Any]:
    return {
        "k": VERDICT,
        "uid": key.pod_uid,
        "c": key.container,
        "probe": key.probe_type.key,
        "gone": True,
    }


# -- the shard's side -------------------------------------------------------------------------


class VerdictSink:
    """Acts as an engine sink in a fed shard: after each event about a tracked probe, reads
    the worker and its results as the divergence check would, and sends a `verdict` frame if
    they changed.
    """

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        self._send = send
        self.manager: Any = None  # the engine's, once it runs
        self._sent: dict[ProbeKey, tuple[str, bool, ResultValue | None]] = {}

    def pod(self, pod: Any, status: Any) -> None:
        if status is None:
            for key in [k for k in self._sent if k.pod_uid == pod.uid]:
                del self._sent[key]
                self._send(gone_frame(key))

    def event(self, event: Any) -> None:
        manager = self.manager
        if manager is None or not event.probe:
            return
        try:
            probe_type = ProbeType.parse(event.probe)
        except (KeyError, ValueError):
            return
        if probe_type not in TRACKED:
            return
        key = ProbeKey(event.pod_uid, event.container, probe_type)
        worker = manager.get_worker(key.pod_uid, key.container, probe_type)
        if worker is None:
            if self._sent.pop(key, None) is not None:
                self._send(gone_frame(key))
            return
        cid = worker.container_id
        result_is_own = bool(worker.result_is_own)
        published = manager.results_for(probe_type).get(cid) if cid else None
        state = (cid, result_is_own, published)
        if self._sent.get(key) == state:
            return
        self._sent[key] = state
        self._send(verdict_frame(key, cid, result_is_own, published))


# -- the parent's side ------------------------------------------------------------------------


@dataclass(slots=True)
class WorkerView:
    """Describes what the divergence check reads of a worker: its container and whether it has
    reached a threshold against it."""

    container_id: str
    result_is_own: bool = False


class ResultsView:
    """Answers `results.get(container_id)` as the manager's results cache does."""

    def __init__(self) -> None:
        self.by_container: dict[str, ResultValue] = {}

    def get(self, container_id: str) -> ResultValue | None:
        return self.by_container.get(container_id)


class Verdicts:
    """Keeps the shards' verdict frames, answering as the in-process manager does."""

    def __init__(self) -> None:
        self.workers: dict[ProbeKey, WorkerView] = {}
        self.readiness = ResultsView()
        self.startup = ResultsView()
        # workers of a shard that started again: their last verdict stands until the new
        # process's worker has reached a threshold of its own (else a restart would read as
        # "no opinion", and a reported divergence as cleared)
        self._held: set[ProbeKey] = set()

    def _results(self, probe_type: ProbeType) -> ResultsView:
        return self.readiness if probe_type is ProbeType.READINESS else self.startup

    def apply(self, frame: dict[str, Any]) -> None:
        try:
            probe_type = ProbeType.parse(str(frame["probe"]))
            key = ProbeKey(str(frame["uid"]), str(frame["c"]), probe_type)
        except (KeyError, ValueError):
            return  # not ours to read: a later version's probe, say
        if probe_type not in TRACKED:
            return
        if frame.get("gone"):
            self._drop(key)
            return
        cid = str(frame.get("cid") or "")
        try:
            result_is_own = bool(frame.get("j"))
            pub = frame.get("pub")
            published = ResultValue(pub) if pub is not None else None
        except (TypeError, ValueError):
            return
        if key in self._held:
            old = self.workers.get(key)
            if old is not None and old.container_id == cid and not result_is_own:
                return  # the new worker has no opinion yet: the last one's stands
        self._drop(key)
        self.workers[key] = WorkerView(cid, result_is_own)
        if cid and published is not None:
            self._results(probe_type).by_container[cid] = published

    def _drop(self, key: ProbeKey) -> None:
        self._held.discard(key)
        old = self.workers.pop(key, None)
        if old is not None and old.container_id:
            self._results(key.probe_type).by_container.pop(old.container_id, None)

    def forget_pod(self, pod_uid: str) -> None:
        for key in [k for k in self.workers if k.pod_uid == pod_uid]:
            self._drop(key)

    def hold_where(self, owned: Callable[[str], bool]) -> None:
        """A shard started again: its workers start from nothing; their last verdicts stand
        until each new worker has counted an attempt against the same container."""
        self._held.update(k for k in self.workers if owned(k.pod_uid))

    def get_worker(self, pod_uid: str, container: str, probe_type: ProbeType) -> Any:
        return self.workers.get(ProbeKey(pod_uid, container, probe_type))


__all__ = ["TRACKED", "VerdictSink", "Verdicts", "WorkerView", "gone_frame", "verdict_frame"]
