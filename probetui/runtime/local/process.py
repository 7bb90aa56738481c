"""Run one container instance as a local process, supervised the way a container runtime would.

Choices, and their limits:

- Each container is the leader of a process group of its own; a stop signals the whole group,
  and once the leader has exited every process the container started is killed with SIGKILL, as
  the kernel does to a PID namespace when the container's PID 1 exits: what is left of the group,
  and what moved to another group or session (a daemon that forked twice and called setsid),
  which the supervisor, a child subreaper, has adopted.
- A command that cannot be started (missing executable, not executable, bad workingDir) raises
  `ContainerStartError` with exit code 128 and reason "StartError": what containerd's CRI plugin
  records in the container's terminated state when the task fails to start (Docker used to report
  127/126 instead; containerd is the runtime most clusters run).
- Death by signal N is reported as exit code 128+N, as a runtime does: 143 for SIGTERM, 137 for
  SIGKILL.
- Every container runs under a supervisor of its own (`supervisor.py`, started as `launch.py`
  says), so that no container outlives probetui however probetui ends, SIGKILL and the OOM killer
  included. Start errors still surface as `ContainerStartError` before the container counts as
  started: the supervisor reports the failed chdir or exec first. The supervisor exits as the
  container's leader did (same code, or killed by the same signal), so exit codes and 128+N are
  unchanged.
- The container's group is held in a `ProcessGroupRegistry` (`groups.py`) while it runs, which
  kills every group at once on the endings of probetui that can be caught; the supervisors cover
  the rest.
- stdout and stderr are kept as a bounded tail of lines (`output.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence

from probetui.kubelet.instance import START_ERROR_EXIT_CODE, START_ERROR_REASON
from probetui.probe.exec import ExecOutput
from probetui.runtime.local.execs import NOT_RUNNING, ExecChannel
from probetui.runtime.local.groups import REGISTRY, ProcessGroupRegistry, signal_group
from probetui.runtime.local.launch import (
    ORPHAN_GRACE,
    read_status,
    spec_memfd,
    start_failure,
    supervisor_argv,
    supervisor_code,
)
from probetui.runtime.local.output import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_TAIL_BYTES,
    OutputLine,
    Tail,
)
from probetui.runtime.local.procspec import LocalRuntimeError, ProcessSpec

# after the leader exits and the group is killed, how long the pipes may take to reach EOF
_PIPE_GRACE = 0.2


class ContainerStartError(LocalRuntimeError):
    """Signals that the process could not be started; `exit_code` and `reason` are what a runtime
    records."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = START_ERROR_EXIT_CODE
        self.reason = START_ERROR_REASON


