"""Give a fed shard what it needs to probe a cluster's pods like the parent: the cluster view.

The watch, the kubelet's side and the divergence check stay in the parent (`KubernetesRuntime`
runs there once, through `fed.RouterHost`); a shard only probes. Which probes run is the
parent's rule (`not_probed`, the same `Reacher`), so the parent's hello carries the reach
settings and where the cluster is (`reach_settings`).

`--via direct` dials pod IPs, which come with the pod snapshots: such a shard never talks to
the API server. An attempt that must go through it (an exec probe by pods/exec, `--via
port-forward` or `proxy`) goes from the shard that runs it, on the shard's own API clients: the
shard resolves the same kubeconfig files and context (or in-cluster config) itself, so no
credential crosses the stream, and opens its clients at the first such attempt. In
`--read-only` mode none of those attempts is run, and a shard opens no client at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Coroutine, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from probetui.spec.model import Container, Pod, ProbeType

if TYPE_CHECKING:
    from probetui.probe.exec import ExecOutput, ExecRunner

# after a failed connect (the kubeconfig gone, a credential plugin failing), the attempts that
# need the API server fail with its reason for this long before the shard tries again
RETRY_CONNECT = 10.0


def reach_settings(runtime: Any) -> dict[str, Any]:
    """What the parent's hello tells a shard of how the cluster's pods are reached, and where
    the cluster is: the kubeconfig files and context as resolved (no credentials)."""
    target = runtime.target
    # the path of the pods no node agent covers: the agents' own pods never reach a shard
    reacher = runtime.reacher
    return {
        "via": reacher.via,
        "via_explicit": bool(reacher.via_explicit),
        "read_only": bool(runtime.read_only),
        "in_cluster": bool(target.in_cluster),
        "files": list(target.files),
        "context": target.context,
        "namespace": target.namespace,
        "server": target.server,
    }


class ShardReach:
    """Gives a shard's paths to the cluster's pods: the parent's `Reacher` rules, and its own API
    clients for the attempts that go through the API server, opened when first needed."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from probetui.runtime.kubernetes.reach import Reacher

        self.settings = settings
        target = SimpleNamespace(
            read_only=bool(settings.get("read_only")),
            in_cluster=bool(settings.get("in_cluster")),
        )
        self.reacher = Reacher(target, str(settings.get("via") or "direct"))  # type: ignore[arg-type]
        self.reacher.via_explicit = bool(settings.get("via_explicit"))
        self.via = self.reacher.via
        self.read_only = target.read_only
        self._clients: list[Any] = []  # to close; made one by one, so not yet all of them
        self._ready = False  # every client made and handed to the reacher
        self._connecting: asyncio.Task[None] | None = None
        self._failed: tuple[float, str] | None = None  # (when, why) of the last failed connect

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        return self.reacher.not_probed(pod, container, probe_type)

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        return self.reacher.attempt_via(container, probe_type)

    # -- the shard's API clients --------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._ready

    async def _connected(self) -> str | None:
        """The API clients, open; or why they cannot be (None: open, or read-only, where the
        reacher's paths say for themselves that nothing goes through the API server)."""
        if self._ready or self.read_only:
            return None
        failed = self._failed
        if failed is not None and time.monotonic() - failed[0] < RETRY_CONNECT:
            return failed[1]
        task = self._connecting
        if task is None or task.done():
            # the attempts that meet an unconnected shard together share one connect
            task = self._connecting = asyncio.ensure_future(self._connect())
        try:
            await asyncio.shield(task)
        except Exception as e:
            from probetui.runtime.kubernetes.kubeconfig import one_line

            why = f"the shard cannot reach the API server: {one_line(e) or type(e).__name__}"
            self._failed = (time.monotonic(), why)
            return why
        self._failed = None
        return None

    async def _connect(self) -> None:
        from kubernetes_asyncio.client import CoreV1Api

        target = resolve_target(self.settings)
        try:
            api = await target.api_client()
            self._clients.append(api)
            ws_api = await target.api_client(websocket=True)
            self._clients.append(ws_api)
        except BaseException:
            await self.close()  # the next try starts afresh
            raise
        self.reacher.connect(api, CoreV1Api(api), CoreV1Api(ws_api))
        self._ready = True

    async def close(self) -> None:
        task = self._connecting
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self._ready = False
        clients, self._clients = self._clients, []
        for client in clients:
            with contextlib.suppress(Exception):
                await client.close()

    # -- the paths ------------------------------------------------------------------------

    def reach(
        self, pod: Pod, container: Container, host: str, port: int
    ) -> Coroutine[Any, Any, tuple[str, int]]:
        if self.via == "direct":
            return self.reacher.reach(pod, container, host, port)
        return self._reach(pod, container, host, port)

    async def _reach(self, pod: Pod, container: Container, host: str, port: int) -> tuple[str, int]:
        why = await self._connected()
        if why is not None:
            from probetui.runtime.kubernetes.streams import ApiPathError

            raise ApiPathError(why)
        return await self.reacher.reach(pod, container, host, port)

    @property
    def close_linger(self) -> float:
        return self.reacher.close_linger

    def reach_lingered(self, dialled: str) -> float:
        return self.reacher.reach_lingered(dialled)

    def reach_refused(self, dialled: str) -> str | None:
        return self.reacher.reach_refused(dialled)

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner:
        async def run(argv: Sequence[str], timeout: float) -> ExecOutput:
            why = await self._connected()
            if why is not None:
                from probetui.probe.exec import ExecOutput

                return ExecOutput(b"", None, error=why)
            # made now: the reacher's runner takes the clients as they are when it is made
            return await self.reacher.exec_runner(pod, container)(argv, timeout)

        return run


def resolve_target(settings: dict[str, Any]) -> Any:
    """The parent's cluster target, resolved again in the shard from the same kubeconfig files
    and context (or the same in-cluster config); a kubeconfig that now names another server is
    refused rather than probed through."""
    from probetui.runtime.kubernetes.config import ConnectOptions, resolve

    options = ConnectOptions(
        context=settings.get("context") or None,
        namespace=settings.get("namespace") or None,
        read_only=bool(settings.get("read_only")),
    )
    environ = dict(os.environ)
    files = settings.get("files") or []
    if not settings.get("in_cluster") and files:
        environ["KUBECONFIG"] = os.pathsep.join(files)
    target = resolve(options, environ=environ)
    server = settings.get("server")
    if server and target.server != server:
        raise RuntimeError(
            f"the kubeconfig now names {target.server}, not {server} as at the start "
            "(restart probetui)"
        )
    return target


__all__ = ["ShardReach", "reach_settings", "resolve_target"]
