"""The node agent on the real cluster: the DaemonSet of `probetui agent --print-manifest`, read
through the API server's pods/proxy as a reader with the `probetui-reader` Role reads it. The
DaemonSet places an agent on each node; each is read beside its own kubelet (v1.35.4 on the
first node, v1.37.2 on the second), over the same three pods on its node.

What only a real cluster shows: the manifest applies and its pod runs as UID 65532 with no
capability (hostNetwork, the Secret mounted, in-cluster config); its field-selected pod watch
sees the node's pods; its HTTP and gRPC probes reach them from the node; the kubelet serves it
`/metrics/probes` for its ServiceAccount token (TokenReview, then a SubjectAccessReview for get
on nodes/metrics); the API server's pods/proxy carries `X-Probetui-Token` to it and streams the
frames back; without the token, through the proxy or dialled directly, there is no data.

Needs from the harness: a controller-manager (DaemonSets make pods) and a scheduler or
DaemonSet pods bound by the controller; the agent image (`AGENT_IMAGE`) in containerd; pods able
to reach the `kubernetes` Service (in-cluster config); the kubelet authenticating bearer tokens
with webhooks and authorizing with the API server (else the test's counts assertion fails with
the agent's own note saying which). The lead runs it; it skips where the harness lacks them.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from probetui import __version__
from probetui.agent.manifest import objects
from tests.e2e.agents import AGENT_NS, need_daemonsets, pod_set, reader_binding
from tests.e2e.cluster import CLIENT_NS, NODES, Cluster, Node, in_ns
from tests.e2e.pods import HTTP_PORT, node_pod_name

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

NS = "agent-e2e"
AGENT_IMAGE = f"docker.io/probetui/agent:{__version__}"
READ_SECONDS = 45

# run in the client namespace with the viewer's kubeconfig: the token from the Secret, then
# the stream through pods/proxy, each frame printed as one JSON line, for `seconds`
_READER = r"""
import asyncio, base64, json, sys, time
from kubernetes_asyncio.client import CoreV1Api
from probetui.runtime.kubernetes.config import ConnectOptions, resolve

kubeconfig, agent, seconds, with_token = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"

async def main():
    target = resolve(ConnectOptions(kubeconfig=kubeconfig))
    api = await target.api_client()
    try:
        secret = await CoreV1Api(api).read_namespaced_secret("probetui-agent-read", "probetui")
        token = base64.b64decode(secret.data["token"]).decode()
        headers = {"X-Probetui-Token": token} if with_token else {}
        path = f"/api/v1/namespaces/probetui/pods/{agent}:9479/proxy/v1/stream"
        resp = await api.call_api(
            path, "GET", query_params=[("rows", "1")], header_params=headers,
            auth_settings=["BearerToken"], _preload_content=False, _request_timeout=seconds + 30,
        )
        resp = resp[0] if isinstance(resp, tuple) else resp
        print(json.dumps({"k": "_status", "status": resp.status}), flush=True)
        if resp.status != 200:
            print(json.dumps({"k": "_body", "text": (await resp.read()).decode()[:500]}))
            return
        end = time.monotonic() + seconds
        rest = b""
        while time.monotonic() < end:
            try:
                chunk = await asyncio.wait_for(resp.content.readany(), end - time.monotonic())
            except asyncio.TimeoutError:
                break
            if not chunk:
                break
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                sys.stdout.write(line.decode() + "\n")
        resp.release()
    finally:
        await api.close()

