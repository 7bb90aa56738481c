"""The local process supervisor, with real processes (`sh`, `sleep`, `trap`).

Real-time tests stay well under a second: grace periods are 0.3 s, and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.process import ContainerProcess, ContainerStartError
from probetui.runtime.local.procspec import LocalRuntimeError, ProcessSpec, process_spec
from probetui.spec.model import Container, EnvVar
from tests.processes import alive as _alive

ROOT = Path(__file__).resolve().parents[2]


def _wait_dead(pid: int, timeout: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def registry() -> ProcessGroupRegistry:
    reg = ProcessGroupRegistry()
    try:
        yield reg
    finally:
        reg.kill_all()


@pytest.fixture
async def run(
    registry: ProcessGroupRegistry,
) -> AsyncIterator[Callable[..., ContainerProcess]]:
    """Make ContainerProcesses for `sh -c script`; all are killed and reaped at the end."""
    procs: list[ContainerProcess] = []

    def make(script: str, **kwargs: object) -> ContainerProcess:
        spec = ProcessSpec(argv=("sh", "-c", script), env=dict(os.environ))
        proc = ContainerProcess(spec, registry=registry, **kwargs)  # type: ignore[arg-type]
        procs.append(proc)
        return proc

    try:
        yield make
    finally:
        for proc in procs:
            if proc.pid is not None:
                proc.kill_now()
                await asyncio.wait_for(proc.wait(), 2)


# --- process_spec -------------------------------------------------------------------------------


def test_spec_command_and_args_expand_literal_env() -> None:
    """ExpandContainerCommandAndArgs: `$(VAR)` from the container's env, `$$` literal, unknown
    names kept; env values may refer to variables defined before them (makeEnvironmentVariables)."""
    container = Container(
        name="app",
        command=("sh", "-c"),
        args=("echo $(GREETING) $(NOPE) $$(GREETING) $(HOME_DIR)",),
        working_dir="/tmp",
        env=(
            EnvVar("NAME", "world"),
            EnvVar("GREETING", "hello-$(NAME)"),
            EnvVar("HOME_DIR", "$(LATER)"),
            EnvVar("LATER", "x"),
        ),
    )
    spec = process_spec(container, base_env={"PATH": "/bin", "NAME": "host"})
    assert spec.argv == ("sh", "-c", "echo hello-world $(NOPE) $(GREETING) $(LATER)")
    assert spec.env["PATH"] == "/bin"
    assert spec.env["NAME"] == "world"  # the container's value wins over the host's
    assert spec.env["GREETING"] == "hello-world"
    assert spec.cwd == "/tmp"
    assert spec.warnings == ()


def test_spec_host_env_is_not_used_for_expansion() -> None:
    """Command expansion sees only the container's variables, never the node's (kubelet)."""
    container = Container(name="app", command=("echo", "$(PATH)"))
    spec = process_spec(container, base_env={"PATH": "/bin"})
    assert spec.argv == ("echo", "$(PATH)")


def test_spec_value_from_is_reported_not_dropped() -> None:
    """valueFrom cannot be resolved locally: not set, `$(X)` left as written, and a warning."""
    container = Container(
        name="app",
        command=("echo", "$(TOKEN)"),
        env=(EnvVar("TOKEN", "literal"), EnvVar("TOKEN", value_from={"secretKeyRef": {}})),
    )
    spec = process_spec(container, base_env={})
    assert spec.argv == ("echo", "$(TOKEN)")
    assert "TOKEN" not in spec.env
    assert len(spec.warnings) == 1
    assert "TOKEN" in spec.warnings[0] and "secretKeyRef" in spec.warnings[0]


def test_spec_without_command_is_an_error() -> None:
    """No command means "run the image's entrypoint", which a local runtime cannot do."""
    with pytest.raises(LocalRuntimeError) as err:
        process_spec(Container(name="x", image="nginx", args=("-g",)))
    assert str(err.value) == (
        'container "x" has no command: the local runtime runs commands, not images; '
        "add command: [...]"
    )


# --- ContainerProcess ---------------------------------------------------------------------------


async def test_exit_code_and_times(run: Callable[..., ContainerProcess]) -> None:
    """A container's exit code is the process's; reason Completed for 0, Error otherwise."""
    proc = run("exit 3")
    before = time.time()
    await proc.start()
    assert proc.pid is not None and proc.started_at is not None
    assert before <= proc.started_at <= time.time()
    assert await asyncio.wait_for(proc.wait(), 2) == 3
    assert proc.exit_code == 3 and proc.reason == "Error" and not proc.running
    assert proc.finished_at is not None and proc.finished_at >= proc.started_at

    ok = run("exit 0")
    await ok.start()
    assert await asyncio.wait_for(ok.wait(), 2) == 0
    assert ok.reason == "Completed"


async def test_death_by_signal_is_128_plus_n(run: Callable[..., ContainerProcess]) -> None:
    """A runtime reports death by signal N as exit code 128+N (SIGUSR1 → 138)."""
    proc = run("kill -USR1 $$; sleep 5")
    await proc.start()
    assert await asyncio.wait_for(proc.wait(), 2) == 128 + signal.SIGUSR1


async def test_stdin_is_dev_null_and_no_shell() -> None:
    """argv runs without a shell and stdin is /dev/null (reads see EOF at once)."""
    proc = ContainerProcess(
        ProcessSpec(argv=("cat",), env=dict(os.environ)), registry=ProcessGroupRegistry()
    )
    await proc.start()
    assert await asyncio.wait_for(proc.wait(), 2) == 0
    literal = ContainerProcess(
        ProcessSpec(argv=("echo", "$HOME", "*"), env={"PATH": os.environ["PATH"]}),
        registry=ProcessGroupRegistry(),
    )
    await literal.start()
    await asyncio.wait_for(literal.wait(), 2)
    assert [line.text for line in literal.output_tail()] == ["$HOME *"]


async def test_stop_sigterm_exits_143(run: Callable[..., ContainerProcess]) -> None:
    """kubelet kill, docs/kubelet-behaviour.md §11.5: SIGTERM first; a process that dies of it
    reports 143, at once."""
    proc = run("exec sleep 30")
    await proc.start()
    start = time.monotonic()
    assert await asyncio.wait_for(proc.stop(grace=5), 2) == 143
    assert time.monotonic() - start < 1


async def test_stop_sigkill_after_grace_137(
    run: Callable[..., ContainerProcess], registry: ProcessGroupRegistry
) -> None:
    """kubelet kill, §11.5: SIGTERM, then SIGKILL once the grace period has passed → 137."""
    proc = run("trap '' TERM; echo ready; while :; do sleep 0.05; done")
    await proc.start()
    await _until(lambda: any(line.text == "ready" for line in proc.output_tail()))
    start = time.monotonic()
    code = await asyncio.wait_for(proc.stop(grace=0.3), 2)
    elapsed = time.monotonic() - start
    assert code == 137
    assert 0.3 <= elapsed < 1.0
    assert proc.pid not in registry.groups()


async def test_stop_a_process_that_exits_cleanly_on_sigterm(
    run: Callable[..., ContainerProcess],
) -> None:
    """A process that handles SIGTERM reports its own exit code (0 here), not 143."""
    proc = run("trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done")
    await proc.start()
    await _until(lambda: any(line.text == "ready" for line in proc.output_tail()))
    assert await asyncio.wait_for(proc.stop(grace=2), 2) == 0


async def test_stop_kills_the_whole_group(run: Callable[..., ContainerProcess]) -> None:
    """The grandchild a container started in the background dies with it (the group is
    signalled, as a runtime's kill reaches every process of the container)."""
    proc = run("trap '' TERM; sleep 30 & echo $!; wait")
    await proc.start()
    grandchild = await _first_pid(proc)
    try:
        assert await asyncio.wait_for(proc.stop(grace=0.3), 2) == 137
        assert _wait_dead(grandchild)
    finally:
        _kill(grandchild)


async def test_leader_exit_kills_the_rest(run: Callable[..., ContainerProcess]) -> None:
    """When the main process exits, what it left behind is killed, as the kernel kills a PID
    namespace whose PID 1 exits; wait() does not hang on the inherited pipes."""
    proc = run("sleep 30 & echo $!; sleep 0.05; exit 4")
    await proc.start()
    grandchild = await _first_pid(proc)
    try:
        assert await asyncio.wait_for(proc.wait(), 1) == 4
        assert _wait_dead(grandchild)
    finally:
        _kill(grandchild)


async def test_kill_now(run: Callable[..., ContainerProcess]) -> None:
    """Emergency cleanup: synchronous SIGKILL of the group, the exit code is 137."""
    proc = run("trap '' TERM; sleep 30")
    await proc.start()
    proc.kill_now()
    assert await asyncio.wait_for(proc.wait(), 2) == 137


async def test_stop_after_exit_returns_the_code(run: Callable[..., ContainerProcess]) -> None:
    proc = run("exit 7")
    await proc.start()
    await asyncio.wait_for(proc.wait(), 2)
    assert await proc.stop(grace=1) == 7


async def test_output_tail_is_bounded_and_timestamped(
    run: Callable[..., ContainerProcess],
) -> None:
    """Output capture keeps the last tail_bytes of each stream, line by line, with read times."""
    proc = run(
        "i=0; while [ $i -lt 500 ]; do echo out-$i; i=$((i+1)); done; echo err >&2; printf tail",
        tail_bytes=200,
    )
    await proc.start()
    await asyncio.wait_for(proc.wait(), 2)
    out = proc.output_tail("stdout")
    assert sum(len(line.data) + 1 for line in out) <= 200
    assert [line.text for line in out[-2:]] == ["out-499", "tail"]
    assert out[-1].partial and not out[-2].partial
    assert proc.dropped_lines("stdout") > 400
    assert [line.text for line in proc.output_tail("stderr")] == ["err"]
    both = proc.output_tail()
    assert {line.stream for line in both} == {"stdout", "stderr"}
    assert all(proc.started_at <= line.time <= proc.finished_at + 1 for line in both)
    assert [line.time for line in both] == sorted(line.time for line in both)


async def test_long_lines_are_split(run: Callable[..., ContainerProcess]) -> None:
    """A line longer than max_line_bytes is kept as partial pieces (CRI log "P" entries)."""
    proc = run("printf '%0250d\\n' 0", max_line_bytes=100)
    await proc.start()
    await asyncio.wait_for(proc.wait(), 2)
    lines = proc.output_tail()
    assert [len(line.data) for line in lines] == [100, 100, 50]
    assert [line.partial for line in lines] == [True, True, False]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("probetui-no-such-binary",),
            'exec: "probetui-no-such-binary": executable file not found in $PATH',
        ),
        (
            ("/nonexistent/bin",),
            'exec: "/nonexistent/bin": stat /nonexistent/bin: no such file or directory',
        ),
    ],
)
async def test_start_error(argv: tuple[str, ...], message: str) -> None:
    """A command that cannot start: containerd records exit code 128, reason StartError, with
    runc's message."""
    registry = ProcessGroupRegistry()
    proc = ContainerProcess(ProcessSpec(argv=argv, env=dict(os.environ)), registry=registry)
    with pytest.raises(ContainerStartError) as err:
        await proc.start()
    assert err.value.exit_code == 128
    assert err.value.reason == "StartError"
    assert str(err.value) == message
    assert proc.pid is None and registry.groups() == frozenset()


