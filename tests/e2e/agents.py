"""What the node-agent e2e modules share: the agents' namespace, the viewer's RoleBinding to
the `probetui-reader` Role, the pod set on each node, and the skip where no DaemonSet runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.cluster import VIEW_USER, Cluster, Node
from tests.e2e.pods import GRPC_PORT, SLEEP, busybox, grpc_app, node_pod_name, pod, web

AGENT_NS = "probetui"


def need_daemonsets(cluster: Cluster) -> None:
    """Skip where the harness runs no kube-controller-manager: a DaemonSet makes no pods."""
    if "kube-controller-manager" not in cluster.running():
        pytest.skip("e2e: the harness runs no kube-controller-manager: a DaemonSet makes no pods")


def reader_binding() -> dict[str, Any]:
    """Bind the view user to the `probetui-reader` Role, as the manifest's example says."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "probetui-reader-viewer", "namespace": AGENT_NS},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "probetui-reader",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": VIEW_USER}],
    }


def pod_set(node: Node, namespace: str, **web_probes: Any) -> list[dict[str, Any]]:
    """Make the pods bound to `node`: `web` with `web_probes`, `rpc` with a gRPC readiness
    probe, and `worker` with an exec liveness probe (which the agent does not run)."""
    return [
        pod(node_pod_name("web", node), namespace, [web(**web_probes)], node=node),
        pod(
            node_pod_name("rpc", node),
            namespace,
            [grpc_app(flip="1h", readinessProbe={"grpc": {"port": GRPC_PORT}, "periodSeconds": 2})],
            node=node,
        ),
        pod(
            node_pod_name("worker", node),
            namespace,
            [
                busybox(
                    "w", SLEEP, livenessProbe={"exec": {"command": ["true"]}, "periodSeconds": 2}
                )
            ],
            node=node,
        ),
    ]
