"""The cluster source: watch pods and events, shadow the kubelets, show both.

Pods and core/v1 events are listed and watched (`reflector.py`). Each observed pod is handed to
the engine as the kubelet reports it: the shadow workers read container IDs, `startedAt` and
`started` from the observed status, so they follow the same container instances as the real
workers. The kubelet's own verdicts (ready, started, restarts, exits) and its events
(Unhealthy, ProbeWarning, Killing, BackOff, ...) go to the timeline with `source: kubelet`.

Divergence: where the shadow's published result and the kubelet's verdict (container `ready`
for readiness, `started` for startup; liveness has no verdict in the status) differ for longer
than one period and 1.5 s (the workers' tick phases and the status's way here), a `Divergence`
event names both and the likely reasons; `DivergenceCleared` when they agree again. Not while
a watch is down, nor for the status manager's sync period after it is back: the kubelet's
status may still be on its way. Only a shadow that has run an attempt against the kubelet's current
container counts: its initial value, or a probe it does not run, is no verdict.

Reaching pods (`--via`): `direct` dials the pod IP; `port-forward` opens one API server
port-forward stream per attempt; `proxy` carries plain HTTP probes through `pods/proxy`. Exec
probes go through `pods/exec`. A path the user may not open (403) makes the attempt an error
that says "forbidden", remembered for a minute per namespace so as not to ask on every attempt,
and what RBAC must grant for the server's version (read from `/version` at the first refusal:
exec and port-forward need `get`, and `create` too from 1.35).
In `--read-only` mode only `direct` probes run, and only where the pod network is reachable (in
a cluster, or when `--via direct` says so); exec never runs; each probe not run is reported
once, with the reason, as `ProbeNotRun`.

Start-up: the first list of pods must succeed. Bad credentials (401) or missing permissions
(403) stop the run with one line saying what to fix. An unreachable or failing API server does
too when `fail_fast` is set (headless: a script learns at once that it sees nothing); otherwise
(the UI) the reflector keeps retrying with back-off and `state` says "reconnecting".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp

from probetui.probe.tcp import join_host_port
from probetui.prober.lateness import BEHIND
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus
from probetui.runtime.base import KubeletEvent, Runtime, RuntimeFailure, RuntimeHost
from probetui.runtime.kubernetes.config import ClusterTarget
from probetui.runtime.kubernetes.events import EventCounter, kubelet_event, parse_event
from probetui.runtime.kubernetes.observed import PodSpecCache, kubelet_changes, observe_pod
from probetui.runtime.kubernetes.reflector import (
    ADDED,
    DELETED,
    ApiStatusError,
    Reflector,
    api_lister,
    describe,
)
from probetui.spec.model import (
    Container,
    ExecAction,
    HTTPGetAction,
    Pod,
    ProbeType,
    TCPSocketAction,
)

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient, CoreV1Api

    from probetui.probe.exec import ExecOutput, ExecRunner

log = logging.getLogger(__name__)

VIAS = ("direct", "port-forward", "proxy")
# the server ends a watch after this long; the reflector resumes from the last version
WATCH_TIMEOUT_SECONDS = 300
# how often divergence is re-checked between observed changes
DIVERGENCE_CHECK = 1.0
# how long a 403 for pods/portforward, pods/proxy or pods/exec is believed without asking again
FORBIDDEN_TTL = 60.0
# pods/proxy relays kept for judging their attempt; past this, the finished ones are dropped
MAX_RELAYS = 4096
PORT_FORWARD_LINGER = 1.0
# a disagreement shorter than a period and this much is the two workers' tick phases plus the
# status manager's way to the API server and the watch's way back, not a verdict
DIVERGENCE_SLACK = 1.5
# after the watch comes back, the kubelet's status may still be on its way: the status manager
# retries what it could not write at its next batch sync (status_manager.go syncPeriod)
STATUS_SYNC_PERIOD = 10.0
FIRST_LIST_TRIES = 3
# /version is asked once, for a 403's message: it must not hold the attempt up for long
VERSION_TIMEOUT = 2.0

NOT_RUN = "ProbeNotRun"


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
        fail_fast: bool = False,
        divergence_check: float = DIVERGENCE_CHECK,
        reflector_options: dict[str, Any] | None = None,
    ) -> None:
        self.target = target
        self.read_only = target.read_only
        self.via_explicit = via is not None
        self.via = via or ("direct" if target.in_cluster else "port-forward")
        if self.via not in VIAS:
            raise ValueError(f"--via must be one of {', '.join(VIAS)}")
        self.watch_timeout = watch_timeout
        self.fail_fast = fail_fast
        self.divergence_check = divergence_check
        self.reflector_options = dict(reflector_options or {})
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
        self._forbidden: dict[tuple[str, str], tuple[float, str]] = {}
        # pods/proxy relays by the address they listen on, until their attempt has been judged
        self._relays: dict[str, Any] = {}
        self._not_run_said: set[tuple[str, str, str]] = set()
        # the API server's (major, minor), once a refusal made it worth asking /version
        self.server_version: tuple[int, int] | None = None
        self._version_lookup: asyncio.Future[tuple[int, int] | None] | None = None
        self._states: dict[str, str] = {}
        # the time from which the kubelet's reported state is current again
        self._fresh_from = 0.0
        # told each time the connection state changes ("" when healthy); the CLI prints it
        self.on_state: Callable[[str], None] | None = None
        self.on_note: Callable[[str], None] | None = None
        self.pods_reflector: Reflector | None = None
        self.events_reflector: Reflector | None = None

    # -- what the header shows --------------------------------------------------------------

    @property
    def state(self) -> str:
        """Empty when connected; else what is wrong: "reconnecting: pods: ... retrying in 3.2s"."""
        troubles = [text for text in self._states.values() if text]
        return f"reconnecting: {'; '.join(troubles)}" if troubles else ""

    @property  # type: ignore[override]
    def source(self) -> str:
        state = self.state
        return f"{self.target.source}  [{state}]" if state else self.target.source

    @property
    def connection_notes(self) -> list[str]:
        """One-line notes for headless runs, told to `on_note` once the first list worked.

        Not before: a run that cannot connect prints its one error line and nothing else.
        """
        out = []
        if self.read_only:
            out.append(
                "read-only: only get, list and watch reach the API server; exec probes are not "
                "run" + ("" if self.via == "direct" else ", nor probes that need --via " + self.via)
            )
        elif self.via != "direct":
            out.append(
                f"shadow probes go via {self.via}: the kubelet dials the pod IP from its node, "
                "so answers can differ (see each attempt's via)"
            )
        return out

    # -- running ----------------------------------------------------------------------------

    async def run(self, host: RuntimeHost) -> None:
        from kubernetes_asyncio.client import CoreV1Api

        self._host = host
        self._api = await self.target.api_client()
        try:
            self._core = CoreV1Api(self._api)
            if not self.read_only:
                self._ws_api = await self.target.api_client(websocket=True)
                self._ws_core = CoreV1Api(self._ws_api)
            pods = self.pods_reflector = Reflector(
                self._pod_lister(),
                self._on_pod,
                name="pods",
                on_state=lambda text: self._on_state("pods", text),
                **self.reflector_options,
            )
            events = self.events_reflector = Reflector(
                self._event_lister(),
                self._on_event,
                name="events",
                on_state=lambda text: self._on_state("events", text),
                **self.reflector_options,
            )
            await self._first_list(pods)
            # every pod's workers now exist: take them out of the cyclic collector's walks
            host.settle_memory()
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
        finally:
            for client in (self._api, self._ws_api):
                if client is not None:
                    with contextlib.suppress(Exception):
                        await client.close()

    async def _first_list(self, pods: Reflector) -> None:
        try:
            await pods.first_list(FIRST_LIST_TRIES if self.fail_fast else 1)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            fatal = isinstance(e, ApiStatusError) and e.status in (401, 403, 404)
            if fatal or self.fail_fast:
                raise RuntimeFailure(self._first_list_failure(e)) from None
            # the UI: keep trying, the header says so
            self._on_state("pods", f"pods: {describe(e)}")
            return
        if self.on_note is not None:
            for note in self.connection_notes:
                self.on_note(note)

    def _first_list_failure(self, e: BaseException) -> str:
        t = self.target
        where = "in all namespaces" if t.all_namespaces else f'in namespace "{t.namespace}"'
        who = "in-cluster config" if t.in_cluster else f'context "{t.context}"'
        head = f"cannot list pods {where} at {t.server} ({who}): {describe(e)}"
        if isinstance(e, ApiStatusError) and e.status == 401:
            fix = "the credentials were refused; log in again or fix the kubeconfig's user"
        elif isinstance(e, ApiStatusError) and e.status == 403:
            fix = "the user needs get, list and watch on pods and events (the view ClusterRole)"
        elif isinstance(e, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
            fix = "TLS failed; check the cluster's certificate-authority in the kubeconfig"
        elif isinstance(e, ApiStatusError):
            fix = "the API server is there but failing; try again later"
        else:
            fix = "is the API server up, and the kubeconfig's server address right?"
        return f"{head} ({fix})"

    def _kubelet_view_stale(self, now: float) -> bool:
        """While a watch is down, and for a status sync after, what the kubelet reports may be
        old: its status manager could not write while the API server was away."""
        return bool(self.state) or now < self._fresh_from

    def _on_state(self, which: str, text: str) -> None:
        before = self.state
        self._states[which] = text
        after = self.state
        if before and not after:
            self._fresh_from = time.time() + STATUS_SYNC_PERIOD
        if after != before:
            log.info("connection: %s", after or "healthy")
            if self.on_state is not None:
                self.on_state(after)

    def _pod_lister(self) -> Any:
        assert self._core is not None
        params: dict[str, Any] = {}
        if self.target.selector:
            params["label_selector"] = self.target.selector
        if self.target.all_namespaces:
            return api_lister(
                self._core.list_pod_for_all_namespaces, watch_timeout=self.watch_timeout, **params
            )
        return api_lister(
            self._core.list_namespaced_pod,
            self.target.namespace,
            watch_timeout=self.watch_timeout,
            **params,
        )

    def _event_lister(self) -> Any:
        assert self._core is not None
        params = {"field_selector": "involvedObject.kind=Pod"}
        if self.target.all_namespaces:
            return api_lister(
                self._core.list_event_for_all_namespaces, watch_timeout=self.watch_timeout, **params
            )
        return api_lister(
            self._core.list_namespaced_event,
            self.target.namespace,
            watch_timeout=self.watch_timeout,
            **params,
        )

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
            for key in [k for k in self._disagree if k[0] == pod.uid]:
                del self._disagree[key]
            self._not_run_said = {k for k in self._not_run_said if k[0] != pod.uid}
            host.manager.remove_pod(pod)
            host.pod_deleted(pod.uid)
            return
        before = self.pods.get(pod.uid)
        seen = self.pods[pod.uid] = _Seen(pod, status)
        self._by_name[(pod.namespace, pod.name)] = pod.uid
        host.pod_snapshot(pod, status)
        for change in kubelet_changes(pod, before.status if before else None, status, now):
            host.kubelet_event(change)
        if kind == ADDED or before is None:
            host.manager.add_pod(pod, api_status=status)
        else:
            # new containers (an ephemeral spec change) get workers; existing ones are kept
            host.manager.add_pod(pod)
        self._say_not_run(host, pod, now)
        if status.phase in ("Succeeded", "Failed"):
            host.manager.remove_pod(pod)
            return
        # the kubelet's status sync: readiness triggers where not ready
        # (docs/kubelet-behaviour.md §10.3)
        host.manager.update_pod_status(pod, status)
        self._check_pod(host, seen, now, set())

    def _say_not_run(self, host: RuntimeHost, pod: Pod, now: float) -> None:
        """Once per probe: the shadow does not run it here, and why (headless has no UI)."""
        for container in pod.probed_containers():
            for probe_type in ProbeType:
                if container.probe(probe_type) is None:
                    continue
                key = (pod.uid, container.name, probe_type.key)
                if key in self._not_run_said:
                    continue
                reason = self.not_probed(pod, container, probe_type)
                if reason is None:
                    continue
                self._not_run_said.add(key)
                host.kubelet_event(
                    KubeletEvent(
                        NOT_RUN,
                        now,
                        pod,
                        container.name,
                        probe_type,
                        {"reason": reason, "via": self.via},
                        source="shadow",
                    )
                )

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
        seen = self.pods.get(uid) or self.pods.get(
            self._by_name.get((event.pod_namespace, event.pod_name), "")
        )
        if seen is None and self.target.selector:
            return  # about a pod the selector leaves out
        pod = seen.pod if seen is not None else _placeholder(event.pod_namespace, event.pod_name)
        host.kubelet_event(kubelet_event(event, pod, increment, time.time()))

    # -- divergence -------------------------------------------------------------------------

    async def _divergence_loop(self) -> None:
        while True:
            await asyncio.sleep(self.divergence_check)
            self._check_divergence(time.time())

    def _check_divergence(self, now: float) -> None:
        host = self._host
        if host is None:
            return
        live: set[tuple[str, str, str]] = set()
        for seen in list(self.pods.values()):
            self._check_pod(host, seen, now, live)
        for key in [k for k in self._disagree if k not in live]:
            del self._disagree[key]

    def _check_pod(
        self, host: RuntimeHost, seen: _Seen, now: float, live: set[tuple[str, str, str]]
    ) -> None:
        pod, status = seen.pod, seen.status
        manager = host.manager
        for cs in (*status.container_statuses, *status.init_container_statuses):
            container = pod.container(cs.name)
            if container is None or cs.running is None or not cs.container_id:
                continue
            for probe_type, shadow, kubelet in _verdicts(manager, pod, container, cs):
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
        key: tuple[str, str, str],
        shadow: bool | None,
        kubelet: bool | None,
        now: float,
    ) -> None:
        probe = container.probe(probe_type)
        current = self._disagree.get(key)
        if probe is None or shadow is None or kubelet is None or shadow == kubelet:
            if current is not None:
                if current.reported:
                    host.kubelet_event(
                        KubeletEvent(
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
        if not current.reported and (host.lateness() >= BEHIND or self._kubelet_view_stale(now)):
            # a shadow behind its ticks proves nothing about a container (on every path here,
            # the pod-update one too), nor does a kubelet status that could not reach us:
            # count from when both have caught up
            current.since = now
            return
        if (
            current.reported
            or now - current.since <= float(probe.period_seconds) + DIVERGENCE_SLACK
        ):
            return
        current.reported = True
        word = {ProbeType.READINESS: "ready", ProbeType.STARTUP: "started"}.get(probe_type, "alive")
        shadow_says = word if shadow else f"not {word}"
        kubelet_says = word if kubelet else f"not {word}"
        host.kubelet_event(
            KubeletEvent(
                "Divergence",
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

    # -- reaching pods ----------------------------------------------------------------------

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        probe = container.probe(probe_type)
        handler = probe.handler if probe is not None else None
        if isinstance(handler, ExecAction):
            if self.read_only:
                return "not run: read-only (exec runs a command in the container)"
            return None
        if self.read_only and self.via != "direct":
            return (
                f"not run: read-only allows no {self.via} (use --via direct where pod IPs are "
                "reachable)"
            )
        if self.read_only and not (self.target.in_cluster or self.via_explicit):
            return (
                "not run: read-only and pod IPs are likely unreachable from here (--via direct "
                "if they are)"
            )
        if self.via == "proxy":
            if not isinstance(handler, HTTPGetAction):
                return "not run: --via proxy carries HTTP probes only"
            if handler.scheme.upper() == "HTTPS":
                return "not run: --via proxy carries plain HTTP only (use --via port-forward)"
        if (
            self.via != "direct"
            and isinstance(handler, HTTPGetAction | TCPSocketAction)
            and handler.host
        ):
            return (
                f"not run: the probe dials host {handler.host}, which --via {self.via} "
                "cannot reach (--via direct dials it)"
            )
        return None

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        """The path one probe's attempts take: `self.via`, except exec, always `pods/exec`.

        For the engine to label attempts with (it labels every attempt with `self.via` today).
        """
        probe = container.probe(probe_type)
        if probe is not None and isinstance(probe.handler, ExecAction):
            return "pods/exec"
        return self.via

    def _forbidden_for(self, what: str, namespace: str) -> str | None:
        entry = self._forbidden.get((what, namespace))
        if entry is None:
            return None
        until, message = entry
        if time.monotonic() >= until:
            del self._forbidden[(what, namespace)]
            return None
        return message

    async def rbac_needs(self, what: str) -> str:
        """What RBAC must grant on `what` ("pods/exec") on this server, for a 403's message."""
        from probetui.runtime.kubernetes.streams import rbac_needs

        if self.server_version is None and self._api is not None:
            lookup = self._version_lookup
            if lookup is None or lookup.done():
                # refusals come together (port-forward and exec): one GET answers them all
                lookup = self._version_lookup = asyncio.ensure_future(
                    fetch_server_version(self._api)
                )
            self.server_version = await asyncio.shield(lookup)
        return rbac_needs(what, self.server_version)

    def _remember_forbidden(self, what: str, namespace: str, message: str) -> None:
        self._forbidden[(what, namespace)] = (time.monotonic() + FORBIDDEN_TTL, message)

    def _probe_timeout(self, container: Container) -> float:
        return max(
            (float(p.timeout_seconds) for t in ProbeType if (p := container.probe(t)) is not None),
            default=1.0,
        )

    async def reach(self, pod: Pod, container: Container, host: str, port: int) -> tuple[str, int]:
        if self.via == "direct":
            return host, port
        from probetui.runtime.kubernetes.streams import ReachError, StreamError

        if self.via == "proxy":
            from probetui.runtime.kubernetes.proxy import OneShotProxy

            assert self._core is not None
            known = self._forbidden_for("pods/proxy", pod.namespace)
            if known is not None:
                raise ReachError(f"forbidden: {known}")
            relay = OneShotProxy(
                self._core,
                pod.namespace,
                pod.name,
                port,
                self._probe_timeout(container),
                on_forbidden=lambda msg: self._remember_forbidden("pods/proxy", pod.namespace, msg),
            )
            address = await relay.start()
            self._remember_relay(address, relay)
            return address
        from probetui.runtime.kubernetes.streams import OneShotForward

        core = self._ws_core
        if core is None:
            raise ReachError("port-forward is not available (read-only)")
        known = self._forbidden_for("pods/portforward", pod.namespace)
        if known is not None:
            raise ReachError(known)

        async def opener() -> Any:
            return await core.connect_get_namespaced_pod_portforward(
                pod.name, pod.namespace, ports=str(port), _preload_content=False
            )

        try:
            forward = OneShotForward(opener, self._probe_timeout(container), needs=self.rbac_needs)
            address = await forward.start()
            self._remember_relay(address, forward)
            return address
        except StreamError as e:
            if e.status == 403:
                self._remember_forbidden("pods/portforward", pod.namespace, str(e))
            raise ReachError(str(e)) from None

    def _remember_relay(self, address: tuple[str, int], relay: Any) -> None:
        if len(self._relays) >= MAX_RELAYS:
            # attempts that ended without being judged (cancelled): their relays are done
            self._relays = {k: r for k, r in self._relays.items() if not r.done.is_set()}
        self._relays[join_host_port(*address)] = relay

    @property
    def close_linger(self) -> float:
        """containerd's port-forward holds a connection the pod closed for up to a second
        (`portForward` in its CRI server waits that long for the other direction)."""
        return PORT_FORWARD_LINGER if self.via == "port-forward" else 0.0

    def reach_lingered(self, dialled: str) -> float:
        relay = self._relays.get(dialled)
        return float(getattr(relay, "lingered", 0.0))

    def reach_refused(self, dialled: str) -> str | None:
        """The API server's own answers are none of the container's: its 403 for pods/proxy
        makes the attempt that met it the same "forbidden" error as the attempts after it, and
        its 401 or 503 (`proxy.api_path_error`) an error of the path."""
        relay = self._relays.pop(dialled, None)
        if relay is None:
            return None
        if getattr(relay, "forbidden", None) is not None:
            return f"forbidden: {relay.forbidden}"
        return getattr(relay, "path_error", None)

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner | None:
        core = self._ws_core

        async def run(argv: Sequence[str], timeout: float) -> ExecOutput:
            from probetui.probe.exec import ExecOutput
            from probetui.runtime.kubernetes.streams import exec_in_pod

            if core is None:
                return ExecOutput(b"", None, error="exec is not available (read-only)")
            known = self._forbidden_for("pods/exec", pod.namespace)
            if known is not None:
                return ExecOutput(b"", None, error=known)

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

            out = await exec_in_pod(opener, timeout, needs=self.rbac_needs)
            if out.error is not None and out.error.startswith("forbidden:"):
                self._remember_forbidden("pods/exec", pod.namespace, out.error)
            return out

        return run


