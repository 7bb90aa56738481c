"""Run the TCP socket handler, `pkg/probe/tcp` (docs/kubelet-behaviour.md §14).

A probe is a connect and nothing more: Success when the three-way handshake completes within the
timeout, Failure with Go's dial error text otherwise. `dial` is also the ProbeDialer for the gRPC
handler's TLS leg.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import os
import socket
import time
from collections.abc import Callable, Sequence
from functools import lru_cache

from probetui.probe.base import Attempt, Result
from probetui.probe.gotext import (
    IO_TIMEOUT,
    NO_SUCH_HOST,
    dns_error,
    join_host_port,
    op_error,
    syscall_error,
)

# ProbeDialer (`pkg/probe/dialer_others.go`) sets SO_LINGER on, 1 s, believing it shortens
# TIME-WAIT. On Linux it does not (TIME-WAIT is a fixed 60 s; linger 1 s only makes close() sleep
# until the peer acknowledges the FIN, at most 1 s) and the wire sees the same FIN either way. A
# goroutine may sleep in close(); the event loop may not, and a peer that delays its ACK would
# stall it. So probe sockets are dialled without linger: the same packets, no stall, and two
# system calls fewer per attempt.

# a non-blocking socket from the start saves the fcntl of setblocking(False) (Linux)
_NONBLOCK = getattr(socket, "SOCK_NONBLOCK", 0)
# connect_ex's answers meaning "not yet": wait for the socket to turn writable
_IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR})

# net.partialDeadline: with several addresses each gets a share of the time, but at least this
_SANE_MINIMUM = 2.0


class DialError(Exception):
    """Signals a failed dial. `str()` is the text of Go's `*net.OpError`, which the kubelet puts
    in the event, e.g. `dial tcp 127.0.0.1:1: connect: connection refused`."""

    def __init__(self, text: str, *, timed_out: bool = False) -> None:
        super().__init__(text)
        self.timed_out = timed_out


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _sockaddr_text(family: int, sockaddr: tuple) -> str:
    if family == socket.AF_INET6:
        host = sockaddr[0]
        scope = sockaddr[3] if len(sockaddr) > 3 else 0
        if scope and "%" not in host:
            with contextlib.suppress(OSError):
                host = f"{host}%{socket.if_indextoname(scope)}"
        return f"[{host}]:{sockaddr[1]}"
    return f"{sockaddr[0]}:{sockaddr[1]}"


_Address = tuple[int, tuple, str]


def _unique(infos: list) -> tuple[_Address, ...]:
    seen: list[_Address] = []
    for family, _type, _proto, _name, sockaddr in infos:
        entry = (family, sockaddr, _sockaddr_text(family, sockaddr))
        if entry not in seen:
            seen.append(entry)
    return tuple(seen)


@lru_cache(maxsize=32768)
def _literal_addresses(host: str, port: int) -> tuple[_Address, ...] | None:
    """Work out an IP literal's addresses, which never change, once per (host, port) instead
    of per probe, since the parse and getaddrinfo are a real share of a TCP attempt's CPU.
    None for a name: names are looked up every time, as Go does."""
    if not is_ip_literal(host):
        return None
    return _unique(
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    )


def _cached_literal(host: str, port: int) -> tuple[_Address, ...] | None:
    """An IP literal's addresses, or None for anything `_resolve` must answer (a name, "",
    a literal getaddrinfo refuses)."""
    if not host:
        return None
    try:
        return _literal_addresses(host, port)
    except OSError:
        return None


async def _resolve(
    loop: asyncio.AbstractEventLoop, host: str, port: int, deadline: float
) -> Sequence[_Address]:
    """Addresses to try, in order, each with the text Go prints for it."""
    if host == "":
        # Go dials the unspecified address over IPv4 and prints it as ":port"; Linux routes it to
        # the local host.
        return [(socket.AF_INET, ("0.0.0.0", port), f":{port}")]
    try:
        literal = _literal_addresses(host, port)
        if literal is not None:
            return literal
        async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise DialError(op_error("dial", "", dns_error(host, IO_TIMEOUT)), timed_out=True) from None
    except socket.gaierror as exc:
        reason = NO_SUCH_HOST if exc.errno == socket.EAI_NONAME else str(exc.strerror).lower()
        raise DialError(op_error("dial", "", dns_error(host, reason))) from None
    return _unique(infos)


def _settle(waiter: asyncio.Future[None], timed_out: bool) -> None:
    if not waiter.done():
        if timed_out:
            waiter.set_exception(TimeoutError())
        else:
            waiter.set_result(None)


async def _writable(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, deadline: float | None
) -> int:
    """Wait for a connect in progress to end; its errno (0: connected). TimeoutError at
    `deadline` (None: the caller's own deadline cancels the wait). The loop's own sock_connect is
    not used: uvloop's sends every address, literal or not, through getaddrinfo on its thread
    pool, a large share of an attempt's CPU (guarded by benchmarks/engine.py)."""
    waiter: asyncio.Future[None] = loop.create_future()
    fd = sock.fileno()
    loop.add_writer(fd, _settle, waiter, False)
    timer = (
        None
        if deadline is None
        else loop.call_later(max(deadline - time.monotonic(), 0.0), _settle, waiter, True)
    )
    try:
        await waiter
    finally:
        if timer is not None:
            timer.cancel()
        loop.remove_writer(fd)
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)


