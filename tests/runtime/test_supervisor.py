"""The per-container supervisor (`probetui/runtime/local/supervisor.py`), with real processes:
what it changes (the container dies with probetui) and what it must not (environment, exit
status, start errors; `test_process.py` pins those through `ContainerProcess`).

Real time, each case well under a second.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.process import ContainerProcess
from probetui.runtime.local.procspec import ProcessSpec
from probetui.runtime.local.supervisor import decode_spec, encode_spec
from tests.processes import (
    DAEMONIZING,
    alive,
    parent_of,
    reaped,
    wait_gone,
    wait_pid_file,
    wait_reaped,
)


@pytest.fixture
async def start() -> AsyncIterator[Callable[..., asyncio.Future[ContainerProcess]]]:
    registry = ProcessGroupRegistry()
    procs: list[ContainerProcess] = []

    async def make(
        argv: tuple[str, ...], env: dict[str, str] | None = None, cwd: str | None = None
    ) -> ContainerProcess:
        proc = ContainerProcess(
            ProcessSpec(argv=argv, env=dict(os.environ) if env is None else env, cwd=cwd),
            registry=registry,
        )
        procs.append(proc)
        await proc.start()
        return proc

    try:
        yield make  # type: ignore[misc]
    finally:
        registry.kill_all()
        for proc in procs:
            if proc.pid is not None:
                await asyncio.wait_for(proc.wait(), 2)


def test_spec_round_trips_every_byte() -> None:
    """argv, cwd and environment reach the supervisor as written, undecodable bytes included."""
    env = {"A": "1", "EMPTY": "", "EQ": "a=b", "ODD": "\udcff"}
    argv, got_env, cwd = decode_spec(encode_spec(["x", "", "y z"], env, "/tmp"))
    assert argv == [b"x", b"", b"y z"]
    assert cwd == b"/tmp"
    assert got_env == {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    assert decode_spec(encode_spec(["x"], {}, None)) == ([b"x"], {}, None)


async def test_container_gets_exactly_its_environment(start: Callable[..., object]) -> None:
    """Nothing of the supervisor's interpreter leaks into the container's environment (no
    LC_CTYPE from Python's locale coercion, no PYTHON* variable)."""
    proc: ContainerProcess = await start(("/usr/bin/env",), env={"A": "1", "B": "x y"})  # type: ignore[misc]
    assert await proc.wait() == 0
    assert sorted(line.text for line in proc.output_tail("stdout")) == ["A=1", "B=x y"]


async def test_container_is_a_group_leader_below_its_supervisor(
    start: Callable[..., object],
) -> None:
    """The PID the runtime reports is the container's, leader of its own group; its parent is
    the supervisor, which probetui spawned."""
    proc: ContainerProcess = await start(("sleep", "30"))  # type: ignore[misc]
    assert proc.pid is not None and proc.supervisor_pid is not None
    assert os.getpgid(proc.pid) == proc.pid
    assert parent_of(proc.pid) == proc.supervisor_pid
    assert os.getpgid(proc.supervisor_pid) != proc.pid


async def test_the_container_and_its_exec_attempts_inherit_only_their_stdio(
    start: Callable[..., object],
) -> None:
    """No descriptor of the supervisor's (its compiled code's memfd, the control socket, the
    status pipe, its wake-up pipe) reaches the container or an exec attempt: they have 0, 1, 2."""
    listing = "ls /proc/$$/fd"
    proc: ContainerProcess = await start(("sh", "-c", f"{listing}; sleep 30"))  # type: ignore[misc]
    out = await proc.exec(["sh", "-c", listing], 2.0)
    assert out.output.split() == [b"0", b"1", b"2"]
    async with asyncio.timeout(2):
        while len(proc.output_tail("stdout")) < 3:  # noqa: ASYNC110 - a real process printing
            await asyncio.sleep(0.01)
    assert [line.text for line in proc.output_tail("stdout")] == ["0", "1", "2"]


async def test_a_stop_signal_to_the_supervisor_reaches_the_group(
    start: Callable[..., object],
) -> None:
    """SIGTERM sent to the supervisor (by someone other than the runtime) is forwarded to the
    container's group; the supervisor then exits as the container did."""
    proc: ContainerProcess = await start(("sh", "-c", "sleep 30 & wait"))  # type: ignore[misc]
    assert proc.supervisor_pid is not None
    os.kill(proc.supervisor_pid, signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 2) == 143


async def test_a_stray_death_signal_is_ignored_while_the_parent_lives(
    start: Callable[..., object],
) -> None:
    """The death signal (SIGUSR2) counts only when the parent is really gone."""
    proc: ContainerProcess = await start(("sleep", "30"))  # type: ignore[misc]
    assert proc.supervisor_pid is not None
    os.kill(proc.supervisor_pid, signal.SIGUSR2)
    await asyncio.sleep(0.2)
    assert proc.running and alive(proc.pid or 0)


async def test_a_killed_supervisor_takes_its_container_leader_along(
    start: Callable[..., object],
) -> None:
    """The container's leader has a death signal of its own (SIGKILL): killing the supervisor
    does not orphan it."""
    proc: ContainerProcess = await start(("sleep", "30"))  # type: ignore[misc]
    assert proc.pid is not None and proc.supervisor_pid is not None
    os.kill(proc.supervisor_pid, signal.SIGKILL)
    assert await asyncio.wait_for(proc.wait(), 2) == 137
    assert not wait_gone({proc.pid}, 1.0)


async def test_container_signals_are_default_not_inherited_from_python(
    start: Callable[..., object],
) -> None:
    """SIGPIPE is default in the container (Python ignores it for itself): `yes | head` ends."""
    proc: ContainerProcess = await start(("sh", "-c", "yes | head -n 1"))  # type: ignore[misc]
    assert await asyncio.wait_for(proc.wait(), 2) == 0
    assert [line.text for line in proc.output_tail("stdout")] == ["y"]


# -- what leaves the container's group: the supervisor is a child subreaper ---------------------


async def test_a_stop_takes_down_what_left_the_group(
    start: Callable[..., object], tmp_path: Path, reaper: set[int]
) -> None:
    """The runtime's stop (`ContainerProcess.stop`, also what probetui's own end runs: SIGINT or
    SIGTERM of the headless run, `q` in the UI) reaches a daemon that forked twice and called
    setsid(): it was reparented to the supervisor, which kills and reaps it once the leader is
    gone, as the kernel ends a PID namespace."""
    pid_file = tmp_path / "daemon.pid"
    proc: ContainerProcess = await start((sys.executable, "-c", DAEMONIZING, str(pid_file)))  # type: ignore[misc]
    daemon = wait_pid_file(pid_file, 2.0)
    reaper.add(daemon)
    assert proc.pid is not None
    assert os.getsid(daemon) != os.getsid(proc.pid)
    assert os.getpgid(daemon) != proc.pid
    assert parent_of(daemon) == proc.supervisor_pid
    assert await asyncio.wait_for(proc.stop(1.0), 2) == 143
    assert reaped(daemon)


async def test_a_leader_that_exits_takes_its_daemon_along(
    start: Callable[..., object], tmp_path: Path, reaper: set[int]
) -> None:
    """A container whose process starts a daemon and exits 0 has exited: the daemon goes with
    it (a container is over when its first process is) and is reaped, not left a zombie."""
    pid_file = tmp_path / "daemon.pid"
    argv = (sys.executable, "-c", DAEMONIZING, str(pid_file), "exit")
    proc: ContainerProcess = await start(argv)  # type: ignore[misc]
    assert await asyncio.wait_for(proc.wait(), 2) == 0
    daemon = wait_pid_file(pid_file, 0)
    reaper.add(daemon)
    assert reaped(daemon)


# forks 20 children that each start a grandchild living 0.3 s and exit at once: 20 orphans,
# their PIDs on stdout, then "forked" once every child is gone, then sleeps
_SHORT_ORPHANS = """import os, time
for _ in range(20):
    child = os.fork()
    if child == 0:
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(0.3)
            os._exit(0)
        print(grandchild, flush=True)
        os._exit(0)
    os.waitpid(child, 0)
print("forked", flush=True)
time.sleep(300)
"""


async def test_orphans_are_reaped_while_the_container_runs(
    start: Callable[..., object], reaper: set[int]
) -> None:
    """Orphans of a running container are the supervisor's to reap: each short-lived one is
    gone from /proc once it exits, and none is left a zombie while the container runs on."""
    proc: ContainerProcess = await start((sys.executable, "-c", _SHORT_ORPHANS))  # type: ignore[misc]
    async with asyncio.timeout(2):
        while len(proc.output_tail("stdout")) < 21:  # noqa: ASYNC110 - a real process printing
            await asyncio.sleep(0.01)
    orphans = {int(line.text) for line in proc.output_tail("stdout")[:-1]}
    reaper.update(orphans)
    parents = {parent_of(pid) for pid in orphans if not reaped(pid)}
    assert parents <= {proc.supervisor_pid}
    assert not wait_reaped(orphans, 2.0)
    assert proc.running
