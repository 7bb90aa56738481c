"""Hold the observed pod status as the kubelet's status manager does: what a worker reads each tick.

Times are float seconds on the clock's timeline (epoch seconds live, virtual seconds in
simulation), so the same worker code runs on either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probetui.spec.model import Container, Pod


def whole_seconds(t: float) -> float:
    """A time as the status manager stores it: truncated to the second
    (docs/kubelet-behaviour.md §5.9).

    `normalizeStatus` (pkg/kubelet/status/status_manager.go) passes StartedAt and FinishedAt
    through `Rfc3339Copy` before the status is cached, because the API server keeps no
    sub-second part. Workers read that copy, so e.g. the initial delay counts from the whole
    second the container started in.
    """
    return float(math.floor(t))


@dataclass(frozen=True, slots=True)
class Running:
    started_at: float


@dataclass(frozen=True, slots=True)
class Waiting:
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class Terminated:
    exit_code: int = 0
    reason: str = ""
    started_at: float | None = None
    finished_at: float | None = None


ContainerState = Running | Waiting | Terminated


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    name: str
    container_id: str = ""
    state: ContainerState = field(default_factory=Waiting)
    last_state: Terminated | None = None
    started: bool | None = None
    ready: bool = False
    restart_count: int = 0

    @property
    def running(self) -> Running | None:
        return self.state if isinstance(self.state, Running) else None

    @property
    def terminated(self) -> Terminated | None:
        return self.state if isinstance(self.state, Terminated) else None

    def with_(self, **changes: object) -> ContainerStatus:
        return replace(self, **changes)


PHASE_TERMINAL = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True, slots=True)
class PodStatus:
    phase: str = "Running"
    pod_ip: str = ""
    container_statuses: tuple[ContainerStatus, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    # the API pod's Ready condition (None when absent); used only by kubelet-restart handling
    # (§8.5)
    ready_condition: bool | None = None

    def find(self, name: str) -> ContainerStatus | None:
        """Regular statuses first, then init statuses, skipping entries with no ID (§5.4)."""
        for group in (self.container_statuses, self.init_container_statuses):
            for s in group:
                if s.name == name and s.container_id:
                    return s
        return None

    def lookup(self, name: str) -> ContainerStatus | None:
        """By name, whatever the ID."""
        for group in (self.container_statuses, self.init_container_statuses):
            for s in group:
                if s.name == name:
                    return s
        return None

    def by_container_id(self, container_id: str) -> ContainerStatus | None:
        """The status of the container instance `container_id`, regular statuses first."""
        for group in (self.container_statuses, self.init_container_statuses):
            for s in group:
                if s.container_id == container_id:
                    return s
        return None


@dataclass(slots=True)
class PodSnapshot:
    """Pairs a pod's spec with its latest status: what the engine's workers read, the cluster source
    compares against, and the store keeps for the UI. The one name for that pair."""

    pod: Pod
    status: PodStatus
    version: int = 0  # the store's change counter at the pod's last change; unused elsewhere

    def container_status(self, name: str) -> ContainerStatus | None:
        return self.status.lookup(name)

    def shown_containers(self) -> tuple[Container, ...]:
        """Regular containers and sidecars: the ones that can have probes."""
        return self.pod.probed_containers()
