"""Probe once from every vantage point: the node agent, this machine, port-forward, pods/proxy.

`probetui check --pod NS/NAME --compare-vias` runs one attempt of a probe of a running pod through
each path the cluster view can take, and puts them side by side, to show when this machine's view
of a pod differs from the kubelet's:

- `agent`: the node agent on the pod's node dials the pod IP from the node, as the kubelet does.
  Asked to probe now (a POST of pods/proxy, as the UI's `t`); in read-only mode, which sends no
  POST, its last attempt of the probe from the last two periods is shown instead;
- `direct`: this machine dials the pod IP (a laptop outside the cluster rarely reaches it);
- `port-forward`: through the API server into the pod's network namespace (localhost there);
- `proxy`: the API server dials the pod IP from the control plane (plain HTTP only).

Every path the mode or the probe rules out says so (`not run: ...`), as the cluster view does.
Exec probes run the command in the container by every path: nothing to compare.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probetui.prober.outcome import outcome_label
from probetui.prober.prober import run_probe_with_retries
from probetui.spec.model import ExecAction, ProbeType

if TYPE_CHECKING:
    from probetui.runtime.kubernetes.config import ClusterTarget
    from probetui.spec.model import Container, Pod, Probe

PATHS = ("agent", "direct", "port-forward", "proxy")
READ_TIMEOUT = 10.0


class VantageError(Exception):
    """Signals that the probe cannot be compared at all: one line, the problem and the fix."""


@dataclass(frozen=True, slots=True)
class Seen:
    """Holds one path's attempt, or why there is none."""

    via: str
    result: str | None  # success, warning, failure, error (outcome_label); None: not run
    latency_ms: float | None = None
    status_code: int | None = None
    detail: str = ""  # the output or error, or why not run
    when: float | None = None  # the agent's attempt time (read-only: its last one)
    node: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "via": self.via,
            "result": self.result,
            "latency_ms": self.latency_ms,
            "statusCode": self.status_code,
            "detail": self.detail,
            "t": self.when,
            "node": self.node or None,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    pod: Pod
    container: Container
    probe_type: ProbeType
    probe: Probe
    node: str
    seen: tuple[Seen, ...]

    @property
    def agree(self) -> bool:
        """Tell whether every path that ran got the same result."""
        return len({s.result for s in self.seen if s.result is not None}) <= 1


def _pick(pod: Pod, container: str | None, probe: str | None) -> tuple[Container, ProbeType, Probe]:
    order = (
        [ProbeType.parse(probe)]
        if probe
        else [ProbeType.LIVENESS, ProbeType.READINESS, ProbeType.STARTUP]
    )
    containers = [c for c in pod.probed_containers() if container is None or c.name == container]
    if container is not None and not containers:
        raise VantageError(f"pod {pod.namespace}/{pod.name} has no probed container {container!r}")
    for c in containers:
        for pt in order:
            p = c.probe(pt)
            if p is not None:
                return c, pt, p
    what = f"{probe} probe" if probe else "probe"
    raise VantageError(f"pod {pod.namespace}/{pod.name} has no {what} to compare")


async def compare(
    target: ClusterTarget,
    namespace: str,
    name: str,
    *,
    container: str | None = None,
    probe: str | None = None,
    agent_namespace: str | None = None,
    kube_version: str | None = None,
) -> Comparison:
    """Read the pod, then one attempt of its probe by each path (`PATHS`)."""
    from kubernetes_asyncio.client import CoreV1Api

    from probetui.runtime.kubernetes.observed import observe_pod

    api = await target.api_client()
    ws = None if target.read_only else await target.api_client(websocket=True)
    try:
        core = CoreV1Api(api)
        try:
            resp = await core.read_namespaced_pod(
                name, namespace, _preload_content=False, _request_timeout=READ_TIMEOUT
            )
            try:
                body = await resp.read()
                status = resp.status
            finally:
                resp.release()
        except Exception as e:
            raise VantageError(f"cannot read pod {namespace}/{name}: {e}") from None
        if status == 404:
            raise VantageError(f"no pod {name} in namespace {namespace}")
        if status != 200:
            raise VantageError(f"cannot read pod {namespace}/{name}: HTTP {status}")
        observed = observe_pod(json.loads(body))
        pod, pod_status = observed.pod, observed.status
        c, probe_type, spec = _pick(pod, container, probe)
        if isinstance(spec.handler, ExecAction):
            raise VantageError(
                f"the {probe_type.key} probe of {c.name} is exec: every path runs the command "
                "in the container (pods/exec), there is nothing to compare"
            )
        node = observed.node_name or ""
        seen = [
            await _agent(target, api, core, pod, c, probe_type, spec, node, agent_namespace),
        ]
        for via in PATHS[1:]:
            seen.append(
                await _path(
                    target, via, api, core, ws, pod, pod_status, c, probe_type, spec, kube_version
                )
            )
        return Comparison(pod, c, probe_type, spec, node, tuple(seen))
    finally:
        for client in (api, ws):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()


