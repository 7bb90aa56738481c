"""Run a source once in the parent and route its pods to the shards that own them: fed mode.

In the parent, `RouterHost` is the `RuntimeHost` the source drives: pod snapshots and the
manager calls (`add_pod`, `update_pod_status`, `remove_pod`, through `ManagerProxy`) become
frames to the owning shard; what the source reports itself (the kubelet's events) goes to the
parent's sinks directly. In the shard, `FedRuntime` replays those frames onto the shard's own
engine and manager, in the order the source made them.

A source that reads the shadow's results back (the cluster's divergence check) reads them from
the shards' `verdict` frames: `ManagerProxy` answers `readiness`, `startup` and `get_worker`
from a `Verdicts` (`verdicts.py`), the same shapes the in-process manager has.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from probetui.kubelet.profile import DEFAULT_PROFILE, profile_of_node
from probetui.prober.clock import Clock, LoopClock
from probetui.prober.status import PodStatus
from probetui.record.snapshot import status_from_json, status_json
from probetui.runtime.base import Runtime, RuntimeEvent, RuntimeHost
from probetui.shards.verdicts import Verdicts
from probetui.spec.model import Container, Pod, ProbeType
from probetui.stream.codec import PodReader
from probetui.stream.protocol import MGR, POD

if TYPE_CHECKING:
    from probetui.probe.exec import ExecRunner

# -- the parent's side ------------------------------------------------------------------------


class ManagerProxy:
    """Carries the three manager calls a source makes, sent to the shard that owns the pod; and what
    the divergence check reads back, from the shards' verdicts."""

    def __init__(
        self, send: Callable[[Pod, dict[str, Any]], None], verdicts: Verdicts | None = None
    ) -> None:
        self._send = send
        self.verdicts = verdicts if verdicts is not None else Verdicts()
        # a shard plays each pod's node's release itself, told its version by `kubelet` frames
        self.profile = DEFAULT_PROFILE

    @property
    def readiness(self) -> Any:
        return self.verdicts.readiness

    @property
    def startup(self) -> Any:
        return self.verdicts.startup

    def get_worker(self, pod_uid: str, container: str, probe_type: ProbeType) -> Any:
        return self.verdicts.get_worker(pod_uid, container, probe_type)

    def add_pod(
        self, pod: Pod, api_status: PodStatus | None = None, profile: Any = None
    ) -> list[Any]:
        frame: dict[str, Any] = {"k": MGR, "op": "add", "uid": pod.uid}
        if api_status is not None:
            frame["status"] = status_json(api_status)
        self._send(pod, frame)
        return []

    def set_profile(self, pod_uid: str, profile: Any) -> None:
        """Nothing to send: the pool's `kubelet` frames tell the shard the node's version."""

    def update_pod_status(self, pod: Pod, status: PodStatus) -> PodStatus:
        self._send(pod, {"k": MGR, "op": "update", "uid": pod.uid, "status": status_json(status)})
        return status

    def remove_pod(self, pod: Pod) -> None:
        self._send(pod, {"k": MGR, "op": "remove", "uid": pod.uid})


class RouterHost:
    """Routes what a source drives in the parent: each pod's doings go to its shard."""

    def __init__(
        self,
        snapshot: Callable[[Pod, PodStatus | None], None],
        manager_call: Callable[[Pod, dict[str, Any]], None],
        report: Callable[[RuntimeEvent], None],
        lateness: Callable[[], float],
        verdicts: Verdicts | None = None,
        shadow_event: Callable[[Pod, Any], None] | None = None,
    ) -> None:
        self._clock: Clock = LoopClock()
        self._snapshot = snapshot
        self._report = report
        self._shadow_event = shadow_event
        self._lateness = lateness
        self._manager = ManagerProxy(manager_call, verdicts)
        self._pods: dict[str, Pod] = {}

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def manager(self) -> Any:
        return self._manager

    def pod_snapshot(self, pod: Pod, status: PodStatus) -> None:
        self._pods[pod.uid] = pod
        self._snapshot(pod, status)

    def pod_deleted(self, pod_uid: str) -> None:
        pod = self._pods.pop(pod_uid, None)
        if pod is not None:
            self._snapshot(pod, None)

    def report(self, event: RuntimeEvent) -> None:
        self._report(event)

    def shadow_event(self, event: Any) -> None:
        pod = self._pods.get(event.pod_uid)
        if self._shadow_event is not None and (pod is not None or not event.pod_uid):
            self._shadow_event(pod, event)

    def lateness(self) -> float:
        return self._lateness()

    def collect_and_freeze(self) -> None:
        return None


