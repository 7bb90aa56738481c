"""Derive a pod's status from its containers' instances: the phase and the Ready condition.

Pure functions of the pod, its `Instance`s and the status they go into; `PodKubelet`
(`pod.py`) calls them each time it generates the status (`UpdatePodStatus` plus `getPhase`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from probetui.kubelet.instance import Instance
from probetui.prober.status import ContainerStatus, PodStatus
from probetui.spec.model import Container, Pod


def with_containers(status: PodStatus, pod: Pod, instances: Mapping[str, Instance]) -> PodStatus:
    """Return `status` with each container's current status, in spec order."""

    def group(containers: tuple[Container, ...]) -> tuple[ContainerStatus, ...]:
        out = (instances[c.name].status for c in containers)
        return tuple(s for s in out if s is not None)

    return replace(
        status,
        container_statuses=group(pod.containers),
        init_container_statuses=group(pod.init_containers),
    )


def containers_ready(pod: Pod, status: PodStatus) -> bool:
    """Compute the pod's Ready condition without readiness gates
    (`GenerateContainersReadyCondition`): every regular container and sidecar has a status, and
    each is Ready."""
    wanted = [c.name for c in pod.probed_containers()]
    shown = {s.name: s.ready for s in (*status.container_statuses, *status.init_container_statuses)}
    return all(shown.get(name, False) for name in wanted)


def pod_phase(
    pod: Pod, instances: Mapping[str, Instance], *, initialized: bool, init_failed: bool
) -> str:
    """Compute `getPhase`, with the kubelet's own intent standing in for the restart policy.

    The pod is terminal once no regular container runs or is going to start again: then
    Succeeded if all of them exited 0, else Failed. A failed plain init container under
    restartPolicy Never fails the pod at once.
    """
    if init_failed:
        return "Failed"
    if not initialized:
        return "Pending"
    regular = [instances[c.name] for c in pod.containers]
    if any(i.status is None for i in regular):
        return "Pending"
    if any(i.running or i.restart_pending for i in regular):
        return "Running"
    codes = [i.status.terminated.exit_code for i in regular if i.status and i.status.terminated]
    if len(codes) < len(regular):
        return "Running"  # waiting to start again
    return "Succeeded" if all(c == 0 for c in codes) else "Failed"


__all__ = ["containers_ready", "pod_phase", "with_containers"]
