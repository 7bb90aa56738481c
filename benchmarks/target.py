"""A fast loopback target for the benchmarks, in its own process.

`python -m benchmarks.target --kind http|grpc [--port N] [--uvloop | --raw]` listens on 127.0.0.1,
prints `READY <port>` on one line once it accepts connections, and serves until it is sent
SIGTERM or SIGINT (or its stdin closes). HTTP answers every request with a tiny 200 and closes
the connection, as a health endpoint behind `Connection: close` does; a bare connect and close
(a TCP probe) costs it one accept. gRPC serves `grpc.health.v1.Health` with SERVING. `--raw`
serves HTTP on a plain epoll loop instead of asyncio: about a third of asyncio's CPU per
connection, for benchmarks where the target shares the cores with what is measured.

`start_target()` runs it from a benchmark: nginx when it is installed (the fastest thing to
probe, so the engine and not the target is what is measured), else this module; the caller
gets the address, the PID for CPU accounting, and must call `stop()`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from benchmarks.common import process_cpu_seconds

_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
    b"Connection: close\r\n\r\nok"
)
# a request head larger than this is not a probe: answer it anyway and hang up
_MAX_HEAD = 16 * 1024
_READY_TIMEOUT = 10.0
_PR_SET_PDEATHSIG = 1


class _HTTPServer(asyncio.Protocol):
    """One connection: wait for the end of the request head, answer, close."""

    __slots__ = ("_head", "_transport")

    def __init__(self) -> None:
        self._head = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._head += data
        if b"\r\n\r\n" in self._head or len(self._head) > _MAX_HEAD:
            assert self._transport is not None
            self._transport.write(_RESPONSE)
            self._transport.close()

    def eof_received(self) -> bool:
        return False  # a TCP probe hung up: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None


async def _serve_http(port: int, stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_HTTPServer, "127.0.0.1", port, backlog=4096)
    print(f"READY {server.sockets[0].getsockname()[1]}", flush=True)
    try:
        await stop.wait()
    finally:
        server.close()


def _serve_raw(port: int) -> None:
    """HTTP (and bare TCP) on one epoll loop, no asyncio: a connection costs its syscalls and a
    few lines of Python (accept, a non-blocking read, maybe one wait, the canned answer, close),
    so a benchmark's target takes as little of the cores the prober is measured on as Python
    allows. Stops on SIGTERM or SIGINT, or when its stdin closes (the benchmark is gone)."""
    import select

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(4096)
    listener.setblocking(False)
    lfd = listener.fileno()
    stop_r, stop_w = os.pipe()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: os.write(stop_w, b"x"))
    poller = select.epoll()
    poller.register(lfd, select.EPOLLIN)
    poller.register(stop_r, select.EPOLLIN)
    with contextlib.suppress(OSError, ValueError):
        poller.register(sys.stdin.fileno(), select.EPOLLIN)
    stdin_fd = sys.stdin.fileno() if sys.stdin is not None else -1
    waiting: dict[int, tuple[socket.socket, bytes]] = {}  # fd -> (connection, head so far)
    accept, dontwait, answer = listener.accept, socket.MSG_DONTWAIT, _RESPONSE
    print(f"READY {listener.getsockname()[1]}", flush=True)

    def head(conn: socket.socket, got: bytes) -> bool:
        """True when the connection is done with: answered (a whole head) or hung up."""
        if not got:  # a TCP probe's close, or a client gone
            conn.close()
            return True
        if b"\r\n\r\n" in got or len(got) > _MAX_HEAD:
            with contextlib.suppress(OSError):
                conn.send(answer)
            conn.close()
            return True
        return False

    while True:
        try:
            ready = poller.poll()
        except InterruptedError:
            continue
        for fd, _ in ready:
            if fd == lfd:
                while True:
                    try:
                        conn, _ = accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:  # out of files for a moment: the backlog keeps them
                        break
                    try:
                        got = conn.recv(_MAX_HEAD, dontwait)
                    except BlockingIOError:
                        waiting[conn.fileno()] = (conn, b"")
                        poller.register(conn.fileno(), select.EPOLLIN)
                        continue
                    except OSError:
                        conn.close()
                        continue
                    if not head(conn, got):
                        waiting[conn.fileno()] = (conn, got)
                        poller.register(conn.fileno(), select.EPOLLIN)
            elif fd in waiting:
                conn, so_far = waiting[fd]
                try:
                    got = conn.recv(_MAX_HEAD, dontwait)
                except BlockingIOError:
                    continue
                except OSError:
                    got = b""
                if head(conn, so_far + got if got else b""):
                    del waiting[fd]  # closing it took it out of the poller
                else:
                    waiting[fd] = (conn, so_far + got)
            elif fd in (stop_r, stdin_fd):
                if fd == stdin_fd and os.read(fd, 1):
                    continue
                for conn, _ in waiting.values():
                    conn.close()
                listener.close()
                return


async def _serve_grpc(port: int, stop: asyncio.Event) -> None:
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print(f"READY {bound}", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop(None)


async def _main(kind: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # the parent going away closes our stdin: stop then too, so no target outlives a benchmark
    with contextlib.suppress(OSError, ValueError, NotImplementedError):
        loop.add_reader(sys.stdin.fileno(), lambda: sys.stdin.buffer.read1(1) or stop.set())
    await (_serve_grpc if kind == "grpc" else _serve_http)(port, stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.target", description=__doc__)
    parser.add_argument("--kind", choices=("http", "grpc"), default="http")
    parser.add_argument("--port", type=int, default=0, help="0: one the OS picks")
    parser.add_argument("--uvloop", action="store_true", help="serve on uvloop")
    parser.add_argument(
        "--raw",
        action="store_true",
        help="HTTP on a plain epoll loop (no asyncio): the cheapest this module serves",
    )
    args = parser.parse_args(argv)
    if args.raw and args.kind == "http":
        _serve_raw(args.port)
        return 0
    loop_factory = None
    if args.uvloop:
        try:
            import uvloop
        except ImportError:
            print("benchmarks.target: --uvloop needs uvloop: pip install uvloop", file=sys.stderr)
            return 2
        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(_main(args.kind, args.port))
    return 0


# ---------------------------------------------------------------------------------------------
# Starting a target from a benchmark


@dataclass
class Target:
    """A running target process: where it listens, what it is, how to end it."""

    host: str
    port: int
    kind: str  # "nginx", "asyncio", "raw" or "grpc"
    process: subprocess.Popen[bytes] | None = None
    _workdir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def cpu_seconds(self) -> float:
        """User + system CPU of the target so far (and its children, for nginx's worker)."""
        if self.process is None:
            return 0.0
        return sum(process_cpu_seconds(pid) for pid in _tree(self.process.pid))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM if self.kind != "nginx" else signal.SIGQUIT)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None


