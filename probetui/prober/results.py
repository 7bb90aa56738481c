"""Publish probe results per container ID (`pkg/kubelet/prober/results/results_manager.go`).

One manager per probe type (docs/kubelet-behaviour.md §1.5). `set` notifies subscribers only when
the stored value changes or the ID is new; `remove` is silent. Keyed by container ID, never by
name (§1.6).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum


class ResultValue(IntEnum):
    """Names the values of `results.Result` (§1.2)."""

    UNKNOWN = -1
    SUCCESS = 0
    FAILURE = 1

    def __str__(self) -> str:
        return {-1: "UNKNOWN", 0: "Success", 1: "Failure"}[int(self)]

    @property
    def label(self) -> str:
        """Title-case name used in JSON and the UI: Success, Failure, Unknown."""
        return {-1: "Unknown", 0: "Success", 1: "Failure"}[int(self)]


@dataclass(frozen=True, slots=True)
class Update:
    container_id: str
    result: ResultValue
    pod_uid: str


Subscriber = Callable[[Update], None]


class ResultsManager:
    """Caches the current result per container ID plus a change-only update stream.

    Upstream's update channel holds 20 and blocks a full `Set`; here subscribers are called
    synchronously, in order, which keeps the same ordering guarantee without the buffer.
    """

    __slots__ = ("_cache", "_subscribers", "touched")

    def __init__(self) -> None:
        self._cache: dict[str, ResultValue] = {}
        self._subscribers: list[Subscriber] = []
        # pods a `set` named, changed or not, once someone asks (`touched_pods`): a set of an
        # unchanged value still makes a worker's cached result its own; one that was its own
        # already names no pod
        self.touched: set[str] | None = None

    def subscribe(self, fn: Subscriber) -> None:
        self._subscribers.append(fn)

    def unsubscribe(self, fn: Subscriber) -> None:
        # a new list: an update being delivered goes on to the subscribers it started with
        self._subscribers = [f for f in self._subscribers if f != fn]

    def get(self, container_id: str) -> ResultValue | None:
        return self._cache.get(container_id)

    def set(
        self, container_id: str, result: ResultValue, pod_uid: str, *, own: bool = False
    ) -> bool:
        """Store `result`; return True (and notify) only if it is new or different. `own`: the
        cached value was already the setter's own result, so the same value again moves no
        verdict and names no pod (a steady probe's attempts leave the divergence walk idle;
        benchmarks.agents guards it)."""
        same = self._cache.get(container_id) is result
        if self.touched is not None and not (same and own):
            self.touched.add(pod_uid)
        if same:
            return False
        self._cache[container_id] = result
        update = Update(container_id, result, pod_uid)
        for fn in self._subscribers:
            fn(update)
        return True

    def touched_pods(self) -> set[str] | None:
        """Return the pods `set` named since the last call, and forget them; None on the first
        call, from which on they are kept."""
        touched = self.touched
        self.touched = set()
        return touched

    def remove(self, container_id: str) -> None:
        self._cache.pop(container_id, None)

    def __contains__(self, container_id: str) -> bool:
        return container_id in self._cache

    def __len__(self) -> int:
        return len(self._cache)
