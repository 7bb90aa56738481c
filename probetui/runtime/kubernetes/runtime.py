"""The cluster source: watch pods and events, shadow the kubelets, show both.

Pods and core/v1 events are listed and watched (`reflector.py`). Each observed pod is handed to
the engine as the kubelet reports it: the shadow workers read container IDs, `startedAt` and
`started` from the observed status, so they follow the same container instances as the real
workers. The kubelet's own verdicts (ready, started, restarts, exits) and its events
(Unhealthy, ProbeWarning, Killing, BackOff, ...) go to the timeline with `source: kubelet`.

Divergence: where the shadow's published result and the kubelet's verdict differ for longer
than one period, a `Divergence` event names both and the likely reasons; `DivergenceCleared`
when they agree again.

Reaching pods (`--via`): `direct` dials the pod IP; `port-forward` opens one API server
port-forward stream per attempt; `proxy` carries HTTP probes through `pods/proxy`. Exec probes
go through `pods/exec`. In `--read-only` mode only `direct` probes run, and only where the pod
network is reachable (in a cluster, or when `--via direct` says so); exec never runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus
from probetui.runtime.base import KubeletEvent, Runtime, RuntimeHost
from probetui.runtime.kubernetes.config import ClusterTarget
from probetui.runtime.kubernetes.events import EventCounter, kubelet_event, parse_event
from probetui.runtime.kubernetes.observed import PodSpecCache, kubelet_changes, observe_pod
from probetui.runtime.kubernetes.reflector import ADDED, DELETED, Reflector
from probetui.spec.model import Container, ExecAction, HTTPGetAction, Pod, ProbeType

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient, CoreV1Api

    from probetui.probe.exec import ExecOutput, ExecRunner

log = logging.getLogger(__name__)

VIAS = ("direct", "port-forward", "proxy")
# the server ends a watch after this long; the reflector resumes from the last version
WATCH_TIMEOUT_SECONDS = 300
# how often divergence is re-checked between observed changes
DIVERGENCE_CHECK = 1.0


@dataclass(slots=True)
class _Seen:
    pod: Pod
    status: PodStatus


@dataclass(slots=True)
class _Disagreement:
    since: float
    reported: bool = False


class KubernetesRuntime(Runtime):
    observes_kubelet = True

    def __init__(
        self,
        target: ClusterTarget,
        *,
        via: str | None = None,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self.target = target
        self.source = target.source
        self.read_only = target.read_only
        self.via_explicit = via is not None
        self.via = via or ("direct" if target.in_cluster else "port-forward")
        if self.via not in VIAS:
            raise ValueError(f"--via must be one of {', '.join(VIAS)}")
        self.watch_timeout = watch_timeout
        self.pods: dict[str, _Seen] = {}
        self._by_name: dict[tuple[str, str], str] = {}
        self._specs = PodSpecCache()
        self._counter = EventCounter()
        self._host: RuntimeHost | None = None
        self._api: ApiClient | None = None
        self._ws_api: ApiClient | None = None
        self._core: CoreV1Api | None = None
        self._ws_core: CoreV1Api | None = None
        self._disagree: dict[tuple[str, str, str], _Disagreement] = {}
        self.state = ""  # "reconnecting ..." for the header

    # -- running ----------------------------------------------------------------------------

    async def run(self, host: RuntimeHost) -> None:
        from kubernetes_asyncio.client import CoreV1Api

        self._host = host
        self._api = await self.target.api_client()
        self._core = CoreV1Api(self._api)
        if not self.read_only:
            self._ws_api = await self.target.api_client(websocket=True)
            self._ws_core = CoreV1Api(self._ws_api)
        pods = Reflector(self._list_pods, self._on_pod, name="pods", on_state=self._on_state)
        events = Reflector(
            self._list_events, self._on_event, name="events", on_state=self._on_state
        )
        tasks = [
            asyncio.create_task(pods.run(), name="watch pods"),
            asyncio.create_task(events.run(), name="watch events"),
            asyncio.create_task(self._divergence_loop(), name="divergence"),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for client in (self._api, self._ws_api):
                if client is not None:
                    with contextlib.suppress(Exception):
                        await client.close()

    def _on_state(self, text: str) -> None:
        self.state = text
        if text:
            log.warning("%s", text)

    def _list_args(self, rv: str | None, watch: bool) -> dict[str, Any]:
        args: dict[str, Any] = {"_preload_content": False}
        if watch:
            args.update(
                watch=True,
                allow_watch_bookmarks=True,
                timeout_seconds=self.watch_timeout,
                resource_version=rv or "",
                _request_timeout=self.watch_timeout + 30,
            )
        else:
            args["_request_timeout"] = 60
        return args

    async def _list_pods(self, rv: str | None, watch: bool) -> Any:
        assert self._core is not None
        args = self._list_args(rv, watch)
        if self.target.selector:
            args["label_selector"] = self.target.selector
        if self.target.all_namespaces:
            return await self._core.list_pod_for_all_namespaces(**args)
        return await self._core.list_namespaced_pod(self.target.namespace, **args)

    async def _list_events(self, rv: str | None, watch: bool) -> Any:
        assert self._core is not None
        args = self._list_args(rv, watch)
        args["field_selector"] = "involvedObject.kind=Pod"
        if self.target.all_namespaces:
            return await self._core.list_event_for_all_namespaces(**args)
        return await self._core.list_namespaced_event(self.target.namespace, **args)

    # -- pods -------------------------------------------------------------------------------

    def _on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        host = self._host
        assert host is not None
        try:
            observed = observe_pod(obj, self._specs)
        except Exception as e:  # one bad pod must not stop the watch
            meta = obj.get("metadata") or {}
            log.warning("pod %s/%s skipped: %s", meta.get("namespace"), meta.get("name"), e)
            return
        pod, status = observed.pod, observed.status
        now = time.time()
        if kind == DELETED:
            self.pods.pop(pod.uid, None)
            self._by_name.pop((pod.namespace, pod.name), None)
            self._specs.forget(pod.uid)
            host.manager.remove_pod(pod)
            host.pod_deleted(pod.uid)
            return
        before = self.pods.get(pod.uid)
        self.pods[pod.uid] = _Seen(pod, status)
        self._by_name[(pod.namespace, pod.name)] = pod.uid
        host.pod_snapshot(pod, status)
        for change in kubelet_changes(pod, before.status if before else None, status, now):
            host.kubelet_event(change)
        if kind == ADDED or before is None:
            host.manager.add_pod(pod, api_status=status)
        else:
            # new containers (an ephemeral spec change) get workers; existing ones are kept
            host.manager.add_pod(pod)
        if status.phase in ("Succeeded", "Failed"):
            host.manager.remove_pod(pod)
            return
        # the kubelet's status sync: readiness triggers where not ready (spec 10.3)
        host.manager.update_pod_status(pod, status)
        self._check_divergence(now)

    # -- events -----------------------------------------------------------------------------

    def _on_event(self, kind: str, obj: dict[str, Any]) -> None:
        host = self._host
        assert host is not None
        event = parse_event(obj)
        if event is None:
            return
        if kind == DELETED:
            self._counter.forget(event.uid)
            return
        increment = self._counter.observe(event)
        if increment == 0:
            return
        uid = event.pod_uid or self._by_name.get((event.pod_namespace, event.pod_name), "")
        seen = self.pods.get(uid)
        pod = seen.pod if seen is not None else _placeholder(event.pod_namespace, event.pod_name)
        host.kubelet_event(kubelet_event(event, pod, increment, time.time()))

    # -- divergence -------------------------------------------------------------------------

    async def _divergence_loop(self) -> None:
        while True:
            await asyncio.sleep(DIVERGENCE_CHECK)
            self._check_divergence(time.time())

    def _check_divergence(self, now: float) -> None:
        host = self._host
        if host is None:
            return
        manager = host.manager
        live: set[tuple[str, str, str]] = set()
        for seen in self.pods.values():
            pod, status = seen.pod, seen.status
            for cs in (*status.container_statuses, *status.init_container_statuses):
                container = pod.container(cs.name)
                if container is None or cs.running is None or not cs.container_id:
                    continue
                for probe_type, shadow, kubelet in _verdicts(manager, container, cs):
                    key = (pod.uid, cs.name, probe_type.key)
                    live.add(key)
                    self._track(host, pod, container, probe_type, key, shadow, kubelet, now)
        for key in [k for k in self._disagree if k not in live]:
            del self._disagree[key]

    def _track(
        self,
        host: RuntimeHost,
        pod: Pod,
        container: Container,
        probe_type: ProbeType,
        key: tuple[str, str, str],
        shadow: bool | None,
        kubelet: bool | None,
        now: float,
    ) -> None:
        probe = container.probe(probe_type)
        if probe is None or shadow is None or kubelet is None:
            return
        current = self._disagree.get(key)
        if shadow == kubelet:
            if current is not None:
                if current.reported:
                    host.kubelet_event(
                        KubeletEvent(
                            "DivergenceCleared",
                            now,
                            pod,
                            container.name,
                            probe_type,
                            {"since": current.since},
                            source="shadow",
                        )
                    )
                del self._disagree[key]
            return
        if current is None:
            self._disagree[key] = current = _Disagreement(now)
        if current.reported or now - current.since <= float(probe.period_seconds):
            return
        current.reported = True
        word = {ProbeType.READINESS: "ready", ProbeType.STARTUP: "started"}.get(probe_type, "alive")
        host.kubelet_event(
            KubeletEvent(
                "Divergence",
                now,
                pod,
                container.name,
                probe_type,
                {
                    "shadow": word if shadow else f"not {word}",
                    "kubelet": word if kubelet else f"not {word}",
                    "since": current.since,
                    "via": self.via,
                    "likely": self._likely_reasons(container, probe_type),
                },
                source="shadow",
            )
        )

    def _likely_reasons(self, container: Container, probe_type: ProbeType) -> list[str]:
        reasons = []
        if self.via != "direct":
            reasons.append(
                f"network path: the shadow probes via {self.via}, the kubelet dials the pod IP "
                "from its node"
            )
        else:
            reasons.append("network path: the shadow dials from here, the kubelet from the node")
        reasons.append("timing: the two workers probe at different instants of each period")
        probe = container.probe(probe_type)
        if probe is not None and probe.failure_threshold == 1:
            reasons.append("flakiness: failureThreshold 1 turns one slow answer into a flip")
        return reasons

    # -- reaching pods ----------------------------------------------------------------------

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        probe = container.probe(probe_type)
        handler = probe.handler if probe is not None else None
        if isinstance(handler, ExecAction):
            if self.read_only:
                return "not run: read-only (exec runs a command in the container)"
        elif self.read_only and self.via != "direct":
            return "not run: read-only allows no port-forward or proxy (use --via direct where pod IPs are reachable)"
        elif self.read_only and not (self.target.in_cluster or self.via_explicit):
            return "not run: read-only and pod IPs are likely unreachable from here (--via direct if they are)"
        elif self.via == "proxy" and not isinstance(handler, HTTPGetAction):
            return "not run: --via proxy carries HTTP probes only"
        return None

    async def reach(self, pod: Pod, container: Container, host: str, port: int) -> tuple[str, int]:
        if self.via == "direct":
            return host, port
        from probetui.runtime.kubernetes.streams import OneShotForward

        probe_timeout = max(
            (float(p.timeout_seconds) for t in ProbeType if (p := container.probe(t)) is not None),
            default=1.0,
        )
        if self.via == "proxy":
            from probetui.runtime.kubernetes.proxy import OneShotProxy

            assert self._core is not None
            relay = OneShotProxy(self._core, pod.namespace, pod.name, port, probe_timeout)
            return await relay.start()
        assert self._ws_core is not None
        core = self._ws_core

        async def opener() -> Any:
            return await core.connect_get_namespaced_pod_portforward(
                pod.name, pod.namespace, ports=str(port), _preload_content=False
            )

        return await OneShotForward(opener, probe_timeout).start()

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner | None:
        core = self._ws_core

        async def run(argv: Sequence[str], timeout: float) -> ExecOutput:
            from probetui.probe.exec import ExecOutput
            from probetui.runtime.kubernetes.streams import exec_in_pod

            if core is None:
                return ExecOutput(b"", None, error="exec is not available (read-only)")

            async def opener() -> Any:
                return await core.connect_get_namespaced_pod_exec(
                    pod.name,
                    pod.namespace,
                    command=list(argv),
                    container=container.name,
                    stderr=True,
                    stdout=True,
                    stdin=False,
                    tty=False,
                    _preload_content=False,
                )

            return await exec_in_pod(opener, timeout)

        return run


def _verdicts(
    manager: Any, container: Container, cs: ContainerStatus
) -> list[tuple[ProbeType, bool | None, bool | None]]:
    """(probe type, shadow says yes, kubelet says yes) for the verdicts the API shows."""
    out: list[tuple[ProbeType, bool | None, bool | None]] = []
    if container.readiness_probe is not None:
        shadow = manager.readiness.get(cs.container_id)
        out.append(
            (
                ProbeType.READINESS,
                None if shadow is None else shadow is ResultValue.SUCCESS,
                cs.ready,
            )
        )
    if container.startup_probe is not None:
        shadow = manager.startup.get(cs.container_id)
        out.append(
            (
                ProbeType.STARTUP,
                None if shadow is None else shadow is ResultValue.SUCCESS,
                cs.started,
            )
        )
    return out


def _placeholder(namespace: str, name: str) -> Pod:
    """An event about a pod not (or no longer) watched: shown under its name alone."""
    return Pod(name=name, namespace=namespace, uid=f"{namespace}/{name}", containers=())


__all__ = ["VIAS", "KubernetesRuntime"]
