"""The demo manifest: it parses and validates, its ports are free and its own, its probe
settings produce the behaviour each pod is there to show, and every container actually runs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from probetui.probe.base import Attempt, Result
from probetui.probe.exec import expand_command, static_env
from probetui.probe.util import resolve_container_port
from probetui.prober.handlers import HandlerRunner
from probetui.prober.status import PodStatus
from probetui.runtime.demo import DEMO_NAMESPACE, demo_manifest_text, demo_port_names, load_demo
from probetui.runtime.demo.manifest import template_text
from probetui.spec.model import Container, Pod, ProbeType
from probetui.spec.parse import parse_pods

PODS = (
    "web-flap-ft1",
    "web-flap-ft3",
    "slow-guarded",
    "slow-unguarded",
    "grpc-flip",
    "tcp-cache",
    "exec-file",
    "http-redirect",
    "http-timeout",
)
SERVICES = ("-m", "probetui.runtime.demo.services")


def _by_name(pods: list[Pod]) -> dict[str, Container]:
    return {pod.name: pod.containers[0] for pod in pods}


def _arg(container: Container, option: str) -> float:
    return float(container.args[container.args.index(option) + 1])


def _ports(pods: list[Pod]) -> set[int]:
    return {p.container_port for pod in pods for c in pod.containers for p in c.ports}


def test_the_demo_has_its_pods_in_namespace_demo_each_with_one_container() -> None:
    pods = load_demo()
    assert tuple(pod.name for pod in pods) == PODS
    for pod in pods:
        assert pod.namespace == DEMO_NAMESPACE == "demo"
        assert pod.restart_policy == "Always"
        assert pod.termination_grace_period_seconds == 5
        assert pod.labels["app.kubernetes.io/part-of"] == "probetui-demo"
        assert pod.labels["app.kubernetes.io/instance"] == pod.name
        assert len(pod.containers) == 1
        assert pod.source.startswith("demo, document ")


def test_every_container_runs_the_demo_services_with_the_given_python() -> None:
    for pod in load_demo():
        assert pod.containers[0].command == (sys.executable, *SERVICES)
    odd = '/opt/my "python"/bin/python3'
    for pod in load_demo(python=odd):
        assert pod.containers[0].command == (odd, *SERVICES)


def test_two_demos_get_disjoint_ports() -> None:
    first, second = load_demo(), load_demo()
    assert len(_ports(first)) == len(demo_port_names()) == 8
    assert _ports(first).isdisjoint(_ports(second))


def test_ports_can_be_fixed_by_pod_name() -> None:
    pods = load_demo(ports={"tcp-cache": 16379, "grpc-flip": 15051})
    containers = _by_name(pods)
    assert containers["tcp-cache"].port_by_name("cache") == 16379
    assert containers["grpc-flip"].port_by_name("grpc") == 15051
    assert "16379" in containers["tcp-cache"].args


@pytest.mark.parametrize(
    ("ports", "message"),
    [
        ({"web": 8080}, "no demo pod listens under the name 'web'"),
        ({"exec-file": 8080}, "no demo pod listens under the name 'exec-file'"),
        ({"tcp-cache": 0}, "port for 'tcp-cache' must be 1-65535"),
        ({"tcp-cache": 9000, "grpc-flip": 9000}, "two demo pods cannot share one port"),
    ],
)
def test_bad_fixed_ports_are_refused(ports: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_demo(ports=ports)


def test_probes_use_named_ports_that_resolve_to_the_declared_ports() -> None:
    for pod in load_demo():
        container = pod.containers[0]
        declared = {p.container_port for p in container.ports}
        for probe_type in ProbeType:
            probe = container.probe(probe_type)
            if probe is None:
                continue
            if probe.http_get or probe.tcp_socket:
                action = probe.http_get or probe.tcp_socket
                assert action is not None
                assert isinstance(action.port, str), f"{pod.name} {probe_type}: use the port name"
                assert resolve_container_port(action.port, container) in declared
            if probe.grpc:
                # gRPC probes take a number only (no named ports in the API)
                assert probe.grpc.port in declared


def test_probe_settings_show_what_each_pod_is_for() -> None:
    c = _by_name(load_demo(health_file="/tmp/probetui-demo-test/healthy"))
    L, R, S = ProbeType.LIVENESS, ProbeType.READINESS, ProbeType.STARTUP

    for name, threshold in (("web-flap-ft1", 1), ("web-flap-ft3", 3)):
        ready = c[name].probe(R)
        assert ready is not None and ready.http_get is not None
        assert ready.http_get.path == "/ready"
        assert ready.failure_threshold == threshold
        assert (_arg(c[name], "--healthy"), _arg(c[name], "--failing")) == (20, 10)

    guarded, unguarded = c["slow-guarded"], c["slow-unguarded"]
    start = _arg(guarded, "--start-after")
    assert start == _arg(unguarded, "--start-after") == 25
    startup = guarded.probe(S)
    assert startup is not None
    assert startup.period_seconds * startup.failure_threshold > start + 10
    live = unguarded.probe(L)
    assert live is not None and unguarded.probe(S) is None
    # killed long before it listens, every time
    assert live.initial_delay_seconds + live.period_seconds * live.failure_threshold < start / 2

    grpc_ready, grpc_live = c["grpc-flip"].probe(R), c["grpc-flip"].probe(L)
    assert grpc_ready is not None and grpc_ready.grpc is not None
    assert grpc_ready.grpc.service == "demo.Orders"
    assert grpc_ready.failure_threshold == 1
    assert grpc_live is not None and grpc_live.grpc is not None
    assert not grpc_live.grpc.service

    tcp_ready = c["tcp-cache"].probe(R)
    assert tcp_ready is not None and tcp_ready.tcp_socket is not None

    worker = c["exec-file"]
    exec_live = worker.probe(L)
    assert exec_live is not None and exec_live.exec is not None
    assert exec_live.exec.command == ("cat", "$(HEALTH_FILE)")
    assert worker.literal_env()["HEALTH_FILE"] == "/tmp/probetui-demo-test/healthy"
    assert _arg(worker, "--remove-after") == 60

    redirect = c["http-redirect"].probe(R)
    assert redirect is not None and redirect.http_get is not None

    timeout = c["http-timeout"].probe(R)
    assert timeout is not None and timeout.timeout_seconds == 1
    assert _arg(c["http-timeout"], "--delay") > timeout.timeout_seconds

    for container in c.values():
        for probe_type in ProbeType:
            probe = container.probe(probe_type)
            # short periods: every behaviour shows within about a minute
            assert probe is None or probe.period_seconds <= 10


def test_manifest_text_is_filled_in_and_parses_to_the_same_pods() -> None:
    assert "{{" in template_text()
    ports = dict(zip(demo_port_names(), range(20001, 20009), strict=True))
    text = demo_manifest_text(ports=ports, health_file="/tmp/x/healthy")
    assert "{{" not in text and "}}" not in text
    assert parse_pods(text, source="demo") == load_demo(ports=ports, health_file="/tmp/x/healthy")


def test_each_demo_gets_a_health_file_of_its_own() -> None:
    def health_file(pods: list[Pod]) -> str:
        return _by_name(pods)["exec-file"].literal_env()["HEALTH_FILE"]

    first, second = health_file(load_demo()), health_file(load_demo())
    assert first != second
    assert Path(first).name == "healthy"


# What the first attempt of each probe gives right after the containers start; it is what the
# demo shows in its first seconds (timings in the manifest take it from there).
FIRST_ATTEMPTS = {
    ("web-flap-ft1", ProbeType.READINESS): Result.SUCCESS,
    ("web-flap-ft1", ProbeType.LIVENESS): Result.SUCCESS,
    ("web-flap-ft3", ProbeType.READINESS): Result.SUCCESS,
    ("web-flap-ft3", ProbeType.LIVENESS): Result.SUCCESS,
    ("slow-guarded", ProbeType.STARTUP): Result.FAILURE,
    ("slow-guarded", ProbeType.LIVENESS): Result.FAILURE,
    ("slow-guarded", ProbeType.READINESS): Result.FAILURE,
    ("slow-unguarded", ProbeType.LIVENESS): Result.FAILURE,
    ("grpc-flip", ProbeType.READINESS): Result.SUCCESS,
    ("grpc-flip", ProbeType.LIVENESS): Result.SUCCESS,
    ("tcp-cache", ProbeType.READINESS): Result.SUCCESS,
    ("tcp-cache", ProbeType.LIVENESS): Result.SUCCESS,
    ("exec-file", ProbeType.LIVENESS): Result.SUCCESS,
    ("http-redirect", ProbeType.READINESS): Result.WARNING,
    ("http-timeout", ProbeType.READINESS): Result.FAILURE,
}


async def _start(container: Container) -> asyncio.subprocess.Process:
    # as the kubelet and the local runtime do: literal env on top, $(VAR) expanded in argv
    env = static_env(container.env)
    argv = expand_command([*container.command, *container.args], env)
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, **env},
    )


async def _end(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 1.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


async def test_every_demo_container_starts_and_its_probes_see_what_the_pod_shows(
    tmp_path: Path,
) -> None:
    health = tmp_path / "healthy"
    pods = load_demo(health_file=str(health))
    procs: list[asyncio.subprocess.Process] = []
    try:
        for pod in pods:
            procs.append(await _start(pod.containers[0]))
        for pod, proc in zip(pods, procs, strict=True):
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 5.0)
            assert line, f"{pod.name} did not start"

        runner = HandlerRunner()
        status = PodStatus(pod_ip="127.0.0.1")

        async def attempt(pod: Pod, probe_type: ProbeType) -> Attempt:
            container = pod.containers[0]
            probe = container.probe(probe_type)
            assert probe is not None
            return await runner(probe_type, probe, pod, container, status)

        by_name = {pod.name: pod for pod in pods}
        keys = list(FIRST_ATTEMPTS)
        attempts = await asyncio.gather(*(attempt(by_name[n], t) for n, t in keys))
        got = dict(zip(keys, attempts, strict=True))
        assert {k: a.result for k, a in got.items()} == FIRST_ATTEMPTS
        for pod in pods:
            container = pod.containers[0]
            probed = {t for (n, t) in FIRST_ATTEMPTS if n == pod.name}
            assert probed == {t for t in ProbeType if container.probe(t) is not None}

        assert "connect: connection refused" in got["slow-unguarded", ProbeType.LIVENESS].output
        assert got["http-redirect", ProbeType.READINESS].output.startswith(
            "Probe terminated redirects, Response body: Found: http://127.0.0.2:"
        )
        assert got["http-timeout", ProbeType.READINESS].timed_out
        assert got["exec-file", ProbeType.LIVENESS].output == "ok\n"
        assert got["exec-file", ProbeType.LIVENESS].target == f"cat {health}"
    finally:
        await asyncio.gather(*(_end(proc) for proc in procs))
    assert all(proc.returncode == 0 for proc in procs)
    assert not health.exists()
