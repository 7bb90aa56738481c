"""One container instance run as a local process, supervised the way a container runtime would.

Choices, and their limits:

- Each container is the leader of a process group of its own; a stop
  signals the whole group, and once the leader has exited whatever is left of the group is
  killed with SIGKILL, as the kernel does to a PID namespace when the container's PID 1 exits.
  A process that moves itself to another group or session (a daemon that calls setsid) escapes.
- A command that cannot be started (missing executable, not executable, bad workingDir) raises
  `ContainerStartError` with exit code 128 and reason "StartError": what containerd's CRI plugin
  records in the container's terminated state when the task fails to start (Docker used to report
  127/126 instead; containerd is the runtime most clusters run).
- Death by signal N is reported as exit code 128+N, as a runtime does: 143 for SIGTERM, 137 for
  SIGKILL.
- Every container runs under a supervisor of its own (`supervisor.py`, a bare interpreter started
  with `-I -S`), so that no container outlives probetui however probetui ends, SIGKILL and the OOM
  killer included. The supervisor arms PR_SET_PDEATHSIG on itself (no code runs in probetui's
  child between fork and exec: `preexec_fn` is unsafe once other threads exist, and grpc starts
  some), forks the container as the leader of its own group and, when probetui dies, sends the
  group SIGTERM and SIGKILL `orphan_grace` (2 s) later. The container's leader is armed too
  (SIGKILL), should the supervisor itself be killed. Start errors still surface as
  `ContainerStartError` before the container counts as started: the supervisor reports the
  failed chdir or exec through a pipe, and the message is built from the errno exactly as for a
  direct spawn. The supervisor exits as the container's leader did (same code, or killed by the
  same signal), so exit codes and 128+N are unchanged. It costs one bare interpreter start per
  container start (about 16 ms and 12 ms of CPU, against 1 ms for a direct spawn) and about
  3.6 MiB of private memory per running container (`python -m benchmarks.supervisor`).
- `ProcessGroupRegistry` still kills every group at once on the endings that can be caught
  (SIGINT, SIGTERM, SIGHUP, a normal exit, an unhandled exception); the supervisors cover the rest.
  A group is registered once the supervisor has reported the start; a catchable ending in
  between misses that group in the registry, and its supervisor takes it down when probetui is
  gone. What a container's process moves to another group or session (a daemon that calls
  setsid) escapes both.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType

from probetui.probe.exec import expand_command
from probetui.probe.gotext import exec_start_error
from probetui.runtime.local.supervisor import encode_spec
from probetui.spec.model import Container

# what a runtime reports for a container whose process could not be started (containerd CRI)
START_ERROR_EXIT_CODE = 128
START_ERROR_REASON = "StartError"

# how much of each stream output_tail() keeps
DEFAULT_TAIL_BYTES = 64 * 1024
# longer lines are split, as the CRI log writer splits them into partial ("P") entries
DEFAULT_MAX_LINE_BYTES = 16 * 1024

# the supervisor, run by path (it imports the standard library only)
SUPERVISOR_PATH = str(Path(__file__).with_name("supervisor.py"))
# once probetui is gone, how long a container has between SIGTERM and SIGKILL
ORPHAN_GRACE = 2.0

# after the leader exits and the group is killed, how long the pipes may take to reach EOF
_PIPE_GRACE = 0.2


class LocalRuntimeError(Exception):
    """A container the local runtime cannot run as written."""


class ContainerStartError(LocalRuntimeError):
    """The process could not be started; `exit_code` and `reason` are what a runtime records."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = START_ERROR_EXIT_CODE
        self.reason = START_ERROR_REASON


