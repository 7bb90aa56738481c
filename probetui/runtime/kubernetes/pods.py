"""Read the cluster's pods for the runtime: from the watches, and afresh to confirm.

`ClusterPods` holds the pods the pod watch brought (`pods`, by UID) and tells the engine's host
what each change means: every observed pod goes to the engine as the kubelet reports it (the
shadow workers read container IDs, `startedAt` and `started` from the observed status, so they
follow the same container instances as the real workers); the kubelet's verdicts it shows
(ready, started, restarts, exits) and the core/v1 events of the event watch (Unhealthy,
ProbeWarning, Killing, BackOff, ...) go to the timeline with `source: kubelet`. A pod a
ReplicaSet owns is shown under the workload that ReplicaSet names (`owners.py`), once read. Each
probe the shadow does not run is said once, with the reason, as `ProbeNotRun`.

A pod on a node whose agent probes it (`agent_streams.AgentReader`) goes to the engine's sinks
and to nobody's workers here: the agent's stream brings its attempts. With `--via agent`, a pod
no agent covers gets no workers either; its probes are said not run, with the reason.

It also makes the fresh read that confirms a divergence before it is reported
(`divergence.py`): one get of the pod at a time, its answer fed through the pod reflector
(`offer`), so the watch and the read never disagree about which version is newest.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from probetui.kubelet.profile import profile_of_node
from probetui.prober.results import ResultsManager
from probetui.prober.status import PodSnapshot
from probetui.runtime.base import RuntimeEvent, RuntimeHost
from probetui.runtime.kubernetes.divergence import Divergence
from probetui.runtime.kubernetes.events import EventCounter, kubelet_event, parse_event
from probetui.runtime.kubernetes.nodes import NodeVersions
from probetui.runtime.kubernetes.observed import PodSpecCache, kubelet_changes, observe_pod
from probetui.runtime.kubernetes.owners import ReplicaSetOwners, replicaset_of
from probetui.runtime.kubernetes.reflector import ADDED, DELETED, ApiStatusError, Reflector
from probetui.spec.model import Container, Pod, ProbeType
from probetui.timeline.events import EventType

if TYPE_CHECKING:
    from kubernetes_asyncio.client import CoreV1Api

    from probetui.runtime.kubernetes.agent_streams import AgentReader

log = logging.getLogger(__name__)
# pods a step of the divergence walk checks: a short hold of the loop at a time
DIVERGENCE_SLICE = 100

# a read that confirms a divergence: a healthy API server answers a get in milliseconds
CONFIRM_TIMEOUT = 5.0

NOT_RUN = EventType.PROBE_NOT_RUN


class ClusterPods:
    """Holds the watched pods, and what their changes and the kubelet's events tell the host.

    `not_probed` says which probes the shadow does not run here (asked anew each time: what the
    engine can run is learnt after start-up); `via` is the shadow's path, for `ProbeNotRun`.
    `host` is set once the runtime runs, `connect` once its API client exists.
    """

    def __init__(
        self,
        *,
        selector: str | None,
        via: str,
        nodes: NodeVersions,
        owners: ReplicaSetOwners,
        divergence: Divergence,
        not_probed: Callable[[Pod, Container, ProbeType], str | None],
        agents: AgentReader | None = None,
    ) -> None:
        self.selector = selector
        self.agents = agents
        # pods handed to the engine's manager: their workers run here
        self._managed: set[str] = set()
        self.via = via
        self.nodes = nodes
        self.owners = owners
        self.divergence = divergence
        self.not_probed = not_probed
        self.host: RuntimeHost | None = None
        self.pods: dict[str, PodSnapshot] = {}
        self._by_name: dict[tuple[str, str], str] = {}
        self._specs = PodSpecCache()
        self._counter = EventCounter()
        # pod uid -> (namespace, its ReplicaSet), and the spec as observed -> as shown
        self._rs_of: dict[str, tuple[str, str]] = {}
        self._shown: dict[str, tuple[Pod, Pod]] = {}
        self._not_run_said: set[tuple[str, str, str]] = set()
        self._core: CoreV1Api | None = None
        self._reflector: Reflector | None = None
        # the fresh reads that confirm a divergence before it is reported (divergence.py)
        self._confirming: set[str] = set()
        self._confirm_tasks: set[asyncio.Task[None]] = set()
        if nodes is not None:
            nodes.on_read = self._nodes_read

    def _nodes_read(self) -> None:
        """Each pod's workers play the release of its node's kubelet, once that is known."""
        host = self.host
        if host is None:
            return
        for uid in self.pods:
            version = self.nodes.known(uid)
            if version is not None:
                host.manager.set_profile(uid, profile_of_node(version, host.manager.profile))

    def connect(self, core: CoreV1Api, reflector: Reflector) -> None:
        """The client fresh reads go through, and the pod reflector their answers go into."""
        self._core = core
        self._reflector = reflector

    @property
    def owned_by_replicasets(self) -> bool:
        """Some watched pod belongs to a ReplicaSet, whose own owner is worth reading."""
        return bool(self._rs_of)

    # -- the pod watch ----------------------------------------------------------------------

    def on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        host = self.host
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
            if self.agents is not None:
                self.agents.gone(pod.uid)
            if pod.uid in self._managed:
                self._managed.discard(pod.uid)
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
        agents = self.agents
        if agents is not None and agents.covers(observed.node_name):
            # the node's agent probes it: its attempts come with the agent's stream
            agents.placed(pod.uid, observed.node_name)
            if pod.uid in self._managed:
                self._managed.discard(pod.uid)
                host.manager.remove_pod(pod)
                # what this view said it could not run is the agent's to say now
                self._not_run_said = {k for k in self._not_run_said if k[0] != pod.uid}
            # the agent runs no exec probe: said once here, as for the view's own workers
            self._say_not_run(host, pod, now)
            return
        if agents is not None and agents.mode == "agent":
            self._say_not_run(host, pod, now)  # no workers: the agents alone probe
            return
        self._managed.add(pod.uid)
        if kind == ADDED or before is None:
            # the release of the kubelet that runs it: its node's, where nodes can be read
            profile = profile_of_node(self.nodes.known(pod.uid), host.manager.profile)
            host.manager.add_pod(pod, api_status=status, profile=profile)
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

    def agent_came(self, node: str) -> None:
        """An agent now serves `node`: its pods are its, and the workers here stop."""
        host, agents = self.host, self.agents
        if host is None or agents is None:
            return
        for uid, seen in list(self.pods.items()):
            if self.nodes.node_of.get(uid) != node:
                continue
            agents.placed(uid, node)
            if uid in self._managed:
                self._managed.discard(uid)
                host.manager.remove_pod(seen.pod)

    def _confirmed_owner(self, pod: Pod) -> Pod:
        """Return the pod under the workload its ReplicaSet names, where that was read; the same
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

    def owners_changed(self) -> None:
        """A read of the ReplicaSets changed some pods' workload: show them under it."""
        host = self.host
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

    # -- the event watch --------------------------------------------------------------------

    def on_event(self, kind: str, obj: dict[str, Any]) -> None:
        host = self.host
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
        if seen is None and self.selector:
            return  # about a pod the selector leaves out
        pod = seen.pod if seen is not None else _placeholder(event.pod_namespace, event.pod_name)
        host.report(kubelet_event(event, pod, increment, time.time()))

    # -- divergence (divergence.py) ---------------------------------------------------------

    def confirm(self, pod: Pod) -> None:
        """One fresh read at a time per pod; the divergence check asks again until it lands."""
        if pod.uid in self._confirming or self._core is None:
            return
        self._confirming.add(pod.uid)
        task = asyncio.create_task(self._read_pod(pod), name=f"confirm {pod.name}")
        self._confirm_tasks.add(task)
        task.add_done_callback(self._confirm_tasks.discard)

    def cancel_reads(self) -> list[asyncio.Task[None]]:
        """Cancel the fresh reads still out; the tasks, for the caller to await."""
        tasks = list(self._confirm_tasks)
        for task in tasks:
            task.cancel()
        return tasks

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
        if self._reflector is not None:
            self._reflector.offer(obj)
        self.divergence.confirmed(pod.uid, time.time())
        await self.check_divergence()

    async def check_divergence(self) -> None:
        """Check the pods whose shadow verdicts may have moved since the last walk (every pod
        where the prober's caches cannot say), DIVERGENCE_SLICE at a time with the loop served
        between them, so that the walk never lands whole in a key's frame (guarded by
        benchmarks.fleet, the loop's slow steps). Each step reads the pods as they are then; a
        pod that came meanwhile keeps what it has, and is checked as it came and at the next
        walk."""
        host = self.host
        if host is None:
            return
        moved = _verdicts_moved(getattr(host, "manager", None))
        uids = list(self.pods)
        skipped: set[str] = set()
        if moved is not None:
            # a verdict moves with a cache's `set` or a pod update (checked as it comes); an
            # open disagreement moves with time
            moved |= self.divergence.open_pods()
            skipped = set(uids).difference(moved)
            uids = [uid for uid in uids if uid in moved]
        live: set[tuple[str, str, str]] = set()
        for i in range(0, len(uids), DIVERGENCE_SLICE):
            if i:
                await asyncio.sleep(0)
            now = time.time()
            for uid in uids[i : i + DIVERGENCE_SLICE]:
                seen = self.pods.get(uid)
                if seen is not None:
                    self.divergence.check_pod(host, seen.pod, seen.status, now, live)
        came = set(self.pods).difference(uids, skipped)
        self.divergence.forget(lambda key: key in live or key[0] in came or key[0] in skipped)


def _verdicts_moved(manager: Any) -> set[str] | None:
    """Return the pods whose readiness or startup cache was set since the last call, or None
    where every pod must be checked: the first call, or caches that do not keep the list (a
    shard's, behind a proxy)."""
    caches = (getattr(manager, "readiness", None), getattr(manager, "startup", None))
    if not all(isinstance(cache, ResultsManager) for cache in caches):
        return None
    moved: set[str] | None = set()
    for cache in caches:
        touched = cache.touched_pods()
        if touched is None or moved is None:
            moved = None
        else:
            moved |= touched
    return moved


def _placeholder(namespace: str, name: str) -> Pod:
    """Return an event about a pod not (or no longer) watched: shown under its name alone."""
    return Pod(name=name, namespace=namespace, uid=f"{namespace}/{name}", containers=())


__all__ = ["CONFIRM_TIMEOUT", "NOT_RUN", "ClusterPods"]
