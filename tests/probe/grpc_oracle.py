"""Runs one gRPC health attempt, `pkg/probe/grpc` (docs/kubelet-behaviour.md §15.1-15.2), on
grpcio: the tests' oracle, the reference the product's handler (`probetui.probe.grpc_lean`) is
held to. It is not part of the product: `tests/probe/test_grpc.py` runs both on every case and
compares their Attempts.

Like the kubelet: a new connection per attempt, a blocking dial and then one Health/Check call,
both inside one deadline of `timeout` seconds, and every outcome a Failure or Success with the
kubelet's own output text (the handler never returns an error).

grpcio cannot skip certificate verification, which `mode: TLS` (KEP-4939, InsecureSkipVerify)
needs. For TLS the channel therefore talks plaintext HTTP/2 to a loopback bridge owned by this
attempt, and the bridge dials the target with the ProbeDialer and a TLS client that verifies
nothing, offers ALPN "h2" and sends SNI only for host names, as Go's crypto/tls does. Any
certificate is accepted (self-signed, expired, wrong name); the cost is one loopback listener per
TLS attempt. Without TLS, grpcio dials by itself.
"""

from __future__ import annotations

import os

# gRPC core logs connection failures to stderr; a probe reports them itself. Set before grpc
# initialises so a user's explicit GRPC_VERBOSITY still wins.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import asyncio
import contextlib
import ssl
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from probetui.probe import tcp
from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt, Result, user_agent
from probetui.probe.gotext import (
    GRPC_HEALTHY,
    grpc_connect_error,
    grpc_connect_timeout,
    grpc_rpc_error,
    grpc_rpc_timeout,
    grpc_unhealthy,
    grpc_unimplemented,
    join_host_port,
)

# Go's codes.Code.String() for each status, as `status.Error` prints it
_GO_CODE_NAMES = {
    grpc.StatusCode.OK: "OK",
    grpc.StatusCode.CANCELLED: "Canceled",
    grpc.StatusCode.UNKNOWN: "Unknown",
    grpc.StatusCode.INVALID_ARGUMENT: "InvalidArgument",
    grpc.StatusCode.DEADLINE_EXCEEDED: "DeadlineExceeded",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.PERMISSION_DENIED: "PermissionDenied",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "ResourceExhausted",
    grpc.StatusCode.FAILED_PRECONDITION: "FailedPrecondition",
    grpc.StatusCode.ABORTED: "Aborted",
    grpc.StatusCode.OUT_OF_RANGE: "OutOfRange",
    grpc.StatusCode.UNIMPLEMENTED: "Unimplemented",
    grpc.StatusCode.INTERNAL: "Internal",
    grpc.StatusCode.UNAVAILABLE: "Unavailable",
    grpc.StatusCode.DATA_LOSS: "DataLoss",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthenticated",
}


def _status_name(status: int) -> str:
    # protobuf-go prints an unknown enum value as its number
    try:
        return health_pb2.HealthCheckResponse.ServingStatus.Name(status)
    except ValueError:
        return str(status)