async def test_start_error_not_executable(tmp_path: Path) -> None:
    """A file without execute permission: StartError with runc's "permission denied"."""
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    spec = ProcessSpec(argv=(str(script),), env=dict(os.environ))
    with pytest.raises(ContainerStartError) as err:
        await ContainerProcess(spec, registry=ProcessGroupRegistry()).start()
    assert err.value.exit_code == 128
    assert str(err.value) == f'exec: "{script}": permission denied'


async def test_start_error_bad_working_dir() -> None:
    """A workingDir that does not exist fails the start too (runc's chdir message)."""
    spec = ProcessSpec(argv=("true",), env=dict(os.environ), cwd="/nonexistent-dir")
    with pytest.raises(ContainerStartError) as err:
        await ContainerProcess(spec, registry=ProcessGroupRegistry()).start()
    assert str(err.value) == (
        'chdir to cwd ("/nonexistent-dir") set in config.json failed: no such file or directory'
    )


async def test_registry_tracks_and_kill_all(
    run: Callable[..., ContainerProcess], registry: ProcessGroupRegistry
) -> None:
    """The registry holds every live group; kill_all SIGKILLs them all, synchronously."""
    a, b = run("sleep 30"), run("trap '' TERM; sleep 30")
    await a.start()
    await b.start()
    assert registry.groups() == {a.pid, b.pid}
    assert registry.kill_all() == 2
    assert registry.groups() == frozenset()
    assert await asyncio.wait_for(a.wait(), 2) == 137
    assert await asyncio.wait_for(b.wait(), 2) == 137


