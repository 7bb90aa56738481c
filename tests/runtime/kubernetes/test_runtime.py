"""KubernetesRuntime through the real Engine against the API emulator.

Real time, kept short: probes run every second and the workers' start-up jitter is turned off
(`no_jitter`), so the first attempt comes at once. Pod IPs are 127.0.0.1, so `--via direct`
dials loopback servers; port-forward and proxy go through the emulator to the same servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from probetui.engine import Engine
from probetui.probe.base import DEFAULT_KUBE_VERSION
from probetui.prober.lateness import BEHIND
from probetui.prober.status import PodStatus
from probetui.runtime.base import RuntimeFailure
from probetui.runtime.kubernetes.config import ConnectOptions, resolve
from probetui.runtime.kubernetes.pods import NOT_RUN
from probetui.runtime.kubernetes.relist import AGAIN_AFTER
from probetui.runtime.kubernetes.runtime import KubernetesRuntime
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import Event
from probetui.ui.describe import kubelet_played
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod, running_status
from tests.kube.emulator.fixtures import EchoServer, HttpTarget


class _NoJitter:
    @staticmethod
    def random() -> float:
        return 0.0


@pytest.fixture(autouse=True)
def no_jitter(monkeypatch: pytest.MonkeyPatch) -> None:
    # the worker spreads first probes over a period after start-up (docs/kubelet-behaviour.md §4.2);
    # not here
    monkeypatch.setattr("probetui.prober.worker.random", _NoJitter())


@dataclass
class Recorder:
    events: list[Event] = field(default_factory=list)
    pods: dict[str, PodStatus | None] = field(default_factory=dict)

    def event(self, event: Event) -> None:
        self.events.append(event)

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.pods[pod.name] = status

    def of(self, type_: str, **fields: Any) -> list[Event]:
        return [
            e
            for e in self.events
            if e.type == type_
            and all(
                getattr(e, k) == v
                if k in ("container", "probe", "source", "pod")
                else e.fields.get(k) == v
                for k, v in fields.items()
            )
        ]


async def until(predicate: Callable[[], bool], timeout: float = 2.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 - polls what callbacks record
            await asyncio.sleep(0.01)


@dataclass
class Cluster:
    api: ApiEmulator
    runtime: KubernetesRuntime
    engine: Engine
    rec: Recorder
    sleeps: list[float]


def make_runtime(
    api: ApiEmulator,
    tmp_path: Path,
    *,
    via: str | None = None,
    read_only: bool = False,
    namespace: str | None = "default",
    all_namespaces: bool = False,
    selector: str | None = None,
    fail_fast: bool = False,
    token: str | None = None,
    sleeps: list[float] | None = None,
    agents: bool = False,
) -> KubernetesRuntime:
    path = api.kubeconfig(tmp_path / "kubeconfig", token=token)
    options = ConnectOptions(
        kubeconfig=str(path),
        namespace=namespace,
        all_namespaces=all_namespaces,
        selector=selector,
        read_only=read_only,
    )
    target = resolve(options, environ={}, service_account_dir=tmp_path / "no-sa")
    record = sleeps if sleeps is not None else []

    async def fast_sleep(delay: float) -> None:
        record.append(delay)
        await asyncio.sleep(0.01)

    return KubernetesRuntime(
        target,
        via=via,
        fail_fast=fail_fast,
        divergence_check=0.05,
        reflector_options={"sleep": fast_sleep},
        # the node agents are tests/runtime/kubernetes/test_agent_reader.py's
        agents=agents,
    )


@contextlib.asynccontextmanager
async def running(api: ApiEmulator, tmp_path: Path, **kwargs: Any) -> AsyncIterator[Cluster]:
    sleeps: list[float] = []
    runtime = make_runtime(api, tmp_path, sleeps=sleeps, **kwargs)
    rec = Recorder()
    engine = Engine(runtime, [rec])
    task = asyncio.create_task(engine.run())
    try:
        # the runtime runs once the engine's manager does: the workers the tests probe through
        await until(lambda: runtime.pods_reflector is not None)
        assert runtime.pods_reflector is not None
        assert engine.manager is not None  # the property refuses while the engine is not running
        await asyncio.wait_for(runtime.pods_reflector.synced.wait(), 2)
        # both watches open: what the test changes from here on arrives as watch events
        await api.wait_for_watch("pods")
        await api.wait_for_watch("events")
        yield Cluster(api, runtime, engine, rec, sleeps)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


def probe(kind: str, *, period: int = 1, failure: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        kind: spec,
        "initialDelaySeconds": 0,
        "timeoutSeconds": 1,
        "periodSeconds": period,
        "successThreshold": 1,
        "failureThreshold": failure,
    }


# -- shadow attempts through each path -------------------------------------------------------


@pytest.mark.parametrize("via", ["direct", "port-forward", "proxy"])
async def test_shadow_attempts_through_each_via(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    echo_server: EchoServer,
    via: str,
) -> None:
    web = http_target.port
    tcp = echo_server.port
    api.add_pod(
        make_pod(
            "web",
            containers=[
                container(
                    "app",
                    ports=(web, tcp),
                    readiness=http_get_probe("/ready", web, period=1),
                    liveness=probe("tcpSocket", port=tcp),
                )
            ],
        )
    )
    api.map_port("web", web, web)
    api.map_port("web", tcp, tcp)
    async with running(api, tmp_path, via=via) as c:
        await until(lambda: bool(c.rec.of("ProbeAttempt", probe="readiness", outcome="success")))
        if via != "proxy":
            await until(lambda: bool(c.rec.of("ProbeAttempt", probe="liveness")))
    (first, *_) = c.rec.of("ProbeAttempt", probe="readiness")
    assert first.source == "shadow" and first.fields["via"] == via
    assert first.fields["handler"] == "http" and first.fields["statusCode"] == 200
    assert http_target.seen[0][1] == "/ready"
    assert http_target.seen[0][2]["User-Agent"].startswith("kube-probe/")
    forwards = api.count_requests(subresource="portforward")
    proxied = api.count_requests(subresource="proxy")
    # whatever the path, the target is named as the kubelet names it: the pod IP and its port,
    # not the loopback stand-in a port-forward or proxy listener was dialled on
    assert first.fields["target"] == f"http://127.0.0.1:{web}/ready"
    if via == "direct":
        assert (forwards, proxied) == (0, 0)
    elif via == "port-forward":
        assert forwards >= 2 and proxied == 0  # one stream per attempt, tcp included
        live = c.rec.of("ProbeAttempt", probe="liveness")[0]
        assert live.fields["outcome"] == "success" and live.fields["via"] == "port-forward"
        assert live.fields["target"] == f"127.0.0.1:{tcp}"
    else:
        assert proxied >= 1 and forwards == 0
        # a TCP probe cannot go through pods/proxy: said once, with the reason
        (skip,) = c.rec.of(NOT_RUN, probe="liveness")
        assert "HTTP probes only" in skip.fields["reason"]
        assert not c.rec.of("ProbeAttempt", probe="liveness")
    # the kubelet's side is there too, next to the shadow's
    started = c.rec.of("ContainerStarted", source="kubelet")
    assert started and started[0].fields["restartCount"] == 0


async def test_port_forward_close_framed_answer_is_judged_as_the_kubelet_sees_it(
    api: ApiEmulator, tmp_path: Path
) -> None:
    """containerd's CRI `portForward` holds a stream open up to a second after the pod closed
    its side, so a body framed by the close ends, through the forward, a second late: with
    timeoutSeconds 1 that read a timeout where the kubelet, dialling the pod, succeeds. And the
    pod is sent the Host the kubelet sends (its IP and port), not the loopback stand-in's."""
    hosts: list[str] = []

    async def close_framed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return  # a stream opened ahead of the attempt and closed unused
        hosts.extend(
            line.split(b":", 1)[1].strip().decode()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"host:")
        )
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nended by close")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(close_framed, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    api.add_pod(
        make_pod(
            "web",
            containers=[
                container("app", ports=(port,), readiness=http_get_probe("/", port, period=1))
            ],
        )
    )
    api.map_port("web", port, port)
    try:
        async with running(api, tmp_path, via="port-forward") as c:
            await until(lambda: len(c.rec.of("ProbeAttempt", probe="readiness")) >= 2, 6.0)
    finally:
        server.close()
    attempts = c.rec.of("ProbeAttempt", probe="readiness")
    assert {a.fields["outcome"] for a in attempts} == {"success"}, attempts[0].fields
    assert all(a.fields["latency_ms"] < 500 for a in attempts), [
        a.fields["latency_ms"] for a in attempts
    ]
    assert attempts[0].fields["output"] == "ended by close"
    assert set(hosts) == {f"127.0.0.1:{port}"}


