"""Name the identities shared across the layers: a probe's and a container's key.

They sit just above `spec` so that every layer, from the prober to the screen, can import them
without importing the module that produces them.
"""

from __future__ import annotations

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