async def fetch_server_version(api: ApiClient) -> tuple[int, int] | None:
    """(major, minor) from `/version`; None when it cannot be had. "1" and "32+" (as GKE and EKS
    write the minor) or, failing those, gitVersion "v1.32.3-eks-..."."""
    from kubernetes_asyncio.client import VersionApi

    try:
        # raw: the generated model refuses an answer that leaves out any of its fields
        resp = await asyncio.wait_for(
            VersionApi(api).get_code(_preload_content=False), VERSION_TIMEOUT
        )
        try:
            info = json.loads(await resp.read()) if resp.status == 200 else {}
        finally:
            resp.release()
    except asyncio.CancelledError:
        raise
    except Exception as e:
        log.info("cannot read the API server's version: %s", e)
        return None
    if not isinstance(info, dict):
        return None
    major = "".join(ch for ch in str(info.get("major") or "") if ch.isdigit())
    minor = "".join(ch for ch in str(info.get("minor") or "") if ch.isdigit())
    if major and minor:
        return int(major), int(minor)
    git = str(info.get("gitVersion") or "").lstrip("v").split("-")[0].split(".")
    if len(git) >= 2 and git[0].isdigit() and git[1].isdigit():
        return int(git[0]), int(git[1])
    return None


def _verdicts(
    manager: Any, pod: Pod, container: Container, cs: ContainerStatus
) -> list[tuple[ProbeType, bool | None, bool | None]]:
    """(probe type, shadow says yes, kubelet says yes) for the verdicts the API shows.

    The shadow has a verdict only once its worker has counted an attempt against this very
    container instance; before that its cache holds the initial value, not an opinion.
    """
    out: list[tuple[ProbeType, bool | None, bool | None]] = []
    for probe_type, results, kubelet in (
        (ProbeType.READINESS, manager.readiness, cs.ready),
        (ProbeType.STARTUP, manager.startup, cs.started),
    ):
        if container.probe(probe_type) is None:
            continue
        worker = manager.get_worker(pod.uid, container.name, probe_type)
        probed = (
            worker is not None
            and worker.container_id == cs.container_id
            and sum(worker.probe_total.values()) > 0
        )
        value = results.get(cs.container_id) if probed else None
        out.append((probe_type, None if value is None else value is ResultValue.SUCCESS, kubelet))
    return out


def _placeholder(namespace: str, name: str) -> Pod:
    """An event about a pod not (or no longer) watched: shown under its name alone."""
    return Pod(name=name, namespace=namespace, uid=f"{namespace}/{name}", containers=())


__all__ = ["NOT_RUN", "VIAS", "KubernetesRuntime"]