@dataclass(frozen=True)
class ProcessSpec:
    """What to run: argv (no shell), the full environment, the working directory.

    `warnings` lists what the manifest asks for that the local runtime cannot honour (env vars
    set with valueFrom), for the caller to show.
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None = None
    warnings: tuple[str, ...] = ()


def process_spec(container: Container, base_env: Mapping[str, str] | None = None) -> ProcessSpec:
    """Build the ProcessSpec for a container (kubelet `makeEnvironmentVariables` and
    `ExpandContainerCommandAndArgs`, restricted to literal values).

    Env values may use `$(NAME)` for a variable defined earlier in the list; command and args are
    expanded with the container's own variables (never the host's). The process environment is
    `base_env` (default: os.environ) with the container's variables on top. A variable set with
    valueFrom is not set and not expanded (`$(NAME)` stays as written); a warning says so.
    """
    if not container.command:
        raise LocalRuntimeError(
            f'container "{container.name}" has no command: the local runtime runs commands, '
            "not images; add command: [...]"
        )
    container_env: dict[str, str] = {}
    warnings: list[str] = []
    for var in container.env:
        if var.value_from is not None:
            container_env.pop(var.name, None)
            source = ", ".join(sorted(var.value_from)) or "valueFrom"
            warnings.append(
                f'container "{container.name}": env {var.name} comes from {source}, which the '
                "local runtime cannot resolve; it is not set"
            )
            continue
        value = var.value or ""
        # as the kubelet does, an empty value is not expanded and references only see
        # variables defined before this one
        container_env[var.name] = expand_command([value], container_env)[0] if value else ""
    argv = expand_command([*container.command, *container.args], container_env)
    env = dict(os.environ if base_env is None else base_env)
    env.update(container_env)
    return ProcessSpec(
        argv=tuple(argv), env=env, cwd=container.working_dir, warnings=tuple(warnings)
    )


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Signal a process group; False when it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # the group id now belongs to someone else's processes: ours are gone
        return False
    return True


class ProcessGroupRegistry:
    """Every live child process group, so that they can all be killed when probetui ends.

    `kill_all()` is synchronous and safe to call from a signal handler or atexit.
    """

    def __init__(self) -> None:
        self._groups: set[int] = set()
        self._installed = False

    def add(self, pgid: int) -> None:
        self._groups.add(pgid)

    def discard(self, pgid: int) -> None:
        self._groups.discard(pgid)

    def groups(self) -> frozenset[int]:
        return frozenset(self._groups)

    def kill_all(self) -> int:
        """SIGKILL every registered group and forget them; returns how many were signalled."""
        groups = list(self._groups)
        self._groups.clear()
        return sum(_signal_group(pgid, signal.SIGKILL) for pgid in groups)

    def install_exit_handlers(
        self,
        signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
    ) -> None:
        """Kill the children whenever probetui ends: on `signals`, at exit, on an uncaught error.

        Call it from the main thread (Python only lets that thread set signal handlers), and after
        anything else that installs handlers for these signals: the previous handler is chained,
        a later one replaces this one (asyncio's `loop.add_signal_handler` does). For each signal:
        children are killed first; then a Python handler that was there before is called (the
        default SIGINT one raises KeyboardInterrupt); with the default disposition the signal is
        re-raised so probetui dies of it, with the status a shell shows as 128+N. An ignored signal
        (SIGHUP under nohup) stays ignored and kills nothing, as it does not end probetui.
        """
        if self._installed:
            return
        self._installed = True
        atexit.register(self.kill_all)

        previous_hook = sys.excepthook

        def excepthook(
            exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
        ) -> None:
            # atexit runs only after non-daemon threads end; do not wait for them
            self.kill_all()
            previous_hook(exc_type, exc, tb)

        sys.excepthook = excepthook

        for sig in signals:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue
            signal.signal(sig, self._make_handler(previous))

    def _make_handler(
        self, previous: Callable[[int, FrameType | None], object] | int | None
    ) -> Callable[[int, FrameType | None], None]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.kill_all()
            if callable(previous):
                previous(signum, frame)
                return
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        return handler


# the registry every ContainerProcess uses unless given another one
REGISTRY = ProcessGroupRegistry()


@dataclass(frozen=True)
class OutputLine:
    """One line of output, without its newline; `partial` when it was split or had no newline."""

    stream: str  # "stdout" or "stderr"
    time: float  # time.time() when it was read
    data: bytes
    partial: bool = False

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class _Tail:
    """The last `max_bytes` of one stream, as timestamped lines."""

    def __init__(self, stream: str, max_bytes: int, max_line: int) -> None:
        self.stream = stream
        self.max_bytes = max_bytes
        self.max_line = max_line
        self.lines: deque[OutputLine] = deque()
        self.size = 0
        self.pending = bytearray()
        self.pending_since = 0.0
        self.dropped = 0

    def feed(self, chunk: bytes, now: float) -> None:
        if not self.pending:
            self.pending_since = now
        self.pending += chunk
        while True:
            end = self.pending.find(b"\n")
            if end != -1 and end <= self.max_line:
                self._keep(bytes(self.pending[:end]), partial=False)
                del self.pending[: end + 1]
            elif len(self.pending) > self.max_line:
                self._keep(bytes(self.pending[: self.max_line]), partial=True)
                del self.pending[: self.max_line]
            else:
                break
            self.pending_since = now

    def close(self) -> None:
        if self.pending:
            self._keep(bytes(self.pending), partial=True)
            self.pending.clear()

    def _keep(self, data: bytes, partial: bool) -> None:
        self.lines.append(OutputLine(self.stream, self.pending_since, data, partial))
        self.size += len(data) + 1
        while self.size > self.max_bytes and self.lines:
            self.size -= len(self.lines.popleft().data) + 1
            self.dropped += 1

    def snapshot(self) -> list[OutputLine]:
        out = list(self.lines)
        if self.pending:
            out.append(OutputLine(self.stream, self.pending_since, bytes(self.pending), True))
        return out


class _Protocol(asyncio.SubprocessProtocol):
    """Feeds the tails and reports the exit as soon as the process is reaped.

    asyncio's Process.wait() on 3.11 also waits for the pipes to close, which a grandchild that
    inherited them can delay forever; process_exited() does not.
    """

    def __init__(self, tails: Mapping[str, _Tail], loop: asyncio.AbstractEventLoop) -> None:
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


def supervisor_argv(spec_fd: int, status_fd: int, orphan_grace: float) -> list[str]:
    """How probetui runs a container's supervisor: by path, isolated, without site-packages."""
    return [
        sys.executable,
        "-I",
        "-S",
        SUPERVISOR_PATH,
        str(os.getpid()),
        str(spec_fd),
        str(status_fd),
        repr(float(orphan_grace)),
    ]


def _spec_memfd(spec: ProcessSpec) -> int:
    """The container's argv, cwd and environment in an anonymous file for the supervisor."""
    data = encode_spec(list(spec.argv), dict(spec.env), spec.cwd)
    fd = os.memfd_create("probetui-container-spec", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


async def _read_status(fd: int, loop: asyncio.AbstractEventLoop) -> bytes:
    """The supervisor's one status line (without its newline), or b"" when it closed the pipe
    without one. Bounded: the line is a few bytes."""
    done: asyncio.Future[bytes] = loop.create_future()
    got = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, 256)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        got.extend(chunk)
        if (not chunk or b"\n" in got or len(got) > 4096) and not done.done():
            done.set_result(bytes(got).split(b"\n", 1)[0])

    os.set_blocking(fd, False)
    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)