def _connected_now(sock: socket.socket) -> tuple | None:
    """The peer's address when a connect in progress has already completed, None when it has
    not (or failed).

    A peer on this host or across a veth pair answers the handshake within the connect call
    itself; asking for the peer's address (one system call) then saves the loop's round trip
    of waiting for the socket to turn writable."""
    try:
        return sock.getpeername()
    except OSError:
        return None


async def _connect_one(
    loop: asyncio.AbstractEventLoop,
    family: int,
    sockaddr: tuple,
    text: str,
    deadline: float | None,
    on_wait: Callable[[], None] | None = None,
) -> tuple[socket.socket, tuple | None]:
    try:
        sock = socket.socket(family, socket.SOCK_STREAM | _NONBLOCK)
    except OSError as exc:
        raise DialError(op_error("dial", text, syscall_error("socket", exc.errno))) from None
    try:
        if not _NONBLOCK:
            sock.setblocking(False)
        peer = None
        code = sock.connect_ex(sockaddr)
        if code in _IN_PROGRESS:
            peer = _connected_now(sock)
            if peer is None and on_wait is not None:
                on_wait()
            code = 0 if peer is not None else await _writable(loop, sock, deadline)
        if code:
            raise OSError(code, os.strerror(code))
    except TimeoutError:
        sock.close()
        raise DialError(op_error("dial", text, IO_TIMEOUT), timed_out=True) from None
    except OSError as exc:
        sock.close()
        raise DialError(op_error("dial", text, syscall_error("connect", exc.errno))) from None
    except BaseException:
        sock.close()
        raise
    return sock, peer


async def dial(
    host: str,
    port: int,
    timeout: float,
    loop: asyncio.AbstractEventLoop | None = None,
    *,
    bounded: bool = False,
) -> socket.socket:
    """`dial_peer`'s socket alone."""
    sock, _ = await dial_peer(host, port, timeout, loop, bounded=bounded)
    return sock


async def dial_peer(
    host: str,
    port: int,
    timeout: float,
    loop: asyncio.AbstractEventLoop | None = None,
    *,
    bounded: bool = False,
    on_wait: Callable[[], None] | None = None,
) -> tuple[socket.socket, tuple | None]:
    """Connect like `probe.ProbeDialer().DialContext(ctx, "tcp", host:port)` with a deadline of
    `timeout` seconds, covering name resolution too: the socket, and the peer's address when
    the connect asked for it already (None: not asked). Raises `DialError` with Go's wording.

    Several resolved addresses are tried one after another (Go's `dialSerial`, with its share of
    the remaining time per address); Go's dual-stack racing is not reproduced. `bounded`: the
    caller cancels the dial itself once `timeout` has passed (an HTTP attempt's deadline).
    `on_wait` is called before each wait of the dial (a lazy deadline's `arm`).
    """
    deadline = time.monotonic() + timeout
    if not 0 <= port <= 65535:
        # net.LookupPort rejects it before any socket exists: `dial tcp: address -1: invalid port`
        raise DialError(op_error("dial", "", f"address {port}: invalid port"))
    if loop is None:
        loop = asyncio.get_running_loop()
    # an IP literal's addresses without a coroutine: nearly every probe dials one
    addresses = _cached_literal(host, port)
    if not addresses:
        if on_wait is not None:
            on_wait()
        addresses = await _resolve(loop, host, port, deadline)
    first_error: DialError | None = None
    for index, (family, sockaddr, text) in enumerate(addresses):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            first_error = first_error or DialError(
                op_error("dial", text, IO_TIMEOUT), timed_out=True
            )
            break
        share = remaining / (len(addresses) - index)
        if share < _SANE_MINIMUM:
            share = min(remaining, _SANE_MINIMUM)
        try:
            # bounded: the caller cancels at `timeout`; a lone address has all of it, so its own
            # timer would only fire alongside the caller's (one timer fewer per attempt)
            until = None if bounded and len(addresses) == 1 else time.monotonic() + share
            return await _connect_one(loop, family, sockaddr, text, until, on_wait)
        except DialError as exc:
            first_error = first_error or exc
    if first_error is None:
        # getaddrinfo never returns an empty list without an error; keep Go's text just in case
        first_error = DialError(op_error("dial", "", dns_error(host, NO_SUCH_HOST)))
    raise first_error


async def probe(
    host: str, port: int, timeout: float, *, loop: asyncio.AbstractEventLoop | None = None
) -> Attempt:
    """One tcpSocket attempt (§14.2-14.3): Success with empty output when the connect
    completes, Failure with the dial error otherwise. Never returns an `error`: the kubelet's only
    error path for TCP is port resolution, which happens before this is called (§16.4)."""
    target = join_host_port(host, port)
    started_at = time.time()
    start = time.monotonic()
    try:
        sock, _ = await dial_peer(host, port, timeout, loop)
    except DialError as exc:
        return Attempt(
            handler="tcp",
            target=target,
            result=Result.FAILURE,
            output=str(exc),
            latency=time.monotonic() - start,
            started_at=started_at,
            timed_out=exc.timed_out,
        )
    latency = time.monotonic() - start
    # Nothing is sent or read: the connect itself is the check.
    sock.close()
    return Attempt(
        handler="tcp",
        target=target,
        result=Result.SUCCESS,
        output="",
        latency=latency,
        started_at=started_at,
    )


__all__ = [
    "DialError",
    "dial",
    "dial_peer",
    "is_ip_literal",
    "probe",
]
