"""Run the exec handler, `pkg/probe/exec`, with the kubelet side of `prober.go`.

See docs/kubelet-behaviour.md §15.3-15.4, §9.6.

The handler itself only classifies what a runner reports. A runner is whatever runs the command
"in the container": `run_local` runs it as a local process; a Kubernetes runtime supplies one that
goes through pods/exec.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from probetui.probe.base import MAX_OUTPUT_BYTES, Attempt, Result, decode
from probetui.probe.gotext import exec_start_error, exec_timed_out
from probetui.spec.model import EnvVar


@dataclass(frozen=True)
class ExecOutput:
    """Holds what a runner reports, like CRI ExecSync: stdout then stderr, and how it ended.

    `exit_code` is None when the command never ran or did not finish. `error` is any other
    failure (could not start, container gone); the output is kept even then
    (docs/test-vectors.md C26).
    """

    output: bytes
    exit_code: int | None
    timed_out: bool = False
    error: str | None = None


ExecRunner = Callable[[Sequence[str], float], Awaitable[ExecOutput]]


class ExecProcess(Protocol):
    """Describes a running exec command as `collect` reads it: asyncio's Process, or one that
    the local runtime's container supervisor started (`runtime/local/execs.py`)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    async def wait(self) -> int: ...


class GroupTracker(Protocol):
    """Hears of each live process group (the local runtime's registry, which kills them all
    when probetui ends)."""

    def add(self, pgid: int) -> None: ...

    def discard(self, pgid: int) -> None: ...


# after a timeout kill, how long the pipes may take to reach EOF
_PIPE_GRACE = 0.2


def _expand_one(text: str, env: Mapping[str, str]) -> str:
    # third_party/forked/golang/expansion: `$(NAME)` is replaced when NAME is in env, `$$` is a
    # literal `$`, and anything else (unknown names, `$x`, an unclosed `$(`) stays as written.
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 == n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close == -1:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : close]
                out.append(env.get(name, f"$({name})"))
                i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def expand_command(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """`ExpandContainerCommandOnlyStatic` (§9.6, vector C10).

    `env` is name -> literal value. The kubelet builds it from every env entry, and an entry set
    with `valueFrom` has the empty string as its value, so `$(FROM_SECRET)` expands to "" while an
    undeclared `$(NOPE)` stays as written; `static_env` builds exactly that map. Values are used
    as written: `$(A)` whose value is `$(B)` gives `$(B)`.
    """
    return [_expand_one(arg, env) for arg in argv]


def static_env(env: Iterable[EnvVar]) -> dict[str, str]:
    """The map the kubelet expands exec commands with (`v1EnvVarsToMap`): every variable by name,
    later entries winning, `valueFrom` ones as ""."""
    return {var.name: var.value or "" for var in env}


async def _drain(stream: asyncio.StreamReader | None, kept: bytearray) -> None:
    """Read to EOF so the child never blocks on a full pipe; keep the first 10 KiB."""
    if stream is None:
        return
    while chunk := await stream.read(65536):
        room = MAX_OUTPUT_BYTES - len(kept)
        if room > 0:
            kept += chunk[:room]


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def run_local(
    argv: Sequence[str],
    timeout: float,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    groups: GroupTracker | None = None,
) -> ExecOutput:
    """Run argv as a local process the way ExecSync runs it in a container.

    No shell, stdin from /dev/null, a process group of its own. The call returns when the process
    has exited and both pipes are at EOF, or at `timeout`; either way, and on cancellation, every
    process still in the group is killed with SIGKILL and the child is reaped, so nothing it
    started outlives the call. Output is all of stdout then all of stderr, at most 10 KiB.
    `groups`, when given, holds the group while it lives, so that probetui's end kills it too.
    """
    if not argv:
        return ExecOutput(b"", None, error="exec: no command")
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
    except OSError as exc:
        return ExecOutput(b"", None, error=exec_start_error(argv[0], exc))
    return await collect(proc, timeout, groups)


async def collect(
    proc: ExecProcess, timeout: float, groups: GroupTracker | None = None
) -> ExecOutput:
    """Wait for a started exec command, the leader of a session of its own, as `run_local`
    says: its output and exit code, or a timeout; its group killed and it reaped either way."""
    # a session's leader leads a process group whose id is its pid
    pgid = proc.pid
    if groups is not None:
        groups.add(pgid)
    stdout, stderr = bytearray(), bytearray()
    readers = [
        asyncio.ensure_future(_drain(proc.stdout, stdout)),
        asyncio.ensure_future(_drain(proc.stderr, stderr)),
    ]
    try:
        try:
            async with asyncio.timeout(timeout):
                # asyncio.wait, unlike gather, leaves the readers running when the timeout hits
                await asyncio.wait(readers)
                code = await proc.wait()
            for reader in readers:
                reader.result()
        except TimeoutError:
            _kill_group(pgid)
            await proc.wait()
            # Let the readers take what is still in the pipes; bounded, because a process that
            # left the group could hold them open.
            await asyncio.wait(readers, timeout=_PIPE_GRACE)
            return ExecOutput(_combine(stdout, stderr), None, timed_out=True)
    finally:
        _kill_group(pgid)
        if proc.returncode is None:
            # cancelled: reap the killed child even if the caller cancels again
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(proc.wait())
        if groups is not None:
            groups.discard(pgid)
        for reader in readers:
            reader.cancel()
    # a runtime reports death by signal N as exit status 128+N
    return ExecOutput(_combine(stdout, stderr), code if code >= 0 else 128 - code)


def _combine(stdout: bytearray, stderr: bytearray) -> bytes:
    return bytes(stdout + stderr)[:MAX_OUTPUT_BYTES]


async def probe(argv: Sequence[str], timeout: float, runner: ExecRunner | None = None) -> Attempt:
    """One exec attempt (§15.4, upstream `exec.go`; ExecProbeTimeout locked on).

    exit 0 or no error → Success with the output; non-zero exit → Failure with the output;
    timeout → Failure with the CRI client's error text (`gotext.exec_timed_out`); any other error →
    Unknown with `error` set and empty output, as `exec.go` returns it (the runner's ExecOutput
    still has the output).
    """
    run = runner or run_local
    target = " ".join(argv)
    started_at = time.time()
    start = time.monotonic()

    def done(
        result: Result, output: str, error: str | None = None, timed_out: bool = False
    ) -> Attempt:
        return Attempt(
            handler="exec",
            target=target,
            result=result,
            output=output,
            error=error,
            latency=time.monotonic() - start,
            started_at=started_at,
            timed_out=timed_out,
        )

    try:
        out = await run(argv, timeout)
    except TimeoutError:
        out = ExecOutput(b"", None, timed_out=True)
    except Exception as exc:
        return done(Result.UNKNOWN, "", error=str(exc) or type(exc).__name__)

    if out.timed_out:
        # exec.go makes the CRI client's error text the output; the partial output is dropped
        return done(Result.FAILURE, exec_timed_out(argv, timeout), timed_out=True)
    data = decode(out.output[:MAX_OUTPUT_BYTES])
    if out.exit_code is not None:
        return done(Result.SUCCESS if out.exit_code == 0 else Result.FAILURE, data)
    if out.error is not None:
        return done(Result.UNKNOWN, "", error=out.error)
    return done(Result.SUCCESS, data)


__all__ = [
    "ExecOutput",
    "ExecProcess",
    "ExecRunner",
    "GroupTracker",
    "collect",
    "expand_command",
    "probe",
    "run_local",
    "static_env",
]
