"""Which kubelet version probes each pod: the `kube-probe/X.Y` its probes carry.

A kubelet sends its own version in the User-Agent of every HTTP and gRPC probe (request.go,
grpc.go), and nodes of one cluster can run different ones during an upgrade. The shadow sends
what the pod's node's kubelet would: `status.nodeInfo.kubeletVersion` of the node named in the
pod's `spec.nodeName`, read with one `list nodes` (a read: allowed in read-only mode). Where
nodes cannot be read (the `view` ClusterRole does not cover them, so this is common), the
configured `kubeletVersion` (`--kubelet-version`, the config file) stands in, and the runtime
says so once. A pod on a node not seen yet has the nodes read again, at most once a minute.
In read-only mode nodes are not read at all (`KubernetesRuntime._read_nodes` says why).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubernetes_asyncio.client import CoreV1Api

log = logging.getLogger(__name__)

TIMEOUT = 10.0  # seconds for the one list
AGAIN_AFTER = 60.0  # seconds before an unknown node has the list read again


class NodeVersions:
    def __init__(self, clock: Any = time.monotonic) -> None:
        self.versions: dict[str, str] = {}  # node name -> kubeletVersion ("v1.33.4")
        self.node_of: dict[str, str] = {}  # pod uid -> spec.nodeName
        self.unreadable: str | None = None  # why nodes cannot be read, once tried
        self._clock = clock
        self._read_at: float | None = None
        self._task: asyncio.Task[None] | None = None
        self._core: CoreV1Api | None = None

    def connect(self, core: CoreV1Api) -> None:
        self._core = core

    def placed(self, pod_uid: str, node: str) -> None:
        if node:
            self.node_of[pod_uid] = node

    def forget(self, pod_uid: str) -> None:
        self.node_of.pop(pod_uid, None)

    def of(self, pod_uid: str) -> str | None:
        """The kubelet version of the pod's node, or None (not scheduled, not readable)."""
        node = self.node_of.get(pod_uid)
        if node is None:
            return None
        version = self.versions.get(node)
        if version is None and self.unreadable is None:
            self._read_soon()
        return version

    def _read_soon(self) -> None:
        due = self._read_at is None or self._clock() - self._read_at >= AGAIN_AFTER
        if not due or self._core is None or (self._task is not None and not self._task.done()):
            return
        try:
            self._task = asyncio.get_running_loop().create_task(self.read(), name="nodes")
        except RuntimeError:
            return  # no loop: asked from outside the engine (a test drawing once)

    async def read(self) -> None:
        """List the nodes once; on a refusal remember why and stop asking."""
        if self._core is None:
            return
        self._read_at = self._clock()
        try:
            resp = await asyncio.wait_for(self._core.list_node(_preload_content=False), TIMEOUT)
            try:
                if resp.status != 200:
                    if resp.status in (401, 403, 404):
                        self.unreadable = f"nodes not readable (HTTP {resp.status})"
                    return
                body = json.loads(await resp.read())
            finally:
                resp.release()
        except asyncio.CancelledError:
            raise
        except Exception as e:  # kubernetes_asyncio raises ApiException for a status too
            status = getattr(e, "status", None)
            if status in (401, 403, 404):
                self.unreadable = f"nodes not readable (HTTP {status})"
            log.info("cannot list nodes: %s", e)
            return
        for item in body.get("items") or ():
            name = (item.get("metadata") or {}).get("name")
            version = ((item.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")
            if name and version:
                self.versions[name] = str(version)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


__all__ = ["NodeVersions"]
