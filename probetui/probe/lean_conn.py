"""Hold one connection of the lean HTTP handler (`probetui.probe.http_lean`).

The dial, TLS, reads and writes, and Go's words for their failures; and the attempt's deadline
it is dialled under.

The dial is the TCP handler's (the kubelet's `ProbeDialer`, which upstream's HTTP transport uses
too; see `probetui.probe.tcp` on linger).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from typing import TypeVar

from probetui.probe import tcp
from probetui.probe.exchange import tls_context
from probetui.probe.gotext import GoError, conn_addresses, stream_error, tls_error

# httpcore's HTTP11Connection: bytes per read
_READ_NUM_BYTES = 64 * 1024
# a dial with no overall deadline (timeout 0) still needs a number
_NO_DEADLINE = 1e9

_T = TypeVar("_T")


class DialTimeout(Exception):
    """Signals that the dial ran out of time: the attempt's deadline, reported as Go's
    Client.Timeout."""


class Deadline:
    """Holds the attempt's deadline: at `when` (loop time; None for none) the attempt's task is
    cancelled. asyncio.timeout's logic, with the loop and task handed in: each of its two
    get_running_loop() calls is a getpid() system call on Python 3.11, a few per cent of an
    attempt at cluster rates.

    `lazy`: the timer is set only by `arm`, which the attempt calls before each of its waits.
    Until the attempt first waits the loop cannot run a timer, so the deadline falls at the
    same turn of the loop either way, and an attempt that never waits (a loopback answer
    already there) costs no timer."""

    __slots__ = ("_cancelling", "_handle", "_task", "_unarmed", "expired", "loop", "when")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, timeout: float, *, lazy: bool = False
    ) -> None:
        self.loop = loop
        self.expired = False
        task = asyncio.current_task(loop)
        assert task is not None, "an HTTP probe runs in a task"
        self._task = task
        self._cancelling = task.cancelling()
        self._handle: asyncio.TimerHandle | None = None
        self._unarmed = False
        if timeout > 0:
            self.when: float | None = loop.time() + timeout
            if lazy:
                self._unarmed = True
            else:
                self._handle = loop.call_at(self.when, self._expire)
        else:
            self.when = None

    def arm(self) -> None:
        """Set the timer of a lazy deadline, once, before the attempt's first wait."""
        if self._unarmed:
            self._unarmed = False
            self._handle = self.loop.call_at(self.when, self._expire)  # type: ignore[arg-type]

    def _expire(self) -> None:
        self.expired = True
        self._task.cancel()

    def disarm(self) -> bool:
        """Stop the clock. True when it had run out and its cancellation is the only one the
        task has: a CancelledError is then the deadline's, to be reported as a timeout."""
        self._unarmed = False
        if self._handle is not None:
            self._handle.cancel()
        return self.expired and self._task.uncancel() <= self._cancelling