# --- exit handlers: no orphans when probetui ends ------------------------------------------------

_SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys
    from probetui.runtime.local.groups import REGISTRY
    from probetui.runtime.local.process import ContainerProcess
    from probetui.runtime.local.procspec import ProcessSpec

    mode = sys.argv[1]
    REGISTRY.install_exit_handlers()

    async def main():
        proc = ContainerProcess(ProcessSpec(
            argv=("sh", "-c", "trap '' TERM HUP INT; sleep 30 & echo $!; wait"),
            env=dict(os.environ),
        ))
        await proc.start()
        while not proc.output_tail():
            await asyncio.sleep(0.01)
        print(proc.pid, proc.output_tail()[0].text, flush=True)
        if mode in ("exit", "raise"):
            sys.stdin.readline()  # the test has seen the children alive
        if mode == "exit":
            return
        if mode == "raise":
            raise RuntimeError("boom")
        await asyncio.sleep(30)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize(
    ("mode", "returncode"),
    [
        ("SIGTERM", -signal.SIGTERM),
        ("SIGHUP", -signal.SIGHUP),
        ("SIGINT", -signal.SIGINT),
        # no handler runs: the supervisor's death signal, then SIGKILL after its 2 s grace (the
        # container ignores SIGTERM), so this case waits that long on purpose
        ("SIGKILL", -signal.SIGKILL),
        ("exit", 0),
        ("raise", 1),
    ],
)
def test_no_orphans_when_probetui_ends(mode: str, returncode: int) -> None:
    """Children die with probetui: signalled (terminal closed, Ctrl-C, kill, kill -9), a normal
    exit or an unhandled exception; probetui's own status stays the conventional one."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    ) as parent:
        pids: list[int] = []
        try:
            assert parent.stdout is not None
            line = parent.stdout.readline()
            assert line, parent.stderr.read() if parent.stderr else ""
            pids = [int(word) for word in line.split()]
            assert all(_alive(pid) for pid in pids)
            if mode.startswith("SIG"):
                parent.send_signal(signal.Signals[mode])
            else:
                assert parent.stdin is not None
                parent.stdin.write("go\n")
                parent.stdin.flush()
            # generous: a machine loaded by a parallel run delays the exit handlers, not the rule
            assert parent.wait(timeout=15) == returncode
            wait = 5.0 if mode == "SIGKILL" else 1.0
            for pid in pids:
                assert _wait_dead(pid, wait), f"pid {pid} outlived probetui ({mode})"
        finally:
            parent.kill()
            for pid in pids:
                _kill(pid)


# --- helpers ------------------------------------------------------------------------------------


async def _until(cond: Callable[[], bool], timeout: float = 1.0) -> None:
    # polling: the condition is on output a real process writes whenever it gets to it
    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def _first_pid(proc: ContainerProcess) -> int:
    await _until(lambda: bool(proc.output_tail("stdout")))
    return int(proc.output_tail("stdout")[0].text)
