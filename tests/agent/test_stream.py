"""A node agent in the test's loop against the API emulator, a fake kubelet and real targets.

The pods of node-1 have HTTP, TCP, gRPC and exec probes on 127.0.0.1 (their pod IP); a pod of
node-2 must never be seen. A client reads `/v1/stream` with the read token as a reader through
the API server's pods/proxy would.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from probetui.runtime.kubernetes.agents import EXEC_NOT_RUN
from tests.agent.bench import Reader, attempts, dump, read_stream, running_agent
from tests.agent.conftest import NODE, READ_TOKEN, SA_TOKEN, FakeKubelet
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import EchoServer, HttpTarget
from tests.probe.conftest import StartGRPC

pytestmark = pytest.mark.slow


def _pods(api: ApiEmulator, http: int, tcp: int, grpc: int) -> dict[str, str]:
    web = make_pod(
        "web",
        node=NODE,
        containers=[
            container(
                "app",
                ports=(http,),
                readiness=http_get_probe("/ready", http, period=1),
                liveness={
                    "tcpSocket": {"port": tcp},
                    "periodSeconds": 1,
                    "timeoutSeconds": 1,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
            )
        ],
    )
    rpc = make_pod(
        "rpc",
        node=NODE,
        containers=[
            container(
                "server",
                readiness={
                    "grpc": {"port": grpc},
                    "periodSeconds": 1,
                    "timeoutSeconds": 1,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
                liveness={
                    "exec": {"command": ["true"]},
                    "periodSeconds": 1,
                    "timeoutSeconds": 1,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
            )
        ],
    )
    elsewhere = make_pod(
        "elsewhere",
        node="node-2",
        containers=[container("app", readiness=http_get_probe("/other", http, period=1))],
    )
    return {
        name: api.add_pod(p)["metadata"]["uid"]
        for name, p in (("web", web), ("rpc", rpc), ("elsewhere", elsewhere))
    }


async def _targets(
    http_target: HttpTarget, echo_server: EchoServer, grpc_server: StartGRPC
) -> tuple[int, int, int]:
    grpc = await grpc_server()
    return http_target.port, echo_server.port, grpc.port


def _count(frames: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [f for f in frames if all(f.get(k) == v for k, v in match.items())]


async def test_stream_carries_the_nodes_shadow_and_the_kubelets_counts(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    echo_server: EchoServer,
    grpc_server: StartGRPC,
) -> None:
    http, tcp, grpc = await _targets(http_target, echo_server, grpc_server)
    uids = _pods(api, http, tcp, grpc)
    kubelet.version = "v1.33.7"  # not the default: the agent must have asked
    kubelet.counts[(uids["web"], "default", "web", "app", "Readiness")] = {
        "successful": 7,
        "failed": 1,
        "unknown": 0,
    }
    kubelet.counts[(uids["rpc"], "default", "rpc", "server", "Liveness")] = {
        "successful": 4,
        "failed": 0,
        "unknown": 0,
    }
    async with running_agent(api, tmp_path, sa_dir, read_token, kubelet.port) as run:
        reader = Reader()

        def enough(r: Reader) -> bool:
            return len(r.of("counts")) >= 9 and len(attempts(r, "readiness")) >= 6

        status = await read_stream(run.url, reader, query="rows=1", until=enough, timeout=15)
        assert status == 200
        assert enough(reader), dump(reader)
        # its pods' workers play the release of the node's own kubelet, not the default
        manager = run.agent.engine.manager
        assert {manager.profile_of(uids[name]).version for name in ("web", "rpc")} == {"1.33"}
        pod = next(iter(run.agent.engine.pods.values())).pod
        node = run.agent.runtime.node_kubelet(pod)
        assert (node.node, node.version) == (NODE, "v1.33.7")

    hello = reader.frames[0]
    assert hello["role"] == "agent" and hello["node"] == NODE and hello["counts"] is True
    assert hello["rows"] is True and hello["via"] == "direct"
    # the kubelet's version, read from its kubernetes_build_info before the first probe
    assert hello["kubeletVersion"] == "v1.33.7"
    # the pods of node-1 only (the field selector), with their specs
    pod_names = {f["spec"]["metadata"]["name"] for f in reader.of("pod") if "spec" in f}
    assert pod_names == {"web", "rpc"}
    assert all(e.pod != "elsewhere" for _, e in reader.events)
    assert not any(path.startswith("/other") for _, path, _ in http_target.seen)
    # the pod watch asked for node-1's pods across all namespaces
    watches = [r for r in api.requests if r.resource == "pods" and r.verb == "watch"]
    assert watches and all(r.query["fieldSelector"] == ["spec.nodeName=node-1"] for r in watches)
    assert all(r.path == "/api/v1/pods" for r in watches)
    assert not [r for r in api.requests if r.resource == "events"]
    assert {r.method for r in api.requests} == {"GET"}

    # HTTP, TCP and gRPC from the node, labelled direct, sending the kubelet's User-Agent
    shadow = attempts(reader)
    by_handler = {e.fields["handler"]: e for e in shadow}
    assert {"http", "tcp", "grpc"} <= set(by_handler)
    assert all(e.fields["via"] == "direct" and e.source == "shadow" for e in shadow)
    assert all(e.fields["outcome"] == "success" for e in shadow)
    assert {seen[2]["User-Agent"] for seen in http_target.seen} == {"kube-probe/1.33"}
    # exec is observed only, and says why once
    not_run = [e for _, e in reader.events if e.type == "ProbeNotRun"]
    assert [(e.pod, e.probe, e.fields["reason"]) for e in not_run] == [
        ("rpc", "liveness", EXEC_NOT_RUN)
    ]
    assert "pods/exec" in EXEC_NOT_RUN and "CRI socket" in EXEC_NOT_RUN

    # counts: the kubelet's as served; the shadow's agree with the attempts before each frame
    checked = 0
    for f, tally in reader.counts_seen:
        key = (f["pod"], f["probe"])
        assert f["since"] == hello["start"] and f["kubeletStart"] == kubelet.start
        if key == ("rpc", "liveness"):
            assert f["kubelet"] == {"successful": 4, "failed": 0, "unknown": 0}
            assert f["shadow"] is None  # exec: the shadow does not run it
            continue
        if key == ("web", "readiness"):
            assert f["kubelet"] == {"successful": 7, "failed": 1, "unknown": 0}
        else:
            assert f["kubelet"] is None  # the fake kubelet has no series for it
        assert f["shadow"] == tally, (f, tally)
        checked += 1
    assert checked >= 6
    assert {(f["pod"], f["probe"]) for f, _ in reader.counts_seen} == {
        ("web", "readiness"),
        ("web", "liveness"),
        ("rpc", "readiness"),
        ("rpc", "liveness"),
    }
    # every scrape carried the kubelet's token
    assert set(kubelet.seen) == {f"Bearer {SA_TOKEN}"}


async def test_a_kubelet_that_refuses_is_one_note_and_the_shadow_goes_on(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
) -> None:
    api.add_pod(
        make_pod(
            "web",
            node=NODE,
            containers=[
                container("app", readiness=http_get_probe("/ready", http_target.port, period=1))
            ],
        )
    )
    kubelet.denied.add(SA_TOKEN)  # RBAC has no get on nodes/metrics for the agent
    async with running_agent(api, tmp_path, sa_dir, read_token, kubelet.port) as run:
        reader = Reader()

        def noted(r: Reader) -> bool:
            return bool(r.of("note")) and len(attempts(r)) >= 2

        await read_stream(run.url, reader, until=noted, timeout=10)
        assert noted(reader), dump(reader)
        (note,) = reader.of("note")
        assert note["node"] == NODE and note["topic"] == "kubelet-counts"
        assert "403" in note["text"] and "nodes/metrics" in note["text"]
        assert "the shadow goes on" in note["text"] and "\n" not in note["text"]
        assert not reader.of("counts")
        # said once on the agent's stderr too, not once a scrape
        await asyncio.sleep(1.5)
        assert sum("no kubelet counts" in line for line in run.said) == 1
        # the agent's /metrics, with the token
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{run.url}/metrics", headers={"X-Probetui-Token": READ_TOKEN}) as resp,
        ):
            metrics = await resp.text()
        assert 'probetui_agent_kubelet_scrape_errors_total{error="forbidden"}' in metrics
        assert 'probetui_agent_attempts_total{probe_type="Readiness",result="success"}' in metrics
        assert "probetui_agent_pods 1\n" in metrics and "probetui_agent_clients 0\n" in metrics
        assert "probetui_agent_kubelet_count_mismatches_total 0\n" in metrics
        # the grant arrives: the note is cleared, counts flow
        kubelet.denied.clear()
        later = Reader()
        await read_stream(
            run.url, later, query="since=0", until=lambda r: bool(r.of("counts")), timeout=10
        )
        # (a reader that came while it held got the note, then its clearing: an empty text)
        assert later.of("counts") and all(n["text"] == "" for n in later.of("note")[-1:])
        assert any("read again" in line for line in run.said)


async def test_a_kubelet_version_read_late_reaches_the_readers_already_attached(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
) -> None:
    # Agent._read_version: a kubelet that did not answer at the agent's start is asked again at
    # each scrape, and readers attached meanwhile get its version in a frame of its own
    kubelet.version = "v1.33.7"
    kubelet.status = 503
    async with running_agent(
        api, tmp_path, sa_dir, read_token, kubelet.port, scrape_every=0.2
    ) as run:
        reader = Reader()
        attached = asyncio.Event()

        def told(r: Reader) -> bool:
            attached.set()
            return bool(r.of("kubelet"))

        first = asyncio.create_task(read_stream(run.url, reader, until=told, timeout=10))
        await asyncio.wait_for(attached.wait(), 10)
        assert reader.frames[0]["kubeletVersion"] is None
        kubelet.status = None
        assert await first == 200
        assert [(f["node"], f["version"]) for f in reader.of("kubelet")] == [(NODE, "v1.33.7")]
        assert run.agent.runtime.kubelet_version == "v1.33.7"
        later = Reader()
        await read_stream(run.url, later, until=lambda r: bool(r.frames), timeout=10)
        assert later.frames[0]["kubeletVersion"] == "v1.33.7"