class Stream:
    """Wraps one connected socket, with TLS over memory BIOs when the scheme is https.

    Reads and writes go straight to `loop.sock_recv` / `loop.sock_sendall`: no transport or
    protocol objects per connection. TLS runs the way anyio's TLSStream runs it under httpcore
    (with `standard_compatible=False`), so its errors and EOFs surface the same way.
    """

    __slots__ = (
        "_deadline",
        "_incoming",
        "_local",
        "_loop",
        "_outgoing",
        "_tls",
        "_waiter",
        "_watched",
        "remote",
        "sock",
    )

    def __init__(
        self,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        remote: tuple | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self.sock = sock
        self._loop = loop
        # a lazy deadline to arm before each wait (None: the caller's deadline is running)
        self._deadline = deadline
        self._tls: ssl.SSLObject | None = None
        self._incoming: ssl.MemoryBIO | None = None
        self._outgoing: ssl.MemoryBIO | None = None
        # a plain socket's reads: the one waiting for the socket, and whether the loop
        # watches it for them
        self._waiter: asyncio.Future[bytes] | None = None
        self._watched = False
        # the peer's address is taken now: once a reset is seen it can no longer be asked for;
        # the dial's answer (`remote`) is used when it has one, a system call fewer per attempt
        if remote is None:
            try:
                remote = sock.getpeername()
            except OSError:
                remote = None
        self.remote = remote
        # this end's address is asked for only for an error's text (it outlives a reset, not
        # the socket's close): a system call fewer per attempt that ends well
        self._local: tuple | None = None

    @property
    def local(self) -> tuple | None:
        """This end's address, None when the socket has none (or its peer was unknown)."""
        if self._local is None and self.remote is not None:
            try:
                self._local = self.sock.getsockname()
            except OSError:
                return None
        return self._local

    def addresses(self) -> str:
        local = self.local
        if local is None:
            return ""
        return conn_addresses(local, self.remote)

    def close(self) -> None:
        # a stream is closed once its response is read and again when the attempt ends
        if self.sock.fileno() != -1:
            self._unwatch()
            self.sock.close()

    def _unwatch(self) -> None:
        if self._watched:
            self._watched = False
            self._loop.remove_reader(self.sock.fileno())

    async def start_tls(self, hostname: str, context: ssl.SSLContext | None = None) -> None:
        """The TLS handshake, with the HTTP transport's context unless `context` is given."""
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = (context or tls_context()).wrap_bio(
            self._incoming, self._outgoing, server_side=False, server_hostname=hostname or None
        )
        await self._tls_call(self._tls.do_handshake)

    def selected_alpn(self) -> str | None:
        """The protocol the TLS handshake agreed by ALPN (None: none, or no TLS)."""
        return self._tls.selected_alpn_protocol() if self._tls is not None else None

    async def _flush(self) -> None:
        assert self._outgoing is not None
        if self._outgoing.pending:
            await self._loop.sock_sendall(self.sock, self._outgoing.read())

    async def _tls_call(self, method: Callable[..., _T], *args: object) -> _T:
        """anyio's TLSStream._call_sslobject_method: pump the BIOs until `method` completes."""
        assert self._incoming is not None and self._outgoing is not None
        if self._deadline is not None:
            self._deadline.arm()
        while True:
            try:
                result = method(*args)
            except ssl.SSLWantReadError:
                await self._flush()
                data = await self._loop.sock_recv(self.sock, _READ_NUM_BYTES)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
            except ssl.SSLWantWriteError:
                await self._flush()
            else:
                await self._flush()
                return result

    async def send(self, data: bytes) -> None:
        if self._tls is None:
            # a request fits the socket's buffer: sent here, without the loop's sock_sendall
            # and its checks per call (benchmarks.blackbox guards it); the rest, if any, by it
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            if sent < len(data):
                if self._deadline is not None:
                    self._deadline.arm()
                await self._loop.sock_sendall(self.sock, memoryview(data)[sent:])
        else:
            await self._tls_call(self._tls.write, data)

    def _readable(self) -> None:
        """The loop's call when the socket turns readable: the read, for the reader waiting
        for it. With none waiting, which a readable socket would otherwise repeat on every turn
        of the loop, the socket stops being watched until the next wait."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            self._unwatch()
            return
        try:
            data = self.sock.recv(_READ_NUM_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._waiter = None
            waiter.set_exception(exc)
            return
        self._waiter = None
        waiter.set_result(data)

    async def recv(self) -> bytes:
        """Up to 64 KiB; b"" at the end, including a TLS peer that hangs up without notice."""
        if self._tls is None:
            try:
                return self.sock.recv(_READ_NUM_BYTES)
            except (BlockingIOError, InterruptedError):
                pass
            # wait here rather than in a coroutine of its own: every coroutine between the task
            # and the socket runs again on each wake (benchmarks.blackbox guards it). The
            # socket is watched from the first wait until the stream closes, not once a wait:
            # a gRPC attempt waits several times on one connection (benchmarks.engine
            # --handler grpc guards it)
            if self._deadline is not None:
                self._deadline.arm()
            waiter: asyncio.Future[bytes] = self._loop.create_future()
            self._waiter = waiter
            if not self._watched:
                self._loop.add_reader(self.sock.fileno(), self._readable)
                self._watched = True
            try:
                return await waiter
            except BaseException:
                # a wait given up (the attempt's deadline) leaves the socket unwatched
                self._unwatch()
                raise
            finally:
                self._waiter = None
        try:
            return await self._tls_call(self._tls.read, _READ_NUM_BYTES)
        except ssl.SSLZeroReturnError:
            return b""
        except ssl.SSLError as exc:
            if isinstance(exc, ssl.SSLEOFError) or "UNEXPECTED_EOF_WHILE_READING" in (
                exc.strerror or ""
            ):
                return b""
            raise


def read_error(err: OSError, stream: Stream) -> str:
    """Go's text for a socket error while waiting for or reading a response."""
    if isinstance(err, ssl.SSLError):
        return tls_error(err)
    return stream_error("read", stream.addresses(), err.errno)


async def connect(
    scheme: str, host: str, port: int, deadline: Deadline, tls: ssl.SSLContext | None = None
) -> Stream:
    """A connection to host:port, TLS on it for https, within what is left of `deadline`.
    `tls` is the TLS configuration, the kubelet transport's (`exchange.tls_context`) unless
    given. Raises `DialTimeout` when the dial runs out of time, `GoError` when it or TLS
    fails."""
    loop = deadline.loop
    when = deadline.when
    remaining = _NO_DEADLINE if when is None else max(when - loop.time(), 0)
    try:
        sock, peer = await tcp.dial_peer(
            host, port, remaining, loop, bounded=when is not None, on_wait=deadline.arm
        )
    except tcp.DialError as exc:
        if exc.timed_out:
            raise DialTimeout from None
        raise GoError(str(exc)) from None
    stream = Stream(sock, loop, peer, deadline)
    if scheme == "https":
        try:
            await stream.start_tls(host, tls)
        except ssl.SSLError as exc:
            stream.close()
            raise GoError(tls_error(exc)) from None
        except OSError as exc:
            text = read_error(exc, stream)  # before the close, which takes the address away
            stream.close()
            raise GoError(text) from None
        except BaseException:
            stream.close()
            raise
    return stream