class _Protocol(asyncio.SubprocessProtocol):
    """Feeds the tails and reports the exit as soon as the process is reaped.

    asyncio's Process.wait() on 3.11 also waits for the pipes to close, which a grandchild that
    inherited them can delay forever; process_exited() does not.
    """

    def __init__(self, tails: Mapping[str, Tail], loop: asyncio.AbstractEventLoop) -> None:
        self._tails = {1: tails["stdout"], 2: tails["stderr"]}
        self._open = {1, 2}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self._tails[fd].feed(data if isinstance(data, bytes) else data.encode(), time.time())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd in self._open:
            self._open.discard(fd)
            self._tails[fd].close()
        if not self._open:
            self.pipes_closed.set()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class ContainerProcess:
    """Drives one run of one container: start it once, then wait for it or stop it."""

    def __init__(
        self,
        spec: ProcessSpec,
        *,
        registry: ProcessGroupRegistry | None = None,
        tail_bytes: int = DEFAULT_TAIL_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        orphan_grace: float = ORPHAN_GRACE,
    ) -> None:
        self.spec = spec
        self.registry = REGISTRY if registry is None else registry
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.orphan_grace = orphan_grace
        self._pid: int | None = None
        self._supervisor_pid: int | None = None
        self._exit: asyncio.Task[int] | None = None
        self._exit_code: int | None = None
        self._execs: ExecChannel | None = None
        self._tails = {
            "stdout": Tail("stdout", tail_bytes, max_line_bytes),
            "stderr": Tail("stderr", tail_bytes, max_line_bytes),
        }

    @property
    def pid(self) -> int | None:
        """Return the container's main process, also its process group id."""
        return self._pid

    @property
    def supervisor_pid(self) -> int | None:
        """Return the container's supervisor, the process probetui spawned and reaps."""
        return self._supervisor_pid

    @property
    def exit_code(self) -> int | None:
        """None until the process has exited and been reaped."""
        return self._exit_code

    @property
    def running(self) -> bool:
        return self._pid is not None and self._exit_code is None

    @property
    def reason(self) -> str | None:
        """Return the terminated-state reason a runtime gives: "Completed" for 0, else "Error"."""
        if self._exit_code is None:
            return None
        return "Completed" if self._exit_code == 0 else "Error"

    async def start(self) -> None:
        """Start the process; raises ContainerStartError when it cannot be started.

        The container runs under its supervisor (`supervisor.py`), which reports whether the
        exec worked before this returns: a container that could not start never counts as
        started, as when it was spawned directly.
        """
        if self._pid is not None:
            raise RuntimeError("a ContainerProcess starts once; make a new one to restart")
        if not self.spec.argv:
            raise ContainerStartError("exec: no command")
        loop = asyncio.get_running_loop()
        protocol = _Protocol(self._tails, loop)
        code_fd = supervisor_code()
        spec_fd = spec_memfd(self.spec)
        status_r, status_w = os.pipe()
        control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # taken before the spawn: output can arrive while subprocess_exec is still connecting
        started_at = time.time()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: protocol,
                *supervisor_argv(spec_fd, status_w, self.orphan_grace, theirs.fileno(), code_fd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(spec_fd, status_w, theirs.fileno(), code_fd),
                # the container's environment travels in the spec; the supervisor needs none
                env={},
            )
        except OSError as exc:
            os.close(status_r)
            control.close()
            raise ContainerStartError(f"cannot start the container's supervisor: {exc}") from exc
        finally:
            os.close(spec_fd)
            os.close(status_w)
            theirs.close()
        try:
            status = await read_status(status_r, loop)
        except BaseException:
            # cancelled before the container's PID is known: the supervisor goes, and its child
            # with it (the child's own death signal)
            signal_group(transport.get_pid(), signal.SIGKILL)
            transport.close()
            control.close()
            raise
        finally:
            os.close(status_r)
        if not status.startswith(b"S "):
            control.close()
            await protocol.exited
            code = transport.get_returncode()
            transport.close()
            raise ContainerStartError(start_failure(self.spec, status, code))
        pid = int(status[2:])
        self._execs = ExecChannel(control, self.spec)
        self.registry.add(pid)
        self._pid = pid
        self._supervisor_pid = transport.get_pid()
        self.started_at = started_at
        self._exit = asyncio.ensure_future(self._supervise(transport, protocol, pid))

    async def _supervise(
        self, transport: asyncio.SubprocessTransport, protocol: _Protocol, pid: int
    ) -> int:
        try:
            await protocol.exited
        finally:
            # the leader is gone (or we are being torn down): the rest of the container goes too
            signal_group(pid, signal.SIGKILL)
            self.registry.discard(pid)
            if self._execs is not None:
                self._execs.close()
        code = transport.get_returncode()
        assert code is not None
        self._exit_code = code if code >= 0 else 128 - code
        self.finished_at = time.time()
        # let the tail take what is still in the pipes; bounded, since a process that left the
        # group may hold them open
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_PIPE_GRACE):
                await protocol.pipes_closed.wait()
        transport.close()
        return self._exit_code

    def _task(self) -> asyncio.Task[int]:
        if self._exit is None:
            raise RuntimeError("the process has not been started")
        return self._exit

    async def wait(self) -> int:
        """Return the exit code once the process has exited: 128+N for death by signal N."""
        return await asyncio.shield(self._task())

    async def stop(self, grace: float) -> int:
        """Stop like the kubelet's killContainer (docs/kubelet-behaviour.md §11.5): SIGTERM to the
        group, SIGKILL to the group once `grace` seconds have passed, then reap. Returns the exit
        code, e.g. 143 for a process that died of the SIGTERM, 137 for one that had to be killed.

        If this call is cancelled while waiting, the group is killed at once.
        """
        task = self._task()
        if task.done():
            return task.result()
        pgid = self.pid
        assert pgid is not None
        signal_group(pgid, signal.SIGTERM)
        try:
            try:
                async with asyncio.timeout(grace):
                    return await asyncio.shield(task)
            except TimeoutError:
                pass
            signal_group(pgid, signal.SIGKILL)
            return await asyncio.shield(task)
        finally:
            if not task.done():
                self.kill_now()

    async def exec(self, argv: Sequence[str], timeout: float) -> ExecOutput:
        """Run an exec probe attempt in the container, as `probe.exec.run_local` runs one: its
        supervisor starts it, so what it leaves running ends with the container."""
        if self._execs is None or not self.running:
            return ExecOutput(b"", None, error=NOT_RUNNING)
        return await self._execs.run(argv, timeout)

    def kill_now(self) -> None:
        """SIGKILL the whole group now, synchronously; reaping happens on the event loop."""
        if self._pid is not None and self._exit_code is None:
            signal_group(self._pid, signal.SIGKILL)

    def output_tail(self, stream: str | None = None) -> list[OutputLine]:
        """Return the last lines of stdout and stderr (or one of them), oldest first.

        Each stream keeps its last `tail_bytes`; a line still waiting for its newline is included
        with `partial` set.
        """
        names = (stream,) if stream is not None else ("stdout", "stderr")
        lines = [line for name in names for line in self._tails[name].snapshot()]
        lines.sort(key=lambda line: line.time)
        return lines

    def dropped_lines(self, stream: str) -> int:
        """Tell how many lines of `stream` fell out of the tail."""
        return self._tails[stream].dropped


__all__ = ["ContainerProcess", "ContainerStartError"]
