"""Exec probe attempts run by the container's supervisor (`probetui/runtime/local/execs.py`),
with real processes: they read as `run_local`'s (environment, output, exit codes, start errors,
timeouts), and what an attempt leaves running is the container's: it stays after the attempt
and ends with the container.

Real time, each case well under a second.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from probetui.probe.exec import run_local
from probetui.runtime.local.execs import NOT_RUNNING
from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.process import ContainerProcess
from probetui.runtime.local.procspec import ProcessSpec
from tests.processes import (
    DAEMONIZING,
    alive,
    cmdline,
    descendants,
    parent_of,
    reaped,
    wait_gone,
    wait_pid_file,
)


@pytest.fixture
async def container() -> AsyncIterator[Callable[..., object]]:
    """Start `sleep 30` as a container (env and working directory as given); all are killed and
    reaped at the end."""
    registry = ProcessGroupRegistry()
    procs: list[ContainerProcess] = []

    async def make(env: dict[str, str] | None = None, cwd: str | None = None) -> ContainerProcess:
        spec = ProcessSpec(("sleep", "30"), env=dict(os.environ) if env is None else env, cwd=cwd)
        proc = ContainerProcess(spec, registry=registry)
        procs.append(proc)
        await proc.start()
        return proc

    try:
        yield make
    finally:
        registry.kill_all()
        for proc in procs:
            if proc.pid is not None:
                await asyncio.wait_for(proc.wait(), 2)


async def test_an_attempt_has_the_containers_env_and_working_dir(
    container: Callable[..., object], tmp_path: Path
) -> None:
    """The command runs with the container's exact environment and workingDir; stdout comes
    before stderr, and the exit code is the command's."""
    env = {"PATH": os.environ["PATH"], "GREETING": "hi"}
    proc: ContainerProcess = await container(env=env, cwd=str(tmp_path))  # type: ignore[misc]
    out = await proc.exec(["sh", "-c", "echo err >&2; echo $GREETING; pwd; exit 3"], 2.0)
    assert out.exit_code == 3 and out.error is None and not out.timed_out
    assert out.output == f"hi\n{tmp_path}\nerr\n".encode()


@pytest.mark.parametrize("argv", [["no-such-program-here"], ["/nonexistent/prog"], []])
async def test_start_errors_read_as_a_local_process(
    container: Callable[..., object], argv: list[str]
) -> None:
    """A command that cannot start gives the same error as `run_local` (os/exec's words)."""
    proc: ContainerProcess = await container()  # type: ignore[misc]
    assert await proc.exec(argv, 1.0) == await run_local(argv, 1.0)


async def test_death_by_signal_is_128_plus_n(container: Callable[..., object]) -> None:
    proc: ContainerProcess = await container()  # type: ignore[misc]
    assert (await proc.exec(["sh", "-c", "kill -9 $$"], 1.0)).exit_code == 137


async def test_a_timed_out_attempt_is_killed_with_its_group(
    container: Callable[..., object],
) -> None:
    """At its timeout the attempt's whole group is killed and reaped; the container runs on."""
    proc: ContainerProcess = await container()  # type: ignore[misc]
    assert proc.supervisor_pid is not None
    out = await proc.exec(["sh", "-c", "sleep 31 & sleep 32"], 0.3)
    assert out.timed_out and out.exit_code is None
    below = descendants(proc.supervisor_pid)
    assert not [
        pid for pid in below if cmdline(pid)[:1] == ["sleep"] and cmdline(pid) != ["sleep", "30"]
    ]
    assert proc.running


async def test_a_cancelled_attempt_is_killed(container: Callable[..., object]) -> None:
    """Cancelled at any point, while it starts or while it runs, the attempt is killed."""
    proc: ContainerProcess = await container()  # type: ignore[misc]
    assert proc.supervisor_pid is not None
    attempt = asyncio.ensure_future(proc.exec(["sleep", "31"], 10.0))
    pid = await _below(proc.supervisor_pid, ["sleep", "31"])
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    # polled on the event loop: an attempt cancelled before its start was answered is killed
    # when the answer is read, on this loop
    async with asyncio.timeout(1):
        while not reaped(pid):  # noqa: ASYNC110 - a real process being reaped
            await asyncio.sleep(0.01)


async def test_a_daemon_an_attempt_leaves_is_the_containers(
    container: Callable[..., object], tmp_path: Path, reaper: set[int]
) -> None:
    """What an attempt leaves running (a daemon: two forks and setsid, in no group of the
    attempt's) outlives the attempt, below the container's supervisor, as it would in the
    container; it is killed and reaped when the container stops."""
    proc: ContainerProcess = await container()  # type: ignore[misc]
    pid_file = tmp_path / "daemon.pid"
    # its launcher returns once the daemon is up; the daemon's output goes nowhere
    daemonize = shlex.join([sys.executable, "-c", DAEMONIZING, str(pid_file), "exit"])
    out = await proc.exec(["sh", "-c", f"{daemonize} >/dev/null 2>&1"], 5.0)
    assert out.exit_code == 0, out
    daemon = wait_pid_file(pid_file, 0)
    reaper.add(daemon)
    assert alive(daemon) and parent_of(daemon) == proc.supervisor_pid
    assert await asyncio.wait_for(proc.stop(1.0), 2) == 143
    assert reaped(daemon)


async def test_an_attempt_running_when_the_container_ends_reads_as_killed(
    container: Callable[..., object],
) -> None:
    """The container's end kills its attempts, as its PID namespace's end would: the attempt
    returns at once with 137, not at its timeout; the next one errors as containerd does."""
    proc: ContainerProcess = await container()  # type: ignore[misc]
    assert proc.supervisor_pid is not None
    attempt = asyncio.ensure_future(proc.exec(["sleep", "31"], 10.0))
    await _below(proc.supervisor_pid, ["sleep", "31"])
    proc.kill_now()
    out = await asyncio.wait_for(attempt, 2)
    assert out.exit_code == 137
    await proc.wait()
    assert await proc.exec(["true"], 1.0) == type(out)(b"", None, error=NOT_RUNNING)


async def _below(supervisor: int, argv: list[str]) -> int:
    """The PID of the process running `argv` below the supervisor, once it runs."""
    async with asyncio.timeout(2):
        while True:
            for pid in descendants(supervisor):
                if cmdline(pid) == argv:
                    return pid
            await asyncio.sleep(0.01)


async def test_an_attempt_outliving_a_killed_supervisor_is_killed(
    container: Callable[..., object],
) -> None:
    """Should the supervisor itself be SIGKILLed (no death signal reaches an attempt it started),
    probetui kills the attempt's group as the control socket closes: it does not run on to its
    timeout."""
    proc: ContainerProcess = await container()  # type: ignore[misc]
    assert proc.supervisor_pid is not None
    attempt = asyncio.ensure_future(proc.exec(["sleep", "31"], 10.0))
    pid = await _below(proc.supervisor_pid, ["sleep", "31"])
    os.kill(proc.supervisor_pid, signal.SIGKILL)
    out = await asyncio.wait_for(attempt, 2)
    assert out.exit_code == 137
    assert not wait_gone({pid}, 1.0)
