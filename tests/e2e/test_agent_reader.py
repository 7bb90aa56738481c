"""The cluster view reading the node agents on the real cluster, as the `view` user, read-only.

The manifest of `probetui agent --print-manifest --image docker.io/probetui/agent:VERSION` is
applied with kubectl as a person would (the harness imported the image; `IfNotPresent` takes
it), the `probetui-reader` Role bound to the view user, and `probetui -n NS --read-only -o
jsonl` run from the client's network namespace, where pod IPs are not its to dial. The same
three pods run on each node (the DaemonSet places an agent beside each kubelet, v1.35.4 and
v1.37.2). What only a real cluster shows:

- the attempts come from the agent of the pod's node (`via: agent`, that node named), none
  "not run: read-only";
- `KubeletProbeCounts` lines with each kubelet's own counts beside the shadow's, and no
  `Divergence` over the shadow's pods (each agent probes from where its kubelet does);
- the API server's audit log holds, for the view user, only get, list and watch, and its
  pods/proxy requests are `get` of `pods/proxy`, each an agent's `/v1/stream`, both agents read;
- the first node's agent pod deleted is replaced by the DaemonSet and the view resumes from
  where it was: nothing twice;
- a direct dial of either agent's port without the token gets 401.

The lead runs it (`-m e2e`); it skips where the harness runs no controller-manager.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from probetui import __version__
from tests.e2e.agents import AGENT_NS, need_daemonsets, pod_set, reader_binding
from tests.e2e.cluster import (
    CLIENT_NS,
    NODE,
    NODE_NAME,
    NODES,
    VIEW_USER,
    Cluster,
    Node,
    in_ns,
)
from tests.e2e.pods import HTTP_PORT, node_pod_name
from tests.e2e.run import Run, start, stop, wait_listed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

NS = "agent-reader"
IMAGE = f"docker.io/probetui/agent:{__version__}"
SELECTOR = "app.kubernetes.io/name=probetui,app.kubernetes.io/component=agent"
# longer than a KubeletProbeCounts window (60 s) and a scrape or two
RUN_SECONDS = 100


def _manifest() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "probetui", "agent", "--print-manifest", "--image", IMAGE],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def _gone(cluster: Cluster, timeout: float = 180.0) -> None:
    """Until the agents' namespace of an earlier module is gone (its deletion does not wait)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not cluster.kubectl("get", "namespace", AGENT_NS, "--ignore-not-found", check=False):
            return
        time.sleep(2)
    raise AssertionError(f"namespace {AGENT_NS} still terminating after {timeout:.0f} s")


# each pod of the set by name, with the node it is bound to
POD_NODE = {node_pod_name(base, n): n.name for n in NODES for base in ("web", "rpc", "worker")}


