"""Demo services started as real subprocesses on OS-chosen ports (`--port 0`), each killed and
reaped in a `finally`, whatever the test did."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[3]
MODULE = "probetui.runtime.demo.services"
# a guard against a hung start, not a figure the tests expect to approach
START_TIMEOUT = 5.0
_PORT_IN_LINE = re.compile(r"127\.0\.0\.1:(\d+)")

T = TypeVar("T")


def service_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # the services must import this checkout, whatever the installed probetui points at
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra or {})
    return env


@dataclass
class Service:
    proc: asyncio.subprocess.Process
    first_line: str
    port: int
    seen: list[str] = field(default_factory=list)

    async def read_line(self, timeout: float = 1.0) -> str:
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), timeout)).decode()
        self.seen.append(line)
        return line

    async def wait_for_line(self, needle: str, timeout: float = 1.5) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no stdout line with {needle!r}; saw {self.seen!r}")
            try:
                line = await self.read_line(remaining)
            except TimeoutError:
                continue
            if needle in line:
                return line
            if not line:
                raise AssertionError(f"stdout ended before {needle!r}; saw {self.seen!r}")

    async def terminate(self, timeout: float = 1.5) -> int:
        """SIGTERM, as the kubelet sends it; the exit code, once the process has exited."""
        self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), timeout)


@contextlib.asynccontextmanager
async def start_service(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[Service]:
    """Start `python -m probetui.runtime.demo.services ARGS` and wait for its first line."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        MODULE,
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=ROOT,
        env=service_env(env),
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            first = (await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT)).decode()
        except TimeoutError:
            first = ""
        if not first:
            err = await asyncio.wait_for(proc.stderr.read(), 1.0) if proc.returncode else b""
            raise AssertionError(f"{args[0]} did not start: {err.decode()!r}")
        match = _PORT_IN_LINE.search(first)
        yield Service(proc, first, int(match[1]) if match else 0, [first])
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


async def run_to_exit(*args: str, timeout: float = 5.0) -> tuple[int, str, str]:
    """Run a service that is expected to exit by itself: (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        MODULE,
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=ROOT,
        env=service_env(),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def poll_until(
    attempt: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    timeout: float = 1.5,
    every: float = 0.05,
) -> T:
    """Call `attempt` until `done` holds for its result; the result, or an AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        result = await attempt()
        if done(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached in {timeout}s; last: {result!r}")
        await asyncio.sleep(every)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]
