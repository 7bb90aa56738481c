"""Run small demo services for `probetui demo`, one per kind, each a real server on 127.0.0.1.

    python -m probetui.runtime.demo.services KIND [options]

Kinds: flap, slow, grpc, tcp, exec-file, redirect, timeout (`--help` on each). Every service
logs one short line per request to stdout, stops cleanly on SIGTERM or SIGINT (exit 0), and
exits 1 with one line on stderr when its port is taken. Every timing is an option, in seconds
(fractions allowed), so tests can run the same behaviour fast.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from probetui.runtime.demo.common import (
    LOOPBACK,
    PortTaken,
    ServiceError,
    bind_loopback,
    bound_port,
    fail,
    log,
    sleep_or_stop,
    stop_on_signals,
)

PROG = "python -m probetui.runtime.demo.services"
# the env var exec-file reads its path from when --path is not given
HEALTH_FILE_ENV = "HEALTH_FILE"
# how often exec-file says it is still working
_HEARTBEAT = 10.0


# --- tcp ---


async def run_tcp(port: int, stop: asyncio.Event) -> int:
    sock = bind_loopback(port)

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        log(f"tcp: connection from {peer[0]}:{peer[1]}, closing it")
        writer.close()

    server = await asyncio.start_server(accept, sock=sock)
    log(f"tcp: listening on {LOOPBACK}:{bound_port(sock)}; accepts and closes every connection")
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()
    return 0


# --- exec-file ---


class _HealthFile:
    """Manages the file an exec probe looks at. File calls are quick local ones, made in
    plain methods so the event loop code reads as what it is: a schedule."""

    def __init__(self, raw: str) -> None:
        self.path = Path(raw)
        self._made_dir = False

    def create(self) -> None:
        self._made_dir = not self.path.parent.exists()
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path.write_text("ok\n", encoding="utf-8")
        except OSError as exc:
            raise ServiceError(
                f"exec-file cannot create {self.path}: {exc.strerror or exc}"
            ) from None

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def exists(self) -> bool:
        return self.path.exists()

    def clean_up(self) -> None:
        """Leave nothing behind: the file, and the directory if this instance made it."""
        with contextlib.suppress(OSError):
            self.path.unlink()
        if self._made_dir:
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()


async def run_exec_file(path_arg: str | None, remove_after: float, stop: asyncio.Event) -> int:
    raw = path_arg or os.environ.get(HEALTH_FILE_ENV, "")
    if not raw:
        raise ServiceError(
            f"exec-file needs a file to manage: give --path FILE or set {HEALTH_FILE_ENV}"
        )
    health = _HealthFile(raw)
    health.create()
    log(f"exec-file: created {health.path}; removing it in {remove_after:g}s")
    try:
        started = time.monotonic()
        removed = False
        while not stop.is_set():
            left = remove_after - (time.monotonic() - started)
            if not removed and left <= 0:
                health.remove()
                removed = True
                log(f"exec-file: removed {health.path}; an exec probe on it fails from now on")
                continue
            wait = min(left, _HEARTBEAT) if not removed else _HEARTBEAT
            if await sleep_or_stop(stop, wait):
                break
            state = "present" if health.exists() else "gone"
            log(f"exec-file: working; {health.path.name} is {state}")
    finally:
        health.clean_up()
    return 0


# --- command line ---


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # one line, not argparse's usage block: this is a container's last words in the UI
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    value = _seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 1-65535 (0: any free port), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Demo services for `probetui demo`.")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND", parser_class=_Parser)

    def kind(name: str, help_text: str, port: bool = True) -> argparse.ArgumentParser:
        sub = kinds.add_parser(name, help=help_text, description=help_text)
        if port:
            sub.add_argument("--port", type=_port, required=True, help="port on 127.0.0.1")
        return sub

    flap = kind("flap", "HTTP: /ready alternates 200 and 503; /healthz is always 200")
    flap.add_argument("--healthy", type=_positive_seconds, default=20.0, help="seconds of 200")
    flap.add_argument("--failing", type=_seconds, default=10.0, help="seconds of 503")

    slow = kind("slow", "HTTP: listens only after a slow start; then /healthz is 200")
    slow.add_argument("--start-after", type=_seconds, default=25.0, help="seconds before listening")

    grpc = kind("grpc", "gRPC health: a named service flips to NOT_SERVING now and then")
    grpc.add_argument("--service", default="demo.Orders", help="the named service that flips")
    grpc.add_argument("--serving", type=_positive_seconds, default=15.0, help="seconds SERVING")
    grpc.add_argument(
        "--not-serving", type=_seconds, default=5.0, help="seconds NOT_SERVING (0: never)"
    )

    kind("tcp", "TCP: accepts every connection and closes it")

    exec_file = kind("exec-file", "creates a file, removes it later, keeps running", port=False)
    exec_file.add_argument("--path", help=f"the file (default: ${HEALTH_FILE_ENV})")
    exec_file.add_argument(
        "--remove-after", type=_seconds, default=60.0, help="seconds before removing it"
    )

    redirect = kind("redirect", "HTTP: /healthz answers 302 to another host")
    redirect.add_argument(
        "--location", help="the Location (default: http://127.0.0.2:PORT/healthz)"
    )

    timeout = kind("timeout", "HTTP: /healthz answers only after a delay")
    timeout.add_argument("--delay", type=_seconds, default=3.0, help="seconds before answering")
    return parser


async def _run(args: argparse.Namespace) -> int:
    stop = stop_on_signals()
    if args.kind == "flap":
        from probetui.runtime.demo.web import run_flap

        return await run_flap(args.port, args.healthy, args.failing, stop)
    if args.kind == "slow":
        from probetui.runtime.demo.web import run_slow

        return await run_slow(args.port, args.start_after, stop)
    if args.kind == "grpc":
        # grpcio is imported only by the service that needs it
        from probetui.runtime.demo.health import run_grpc

        return await run_grpc(args.port, args.service, args.serving, args.not_serving, stop)
    if args.kind == "tcp":
        return await run_tcp(args.port, stop)
    if args.kind == "exec-file":
        return await run_exec_file(args.path, args.remove_after, stop)
    if args.kind == "redirect":
        from probetui.runtime.demo.web import run_redirect

        return await run_redirect(args.port, args.location, stop)
    from probetui.runtime.demo.web import run_timeout

    return await run_timeout(args.port, args.delay, stop)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except (PortTaken, ServiceError) as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