class _TLSBridge:
    """Runs a loopback listener whose every connection is relayed to host:port over TLS, verifying
    nothing (InsecureSkipVerify). It lives for one attempt; `deadline` is that attempt's."""

    def __init__(self, host: str, port: int, deadline: float) -> None:
        self._host = host
        self._port = port
        self._deadline = deadline
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        # grpc-go's TLS credentials: TLS 1.2 or later, ALPN h2
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["h2"])
        self._context = context
        # Go sends SNI only for names, never for an IP address
        literal = host == "" or tcp.is_ip_literal(host)
        self._server_hostname = "" if literal else host

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The relay runs in a task of our own: cancelling the task asyncio.start_server makes for
        # a coroutine callback gets logged as an error on Python 3.11.
        task = asyncio.ensure_future(self._relay(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _relay(
        self, down_reader: asyncio.StreamReader, down_writer: asyncio.StreamWriter
    ) -> None:
        up_writer: asyncio.StreamWriter | None = None
        try:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                return
            sock = await tcp.dial(self._host, self._port, remaining)
            try:
                up_reader, up_writer = await asyncio.open_connection(
                    sock=sock,
                    ssl=self._context,
                    server_hostname=self._server_hostname,
                    ssl_handshake_timeout=max(self._deadline - time.monotonic(), 0.001),
                )
            except BaseException:
                sock.close()
                raise
            ssl_object = up_writer.get_extra_info("ssl_object")
            # grpc-go refuses a TLS server that does not select h2 by ALPN
            if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
                return
            pumps = [
                asyncio.ensure_future(_pump(down_reader, up_writer)),
                asyncio.ensure_future(_pump(up_reader, down_writer)),
            ]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except (OSError, ssl.SSLError, TimeoutError, tcp.DialError):
            # Dropping the plaintext leg is how grpcio learns the dial failed; it retries with
            # back-off until the deadline, as grpc-go does with a blocking dial.
            pass
        finally:
            for w in (up_writer, down_writer):
                if w is not None:
                    w.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, ssl.SSLError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()


def _rpc_error_text(exc: grpc.aio.AioRpcError, timeout: float) -> str:
    code = exc.code()
    message = exc.details() or ""
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return grpc_unimplemented(message)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return grpc_rpc_timeout(timeout)
    # grpc-go's status error: `rpc error: code = <Code> desc = <message>`
    name = _GO_CODE_NAMES.get(code, "Unknown")
    return grpc_rpc_error(f"rpc error: code = {name} desc = {message}")


def _channel_options(kube_version: str, authority: str | None) -> list[tuple[str, str | int]]:
    options: list[tuple[str, str | int]] = [
        ("grpc.primary_user_agent", user_agent(kube_version)),
        # Each attempt opens its own connection, even while another channel to the same target
        # is open (grpcio would otherwise share subchannels process-wide).
        ("grpc.use_local_subchannel_pool", 1),
        # No retries or service config inside gRPC: one Check per attempt, as the kubelet sends.
        ("grpc.enable_retries", 0),
        ("grpc.service_config_disable_resolution", 1),
        # The kubelet dials with its ProbeDialer, which never goes through an HTTP proxy.
        ("grpc.enable_http_proxy", 0),
    ]
    if authority is not None:
        options.append(("grpc.default_authority", authority))
    return options


async def probe(
    host: str,
    port: int,
    service: str = "",
    timeout: float = 1.0,
    *,
    kube_version: str = DEFAULT_KUBE_VERSION,
    tls: bool = False,
) -> Attempt:
    """One grpc attempt (§15.1-15.2, upstream `pkg/probe/grpc/grpc.go`).

    `host` is the pod IP for the kubelet; `tls=True` is `mode: TLS` (alpha GRPCContainerProbeTLS).
    """
    addr = join_host_port(host, port)
    started_at = time.time()
    start = time.monotonic()
    deadline = start + timeout
    timed_out = False

    def done(result: Result, output: str) -> Attempt:
        return Attempt(
            handler="grpc",
            target=addr,
            result=result,
            output=output,
            latency=time.monotonic() - start,
            started_at=started_at,
            timed_out=timed_out,
        )

    bridge: _TLSBridge | None = None
    channel: grpc.aio.Channel | None = None
    try:
        try:
            if tls:
                bridge = _TLSBridge(host, port, deadline)
                target = f"ipv4:127.0.0.1:{await bridge.start()}"
                authority: str | None = addr
            else:
                # Go dials an empty host as the unspecified address, which reaches this host
                target = join_host_port(host or "0.0.0.0", port)
                authority = None
            channel = grpc.aio.insecure_channel(
                target, options=_channel_options(kube_version, authority)
            )
            # grpc.WithBlock(): wait for a READY connection, retrying with back-off, within the
            # attempt's single deadline
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                await channel.channel_ready()
        except TimeoutError:
            timed_out = True
            return done(Result.FAILURE, grpc_connect_timeout(addr, timeout))
        except Exception as exc:
            return done(Result.FAILURE, grpc_connect_error(addr, str(exc)))

        if deadline - time.monotonic() <= 0:
            # the dial used the whole deadline: grpc-go's Check then fails at once
            timed_out = True
            return done(Result.FAILURE, grpc_rpc_timeout(timeout))
        try:
            # fail-fast, grpc-go's default: the connection is already READY
            response = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service),
                timeout=deadline - time.monotonic(),
            )
        except grpc.aio.AioRpcError as exc:
            timed_out = exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            return done(Result.FAILURE, _rpc_error_text(exc, timeout))
        except Exception as exc:
            return done(Result.FAILURE, grpc_rpc_error(str(exc)))

        if response.status != health_pb2.HealthCheckResponse.SERVING:
            return done(Result.FAILURE, grpc_unhealthy(_status_name(response.status)))
        return done(Result.SUCCESS, GRPC_HEALTHY)
    finally:
        if channel is not None:
            await channel.close()
        if bridge is not None:
            await bridge.close()


__all__ = ["probe"]
