"""Share what every demo service needs: loopback binding, one-line logs, stopping on a signal."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import socket
import sys
import time

# Demo services listen here and nowhere else: the demo must never be reachable from outside.
LOOPBACK = "127.0.0.1"


class PortTaken(Exception):
    """Signals that the port cannot be bound. `str()` is the one line the service prints before
    exiting."""


class ServiceError(Exception):
    """Signals bad options or environment. `str()` is the one line the service prints before
    exiting."""


def log(message: str) -> None:
    """One short line to stdout, flushed at once: the container output the UI shows.

    Once nobody reads the output any more (probetui is gone: the pipe is broken, or the terminal
    hung up), the line is dropped and so is every later one; logging never stops a service from
    doing its job, above all from stopping on a signal.
    """
    try:
        print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)
    except OSError:
        _silence(sys.stdout)


def _silence(stream: object) -> None:
    """Point a dead stdout/stderr at /dev/null, so neither later writes nor the flush at exit
    raise again."""
    with contextlib.suppress(OSError, ValueError):
        fd = stream.fileno()  # type: ignore[attr-defined]
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def _bind_error(port: int, exc: OSError) -> PortTaken:
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    if exc.errno == errno.EADDRINUSE:
        return PortTaken(
            f"port {port} is taken: {reason} on {LOOPBACK}:{port} "
            "(stop what listens there, or run the demo again to get fresh ports)"
        )
    return PortTaken(f"port {port} cannot be bound on {LOOPBACK}: {reason}")


def bind_loopback(port: int) -> socket.socket:
    """Return a TCP socket bound to 127.0.0.1:`port` (0 lets the OS choose), not yet listening.

    Bound but not listening refuses connections, exactly like a port nobody has opened, which is
    what a probe should see while an app is still starting; binding early still reports a taken
    port at once. SO_REUSEADDR lets a restarted container take its port back while connections
    of its previous instance sit in TIME-WAIT.
    """
    if not 0 <= port <= 65535:
        raise ServiceError(f"port {port} is out of range (give 1-65535, or 0 for any free port)")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        raise _bind_error(port, exc) from None
    sock.setblocking(False)
    return sock


def check_port_free(port: int) -> None:
    """Raise PortTaken when something already listens on 127.0.0.1:`port`.

    For servers (gRPC) that bind by themselves and report a taken port less clearly.
    """
    if port == 0:
        return
    bind_loopback(port).close()


def bound_port(sock: socket.socket) -> int:
    return int(sock.getsockname()[1])


def stop_on_signals() -> asyncio.Event:
    """Return an event set by SIGTERM or SIGINT: how the kubelet (and Ctrl-C) asks a container to
    stop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def request_stop(signame: str) -> None:
        # stop first: the line may not get written (see log), the stop must happen
        first = not stop.is_set()
        stop.set()
        if first:
            log(f"received {signame}, shutting down")

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, request_stop, sig.name)
    return stop


async def sleep_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep up to `seconds`; True when a stop was requested meanwhile."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(max(seconds, 0.0)):
            await stop.wait()
    return stop.is_set()


def fail(message: str) -> int:
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError:
        _silence(sys.stderr)
    return 1