def _agent_pod(
    cluster: Cluster, node: Node, not_named: str = "", timeout: float = 180.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        listed = json.loads(
            cluster.kubectl(
                "-n", AGENT_NS, "get", "pods", "-l", SELECTOR,
                "--field-selector", f"spec.nodeName={node.name}", "-o", "json",
            )
        )  # fmt: skip
        for p in listed["items"]:
            ready = {c["type"]: c["status"] for c in p["status"].get("conditions") or ()}
            last = json.dumps(p["status"])[:600]
            if (
                p["metadata"]["name"] != not_named
                and ready.get("Ready") == "True"
                and not p["metadata"].get("deletionTimestamp")
            ):
                return p
        time.sleep(2)
    logs = cluster.kubectl("-n", AGENT_NS, "logs", "-l", SELECTOR, check=False)
    raise AssertionError(f"no Ready agent pod on {node.name}: {last}\n{logs[-2000:]}")


@pytest.fixture(scope="module")
def agents(cluster: Cluster) -> Iterator[dict[str, dict[str, Any]]]:
    """Each node's Ready agent pod, by node name, once the pod set runs on every node."""
    need_daemonsets(cluster)
    _gone(cluster)
    manifest = _manifest()
    cluster.kubectl("apply", "-f", "-", input=manifest)
    cluster.apply(reader_binding())
    cluster.namespace(NS)
    probes = {
        "readinessProbe": {"httpGet": {"path": "/", "port": HTTP_PORT}, "periodSeconds": 2},
        "livenessProbe": {"tcpSocket": {"port": HTTP_PORT}, "periodSeconds": 3},
    }
    cluster.apply([p for node in NODES for p in pod_set(node, NS, **probes)])
    cluster.wait_running(NS, 120)
    try:
        yield {node.name: _agent_pod(cluster, node) for node in NODES}
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
        cluster.kubectl("delete", "-f", "-", "--wait=false", input=manifest, check=False)


def _audit(cluster: Cluster, since: float) -> list[dict[str, Any]]:
    out = []
    for line in cluster.paths.audit_log.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("user", {}).get("username") != VIEW_USER:
            continue
        t = datetime.datetime.fromisoformat(
            entry["stageTimestamp"].replace("Z", "+00:00")
        ).timestamp()
        if t >= since:
            out.append(entry)
    return out


def _view(cluster: Cluster, name: str, seconds: float) -> Run:
    run = start(
        cluster,
        cluster.workdir(name),
        "-n",
        NS,
        "--read-only",
        kubeconfig=cluster.paths.view_kubeconfig,
        name=name,
    )
    try:
        wait_listed(run, 60)
        time.sleep(seconds)
    finally:
        stop(run)
    return run


def _once(attempts: list[dict[str, Any]]) -> None:
    keys = Counter((e["pod"], e["container"], e["probe"], e["ts"]) for e in attempts)
    twice = [k for k, n in keys.items() if n > 1]
    assert not twice, twice[:5]


def test_read_only_view_takes_the_shadow_and_the_kubelets_counts_from_the_agent(
    cluster: Cluster, agents: dict[str, dict[str, Any]]
) -> None:
    since = time.time()
    run = _view(cluster, "agent-reader", RUN_SECONDS)
    assert run.returncode == 130, run.stderr[-2000:]
    said = f"node agents on {len(NODES)} node(s) probe their pods from the node"
    assert said in run.stderr, run.stderr

    attempts = run.of("ProbeAttempt")
    assert attempts, run.stderr[-2000:]
    # each pod's attempts from the agent beside its own kubelet
    assert all(e["via"] == "agent" and e["node"] == POD_NODE[e["pod"]] for e in attempts)
    probed = {(e["pod"], e["probe"]) for e in attempts}
    for node in NODES:
        web_pod, rpc_pod = node_pod_name("web", node), node_pod_name("rpc", node)
        assert {(web_pod, "readiness"), (web_pod, "liveness"), (rpc_pod, "readiness")} <= probed
    served = {p for p in POD_NODE if not p.startswith("worker")}
    assert all(e["outcome"] == "success" for e in attempts if e["pod"] in served)
    _once(attempts)
    # from the agents, not "not run: read-only"; exec alone is not run, by the agent's word
    not_run = {(e["pod"], e["probe"]): e["reason"] for e in run.of("ProbeNotRun")}
    workers = {node_pod_name("worker", node) for node in NODES}
    assert set(not_run) == {(w, "liveness") for w in workers}, not_run
    assert all("pods/exec" in reason for reason in not_run.values()), not_run

    counted = run.of("KubeletProbeCounts")
    assert counted, f"no KubeletProbeCounts; stderr: {run.stderr[-2000:]}"
    assert all(e["source"] == "kubelet" and e["node"] == POD_NODE[e["pod"]] for e in counted)
    for node in NODES:
        web_pod = node_pod_name("web", node)
        web_ready = [e for e in counted if (e["pod"], e["probe"]) == (web_pod, "readiness")]
        assert web_ready and web_ready[0]["kubelet"]["successful"] > 0, (node.name, counted)
        assert web_ready[0]["judged"] is True and web_ready[0]["shadow"]["successful"] > 0
    assert all(e["shadow"] is None for e in counted if e["pod"] in workers)
    assert run.of("Divergence") == [], run.of("Divergence")

    entries = _audit(cluster, since)
    verbs = Counter(e["verb"] for e in entries)
    assert set(verbs) <= {"get", "list", "watch"}, verbs
    proxied = [e for e in entries if e.get("objectRef", {}).get("subresource") == "proxy"]
    assert proxied, "no pods/proxy request in the audit log"
    agent_names = {a["metadata"]["name"] for a in agents.values()}
    # the proxy's objectRef names the pod with the port it dials: NAME:PORT
    read = set()
    for e in proxied:
        ref = e["objectRef"]
        assert e["verb"] == "get" and ref["resource"] == "pods", e
        name = ref["name"].split(":")[0]
        assert ref["namespace"] == AGENT_NS and name in agent_names, e
        assert e["requestURI"].split("?")[0].endswith(f"/pods/{name}:9479/proxy/v1/stream")
        read.add(name)
    assert read == agent_names, (read, agent_names)
    reaching = [
        e["requestURI"]
        for e in entries
        if e.get("objectRef", {}).get("subresource") in ("exec", "attach", "portforward")
    ]
    assert reaching == []
    # a stream the client ends (its stop, or a new set of pods) ends the API server's proxy
    # handler with http.ErrAbortHandler, which its audit log records as a 500 "panic": not
    # a refusal of anything probetui asked
    assert not [
        (e["requestURI"], e.get("responseStatus"), e.get("stage"))
        for e in entries
        if e.get("responseStatus", {}).get("code", 200) >= 400
        and "net/http: abort Handler" not in e.get("responseStatus", {}).get("message", "")
    ]


def test_an_agent_pod_deleted_is_replaced_and_the_view_resumes_nothing_twice(
    cluster: Cluster, agents: dict[str, dict[str, Any]]
) -> None:
    first = agents[NODE_NAME]
    run = start(
        cluster,
        cluster.workdir("agent-replaced"),
        "-n",
        NS,
        "--read-only",
        kubeconfig=cluster.paths.view_kubeconfig,
        name="agent-replaced",
    )
    try:
        wait_listed(run, 60)
        time.sleep(15)
        cluster.kubectl("-n", AGENT_NS, "delete", "pod", first["metadata"]["name"], "--wait=true")
        replaced_at = time.time()
        second = _agent_pod(cluster, NODE, not_named=first["metadata"]["name"])
        assert second["metadata"]["uid"] != first["metadata"]["uid"]
        time.sleep(30)
    finally:
        stop(run)
    assert run.returncode == 130, run.stderr[-2000:]
    # the other node's agent streams on through the replacement: nothing twice there either
    attempts = [e for e in run.of("ProbeAttempt") if not e["pod"].startswith("worker")]
    _once(attempts)
    stamps = [
        datetime.datetime.fromisoformat(e["ts"]).timestamp()
        for e in attempts
        if (e["pod"], e["probe"]) == ("web", "readiness")
    ]
    assert any(t < replaced_at for t in stamps) and any(t > replaced_at + 5 for t in stamps)
    assert all(e["via"] == "agent" for e in attempts)
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("node", NODES, ids=[n.name for n in NODES])
def test_a_direct_dial_of_the_agent_without_the_token_gets_401(
    cluster: Cluster, agents: dict[str, dict[str, Any]], node: Node
) -> None:
    done = subprocess.run(
        in_ns(
            CLIENT_NS,
            sys.executable,
            "-c",
            "import urllib.request, urllib.error\n"
            "for path in ('/v1/stream', '/metrics'):\n"
            "    try:\n"
            f"        r = urllib.request.urlopen('http://{node.ip}:9479' + path, timeout=5)\n"
            "        print(path, r.status)\n"
            "    except urllib.error.HTTPError as e:\n"
            "        print(path, e.code)\n"
            "req = urllib.request.Request(\n"
            f"    'http://{node.ip}:9479/v1/probe', data=b'{{}}', method='POST')\n"
            "try:\n"
            "    urllib.request.urlopen(req, timeout=5)\n"
            "except urllib.error.HTTPError as e:\n"
            "    print('/v1/probe', e.code)\n",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == ["/v1/stream 401", "/metrics 401", "/v1/probe 401"]


def test_compare_vias_shows_the_agents_attempt_beside_this_machines(
    cluster: Cluster, agents: dict[str, dict[str, Any]]
) -> None:
    done = subprocess.run(
        in_ns(
            CLIENT_NS,
            sys.executable,
            "-m",
            "probetui",
            "check",
            "--pod",
            f"{NS}/web",
            "--probe",
            "readiness",
            "--compare-vias",
            "--kubeconfig",
            str(cluster.paths.admin_kubeconfig),
            "-o",
            "json",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    doc = json.loads(done.stdout)
    by = {v["via"]: v for v in doc["vias"]}
    assert list(by) == ["agent", "direct", "port-forward", "proxy"]
    assert by["agent"]["result"] == "success" and by["agent"]["node"] == NODE_NAME
    assert by["port-forward"]["result"] == "success"
