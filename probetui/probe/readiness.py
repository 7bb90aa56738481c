"""Watch sockets for reads with one readiness watcher per event loop (`watching`).

The lean connections (`probetui.probe.lean_conn`) open a socket per attempt, as the kubelet's
transport does (DisableKeepAlives). Registering each with `loop.add_reader` pays asyncio's
bookkeeping per socket (a transport check, a selector key, a handle); here the loop watches one
epoll instead, and each socket is one entry in it and in a dict. Where `select.epoll` does not
exist the loop's own readers are used, as before.
"""

from __future__ import annotations

import asyncio
import select
import weakref
from collections.abc import Callable
from typing import Protocol

# edge-triggered: a socket is reported once each time bytes arrive, so a socket already read
# does not wake the loop again through the epoll (benchmarks.engine guards it); a reader
# therefore reads before it waits, and waits only once a read found nothing, as
# `lean_conn.Stream.recv` does
_EVENTS = select.EPOLLIN | select.EPOLLET if hasattr(select, "epoll") else 0

# a watcher with no socket since its last look is closed: a loop that stops probing keeps no
# descriptor for it
_IDLE_SECONDS = 30.0


class Readiness(Protocol):
    """Calls a socket's callback when it turns readable, from `watch` until `unwatch`."""

    def watch(self, fd: int, callback: Callable[[], None]) -> None: ...

    def unwatch(self, fd: int) -> None: ...


class LoopReaders:
    """Watches each socket with the loop's own `add_reader`, where epoll does not exist."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def watch(self, fd: int, callback: Callable[[], None]) -> None:
        self._loop.add_reader(fd, callback)

    def unwatch(self, fd: int) -> None:
        self._loop.remove_reader(fd)


class Watcher:
    """Owns one epoll that the loop watches as a single reader, and the callback of each socket
    registered in it; calls the callbacks of the sockets it reports readable."""

    __slots__ = ("__weakref__", "_callbacks", "_epoll", "_used", "closed", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._epoll = select.epoll()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._used = False
        self.closed = False
        loop.add_reader(self._epoll.fileno(), self._ready)
        loop.call_later(_IDLE_SECONDS, self._close_if_idle)

    def watch(self, fd: int, callback: Callable[[], None]) -> None:
        try:
            self._epoll.register(fd, _EVENTS)
        except FileExistsError:
            # a socket watched again replaces its callback, as `loop.add_reader` does
            self._epoll.modify(fd, _EVENTS)
        self._callbacks[fd] = callback
        self._used = True

    def unwatch(self, fd: int) -> None:
        # the entry goes with the registration: a closed stream leaves nothing behind, and a
        # descriptor the kernel reuses is never reported to the callback of the socket it was
        if self._callbacks.pop(fd, None) is not None:
            self._epoll.unregister(fd)

    def __contains__(self, fd: int) -> bool:
        return fd in self._callbacks

    def __len__(self) -> int:
        return len(self._callbacks)

    def _ready(self) -> None:
        callbacks = self._callbacks
        for fd, _ in self._epoll.poll(0):
            # an event for a socket unwatched since the poll is dropped: only a watched
            # socket's own callback reads, and it reads its own socket
            callback = callbacks.get(fd)
            if callback is None:
                continue
            try:
                callback()
            except Exception as exc:
                # one socket's failure reaches the loop's handler, as a handle's would, and
                # the other sockets' events are still delivered
                self.loop.call_exception_handler(
                    {"message": "readiness callback failed", "exception": exc}
                )

    def _close_if_idle(self) -> None:
        if self._callbacks or self._used:
            self._used = False
            self.loop.call_later(_IDLE_SECONDS, self._close_if_idle)
        else:
            self.close()

    def close(self) -> None:
        """Stop the loop watching the epoll, and close it; the next `watching` makes a new one."""
        if not self.closed:
            self.closed = True
            if not self.loop.is_closed():
                self.loop.remove_reader(self._epoll.fileno())
            self._epoll.close()
            if _watchers.get(id(self.loop)) is self:
                del _watchers[id(self.loop)]


# keyed by the loop's id: a watcher holds its loop, so the id cannot pass to another loop while
# the entry lives, and the entry goes when the loop closes and drops the watcher's reader
_watchers: weakref.WeakValueDictionary[int, Watcher] = weakref.WeakValueDictionary()


def watching(loop: asyncio.AbstractEventLoop) -> Readiness:
    """Return the readiness watcher of `loop`, made on first use."""
    if not _HAS_EPOLL:
        return LoopReaders(loop)
    watcher = _watchers.get(id(loop))
    if watcher is None or watcher.closed or watcher.loop is not loop:
        watcher = _watchers[id(loop)] = Watcher(loop)
    return watcher


_HAS_EPOLL = hasattr(select, "epoll")
