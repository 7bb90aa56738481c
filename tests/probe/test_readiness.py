"""The loop's readiness watcher (`probetui.probe.readiness`) under the lean connection's reads.

On connected pairs of real sockets: a read is delivered, a stream closed or a wait given up
leaves no entry, a descriptor reused within one batch of events never hands a waiter another
socket's bytes, an idle watcher closes, many loops leave no descriptor behind, and where epoll
does not exist the loop's own readers serve.
"""

from __future__ import annotations

import asyncio
import gc
import os
import select
import socket

import pytest

from probetui.probe import readiness
from probetui.probe.lean_conn import Deadline, Stream
from probetui.probe.readiness import LoopReaders, Watcher, watching

pytestmark = pytest.mark.skipif(not hasattr(select, "epoll"), reason="epoll is Linux's")


def _pair() -> tuple[socket.socket, socket.socket]:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    left.setblocking(False)
    right.setblocking(False)
    return left, right


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_read_is_delivered_through_the_loops_watcher() -> None:
    loop = asyncio.get_running_loop()
    left, right = _pair()
    stream = Stream(left, loop)
    try:
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        watcher = watching(loop)
        assert isinstance(watcher, Watcher)
        assert left.fileno() in watcher
        # the socket is the watcher's, not one of the loop's readers
        assert not loop.remove_reader(left.fileno())
        right.send(b"hello")
        assert await asyncio.wait_for(reading, 2) == b"hello"
    finally:
        stream.close()
        right.close()


async def test_one_watcher_serves_every_stream_of_a_loop() -> None:
    loop = asyncio.get_running_loop()
    pairs = [_pair() for _ in range(3)]
    streams = [Stream(left, loop) for left, _ in pairs]
    try:
        readings = [asyncio.ensure_future(stream.recv()) for stream in streams]
        await asyncio.sleep(0.01)
        assert len(watching(loop)) == 3
        for index, (_, right) in enumerate(pairs):
            right.send(b"%d" % index)
        assert await asyncio.wait_for(asyncio.gather(*readings), 2) == [b"0", b"1", b"2"]
    finally:
        for stream, (_, right) in zip(streams, pairs, strict=True):
            stream.close()
            right.close()
    assert len(watching(loop)) == 0


async def test_a_stream_closed_while_watched_leaves_no_entry() -> None:
    loop = asyncio.get_running_loop()
    left, right = _pair()
    stream = Stream(left, loop)
    fd = left.fileno()
    try:
        right.send(b"one")
        assert await stream.recv() == b"one"
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        assert fd in watching(loop)
        stream.close()
        assert fd not in watching(loop)
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
    finally:
        right.close()
    assert len(watching(loop)) == 0


async def test_a_wait_cut_by_the_deadline_unwatches() -> None:
    """Real time: the deadline's timer is what cuts the wait; a twentieth of a second."""
    loop = asyncio.get_running_loop()
    left, right = _pair()

    async def attempt() -> bool:
        deadline = Deadline(loop, 0.05, lazy=True)
        stream = Stream(left, loop, None, deadline)
        try:
            await stream.recv()
        except asyncio.CancelledError:
            return deadline.disarm()
        return False

    try:
        assert await asyncio.wait_for(loop.create_task(attempt()), 10)
        assert left.fileno() not in watching(loop)
    finally:
        left.close()
        right.close()


async def test_a_wait_cancelled_unwatches_and_a_later_wait_watches_again() -> None:
    loop = asyncio.get_running_loop()
    left, right = _pair()
    stream = Stream(left, loop)
    try:
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        assert left.fileno() not in watching(loop)
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        assert left.fileno() in watching(loop)
        right.send(b"again")
        assert await asyncio.wait_for(reading, 2) == b"again"
    finally:
        stream.close()
        right.close()


async def test_a_descriptor_reused_within_one_batch_reads_only_its_own_bytes() -> None:
    """Two sockets readable in one batch: the first one's callback closes the other and opens
    a stream that the kernel gives the other's descriptor, and starts its read. The other's
    event, already polled, then reaches the new stream's callback, which must not take it for
    bytes of its own."""
    loop = asyncio.get_running_loop()
    watcher = watching(loop)
    assert isinstance(watcher, Watcher)
    ends = dict(enumerate(_pair() for _ in range(2)))
    stale_wakes: list[int] = []
    reused: dict[str, object] = {}

    def readable(index: int) -> None:
        if reused:
            return
        mine, other = ends[index][0], ends[1 - index][0]
        watcher.unwatch(mine.fileno())
        fd = other.fileno()
        watcher.unwatch(fd)
        other.close()
        left, right = _pair()
        assert left.fileno() == fd  # the lowest free descriptor is the one just closed
        stream = Stream(left, loop)
        reading = stream.recv()
        waiter = reading.send(None)  # the read begins its wait: its socket is watched
        assert fd in watcher

        def counted() -> None:
            stale_wakes.append(fd)
            stream._readable()

        watcher.watch(fd, counted)
        reused.update(stream=stream, peer=right, reading=reading, waiter=waiter)

    for index, (left, _) in ends.items():
        watcher.watch(left.fileno(), lambda index=index: readable(index))
    try:
        for _, right in ends.values():
            right.send(b"old")
        await asyncio.sleep(0.05)
        waiter = reused["waiter"]
        assert isinstance(waiter, asyncio.Future)
        assert stale_wakes and not waiter.done()
        reused["peer"].send(b"new")  # type: ignore[attr-defined]
        await asyncio.wait_for(waiter, 2)
        with pytest.raises(StopIteration) as done:
            reused["reading"].send(None)  # type: ignore[attr-defined]
        assert done.value.value == b"new"
    finally:
        reused["stream"].close()  # type: ignore[attr-defined]
        reused["peer"].close()  # type: ignore[attr-defined]
        for pair in ends.values():
            for sock in pair:
                sock.close()
    assert len(watcher) == 0


