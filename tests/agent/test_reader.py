"""The cluster view reading a node agent through the API emulator's pods/proxy.

A real agent serves node-1 on 127.0.0.1 (its kubelet the fake one); the emulator holds its
pod, as the DaemonSet makes it, and relays `pods/AGENT:9479/proxy/...` to it as the API server
would, streaming. The view (KubernetesRuntime in a real Engine) finds the agent, reads the
token, and takes the node's shadow from the agent instead of probing itself.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from probetui.agent.manifest import NAMESPACE
from tests.agent.bench import running_agent
from tests.agent.conftest import NODE, FakeKubelet
from tests.agent.reader_bench import attempts, install, running_view, until, viewer
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import HttpTarget

pytestmark = pytest.mark.slow

AGENT = "probetui-agent-x7k2p"


def _web(api: ApiEmulator, port: int, name: str = "web", node: str = NODE) -> str:
    pod = make_pod(
        name,
        node=node,
        containers=[container("app", readiness=http_get_probe("/ready", port, period=1))],
    )
    return str(api.add_pod(pod)["metadata"]["uid"])


async def test_auto_takes_the_nodes_shadow_from_its_agent(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
) -> None:
    uid = _web(api, http_target.port)
    async with running_agent(api, tmp_path, sa_dir, read_token, kubelet.port) as run:
        assert run.agent.address is not None
        install(api, AGENT, run.agent.address[1])
        async with running_view(api, tmp_path) as view:
            await until(lambda: len(attempts(view.sink)) >= 3)
            agents = view.runtime.agents
            assert agents is not None and agents.covers(NODE)
            # the view's own workers do not run for the pod its agent covers
            assert not any(k.pod_uid == uid for k in view.engine.workers)
    shadow = attempts(view.sink)
    assert {(e.pod, e.probe, e.source) for e in shadow} == {("web", "readiness", "shadow")}
    assert all(e.fields["via"] == "agent" and e.fields["node"] == NODE for e in shadow)
    assert all(e.fields["outcome"] == "success" for e in shadow)
    assert all(e.fields["handler"] == "http" for e in shadow)
    # nothing twice: each attempt once
    times = [e.t for e in shadow]
    assert len(times) == len(set(times))
    # the stream went through pods/proxy with the read token, asking for rows since the start
    streams = [r for r in api.requests if r.subresource == "proxy"]
    assert streams and all(
        r.method == "GET"
        and r.path == f"/api/v1/namespaces/{NAMESPACE}/pods/{AGENT}:9479/proxy/v1/stream"
        for r in streams
    )
    assert streams[0].query["rows"] == ["1"] and "since" in streams[0].query
    assert streams[0].query["pods"] == [uid]
    assert streams[0].headers.get("X-Probetui-Token")
    assert view.said == [
        "node agents on 1 node(s) probe their pods from the node, as the kubelet does (via "
        "agent); this view probes the pods of other nodes by port-forward"
    ]


async def test_read_only_viewer_reads_the_agent_and_sends_only_reads(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
) -> None:
    _web(api, http_target.port)
    token = viewer(api)
    async with running_agent(api, tmp_path, sa_dir, read_token, kubelet.port) as run:
        assert run.agent.address is not None
        install(api, AGENT, run.agent.address[1])
        async with running_view(api, tmp_path, read_only=True, token=token) as view:
            await until(lambda: len(attempts(view.sink)) >= 2)
    # shadow attempts come from the agent: no "not run: read-only allows no port-forward"
    assert not view.sink.of("ProbeNotRun")
    assert all(e.fields["via"] == "agent" for e in attempts(view.sink))
    mine = [r for r in api.requests if r.user == "alice"]
    assert mine and {r.method for r in mine} == {"GET"}
    assert {r.verb for r in mine} <= {"get", "list", "watch"}
    proxied = [r for r in mine if r.subresource == "proxy"]
    assert proxied and all(r.verb == "get" and r.name == f"{AGENT}:9479" for r in proxied)
    assert all(r.status != 403 for r in mine)


async def _mirror(run: Any, kubelet: FakeKubelet, uid: str, frozen: asyncio.Event) -> None:
    """The fake kubelet counts what the agent's shadow counts, until `frozen`."""
    while True:
        if not frozen.is_set():
            for key, worker in run.agent.engine.workers.items():
                if key.pod_uid == uid:
                    label = key.probe_type.value
                    kubelet.counts[(uid, "default", "web", key.container, label)] = dict(
                        worker.probe_total
                    )
        await asyncio.sleep(0.05)


async def test_the_kubelets_counts_beside_the_shadows_and_their_divergence(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
) -> None:
    uid = _web(api, http_target.port)
    frozen = asyncio.Event()
    async with running_agent(api, tmp_path, sa_dir, read_token, kubelet.port) as run:
        assert run.agent.address is not None
        install(api, AGENT, run.agent.address[1])
        mirror = asyncio.create_task(_mirror(run, kubelet, uid, frozen))
        try:
            async with running_view(api, tmp_path, window=2.0) as view:
                sink = view.sink
                await until(lambda: len(sink.of("KubeletProbeCounts", judged=True)) >= 2, 20)
                assert not sink.of("Divergence")
                # the kubelet stops counting (its worker stalled, say): past the slack
                frozen.set()
                await until(lambda: bool(sink.of("Divergence", reason="counts")), 20)
        finally:
            mirror.cancel()
    counted = sink.of("KubeletProbeCounts")
    assert all(e.source == "kubelet" and e.probe == "readiness" for e in counted)
    assert all(e.fields["node"] == NODE and e.fields["via"] == "agent" for e in counted)
    agreed = [e for e in counted if e.fields["judged"] and e.fields["shadow"]["successful"]]
    assert agreed and all(
        abs(sum(e.fields["kubelet"].values()) - sum(e.fields["shadow"].values())) <= 1
        for e in agreed[:2]
    )
    (div,) = sink.of("Divergence", reason="counts")
    assert div.source == "shadow" and div.pod == "web" and div.probe == "readiness"
    assert div.fields["message"].startswith("the kubelet counted ")