# -- the shard's side -------------------------------------------------------------------------


class FedRuntime(Runtime):
    """Acts as a shard's runtime in fed mode: the parent's frames, applied in order. Probes
    dial what the pod names (the pod IP); `reach` (the cluster's settings,
    `cluster.reach_settings`): which probes run follows the parent's rules (read-only, exec), the
    attempts are labelled with its path, and those that go through the API server go on the shard's
    own clients."""

    via = "direct"

    def __init__(
        self,
        source: str = "fed",
        observes_kubelet: bool = False,
        reach: dict[str, Any] | None = None,
        read_only: bool = False,
    ) -> None:
        self.source = source
        self.observes_kubelet = observes_kubelet
        self.read_only = read_only
        self.pods = PodReader()
        self._frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        # pod UID -> the kubelet version of its node, as the parent's runtime learnt it
        self.kubelets: dict[str, str] = {}
        self._reach: Any = None
        if reach is not None:
            from probetui.shards.cluster import ShardReach

            self._reach = ShardReach(reach)
            self.via = self._reach.via
            self.read_only = self._reach.read_only

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        if self._reach is None:
            return None
        return self._reach.not_probed(pod, container, probe_type)

    def kube_version_of(self, pod: Pod) -> str | None:
        return self.kubelets.get(pod.uid)

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        if self._reach is None:
            return self.via
        return self._reach.attempt_via(container, probe_type)

    # the paths through the API server (exec, port-forward, proxy) are the shard's own
    def reach(  # type: ignore[override]
        self, pod: Pod, container: Container, host: str, port: int
    ) -> Coroutine[Any, Any, tuple[str, int]]:
        if self._reach is None:
            return super().reach(pod, container, host, port)
        return self._reach.reach(pod, container, host, port)

    @property  # type: ignore[override]
    def close_linger(self) -> float:
        return self._reach.close_linger if self._reach is not None else 0.0

    def reach_lingered(self, dialled: str) -> float:
        return self._reach.reach_lingered(dialled) if self._reach is not None else 0.0

    def reach_refused(self, dialled: str) -> str | None:
        return self._reach.reach_refused(dialled) if self._reach is not None else None

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner | None:
        return self._reach.exec_runner(pod, container) if self._reach is not None else None

    def feed(self, frame: dict[str, Any]) -> None:
        self._frames.put_nowait(frame)

    async def run(self, host: RuntimeHost) -> None:
        try:
            while True:
                self.apply(host, await self._frames.get())
        finally:
            # cancelled after the workers have stopped (Engine.run): nothing is in flight
            if self._reach is not None:
                await self._reach.close()

    def apply(self, host: RuntimeHost, frame: dict[str, Any]) -> None:
        if frame["k"] == POD:
            pod, status = self.pods.read(frame)
            if status is None:
                self.kubelets.pop(pod.uid, None)
                host.pod_deleted(pod.uid)
            else:
                host.pod_snapshot(pod, status)
            return
        if frame["k"] != MGR:
            return
        pod = self.pods.pods.get(frame["uid"])
        if pod is None:
            return  # a pod deleted in between: nothing to add, update or remove
        op = frame["op"]
        if op == "kubelet":
            version = str(frame.get("v") or "")
            self.kubelets[pod.uid] = version
            host.manager.set_profile(pod.uid, profile_of_node(version, host.manager.profile))
            return
        raw = frame.get("status")
        status = status_from_json(raw) if raw is not None else None
        if op == "add":
            profile = profile_of_node(self.kubelets.get(pod.uid), host.manager.profile)
            host.manager.add_pod(pod, api_status=status, profile=profile)
        elif op == "update" and status is not None:
            host.manager.update_pod_status(pod, status)
        elif op == "remove":
            host.manager.remove_pod(pod)


__all__ = ["FedRuntime", "ManagerProxy", "RouterHost"]
