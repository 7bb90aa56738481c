"""Serve the HTTP demo: flapping readiness, a slow starter, a redirect and a slow answer.

A deliberately tiny HTTP/1.1 server on asyncio streams: one request per connection (the kubelet
sends `Connection: close`), a bounded request head, and `Connection: close` on every answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from probetui.runtime.demo.common import (
    LOOPBACK,
    bind_loopback,
    bound_port,
    log,
    sleep_or_stop,
)

# the request line and headers of one request; anything longer is dropped
_HEAD_LIMIT = 16 * 1024
# a client that sends nothing for this long is dropped
_HEAD_TIMEOUT = 10.0
# warm-up progress is logged at most this often
_PROGRESS_EVERY = 5.0


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    # extra words for the log line only
    note: str = ""


Route = Callable[[str, str], Awaitable[Response]]


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _encode(response: Response) -> bytes:
    body = response.body.encode("utf-8")
    lines = [
        f"HTTP/1.1 {response.status} {_reason(response.status)}",
        "Content-Type: text/plain; charset=utf-8",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in response.headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class _Server:
    """Serves `route` on a bound socket until `close()`; every connection is a task of its own,
    so closing cancels the ones still in flight (a slow answer) instead of leaking them."""

    def __init__(self, route: Route) -> None:
        self._route = route
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, sock: socket.socket) -> None:
        self._server = await asyncio.start_server(self._accept, sock=sock, limit=_HEAD_LIMIT)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._handle(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                async with asyncio.timeout(_HEAD_TIMEOUT):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(parts) != 3:
                method, path = "?", "?"
                response = Response(400, "bad request\n")
            else:
                method, path = parts[0], parts[1].split("?", 1)[0]
                response = await self._route(method, path)
            writer.write(_encode(response))
            await writer.drain()
            shown = response.body.strip().splitlines()[0] if response.body.strip() else ""
            log(
                " ".join(p for p in (method, path, str(response.status), shown, response.note) if p)
            )
        except ConnectionError:
            pass  # the prober gave up (a timeout) or reset the connection: nothing to answer
        finally:
            writer.close()

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


async def serve_until_stopped(
    sock: socket.socket, route: Route, stop: asyncio.Event, listening: str
) -> int:
    """Listen, then say so (the first line tells a watcher the port is open), until `stop`."""
    server = _Server(route)
    await server.start(sock)
    log(listening)
    try:
        await stop.wait()
    finally:
        await server.close()
    return 0


def _not_found(path: str) -> Response:
    return Response(404, f"no route for {path}\n")


# --- flap ---


def flap_phase(elapsed: float, healthy: float, failing: float) -> tuple[bool, float]:
    """(healthy?, seconds until the next switch) at `elapsed` seconds into the cycle that starts
    with `healthy` seconds of 200s and continues with `failing` seconds of 503s."""
    cycle = healthy + failing
    t = elapsed % cycle
    if t < healthy:
        return True, healthy - t
    return False, cycle - t


async def run_flap(port: int, healthy: float, failing: float, stop: asyncio.Event) -> int:
    sock = bind_loopback(port)
    started = time.monotonic()

    async def route(method: str, path: str) -> Response:
        if path == "/ready":
            ok, remaining = flap_phase(time.monotonic() - started, healthy, failing)
            if ok:
                return Response(200, "ok\n", note=f"(failing in {remaining:.0f}s)")
            return Response(503, "db connection refused\n", note=f"(recovers in {remaining:.0f}s)")
        if path in ("/healthz", "/"):
            return Response(200, "ok\n")
        return _not_found(path)

    listening = (
        f"flap: listening on {LOOPBACK}:{bound_port(sock)}; /ready is 200 for {healthy:g}s, "
        f"then 503 for {failing:g}s, repeating; /healthz is always 200"
    )
    return await serve_until_stopped(sock, route, stop, listening)


# --- slow ---


async def run_slow(port: int, start_after: float, stop: asyncio.Event) -> int:
    # Bound now, listening later: until then a connect is refused, as for an app still booting,
    # and a taken port is still reported at once.
    sock = bind_loopback(port)
    log(f"slow: warming up for {start_after:g}s before listening on {LOOPBACK}:{bound_port(sock)}")
    started = time.monotonic()
    while (left := start_after - (time.monotonic() - started)) > 0:
        if await sleep_or_stop(stop, min(left, _PROGRESS_EVERY)):
            sock.close()
            return 0
        elapsed = time.monotonic() - started
        if elapsed < start_after:
            log(f"slow: still warming up ({elapsed:.0f}s of {start_after:g}s)")

    async def route(method: str, path: str) -> Response:
        if path in ("/healthz", "/ready", "/"):
            return Response(200, "ok\n")
        return _not_found(path)

    listening = (
        f"slow: listening on {LOOPBACK}:{bound_port(sock)} after {start_after:g}s; /healthz is 200"
    )
    return await serve_until_stopped(sock, route, stop, listening)


# --- redirect ---


def default_location(port: int) -> str:
    # Another host as far as the kubelet is concerned (it compares host names), yet loopback, so
    # even a client that did follow it would stay on this machine.
    return f"http://127.0.0.2:{port}/healthz"


async def run_redirect(port: int, location: str | None, stop: asyncio.Event) -> int:
    sock = bind_loopback(port)
    target = location or default_location(bound_port(sock))

    async def route(method: str, path: str) -> Response:
        if path in ("/healthz", "/ready"):
            # no newline: the body ends up in the kubelet's one-line ProbeWarning event
            return Response(302, f"Found: {target}", headers=(("Location", target),))
        if path == "/":
            return Response(200, "ok\n")
        return _not_found(path)

    listening = (
        f"redirect: listening on {LOOPBACK}:{bound_port(sock)}; /healthz answers 302 -> {target}"
    )
    return await serve_until_stopped(sock, route, stop, listening)


# --- timeout ---


async def run_timeout(port: int, delay: float, stop: asyncio.Event) -> int:
    sock = bind_loopback(port)

    async def route(method: str, path: str) -> Response:
        if path in ("/healthz", "/ready"):
            await asyncio.sleep(delay)
            return Response(200, "ok\n", note=f"(after {delay:g}s)")
        if path == "/":
            return Response(200, "ok\n")
        return _not_found(path)

    listening = (
        f"timeout: listening on {LOOPBACK}:{bound_port(sock)}; /healthz answers after {delay:g}s"
    )
    return await serve_until_stopped(sock, route, stop, listening)