def _tree(pid: int) -> list[int]:
    """pid and its children (nginx: master and worker)."""
    pids = [pid]
    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as f:
        pids += [int(p) for p in f.read().split()]
    return pids


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc."""
    return process_cpu_seconds(pid)


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the benchmark dies, however it dies, so no
    target outlives it (PR_SET_PDEATHSIG; Linux only, a no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode} at start")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {_READY_TIMEOUT:.0f} s")


_NGINX_CONF = """\
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log stderr crit;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    client_body_temp_path {dir}; proxy_temp_path {dir}; fastcgi_temp_path {dir};
    uwsgi_temp_path {dir}; scgi_temp_path {dir};
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{ return 200 "ok"; }}
    }}
}}
"""


def _start_nginx(nginx: str) -> Target:
    workdir = tempfile.TemporaryDirectory(prefix="probetui-bench-nginx-")
    port = _free_port()
    conf = os.path.join(workdir.name, "nginx.conf")
    with open(conf, "w") as f:
        f.write(_NGINX_CONF.format(dir=workdir.name, port=port))
    process = subprocess.Popen(
        [nginx, "-c", conf, "-p", workdir.name],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )
    target = Target("127.0.0.1", port, "nginx", process, workdir)
    try:
        _wait_listening(port, process, "nginx")
    except BaseException:
        target.stop()
        raise
    return target


def _start_python(kind: str, uvloop: bool, raw: bool = False) -> Target:
    argv = [sys.executable, "-m", "benchmarks.target", "--kind", kind]
    if raw and kind == "http":
        argv.append("--raw")
    elif uvloop:
        argv.append("--uvloop")
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )
    name = "grpc" if kind == "grpc" else "raw" if raw else "asyncio"
    target = Target("127.0.0.1", 0, name, process)
    try:
        assert process.stdout is not None
        line = _read_line(process, _READY_TIMEOUT)
        if not line.startswith("READY "):
            raise RuntimeError(f"benchmarks.target did not start: {line!r}")
        target.port = int(line.split()[1])
    except BaseException:
        target.stop()
        raise
    return target


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(process.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise RuntimeError(f"benchmarks.target printed nothing within {timeout:.0f} s")
    return process.stdout.readline().decode(errors="replace").strip()


def start_target(
    kind: str = "http", *, prefer_nginx: bool = True, uvloop: bool = True, raw: bool = False
) -> Target:
    """A loopback target for `kind` ("http", "tcp" or "grpc"): nginx for HTTP and TCP when
    installed and preferred, else `python -m benchmarks.target` (on uvloop when it imports;
    `raw`: on its plain epoll loop, cheaper than asyncio without uvloop)."""
    if kind in ("http", "tcp") and prefer_nginx:
        nginx = shutil.which("nginx") or next(
            (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)),
            None,
        )
        if nginx:
            return _start_nginx(nginx)
    if uvloop:
        try:
            import uvloop as _  # noqa: F401
        except ImportError:
            uvloop = False
    return _start_python("grpc" if kind == "grpc" else "http", uvloop, raw)


if __name__ == "__main__":
    sys.exit(main())
