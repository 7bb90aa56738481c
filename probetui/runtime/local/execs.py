"""Run exec probe attempts through the container's supervisor: probetui's end of its control socket.

An exec probe runs "in the container" (docs/kubelet-behaviour.md §15.4). The local runtime asks
the container's supervisor (`supervisor.py`, `_Control`) to fork the command with the
container's environment and working directory, as the leader of a session of its own below the
supervisor. The supervisor is a child subreaper, so what an attempt leaves running (a daemon
that forked twice and called setsid) stays in the container and ends with it, however probetui
ends, as it would in a container's PID namespace; the attempt's own group is killed when the
attempt ends, as `run_local` does (`collect`, shared with it).

`ExecChannel` is one container instance's socket (SOCK_SEQPACKET): one request per attempt (a
memfd with the command, and the write ends of the attempt's two pipes), and the supervisor's
answers (`S` started, `E` could not start, `Z` exited) dispatched to the attempt waiting for
them. Every wait is bounded: the attempt's timeout, then the supervisor's end (the socket's),
which answers every attempt still waiting as killed, which it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import socket
from collections.abc import Sequence

from probetui.probe.exec import ExecOutput, collect
from probetui.probe.gotext import exec_start_error
from probetui.runtime.local.launch import spec_memfd
from probetui.runtime.local.procspec import ProcessSpec

# containerd's words for an exec in a container that is not running (ExecSync's error)
NOT_RUNNING = "failed to exec in container: container is in CONTAINER_EXITED state"
# an answer is a few bytes: "Z ID CODE"
_ANSWER_BYTES = 256


class _Attempt:
    """Holds one attempt as `collect` reads it (`probe.exec.ExecProcess`)."""

    def __init__(
        self,
        pid: int,
        exited: asyncio.Future[int],
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self._exited = exited

    @property
    def returncode(self) -> int | None:
        return self._exited.result() if self._exited.done() else None

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)


class ExecChannel:
    """Runs one container instance's exec attempts, through its supervisor's control socket."""

    def __init__(self, sock: socket.socket, spec: ProcessSpec) -> None:
        sock.setblocking(False)
        self._sock = sock
        self._spec = spec
        self._loop = asyncio.get_running_loop()
        self._ids = itertools.count(1)
        # request ID -> (PID, b"") once started, (None, b"chdir|exec ERRNO") when it could not
        # start, (None, b"") when the supervisor is gone
        self._starts: dict[int, asyncio.Future[tuple[int | None, bytes]]] = {}
        # request ID -> exit code as asyncio gives it (-N for signal N)
        self._exits: dict[int, asyncio.Future[int]] = {}
        # request ID -> PID, from its start to its exit
        self._running: dict[int, int] = {}
        self.closed = False
        self._loop.add_reader(sock.fileno(), self._readable)

    async def run(self, argv: Sequence[str], timeout: float) -> ExecOutput:
        """Run one attempt, as `probe.exec.run_local` does, in the container's stead."""
        if not argv:
            return ExecOutput(b"", None, error="exec: no command")
        if self.closed:
            return ExecOutput(b"", None, error=NOT_RUNNING)
        deadline = self._loop.time() + timeout
        rid = next(self._ids)
        started = self._starts[rid] = self._loop.create_future()
        exited = self._exits[rid] = self._loop.create_future()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        readable = [out_r, err_r]
        transports: list[asyncio.BaseTransport] = []
        collecting = False
        try:
            spec_fd = spec_memfd(ProcessSpec(tuple(argv), self._spec.env, self._spec.cwd))
            try:
                socket.send_fds(self._sock, [b"X%d" % rid], [spec_fd, out_w, err_w])
            except OSError:
                # the supervisor is gone, or has not read what it was sent
                return ExecOutput(b"", None, error=NOT_RUNNING)
            finally:
                os.close(spec_fd)
                os.close(out_w)
                os.close(err_w)
            try:
                async with asyncio.timeout_at(deadline):
                    pid, failure = await started
            except TimeoutError:
                return ExecOutput(b"", None, timed_out=True)
            if pid is None:
                return ExecOutput(b"", None, error=self._start_error(argv[0], failure))
            readers = []
            for fd in (out_r, err_r):
                reader = asyncio.StreamReader()
                # the file object owns the descriptor from here: closed by the transport, or by
                # the file object itself when the connection is cancelled before the transport
                pipe = os.fdopen(fd, "rb", buffering=0)
                readable.remove(fd)
                try:
                    transport, _ = await self._loop.connect_read_pipe(
                        lambda reader=reader: asyncio.StreamReaderProtocol(reader), pipe
                    )
                except BaseException:
                    pipe.close()
                    raise
                transports.append(transport)
                readers.append(reader)
            attempt = _Attempt(pid, exited, readers[0], readers[1])
            collecting = True
            return await collect(attempt, max(deadline - self._loop.time(), 0.0))
        finally:
            # cancelled or timed out before `collect` (which kills the attempt's group itself):
            # an attempt that started meanwhile, and is not yet reaped, is nobody's
            if not collecting and started.done() and not started.cancelled() and not exited.done():
                started_pid = started.result()[0]
                if started_pid is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(started_pid, signal.SIGKILL)
            self._starts.pop(rid, None)
            self._exits.pop(rid, None)
            for transport in transports:
                transport.close()
            for fd in readable:
                os.close(fd)

    @staticmethod
    def _start_error(argv0: str, failure: bytes) -> str:
        parts = failure.split()
        if len(parts) != 2 or not parts[1].isdigit():
            return NOT_RUNNING
        err = int(parts[1])
        return exec_start_error(argv0, OSError(err, os.strerror(err)))

    def _readable(self) -> None:
        while True:
            try:
                data = self._sock.recv(_ANSWER_BYTES)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.close()
                return
            self._answer(data.split())

    def _answer(self, parts: list[bytes]) -> None:
        if len(parts) < 3 or not parts[1].isdigit():
            return
        kind, rid = parts[0], int(parts[1])
        if kind == b"S" and parts[2].isdigit():
            pid = int(parts[2])
            self._running[rid] = pid
            started = self._starts.pop(rid, None)
            if started is None or started.done():
                # nobody waits for it any more (timed out or cancelled while starting)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            else:
                started.set_result((pid, b""))
        elif kind == b"E":
            failed = self._starts.pop(rid, None)
            if failed is not None and not failed.done():
                failed.set_result((None, b" ".join(parts[2:])))
        elif kind == b"Z":
            self._running.pop(rid, None)
            exited = self._exits.pop(rid, None)
            with contextlib.suppress(ValueError):
                code = int(parts[2])
                if exited is not None and not exited.done():
                    exited.set_result(code)

    def close(self) -> None:
        """The supervisor is gone: take its last answers, then answer every attempt still
        waiting (it was killed with the container). An attempt it did not answer for was not
        reaped by it (it was SIGKILLed itself): that attempt's group is killed here."""
        if self.closed:
            return
        self.closed = True
        self._loop.remove_reader(self._sock.fileno())
        with contextlib.suppress(OSError):
            while data := self._sock.recv(_ANSWER_BYTES):
                self._answer(data.split())
        self._sock.close()
        for pid in self._running.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        self._running.clear()
        for started in self._starts.values():
            if not started.done():
                started.set_result((None, b""))
        for exited in self._exits.values():
            if not exited.done():
                exited.set_result(-signal.SIGKILL)


__all__ = ["NOT_RUNNING", "ExecChannel"]
