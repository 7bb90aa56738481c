"""Source one node's pods, as the API server places them on it, for probing from the node.

`NodeRuntime` is the cluster view's `KubernetesRuntime` with a narrower watch and fewer reads:

- one pod watch across all namespaces with `fieldSelector=spec.nodeName=NODE` (the target's
  field selector), so an agent holds only its node's pods;
- no events watch: core/v1 events cannot be selected by node (their field selectors name the
  involved object, the reason, the type and the reporting component, never the host), so every
  agent would watch every event of the cluster. The kubelet's own counts (`counts` frames) stand
  in for them on this path, and a reader who wants the events has them from the API server. The
  divergence check does not need them: it compares the shadow's published results with the
  containers' `ready` and `started`, which the pod watch carries, and confirms with a get;
- no ReplicaSet reads and no node reads: the agent's RBAC grants pods and nodes/metrics only. The
  kubelet version the probes' `kube-probe/X.Y` names comes from the kubelet itself
  (`kubernetes_build_info` on its `/metrics`, read by the agent) or `--kubelet-version`;
- HTTP, TCP and gRPC probes dial the pod IP from the node (`--via direct`); exec probes are
  observed only, each said once as `ProbeNotRun` with `EXEC_NOT_RUN`.

The target is read-only: the guard lets only get, list and watch leave, whatever a bug asks.
"""

from __future__ import annotations

from typing import Any

from probetui.kubelet.profile import profile_of_node
from probetui.runtime.base import NodeKubelet
from probetui.runtime.kubernetes.agents import EXEC_NOT_RUN
from probetui.runtime.kubernetes.config import ClusterTarget
from probetui.runtime.kubernetes.runtime import KubernetesRuntime
from probetui.spec.model import Pod


class NodeRuntime(KubernetesRuntime):
    watch_events = False
    read_owners = False
    rbac_fix = (
        "the agent's ServiceAccount needs get, list and watch on pods (the ClusterRole of "
        "`probetui agent --print-manifest`)"
    )

    def __init__(self, target: ClusterTarget, *, node: str, **kwargs: Any) -> None:
        super().__init__(target, via="direct", **kwargs)
        self.node = node
        self.reacher.exec_not_run = EXEC_NOT_RUN
        self._kubelet_version: str | None = None

    @property
    def kubelet_version(self) -> str | None:
        """Return the node's kubelet version, once read from the kubelet (None: the configured
        one)."""
        return self._kubelet_version

    @kubelet_version.setter
    def kubelet_version(self, version: str | None) -> None:
        # the node's version is every pod's here: its pods' workers play that release from
        # now on (ClusterPods, as a read of the nodes tells it), and the ones added later
        self._kubelet_version = version
        if version:
            self.nodes.versions[self.node] = version
            if self.nodes.on_read is not None:
                self.nodes.on_read()

    def kube_version_of(self, pod: Pod) -> str | None:
        return self.kubelet_version

    def node_kubelet(self, pod: Pod) -> NodeKubelet:
        if self.kubelet_version:
            return NodeKubelet(self.node, self.kubelet_version)
        return NodeKubelet(self.node, None, "its kubelet's version not read yet")

    def _kubelet_note(self) -> str:
        if self.kubelet_version:
            release = profile_of_node(self.kubelet_version).version
            return (
                f"kubelet version: node {self.node} runs {self.kubelet_version}: kubelet {release}"
            )
        return (
            f"kubelet version: node {self.node}'s not read yet; its pods play the configured "
            f"kubelet {profile_of_node(self.configured_kubelet).version} until it is"
        )


def node_selector(node: str) -> str:
    """Return the pod watch's field selector for the pods of `node`."""
    return f"spec.nodeName={node}"


__all__ = ["NodeRuntime", "node_selector"]
