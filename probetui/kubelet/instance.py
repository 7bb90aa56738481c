"""Keep the kubelet's book of one pod's containers: each container across its instances.

`Instance` is what the pod worker knows of one container of the spec: how many instances it
created, the newest one's status, whether it is being killed, started or waited on, and the
exits that `doBackOff` and `ShouldContainerBeRestarted` read. `ContainerBackend` is where those
instances run (simulated in `probetui simulate`, processes locally); `Emit` is the one callback
through which the played kubelet says what happened. `PodKubelet` (`pod.py`) drives them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from probetui.kubelet import kuberuntime as kr
from probetui.prober.clock import Cancellable
from probetui.prober.status import ContainerStatus, Terminated
from probetui.spec.model import Container, ContainerKind, Pod

if TYPE_CHECKING:
    from probetui.kubelet.pod import PodKubelet

# what a runtime records for a container whose process could not be started (containerd CRI)
START_ERROR_EXIT_CODE = 128
START_ERROR_REASON = "StartError"
# the kubelet's event reason when a container fails to start (`events.FailedToStartContainer`)
REASON_FAILED = "Failed"
# RestartAllContainers: SyncPod's Killing message, and the removed containers' status
RESET_KILL_MESSAGE = "killing"
RESTARTING_ALL_CONTAINERS = "RestartingAllContainers"
RESET_STATUS_MESSAGE = "The container is removed because RestartAllContainers in place"

# (type, container, t, fields): one event in `probetui simulate`'s vocabulary
Emit = Callable[[str, str, float, dict[str, Any]], None]


class ContainerBackend(Protocol):
    """Defines where container instances run: simulated in `probetui simulate`, processes
    locally."""

    def start(self, kubelet: PodKubelet, container: Container, restart_count: int) -> None:
        """Create and start one instance; report `kubelet.started` or `kubelet.start_failed`."""

    def kill(
        self, kubelet: PodKubelet, container: Container, container_id: str, grace: float
    ) -> None:
        """SIGTERM the instance, SIGKILL it after `grace` s; its exit comes via `kubelet.exited`."""


@dataclass(slots=True)
class Instance:
    """Tracks one container of the pod across its instances."""

    spec: Container
    n: int = 0  # instances created so far; the next one's restartCount
    status: ContainerStatus | None = None
    started_at: float = 0.0  # the runtime's exact start; the status has it in whole seconds
    killing: bool = False
    kill_reason: kr.KillReason | None = None
    # the kubelet has decided to start it (again) and has not seen it start yet
    restart_pending: bool = False
    starting: bool = False  # the backend is creating it
    retry: Cancellable | None = None  # the start after a back-off window
    # FinishedAt of the newest exited instance (the runtime's, exact: doBackOff reads it)
    last_finished: float | None = None
    # the newest exit as the status shows it, and the termination before it: what the status
    # goes back to when a start in back-off is given up (ShouldContainerBeRestarted false)
    last_exit: Terminated | None = None
    exit_before: Terminated | None = None
    # Started of the instance a probe kill is replacing in the same sync, which 1.35-1.37
    # copy to the new instance by name (`convertToAPIContainerStatuses`)
    keep_started: bool = False

    @property
    def running(self) -> bool:
        return self.status is not None and self.status.running is not None

    @property
    def is_plain_init(self) -> bool:
        return self.spec.kind is ContainerKind.INIT and not self.spec.is_restartable_init


def keeps_another(pod: Pod, instances: Mapping[str, Instance], inst: Instance) -> bool:
    """Tell whether the pod keeps a regular container besides `inst`: computePodActions'
    `keepCount > 0 || len(ContainersToStart) > 0`.

    A regular container counts while it runs and is not being killed for good, or while it
    is due to start (back-off, being created, killed to be restarted). Sidecars never count.
    """
    for c in pod.containers:
        other = instances[c.name]
        if other is inst:
            continue
        if (other.running and not other.killing) or other.restart_pending or other.starting:
            return True
    return False


__all__ = [
    "REASON_FAILED",
    "RESET_KILL_MESSAGE",
    "RESET_STATUS_MESSAGE",
    "RESTARTING_ALL_CONTAINERS",
    "START_ERROR_EXIT_CODE",
    "START_ERROR_REASON",
    "ContainerBackend",
    "Emit",
    "Instance",
    "keeps_another",
]
