"""The cluster source: watch pods and events, shadow the kubelets, show both.

Pods and core/v1 events are listed and watched (`reflector.py`). Each observed pod is handed to
the engine as the kubelet reports it: the shadow workers read container IDs, `startedAt` and
`started` from the observed status, so they follow the same container instances as the real
workers. The kubelet's own verdicts (ready, started, restarts, exits) and its events
(Unhealthy, ProbeWarning, Killing, BackOff, ...) go to the timeline with `source: kubelet`.

The runtime wires the reflectors, the observed state and two parts it holds and delegates to:

- `divergence.py` (`Divergence`): where the shadow's published result and the kubelet's verdict
  differ for longer than one period and 1.5 s, a `Divergence` event names both and the likely
  reasons; `DivergenceCleared` when they agree again. Not while a watch is down, nor for the
  status manager's sync period after it is back; confirmed first by a fresh read of the pod,
  which the runtime makes (`_confirm`) and feeds through the pod reflector (`offer`).
- `reach.py` (`Reacher`): reaching pods (`--via` direct, port-forward, proxy; exec through
  `pods/exec`), what a path refused, the forbidden memory and what RBAC must grant. In
  `--read-only` mode only `direct` probes run, and only where the pod network is reachable;
  exec never runs; each probe not run is reported once, with the reason, as `ProbeNotRun`.

Start-up: the first list of pods must succeed. Bad credentials (401) or missing permissions
(403) stop the run with one line saying what to fix. An unreachable or failing API server does
too when `fail_fast` is set (headless: a script learns at once that it sees nothing); otherwise
(the UI) the reflector keeps retrying with back-off and `state` says "reconnecting".
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import aiohttp

from probetui.prober.status import PodSnapshot
from probetui.runtime.base import Runtime, RuntimeEvent, RuntimeFailure, RuntimeHost
from probetui.runtime.kubernetes.config import ClusterTarget
from probetui.runtime.kubernetes.divergence import Divergence
from probetui.runtime.kubernetes.events import EventCounter, kubelet_event, parse_event
from probetui.runtime.kubernetes.nodes import NodeVersions
from probetui.runtime.kubernetes.observed import PodSpecCache, kubelet_changes, observe_pod
from probetui.runtime.kubernetes.owners import ReplicaSetOwners, replicaset_of
from probetui.runtime.kubernetes.reach import VIAS, Reacher, fetch_server_version
from probetui.runtime.kubernetes.reflector import (
    ADDED,
    DELETED,
    ApiStatusError,
    Reflector,
    api_lister,
    describe,
)
from probetui.spec.model import Container, Pod, ProbeType

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient, CoreV1Api

    from probetui.probe.exec import ExecRunner

log = logging.getLogger(__name__)

# the server ends a watch after this long; the reflector resumes from the last version
WATCH_TIMEOUT_SECONDS = 300
# how often divergence is re-checked between observed changes
DIVERGENCE_CHECK = 1.0
FIRST_LIST_TRIES = 3
# a read that confirms a divergence: a healthy API server answers a get in milliseconds
CONFIRM_TIMEOUT = 5.0

NOT_RUN = "ProbeNotRun"


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
        self.all_namespaces = target.all_namespaces
        # how shadow probes reach pods (raises on an unknown --via)
        self.reacher = Reacher(target, via)
        self.nodes = NodeVersions()
        # a ReplicaSet's pods' workload, confirmed from the ReplicaSet (owners.py)
        self.owners = ReplicaSetOwners(None if target.all_namespaces else target.namespace)
        self.owners.on_change = self._owners_changed
        # pod uid -> (namespace, its ReplicaSet), and the spec as observed -> as shown
        self._rs_of: dict[str, tuple[str, str]] = {}
        self._shown: dict[str, tuple[Pod, Pod]] = {}
        self.via_explicit = self.reacher.via_explicit
        self.via = self.reacher.via
        self.divergence = Divergence(self.via, self.reacher.not_probed, self._confirm)
        self.watch_timeout = watch_timeout
        self.fail_fast = fail_fast
        self.divergence_check = divergence_check
        self.reflector_options = dict(reflector_options or {})
        self.pods: dict[str, PodSnapshot] = {}
        self._by_name: dict[tuple[str, str], str] = {}
        self._specs = PodSpecCache()
        self._counter = EventCounter()
        self._host: RuntimeHost | None = None
        self._api: ApiClient | None = None
        self._ws_api: ApiClient | None = None
        self._core: CoreV1Api | None = None
        self._ws_core: CoreV1Api | None = None
        self._not_run_said: set[tuple[str, str, str]] = set()
        self._states: dict[str, str] = {}
        # told each time the connection state changes ("" when healthy); the CLI prints it
        self.on_state: Callable[[str], None] | None = None
        self.on_note: Callable[[str], None] | None = None
        self.pods_reflector: Reflector | None = None
        self.events_reflector: Reflector | None = None
        # the fresh reads that confirm a divergence before it is reported (divergence.py)
        self._confirming: set[str] = set()
        self._confirm_tasks: set[asyncio.Task[None]] = set()
        # probes the engine cannot run where it runs (in shards: exec), and why; None: all
        self.unrunnable: Callable[[Pod, Container, ProbeType], str | None] | None = None

    @property
    def server_version(self) -> tuple[int, int] | None:
        """The API server's (major, minor), once a refusal made it worth asking /version."""
        return self.reacher.server_version

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
            why = f" ({self.read_only_reason})" if self.read_only_reason else ""
            out.append(
                f"read-only{why}: only get, list and watch reach the API server; exec probes are not "
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
        from kubernetes_asyncio.client import AppsV1Api, CoreV1Api

        self._host = host
        self._api = await self.target.api_client()
        try:
            self._core = CoreV1Api(self._api)
            if not self.read_only:
                self._ws_api = await self.target.api_client(websocket=True)
                self._ws_core = CoreV1Api(self._ws_api)
            self.reacher.connect(self._api, self._core, self._ws_core)
            self.nodes.connect(self._core)
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
            await self._read_nodes()
            # after the first list, so that its pods make one read, not one each
            self.owners.connect(AppsV1Api(self._api))
            if self._rs_of:
                await self.owners.read()  # tells _owners_changed what it changed
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
                for task in [*tasks, *self._confirm_tasks]:
                    task.cancel()
                await asyncio.gather(*tasks, *self._confirm_tasks, return_exceptions=True)
        finally:
            self.nodes.close()
            self.owners.close()
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

    async def _read_nodes(self) -> None:
        """The nodes' kubelet versions, for the probes' User-Agent (`nodes.py`).

        Not in read-only mode: most users there cannot read nodes (the view ClusterRole has
        none), and a locked shell must leave no refused request in the audit log. Its probes,
        with `--via direct` the only ones it sends, carry the configured version."""
        if self.read_only:
            self.nodes.unreadable = "not read in read-only mode"
            return
        await self.nodes.read()
        if self.nodes.unreadable is not None and self.on_note is not None:
            self.on_note(
                f"kubelet version: {self.nodes.unreadable}; probes send the configured "
                "kube-probe/X.Y (--kubelet-version, or kubeletVersion in the config file)"
            )

    def kube_version_of(self, pod: Pod) -> str | None:
        return self.nodes.of(pod.uid)

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

    def _on_state(self, which: str, text: str) -> None:
        before = self.state
        self._states[which] = text
        after = self.state
        self.divergence.connection(not after, time.time())
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
            self._rs_of.pop(pod.uid, None)
            self._shown.pop(pod.uid, None)
            self.nodes.forget(pod.uid)
            self.pods.pop(pod.uid, None)
            self._by_name.pop((pod.namespace, pod.name), None)
            self._specs.forget(pod.uid)
            self.divergence.forget_pod(pod.uid)
            self._not_run_said = {k for k in self._not_run_said if k[0] != pod.uid}
            host.manager.remove_pod(pod)
            host.pod_deleted(pod.uid)
            return
        rs = replicaset_of(obj.get("metadata") or {})
        if rs is not None:
            self._rs_of[pod.uid] = (pod.namespace, rs)
            pod = self._confirmed_owner(pod)
        self.nodes.placed(pod.uid, observed.node_name)
        before = self.pods.get(pod.uid)
        self.pods[pod.uid] = PodSnapshot(pod, status)
        self._by_name[(pod.namespace, pod.name)] = pod.uid
        host.pod_snapshot(pod, status)
        for change in kubelet_changes(pod, before.status if before else None, status, now):
            host.report(change)
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
        self.divergence.check_pod(host, pod, status, now, set())

    def _confirmed_owner(self, pod: Pod) -> Pod:
        """The pod under the workload its ReplicaSet names, where that was read; the same
        object for the same observed spec, so an unchanged pod stays unchanged downstream."""
        shown = self._shown.get(pod.uid)
        if shown is not None and shown[0] is pod:
            return shown[1]
        ns, rs = self._rs_of[pod.uid]
        owner = self.owners.of(ns, rs)
        out = pod
        if owner is not None and owner != (pod.owner_kind, pod.owner_name):
            out = dataclasses.replace(pod, owner_kind=owner[0], owner_name=owner[1])
        self._shown[pod.uid] = (pod, out)
        return out

    def _owners_changed(self) -> None:
        """A read of the ReplicaSets changed some pods' workload: show them under it."""
        host = self._host
        if host is None:
            return
        for uid in list(self._rs_of):
            seen, shown = self.pods.get(uid), self._shown.pop(uid, None)
            if seen is None or shown is None:
                continue
            pod = self._confirmed_owner(shown[0])
            if (pod.owner_kind, pod.owner_name) != (seen.pod.owner_kind, seen.pod.owner_name):
                self.pods[uid] = PodSnapshot(pod, seen.status)
                host.pod_snapshot(pod, seen.status)

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
                host.report(
                    RuntimeEvent(
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
        host.report(kubelet_event(event, pod, increment, time.time()))

    # -- divergence (divergence.py) ---------------------------------------------------------

    def _confirm(self, pod: Pod) -> None:
        """One fresh read at a time per pod; the divergence check asks again until it lands."""
        if pod.uid in self._confirming or self._core is None:
            return
        self._confirming.add(pod.uid)
        task = asyncio.create_task(self._read_pod(pod), name=f"confirm {pod.name}")
        self._confirm_tasks.add(task)
        task.add_done_callback(self._confirm_tasks.discard)

    async def _read_pod(self, pod: Pod) -> None:
        assert self._core is not None
        try:
            resp = await self._core.read_namespaced_pod(
                pod.name, pod.namespace, _preload_content=False, _request_timeout=CONFIRM_TIMEOUT
            )
            try:
                if resp.status == 404:
                    return  # gone: the watch's DELETED ends the disagreement
                if resp.status != 200:
                    raise ApiStatusError(resp.status, f"read pod: HTTP {resp.status}")
                obj = json.loads(await resp.read())
            finally:
                resp.release()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.info("divergence: fresh read of %s/%s failed: %s", pod.namespace, pod.name, e)
            self.divergence.unconfirmed(time.time())
            return
        finally:
            self._confirming.discard(pod.uid)
        if (obj.get("metadata") or {}).get("uid") != pod.uid:
            return  # a new pod of the same name: the watch brings it
        if self.pods_reflector is not None:
            self.pods_reflector.offer(obj)
        self.divergence.confirmed(pod.uid, time.time())
        self._check_divergence(time.time())

    async def _divergence_loop(self) -> None:
        while True:
            await asyncio.sleep(self.divergence_check)
            self._check_divergence(time.time())

    def _check_divergence(self, now: float) -> None:
        host = self._host
        if host is None:
            return
        self.divergence.check(host, [(seen.pod, seen.status) for seen in self.pods.values()], now)

    # -- reaching pods (reach.py) -----------------------------------------------------------

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        reason = self.reacher.not_probed(pod, container, probe_type)
        if reason is None and self.unrunnable is not None:
            return self.unrunnable(pod, container, probe_type)
        return reason

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        """The path one probe's attempts take: `self.via`, except exec, always `pods/exec`."""
        return self.reacher.attempt_via(container, probe_type)

    async def rbac_needs(self, what: str) -> str:
        """What RBAC must grant on `what` ("pods/exec") on this server, for a 403's message."""
        return await self.reacher.rbac_needs(what)

    def reach(  # type: ignore[override]
        self, pod: Pod, container: Container, host: str, port: int
    ) -> Coroutine[Any, Any, tuple[str, int]]:
        # the reacher's coroutine itself: no second frame on every attempt's way
        return self.reacher.reach(pod, container, host, port)

    @property  # type: ignore[override]
    def close_linger(self) -> float:
        """containerd's port-forward holds a connection the pod closed for up to a second."""
        return self.reacher.close_linger

    def reach_lingered(self, dialled: str) -> float:
        return self.reacher.reach_lingered(dialled)

    def reach_refused(self, dialled: str) -> str | None:
        """The API server's own answers (403, 401, 503 of the path) are none of the container's."""
        return self.reacher.reach_refused(dialled)

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner | None:
        return self.reacher.exec_runner(pod, container)


def _placeholder(namespace: str, name: str) -> Pod:
    """An event about a pod not (or no longer) watched: shown under its name alone."""
    return Pod(name=name, namespace=namespace, uid=f"{namespace}/{name}", containers=())


__all__ = ["NOT_RUN", "VIAS", "KubernetesRuntime", "fetch_server_version"]