async def test_a_stale_event_for_a_reused_descriptor_delivers_nothing() -> None:
    """A stream whose descriptor another socket had, reported ready with nothing to read,
    keeps waiting and then reads its own bytes."""
    loop = asyncio.get_running_loop()
    left, right = _pair()
    stream = Stream(left, loop)
    try:
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        # the event a closed socket left for this descriptor
        stream._readable()
        await asyncio.sleep(0)
        assert not reading.done()
        right.send(b"mine")
        assert await asyncio.wait_for(reading, 2) == b"mine"
    finally:
        stream.close()
        right.close()


async def test_a_failing_callback_reaches_the_loops_handler_and_others_still_run() -> None:
    loop = asyncio.get_running_loop()
    failures: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: failures.append(context))
    bad, bad_peer = _pair()
    good, good_peer = _pair()
    delivered = asyncio.Event()
    watcher = watching(loop)

    def fail() -> None:
        watcher.unwatch(bad.fileno())
        raise RuntimeError("boom")

    def good_readable() -> None:
        watcher.unwatch(good.fileno())
        delivered.set()

    watcher.watch(bad.fileno(), fail)
    watcher.watch(good.fileno(), good_readable)
    try:
        bad_peer.send(b"x")
        good_peer.send(b"y")
        await asyncio.wait_for(delivered.wait(), 2)
        assert [type(failure["exception"]) for failure in failures] == [RuntimeError]
    finally:
        loop.set_exception_handler(None)
        for sock in (bad, bad_peer, good, good_peer):
            sock.close()


async def test_an_idle_watcher_closes_and_the_next_wait_makes_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real time: the idle check is a loop timer; a tenth of a second."""
    monkeypatch.setattr(readiness, "_IDLE_SECONDS", 0.01)
    loop = asyncio.get_running_loop()
    first = watching(loop)
    assert isinstance(first, Watcher)
    # a watcher made before the patch keeps its own pace: start from a fresh one
    first.close()
    fds = _open_fds()
    watcher = watching(loop)
    assert _open_fds() == fds + 1
    left, right = _pair()
    stream = Stream(left, loop)
    try:
        right.send(b"one")
        reading = asyncio.ensure_future(stream.recv())
        assert await asyncio.wait_for(reading, 2) == b"one"
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.05)
        # a socket watched keeps its watcher open
        assert not watcher.closed
        right.send(b"two")
        assert await asyncio.wait_for(reading, 2) == b"two"
        stream.close()
        await asyncio.sleep(0.05)
        assert watcher.closed
        assert _open_fds() == fds + 1  # the pair's right end, and nothing of the watcher
        assert watching(loop) is not watcher
    finally:
        stream.close()
        right.close()


def test_loops_made_and_closed_leave_no_descriptor() -> None:
    async def read_once(left_watched: bool) -> None:
        loop = asyncio.get_running_loop()
        left, right = _pair()
        stream = Stream(left, loop)
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0)
        right.send(b"x")
        assert await reading == b"x"
        stream.close()
        if left_watched:
            # a socket still watched when its loop closes: the watcher goes with the loop
            watching(loop).watch(right.fileno(), lambda: None)
        right.close()

    # what earlier tests left in reference cycles goes first, so that only these loops count
    gc.collect()
    asyncio.run(read_once(False))
    fds = _open_fds()
    watchers = len(readiness._watchers)
    for index in range(40):
        asyncio.run(read_once(index % 2 == 0))
    assert _open_fds() == fds
    assert len(readiness._watchers) == watchers


async def test_without_epoll_the_loops_own_readers_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readiness, "_HAS_EPOLL", False)
    loop = asyncio.get_running_loop()
    assert isinstance(watching(loop), LoopReaders)
    left, right = _pair()
    fd = left.fileno()
    stream = Stream(left, loop)
    try:
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        # the socket is one of the loop's readers: removing it stops the wait's wake
        assert loop.remove_reader(left.fileno())
        loop.add_reader(left.fileno(), stream._readable)
        right.send(b"hello")
        assert await asyncio.wait_for(reading, 2) == b"hello"
    finally:
        stream.close()
        right.close()
    assert not loop.remove_reader(fd)


async def test_bytes_beyond_one_read_are_read_without_another_edge() -> None:
    """The watcher reports a socket once per arrival: what one read leaves is read by the
    next, which reads before it waits."""
    loop = asyncio.get_running_loop()
    left, right = _pair()
    right.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    stream = Stream(left, loop)
    payload = bytes(range(256)) * 512  # more than one read takes
    try:
        reading = asyncio.ensure_future(stream.recv())
        await asyncio.sleep(0.01)
        right.sendall(payload)
        received = await asyncio.wait_for(reading, 2)
        while len(received) < len(payload):
            received += await asyncio.wait_for(stream.recv(), 2)
        assert received == payload
    finally:
        stream.close()
        right.close()
