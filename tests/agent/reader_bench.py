"""The cluster view reading node agents in the test's loop: agent pods in the emulator whose
pods/proxy leads to a real agent on 127.0.0.1, the read token's Secret, and the view itself."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probetui.agent.manifest import LABELS, NAME, NAMESPACE, PORT, SECRET
from probetui.engine import Engine
from probetui.prober.status import PodStatus
from probetui.runtime.kubernetes.config import ConnectOptions, resolve
from probetui.runtime.kubernetes.runtime import KubernetesRuntime
from probetui.spec.model import Pod
from probetui.timeline.events import Event
from tests.agent.bench import FAST, Running, running_agent
from tests.agent.conftest import NODE, READ_TOKEN
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod

VIEWER = "viewer-token-0123456789"
# the agent pod the DaemonSet made on NODE
AGENT = "probetui-agent-x7k2p"
# the `start_agent` fixture: `async with start_agent() as run`, or `start_agent(name)`
StartAgent = Callable[..., contextlib.AbstractAsyncContextManager[Running]]


def agent_pod(name: str, node: str = NODE, *, ready: bool = True, owner: str = NAME) -> dict:
    """An agent pod as the DaemonSet makes it: labels, the controller reference, its port."""
    pod = make_pod(
        name,
        namespace=NAMESPACE,
        node=node,
        labels=dict(LABELS),
        ready=ready,
        containers=[container("agent", ports=(PORT,))],
    )
    pod["spec"]["containers"][0]["ports"][0]["name"] = "stream"
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": owner,
            "uid": "uid-daemonset-probetui-agent",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return pod


def install(api: ApiEmulator, name: str, agent_port: int, node: str = NODE, **kw: Any) -> dict:
    """The agent pod `name` on `node`, its pods/proxy port leading to the agent on
    127.0.0.1:`agent_port`, and the read token's Secret."""
    obj = api.add_pod(agent_pod(name, node, **kw))
    api.map_port(name, PORT, agent_port, namespace=NAMESPACE)
    if api.store.get("secrets", NAMESPACE, SECRET) is None:
        api.add_secret(SECRET, {"token": READ_TOKEN}, namespace=NAMESPACE)
    return obj


@contextlib.asynccontextmanager
async def installed_agent(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet_port: int,
    name: str = AGENT,
) -> AsyncIterator[Running]:
    """Run an agent for NODE (`running_agent`) behind the agent pod `name` (`install`)."""
    async with running_agent(api, tmp_path, sa_dir, read_token, kubelet_port) as run:
        assert run.agent.address is not None
        install(api, name, run.agent.address[1])
        yield run


def add_web(
    api: ApiEmulator,
    port: int,
    name: str = "web",
    node: str = NODE,
    *,
    period: int = 1,
    declared: bool = False,
) -> str:
    """Add a pod `name` on `node` whose container `app` has an HTTP readiness probe of `port`
    every `period` seconds (`declared`: `port` in the container's ports, else the emulator's
    default); return its UID."""
    ports = {"ports": (port,)} if declared else {}
    probe = http_get_probe("/ready", port, period=period)
    pod = make_pod(name, node=node, containers=[container("app", readiness=probe, **ports)])
    return str(api.add_pod(pod)["metadata"]["uid"])


def viewer(api: ApiEmulator) -> str:
    """A `view` user bound to the probetui-reader Role: get on pods/proxy and the Secret."""
    api.add_token(VIEWER, role="view", user="alice")
    api.grant("get", "pods/proxy", token=VIEWER)
    api.grant("get", "secrets", token=VIEWER)
    return VIEWER


@dataclass
class Sink:
    events: list[Event] = field(default_factory=list)
    pods: dict[str, PodStatus | None] = field(default_factory=dict)

    def event(self, event: Event) -> None:
        self.events.append(event)

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.pods[pod.name] = status

    def of(self, type_: str, **fields: Any) -> list[Event]:
        return [
            e
            for e in self.events
            if e.type == type_ and all(e.fields.get(k) == v for k, v in fields.items())
        ]


@dataclass
class View:
    runtime: KubernetesRuntime
    engine: Engine
    sink: Sink
    said: list[str]
    task: asyncio.Task[None]


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 - polls what callbacks record
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running_view(
    api: ApiEmulator,
    tmp_path: Path,
    *,
    via: str | None = None,
    read_only: bool = False,
    token: str | None = None,
    window: float | None = None,
    sinks: list[Any] | None = None,
    **kwargs: Any,
) -> AsyncIterator[View]:
    """The cluster view on namespace default (auto: the agents where found), headless."""
    config = api.kubeconfig(tmp_path / "view-kubeconfig", token=token)
    target = resolve(
        ConnectOptions(kubeconfig=str(config), namespace="default", read_only=read_only),
        environ={},
        service_account_dir=tmp_path / "no-sa",
    )
    runtime = KubernetesRuntime(target, via=via, reflector_options=FAST, **kwargs)
    said: list[str] = []
    runtime.on_note = said.append
    if window is not None and runtime.agents is not None:
        runtime.agents.counts.window = window
    sink = Sink()
    engine = Engine(runtime, [sink, *(sinks or [])])
    task = asyncio.create_task(engine.run())
    try:
        await until(lambda: runtime.pods_reflector is not None or task.done())
        if task.done():
            task.result()
        assert runtime.pods_reflector is not None
        await asyncio.wait_for(runtime.pods_reflector.synced.wait(), 5)
        yield View(runtime, engine, sink, said, task)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def attempts(sink: Sink, **fields: Any) -> list[Event]:
    return sink.of("ProbeAttempt", **fields)
