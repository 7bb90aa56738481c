"""Name the identities shared across the layers: a probe's and a container's key, and the
kinds of event.

They sit just above `spec` so that every layer, from the prober to the screen, can import them
without importing the module that produces them: the played kubelet (`kubelet/pod.py`) names
its events as `timeline/events.py` encodes them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from probetui.spec.model import ProbeType


class ProbeKey(NamedTuple):
    """Identifies one probe worker: upstream's (pod UID, container, probe type) map key."""

    pod_uid: str
    container: str
    probe_type: ProbeType


class ContainerKey(NamedTuple):
    """Identifies one container of one pod."""

    pod_uid: str
    container: str


class EventType(StrEnum):
    """Names the kinds of event probetui itself makes; each member is its wire string, so
    JSONL, the recording and the stream carry the same text as before.

    A kubelet event seen on a cluster keeps its reason as a plain `str` (`Started`, `Pulled`,
    ...): `Event.type` is an `EventType` or that text, and the two compare equal as strings.
    """

    PROBE_ATTEMPT = "ProbeAttempt"
    PROBE_SKIPPED = "ProbeSkipped"
    RESULT_CHANGED = "ResultChanged"
    # a worker's state changed without a doProbe record (paused, resumed, stopped): for the store
    WORKER_STATE = "WorkerState"
    CONTAINER_STARTED = "ContainerStarted"
    CONTAINER_EXITED = "ContainerExited"
    KILLING = "Killing"
    BACK_OFF = "BackOff"
    UNHEALTHY = "Unhealthy"
    PROBE_WARNING = "ProbeWarning"
    STARTED_CHANGED = "StartedChanged"
    READY_CHANGED = "ReadyChanged"
    POD_DELETED = "PodDeleted"  # `probetui simulate`'s pod went away
    DIVERGENCE = "Divergence"
    PROBE_NOT_RUN = "ProbeNotRun"
    EVENTS_DROPPED = "EventsDropped"
    # the kubelet's own prober_probe_total over a window, beside the shadow's count of the same,
    # from a node agent (runtime/kubernetes/kubelet_counts.py)
    KUBELET_PROBE_COUNTS = "KubeletProbeCounts"
