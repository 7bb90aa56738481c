"""Give every widget what it reads: the store, the engine's controls, the clock, the time zone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.status import PodSnapshot
from probetui.spec.model import Container, Pod
from probetui.timeline.store import Store
from probetui.ui.controls import Controls
from probetui.ui.describe import kubelet_played

if TYPE_CHECKING:
    from probetui.record.archive import HistoryArchive


@dataclass
class UIContext:
    store: Store
    controls: Controls
    now: Callable[[], float]
    tz: tzinfo | None = None  # None: the local time zone
    # the recording being written or replayed: history older than the store's rings
    archive: HistoryArchive | None = None

    @property
    def read_only(self) -> bool:
        return self.controls.runtime.read_only

    def clock(self, t: float, ms: bool = False) -> str:
        stamp = datetime.fromtimestamp(t, self.tz)
        return stamp.strftime("%H:%M:%S.%f")[:-3] if ms else stamp.strftime("%H:%M:%S")

    def date_time(self, t: float) -> str:
        """Day and time, for a replay's cursor (a recording may span days)."""
        return datetime.fromtimestamp(t, self.tz).strftime("%Y-%m-%d %H:%M:%S")

    def pod_entry(self, pod_uid: str) -> PodSnapshot | None:
        return self.store.pods.get(pod_uid)

    def container_spec(self, key: ContainerKey) -> tuple[Pod, Container] | None:
        entry = self.store.pods.get(key.pod_uid)
        if entry is None:
            return None
        c = entry.pod.container(key.container)
        return (entry.pod, c) if c is not None else None

    def kubelet_played(self, key: ContainerKey | None) -> str | None:
        """Tell which kubelet release the pod's probes are played as, in words (`describe`)."""
        entry = self.store.pods.get(key.pod_uid) if key is not None else None
        if entry is None:
            return None
        runtime = self.controls.runtime
        return kubelet_played(runtime.configured_kubelet, runtime.node_kubelet(entry.pod))

    def not_probed(self, key: ProbeKey) -> str | None:
        """Say why the shadow does not run this probe (e.g. "not run: read-only"), or None."""
        spec = self.container_spec(ContainerKey(key.pod_uid, key.container))
        if spec is None:
            return None
        return self.controls.runtime.not_probed(spec[0], spec[1], key.probe_type)