async def test_the_shadow_goes_by_its_own_startup_verdict_not_the_kubelets(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """The kubelet's workers read Started from its status manager, set from their own startup
    results (`SetContainerStartup`). The shadow's must read their own too: following the
    observed `started: true`, its startup worker stopped before its own Success (seen on the
    real cluster as a divergence whenever the kubelet's tick came first)."""
    http_target.status = 500
    port = http_target.port
    api.add_pod(
        make_pod(
            "web",
            containers=[
                container(
                    "app",
                    ports=(port,),
                    startup=http_get_probe("/started", port, period=1, failure=30),
                    readiness=http_get_probe("/ready", port, period=1),
                )
            ],
        )
    )
    api.map_port("web", port, port)
    async with running(api, tmp_path, via="direct") as c:
        await until(lambda: len(c.rec.of("ProbeAttempt", probe="startup")) >= 2, 4.0)
        http_target.status = 200
        await until(lambda: bool(c.rec.of("ResultChanged", probe="startup", result="Success")), 4.0)
        await until(lambda: bool(c.rec.of("ProbeAttempt", probe="readiness")), 4.0)
    startup = c.rec.of("ProbeAttempt", probe="startup")
    # it kept probing, though the kubelet said started all along, until its own Success
    assert startup[0].fields["outcome"] == "failure" and startup[-1].fields["outcome"] == "success"


async def test_grpc_probe_through_port_forward(api: ApiEmulator, tmp_path: Path) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    class Health(health_pb2_grpc.HealthServicer):
        async def Check(self, request: Any, context: Any) -> Any:
            return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)

    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(Health(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        api.add_pod(
            make_pod("rpc", containers=[container("app", liveness=probe("grpc", port=9090))])
        )
        api.map_port("rpc", 9090, port)
        async with running(api, tmp_path, via="port-forward") as c:
            await until(lambda: bool(c.rec.of("ProbeAttempt", probe="liveness")))
        attempt = c.rec.of("ProbeAttempt", probe="liveness")[0]
        assert attempt.fields["handler"] == "grpc" and attempt.fields["outcome"] == "success"
        assert attempt.fields["via"] == "port-forward"
    finally:
        await server.stop(None)


async def test_exec_probe_runs_through_pods_exec(api: ApiEmulator, tmp_path: Path) -> None:
    api.add_pod(
        make_pod(
            "job",
            containers=[
                container(
                    "app",
                    readiness=probe("exec", command=["sh", "-c", "echo ok-$STAGE"]),
                    liveness=probe("exec", command=["sh", "-c", "echo bad; exit 2"]),
                    env={"STAGE": "prod"},
                )
            ],
        )
    )
    async with running(api, tmp_path, via="direct") as c:
        await until(
            lambda: (
                bool(c.rec.of("ProbeAttempt", probe="readiness"))
                and bool(c.rec.of("ProbeAttempt", probe="liveness"))
            )
        )
    ready = c.rec.of("ProbeAttempt", probe="readiness")[0]
    assert (ready.fields["handler"], ready.fields["outcome"]) == ("exec", "success")
    assert ready.fields["output"] == "ok-prod\n"
    live = c.rec.of("ProbeAttempt", probe="liveness")[0]
    assert live.fields["outcome"] == "failure" and live.fields["output"] == "bad\n"
    execs = [r for r in api.requests if r.subresource == "exec"]
    assert execs and execs[0].query["container"] == ["app"]
    # what each attempt's path really is (the engine labels all with runtime.via for now)
    spec = next(iter(c.engine.pods.values())).pod.containers[0]
    assert c.runtime.attempt_via(spec, ProbeType.LIVENESS) == "pods/exec"


# -- the kubelet's side ------------------------------------------------------------------------


async def test_observed_state_and_events_appear_as_kubelet_events(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    port = http_target.port
    pod = api.add_pod(
        make_pod(
            "web",
            containers=[
                container(
                    "app",
                    ports=(port,),
                    readiness=http_get_probe("/ready", port, period=1),
                    liveness=http_get_probe("/live", port, period=1),
                )
            ],
        )
    )
    async with running(api, tmp_path, via="direct") as c:
        await until(lambda: bool(c.rec.of("ProbeAttempt")))
        # the kubelet marks it not ready, then restarts it after a liveness failure
        api.edit_pod("web", lambda p: p["status"]["containerStatuses"][0].update(ready=False))
        msg = "Readiness probe failed: HTTP probe failed with statuscode: 503"
        api.record_event("web", "Unhealthy", msg)
        api.record_event("web", "Unhealthy", msg)  # a repeat: count 2, one more occurrence
        api.record_event("web", "Killing", "Container app failed liveness probe, will be restarted")
        last = {
            "terminated": {
                "exitCode": 137,
                "reason": "Error",
                "startedAt": "2025-01-01T00:00:00Z",
                "finishedAt": "2025-01-01T00:01:00Z",
            }
        }
        restarted = running_status("app", pod_name="web", restart_count=1, last_state=last)
        restarted["ready"] = False
        api.edit_pod("web", lambda p: p["status"].update(containerStatuses=[restarted]))
        uid = pod["metadata"]["uid"]
        api.record_event(
            "web",
            "BackOff",
            f"Back-off restarting failed container app in pod web_default({uid})",
        )
        await until(lambda: bool(c.rec.of("BackOff")))
        await until(lambda: len(c.rec.of("ContainerStarted")) == 2)
    unhealthy = c.rec.of("Unhealthy", source="kubelet")
    assert [e.fields["increment"] for e in unhealthy] == [1, 1]
    assert unhealthy[-1].fields["count"] == 2
    assert all(e.probe == "readiness" and e.container == "app" for e in unhealthy)
    (killing,) = c.rec.of("Killing", source="kubelet")
    assert killing.probe == "liveness" and killing.container == "app"
    # the first sight of the pod anchors the state, then the kubelet's change
    assert [e.fields["ready"] for e in c.rec.of("ReadyChanged", source="kubelet")] == [True, False]
    second = c.rec.of("ContainerStarted")[1]
    assert second.fields["restartCount"] == 1
    (exited,) = c.rec.of("ContainerExited", source="kubelet")
    assert (exited.fields["exitCode"], exited.fields["reason"]) == (137, "Error")
    # shadow and kubelet side by side in one stream
    assert {e.source for e in c.rec.events} == {"shadow", "kubelet"}


def web_pod(
    port: int, path: str = "/", liveness: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    """Pod "web": one container "app" with an HTTP readiness probe on `port` every second
    (and `liveness`, when given)."""
    probes: dict[str, Any] = {"readiness": http_get_probe(path, port, period=1)}
    if liveness is not None:
        probes["liveness"] = liveness
    return make_pod("web", containers=[container("app", ports=(port,), **probes)], **kw)


async def test_no_divergence_while_the_shadow_is_behind_its_ticks(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """An overloaded shadow's verdicts say nothing about the container: a disagreement is only
    counted once the prober runs on time again, and then from that moment."""
    port = http_target.port
    api.add_pod(web_pod(port, ready=False))
    async with running(api, tmp_path, via="direct") as c:
        c.engine.lateness = lambda: BEHIND + 1.0  # type: ignore[method-assign]
        await until(lambda: len(c.rec.of("ProbeAttempt")) >= 3, timeout=5)
        assert not c.rec.of("Divergence")
        caught_up = time.time()
        c.engine.lateness = lambda: 0.0  # type: ignore[method-assign]
        await until(lambda: bool(c.rec.of("Divergence")), timeout=5)
    (div,) = c.rec.of("Divergence")
    assert div.fields["since"] >= caught_up - 0.5


async def test_divergence_is_marked_and_cleared(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    port = http_target.port
    # the kubelet reports not ready while the server answers 200 to the shadow
    api.add_pod(web_pod(port, ready=False))
    async with running(api, tmp_path, via="direct") as c:
        await until(lambda: bool(c.rec.of("Divergence")), timeout=3)
        began = time.monotonic()
        api.edit_pod("web", lambda p: p["status"]["containerStatuses"][0].update(ready=True))
        await until(lambda: bool(c.rec.of("DivergenceCleared")))
        assert time.monotonic() - began < 0.5
    (div,) = c.rec.of("Divergence")
    assert (div.fields["kubelet"], div.fields["shadow"]) == ("not ready", "ready")
    assert div.probe == "readiness" and div.container == "app" and div.fields["via"] == "direct"
    assert "network path" in div.fields["likely"][0]
    assert div.t - div.fields["since"] > 1.0  # longer than one period
    assert "kubelet says not ready" in div.fields["message"]
    # agreeing from the start is no divergence: nothing before the first attempt counts
    first = c.rec.of("ProbeAttempt")[0]
    assert div.fields["since"] >= first.t


async def test_attempts_below_the_threshold_are_no_verdict_worker_go_doProbe(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """The shadow first sees a container the kubelet already calls Ready (its first attempt came
    before the watch brought the container), and the app starts failing just then. Below
    failureThreshold doProbe leaves the cache as it was (worker.go: "below threshold - leave the
    probe state unchanged"), so the shadow's "not ready" is its initial Failure, not an opinion:
    the kubelet, with a success behind it, stays Ready for three periods too. An e2e run reported
    that as a divergence for every flapping pod created at the app's phase change."""
    http_target.status = 503
    api.add_pod(web_pod(http_target.port, ready=True))
    async with running(api, tmp_path, via="direct") as c:
        await until(lambda: len(c.rec.of("ProbeAttempt")) >= 3, timeout=5)
        third = c.rec.of("ProbeAttempt")[2]
        assert not c.rec.of("Divergence")
        await until(lambda: bool(c.rec.of("Divergence")), timeout=6)
    (div,) = c.rec.of("Divergence")
    assert (div.fields["kubelet"], div.fields["shadow"]) == ("ready", "not ready")
    # counted from the attempt that reached the threshold, not from the first failure
    assert div.fields["since"] >= third.t - 0.05


async def test_a_divergence_is_read_afresh_before_it_is_reported(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API server that is shutting down closes its listener before its watches: the watch
    looks healthy while the kubelet's status writes are refused (the e2e fault run saw the
    kubelet's ready land 9 s late, over an apiserver restart). A due disagreement is read
    afresh first; while reads fail, the kubelet's view is stale and nothing is reported."""
    from probetui.runtime.kubernetes import divergence

    monkeypatch.setattr(divergence, "STATUS_SYNC_PERIOD", 1.0)
    api.add_pod(web_pod(http_target.port, ready=False))
    api.fail_next(3, 503, verb="get", resource="pods")
    async with running(api, tmp_path, via="direct") as c:
        await until(lambda: api.count_requests(verb="get", resource="pods") >= 3, timeout=10)
        refused_until = time.time()
        assert not c.rec.of("Divergence")
        await until(lambda: bool(c.rec.of("Divergence")), timeout=8)
    (div,) = c.rec.of("Divergence")
    # counted again from when the kubelet's view was fresh after the last refused read
    assert div.fields["since"] >= refused_until
    assert api.count_requests(verb="get", resource="pods") >= 4  # the read that confirmed it


# -- read-only ---------------------------------------------------------------------------------


MUST_NOT_RUN = "/tmp/probetui-read-only-must-not-run"


def _never_ran() -> bool:
    return not os.path.exists(MUST_NOT_RUN)


def _probed_everything(port: int) -> dict[str, Any]:
    return make_pod(
        "web",
        containers=[
            container(
                "app",
                ports=(port,),
                readiness=http_get_probe("/ready", port, period=1),
                liveness=probe("exec", command=["touch", MUST_NOT_RUN]),
                startup=probe("tcpSocket", port=port),
            )
        ],
    )


async def test_read_only_makes_no_request_but_get_list_watch(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    api.role = "view"
    api.add_pod(_probed_everything(http_target.port))
    api.map_port("web", http_target.port, http_target.port)
    async with running(api, tmp_path, read_only=True) as c:
        assert c.runtime.via == "port-forward"  # the default outside a cluster
        await until(lambda: len(c.rec.of(NOT_RUN)) == 3)
        api.edit_pod("web", lambda p: p["status"]["containerStatuses"][0].update(ready=False))
        api.record_event("web", "Unhealthy", "Liveness probe failed: boom")
        await until(lambda: bool(c.rec.of("Unhealthy")) and bool(c.rec.of("ReadyChanged")))
        # a user's "probe now" is refused too
        from probetui.keys import ProbeKey

        uid = c.api.get_pod("web")["metadata"]["uid"]  # type: ignore[index]
        assert not c.engine.probe_now(ProbeKey(uid, "app", ProbeType.LIVENESS))
        await asyncio.sleep(1.2)  # a full period: every worker has ticked at least once
    assert api.non_read_requests() == []
    assert api.count_requests(subresource="exec") == 0
    assert api.count_requests(subresource="portforward") == 0
    assert api.count_requests(subresource="proxy") == 0
    # nor a node list the view role would refuse: a locked shell leaves no 403 in the audit log
    assert api.count_requests(resource="nodes") == 0
    assert c.runtime.nodes.unreadable == "nodes not read in read-only mode"
    assert {r.method for r in api.requests} == {"GET"}
    assert {r.verb for r in api.requests} <= {"list", "watch", "get"}
    assert not c.rec.of("ProbeAttempt") and http_target.seen == []
    reasons = {e.probe: e.fields["reason"] for e in c.rec.of(NOT_RUN)}
    assert "read-only" in reasons["liveness"] and "exec" in reasons["liveness"]
    assert "read-only allows no port-forward" in reasons["readiness"]
    assert "read-only allows no port-forward" in reasons["startup"]
    assert _never_ran()


async def test_read_only_with_via_direct_probes_the_pod_ip_and_still_writes_nothing(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    api.role = "view"
    api.add_pod(_probed_everything(http_target.port))
    async with running(api, tmp_path, read_only=True, via="direct") as c:
        await until(lambda: bool(c.rec.of("ProbeAttempt", probe="readiness")))
        await until(lambda: bool(c.rec.of("ProbeSkipped", probe="startup")))
    assert api.non_read_requests() == []
    assert c.rec.of("ProbeAttempt", probe="readiness")[0].fields["via"] == "direct"
    # the kubelet reports the container started, but the shadow goes by its own startup
    # verdict (as the kubelet's workers go by theirs): one Success, then nothing to do
    assert [a.fields["outcome"] for a in c.rec.of("ProbeAttempt", probe="startup")] == ["success"]
    # startup decided: held until a new container (§5.16)
    assert c.rec.of("ProbeSkipped", probe="startup")[0].fields["reason"] == "on hold"
    (skip,) = c.rec.of(NOT_RUN)
    assert skip.probe == "liveness" and "exec" in skip.fields["reason"]


async def test_view_role_without_read_only_says_forbidden(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    api.role = "view"
    api.add_pod(_probed_everything(http_target.port))
    api.map_port("web", http_target.port, http_target.port)
    async with running(api, tmp_path, via="port-forward") as c:
        await until(
            lambda: (
                bool(c.rec.of("ProbeAttempt", probe="readiness"))
                and bool(c.rec.of("ProbeAttempt", probe="liveness"))
            )
        )
    ready = c.rec.of("ProbeAttempt", probe="readiness")[0]
    assert ready.fields["outcome"] == "error"  # not a failure of the container: not counted
    assert ready.fields["error"].startswith("forbidden:")
    assert "pods/portforward" in ready.fields["error"]
    live = c.rec.of("ProbeAttempt", probe="liveness")[0]
    assert live.fields["outcome"] == "error" and "forbidden" in live.fields["error"]
    assert "pods/exec" in live.fields["error"]
    # remembered: the retries and later attempts do not knock again (the startup and the
    # readiness probe each may, as they start together)
    assert api.count_requests(subresource="portforward") <= 2
    assert api.count_requests(subresource="exec") == 1
    assert not c.rec.of("ResultChanged", result="Failure", probe="liveness")
    assert _never_ran()


async def test_view_role_via_proxy_says_forbidden_from_the_first_attempt(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """The API server's 403 for pods/proxy is relayed to the prober like any answer, but it is
    not the container's: the attempt that met it is an error ("forbidden"), counting nothing,
    like every attempt after it, which does not knock again."""
    api.role = "view"
    port = http_target.port
    api.add_pod(web_pod(port))
    async with running(api, tmp_path, via="proxy") as c:
        await until(lambda: len(c.rec.of("ProbeAttempt")) >= 2, timeout=3)
    first, second = c.rec.of("ProbeAttempt")[:2]
    for attempt in (first, second):
        assert attempt.fields["outcome"] == "error", attempt.fields
        assert attempt.fields["error"].startswith("forbidden:")
        assert "pods/proxy" in attempt.fields["error"]
        assert attempt.fields["resultRun"] == 0  # discarded: no failure was counted
    assert api.count_requests(subresource="proxy") == 1


@pytest.mark.parametrize(
    ("version", "granted", "needs"),
    [
        # a websocket upgrade is a GET: authorized as get, nothing more, before 1.35
        ("v1.32.0", False, "RBAC needs get on {what}: Kubernetes 1.32 authorizes"),
        ("v1.34.3", False, "RBAC needs get on {what}: Kubernetes 1.34 authorizes"),
        # from 1.35 the registry also checks create (AuthorizePodWebsocketUpgradeCreatePermission)
        ("v1.35.0", True, "RBAC needs get and create on {what}: Kubernetes 1.35 also checks"),
    ],
)
async def test_forbidden_streams_say_what_rbac_the_servers_version_needs(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    version: str,
    granted: bool,
    needs: str,
) -> None:
    api.server_version = version
    api.role = "view"
    if granted:
        # get alone: enough before 1.35, refused by the create check from 1.35
        api.grant("get", "pods/exec")
        api.grant("get", "pods/portforward")
    api.add_pod(_probed_everything(http_target.port))
    api.map_port("web", http_target.port, http_target.port)
    async with running(api, tmp_path, via="port-forward") as c:
        await until(
            lambda: (
                bool(c.rec.of("ProbeAttempt", probe="readiness"))
                and bool(c.rec.of("ProbeAttempt", probe="liveness"))
            )
        )
    for probe_type, what in (("readiness", "pods/portforward"), ("liveness", "pods/exec")):
        error = c.rec.of("ProbeAttempt", probe=probe_type)[0].fields["error"]
        assert error.startswith("forbidden:") and needs.format(what=what) in error, error
        if not version.startswith("v1.35"):
            assert "create" not in error
        else:
            assert "AuthorizePodWebsocketUpgradeCreatePermission" in error
    # the version is asked once, with a GET, and only because of the refusal
    assert [r.method for r in api.requests if r.path.rstrip("/") == "/version"] == ["GET"]
    assert _never_ran()


async def test_get_on_the_subresource_suffices_for_websockets_before_1_35(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """pods/exec and pods/portforward over websockets are authorized as `get` up to 1.34."""
    api.server_version = "v1.34.0"
    api.role = "view"
    api.grant("get", "pods/exec")
    api.grant("get", "pods/portforward")
    port = http_target.port
    api.add_pod(web_pod(port, liveness=probe("exec", command=["true"])))
    api.map_port("web", http_target.port, http_target.port)
    async with running(api, tmp_path, via="port-forward") as c:
        await until(
            lambda: (
                bool(c.rec.of("ProbeAttempt", probe="readiness"))
                and bool(c.rec.of("ProbeAttempt", probe="liveness"))
            ),
            timeout=3,
        )
    for probe_type in ("readiness", "liveness"):
        attempt = c.rec.of("ProbeAttempt", probe=probe_type)[0]
        assert attempt.fields["outcome"] == "success", attempt.fields
    assert not [r for r in api.requests if r.path.rstrip("/") == "/version"]


@pytest.mark.parametrize("via", ["port-forward", "proxy"])
async def test_a_server_url_with_a_path_prefix_is_reached_on_every_path(
    tmp_path: Path, http_target: HttpTarget, via: str
) -> None:
    """Rancher's https://host/k8s/clusters/ID: list, watch, the streams and pods/proxy all go
    below the prefix, and the read-only guard (tested in test_guard) strips it the same way."""
    prefix = "/k8s/clusters/c-m-4xq7z"
    port = http_target.port
    async with ApiEmulator(path_prefix=prefix) as api:
        api.add_pod(web_pod(port, "/ready", liveness=probe("exec", command=["true"])))
        api.map_port("web", port, port)
        async with running(api, tmp_path, via=via) as c:
            await until(
                lambda: (
                    bool(c.rec.of("ProbeAttempt", probe="readiness", outcome="success"))
                    and bool(c.rec.of("ProbeAttempt", probe="liveness", outcome="success"))
                ),
                timeout=3,
            )
        assert not api.errors
    assert {r.path.startswith(prefix + "/") for r in api.requests} == {True}
    assert {r.subresource for r in api.requests} >= {
        "",
        "exec",
        "proxy" if via == "proxy" else "portforward",
    }


# -- connecting ---------------------------------------------------------------------------------


async def test_first_list_failures_are_one_line(api: ApiEmulator, tmp_path: Path) -> None:
    runtime = make_runtime(api, tmp_path, token="wrong-token", fail_fast=True)
    with pytest.raises(RuntimeFailure, match="credentials were refused"):
        await Engine(runtime).run(2)
    api.role = "none"
    runtime = make_runtime(api, tmp_path, fail_fast=True)
    with pytest.raises(RuntimeFailure, match=r'cannot list pods in namespace "default".*view'):
        await Engine(runtime).run(2)
    api.role = "admin"
    api.fail_next(3, 503, verb="list", resource="pods")
    runtime = make_runtime(api, tmp_path, fail_fast=True)
    with pytest.raises(RuntimeFailure, match="503"):
        await Engine(runtime).run(2)


async def test_unreachable_api_server_fails_fast_headless(tmp_path: Path) -> None:
    async with ApiEmulator() as gone:
        config = gone.kubeconfig(tmp_path / "kubeconfig")
    target = resolve(ConnectOptions(kubeconfig=str(config)), environ={})
    began = time.monotonic()
    with pytest.raises(RuntimeFailure) as err:
        await Engine(KubernetesRuntime(target, fail_fast=True)).run(5)
    assert time.monotonic() - began < 1.0
    assert "is the API server up" in str(err.value) and "\n" not in str(err.value)


async def test_the_ui_keeps_reconnecting_and_says_so(api: ApiEmulator, tmp_path: Path) -> None:
    api.add_pod(make_pod("web"))
    api.fail_next(3, 503, verb="list", resource="pods")
    said: list[str] = []
    sleeps: list[float] = []
    runtime = make_runtime(api, tmp_path, sleeps=sleeps)
    runtime.on_state = said.append
    rec = Recorder()
    task = asyncio.create_task(Engine(runtime, [rec]).run())
    try:
        await until(lambda: "web" in rec.pods)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert said[0].startswith("reconnecting: pods: API server answered 503")
    assert said[-1] == "" and runtime.state == ""
    assert runtime.source == "emulator/default"


async def test_watch_faults_inside_the_runtime_lose_nothing(
    api: ApiEmulator, tmp_path: Path
) -> None:
    for name in ("a", "b"):
        api.add_pod(make_pod(name))
    async with running(api, tmp_path, via="direct") as c:
        await api.wait_for_watch("pods")
        api.expire_watches("event")
        api.delete_pod("a")
        api.add_pod(make_pod("c"))
        await until(lambda: {e.pod.name for e in c.engine.pods.values()} == {"b", "c"})
        assert c.rec.pods["a"] is None
        api.cut_streams()
        api.delete_pod("b")
        await until(lambda: {e.pod.name for e in c.engine.pods.values()} == {"c"})
    started = c.rec.of("ContainerStarted")
    assert sorted(e.pod for e in started) == ["a", "b", "c"]  # each once


async def test_all_namespaces_and_selector(api: ApiEmulator, tmp_path: Path) -> None:
    api.add_pod(make_pod("web", labels={"app": "web"}))
    api.add_pod(make_pod("db", labels={"app": "db"}))
    api.add_pod(make_pod("web", namespace="shop", labels={"app": "web"}))
    async with running(api, tmp_path, all_namespaces=True, selector="app=web") as c:
        api.record_event("db", "Unhealthy", "Readiness probe failed: nope")
        api.record_event("web", "Unhealthy", "Readiness probe failed: 500")
        await until(lambda: bool(c.rec.of("Unhealthy")))
        await asyncio.sleep(0.1)
        assert c.runtime.source == "emulator/*"
    names = sorted((e.pod.namespace, e.pod.name) for e in c.engine.pods.values())
    assert names == [("default", "web"), ("shop", "web")]
    assert [e.pod for e in c.rec.of("Unhealthy")] == ["web"]  # db is not selected


# -- which kubelet version the probes carry ----------------------------------------------------


async def test_probes_carry_the_kubelet_version_of_the_pods_node(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """request.go / grpc.go: a kubelet's probes say `kube-probe/<its major.minor>`. Mid-upgrade
    nodes differ, so the shadow sends what the pod's own node runs (status.nodeInfo), not one
    version for the cluster."""
    web = http_target.port
    api.add_node("node-old", kubelet_version="v1.33.4")
    api.add_node("node-new", kubelet_version="v1.35.1-eks-3f2e1a")
    for name, node in (("old", "node-old"), ("new", "node-new")):
        api.add_pod(
            make_pod(
                name,
                node=node,
                containers=[
                    container("app", ports=(web,), readiness=http_get_probe(f"/{name}", web))
                ],
            )
        )
    async with running(api, tmp_path, via="direct") as c:
        await until(lambda: {p for _, p, _ in http_target.seen} >= {"/old", "/new"})
        assert c.runtime.nodes.unreadable is None
        # and each pod's workers play its own node's kubelet release (kubelet/profile.py)
        uids = {p.pod.name: uid for uid, p in c.runtime.pods.items()}
        played = {name: c.engine.manager.profile_of(uid).version for name, uid in uids.items()}
        assert played == {"old": "1.33", "new": "1.35"}
        # and the screen says which, and why (ui/describe.py kubelet_played)
        said = {
            p.pod.name: kubelet_played(c.runtime.configured_kubelet, c.runtime.node_kubelet(p.pod))
            for p in c.runtime.pods.values()
        }
        assert said == {
            "old": "kubelet 1.33 (node node-old)",
            "new": "kubelet 1.35 (node node-new)",
        }
    agents = {path: headers["User-Agent"] for _, path, headers in http_target.seen}
    assert agents == {"/old": "kube-probe/1.33", "/new": "kube-probe/1.35"}


async def test_the_release_played_is_said_once_headless_and_on_screen(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """Headless, one note says which kubelet release the probes play: their nodes' (counted),
    or, where nodes are not read, the configured one and why. A node outside the modelled
    releases plays the nearest, and the screen's words say what it runs."""
    web = http_target.port
    api.add_node("node-a", kubelet_version="v1.31.2")
    api.add_node("node-b", kubelet_version="v1.37.2")
    api.add_node("node-c", kubelet_version="v1.37.0")
    api.add_pod(make_pod("old", node="node-a", containers=[container("app", ports=(web,))]))
    notes: list[str] = []
    runtime = make_runtime(api, tmp_path, via="direct")
    runtime.on_note = notes.append
    runtime.configured_kubelet = "1.36"
    engine = Engine(runtime, [Recorder()], kube_version="1.36")
    task = asyncio.create_task(engine.run())
    try:
        await until(lambda: any(n.startswith("kubelet version") for n in notes))
        await until(lambda: bool(runtime.pods))
        (snap,) = runtime.pods.values()
        words = kubelet_played(runtime.configured_kubelet, runtime.node_kubelet(snap.pod))
        assert engine.manager.profile_of(snap.pod.uid).version == "1.33"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    (note,) = [n for n in notes if n.startswith("kubelet version")]
    assert note == (
        "kubelet version: each pod's probes play its node's release (kubelet 1.33 on 1 node, "
        "1.37 on 2 nodes), the configured kubelet 1.36 where a node's is not known"
    )
    assert words == "kubelet 1.33 (node node-a runs v1.31.2)"


async def test_read_only_plays_the_configured_release_and_says_why(
    api: ApiEmulator, tmp_path: Path
) -> None:
    """Read-only reads no node (the view role has none): every pod plays the configured
    release, and the note and the screen say so."""
    api.role = "view"
    api.add_node("node-b", kubelet_version="v1.37.2")
    api.add_pod(make_pod("web", node="node-b", containers=[container("app")]))
    notes: list[str] = []
    async with running(api, tmp_path, read_only=True, via="direct") as c:
        c.runtime.on_note = notes.append
        await c.runtime._read_nodes()
        (snap,) = c.runtime.pods.values()
        words = kubelet_played(c.runtime.configured_kubelet, c.runtime.node_kubelet(snap.pod))
        assert c.engine.manager.profile_of(snap.pod.uid).version == DEFAULT_KUBE_VERSION
    assert words == f"kubelet {DEFAULT_KUBE_VERSION} (configured: nodes not read in read-only mode)"
    assert notes == [
        "kubelet version: nodes not read in read-only mode; every pod's probes play the "
        f"configured kubelet {DEFAULT_KUBE_VERSION} and send its kube-probe/X.Y "
        "(--kubelet-version, or kubeletVersion in the config file)"
    ]
    assert api.count_requests(resource="nodes") == 0


async def test_nodes_the_view_role_cannot_read_leave_the_configured_version(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """The view ClusterRole has no nodes: the configured version stands in (the default
    here), the runtime says so once, and no node is asked for again."""
    api.role = "view"
    web = http_target.port
    api.add_node("node-1", kubelet_version="v1.31.0")
    api.add_pod(
        make_pod(
            "web", containers=[container("app", ports=(web,), readiness=http_get_probe("/r", web))]
        )
    )
    async with running(api, tmp_path, via="direct") as c:
        await until(lambda: len(http_target.seen) >= 2)
        assert c.runtime.nodes.unreadable == "nodes not readable (HTTP 403)"
    assert {h["User-Agent"] for _, _, h in http_target.seen} == {
        f"kube-probe/{DEFAULT_KUBE_VERSION}"
    }
    assert api.count_requests(resource="nodes") == 1


# -- a ReplicaSet's workload, confirmed (owners.py) --------------------------------------------


def _rs_pod(name: str, rs: str, hash_: str) -> dict[str, Any]:
    obj = make_pod(name, labels={"pod-template-hash": hash_})
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rs,
            "uid": f"uid-{rs}",
            "controller": True,
        }
    ]
    return obj


class OwnersClock:
    """The clock the runtime's ReplicaSet owners read (theirs to take: `ReplicaSetOwners(ns,
    clock)`), moved by the test: a minute passes at once."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def owners_clock(monkeypatch: pytest.MonkeyPatch) -> OwnersClock:
    from probetui.runtime.kubernetes import runtime
    from probetui.runtime.kubernetes.owners import ReplicaSetOwners

    clock = OwnersClock()
    monkeypatch.setattr(
        runtime, "ReplicaSetOwners", lambda namespace: ReplicaSetOwners(namespace, clock)
    )
    return clock


def _owners(c: Cluster) -> dict[str, tuple[str, str]]:
    return {s.pod.name: (s.pod.owner_kind, s.pod.owner_name) for s in c.runtime.pods.values()}


async def test_a_replicasets_own_owner_settles_what_its_pods_belong_to(
    api: ApiEmulator, tmp_path: Path, owners_clock: OwnersClock
) -> None:
    """From its name and the pods' hash, a ReplicaSet reads as a Deployment's; its own
    ownerReferences, read with one list (the view role may: a read), settle it. One made by
    hand, or orphaned by `kubectl delete deployment --cascade=orphan`, is its own workload."""
    api.role = "view"
    api.add_replicaset("web-7d9f", owner=("Deployment", "web"))
    api.add_replicaset("orphan-5c6b")  # its Deployment deleted, the ReplicaSet kept
    api.add_pod(_rs_pod("web-7d9f-a", "web-7d9f", "7d9f"))
    api.add_pod(_rs_pod("orphan-5c6b-a", "orphan-5c6b", "5c6b"))
    async with running(api, tmp_path, via="direct", read_only=True) as c:
        await until(lambda: _owners(c).get("orphan-5c6b-a") == ("ReplicaSet", "orphan-5c6b"))
        assert _owners(c)["web-7d9f-a"] == ("Deployment", "web")
        # a new ReplicaSet (a rollout) is read when its first pod comes, at most once a minute
        owners_clock.t += AGAIN_AFTER
        api.add_replicaset("web-8e0a", owner=("Deployment", "web"))
        api.add_pod(_rs_pod("web-8e0a-a", "web-8e0a", "8e0a"))
        await until(lambda: ("default", "web-8e0a") in c.runtime.owners.owners)
        assert _owners(c)["web-8e0a-a"] == ("Deployment", "web")
        assert c.runtime.owners.lists == 2
    assert api.non_read_requests() == []


async def test_replicasets_that_cannot_be_read_leave_the_guess_from_the_name(
    api: ApiEmulator, tmp_path: Path, owners_clock: OwnersClock
) -> None:
    """A user who may read pods and events but not ReplicaSets: one refused list, remembered,
    never asked again; the pods keep the Deployment their names give, and nothing else moves."""
    api.role = "none"
    for verb in ("get", "list", "watch"):
        api.grant(verb, "pods")
        api.grant(verb, "events")
    api.add_replicaset("orphan-5c6b")
    api.add_pod(_rs_pod("orphan-5c6b-a", "orphan-5c6b", "5c6b"))
    async with running(api, tmp_path, via="direct", read_only=True) as c:
        await until(lambda: c.runtime.owners.unreadable is not None)
        owners_clock.t += AGAIN_AFTER  # even when due again: not asked
        api.edit_pod("orphan-5c6b-a", lambda p: p["metadata"]["labels"].update(x="1"))
        await until(lambda: "x" in c.runtime.pods[next(iter(c.runtime.pods))].pod.labels)
        assert _owners(c)["orphan-5c6b-a"] == ("Deployment", "orphan")
    assert "403" in (c.runtime.owners.unreadable or "")
    assert api.count_requests(resource="replicasets") == 1