async def _agent(
    target: ClusterTarget,
    api: Any,
    core: Any,
    pod: Pod,
    container: Container,
    probe_type: ProbeType,
    spec: Probe,
    node: str,
    agent_namespace: str | None,
) -> Seen:
    from probetui.runtime.kubernetes.agent_streams import AgentReader
    from probetui.runtime.kubernetes.agents import AGENT_NAMESPACE, AGENT_SELECTOR
    from probetui.runtime.kubernetes.reflector import ADDED

    reader = AgentReader("agent", agent_namespace or AGENT_NAMESPACE, target.agent_paths)

    async def first_list() -> None:
        resp = await core.list_namespaced_pod(
            reader.directory.namespace,
            label_selector=AGENT_SELECTOR,
            _preload_content=False,
            _request_timeout=READ_TIMEOUT,
        )
        try:
            body = await resp.read()
            if resp.status != 200:
                from probetui.runtime.kubernetes.reflector import ApiStatusError

                raise ApiStatusError(resp.status, f"list pods: HTTP {resp.status}")
        finally:
            resp.release()
        for item in json.loads(body).get("items") or ():
            reader.directory.on_pod(ADDED, item)

    from probetui.runtime.kubernetes.agents import AgentProblem

    try:
        await reader.start(api, core, first_list)
    except AgentProblem as e:
        return Seen("agent", None, detail=f"not run: {e}")
    if not node or reader.directory.of(node) is None:
        return Seen("agent", None, detail=f"not run: {reader.why_not(node)}")
    period = float(spec.period_seconds)
    now = not target.read_only
    since = time.time() if now else time.time() - 2 * period - 1
    timeout = float(spec.timeout_seconds) + (READ_TIMEOUT if now else 5.0)
    event, why = await reader.attempt(
        node, pod.uid, container.name, probe_type.key, now=now, since=since, timeout=timeout
    )
    if event is None:
        return Seen("agent", None, detail=f"not run: {why}", node=node)
    f = event.fields
    detail = str(f.get("error") or f.get("output") or "")
    if not now:
        detail = f"its last attempt, read-only sends no POST{': ' + detail if detail else ''}"
    return Seen(
        "agent",
        _result_word(f),
        f.get("latency_ms"),
        f.get("statusCode"),
        detail,
        event.t,
        node,
    )


def _result_word(fields: dict[str, Any]) -> str:
    """Return the attempt's word as `outcome_label` gives it (success, warning, failure, error)."""
    return str(fields.get("outcome") or "error")


async def _path(
    target: ClusterTarget,
    via: str,
    api: Any,
    core: Any,
    ws: Any,
    pod: Pod,
    status: Any,
    container: Container,
    probe_type: ProbeType,
    spec: Probe,
    kube_version: str | None,
) -> Seen:
    from probetui.probe.base import DEFAULT_KUBE_VERSION
    from probetui.prober.handlers import HandlerRunner
    from probetui.runtime.kubernetes.reach import Reacher

    reacher = Reacher(target, via)
    reacher.connect(api, core, None if ws is None else type(core)(ws))
    why = reacher.not_probed(pod, container, probe_type)
    if why is not None:
        return Seen(via, None, detail=why)
    runner = HandlerRunner(
        reach=reacher.reach,
        reach_refused=reacher.reach_refused,
        close_linger=reacher.close_linger,
        reach_lingered=reacher.reach_lingered,
        exec_for=reacher.exec_runner,
        kube_version=kube_version or DEFAULT_KUBE_VERSION,
    )
    try:
        outcome = await asyncio.wait_for(
            run_probe_with_retries(runner, probe_type, spec, pod, container, status),
            float(spec.timeout_seconds) * 3 + READ_TIMEOUT,
        )
    except TimeoutError:
        return Seen(via, "error", detail="no answer in time")
    a = outcome.attempt
    word = outcome_label(outcome)
    if a is None:
        return Seen(via, word, detail=str(outcome.error or "no attempt"))
    return Seen(
        via,
        word,
        a.latency_ms,
        a.status_code,
        str(outcome.error or a.error or a.output or ""),
    )


__all__ = ["PATHS", "Comparison", "Seen", "VantageError", "compare"]
