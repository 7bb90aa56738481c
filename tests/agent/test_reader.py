"""The cluster view reading a node agent through the API emulator's pods/proxy.

A real agent serves node-1 on 127.0.0.1 (its kubelet the fake one); the emulator holds its
pod, as the DaemonSet makes it, and relays `pods/AGENT:9479/proxy/...` to it as the API server
would, streaming. The view (KubernetesRuntime in a real Engine) finds the agent, reads the
token, and takes the node's shadow from the agent instead of probing itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from probetui.agent.manifest import NAMESPACE
from probetui.keys import ProbeKey
from probetui.prober.results import ResultValue
from probetui.spec.model import ProbeType
from probetui.timeline.store import Store
from tests.agent.bench import Reader, read_stream
from tests.agent.bench import attempts as bench_attempts
from tests.agent.conftest import NODE, FakeKubelet
from tests.agent.reader_bench import (
    AGENT,
    StartAgent,
    add_web,
    attempts,
    running_view,
    until,
    viewer,
)
from tests.kube.emulator import ApiEmulator
from tests.kube.emulator.fixtures import HttpTarget

pytestmark = pytest.mark.slow


async def test_auto_takes_the_nodes_shadow_from_its_agent(
    api: ApiEmulator,
    tmp_path: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    uid = add_web(api, http_target.port)
    async with start_agent(), running_view(api, tmp_path) as view:
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
    # the view watches the pods itself: the agent need not send them
    assert streams[0].query["podframes"] == ["0"]
    assert streams[0].query["pods"] == [uid]
    assert streams[0].headers.get("X-Probetui-Token")
    # beside the kubelet release the view plays (its own note, tests/runtime/kubernetes)
    assert [s for s in view.said if not s.startswith("kubelet version:")] == [
        "node agents on 1 node(s) probe their pods from the node, as the kubelet does (via "
        "agent); this view probes the pods of other nodes by port-forward"
    ]


async def test_read_only_viewer_reads_the_agent_and_sends_only_reads(
    api: ApiEmulator,
    tmp_path: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port)
    token = viewer(api)
    async with start_agent(), running_view(api, tmp_path, read_only=True, token=token) as view:
        await until(lambda: len(attempts(view.sink)) >= 2)
        # nodes are not read in read-only mode: the pod's release is its agent's kubelet's
        # (KubernetesRuntime.node_kubelet)
        pod = next(p.pod for p in view.engine.pods.values() if p.pod.name == "web")
        node = view.runtime.node_kubelet(pod)
        assert (node.node, node.version) == (NODE, kubelet.version)
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
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    uid = add_web(api, http_target.port)
    frozen = asyncio.Event()
    async with start_agent() as run:
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


async def test_a_cut_stream_resumes_with_nothing_twice_and_nothing_missed(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port)
    async with start_agent() as run:
        direct = Reader()
        reading = asyncio.create_task(read_stream(run.url, direct, query="rows=1", timeout=60))
        async with running_view(api, tmp_path) as view:
            sink = view.sink
            await until(lambda: len(attempts(sink)) >= 2)
            for _ in range(2):
                assert api.cut_proxy_streams() == 1
                seen = len(attempts(sink))
                await until(lambda n=seen: len(attempts(sink)) >= n + 2)
            await asyncio.sleep(0.3)
        reading.cancel()
    mine = [e.t for e in attempts(sink)]
    assert len(mine) == len(set(mine))  # nothing twice
    theirs = sorted(e.t for e in bench_attempts(direct))
    window = [t for t in theirs if mine[0] <= t <= mine[-1]]
    assert window == sorted(mine)  # nothing missed between the first and the last
    streams = [r for r in api.requests if r.subresource == "proxy"]
    assert len(streams) == 3
    sinces = [float(r.query["since"][0]) for r in streams]
    assert sinces[0] < sinces[1] < sinces[2]


async def test_an_agent_replaced_is_read_from_where_its_predecessor_stopped(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    add_web(api, http_target.port)
    async with contextlib.AsyncExitStack() as first:
        await first.enter_async_context(start_agent())
        async with running_view(api, tmp_path) as view:
            sink = view.sink
            await until(lambda: len(attempts(sink)) >= 2)
            # the DaemonSet's pod is deleted: the agent stops, another pod replaces it
            await first.aclose()
            api.delete_pod(AGENT, namespace=NAMESPACE)
            before = len(attempts(sink))
            async with start_agent("probetui-agent-q9w4z"):
                await until(lambda: len(attempts(sink)) >= before + 3, 15)
    mine = [e.t for e in attempts(sink)]
    assert len(mine) == len(set(mine)) and mine == sorted(mine)
    paths = [r.path.split("/pods/")[1] for r in api.requests if r.subresource == "proxy"]
    assert paths[0].startswith(AGENT) and paths[-1].startswith("probetui-agent-q9w4z")
    last = [r for r in api.requests if r.subresource == "proxy"][-1]
    assert float(last.query["since"][0]) >= max(
        e.t for e in attempts(sink)[:before]
    )  # resumed from the last stamp read, not from the start


async def test_probe_now_through_the_agent_is_a_post_of_pods_proxy(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    uid = add_web(api, http_target.port, period=3)
    key = ProbeKey(uid, "app", ProbeType.READINESS)
    token = viewer(api)  # get on pods/proxy, not create
    async with start_agent(), running_view(api, tmp_path, token=token) as view:
        agents = view.runtime.agents
        assert agents is not None
        # a worker takes a trigger once it has started (after its start-up jitter)
        await until(lambda: bool(attempts(view.sink)))
        assert view.engine.probe_now(key) is True
        await until(lambda: any("probetui-prober" in s for s in view.said))
        assert not attempts(view.sink, manual=True)
        api.grant("create", "pods/proxy", token=token)
        assert view.engine.probe_now(key) is True
        await until(lambda: bool(attempts(view.sink, manual=True)))
    (manual,) = attempts(view.sink, manual=True)
    assert manual.fields["via"] == "agent" and manual.fields["trigger"] == "user"
    posts = [r for r in api.requests if r.method == "POST"]
    assert [(r.verb, r.subresource, r.status) for r in posts] == [
        ("create", "proxy", 403),
        ("create", "proxy", 200),
    ]
    assert all(r.path.endswith(f"/pods/{AGENT}:9479/proxy/v1/probe") for r in posts)
    (line,) = [s for s in view.said if "probetui-prober" in s]
    assert line.startswith(f"node {NODE}: probe now of readiness of app through agent pod ")


async def test_a_screen_takes_the_attempts_of_its_pods_and_summaries_of_the_rest(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    shown = add_web(api, http_target.port)
    other = add_web(api, http_target.port, "api")
    store = Store()
    async with start_agent(), running_view(api, tmp_path, sinks=[store]) as view:
        sink = view.sink
        await until(lambda: {e.pod for e in attempts(sink)} == {"web", "api"})
        view.runtime.focus({shown})
        await until(lambda: len([r for r in api.requests if r.subresource == "proxy"]) == 2)
        await until(lambda: bool(sink.of("WorkerState")))
        mark = len(sink.events)
        await until(lambda: len([e for e in sink.events[mark:] if e.pod == "web"]) >= 3)
    reopened = [r for r in api.requests if r.subresource == "proxy"][-1]
    assert reopened.query["pods"] == [shown] and reopened.query["summary"] == ["1"]
    after = sink.events[mark:]
    assert {e.pod for e in after if e.type == "ProbeAttempt"} == {"web"}
    states = [e for e in sink.events if e.type == "WorkerState" and e.pod_uid == other]
    assert states and states[-1].state is not None
    assert states[-1].state.published is ResultValue.SUCCESS
    # the list's state of the pod not shown in full comes from its summaries
    h = store.probe(ProbeKey(other, "app", ProbeType.READINESS))
    assert h is not None and h.published is ResultValue.SUCCESS
    times = [e.t for e in attempts(sink)]
    assert len(times) == len(set(times))


async def test_the_agents_streams_have_a_pool_of_their_own(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    # KubernetesRuntime._start_agents: a stream per node holds its connection for good, so in
    # the view's own pool (the library's 100) a view of more nodes starved its own watches
    from probetui.runtime.kubernetes.node_stream import STREAMS_MAX

    add_web(api, http_target.port)
    async with start_agent(), running_view(api, tmp_path) as view:
        await until(lambda: len(attempts(view.sink)) >= 1)
        agents = view.runtime.agents
        assert agents is not None and agents.api is not None
        streams = agents.api.rest_client.pool_manager.connector
        own = view.runtime._api.rest_client.pool_manager.connector
        assert streams is not own
        assert streams.limit == STREAMS_MAX >= 5000
