"""gRPC handler (`pkg/probe/grpc`, docs/kubelet-behaviour.md §15.1-15.2, docs/test-vectors.md F)
against real grpc.aio servers, for both handlers: the tests' oracle on grpcio (`tests/probe/grpc_oracle.py`)
and the lean one on a raw socket (`probetui.probe.grpc_lean`), which must give the same Attempt.

Upstream's TestGrpcProber_Probe uses 1-2 s timeouts and a 4 s server sleep; here the timeouts
are scaled down (0.3-0.5 s) so each real-time case stays well under a second.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from probetui.probe import gotext, grpc_lean
from probetui.probe.base import Result
from tests.probe import grpc_oracle as grpc_reference
from tests.probe.conftest import NOT_SERVING, SERVING, ServerCert, StartGRPC

SERVICE_UNKNOWN = 3  # HealthCheckResponse.SERVICE_UNKNOWN


@pytest.fixture(params=["grpcio", "lean"])
def grpc_probe(request: pytest.FixtureRequest) -> Any:
    """The handler module under test: the reference or the lean one."""
    return grpc_reference if request.param == "grpcio" else grpc_lean


def connect_timeout(port: int, within: str) -> str:
    return (
        f'timeout: failed to connect service "127.0.0.1:{port}" within {within}: '
        "context deadline exceeded"
    )


async def test_vector_f1_nothing_listening_is_connect_timeout(
    grpc_probe: Any, closed_port: int
) -> None:
    """F1: with nothing listening the blocking dial retries until the deadline, so the output is
    the connect-timeout text ending in `context deadline exceeded`, and no error."""
    attempt = await grpc_probe.probe("127.0.0.1", closed_port, "", 0.3)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == connect_timeout(closed_port, "300ms")
    assert attempt.timed_out
    assert 0.25 <= attempt.latency < 1.0
    assert attempt.handler == "grpc"
    assert attempt.target == f"127.0.0.1:{closed_port}"


async def test_vector_f2_plain_http_server_is_failure(grpc_probe: Any, http_server: int) -> None:
    """F2: an HTTP/1.1 server never sends an HTTP/2 server preface, so the connection never gets
    READY and the blocking dial times out: Failure, error nil."""
    attempt = await grpc_probe.probe("127.0.0.1", http_server, "", 0.3)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == connect_timeout(http_server, "300ms")


async def test_vector_f3_not_serving(grpc_probe: Any, grpc_server: StartGRPC) -> None:
    """F3: NOT_SERVING is Failure `service unhealthy (responded with "NOT_SERVING")`."""
    server = await grpc_server(statuses={"": NOT_SERVING})
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 1.0)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == 'service unhealthy (responded with "NOT_SERVING")'


async def test_vector_f4_slow_health_rpc_is_rpc_timeout(
    grpc_probe: Any, grpc_server: StartGRPC
) -> None:
    """F4: connected, but Check outlives the shared deadline: `timeout: health rpc did not
    complete within <t>` (server sleeps 1 s, probe timeout 0.3 s)."""
    server = await grpc_server(delay=1.0)
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 0.3)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == "timeout: health rpc did not complete within 300ms"
    assert attempt.timed_out
    assert 0.25 <= attempt.latency < 0.9


async def test_vector_f5_serving_is_success(grpc_probe: Any, grpc_server: StartGRPC) -> None:
    """F5: SERVING is Success with output "service healthy"."""
    server = await grpc_server()
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 1.0)
    assert attempt.result is Result.SUCCESS
    assert attempt.error is None
    assert attempt.output == "service healthy"
    assert not attempt.timed_out


async def test_vector_f6_tls_probe_to_tls_server(
    grpc_probe: Any, grpc_server: StartGRPC, server_cert: ServerCert
) -> None:
    """F6 (GRPCContainerProbeTLS, mode TLS): TLS to a server whose CA the probe does not know
    succeeds, since the kubelet uses InsecureSkipVerify."""
    server = await grpc_server(cert=server_cert)
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 1.0, tls=True)
    assert attempt.result is Result.SUCCESS
    assert attempt.output == "service healthy"


async def test_vector_f7_plaintext_probe_to_tls_server(
    grpc_probe: Any, grpc_server: StartGRPC, server_cert: ServerCert
) -> None:
    """F7: plaintext against a TLS server never connects: Failure (connect timeout)."""
    server = await grpc_server(cert=server_cert)
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 0.3)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == connect_timeout(server.port, "300ms")


async def test_vector_f8_tls_probe_to_plaintext_server(
    grpc_probe: Any, grpc_server: StartGRPC
) -> None:
    """F8: TLS against a plaintext server fails the handshake on every try: Failure."""
    server = await grpc_server()
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 0.3, tls=True)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == connect_timeout(server.port, "300ms")


async def test_tls_skips_every_certificate_check(
    grpc_probe: Any, grpc_server: StartGRPC, odd_server_cert: ServerCert
) -> None:
    """KEP-4939 InsecureSkipVerify: an expired certificate for another name is accepted."""
    server = await grpc_server(cert=odd_server_cert, statuses={"": NOT_SERVING})
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 1.0, tls=True)
    assert attempt.output == 'service unhealthy (responded with "NOT_SERVING")'


async def test_tls_slow_rpc_is_rpc_timeout(
    grpc_probe: Any, grpc_server: StartGRPC, server_cert: ServerCert
) -> None:
    """Over TLS too, a connected but slow Check is the RPC timeout, not a connect timeout."""
    server = await grpc_server(cert=server_cert, delay=1.0)
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 0.3, tls=True)
    assert attempt.output == "timeout: health rpc did not complete within 300ms"


async def test_spec_15_1_service_name_is_sent(grpc_probe: Any, grpc_server: StartGRPC) -> None:
    """§15.1: grpc.service goes in HealthCheckRequest.service; each service its own status."""
    server = await grpc_server(statuses={"": SERVING, "db": NOT_SERVING, "cache": SERVICE_UNKNOWN})
    healthy = await grpc_probe.probe("127.0.0.1", server.port, "", 1.0)
    db = await grpc_probe.probe("127.0.0.1", server.port, "db", 1.0)
    cache = await grpc_probe.probe("127.0.0.1", server.port, "cache", 1.0)
    assert healthy.output == "service healthy"
    assert db.output == 'service unhealthy (responded with "NOT_SERVING")'
    assert cache.output == 'service unhealthy (responded with "SERVICE_UNKNOWN")'


async def test_spec_15_2_other_rpc_error(grpc_probe: Any, grpc_server: StartGRPC) -> None:
    """§15.2: any other RPC error is `error: health rpc probe failed: <status error>`, in
    grpc-go's `rpc error: code = <Code> desc = <message>` form."""
    server = await grpc_server(statuses={"": SERVING})
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "nope", 1.0)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == (
        "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"
    )


