"""The ground a node agent stands on, on both nodes (kubelet v1.35.4 with containerd 1.6, and
v1.37.2 with containerd 2): the agent image in each containerd, a DaemonSet the controller places
on every node, the `kubernetes` Service reached from a hostNetwork pod and from a bridge pod with
the in-cluster config the kubelet injects, and each kubelet's `/metrics/probes` behind webhook
authorization (`get nodes/metrics`, checked by the API server).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probetui import __version__
from tests.e2e import build, pods
from tests.e2e.cluster import (
    CLIENT_NS,
    NODE_IP,
    NODES,
    SERVICE_IP,
    Cluster,
    ClusterError,
    Node,
    in_ns,
)

pytestmark = pytest.mark.e2e

each_node = pytest.mark.parametrize("node", NODES, ids=[n.name for n in NODES])

NS = "e2e-nodes"
AGENT_PORT = 19479
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

# the agent's in-cluster call, as a client library makes it: the Service address and port the
# kubelet put in the environment, the CA and token it mounted, the certificate verified
IN_CLUSTER = f"""
import json, os, ssl, urllib.request
ctx = ssl.create_default_context(cafile="{SA_DIR}/ca.crt")
url = "https://%s:%s/api" % (os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
token = open("{SA_DIR}/token").read()
req = urllib.request.Request(url, headers={{"Authorization": "Bearer " + token}})
with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
    print("in-cluster", url, r.status, json.load(r)["kind"], flush=True)
"""
# then an HTTP server on the node's address, for the readiness probe
AGENT_SCRIPT = (
    IN_CLUSTER
    + f"""
import http.server
class Healthz(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok\\n")
http.server.HTTPServer((os.environ["NODE_IP"], {AGENT_PORT}), Healthz).serve_forever()
"""
)


def _get(cluster: Cluster, *what: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("-n", NS, "get", *what, "-o", "json"))


def _wait_for(what: str, check, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def _pod_phase(cluster: Cluster, name: str, phases: tuple[str, ...]) -> dict[str, Any] | None:
    pod = json.loads(
        cluster.kubectl("-n", NS, "get", "pod", name, "-o", "json", check=False) or "{}"
    )
    return pod if pod.get("status", {}).get("phase") in phases else None


def _finished(cluster: Cluster, name: str) -> dict[str, Any]:
    pod = _wait_for(
        f"pod {name} to finish", lambda: _pod_phase(cluster, name, ("Succeeded", "Failed"))
    )
    return pod


def _ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


@pytest.fixture(scope="module")
def agents(cluster: Cluster) -> Iterator[dict[str, dict[str, Any]]]:
    """The DaemonSet of the agent image, its pod Ready on every node (by node name)."""
    assert cluster.agent_image
    cluster.namespace(NS)
    cluster.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "agent", "namespace": NS},
            },
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "agent", "namespace": NS},
                "spec": {
                    "selector": {"matchLabels": {"app": "agent"}},
                    "template": {
                        "metadata": {"labels": {"app": "agent"}},
                        "spec": {
                            "hostNetwork": True,
                            "serviceAccountName": "agent",
                            "terminationGracePeriodSeconds": 2,
                            "containers": [
                                {
                                    "name": "agent",
                                    "image": cluster.agent_image,
                                    "imagePullPolicy": "Never",
                                    "command": ["python3.11", "-c", AGENT_SCRIPT],
                                    "env": [
                                        {
                                            "name": "NODE_IP",
                                            "valueFrom": {
                                                "fieldRef": {"fieldPath": "status.hostIP"}
                                            },
                                        }
                                    ],
                                    "readinessProbe": {
                                        "httpGet": {"path": "/healthz", "port": AGENT_PORT},
                                        "periodSeconds": 2,
                                    },
                                }
                            ],
                        },
                    },
                },
            },
        ]
    )

    def placed_and_ready() -> dict[str, dict[str, Any]] | None:
        items = _get(cluster, "pods", "-l", "app=agent")["items"]
        by_node = {p["spec"].get("nodeName"): p for p in items}
        ready = len(items) == len(NODES) and all(_ready(p) for p in items)
        return by_node if ready else None

    try:
        yield _wait_for("the DaemonSet's pods Ready", placed_and_ready, 120)
    except AssertionError:
        print(cluster.kubectl("-n", NS, "describe", "pods", check=False))
        print(cluster.kubectl("-n", NS, "logs", "-l", "app=agent", check=False))
        raise


def test_the_daemonset_controller_places_the_agent_image_on_every_node(
    cluster: Cluster, agents: dict[str, dict[str, Any]]
) -> None:
    assert cluster.agent_image == f"docker.io/probetui/agent:{__version__}"
    assert set(agents) == {n.name for n in NODES}
    for node in NODES:
        agent = agents[node.name]
        assert [o["kind"] for o in agent["metadata"]["ownerReferences"]] == ["DaemonSet"]
        assert agent["spec"]["hostNetwork"] is True
        assert agent["status"]["podIP"] == node.ip
    ds = _get(cluster, "daemonset", "agent")
    assert ds["status"]["numberReady"] == ds["status"]["desiredNumberScheduled"] == len(NODES)


@each_node
def test_a_hostnetwork_pod_reaches_the_api_server_by_its_service_address(
    cluster: Cluster, agents: dict[str, dict[str, Any]], node: Node
) -> None:
    """kube-proxy's OUTPUT rules: the Service's ClusterIP from the node's own network."""
    logs = cluster.kubectl("-n", NS, "logs", agents[node.name]["metadata"]["name"])
    assert f"in-cluster https://{SERVICE_IP}:443/api 200 APIVersions" in logs


@each_node
def test_a_bridge_pod_reaches_the_api_server_by_its_service_address(
    cluster: Cluster, node: Node
) -> None:
    """kube-proxy's PREROUTING rules: the Service's ClusterIP from a pod's own network, with
    the mounted token and CA (kube-root-ca.crt, published by the controller-manager). The
    agent image's python, not busybox: busybox's wget finds no TLS parameters in common with
    the API server (handshake failure)."""
    name = pods.node_pod_name("in-cluster", node)
    cluster.namespace(NS)
    cluster.apply(
        pods.pod(
            name,
            NS,
            [
                {
                    "name": "client",
                    "image": cluster.agent_image,
                    "imagePullPolicy": "Never",
                    "command": ["python3.11", "-c", IN_CLUSTER],
                }
            ],
            node=node,
            automountServiceAccountToken=True,
            restartPolicy="Never",
        )
    )
    pod = _finished(cluster, name)
    logs = cluster.kubectl("-n", NS, "logs", name)
    assert pod["status"]["phase"] == "Succeeded", logs
    assert pod["status"]["podIP"].startswith(node.pod_subnet.rsplit(".", 1)[0] + ".")
    assert f"in-cluster https://{SERVICE_IP}:443/api 200 APIVersions" in logs


def test_probetui_runs_from_the_agent_image(cluster: Cluster) -> None:
    """The image's wheel and its dependencies import: `probetui check` from a pod."""
    cluster.namespace(NS)
    cluster.apply(
        pods.pod(
            "check",
            NS,
            [
                {
                    "name": "probetui",
                    "image": cluster.agent_image,
                    "imagePullPolicy": "Never",
                    "args": ["check", "--tcp", f"{NODE_IP}:6443", "--json"],
                }
            ],
            restartPolicy="Never",
        )
    )
    pod = _finished(cluster, "check")
    logs = cluster.kubectl("-n", NS, "logs", "check")
    assert pod["status"]["phase"] == "Succeeded", logs
    assert json.loads(logs)["result"] == "success"


def test_the_scheduler_and_the_deployment_controllers_place_a_pod(cluster: Cluster) -> None:
    cluster.namespace(NS)
    cluster.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "placed", "namespace": NS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "placed"}},
                "template": {
                    "metadata": {"labels": {"app": "placed"}},
                    "spec": {
                        "automountServiceAccountToken": False,
                        "terminationGracePeriodSeconds": 2,
                        "containers": [pods.busybox("sleep", pods.SLEEP)],
                    },
                },
            },
        }
    )

    def running() -> dict[str, Any] | None:
        items = _get(cluster, "pods", "-l", "app=placed")["items"]
        ok = [p for p in items if p.get("status", {}).get("phase") == "Running"]
        return ok[0] if ok else None

    pod = _wait_for("the Deployment's pod Running", running)
    assert pod["spec"]["nodeName"] in {n.name for n in NODES}
    assert [o["kind"] for o in pod["metadata"]["ownerReferences"]] == ["ReplicaSet"]


