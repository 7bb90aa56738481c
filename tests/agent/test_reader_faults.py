"""The view reading agents when something is wrong: one line naming the node and the fix, and
the rest of the cluster goes on (docs/agents.md, "The reader")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from probetui.agent.manifest import NAMESPACE
from probetui.runtime.base import RuntimeFailure
from tests.agent.conftest import NODE, SA_TOKEN, FakeKubelet
from tests.agent.reader_bench import (
    AGENT,
    VIEWER,
    StartAgent,
    add_web,
    attempts,
    install,
    running_view,
    until,
    viewer,
)
from tests.kube.emulator import ApiEmulator
from tests.kube.emulator.fixtures import HttpTarget

pytestmark = pytest.mark.slow


@pytest.fixture
async def old_agent() -> AsyncIterator[int]:
    """An agent of another stream version: its hello says v 2, then nothing."""

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        hello = {"k": "hello", "v": 2, "role": "agent", "node": "node-2", "probetui": "9.0.0"}
        await resp.write(json.dumps(hello).encode() + b"\n")
        await asyncio.sleep(30)
        return resp

    app = web.Application()
    app.router.add_get("/v1/stream", stream)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def test_via_agent_without_agents_is_one_line_naming_the_install(
    api: ApiEmulator, tmp_path: Path
) -> None:
    with pytest.raises(RuntimeFailure) as caught:
        async with running_view(api, tmp_path, via="agent"):
            pass
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith("--via agent: no node agents in namespace probetui")
    assert "probetui agent --print-manifest | kubectl apply -f -" in text


async def test_via_agent_leaves_pods_of_nodes_without_one_not_run(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port, declared=True)
    other = add_web(api, http_target.port, "far", node="node-2", declared=True)
    async with start_agent(), running_view(api, tmp_path, via="agent") as view:
        await until(lambda: len(attempts(view.sink)) >= 2 and view.sink.of("ProbeNotRun"))
        assert not any(k.pod_uid == other for k in view.engine.workers)
    (not_run,) = view.sink.of("ProbeNotRun")
    assert not_run.pod == "far" and not_run.fields["via"] == "agent"
    assert "no Ready agent pod" in not_run.fields["reason"] and "node-2" in not_run.fields["reason"]
    assert {e.pod for e in attempts(view.sink)} == {"web"}


async def test_auto_probes_the_pods_of_nodes_without_an_agent_itself(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port, declared=True)
    add_web(api, http_target.port, "far", node="node-2", declared=True)
    api.map_port("far", http_target.port, http_target.port)
    async with start_agent(), running_view(api, tmp_path) as view:
        await until(
            lambda: (
                bool(attempts(view.sink, via="agent"))
                and bool(attempts(view.sink, via="port-forward"))
            )
        )
    assert {e.pod for e in attempts(view.sink, via="agent")} == {"web"}
    assert {e.pod for e in attempts(view.sink, via="port-forward")} == {"far"}


async def test_a_viewer_without_the_reader_role_falls_back_with_one_line(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port, declared=True)
    api.add_token(VIEWER, role="view", user="alice")  # view alone: no Secret, no pods/proxy
    async with start_agent():
        async with running_view(api, tmp_path, read_only=True, token=VIEWER) as view:
            await until(lambda: bool(view.sink.of("ProbeNotRun")))
        with pytest.raises(RuntimeFailure) as caught:
            async with running_view(api, tmp_path, via="agent", read_only=True, token=VIEWER):
                pass
    (said,) = [s for s in view.said if "agents" in s]
    assert "forbidden to get secrets/probetui-agent-read" in said
    assert "bind the probetui-reader Role" in said and "namespace probetui" in said
    assert "forbidden to get secrets/probetui-agent-read" in str(caught.value)
    # read-only and no agents: the old reason stands
    assert "read-only" in view.sink.of("ProbeNotRun")[0].fields["reason"]


async def test_no_pods_proxy_grant_is_one_line_for_the_node(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port, declared=True)
    api.add_token(VIEWER, role="view", user="alice")
    api.grant("get", "secrets", token=VIEWER)  # the Secret, but no get on pods/proxy
    async with start_agent(), running_view(api, tmp_path, read_only=True, token=VIEWER) as view:
        await until(lambda: any("cannot read its agent" in s for s in view.said))
        await asyncio.sleep(0.5)
    (line,) = [s for s in view.said if "cannot read its agent" in s]
    assert line.startswith(f"node {NODE}: cannot read its agent: ")
    assert "pods/proxy" in line and "bind the probetui-reader Role" in line
    assert "\n" not in line


async def test_an_agent_of_another_version_is_one_line_and_the_rest_streams(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    old_agent: int,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port, declared=True)
    add_web(api, http_target.port, "far", node="node-2", declared=True)
    async with start_agent():
        install(api, "probetui-agent-old", old_agent, node="node-2")
        async with running_view(api, tmp_path) as view:
            await until(lambda: any("protocol version" in s for s in view.said))
            n = len(attempts(view.sink))
            await until(lambda: len(attempts(view.sink)) >= n + 2)
    (line,) = [s for s in view.said if "protocol version" in s]
    assert line.startswith("node node-2: agent pod probetui-agent-old speaks stream protocol")
    assert "run the same probetui version as the agents" in line
    assert {e.pod for e in attempts(view.sink)} == {"web"}


async def test_an_agent_that_cannot_read_its_kubelet_says_so_once(
    api: ApiEmulator,
    tmp_path: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port, declared=True)
    kubelet.denied.add(SA_TOKEN)
    async with start_agent(), running_view(api, tmp_path) as view:
        await until(lambda: any("no kubelet counts" in s for s in view.said))
        await until(lambda: len(attempts(view.sink)) >= 2)
        kubelet.denied.clear()
        await until(lambda: any("counts are read again" in s for s in view.said), 10)
    (line,) = [s for s in view.said if "no kubelet counts" in s]
    assert line.startswith(f"node {NODE}: no kubelet counts: ") and "nodes/metrics" in line


async def test_every_proxied_request_of_a_read_only_view_is_a_get_of_the_stream(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port, declared=True)
    token = viewer(api)
    async with start_agent(), running_view(api, tmp_path, read_only=True, token=token) as view:
        await until(lambda: len(attempts(view.sink)) >= 2)
        refused = view.runtime.agents
        assert refused is not None
        # probe now through the agent would be a POST: refused before anything is sent
        key = next(iter(view.runtime.agents.node_of))
        from probetui.keys import ProbeKey
        from probetui.spec.model import ProbeType

        probe = ProbeKey(key, "app", ProbeType.READINESS)
        assert view.runtime.probe_now_refused(probe) == (
            "read-only: probe now through an agent is a POST"
        )
        assert view.engine.probe_now(probe) is False
    mine = [r for r in api.requests if r.user == "alice"]
    assert {(r.method, r.subresource) for r in mine if r.subresource} == {("GET", "proxy")}
    assert all(
        r.path.endswith(f"/namespaces/{NAMESPACE}/pods/{AGENT}:9479/proxy/v1/stream")
        for r in mine
        if r.subresource
    )
