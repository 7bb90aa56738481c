"""Run a probe's handler against a container: `prober.runProbe` (spec 9.3, 13.1, 14.1, 15).

Builds the target from the probe as written and the pod status (the pod IP), asks the runtime
how to reach it, then runs exactly one handler attempt. Handler modules are imported on first
use so that `probetui check` loads only the one it needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt, Result
from probetui.probe.util import ReachError, resolve_container_port
from probetui.prober.prober import ProbeOutcome, missing_handler, run_probe_with_retries
from probetui.prober.status import PodStatus
from probetui.spec.model import (
    Container,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)

# How the runtime turns (pod, container, host, port) into an address to dial: the pod IP as
# is, a port-forward listener, or loopback for the local runtime.
Reach = Callable[[Pod, Container, str, int], Awaitable[tuple[str, int]]]


@dataclass(slots=True)
class HandlerRunner:
    reach: Reach | None = None
    # the runtime's way to run a command "in the container"; None runs it as a local process
    exec_for: Callable[[Pod, Container], object] | None = None
    kube_version: str = DEFAULT_KUBE_VERSION

    async def _address(
        self, pod: Pod, container: Container, host: str, port: int
    ) -> tuple[str, int]:
        if self.reach is None:
            return host, port
        return await self.reach(pod, container, host, port)

    async def __call__(
        self, probe_type: ProbeType, probe: Probe, pod: Pod, container: Container, status: PodStatus
    ) -> Attempt:
        handler = probe.handler
        timeout = float(probe.timeout_seconds)
        try:
            if isinstance(handler, ExecAction):
                from probetui.probe import exec as exec_probe

                # every declared var counts, valueFrom ones as "" (EnvVarsToMap)
                env = exec_probe.static_env(container.env)
                argv = exec_probe.expand_command(handler.command, env)
                runner = self.exec_for(pod, container) if self.exec_for else None
                return await exec_probe.probe(argv, timeout, runner)  # type: ignore[arg-type]
            if isinstance(handler, HTTPGetAction):
                from probetui.probe import http

                port = resolve_container_port(handler.port, container)
                host, port = await self._address(
                    pod, container, handler.host or status.pod_ip, port
                )
                url = http.format_url(handler.scheme.lower(), host, port, handler.path)
                headers = [(h.name, h.value) for h in handler.http_headers]
                return await http.probe(url, headers, timeout, kube_version=self.kube_version)
            if isinstance(handler, TCPSocketAction):
                from probetui.probe import tcp

                port = resolve_container_port(handler.port, container)
                host, port = await self._address(
                    pod, container, handler.host or status.pod_ip, port
                )
                return await tcp.probe(host, port, timeout)
            if isinstance(handler, GRPCAction):
                from probetui.probe import grpc

                # the host is always the pod IP; gRPC has no host field (spec 15.1)
                host, port = await self._address(pod, container, status.pod_ip, handler.port)
                return await grpc.probe(
                    host, port, handler.service or "", timeout, kube_version=self.kube_version
                )
        except ReachError as e:
            # (Unknown, err): retried, then discarded by the worker (spec 16.4)
            return Attempt(probe.handler_name or "none", "", Result.UNKNOWN, error=str(e))
        return missing_handler(pod, container)

    async def run_probe(self, worker: object, status: PodStatus) -> ProbeOutcome:
        """The manager's RunProbe: `prober.probe` for one worker."""
        from probetui.prober.worker import Worker

        assert isinstance(worker, Worker)
        return await run_probe_with_retries(
            self, worker.probe_type, worker.spec, worker.pod, worker.container, status
        )
