"""Find where the shadow's published result and the kubelet's verdict part ways: divergence.

The verdicts compared are container `ready` for readiness and `started` for startup; liveness
has no verdict in the status. Where the two differ for longer than one period and 1.5 s (the
workers' tick phases and the status's way here), a `Divergence` event names both and the likely
reasons; `DivergenceCleared` when they agree again. Not while a watch is down, nor for the
status manager's sync period after it is back: the kubelet's status may still be on its way.
Nor while the shadow prober is behind its ticks. Only a shadow whose worker has reached a
threshold against the kubelet's current container counts: its initial value (after any number
of attempts below the threshold), or a probe it does not run, is no verdict.

A disagreement that is due is confirmed before it is reported: the runtime reads the pod afresh
(a get, allowed read-only) and the event goes out only if the answer, newer than the moment it
fell due, still disagrees. A watch can stay open while the API server refuses everything else:
one that is shutting down closes its listener first and its watches last, so for seconds the
kubelet cannot write its status while the watch looks healthy. The read fails then, which makes
the kubelet's view stale as a dropped watch does.

`KubernetesRuntime` holds one `Divergence`; its `ClusterPods` (`pods.py`) hands it the pods it
observes and makes the fresh reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probetui.prober.lateness import BEHIND
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus
from probetui.runtime.base import RuntimeEvent, RuntimeHost
from probetui.spec.model import Container, ExecAction, Pod, ProbeType
from probetui.timeline.events import EventType

# a disagreement shorter than a period and this much is the two workers' tick phases plus the
# status manager's way to the API server and the watch's way back, not a verdict
DIVERGENCE_SLACK = 1.5
# after the watch comes back, the kubelet's status may still be on its way: the status manager
# retries what it could not write at its next batch sync (status_manager.go syncPeriod)
STATUS_SYNC_PERIOD = 10.0

Key = tuple[str, str, str]


@dataclass(slots=True)
class _Disagreement:
    since: float
    reported: bool = False
    due: float | None = None  # when it passed its slack and a fresh read was asked for


class Divergence:
    """Tracks the disagreements between the shadow and the kubelet, by (pod UID, container, probe).

    `via` is the shadow's path (for the event and its likely reasons); `not_probed` says which
    probes the shadow does not run, whose values are no verdict.
    """

    def __init__(
        self,
        via: str,
        not_probed: Callable[[Pod, Container, ProbeType], str | None],
        confirm: Callable[[Pod], None] | None = None,
    ) -> None:
        self.via = via
        self.not_probed = not_probed
        # asks for a fresh read of the pod; its answer comes back through `confirmed` or
        # `unconfirmed`. None: report without one (a source that has nothing to read from)
        self.confirm = confirm
        self._disagree: dict[Key, _Disagreement] = {}
        # pod UID -> when the newest fresh read of it came back
        self._read_at: dict[str, float] = {}
        # a watch is down: what the kubelet reports may be old
        self._watch_down = False
        # the time from which the kubelet's reported state is current again
        self._fresh_from = 0.0

    # -- the kubelet's view, and when it is stale -------------------------------------------

    def connection(self, healthy: bool, now: float) -> None:
        """The watches' state changed: when they are all back, the kubelet's status sync may
        still be on its way for a sync period."""
        if healthy and self._watch_down:
            self._fresh_from = now + STATUS_SYNC_PERIOD
        self._watch_down = not healthy

    def confirmed(self, uid: str, now: float) -> None:
        """A fresh read of the pod came back (and has been applied as an update)."""
        self._read_at[uid] = now

    def unconfirmed(self, now: float) -> None:
        """A fresh read failed: the API server is refusing, so the kubelet's writes may be
        too; what it reports is stale until a status sync after now."""
        self._fresh_from = max(self._fresh_from, now + STATUS_SYNC_PERIOD)

    def kubelet_view_stale(self, now: float) -> bool:
        """While a watch is down, and for a status sync after, what the kubelet reports may be
        old: its status manager could not write while the API server was away."""
        return self._watch_down or now < self._fresh_from

    # -- checking ---------------------------------------------------------------------------

    def forget_pod(self, uid: str) -> None:
        self._read_at.pop(uid, None)
        self.forget(lambda key: key[0] != uid)

    def open_pods(self) -> set[str]:
        """Return the pods with a disagreement being timed or reported."""
        return {key[0] for key in self._disagree}

    def forget(self, keep: Callable[[Key], bool]) -> None:
        """Drop the disagreements `keep` says no to (containers no longer there)."""
        for key in [k for k in self._disagree if not keep(k)]:
            del self._disagree[key]

    def check_pod(
        self, host: RuntimeHost, pod: Pod, status: PodStatus, now: float, live: set[Key]
    ) -> None:
        manager = host.manager
        for cs in (*status.container_statuses, *status.init_container_statuses):
            container = pod.container(cs.name)
            if container is None or cs.running is None or not cs.container_id:
                continue
            for probe_type, shadow, kubelet in verdicts(manager, pod, container, cs):
                if self.not_probed(pod, container, probe_type) is not None:
                    continue
                key = (pod.uid, cs.name, probe_type.key)
                live.add(key)
                self._track(host, pod, container, probe_type, key, shadow, kubelet, now)

    def _track(
        self,
        host: RuntimeHost,
        pod: Pod,
        container: Container,
        probe_type: ProbeType,
        key: Key,
        shadow: bool | None,
        kubelet: bool | None,
        now: float,
    ) -> None:
        probe = container.probe(probe_type)
        current = self._disagree.get(key)
        if probe is None or shadow is None or kubelet is None or shadow == kubelet:
            if current is not None:
                if current.reported:
                    host.report(
                        RuntimeEvent(
                            "DivergenceCleared",
                            now,
                            pod,
                            container.name,
                            probe_type,
                            {
                                "since": current.since,
                                "message": f"shadow and kubelet agree again after "
                                f"{now - current.since:.0f}s",
                            },
                            source="shadow",
                        )
                    )
                del self._disagree[key]
            return
        if current is None:
            self._disagree[key] = current = _Disagreement(now)
        if not current.reported and (host.lateness() >= BEHIND or self.kubelet_view_stale(now)):
            # a shadow behind its ticks proves nothing about a container (on every path here,
            # the pod-update one too), nor does a kubelet status that could not reach us:
            # count from when both have caught up
            current.since = now
            current.due = None
            return
        if (
            current.reported
            or now - current.since <= float(probe.period_seconds) + DIVERGENCE_SLACK
        ):
            return
        if self.confirm is not None:
            if current.due is None:
                current.due = now
            if self._read_at.get(pod.uid, -1.0) < current.due:
                self.confirm(pod)
                return
        current.reported = True
        word = {ProbeType.READINESS: "ready", ProbeType.STARTUP: "started"}.get(probe_type, "alive")
        shadow_says = word if shadow else f"not {word}"
        kubelet_says = word if kubelet else f"not {word}"
        host.report(
            RuntimeEvent(
                EventType.DIVERGENCE,
                now,
                pod,
                container.name,
                probe_type,
                {
                    "shadow": shadow_says,
                    "kubelet": kubelet_says,
                    "since": current.since,
                    "via": self.via,
                    "likely": self._likely_reasons(container, probe_type),
                    "message": f"kubelet says {kubelet_says}, shadow says {shadow_says} for "
                    f"{now - current.since:.0f}s",
                },
                source="shadow",
            )
        )

    def _likely_reasons(self, container: Container, probe_type: ProbeType) -> list[str]:
        reasons = []
        probe = container.probe(probe_type)
        handler = probe.handler if probe is not None else None
        if isinstance(handler, ExecAction):
            reasons.append("path: both run the command in the container (pods/exec, CRI exec)")
        elif self.via == "port-forward":
            reasons.append(
                "network path: the shadow reaches localhost inside the pod through the API "
                "server; the kubelet dials the pod IP from its node"
            )
        elif self.via == "proxy":
            reasons.append(
                "network path: the API server's proxy dials the pod IP from the control plane; "
                "the kubelet dials it from its node"
            )
        else:
            reasons.append("network path: the shadow dials from here, the kubelet from the node")
        reasons.append("timing: the two workers probe at different instants of each period")
        if probe is not None and probe.failure_threshold == 1:
            reasons.append("flakiness: failureThreshold 1 turns one slow answer into a flip")
        return reasons


def verdicts(
    manager: Any, pod: Pod, container: Container, cs: ContainerStatus
) -> list[tuple[ProbeType, bool | None, bool | None]]:
    """(probe type, shadow says yes, kubelet says yes) for the verdicts the API shows, as the
    divergence check reads them off `manager`: the engine's or the shards' (`ManagerProxy`).

    The shadow has a verdict only once its worker has reached a threshold against this very
    container instance. Until then its cache holds the initial value, however many attempts
    below the threshold it has counted: a shadow that first sees a container already Ready (the
    kubelet's first attempt came before the watch brought the container) and whose first
    attempts fail says "not ready" by its initial Failure alone, where the kubelet, with a
    success behind it, stays Ready for failureThreshold periods.
    """
    out: list[tuple[ProbeType, bool | None, bool | None]] = []
    for probe_type, results, kubelet in (
        (ProbeType.READINESS, manager.readiness, cs.ready),
        (ProbeType.STARTUP, manager.startup, cs.started),
    ):
        if container.probe(probe_type) is None:
            continue
        worker = manager.get_worker(pod.uid, container.name, probe_type)
        own = worker is not None and worker.container_id == cs.container_id and worker.result_is_own
        value = results.get(cs.container_id) if own else None
        out.append((probe_type, None if value is None else value is ResultValue.SUCCESS, kubelet))
    return out


__all__ = ["DIVERGENCE_SLACK", "STATUS_SYNC_PERIOD", "Divergence", "verdicts"]