async def test_spec_15_2_unimplemented(grpc_probe: Any, grpc_server: StartGRPC) -> None:
    """§15.2: a gRPC server without grpc.health.v1.Health is the Unimplemented text with the
    server's own status message."""
    server = await grpc_server(health=False)
    attempt = await grpc_probe.probe("127.0.0.1", server.port, "", 1.0)
    assert attempt.result is Result.FAILURE
    assert attempt.output == (
        "error: this server does not implement the grpc health protocol "
        "(grpc.health.v1.Health): Method not found!"
    )


async def test_spec_15_1_user_agent(grpc_probe: Any, grpc_server: StartGRPC) -> None:
    """§15.1: the user agent starts `kube-probe/<major>.<minor>` (grpc-go appends its own
    name after it, as grpcio does)."""
    server = await grpc_server()
    await grpc_probe.probe("127.0.0.1", server.port, "", 1.0)
    await grpc_probe.probe("127.0.0.1", server.port, "", 1.0, kube_version="v1.31.4")
    assert server.servicer is not None
    first, second = server.servicer.user_agents
    assert first.startswith("kube-probe/1.35 ")
    assert second.startswith("kube-probe/1.31 ")


async def test_new_connection_per_attempt(grpc_probe: Any, grpc_server: StartGRPC) -> None:
    """grpc.go dials a new connection for every probe: sequential and concurrent attempts to the
    same target each arrive from their own client port."""
    server = await grpc_server()
    await grpc_probe.probe("127.0.0.1", server.port, "", 1.0)
    await grpc_probe.probe("127.0.0.1", server.port, "", 1.0)
    await asyncio.gather(
        grpc_probe.probe("127.0.0.1", server.port, "", 1.0),
        grpc_probe.probe("127.0.0.1", server.port, "", 1.0),
    )
    assert server.servicer is not None
    assert len(set(server.servicer.peers)) == 4


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1, "1s"),
        (2, "2s"),
        (0.5, "500ms"),
        (0.3, "300ms"),
        (1.5, "1.5s"),
        (90, "1m30s"),
        (3600, "1h0m0s"),
        (0, "0s"),
        (0.0000015, "1.5µs"),
        (1e-9, "1ns"),
    ],
)
def test_go_duration_format(seconds: float, text: str) -> None:
    """`%v` of a time.Duration, as in `within 1s` (vector F1, F4)."""
    assert gotext.go_duration(seconds) == text


def test_go_quote_like_percent_q() -> None:
    """`%q` of the address: `":32"` in vector F1."""
    assert gotext.go_quote(":32") == '":32"'
    assert gotext.go_quote('a"b\\c\n') == '"a\\"b\\\\c\\n"'
