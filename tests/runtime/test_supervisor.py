"""The per-container supervisor (`probetui/runtime/local/supervisor.py`), with real processes:
what it changes (the container dies with probetui) and what it must not (environment, exit
status, start errors; `test_process.py` pins those through `ContainerProcess`).

Real time, each case well under a second.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable

import pytest

from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.process import ContainerProcess
from probetui.runtime.local.procspec import ProcessSpec
from probetui.runtime.local.supervisor import decode_spec, encode_spec
from tests.processes import alive, parent_of, wait_gone


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
