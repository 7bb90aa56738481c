"""Source a cluster: watch pods and events, shadow the kubelets, show both.

Pods and core/v1 events are listed and watched (`reflector.py`). The runtime connects the API
clients, wires the reflectors, says how the connection is, and delegates to three parts it holds:

- `pods.py` (`ClusterPods`): what the watches bring, to the engine. Each observed pod is handed
  over as the kubelet reports it, so the shadow workers follow the same container instances as
  the real workers; the kubelet's own verdicts (ready, started, restarts, exits) and its events
  (Unhealthy, ProbeWarning, Killing, BackOff, ...) go to the timeline with `source: kubelet`.
  It also makes the fresh read of a pod that confirms a divergence.
- `divergence.py` (`Divergence`): where the shadow's published result and the kubelet's verdict
  differ for longer than one period and 1.5 s, a `Divergence` event names both and the likely
  reasons; `DivergenceCleared` when they agree again. Not while a watch is down, nor for the
  status manager's sync period after it is back; confirmed first by a fresh read of the pod
  (`ClusterPods.confirm`), fed through the pod reflector (`offer`).
- `reach.py` (`Reacher`): reaching pods (`--via` direct, port-forward, proxy; exec through
  `pods/exec`), what a path refused, the forbidden memory and what RBAC must grant. In
  `--read-only` mode only `direct` probes run, and only where the pod network is reachable;
  exec never runs; each probe not run is reported once, with the reason, as `ProbeNotRun`.
- `agent_streams.py` (`AgentReader`, with `--via agent` or `auto`, the default): the node
  agents (docs/agents.md) probe the pods of the nodes they cover, and their streams feed the
  engine's sinks as the shadow's (`host.shadow_event`); the view's own workers do not run
  there. `auto` probes the other nodes' pods itself by the path it would have taken without
  agents; `--via agent` leaves them not run, with the reason.

Start-up: the first list of pods must succeed. Bad credentials (401) or missing permissions
(403) stop the run with one line saying what to fix. An unreachable or failing API server does
too when `fail_fast` is set (headless: a script learns at once that it sees nothing); otherwise
(the UI) the reflector keeps retrying with back-off and `state` says "reconnecting".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Collection, Coroutine
from typing import TYPE_CHECKING, Any

import aiohttp

from probetui.kubelet.profile import profile_of_node
from probetui.prober.clock import Clock, sleep_on_grid
from probetui.prober.status import PodSnapshot
from probetui.runtime.base import NodeKubelet, Runtime, RuntimeFailure, RuntimeHost
from probetui.runtime.kubernetes.agent_streams import MODES as AGENT_MODES
from probetui.runtime.kubernetes.agent_streams import AgentReader
from probetui.runtime.kubernetes.agents import EXEC_NOT_RUN
from probetui.runtime.kubernetes.config import ClusterTarget
from probetui.runtime.kubernetes.divergence import Divergence
from probetui.runtime.kubernetes.node_stream import STREAMS_MAX
from probetui.runtime.kubernetes.nodes import NodeVersions, releases_played
from probetui.runtime.kubernetes.owners import ReplicaSetOwners
from probetui.runtime.kubernetes.pods import ClusterPods
from probetui.runtime.kubernetes.reach import VIAS, Reacher, fetch_server_version
from probetui.runtime.kubernetes.reflector import ApiStatusError, Reflector, api_lister, describe
from probetui.spec.model import Container, ExecAction, Pod, ProbeType

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient, CoreV1Api

    from probetui.keys import ProbeKey
    from probetui.probe.exec import ExecRunner

log = logging.getLogger(__name__)

# the server ends a watch after this long; the reflector resumes from the last version
WATCH_TIMEOUT_SECONDS = 300
# how often divergence is re-checked between observed changes
DIVERGENCE_CHECK = 1.0
FIRST_LIST_TRIES = 3
NOTICES = 50
READ_ONLY_PROBE_NOW = "read-only: probe now through an agent is a POST"
# every path `--via` takes: the reacher's, the agents', and auto (agents where found)
ALL_VIAS = (*VIAS, *AGENT_MODES)


class KubernetesRuntime(Runtime):
    observes_kubelet = True
    # the core/v1 events watch (the kubelet's Unhealthy, Killing, BackOff, ...): a node agent
    # runs without it, since events cannot be selected by node
    watch_events = True
    # the ReplicaSets' owners, read to show pods under their Deployment (owners.py)
    read_owners = True
    # what a 403 on the first list of pods asks for
    rbac_fix = "the user needs get, list and watch on pods and events (the view ClusterRole)"

    def __init__(
        self,
        target: ClusterTarget,
        *,
        via: str | None = None,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
        fail_fast: bool = False,
        divergence_check: float = DIVERGENCE_CHECK,
        reflector_options: dict[str, Any] | None = None,
        agent_namespace: str | None = None,
        agents: bool = True,
    ) -> None:
        self.target = target
        self.read_only = target.read_only
        self.all_namespaces = target.all_namespaces
        if via is not None and via not in ALL_VIAS:
            raise ValueError(f"--via must be one of {', '.join(ALL_VIAS)}")
        # the node agents, with --via agent or auto (None: auto, unless `agents` is off)
        mode = via if via in AGENT_MODES else ("auto" if via is None and agents else None)
        self.agents: AgentReader | None = None
        if mode is not None:
            from probetui.runtime.kubernetes.agents import AGENT_NAMESPACE

            self.agents = AgentReader(
                mode,
                agent_namespace or AGENT_NAMESPACE,
                target.agent_paths,
                say=self._say,
            )
        # how shadow probes reach the pods no agent covers (raises on an unknown --via)
        self.reacher = Reacher(target, None if mode is not None else via)
        self.nodes = NodeVersions()
        # a ReplicaSet's pods' workload, confirmed from the ReplicaSet (owners.py)
        self.owners = ReplicaSetOwners(None if target.all_namespaces else target.namespace)
        self.via_explicit = self.reacher.via_explicit or mode == "agent"
        self.via = "agent" if mode == "agent" else self.reacher.via
        self.divergence = Divergence(self.via, self.not_probed)
        # the watched pods and what their changes tell the engine (pods.py)
        self.cluster_pods = ClusterPods(
            selector=target.selector,
            via=self.via,
            nodes=self.nodes,
            owners=self.owners,
            divergence=self.divergence,
            not_probed=self.not_probed,
            agents=self.agents,
        )
        if self.agents is not None:
            self.agents.on_cover = self.cluster_pods.agent_came
        self.owners.on_change = self.cluster_pods.owners_changed
        self.divergence.confirm = self.cluster_pods.confirm
        self.watch_timeout = watch_timeout
        self.fail_fast = fail_fast
        self.divergence_check = divergence_check
        # the grid a node agent puts its workers' ticks on (`tick_grid`), which the divergence
        # check keeps to as well; 0: none
        self.tick_align = 0.0
        self.reflector_options = dict(reflector_options or {})
        self._api: ApiClient | None = None
        self._ws_api: ApiClient | None = None
        self._agents_api: ApiClient | None = None
        self._core: CoreV1Api | None = None
        self._ws_core: CoreV1Api | None = None
        self._states: dict[str, str] = {}
        # told each time the connection state changes ("" when healthy); the CLI prints it
        self.on_state: Callable[[str], None] | None = None
        self.on_note: Callable[[str], None] | None = None
        self.pods_reflector: Reflector | None = None
        self.agents_reflector: Reflector | None = None
        # lines for the UI to show once (the agents' faults); headless says them on stderr
        self.notices: deque[str] = deque(maxlen=NOTICES)

    @property
    def pods(self) -> dict[str, PodSnapshot]:
        """Return the watched pods by UID, as last observed (under their confirmed workload)."""
        return self.cluster_pods.pods

    @property
    def server_version(self) -> tuple[int, int] | None:
        """Return the API server's (major, minor), once a refusal made it worth asking /version."""
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
        agents = self.agents
        if agents is not None and agents.usable():
            rest = (
                f"the pods of other nodes by {self.reacher.via}"
                if agents.mode == "auto"
                else "no other pods (--via agent)"
            )
            out.append(
                f"node agents on {len(agents.directory.by_node)} node(s) probe their pods from "
                f"the node, as the kubelet does (via agent); this view probes {rest}"
            )
        elif agents is not None and agents.problem and agents.lasting and agents.mode == "auto":
            out.append(
                f"node agents not used: {agents.problem} (--via {self.reacher.via} to skip them)"
            )
        if agents is not None and agents.usable() and agents.mode == "agent":
            return out
        if self.read_only:
            why = f" ({self.read_only_reason})" if self.read_only_reason else ""
            out.append(
                f"read-only{why}: only get, list and watch reach the API server; exec probes are not "
                "run" + ("" if self.via == "direct" else ", nor probes that need --via " + self.via)
            )
        elif self.via != "direct" and not (agents is not None and agents.usable()):
            out.append(
                f"shadow probes go via {self.via}: the kubelet dials the pod IP from its node, "
                "so answers can differ (see each attempt's via)"
            )
        return out

    # -- running ----------------------------------------------------------------------------

    async def run(self, host: RuntimeHost) -> None:
        from kubernetes_asyncio.client import AppsV1Api, CoreV1Api

        self.cluster_pods.host = host
        self._api = await self.target.api_client()
        try:
            self._core = CoreV1Api(self._api)
            if not self.read_only:
                self._ws_api = await self.target.api_client(websocket=True)
                self._ws_core = CoreV1Api(self._ws_api)
            self.reacher.connect(self._api, self._core, self._ws_core)
            self.nodes.connect(self._core)
            await self._start_agents(host)
            pods = self.pods_reflector = Reflector(
                self._pod_lister(),
                self.cluster_pods.on_pod,
                name="pods",
                on_state=lambda text: self._on_state("pods", text),
                **self.reflector_options,
            )
            events = None
            if self.watch_events:
                events = Reflector(
                    self._event_lister(),
                    self.cluster_pods.on_event,
                    name="events",
                    on_state=lambda text: self._on_state("events", text),
                    **self.reflector_options,
                )
            self.cluster_pods.connect(self._core, pods)
            await self._first_list(pods)
            await self._read_nodes()
            if self.read_owners:
                # after the first list, so that its pods make one read, not one each
                self.owners.connect(AppsV1Api(self._api))
                if self.cluster_pods.owned_by_replicasets:
                    await self.owners.read()  # tells cluster_pods.owners_changed what changed
            # every pod's workers now exist: take them out of the cyclic collector's walks
            host.collect_and_freeze()
            tasks = [
                asyncio.create_task(pods.run(), name="watch pods"),
                asyncio.create_task(self._divergence_loop(host.clock), name="divergence"),
            ]
            if events is not None:
                tasks.append(asyncio.create_task(events.run(), name="watch events"))
            if self.agents is not None and self.agents.watching:
                assert self.agents_reflector is not None
                tasks.append(
                    asyncio.create_task(self.agents_reflector.run(), name="watch agent pods")
                )
                tasks.append(asyncio.create_task(self.agents.run(), name="agent streams"))
            try:
                await asyncio.gather(*tasks)
            finally:
                reads = self.cluster_pods.cancel_reads()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, *reads, return_exceptions=True)
        finally:
            self.nodes.close()
            self.owners.close()
            for client in (self._api, self._ws_api, self._agents_api):
                if client is not None:
                    with contextlib.suppress(Exception):
                        await client.close()

    async def _start_agents(self, host: RuntimeHost) -> None:
        """The agents' pods listed and checked, and the token read, before the view's pods
        are placed: a covered node's pods then never start the view's own workers."""
        agents = self.agents
        if agents is None:
            return
        assert self._core is not None and self._api is not None
        from probetui.runtime.kubernetes.agents import AGENT_SELECTOR, AgentProblem

        agents.publish_to = host.shadow_event
        reflector = self.agents_reflector = Reflector(
            api_lister(
                self._core.list_namespaced_pod,
                agents.directory.namespace,
                watch_timeout=self.watch_timeout,
                label_selector=AGENT_SELECTOR,
            ),
            agents.directory.on_pod,
            name="agent pods",
            on_state=lambda text: log.info("agent pods: %s", text or "watching"),
            **self.reflector_options,
        )
        # the agents' streams each hold a connection for good, one per node: in the view's own
        # pool they would take every connection past a hundred nodes and starve its watches
        self._agents_api = await self.target.api_client(connections=STREAMS_MAX)
        try:
            await agents.start(self._agents_api, self._core, lambda: reflector.first_list(1))
        except AgentProblem as e:
            raise RuntimeFailure(f"--via agent: {e}") from None

    def _say(self, text: str) -> None:
        """A line about the agents: headless on stderr (`on_note`), else the UI's notices."""
        if self.on_note is not None:
            self.on_note(text)
        else:
            self.notices.append(text)

    def take_notice(self) -> str | None:
        """Return the oldest line not yet shown (the UI polls it)."""
        return self.notices.popleft() if self.notices else None

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
            self.nodes.unreadable = "nodes not read in read-only mode"
        else:
            await self.nodes.read()
        if self.on_note is not None:
            self.on_note(self._kubelet_note())

    def _kubelet_note(self) -> str:
        """Tell which kubelet release the pods' probes are played as, said once: their nodes', or
        where nodes are not read, the configured one (docs/kubelet-versions.md)."""
        configured = f"kubelet {profile_of_node(self.configured_kubelet).version}"
        where = "(--kubelet-version, or kubeletVersion in the config file)"
        if self.nodes.unreadable is not None:
            return (
                f"kubelet version: {self.nodes.unreadable}; every pod's probes play the "
                f"configured {configured} and send its kube-probe/X.Y {where}"
            )
        return (
            f"kubelet version: each pod's probes play its node's release "
            f"({releases_played(self.nodes.versions)}), the configured {configured} where a "
            "node's is not known"
        )

    def node_kubelet(self, pod: Pod) -> NodeKubelet:
        node = self.nodes.node_of.get(pod.uid, "")
        version = self.nodes.known(pod.uid)
        if version:
            return NodeKubelet(node, version)
        agents = self.agents
        if agents is not None and agents.covers(node):
            # the node's agent plays its kubelet's release and says which: read-only mode,
            # where nodes are not read, knows it from there
            version = agents.kubelet_versions.get(node)
            if version:
                return NodeKubelet(node, version)
        if self.nodes.unreadable is not None:
            why = self.nodes.unreadable
        elif not node:
            why = "the pod is on no node yet"
        else:
            why = f"node {node} not read yet"
        return NodeKubelet(node, None, why)

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
            fix = self.rbac_fix
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
        if self.target.field_selector:
            params["field_selector"] = self.target.field_selector
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

    # -- divergence (divergence.py) ---------------------------------------------------------

    async def _divergence_loop(self, clock: Clock) -> None:
        # between observed changes, which check their own pod as they come
        while True:
            await sleep_on_grid(clock, self.divergence_check, self.tick_align)
            await self.cluster_pods.check_divergence()

    # -- reaching pods (reach.py) -----------------------------------------------------------

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        agents = self.agents
        if agents is not None:
            if pod.uid in agents.node_of:
                # the agent runs it, or says why not (exec: it has no way into the container)
                probe = container.probe(probe_type)
                if probe is not None and isinstance(probe.handler, ExecAction):
                    return EXEC_NOT_RUN
                return None
            if agents.mode == "agent":
                return f"not run: --via agent: {agents.why_not(self.nodes.node_of.get(pod.uid))}"
        return self.reacher.not_probed(pod, container, probe_type)

    def focus(self, pod_uids: Collection[str] | None) -> None:
        """The screen's pods: the agents' streams take their attempts and summaries of the rest."""
        if self.agents is not None:
            self.agents.set_focus(pod_uids)

    def probe_now_refused(self, key: ProbeKey) -> str | None:
        agents = self.agents
        if self.read_only and agents is not None and key.pod_uid in agents.node_of:
            return READ_ONLY_PROBE_NOW
        return None

    def probe_elsewhere(self, key: ProbeKey) -> bool | None:
        """A probe an agent runs is probed now by that agent (a POST of pods/proxy); read-only
        sends no POST."""
        agents = self.agents
        if agents is None or key.pod_uid not in agents.node_of:
            return None
        if self.read_only:
            return False
        return agents.probe_now(key.pod_uid, key.container, key.probe_type.key)

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        """Return the path one probe's attempts take: `self.via`, except exec, always
        `pods/exec`."""
        return self.reacher.attempt_via(container, probe_type)

    async def rbac_needs(self, what: str) -> str:
        """Tell what RBAC must grant on `what` ("pods/exec") on this server, for a 403's message."""
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


__all__ = ["ALL_VIAS", "VIAS", "KubernetesRuntime", "fetch_server_version"]
