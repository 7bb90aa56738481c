"""Discovery of the node agents: which pods pass the checks, which node each serves, and what
the read-only guard is told (agents.py), and the read token's GET against the API emulator."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes_asyncio.client import CoreV1Api

from probetui.agent.manifest import NAMESPACE, SECRET
from probetui.runtime.kubernetes.agents import (
    AgentDirectory,
    AgentProblem,
    check_agent,
    read_token,
)
from probetui.runtime.kubernetes.guard import AgentReadPaths, refusal
from probetui.runtime.kubernetes.reflector import ADDED, DELETED, MODIFIED
from tests.agent.reader_bench import agent_pod
from tests.kube.emulator import ApiEmulator


def _stream(name: str, port: int = 9479) -> str:
    return f"/api/v1/namespaces/{NAMESPACE}/pods/{name}:{port}/proxy/v1/stream"


def _broken(**change: Any) -> dict[str, Any]:
    pod = agent_pod("probetui-agent-a")
    for path, value in change.items():
        *parents, last = path.split("__")
        node = pod
        for part in parents:
            node = node[part]
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return pod


def test_a_daemonset_agent_pod_that_is_running_and_ready_passes() -> None:
    pod, why = check_agent(agent_pod("probetui-agent-a"), NAMESPACE)
    assert why == "" and pod is not None
    assert (pod.name, pod.node, pod.port, pod.proxy_name) == (
        "probetui-agent-a",
        "node-1",
        9479,
        "probetui-agent-a:9479",
    )


@pytest.mark.parametrize(
    ("change", "word"),
    [
        ({"metadata__namespace": "default"}, "namespace"),
        ({"metadata__labels": {"app.kubernetes.io/name": "probetui"}}, "labelled"),
        ({"metadata__ownerReferences": None}, "DaemonSet"),
        (
            {
                "metadata__ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "probetui-agent"}
                ]
            },
            "DaemonSet",
        ),
        (
            {
                "metadata__ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "probetui-agent",
                        "controller": True,
                    }
                ]
            },
            "DaemonSet",
        ),
        (
            {
                "metadata__ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "DaemonSet",
                        "name": "impostor",
                        "controller": True,
                    }
                ]
            },
            "DaemonSet",
        ),
        ({"metadata__deletionTimestamp": "2026-01-01T00:00:00Z"}, "deleted"),
        ({"spec__nodeName": None}, "node"),
        ({"status__phase": "Pending"}, "Running"),
        ({"status__conditions": [{"type": "Ready", "status": "False"}]}, "Ready"),
    ],
)
def test_every_check_refuses_a_pod_that_fails_it(change: dict[str, Any], word: str) -> None:
    pod, why = check_agent(_broken(**change), NAMESPACE)
    assert pod is None and word in why


def test_the_directory_admits_exactly_the_checked_pods_and_follows_them() -> None:
    paths = AgentReadPaths()
    changed: list[str] = []
    d = AgentDirectory(NAMESPACE, paths, on_change=changed.append)
    good = agent_pod("probetui-agent-a")
    impostor = agent_pod("probetui-agent-b", node="node-2", owner="impostor")
    d.on_pod(ADDED, good)
    d.on_pod(ADDED, impostor)
    assert set(d.by_node) == {"node-1"} and changed == ["node-1"]
    assert refusal("GET", _stream("probetui-agent-a"), {}, agents=paths) is None
    assert refusal("GET", _stream("probetui-agent-b"), {}, agents=paths) is not None
    assert "DaemonSet" in d.rejected["probetui-agent-b"]
    # a rolling update: a newer pod on the same node takes over, the older one is revoked
    newer = agent_pod("probetui-agent-c")
    newer["metadata"]["creationTimestamp"] = "2999-01-01T00:00:00Z"
    d.on_pod(ADDED, newer)
    assert d.of("node-1") is not None and d.of("node-1").name == "probetui-agent-c"  # type: ignore[union-attr]
    assert refusal("GET", _stream("probetui-agent-a"), {}, agents=paths) is not None
    assert refusal("GET", _stream("probetui-agent-c"), {}, agents=paths) is None
    # no longer Ready: revoked, and the older one serves again
    unready = copy.deepcopy(newer)
    unready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    d.on_pod(MODIFIED, unready)
    assert d.of("node-1").name == "probetui-agent-a"  # type: ignore[union-attr]
    assert refusal("GET", _stream("probetui-agent-c"), {}, agents=paths) is not None
    d.on_pod(DELETED, good)
    assert d.of("node-1") is None and len(paths) == 0
    assert changed == ["node-1"] * 4


async def test_the_token_is_read_with_one_get(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_secret(SECRET, {"token": "tok-0123456789abcdef"}, namespace=NAMESPACE)
    assert await read_token(core_v1, NAMESPACE) == "tok-0123456789abcdef"
    reads = [r for r in api.requests if r.resource == "secrets"]
    assert [(r.method, r.verb, r.name) for r in reads] == [("GET", "get", SECRET)]


async def test_a_missing_or_forbidden_token_is_one_line_naming_the_fix(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    with pytest.raises(AgentProblem, match=r"no secrets/probetui-agent-read.*print-manifest"):
        await read_token(core_v1, NAMESPACE)
    api.add_secret(SECRET, {"token": "tok-0123456789abcdef"}, namespace=NAMESPACE)
    api.role = "view"  # the view ClusterRole reads no Secrets
    with pytest.raises(AgentProblem) as caught:
        await read_token(core_v1, NAMESPACE)
    text = str(caught.value)
    assert "forbidden" in text and "probetui-reader" in text and "\n" not in text
    assert "tok-" not in text