def test_the_view_cluster_role_is_aggregated(cluster: Cluster) -> None:
    """The clusterrole-aggregation controller filled `view` (the harness no longer does)."""
    role = json.loads(cluster.kubectl("get", "clusterrole", "view", "-o", "json"))
    assert any("pods" in r.get("resources", []) for r in role["rules"])


def test_up_names_the_kubelets_and_the_control_plane_it_runs(cluster: Cluster) -> None:
    """Each Node's kubeletVersion is its kubelet's build's release; the API server runs the
    newest, which no kubelet may pass (the version skew policy)."""
    assert cluster.kubelet_versions == {n.name: build.binary_version(n.kubelet) for n in NODES}
    assert cluster.control_plane_version == build.kubernetes_version()
    assert len(set(cluster.kubelet_versions.values())) == len(NODES)


def _metrics_as(cluster: Cluster, sa: str, tmp: Path, node: Node) -> tuple[int, str]:
    """GET the kubelet's /metrics/probes from the client namespace with the SA's token (given
    to curl in a file: it stays out of the process list)."""
    token = cluster.kubectl("-n", NS, "create", "token", sa, "--duration=10m").strip()
    header = tmp / f"{sa}.header"
    header.write_text(f"Authorization: Bearer {token}\n")
    header.chmod(0o600)
    body = tmp / f"{sa}.body"
    r = subprocess.run(
        in_ns(
            CLIENT_NS,
            "curl",
            "-s",
            "--max-time",
            "10",
            "--cacert",
            str(cluster.paths.pki / "ca.crt"),
            "-H",
            f"@{header}",
            "-o",
            str(body),
            "-w",
            "%{http_code}",
            f"https://{node.ip}:10250/metrics/probes",
        ),
        capture_output=True,
        text=True,
    )
    if not r.stdout.strip().isdigit():
        raise ClusterError(f"curl: {r.stderr.strip()}")
    return int(r.stdout), body.read_text(errors="replace")


@each_node
def test_nodes_metrics_is_checked_by_the_kubelets_webhook_authorization(
    cluster: Cluster, agents: dict[str, dict[str, Any]], tmp_path: Path, node: Node
) -> None:
    """A ServiceAccount with `get nodes/metrics` reads the prober's counters (the agent's
    readiness probe has run); one without it gets 403 from the kubelet."""
    cluster.apply(
        [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "e2e-nodes-metrics"},
                "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]}],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "e2e-nodes-metrics"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "e2e-nodes-metrics",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": NS}],
            },
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "reader", "namespace": NS},
            },
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "stranger", "namespace": NS},
            },
        ]
    )
    status, body = _metrics_as(cluster, "reader", tmp_path, node)
    assert status == 200, body[:300]
    assert "prober_probe_total{" in body
    assert f'pod="{agents[node.name]["metadata"]["name"]}"' in body
    status, body = _metrics_as(cluster, "stranger", tmp_path, node)
    assert status == 403, body[:300]
    assert "subresource(s)=[metrics]" in body
