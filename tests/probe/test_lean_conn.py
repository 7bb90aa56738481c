"""The lean connection's plain reads and writes (`probetui.probe.lean_conn.Stream`).

On a connected pair of loopback sockets: a write larger than the socket's buffer arrives
whole and in order, a read waits for the peer's bytes, and the peer's end reads as b"". A lazy
deadline (`lean_conn.Deadline`) is set by a read that waits, and by nothing before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

from probetui.probe.lean_conn import Deadline, Stream


def _pair() -> tuple[socket.socket, socket.socket]:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    left.setblocking(False)
    right.setblocking(False)
    return left, right


@contextlib.contextmanager
def _stream() -> Iterator[tuple[Stream, socket.socket]]:
    """A `Stream` over one end of a connected pair, and the other end; both closed after."""
    left, right = _pair()
    try:
        yield Stream(left, asyncio.get_running_loop()), right
    finally:
        left.close()
        right.close()


async def test_a_write_larger_than_the_buffer_arrives_whole() -> None:
    loop = asyncio.get_running_loop()
    left, right = _pair()
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    payload = bytes(range(256)) * 4096  # 1 MiB: the first send takes only part of it
    stream = Stream(left, loop)
    received = bytearray()

    async def drain() -> None:
        while len(received) < len(payload):
            received.extend(await loop.sock_recv(right, 65536))

    try:
        await asyncio.wait_for(asyncio.gather(stream.send(payload), drain()), 10)
    finally:
        left.close()
        right.close()
    assert bytes(received) == payload


async def test_a_read_waits_for_the_peer_then_sees_its_end() -> None:
    with _stream() as (stream, right):
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        assert not reading.done()
        right.send(b"hello")
        assert await asyncio.wait_for(reading, 2) == b"hello"
        right.close()
        assert await asyncio.wait_for(stream.recv(), 2) == b""


async def test_a_read_cancelled_while_waiting_leaves_no_reader() -> None:
    with _stream() as (stream, right):
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        # the reader is gone: the same descriptor can be read again
        right.send(b"again")
        assert await asyncio.wait_for(stream.recv(), 2) == b"again"


async def test_bytes_no_read_waits_for_leave_the_socket_unwatched() -> None:
    """The socket stays watched between the reads of one stream, but bytes that come while no
    read waits do not keep the loop waking for them: it stops watching until the next read."""
    loop = asyncio.get_running_loop()
    with _stream() as (stream, right):
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        right.send(b"one")
        assert await asyncio.wait_for(reading, 2) == b"one"
        right.send(b"two")
        for _ in range(5):
            await asyncio.sleep(0)
        assert not loop.remove_reader(stream.sock.fileno())
        assert await asyncio.wait_for(stream.recv(), 2) == b"two"
        stream.close()


async def _read_under_lazy_deadline(peer_first: bytes) -> tuple[bytes | None, bool]:
    """One read in a task of its own under a lazy deadline of 50 ms, the peer having sent
    `peer_first` before it, then a sleep past the deadline: what the read got (None: the task
    was cancelled) and whether the deadline ran out. Real time, as the loop's timers are what
    is checked; a tenth of a second."""
    loop = asyncio.get_running_loop()
    left, right = _pair()

    async def attempt() -> tuple[bytes | None, bool]:
        deadline = Deadline(loop, 0.05, lazy=True)
        stream = Stream(left, loop, None, deadline)
        try:
            data = await stream.recv()
            # a wait not through the stream: only a timer already set could cut it short
            await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            return None, deadline.disarm()
        return data, deadline.disarm()

    try:
        if peer_first:
            right.send(peer_first)
        return await asyncio.wait_for(loop.create_task(attempt()), 10)
    finally:
        left.close()
        right.close()


async def test_a_lazy_deadline_is_set_by_a_read_that_waits() -> None:
    assert await _read_under_lazy_deadline(b"") == (None, True)


async def test_a_lazy_deadline_sets_no_timer_for_a_read_that_does_not_wait() -> None:
    assert await _read_under_lazy_deadline(b"hello") == (b"hello", False)