def _start_error(argv0: str, cwd: str | None, exc: OSError) -> str:
    # runc's wording, which is what ends up in the container status message
    if cwd is not None and exc.filename == cwd:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        reason = reason[:1].lower() + reason[1:]
        return f'chdir to cwd ("{cwd}") set in config.json failed: {reason}'
    return exec_start_error(argv0, exc)


class ContainerProcess:
    """One run of one container: start it once, then wait for it or stop it."""

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
        self._tails = {
            "stdout": _Tail("stdout", tail_bytes, max_line_bytes),
            "stderr": _Tail("stderr", tail_bytes, max_line_bytes),
        }

    @property
    def pid(self) -> int | None:
        """The container's main process, also its process group id."""
        return self._pid

    @property
    def supervisor_pid(self) -> int | None:
        """The container's supervisor, the process probetui spawned and reaps."""
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
        """The terminated-state reason a runtime gives: "Completed" for 0, else "Error"."""
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
        spec_fd = _spec_memfd(self.spec)
        status_r, status_w = os.pipe()
        # taken before the spawn: output can arrive while subprocess_exec is still connecting
        started_at = time.time()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: protocol,
                *supervisor_argv(spec_fd, status_w, self.orphan_grace),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(spec_fd, status_w),
                # the container's environment travels in the spec; the supervisor needs none
                env={},
            )
        except OSError as exc:
            os.close(status_r)
            raise ContainerStartError(f"cannot start the container's supervisor: {exc}") from exc
        finally:
            os.close(spec_fd)
            os.close(status_w)
        try:
            status = await _read_status(status_r, loop)
        except BaseException:
            # cancelled before the container's PID is known: the supervisor goes, and its child
            # with it (the child's own death signal)
            _signal_group(transport.get_pid(), signal.SIGKILL)
            transport.close()
            raise
        finally:
            os.close(status_r)
        if not status.startswith(b"S "):
            await protocol.exited
            code = transport.get_returncode()
            transport.close()
            raise ContainerStartError(self._start_failure(status, code))
        pid = int(status[2:])
        self.registry.add(pid)
        self._pid = pid
        self._supervisor_pid = transport.get_pid()
        self.started_at = started_at
        self._exit = asyncio.ensure_future(self._supervise(transport, protocol, pid))

    def _start_failure(self, status: bytes, code: int | None) -> str:
        """The runtime's words for a failed start, from the supervisor's `E chdir|exec ERRNO`."""
        parts = status.split()
        if len(parts) == 3 and parts[0] == b"E" and parts[2].isdigit():
            err = int(parts[2])
            where = self.spec.cwd if parts[1] == b"chdir" else self.spec.argv[0]
            exc = OSError(err, os.strerror(err), where)
            return _start_error(self.spec.argv[0], self.spec.cwd, exc)
        return f"the container's supervisor exited ({code}) before starting it"

    async def _supervise(
        self, transport: asyncio.SubprocessTransport, protocol: _Protocol, pid: int
    ) -> int:
        try:
            await protocol.exited
        finally:
            # the leader is gone (or we are being torn down): the rest of the container goes too
            _signal_group(pid, signal.SIGKILL)
            self.registry.discard(pid)
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
        """The exit code once the process has exited: 128+N for death by signal N."""
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
        _signal_group(pgid, signal.SIGTERM)
        try:
            try:
                async with asyncio.timeout(grace):
                    return await asyncio.shield(task)
            except TimeoutError:
                pass
            _signal_group(pgid, signal.SIGKILL)
            return await asyncio.shield(task)
        finally:
            if not task.done():
                self.kill_now()

    def kill_now(self) -> None:
        """SIGKILL the whole group now, synchronously; reaping happens on the event loop."""
        if self._pid is not None and self._exit_code is None:
            _signal_group(self._pid, signal.SIGKILL)

    def output_tail(self, stream: str | None = None) -> list[OutputLine]:
        """The last lines of stdout and stderr (or one of them), oldest first.

        Each stream keeps its last `tail_bytes`; a line still waiting for its newline is included
        with `partial` set.
        """
        names = (stream,) if stream is not None else ("stdout", "stderr")
        lines = [line for name in names for line in self._tails[name].snapshot()]
        lines.sort(key=lambda line: line.time)
        return lines

    def dropped_lines(self, stream: str) -> int:
        """How many lines of `stream` fell out of the tail."""
        return self._tails[stream].dropped


__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_TAIL_BYTES",
    "REGISTRY",
    "START_ERROR_EXIT_CODE",
    "START_ERROR_REASON",
    "ContainerProcess",
    "ContainerStartError",
    "LocalRuntimeError",
    "OutputLine",
    "ProcessGroupRegistry",
    "ProcessSpec",
    "process_spec",
]