asyncio.run(main())
"""


def _agent_objects() -> list[dict[str, Any]]:
    objs = objects(AGENT_NS, AGENT_IMAGE)
    for obj in objs:
        if obj["kind"] == "DaemonSet":
            (c,) = obj["spec"]["template"]["spec"]["containers"]
            c["imagePullPolicy"] = "Never"  # the harness imported it; nothing is pulled
    return objs


def _agent_pod(cluster: Cluster, node: Node, timeout: float = 180.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        listed = json.loads(
            cluster.kubectl(
                "-n", AGENT_NS, "get", "pods", "-l", "app.kubernetes.io/component=agent",
                "--field-selector", f"spec.nodeName={node.name}", "-o", "json",
            )
        )  # fmt: skip
        for p in listed["items"]:
            conditions = {c["type"]: c["status"] for c in p["status"].get("conditions") or ()}
            last = json.dumps(p["status"])[:800]
            if conditions.get("Ready") == "True":
                return p
        time.sleep(2)
    logs = cluster.kubectl(
        "-n", AGENT_NS, "logs", "-l", "app.kubernetes.io/component=agent", check=False
    )
    raise AssertionError(f"no Ready agent pod on {node.name}: {last}\n{logs[-2000:]}")


def _read(
    cluster: Cluster, agent: str, seconds: float, with_token: bool = True
) -> list[dict[str, Any]]:
    argv = in_ns(
        CLIENT_NS,
        sys.executable,
        "-c",
        _READER,
        str(cluster.paths.view_kubeconfig),
        agent,
        str(seconds),
        "1" if with_token else "0",
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture(params=NODES, ids=[n.name for n in NODES])
def node(request: pytest.FixtureRequest) -> Node:
    return request.param


@pytest.fixture
def agent(agents: dict[str, dict[str, Any]], node: Node) -> dict[str, Any]:
    """The agent pod on the node under test."""
    return agents[node.name]


@pytest.fixture(scope="module")
def agents(cluster: Cluster) -> Iterator[dict[str, dict[str, Any]]]:
    need_daemonsets(cluster)
    cluster.apply(_agent_objects())
    # the viewer reads the agents: the reader Role, bound as the manifest's example says
    cluster.apply(reader_binding())
    cluster.namespace(NS)
    web_probe = {"httpGet": {"path": "/", "port": HTTP_PORT}, "periodSeconds": 2}
    cluster.apply([p for node in NODES for p in pod_set(node, NS, readinessProbe=web_probe)])
    cluster.wait_running(NS, 120)
    try:
        yield {node.name: _agent_pod(cluster, node) for node in NODES}
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
        cluster.kubectl(
            "delete", "-f", "-", "--wait=false",
            input=yaml.safe_dump_all(_agent_objects()), check=False,
        )  # fmt: skip


def test_the_agent_runs_as_its_manifest_says(
    cluster: Cluster, agent: dict[str, Any], node: Node
) -> None:
    spec = agent["spec"]
    assert spec["hostNetwork"] is True and agent["status"]["podIP"] == node.ip
    assert spec["securityContext"]["runAsUser"] == 65532
    statuses = agent["status"]["containerStatuses"]
    assert statuses[0]["ready"] is True and statuses[0]["restartCount"] == 0
    logs = cluster.kubectl("-n", AGENT_NS, "logs", agent["metadata"]["name"])
    assert f"serving the pods of node {node.name} on http://{node.ip}:9479" in logs
    assert "Traceback" not in logs


def test_a_reader_through_pods_proxy_gets_the_nodes_shadow_and_the_kubelets_counts(
    cluster: Cluster, agent: dict[str, Any], node: Node
) -> None:
    frames = _read(cluster, agent["metadata"]["name"], READ_SECONDS)
    assert frames[0] == {"k": "_status", "status": 200}, frames[:3]
    hello = frames[1]
    assert hello["k"] == "hello" and hello["role"] == "agent" and hello["node"] == node.name
    assert hello["kubeletVersion"], hello  # asked of the kubelet itself
    web_, rpc, worker = (node_pod_name(n, node) for n in ("web", "rpc", "worker"))
    pods = {f["spec"]["metadata"]["name"] for f in frames if f["k"] == "pod" and "spec" in f}
    assert {web_, rpc, worker} <= pods
    assert any(f["k"] == "live" for f in frames)
    # the shadow's attempts come as rows: HTTP and gRPC, from the node, succeeding
    workers = {f["w"]: (f["pod"], f["probe"]) for f in frames if f["k"] == "wk"}
    rows = [r for f in frames if f["k"] == "rows" for r in f["r"]]
    probed = {workers[r[0]] for r in rows}
    assert {(web_, "readiness"), (rpc, "readiness")} <= probed
    not_run = [f["e"] for f in frames if f["k"] == "event" and f["e"]["type"] == "ProbeNotRun"]
    assert [(e["pod"], e["probe"]) for e in not_run if e["namespace"] == NS] == [
        (worker, "liveness")
    ]
    # the kubelet's counts beside the shadow's, within what their phases allow
    notes = [f["text"] for f in frames if f["k"] == "note" and f["text"]]
    counts = [f for f in frames if f["k"] == "counts" and f["ns"] == NS]
    assert counts, f"no counts frames; the agent said: {notes}"
    by_probe = {(f["pod"], f["probe"]): f for f in counts}
    web_counts = by_probe[(web_, "readiness")]
    assert web_counts["kubelet"]["successful"] > 0 and web_counts["shadow"]["successful"] > 0
    assert by_probe[(worker, "liveness")]["shadow"] is None
    judged = [f["mismatch"] for f in counts if "mismatch" in f]
    assert judged and judged.count(True) == 0, [f for f in counts if f.get("mismatch")]


def test_no_token_no_data(cluster: Cluster, agent: dict[str, Any], node: Node) -> None:
    frames = _read(cluster, agent["metadata"]["name"], 5, with_token=False)
    assert frames[0] == {"k": "_status", "status": 401}
    assert "X-Probetui-Token" in frames[1]["text"] and "hello" not in frames[1]["text"]
    # nor dialled directly from another address on the node's network
    direct = subprocess.run(
        in_ns(
            CLIENT_NS,
            sys.executable,
            "-c",
            "import urllib.request, urllib.error\n"
            "for path in ('/v1/stream', '/metrics', '/healthz'):\n"
            "    try:\n"
            f"        r = urllib.request.urlopen('http://{node.ip}:9479' + path, timeout=5)\n"
            "        print(path, r.status, r.read(100))\n"
            "    except urllib.error.HTTPError as e:\n"
            "        print(path, e.code)\n",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert direct.stdout.splitlines() == ["/v1/stream 401", "/metrics 401", "/healthz 200 b'ok\\n'"]


def test_the_token_is_only_for_readers(cluster: Cluster, agents: dict[str, dict[str, Any]]) -> None:
    """The agent's own ServiceAccount cannot read the Secret, nor anything but its pods."""
    sa = f"system:serviceaccount:{AGENT_NS}:probetui-agent"
    # kubectl reads RESOURCE/NAME, so a subresource is asked with --subresource
    for verb, what, sub, allowed in (
        ("list", "pods", "", "yes"),
        ("get", "nodes", "metrics", "yes"),
        ("get", "nodes", "proxy", "no"),
        ("create", "pods", "exec", "no"),
        ("get", "pods", "proxy", "no"),
        ("get", "secrets", "", "no"),
    ):
        extra = [f"--subresource={sub}"] if sub else []
        said = cluster.kubectl("auth", "can-i", verb, what, *extra, "--as", sa, check=False).strip()
        assert said == allowed, (verb, what, sub, said)
    secret = json.loads(
        cluster.kubectl("-n", AGENT_NS, "get", "secret", "probetui-agent-read", "-o", "json")
    )
    assert len(base64.b64decode(secret["data"]["token"])) >= 40
