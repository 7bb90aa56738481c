"""Serve the standard gRPC health service, one named service flipping to NOT_SERVING on a schedule.

The server as a whole ("") stays SERVING."""

from __future__ import annotations

import os

# gRPC core logs to stderr on its own (a failed bind, for one); the service says it in one line.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import asyncio

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio

from probetui.runtime.demo.common import (
    LOOPBACK,
    PortTaken,
    check_port_free,
    log,
    sleep_or_stop,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

# how long the server may take to finish calls in flight when asked to stop
_STOP_GRACE = 0.5


def _name(status: int | None) -> str:
    if status is None:
        return "NOT_FOUND"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(status)


class _LoggingHealth(health_aio.HealthServicer):
    """Extends the reference servicer, with a log line per Check."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: dict[str, int] = {"": SERVING}

    async def set(self, service: str, status: int) -> None:  # type: ignore[override]
        self.statuses[service] = status
        await super().set(service, status)

    async def Check(  # type: ignore[override]
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        log(f'Check service="{request.service}" -> {_name(self.statuses.get(request.service))}')
        return await super().Check(request, context)


async def run_grpc(
    port: int, service: str, serving: float, not_serving: float, stop: asyncio.Event
) -> int:
    check_port_free(port)
    # grpcio sets SO_REUSEPORT by default, which would let a second demo share the port silently
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    health = _LoggingHealth()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    try:
        bound = server.add_insecure_port(f"{LOOPBACK}:{port}")
    except RuntimeError:
        raise PortTaken(
            f"port {port} is taken: gRPC could not bind {LOOPBACK}:{port} "
            "(stop what listens there, or run the demo again to get fresh ports)"
        ) from None
    await server.start()
    try:
        await health.set(service, SERVING)
        flips = f"NOT_SERVING for {not_serving:g}s every {serving + not_serving:g}s"
        log(
            f'grpc: listening on {LOOPBACK}:{bound}; "" is SERVING; "{service}" is SERVING, '
            + (flips if not_serving > 0 else "always")
        )
        while not_serving > 0:
            if await sleep_or_stop(stop, serving):
                break
            await health.set(service, NOT_SERVING)
            log(f'"{service}" -> NOT_SERVING for {not_serving:g}s (simulated dependency outage)')
            if await sleep_or_stop(stop, not_serving):
                break
            await health.set(service, SERVING)
            log(f'"{service}" -> SERVING')
        await stop.wait()
    finally:
        await health.enter_graceful_shutdown()
        await server.stop(_STOP_GRACE)
    return 0
