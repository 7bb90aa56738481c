"""TCP handler (`pkg/probe/tcp`, docs/kubelet-behaviour.md §14, docs/test-vectors.md E) against real
sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time

import pytest

from probetui.probe import gotext, tcp
from probetui.probe.base import Result
from tests.probe.conftest import TCPListener


async def test_vector_e1_listening_server_is_success(tcp_listener: TCPListener) -> None:
    """TestTcpHealthChecker row 1: a listening server gives Success, empty output, no error."""
    before = time.time()
    attempt = await tcp.probe("127.0.0.1", tcp_listener.port, 1.0)
    assert attempt.result is Result.SUCCESS
    assert attempt.output == ""
    assert attempt.error is None
    assert attempt.handler == "tcp"
    assert attempt.target == f"127.0.0.1:{tcp_listener.port}"
    assert not attempt.timed_out
    assert 0 <= attempt.latency < 1.0
    assert before <= attempt.started_at <= time.time()


async def test_vector_e2_invalid_port_is_failure_with_dial_error() -> None:
    """TestTcpHealthChecker row 2: port -1 is a Failure whose output is Go's dial error, not an
    error return (net.LookupPort: `address -1: invalid port`)."""
    attempt = await tcp.probe("127.0.0.1", -1, 1.0)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == "dial tcp: address -1: invalid port"
    assert attempt.target == "127.0.0.1:-1"


async def test_spec_14_3_nothing_sent_and_closed_with_fin(tcp_listener: TCPListener) -> None:
    """§14.2-14.3: the probe sends and reads nothing and closes at once; ProbeDialer's
    close ends the connection with a FIN, not an RST."""
    attempt = await tcp.probe("127.0.0.1", tcp_listener.port, 1.0)
    assert attempt.result is Result.SUCCESS
    await asyncio.wait_for(tcp_listener.closed.wait(), timeout=2.0)
    assert tcp_listener.received == [b""]
    assert tcp_listener.endings == ["fin"]


async def test_spec_14_2_probe_dialer_linger_left_off(tcp_listener: TCPListener) -> None:
    """§14.2 / `probe.ProbeDialer` sets SO_LINGER 1 s. On Linux that only makes close() sleep
    until the FIN is acknowledged (TIME-WAIT is unchanged) and the wire sees the same FIN, pinned
    by the test above; an event loop must not sleep in close(), so the dial leaves linger off."""
    sock = await tcp.dial("127.0.0.1", tcp_listener.port, 1.0)
    try:
        onoff, _seconds = struct.unpack(
            "ii", sock.getsockopt(socket.SOL_SOCKET, socket.SO_LINGER, 8)
        )
        assert not sock.getblocking()
    finally:
        sock.close()
    assert onoff == 0


async def test_dial_peer_gives_the_peer_address_the_socket_has(
    tcp_listener: TCPListener,
) -> None:
    """`dial_peer`'s address, when it has one, is the socket's own getpeername(): the lean
    connections take it for the remote end of their error texts."""
    sock, peer = await tcp.dial_peer("127.0.0.1", tcp_listener.port, 1.0)
    try:
        assert peer is None or peer == sock.getpeername() == ("127.0.0.1", tcp_listener.port)
    finally:
        sock.close()


async def test_spec_14_3_refused_is_failure_with_go_text(closed_port: int) -> None:
    """§14.3: a dial error is Failure with `err.Error()` as output, in Go's wording."""
    attempt = await tcp.probe("127.0.0.1", closed_port, 1.0)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == f"dial tcp 127.0.0.1:{closed_port}: connect: connection refused"
    assert not attempt.timed_out


async def test_spec_14_3_connect_timeout_is_failure_io_timeout(stalled_port: int) -> None:
    """§14.3: no answer within the timeout is Failure `dial tcp <addr>: i/o timeout`.
    Real time: 0.3 s, the scaled-down probe timeout."""
    attempt = await tcp.probe("127.0.0.1", stalled_port, 0.3)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == f"dial tcp 127.0.0.1:{stalled_port}: i/o timeout"
    assert attempt.timed_out
    assert 0.25 <= attempt.latency < 1.0


async def test_port_above_range_is_invalid_port() -> None:
    """net.LookupPort rejects ports above 65535 before dialling."""
    attempt = await tcp.probe("127.0.0.1", 70000, 1.0)
    assert attempt.output == "dial tcp: address 70000: invalid port"


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("127.0.0.1", 80, "127.0.0.1:80"),
        ("::1", 80, "[::1]:80"),
        ("fe80::1%eth0", 8080, "[fe80::1%eth0]:8080"),
        ("", 32, ":32"),
        ("pod.example", 443, "pod.example:443"),
    ],
)
def test_join_host_port_brackets_ipv6(host: str, port: int, expected: str) -> None:
    """net.JoinHostPort: the target text, IPv6 in brackets."""
    assert gotext.join_host_port(host, port) == expected


async def test_cancelled_dial_leaves_no_socket_open(stalled_port: int) -> None:
    """A probe cancelled mid-dial (its worker stopped) closes its socket rather than leaking it."""
    fds_before = len(os.listdir("/proc/self/fd"))
    task = asyncio.ensure_future(tcp.probe("127.0.0.1", stalled_port, 5.0))
    await asyncio.sleep(0.05)
    assert len(os.listdir("/proc/self/fd")) == fds_before + 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(os.listdir("/proc/self/fd")) == fds_before


async def test_a_connect_done_within_the_call_does_not_wait_for_the_loop(
    tcp_listener: TCPListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listener on this host completes the handshake inside connect(): the dial takes the
    connection at once instead of waiting a turn of the loop for the socket to turn writable
    (the same socket and the same packets either way)."""

    async def no_wait(*args: object) -> int:
        raise AssertionError("waited for writable")

    monkeypatch.setattr(tcp, "_writable", no_wait)
    attempt = await tcp.probe("127.0.0.1", tcp_listener.port, 1.0)
    assert attempt.result is Result.SUCCESS


async def test_a_connect_still_in_progress_waits_for_the_loop(
    stalled_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handshake not done within the call is waited for as before: here, into the timeout."""
    waited: list[int] = []
    real = tcp._writable

    async def counting(*args: object) -> int:
        waited.append(1)
        return await real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(tcp, "_writable", counting)
    attempt = await tcp.probe("127.0.0.1", stalled_port, 0.2)
    assert attempt.timed_out and waited == [1]
