"""Tell which kubelet version probes each pod: the `kube-probe/X.Y` its probes carry.

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

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from probetui.kubelet.profile import parse_version, profile_of_node
from probetui.runtime.kubernetes.relist import Relisted

if TYPE_CHECKING:
    from kubernetes_asyncio.client import CoreV1Api


class NodeVersions(Relisted):
    what = "nodes"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self.versions: dict[str, str] = {}  # node name -> kubeletVersion ("v1.33.4")
        self.node_of: dict[str, str] = {}  # pod uid -> spec.nodeName
        self._core: CoreV1Api | None = None
        # told after each list that found versions: pods placed earlier may learn their node's
        self.on_read: Callable[[], None] | None = None

    def connect(self, core: CoreV1Api) -> None:
        self._core = core

    def placed(self, pod_uid: str, node: str) -> None:
        if node:
            self.node_of[pod_uid] = node

    def forget(self, pod_uid: str) -> None:
        self.node_of.pop(pod_uid, None)

    def known(self, pod_uid: str) -> str | None:
        """Return the kubelet version of the pod's node where it has been read; asks for nothing."""
        node = self.node_of.get(pod_uid)
        return None if node is None else self.versions.get(node)

    def of(self, pod_uid: str) -> str | None:
        """Return the kubelet version of the pod's node, or None (not scheduled, not readable)."""
        node = self.node_of.get(pod_uid)
        if node is None:
            return None
        version = self.versions.get(node)
        if version is None:
            self._read_soon()
        return version

    def _can_read(self) -> bool:
        return self._core is not None

    def _call(self) -> Awaitable[Any]:
        assert self._core is not None
        return self._core.list_node(_preload_content=False)

    def _take(self, body: dict[str, Any]) -> None:
        for item in body.get("items") or ():
            name = (item.get("metadata") or {}).get("name")
            version = ((item.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")
            if name and version:
                self.versions[name] = str(version)
        if self.on_read is not None:
            self.on_read()


def releases_played(versions: dict[str, str]) -> str:
    """Return the kubelet releases the nodes' versions play, counted: "kubelet 1.35 on 3 nodes,
    1.37 on 1" (a version outside the modelled ones plays the nearest, `profile_of_node`)."""
    counts = Counter(profile_of_node(v).version for v in versions.values())
    if not counts:
        return "no node read yet"
    parts = [
        f"{release} on {n} node{'s' if n > 1 else ''}"
        for release, n in sorted(counts.items(), key=lambda item: parse_version(item[0]))
    ]
    return "kubelet " + ", ".join(parts)


__all__ = ["NodeVersions", "releases_played"]
