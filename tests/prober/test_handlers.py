"""Which handler module the prober's `HandlerRunner` runs a gRPC probe with, and what that costs
in imports: the lean one by default (`probetui.probe.grpc_lean`), grpcio's reference on request.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from probetui.probe import grpc_lean, http_lean, tcp
from probetui.probe.base import Attempt, Result
from probetui.prober.handlers import HandlerRunner
from probetui.prober.prober import retry_on_error
from probetui.prober.results import ResultsManager
from probetui.prober.status import PodStatus
from probetui.prober.worker import Worker
from probetui.spec.model import (
    Container,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)


def _grpc_pod() -> tuple[Probe, Pod, Container, PodStatus]:
    probe = Probe(grpc=GRPCAction(port=9090, service="db"), timeout_seconds=2)
    container = Container("app", readiness_probe=probe)
    pod = Pod("p", containers=(container,))
    return probe, pod, container, PodStatus(pod_ip="127.0.0.1")


def _recorder(calls: list[dict[str, Any]], name: str) -> Any:
    async def probe(*args: Any, **kwargs: Any) -> Attempt:
        calls.append({"impl": name, "args": args, **kwargs})
        return Attempt("grpc", "127.0.0.1:9090", Result.SUCCESS, "service healthy")

    return probe


async def test_the_grpc_handler_gets_the_probe_and_the_runners_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gRPC handler gets the pod IP, the port, the service, the timeout, the kubelet
    version and the runner's loop."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(grpc_lean, "probe", _recorder(calls, "lean"))
    loop = asyncio.get_running_loop()
    runner = HandlerRunner(kube_version="1.31", loop=loop)
    probe, pod, container, status = _grpc_pod()
    attempt = await runner(ProbeType.READINESS, probe, pod, container, status)
    assert attempt.output == "service healthy"
    (call,) = calls
    assert call["impl"] == "lean"
    assert call["args"] == ("127.0.0.1", 9090, "db", 2.0)
    assert call["kube_version"] == "1.31"
    assert call["loop"] is loop


def test_the_lean_grpc_handler_imports_no_grpcio() -> None:
    """What the engine loads to run a gRPC probe leaves grpcio (and its threads and memory)
    out of the process."""
    code = (
        "import sys; import probetui.engine, probetui.prober.handlers, probetui.probe.grpc_lean; "
        "print(sorted(m for m in sys.modules if m == 'grpc' or m.startswith('grpc.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def _network_probes() -> list[Probe]:
    return [
        Probe(http_get=HTTPGetAction(port=8080, path="/healthz"), timeout_seconds=3),
        Probe(tcp_socket=TCPSocketAction(port=8081), timeout_seconds=3),
        Probe(grpc=GRPCAction(port=9090, service="db"), timeout_seconds=3),
        # a port name the container does not declare: (Unknown, err), retried (§16.4)
        Probe(http_get=HTTPGetAction(port="web"), timeout_seconds=3),
    ]


@pytest.mark.parametrize("index", range(4))
async def test_run_probe_makes_the_attempt_call_makes(
    monkeypatch: pytest.MonkeyPatch, index: int
) -> None:
    """The manager's RunProbe (`run_probe`, which hands the worker the handler's own attempt
    when nothing is dialled in between) calls each handler as `HandlerRunner.__call__` does,
    and maps what it returns the same way: prober.go runProbe and runProbeWithRetries."""
    calls: list[dict[str, Any]] = []
    for module, name in ((http_lean, "http"), (tcp, "tcp"), (grpc_lean, "grpc")):
        monkeypatch.setattr(module, "probe", _recorder(calls, name))
    loop = asyncio.get_running_loop()
    runner = HandlerRunner(kube_version="1.33", kube_version_for=lambda pod: "1.34", loop=loop)
    probe = _network_probes()[index]
    container = Container("app", readiness_probe=probe)
    pod = Pod("p", uid="u", containers=(container,))
    status = PodStatus(pod_ip="127.0.0.1")
    worker = Worker(pod, container, ProbeType.READINESS, ResultsManager())
    outcome = await runner.run_probe(worker, status)
    by_run_probe = list(calls)
    calls.clear()
    expected = await retry_on_error(
        ProbeType.READINESS,
        lambda: runner(ProbeType.READINESS, probe, pod, container, status),
    )
    assert by_run_probe == calls
    assert outcome == expected
    if index == 3:
        assert not calls and len(outcome.attempts) == 3
        assert outcome.error is not None and '"web"' in outcome.error
    else:
        assert len(calls) == 1 and calls[0].get("loop") is loop
