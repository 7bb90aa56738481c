"""Which handler module the prober's `HandlerRunner` runs a gRPC probe with, and what that costs
in imports: the lean one by default (`probetui.probe.grpc_lean`), grpcio's reference on request.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from probetui.probe import grpc as grpc_reference
from probetui.probe import grpc_lean
from probetui.probe.base import Attempt, Result
from probetui.prober.handlers import HandlerRunner
from probetui.prober.status import PodStatus
from probetui.spec.model import Container, GRPCAction, Pod, Probe, ProbeType


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


@pytest.mark.parametrize(("impl", "expected"), [(None, "lean"), ("grpcio", "grpcio")])
async def test_grpc_impl_picks_the_handler(
    monkeypatch: pytest.MonkeyPatch, impl: str | None, expected: str
) -> None:
    """The lean handler unless `grpc_impl="grpcio"`; either gets the pod IP, the port, the
    service, the timeout and the kubelet version, and the lean one the runner's loop."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(grpc_lean, "probe", _recorder(calls, "lean"))
    monkeypatch.setattr(grpc_reference, "probe", _recorder(calls, "grpcio"))
    loop = asyncio.get_running_loop()
    runner = HandlerRunner(kube_version="1.31", loop=loop)
    if impl is not None:
        runner.grpc_impl = impl
    probe, pod, container, status = _grpc_pod()
    attempt = await runner(ProbeType.READINESS, probe, pod, container, status)
    assert attempt.output == "service healthy"
    (call,) = calls
    assert call["impl"] == expected
    assert call["args"] == ("127.0.0.1", 9090, "db", 2.0)
    assert call["kube_version"] == "1.31"
    if expected == "lean":
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
